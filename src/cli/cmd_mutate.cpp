// `dirigo mutate --list-rules` and `dirigo mutate SUBSTRATE... [--out DIR] [--rules R,...]
// [--families F,...] [--db results.sqlite] [--compiler auto|nvrtc|nvcc] [--arch sm_90]
// [--no-compile] [-j N] [--cache DIR]`: generates every mutant of each substrate (.cu or a
// KernelBench-style .py), compiles device code to PTX, de-duplicates by compiled image and
// prints generated / non-compiling / duplicate / unique per family (docs/mutation.md).
// `dirigo mutate --db results.sqlite --summary` prints the table over a whole store.
// Exit: 0 ok, 4 UNSUPPORTED (no compiler, or a substrate that does not compile), 64 usage.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "cli/command.h"
#include "cli/shared_options.h"
#include "mutate/pipeline.h"
#include "mutate/store.h"

namespace dirigo::cli {
namespace {

struct MutateOptions {
  std::vector<std::string> substrates, rules, families;
  std::string rules_csv, families_csv;
  std::string out, db, arch = "sm_90";
  CompileChoice compile;
  bool list = false, no_compile = false, summary = false, quiet = false;
  int jobs = 0;
};
DIRIGO_CLI_MEMBERS(MutateOptions, substrates, list, out, rules_csv, families_csv, db, summary, compile, arch, no_compile,
                   jobs, quiet)

int list_rules() {
  std::string family;
  for (const auto& r : mutate::all_rules()) {
    if (r.family != family) {
      family = r.family;
      std::cout << "\n" << family << ":\n";
    }
    std::cout << fmt::format("  {:<28} {:<6} {}\n", r.name, r.scope == mutate::Scope::Host ? "host" : "device",
                             r.description);
  }
  std::cout << "\n" << mutate::all_rules().size() << " rules\n";
  return 0;
}

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size() && !s.empty()) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

int run_mutate(MutateOptions o) {
  o.rules = split_csv(o.rules_csv);
  o.families = split_csv(o.families_csv);
  if (o.list) return list_rules();
  std::unique_ptr<mutate::Store> store;
  try {
    if (!o.db.empty()) {
      store = std::make_unique<mutate::Store>(o.db);
      store->put_rules();
    }
    if (o.summary) {
      if (!store) {
        std::cerr << "dirigo mutate: --summary needs --db\n";
        return 64;
      }
      std::cout << mutate::summary_table(store->summary());
      return 0;
    }
    if (o.substrates.empty()) {
      std::cerr << "dirigo mutate: give a substrate (.cu or .py), or --list-rules\n";
      return 64;
    }
    mutate::select_rules(o.rules, o.families);  // validate names before any work
  } catch (const std::exception& e) {
    std::cerr << "dirigo mutate: " << e.what() << "\n";
    return 64;
  }
  std::unique_ptr<mutate::Compiler> compiler;
  if (!o.no_compile) {
    mutate::CompilerOptions co;
    co.arch = o.arch;
    compiler = chosen_compiler(o.compile, co);
    if (!compiler) return 4;
    if (!o.quiet) std::cerr << "compiler: " << compiler->id() << "\n";
  }
  mutate::PipelineOptions po;
  po.rules = o.rules;
  po.families = o.families;
  po.compile = !o.no_compile;
  po.jobs = o.jobs;
  po.out_dir = o.out;
  std::map<std::string, mutate::FamilyCounts> total;
  int status = 0;
  for (const auto& path : o.substrates) {
    mutate::SubstrateResult r;
    try {
      r = mutate::run_pipeline(mutate::load_substrate(path), po, compiler.get());
      if (store) store->put_result(r);
    } catch (const std::exception& e) {
      std::cout << "UNSUPPORTED: " << e.what() << "\n";
      status = 4;
      continue;
    }
    std::vector<double> ms, cpu;
    for (const auto& m : r.mutants)
      if (!m.cached && m.compile_ms > 0) {
        ms.push_back(m.compile_ms);
        cpu.push_back(m.compile_cpu_ms);
      }
    std::sort(ms.begin(), ms.end());
    std::sort(cpu.begin(), cpu.end());
    std::cout << fmt::format("{}: {} mutants{}{}\n", path, r.mutants.size(),
                             r.status == "ok" ? "" : " -- " + r.status,
                             ms.empty() ? "" : fmt::format(", median compile {:.1f} ms wall / {:.1f} ms CPU over {} fresh compiles",
                                                           ms[ms.size() / 2], cpu[cpu.size() / 2], ms.size()));
    if (r.status != "ok") {
      std::cout << r.message << "\n";
      status = 4;
    }
    if (!o.quiet) std::cout << mutate::summary_table(r.by_family());
    for (const auto& [f, c] : r.by_family()) total[f] += c;
  }
  if (o.substrates.size() > 1) std::cout << "\nall substrates:\n" << mutate::summary_table(total);
  return status;
}

Register register_mutate(options_command<MutateOptions>(
    "mutate", "Generate, compile and de-duplicate mutants of CUDA substrates (docs/mutation.md)", run_mutate));

}  // namespace
}  // namespace dirigo::cli
