// exec_corpus: Execute on the kernel launches of traced bundles, one launch per process run,
// for the Execute-time distribution in docs/perf.md (driver: bench/exec_corpus.py).
//   exec_corpus list BUNDLE...                one JSON line per launch of a candidate program
//   exec_corpus run BUNDLE PROGRAM OP [--max-ms N]
//                                             Execute that launch with its real grid/block and
//                                             argument bindings; prints one JSON line
// Bindings follow src/check/lower.cpp: one ir tensor per storage the launch touches, extent =
// storage bytes / element size, byte offset = view offset + the argument's byte offset.
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bundle/io.h"
#include "exec/exec.h"
#include "check/lower.h"
#include "ptx/inline.h"
#include "ptx/parser.h"

namespace {

using namespace dirigo;
using json = nlohmann::json;

using check::exec_dtype;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// CPU time of this process: on the shared build machine wall time grows with the load average,
// CPU time much less (reported next to exec_s, never instead of it)
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

int list(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    try {
      bundle::Bundle b = bundle::read_bundle(p);
      for (const auto& prog : b.programs) {
        if (prog.role != bundle::Role::Candidate) continue;
        for (size_t i = 0; i < prog.ops.size(); ++i) {
          const auto* l = std::get_if<bundle::LaunchOp>(&prog.ops[i]);
          if (!l) continue;
          std::cout << json{{"bundle", p}, {"program", prog.name}, {"op", i}, {"kernel", l->kernel},
                            {"grid", l->grid}, {"block", l->block}}.dump()
                    << "\n";
        }
      }
    } catch (const std::exception& e) {
      std::cout << json{{"bundle", p}, {"error", e.what()}}.dump() << "\n";
    }
  }
  return 0;
}

int run(const std::string& path, const std::string& program, size_t op_index, double max_ms) {
  auto t0 = std::chrono::steady_clock::now();
  json out{{"bundle", path}, {"program", program}, {"op", op_index}};
  auto fail = [&](const std::string& outcome, const std::string& why) {
    out["outcome"] = outcome;
    out["reason"] = why;
    out["wall_s"] = seconds_since(t0);
    std::cout << out.dump() << "\n";
    return 0;
  };
  bundle::Bundle b;
  try {
    b = bundle::read_bundle(path);
  } catch (const std::exception& e) {
    return fail("error", std::string("bundle: ") + e.what());
  }
  const bundle::Program* prog = nullptr;
  for (const auto& p : b.programs) if (p.name == program) prog = &p;
  if (!prog || op_index >= prog->ops.size()) return fail("error", "no such program/op");
  const auto* l = std::get_if<bundle::LaunchOp>(&prog->ops[op_index]);
  if (!l) return fail("error", "op is not a launch");
  out["kernel"] = l->kernel;
  out["grid"] = l->grid;
  out["block"] = l->block;
  const bundle::Module* bm = b.find_module(l->module);
  if (!bm || !bm->ptx) return fail("unsupported", "module " + l->module + " has no PTX");
  ptx::Module m;
  auto tp = std::chrono::steady_clock::now();
  try {
    m = ptx::parse(*bm->ptx);
    ptx::inline_calls(m);
  } catch (const ptx::ParseError& e) {
    return fail("unsupported", fmt::format("PTX parse: {}", e.reason()));
  }
  out["parse_s"] = seconds_since(tp);
  ir::Context ctx;
  exec::Launch launch;
  launch.grid = {uint32_t(l->grid[0]), uint32_t(l->grid[1]), uint32_t(l->grid[2])};
  launch.block = {uint32_t(l->block[0]), uint32_t(l->block[1]), uint32_t(l->block[2])};
  launch.dynamic_shared_bytes = uint64_t(l->shared_bytes);
  auto tensors = prog->tensor_index();
  auto storages = prog->storage_index();
  std::map<std::string, int32_t> storage_tensor;
  for (size_t i = 0; i < l->args.size(); ++i) {
    const auto& a = l->args[i].value;
    if (const auto* t = std::get_if<bundle::TensorRef>(&a)) {
      const bundle::Tensor& tv = prog->tensors.at(tensors.at(t->tensor));
      const bundle::Storage& st = prog->storages.at(storages.at(tv.storage));
      auto [it, fresh] = storage_tensor.emplace(tv.storage, 0);
      if (fresh) it->second = ctx.tensor(program + "." + tv.storage);
      unsigned es = bundle::element_size(tv.dtype);
      launch.params.push_back(exec::ParamBinding::tensor_arg(it->second, exec_dtype(tv.dtype), uint64_t(st.nbytes) / es,
                                                             uint64_t(tv.offset) * es + uint64_t(t->byte_offset.value_or(0))));
    } else if (const auto* s = std::get_if<bundle::Scalar>(&a)) {
      launch.params.push_back(bundle::is_float_scalar(s->type) ? exec::ParamBinding::float_arg(s->f)
                                                               : exec::ParamBinding::int_arg(s->i));
    } else if (std::holds_alternative<bundle::PointerArg>(a)) {
      return fail("unsupported", fmt::format("argument {} is a pointer into no traced tensor", i));
    } else {
      return fail("unsupported", fmt::format("argument {} is passed by value as raw bytes", i));
    }
  }
  exec::ExecOptions eo;
  eo.max_ms = max_ms;
  auto te = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  exec::ExecResult r = exec::execute(ctx, m, l->kernel, launch, eo);
  out["exec_s"] = seconds_since(te);
  out["exec_cpu_s"] = cpu_seconds() - cpu0;
  out["bundles"] = r.bundles.size();
  out["writes"] = r.writes.size();
  out["steps"] = r.steps;
  out["merged"] = r.merged;
  out["ifconverted"] = r.ifconverted;
  out["undecided"] = r.undecided.size();
  out["idioms"] = r.idioms;
  std::set<std::string> kinds;
  for (const auto& f : r.findings) kinds.insert(f.kind);
  out["findings"] = kinds;
  out["outcome"] = r.out_of_time ? "time-limit" : r.unsupported ? "unsupported" : !r.findings.empty() ? "finding" : "ok";
  if (r.unsupported) out["reason"] = *r.unsupported;
  out["wall_s"] = seconds_since(t0);
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 2 && args[0] == "list") return list({args.begin() + 1, args.end()});
  if (args.size() >= 4 && args[0] == "run") {
    double max_ms = 60'000;
    for (size_t i = 4; i + 1 < args.size(); ++i)
      if (args[i] == "--max-ms") max_ms = std::stod(args[i + 1]);
    return run(args[1], args[2], std::stoul(args[3]), max_ms);
  }
  std::cerr << "usage: exec_corpus list BUNDLE... | exec_corpus run BUNDLE PROGRAM OP [--max-ms N]\n";
  return 2;
}
