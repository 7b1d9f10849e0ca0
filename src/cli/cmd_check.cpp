// `dirigo check BUNDLE` or `dirigo check REF.py NEW.py` — the product: is the candidate
// equivalent to the reference? With two program files, the Python tracer
// (`python3 -m dirigo.trace`, in a child process) records them into a temporary bundle first.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "check/check.h"
#include "cli/command.h"

namespace {

struct CheckArgs {
  std::vector<std::string> inputs;  // BUNDLE, or REF.py NEW.py
  std::string device, keep;
  double trace_timeout = 300;
  double budget = 30;
  uint64_t seed = 0;
  bool full = false, json = false, verbose = false, no_trim = false;
  size_t min_locations = 5, max_locations = 0;
  double atol = -1, rtol = -1;
};

// Runs `python3 -m dirigo.trace REF NEW --out DIR --device D` with the package of this source
// tree on PYTHONPATH; returns the tracer's exit status (0 bundle written, 2 UNSUPPORTED, 3 the
// program failed, 1 usage).
int trace_programs(const std::string& ref, const std::string& cand, const std::string& out, std::string device,
                   double timeout) {
  if (device.empty()) device = std::filesystem::exists("/dev/nvidia0") ? "cuda" : "cpu";
  std::string py = std::getenv("DIRIGO_PYTHON") ? std::getenv("DIRIGO_PYTHON") : "python3";
  std::string timeout_s = std::to_string(int(timeout));
  pid_t pid = fork();
  if (pid < 0) return 70;
  if (pid == 0) {
    std::string path = DIRIGO_PYTHON_DIR;
    if (const char* old = std::getenv("PYTHONPATH")) path += std::string(":") + old;
    setenv("PYTHONPATH", path.c_str(), 1);
    dup2(2, 1);  // the tracer's messages go to stderr: stdout carries only the report (--json)
    execlp(py.c_str(), py.c_str(), "-m", "dirigo.trace", ref.c_str(), cand.c_str(), "--out", out.c_str(), "--device",
           device.c_str(), "--timeout", timeout_s.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 70;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 70;
}

dirigo::cli::Register reg({"check", "check a trace bundle: BUG / SUSPECT / CHECKED / VERIFIED / TIMEOUT / UNSUPPORTED",
                           [](CLI::App& sub) {
  auto a = std::make_shared<CheckArgs>();
  sub.add_option("inputs", a->inputs, "a trace bundle directory (or .tar), or REF.py NEW.py to trace first")
      ->required()->expected(1, 2);
  sub.add_option("--device", a->device, "tracing device for REF.py NEW.py: cpu or cuda (default: cuda when a GPU is present)");
  sub.add_option("--trace-timeout", a->trace_timeout, "seconds allowed for tracing each program (default 300)");
  sub.add_option("--keep-bundle", a->keep, "write the traced bundle here instead of a temporary directory");
  sub.add_option("--budget", a->budget, "seconds for the location search (default 30)");
  sub.add_option("--seed", a->seed, "seed of the random part of the search order");
  sub.add_option("--min-locations", a->min_locations, "locations needed before anything but BUG is reported");
  sub.add_option("--max-locations", a->max_locations, "stop after this many locations");
  sub.add_option("--atol", a->atol, "absolute tolerance for witnesses (default: the bundle's, else 1e-2)");
  sub.add_option("--rtol", a->rtol, "relative tolerance for witnesses");
  sub.add_flag("--full", a->full, "check every output location (VERIFIED when all are equal)");
  sub.add_flag("--no-prefix-trim", a->no_trim, "do not trim the common prefix of pure operations");
  sub.add_flag("--json", a->json, "machine-readable report");
  sub.add_flag("-v,--verbose", a->verbose, "list every location checked");
  return [a]() {
    dirigo::check::Options opt;
    opt.budget_s = a->budget;
    opt.seed = a->seed;
    opt.full = a->full;
    opt.min_locations = a->min_locations;
    opt.max_locations = a->max_locations;
    opt.trim_prefix = !a->no_trim;
    opt.progress = !a->json && isatty(2);
    if (a->atol >= 0 || a->rtol >= 0)
      opt.tolerance = dirigo::smt::Tolerance{a->atol >= 0 ? a->atol : 1e-2, a->rtol >= 0 ? a->rtol : 1e-2};
    std::string bundle = a->inputs[0];
    std::filesystem::path tmp;
    if (a->inputs.size() == 2) {
      if (a->keep.empty()) {
        char templ[] = "/tmp/dirigo-XXXXXX";
        if (!mkdtemp(templ)) { std::cerr << "dirigo check: cannot create a temporary directory\n"; return 70; }
        tmp = templ;
        bundle = (tmp / "bundle").string();
      } else {
        bundle = a->keep;
      }
      int rc = trace_programs(a->inputs[0], a->inputs[1], bundle, a->device, a->trace_timeout);
      if (rc != 0) {
        if (!tmp.empty()) std::filesystem::remove_all(tmp);
        std::cout << "UNSUPPORTED\n  tracing failed (see the message above; exit status " << rc << ")\n";
        return rc == 3 || rc == 2 ? 4 : 70;
      }
    }
    auto report = dirigo::check::check_path(bundle, opt);
    if (!tmp.empty()) std::filesystem::remove_all(tmp);
    std::cout << (a->json ? dirigo::check::to_json(report) + "\n" : dirigo::check::to_text(report, a->verbose));
    return dirigo::check::exit_code(report.outcome);
  };
}});

}  // namespace
