// `dirigo check BUNDLE` or `dirigo check REF.py NEW.py` — the product: is the candidate
// equivalent to the reference? With two program files, the Python tracer
// (`python3 -m dirigo.trace`, in a child process) records them into a temporary bundle first.
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "check/check.h"
#include "check/present.h"
#include "cli/command.h"
#include "cli/hard_stop.h"
#include "cli/python_child.h"

namespace {

using dirigo::cli::run_python;

struct CheckArgs {
  std::vector<std::string> inputs;  // BUNDLE, or REF.py NEW.py
  std::string device, keep, witness_out, replay_device, ref_file, new_file, html;
  bool no_replay = false, no_dedup = false, no_reroll = false, no_symbolic_location = false, no_state = false, observe = false, no_observe = false;
  double trace_timeout = 300;
  double child_timeout = -1;  // < 0: from the budget
  double budget = 30;
  uint64_t seed = 0;
  bool full = false, json = false, verbose = false, no_trim = false;
  size_t min_locations = 5, max_locations = 0, jobs = 1, build_nodes = 0, giant_nodes = 0, falsify = 4;
  double atol = -1, rtol = -1;
};
DIRIGO_CLI_MEMBERS(CheckArgs, inputs, device, trace_timeout, child_timeout, keep, budget, seed, jobs, min_locations,
                   max_locations, build_nodes, falsify, giant_nodes, atol, rtol, full, no_trim, json, witness_out,
                   ref_file, new_file, no_dedup, no_reroll, no_symbolic_location, no_replay, replay_device, no_state, observe, no_observe,
                   verbose, html)

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string default_device() { return std::filesystem::exists("/dev/nvidia0") ? "cuda" : "cpu"; }

// The hard stop (cli/hard_stop.h, docs/cli.md "The hard stop"): the command ends by --budget plus this
// grace, plus the own limit of each child stage that ran (trace, replay, state), also where a stage
// ignores its deadline. 10 %, at least 1 s: starting the process and reading a bundle are outside the
// stages' deadlines.
constexpr double kHardStopGraceShare = 0.1, kHardStopGraceFloorS = 1;
double hard_stop_grace_s(double budget_s) { return std::max(kHardStopGraceFloorS, kHardStopGraceShare * budget_s); }

// The tracer's own work besides running the programs (starting Python, matching the programs, writing
// the bundle): the trace stage is killed at --trace-timeout plus this.
constexpr double kTraceMarginS = 30;

// Test hook (docs/cli.md): DIRIGO_INJECT_FAULT=stall:STAGE makes STAGE ignore its deadline, for the tests
// of the hard stop: an in-process stage (read, merge, execute, search) sleeps as it starts, a child stage
// (trace, replay, state) runs without its limit.
bool stalls(const std::string& stage) {
  const char* f = std::getenv("DIRIGO_INJECT_FAULT");
  return f && std::string_view(f).substr(0, 6) == "stall:" && std::string_view(f).substr(6) == stage;
}

// The command enters `stage`; a child stage names its own limit (0: none), by which the hard stop moves
// later, and runs its child with the limit returned (none under the stall hook).
double enter(const std::string& stage, double own_limit_s = 0) {
  dirigo::cli::enter_stage(stage, own_limit_s);
  if (!stalls(stage)) return own_limit_s;
  bool child = stage == "trace" || stage == "replay" || stage == "state";
  if (child) return 0;
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// The only way a verdict reaches stdout: rendered first, written only when the hard stop has not fired.
int emit(const dirigo::check::Report& report, bool json, bool verbose, const std::string* witness = nullptr) {
  std::string text = json ? dirigo::check::to_json(report, witness) + "\n" : dirigo::check::to_text(report, verbose);
  int code = dirigo::check::exit_code(report.outcome);
  if (!dirigo::cli::claim_verdict()) dirigo::cli::wait_for_hard_stop();
  std::cout << text << std::flush;
  dirigo::cli::verdict_written(code);
  return code;
}

// What the hard stop writes when it ends the command in `stage`, `at_s` seconds after the start.
dirigo::cli::HardStopText hard_stop_text(const std::string& stage, double at_s, double budget_s, bool json) {
  dirigo::check::Report r;
  r.outcome = dirigo::check::Outcome::Timeout;
  r.hard_stop = stage;
  r.seconds = at_s;
  r.reason = fmt::format("hard stop: dirigo check was ended {:.1f} s after it started, in stage '{}', which did "
                         "not stop at its deadline (--budget {:g} s + {:g} s grace, plus the own limit of each child "
                         "stage that ran; docs/cli.md); please report with the bundle",
                         at_s, stage, budget_s, hard_stop_grace_s(budget_s));
  return {json ? dirigo::check::to_json(r) + "\n" : dirigo::check::to_text(r, false),
          fmt::format("dirigo check: hard stop after {:.1f} s in stage '{}'; its child processes are killed\n", at_s,
                      stage)};
}

// `python3 -m dirigo.trace REF NEW --out DIR --device D`: 0 bundle written, 2 UNSUPPORTED, 3 the
// reference failed (or the candidate only under the tracer), 5 the candidate failed where the reference ran
// (`evidence` says how), 70 the tracer itself failed, 1 usage. `message`: the tracer's sentence.
// The tracer is killed, with its workers, at `timeout` + kTraceMarginS (124).
int trace_programs(const std::string& ref, const std::string& cand, const std::string& out, std::string device,
                   double timeout, std::string& message, std::string& evidence) {
  if (device.empty()) device = default_device();
  std::string answer = out + ".trace.json";
  double limit = enter("trace", timeout + kTraceMarginS);
  int rc = run_python("dirigo.trace", {ref, cand, "--out", out, "--device", device, "--timeout",
                                       std::to_string(limit > 0 ? int(timeout) : 1000000), "--json"},
                      answer, limit);
  std::ifstream in(answer);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    message = j.value("message", "");
    evidence = j.value("evidence", "");
  }
  std::filesystem::remove(answer);
  if (rc != 0 && !message.empty()) std::cerr << "dirigo check: " << message << "\n";
  return rc;
}

// The replay and the state stage run user code (constructors, extension builds, forwards), which may
// hang: past their limit they are killed and the verdict keeps what the check found. The limit is
// --child-timeout when given, else what is left of --budget, but at least kChildFloorS: a CPU replay
// of a level-2 program ran 120 s past a 20 s budget under the old fixed 300 s, and the state stage with
// the observation took up to 67 s on an H200 (docs/check.md "The budget").
double child_timeout_s = -1;  // < 0: from the budget (CheckArgs::child_timeout)
constexpr double kChildFloorS = 90;
Clock::time_point check_start = Clock::now();
double check_budget_s = 30;

double child_limit_s() {
  if (child_timeout_s >= 0) return child_timeout_s;
  double left = check_budget_s > 0 ? check_budget_s - since(check_start) : 300;
  return std::max(kChildFloorS, left);
}

// Why a child gave no answer, for the report.
std::string no_answer(const char* who, int rc, double limit_s) {
  return rc == 124 ? fmt::format("{} did not finish within {:g} s (killed)", who, limit_s)
                   : fmt::format("{} did not answer (exit status {})", who, rc);
}

// Replays the report's witness on the real programs (python -m dirigo.replay, a child process:
// it runs user code) and applies the verdict rules (docs/check.md).
void replay_witness(dirigo::check::Report& report, const std::filesystem::path& dir, const std::string& witness,
                    std::string device) {
  if (device.empty()) device = default_device();
  auto wfile = (dir / "witness.json").string(), answer = (dir / "replay.json").string();
  { std::ofstream(wfile) << witness; }
  std::cerr << "dirigo check: replaying the witness on the real programs (" << device << ")\n";
  double limit = enter("replay", child_limit_s());
  int rc = run_python("dirigo.replay", {wfile, "--json", "--device", device}, answer, limit);
  std::ifstream in(answer);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  dirigo::check::Replay rp = dirigo::check::parse_replay(text);
  if (rp.status == "error" && text.empty()) rp.message = no_answer("the replayer", rc, limit);
  dirigo::check::apply_replay(report, std::move(rp));
}

// The state stage (python -m dirigo.state, a child process: it constructs both programs): matched
// parameters holding different values under KernelBench's construction, and whether that reaches the
// outputs (docs/check.md "State").
// With `observe` (default on a GPU) it also runs both real programs when their state is equal: what
// KernelBench's own check sees on its trial inputs (docs/check.md "Observe").
void compare_state(dirigo::check::Report& report, const std::filesystem::path& dir, const std::string& bundle,
                   const std::string& ref, const std::string& cand, std::string device, int observe) {
  if (device.empty()) device = default_device();
  auto rfile = (dir / "report.json").string(), answer = (dir / "state.json").string();
  { std::ofstream(rfile) << dirigo::check::to_json(report); }
  bool run_both = observe < 0 ? device == "cuda" : observe > 0;
  std::cerr << "dirigo check: comparing the two programs' parameters as constructed"
            << (run_both ? " and their outputs on KernelBench's trial inputs" : "") << " (" << device << ")\n";
  std::vector<std::string> args{ref, cand, "--bundle", bundle, "--report", rfile, "--json", "--device", device};
  if (run_both) args.push_back("--observe");
  double limit = enter("state", child_limit_s());
  int rc = run_python("dirigo.state", args, answer, limit);
  std::ifstream in(answer);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  dirigo::check::StateFinding st = dirigo::check::parse_state(text);
  if (st.verdict == "error" && text.empty()) st.reason = no_answer("the state stage", rc, limit);
  dirigo::check::apply_state(report, std::move(st));
}

// A bundle annotated by `python3 -m dirigo.bundle state` carries the state stage's answer in
// match.state: checked without its program files, the verdict rules apply to that answer.
void recorded_state(dirigo::check::Report& report, const std::string& bundle) {
  std::ifstream in(std::filesystem::path(bundle) / "manifest.json");
  if (!in) return;
  auto m = nlohmann::json::parse(in, nullptr, false);
  if (m.is_discarded() || !m.contains("match") || !m["match"].is_object() || !m["match"].contains("state")) return;
  dirigo::check::apply_state(report, dirigo::check::parse_state(m["match"]["state"].dump()));
  report.notes.push_back("state: from the bundle's match.state (python3 -m dirigo.bundle state), not recomputed");
}

int run_check(CheckArgs& args);

// dirigo failing, not the programs: exit 70, and --json stays JSON.
int check_command(CheckArgs& a) {
  try {
    return run_check(a);
  } catch (const std::exception& e) {
    return emit(dirigo::check::internal_error(e.what()), a.json, false);
  }
}

dirigo::cli::Register register_check(dirigo::cli::options_command<CheckArgs>(
    "check", "check a trace bundle: BUG / SUSPECT / CHECKED / VERIFIED / TIMEOUT / UNSUPPORTED", check_command));

int run_check(CheckArgs& args) {
  auto a = &args;
  {
    if (a->budget > 0)
      dirigo::cli::arm_hard_stop(a->budget + hard_stop_grace_s(a->budget),
                                 dirigo::check::exit_code(dirigo::check::Outcome::Timeout),
                                 [budget = a->budget, json = a->json](const std::string& stage, double at_s) {
                                   return hard_stop_text(stage, at_s, budget, json);
                                 });
    dirigo::check::Options opt;
    opt.budget_s = a->budget;
    opt.seed = a->seed;
    opt.full = a->full;
    opt.min_locations = a->min_locations;
    opt.max_locations = a->max_locations;
    if (a->build_nodes) opt.build_nodes = a->build_nodes;
    if (a->giant_nodes) opt.giant_location_nodes = a->giant_nodes;
    opt.falsify_locations = a->falsify;
    opt.jobs = std::max<size_t>(1, a->jobs);
    opt.dedup = !a->no_dedup;
    opt.reroll = !a->no_reroll;
    opt.symbolic_location = !a->no_symbolic_location;
    opt.release_memory = false;  // the process exits after the report: freeing 10^6-entry tables took seconds
    opt.trim_prefix = !a->no_trim;
    opt.progress = !a->json && isatty(2);
    if (a->atol >= 0 || a->rtol >= 0)
      opt.tolerance = dirigo::smt::Tolerance{a->atol >= 0 ? a->atol : 1e-2, a->rtol >= 0 ? a->rtol : 1e-2};
    std::string bundle = a->inputs[0];
    std::optional<dirigo::cli::ScratchDir> scratch;  // the traced bundle, unless --keep-bundle names a place
    double trace_s = -1;
    if (a->inputs.size() == 2) {
      if (a->keep.empty()) {
        scratch.emplace();
        bundle = scratch->path() + "/bundle";
      } else {
        bundle = a->keep;
      }
      std::string message, evidence;
      auto t_trace = Clock::now();
      int rc = trace_programs(a->inputs[0], a->inputs[1], bundle, a->device, a->trace_timeout, message, evidence);
      trace_s = since(t_trace);
      if (rc != 0) {
        scratch.reset();
        dirigo::check::Report report;
        if (rc == 5)
          report = dirigo::check::candidate_failure(message, evidence.empty() ? "crash-gpu" : evidence);
        else if (rc == 124) {
          report.outcome = dirigo::check::Outcome::Timeout;
          report.stage = "trace";
          report.reason = fmt::format("the tracer did not finish within {:g} s (killed): --trace-timeout {:g} s for the "
                                      "programs plus {:g} s for its own work",
                                      a->trace_timeout + kTraceMarginS, a->trace_timeout, kTraceMarginS);
        } else if (rc == 2 || rc == 3)
          report = dirigo::check::trace_unsupported(
              message.empty() ? fmt::format("UNSUPPORTED: tracing failed (exit status {})", rc) : message);
        else if (message.empty() && dirigo::cli::python_package_root().empty()) {
          report.outcome = dirigo::check::Outcome::Error;  // a set-up error, not dirigo's nor the program's
          report.reason = fmt::format(
              "the tracer ({} -m dirigo.trace) exited with status {}: this binary lies in neither a source tree "
              "nor an installed wheel, so {} must import the dirigo package itself (pip install the project, or "
              "set PYTHONPATH or DIRIGO_PYTHON); its error is above",
              dirigo::cli::python_interpreter(), rc, dirigo::cli::python_interpreter());
        } else
          report = dirigo::check::internal_error(
              message.empty() ? fmt::format("the tracer exited with status {}", rc) : message);
        report.stage_seconds.emplace_back("trace", trace_s);
        return emit(report, a->json, false);
      }
    }
    check_start = Clock::now();
    check_budget_s = a->budget;
    child_timeout_s = a->child_timeout;
    if (a->budget > 0)  // reading the bundle counts too
      opt.deadline = check_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a->budget));
    opt.on_stage = [](const std::string& stage) { enter(stage); };
    auto report = dirigo::check::check_path(bundle, opt);
    enter("report");
    if (trace_s >= 0) report.stage_seconds.insert(report.stage_seconds.begin(), {"trace", trace_s});
    dirigo::check::WitnessSource src;
    if (a->inputs.size() == 2) {
      src.ref = std::filesystem::absolute(a->inputs[0]).string();
      src.cand = std::filesystem::absolute(a->inputs[1]).string();
    } else {
      if (!a->ref_file.empty()) src.ref = std::filesystem::absolute(a->ref_file).string();
      if (!a->new_file.empty()) src.cand = std::filesystem::absolute(a->new_file).string();
    }
    if (!scratch) src.bundle = std::filesystem::absolute(bundle).string();
    std::string witness = dirigo::check::witness_json(report, src);
    if (!witness.empty() && a->inputs.size() == 2 && !a->no_replay &&
        (report.outcome == dirigo::check::Outcome::Bug || report.outcome == dirigo::check::Outcome::Suspect)) {
      std::optional<dirigo::cli::ScratchDir> own;  // the traced bundle's folder serves, where there is one
      if (!scratch) own.emplace();
      auto t_replay = Clock::now();
      replay_witness(report, (scratch ? *scratch : *own).path(), witness, a->replay_device);
      report.stage_seconds.emplace_back("replay", since(t_replay));
    }
    bool failed = report.outcome == dirigo::check::Outcome::Error;  // nothing to fold into dirigo's own failure
    if (!failed && !a->no_state && (src.ref.empty() || src.cand.empty()) && std::filesystem::is_directory(bundle))
      recorded_state(report, bundle);
    if (!failed && !a->no_state && !src.ref.empty() && !src.cand.empty()) {
      dirigo::cli::ScratchDir dir;
      auto t_state = Clock::now();
      compare_state(report, dir.path(), std::filesystem::absolute(bundle).string(), src.ref, src.cand, a->replay_device,
                    a->no_observe ? 0 : a->observe ? 1 : -1);
      report.stage_seconds.emplace_back("state", since(t_state));
    }
    enter("report");
    scratch.reset();
    if (!a->witness_out.empty() && !witness.empty()) std::ofstream(a->witness_out) << witness << "\n";
    if (!a->html.empty()) {
      std::ofstream html(a->html);
      html << dirigo::check::to_html(report);
      if (!html) std::cerr << "dirigo check: cannot write " << a->html << "\n";
    }
    return emit(report, a->json, a->verbose, witness.empty() ? nullptr : &witness);
  }
}

}  // namespace
