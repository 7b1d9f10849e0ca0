// `dirigo killmatrix [SUBSTRATE.py...] [--store DB] [--work DIR] [-j N] [--max-ms MS]`: the CPU
// kill matrix (docs/mutation.md). For each substrate: draw its inputs and fp64/fp32 references
// (`python3 -m dirigo.killmatrix prep`, a child process), generate and compile its mutants
// (the `dirigo mutate` pipeline), then run the substrate and every unique device mutant on every
// input through the concrete interpreter and store one `runs` row per (program, input).
// Exit: 0 ok, 4 when a substrate could not be prepared or compiled (the others still run), 64 usage.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "cli/command.h"
#include "cli/shared_options.h"
#include "cli/python_child.h"
#include "mutate/killmatrix.h"
#include "mutate/pipeline.h"
#include "mutate/rule.h"
#include "mutate/store.h"

namespace dirigo::cli {
namespace {

namespace fs = std::filesystem;

struct KillOptions {
  std::vector<std::string> substrates;
  std::string store = ".cache/mutate/killmatrix.sqlite", work = ".cache/killmatrix";
  std::string families_csv;
  CompileChoice compile;
  int jobs = 2;
  double max_ms = 3000;
  bool quiet = false, no_run = false;
  bool reuse = false;      // substrate, mutants and inputs from the store and WORK (no prep, no compile)
  bool host_only = false;  // with --reuse: the original and the host-side mutants only
};
DIRIGO_CLI_MEMBERS(KillOptions, substrates, store, work, compile, jobs, max_ms, quiet, no_run, reuse, host_only)

// `python3 -m dirigo.killmatrix prep SUBSTRATE DIR` with this tree's package; its output goes to stderr.
int prepare_inputs(const std::string& substrate, const std::string& dir) {
  return run_python("dirigo.killmatrix", {"prep", substrate, dir});
}

struct Program {
  long long mutant_id = 0;  // 0: the substrate itself (stored as NULL)
  std::string ptx;
  std::vector<mutate::RunMetrics> runs;
  std::optional<mutate::KmSpec> spec;  // a host-side mutant: the substrate's spec with its launch plan
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Progress {
 public:
  Progress(std::string label, size_t total, bool on) : label_(std::move(label)), total_(total), on_(on && isatty(2)) {}
  void tick() {
    size_t d = ++done_;
    if (!on_) return;
    auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    if (d != total_ && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    double s = std::chrono::duration<double>(now - start_).count();
    double rate = s > 0 ? double(d) / s : 0;
    int width = 30, fill = int(width * double(d) / double(std::max<size_t>(total_, 1)));
    std::cerr << fmt::format("\r{} [{}{}] {}/{} runs, {:.0f}/s, ETA {:.0f}s   ", label_, std::string(size_t(fill), '#'),
                             std::string(size_t(width - fill), '.'), d, total_, rate,
                             rate > 0 ? double(total_ - d) / rate : 0.0);
    if (d == total_) std::cerr << "\n";
  }

 private:
  std::string label_;
  size_t total_;
  bool on_;
  std::atomic<size_t> done_{0};
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

int run_programs(const KillOptions& o, const std::string& path, int sid, const mutate::KmSpec& spec,
                 const std::vector<mutate::KmData>& data, const std::vector<long long>& input_id,
                 std::vector<Program>& programs, mutate::Store& store);

// --reuse: the substrate as the store and WORK hold it (a prepared matrix whose runs are missing or
// stale); host-side mutants run with the plan killmatrix_host.py derived (`<mutant>.launch.json`).
int reuse_substrate(const KillOptions& o, const std::string& path, mutate::Store& store) {
  std::string stem = fs::path(path).stem().string();
  std::string in_dir = (fs::path(o.work) / "inputs" / stem).string();
  auto sub = store.query(fmt::format("SELECT id FROM substrates WHERE path = '{}' AND status = 'ok'", path));
  if (sub.empty()) {
    std::cout << fmt::format("UNSUPPORTED: {}: not in the store (run without --reuse first)\n", path);
    return 4;
  }
  int sid = std::stoi(sub[0][0]);
  mutate::KmSpec spec = mutate::read_spec(in_dir);
  std::vector<mutate::KmData> data;
  std::vector<long long> input_id;
  for (const auto& in : spec.inputs) {
    data.push_back(mutate::read_input(spec, in.index));
    auto row = store.query(fmt::format("SELECT id FROM inputs WHERE substrate_id = {} AND name = '{}'", sid, in.name));
    if (row.empty()) throw std::runtime_error("input " + in.name + " of " + path + " is not in the store");
    input_id.push_back(std::stoll(row[0][0]));
  }
  std::vector<Program> programs;
  programs.push_back({0, read_text((fs::path(o.work) / "mutants" / stem / "original.ptx").string()), {}, {}});
  int host_without_plan = 0;
  for (const auto& row : store.query(fmt::format(
           "SELECT m.id, c.runnable, m.ptx_path, m.source_path FROM mutants m JOIN mutant_class c ON c.mutant_id = m.id "
           "WHERE m.substrate_id = {} AND m.status = 'unique' ORDER BY m.ordinal", sid))) {
    bool host = row[1] == "0";
    if (host) {
      auto plan = fs::path(row[3]).replace_extension(".launch.json").string();
      if (!fs::exists(plan)) {
        ++host_without_plan;
        continue;
      }
      Program p{std::stoll(row[0]), programs[0].ptx, {}, spec};
      p.spec->launches = mutate::read_launches(plan, spec);
      programs.push_back(std::move(p));
    } else if (!o.host_only) {
      programs.push_back({std::stoll(row[0]), read_text(row[2]), {}, {}});
    }
  }
  if (host_without_plan) std::cout << fmt::format("{}: {} host mutants without a launch plan (not run)\n", path, host_without_plan);
  return run_programs(o, path, sid, spec, data, input_id, programs, store);
}

int run_substrate(const KillOptions& o, const std::string& path, mutate::Store& store, mutate::Compiler& compiler) {
  std::string stem = fs::path(path).stem().string();
  std::string in_dir = (fs::path(o.work) / "inputs" / stem).string();
  fs::remove_all(in_dir);
  if (int rc = prepare_inputs(path, in_dir); rc != 0) {
    std::cout << fmt::format("UNSUPPORTED: {}: input preparation failed (exit {})\n", path, rc);
    return 4;
  }
  mutate::KmSpec spec = mutate::read_spec(in_dir);
  std::vector<mutate::KmData> data;
  for (const auto& in : spec.inputs) data.push_back(mutate::read_input(spec, in.index));

  mutate::PipelineOptions po;
  po.jobs = o.jobs;
  po.out_dir = (fs::path(o.work) / "mutants").string();
  po.families = {};
  auto res = mutate::run_pipeline(mutate::load_substrate(path), po, &compiler);
  int sid = store.put_result(res);
  if (res.status != "ok" || res.original_ptx.size() != 1) {
    std::cout << fmt::format("UNSUPPORTED: {}: {}\n", path,
                             res.status != "ok" ? res.status : "several CUDA units (one PTX module needed)");
    return 4;
  }
  std::map<int, long long> id_of;  // ordinal -> mutant id
  for (const auto& row : store.query(fmt::format("SELECT ordinal, id FROM mutants WHERE substrate_id = {}", sid)))
    id_of[std::stoi(row[0])] = std::stoll(row[1]);

  store.begin();
  std::vector<long long> input_id;
  for (const auto& in : spec.inputs)
    input_id.push_back(store.run(
        "INSERT INTO inputs(substrate_id, name, problem, distribution, seed, family, spec_json) VALUES(?,?,?,?,?,?,?)",
        {(long long)sid, in.name, spec.problem, in.distribution, (long long)in.seed, in.family,
         fmt::format(R"({{"index": {}, "dir": "{}"}})", in.index, in_dir)}));
  std::vector<Program> programs;
  programs.push_back({0, res.original_ptx[0], {}});
  for (const auto& m : res.mutants) {
    if (m.status != "unique") continue;
    const mutate::Rule* rule = mutate::find_rule(m.rule);
    bool host = rule && rule->scope == mutate::Scope::Host;
    store.run("INSERT OR REPLACE INTO mutant_class(mutant_id, substrate_id, runnable, reason) VALUES(?,?,?,?)",
              {id_of.at(m.ordinal), (long long)sid, (long long)(host ? 0 : 1),
               host ? mutate::Store::SqlValue(std::string("host-side launch mutant: the launch plan is the original's"))
                    : mutate::Store::SqlValue()});
    if (!host) programs.push_back({id_of.at(m.ordinal), m.ptx, {}});
  }
  store.commit();
  if (o.no_run) {
    std::cout << fmt::format("{}: {} programs x {} inputs prepared (not run)\n", path, programs.size(), data.size());
    return 0;
  }
  return run_programs(o, path, sid, spec, data, input_id, programs, store);
}

int run_programs(const KillOptions& o, const std::string& path, int sid, const mutate::KmSpec& spec,
                 const std::vector<mutate::KmData>& data, const std::vector<long long>& input_id,
                 std::vector<Program>& programs, mutate::Store& store) {
  std::string stem = fs::path(path).stem().string();

  Progress bar(stem, programs.size() * data.size(), !o.quiet);
  std::atomic<size_t> next{0};
  exec::ExecOptions eo;
  eo.max_ms = o.max_ms;
  auto worker = [&] {
    for (size_t p; (p = next++) < programs.size();) {
      auto& prog = programs[p];
      std::optional<ptx::Module> module;
      std::string parse_error;
      try {
        module = mutate::parse_for_run(prog.ptx);
      } catch (const std::exception& e) {
        parse_error = e.what();
      }
      for (const auto& d : data) {
        if (!prog.runs.empty() && prog.runs.back().status == "timeout") {
          // a program that ran out of time (a loop that no longer ends) does so again: not run
          mutate::RunMetrics m;
          m.status = "timeout";
          m.detail = "not run: timed out on an earlier input";
          prog.runs.push_back(m);
        } else if (module) {
          prog.runs.push_back(mutate::run_cpu(*module, prog.spec ? *prog.spec : spec, d, eo));
        } else {
          mutate::RunMetrics m;
          m.detail = "PTX: " + parse_error;
          prog.runs.push_back(m);
        }
        bar.tick();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, o.jobs); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  store.begin();
  // the programs run now replace their earlier CPU rows (a --host-only run keeps the device mutants')
  for (const auto& prog : programs)
    store.run(prog.mutant_id ? fmt::format("DELETE FROM runs WHERE substrate_id = {} AND source = 'cpu' AND mutant_id = {}",
                                           sid, prog.mutant_id)
                             : fmt::format("DELETE FROM runs WHERE substrate_id = {} AND source = 'cpu' AND mutant_id IS NULL", sid));
  std::map<std::string, int> status_count;
  for (const auto& prog : programs)
    for (size_t k = 0; k < prog.runs.size(); ++k) {
      const auto& m = prog.runs[k];
      ++status_count[(prog.mutant_id ? "mutant " : "substrate ") + m.status];
      bool ok = m.status == "ok";
      auto real = [&](double v) { return ok ? mutate::Store::SqlValue(v) : mutate::Store::SqlValue(); };
      store.run("INSERT INTO runs(substrate_id, mutant_id, input_id, source, status, t_eq, t_eq32, max_abs, "
                "nonfinite_mismatch, ms, detail) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                {(long long)sid, prog.mutant_id ? mutate::Store::SqlValue(prog.mutant_id) : mutate::Store::SqlValue(),
                 input_id[k], std::string("cpu"), m.status, real(m.t_eq), real(m.t_eq32), real(m.max_abs),
                 ok ? mutate::Store::SqlValue((long long)m.nonfinite_mismatch) : mutate::Store::SqlValue(), m.ms,
                 m.detail});
    }
  store.commit();
  std::string counts;
  for (const auto& [k, v] : status_count) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", v, k);
  std::cout << fmt::format("{}: {} programs x {} inputs: {}\n", path, programs.size(), data.size(), counts);
  return 0;
}

int run_killmatrix(const KillOptions& o) {
  if (o.substrates.empty()) {
    std::cerr << "dirigo killmatrix: no substrates given\n";
    return 64;
  }
  auto compiler = chosen_compiler(o.compile);
  if (!compiler) return 4;
  fs::create_directories(fs::path(o.store).parent_path().empty() ? fs::path(".") : fs::path(o.store).parent_path());
  mutate::Store store(o.store);
  store.put_rules();
  int status = 0;
  for (const auto& path : o.substrates) {
    try {
      status = std::max(status, o.reuse ? reuse_substrate(o, path, store) : run_substrate(o, path, store, *compiler));
    } catch (const std::exception& e) {
      std::cout << fmt::format("UNSUPPORTED: {}: {}\n", path, e.what());
      status = 4;
    }
  }
  return status;
}

Register register_killmatrix(options_command<KillOptions>(
    "killmatrix", "CPU kill matrix: substrate and mutants on every input, errors vs fp64 (docs/mutation.md)", run_killmatrix));

}  // namespace
}  // namespace dirigo::cli
