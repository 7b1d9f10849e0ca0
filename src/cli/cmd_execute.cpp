// `dirigo execute FILE.ptx`: parse a PTX file, inline its .func calls, and list its kernels
// (name, parameters, shared memory, registers, instruction count); `--json` for a JSON listing.
// Exit 0 on success, 4 with `UNSUPPORTED: <file>:<line>:<col>: <reason>` when the PTX cannot
// be parsed or inlined, 64 when the file cannot be read.
//
// With --kernel NAME --grid X,Y,Z --block X,Y,Z the kernel is executed symbolically (src/exec):
// every 64-bit parameter not given by --arg is a pointer bound to a fresh tensor named after
// the parameter, with unknown extent and element type f32 unless --dtype NAME=TYPE says
// otherwise; scalar parameters take their value from --arg NAME=VALUE. Prints the bundles, a
// write-set summary and every BUG (--json: one JSON object). Exit 1 on BUG, 4 on UNSUPPORTED.
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "exec/exec.h"
#include "ir/print.h"
#include "ptx/inline.h"
#include "ptx/parser.h"
#include "ptx/summary.h"

namespace dirigo::cli {
namespace {

struct ExecuteOptions {
  std::string file;
  bool json = false;
  bool parse_only = false;  // stop after parsing (no inlining): the corpus parse-rate measurement
  std::string kernel;       // with --kernel: run that kernel (executor), else list kernels
  std::string grid = "1,1,1", block = "1,1,1";
  uint64_t dynamic_shared = 0;
  std::vector<std::string> args;    // NAME=VALUE for scalar parameters
  std::vector<std::string> dtypes;  // NAME=f32|f64|f16|bf16|i8|i16|i32|i64|u8
  uint64_t max_steps = 20'000'000;
  double max_ms = 60'000;
  uint64_t summarize_min_trips = exec::ExecOptions{}.summarize_min_trips;
  bool step_loops = false;
};
DIRIGO_CLI_MEMBERS(ExecuteOptions, file, json, parse_only, kernel, grid, block, dynamic_shared, args, dtypes, max_steps,
                   max_ms, summarize_min_trips, step_loops)

bool parse_dim3(const std::string& s, exec::Dim3& d) {
  unsigned v[3] = {1, 1, 1};
  std::istringstream in(s);
  std::string part;
  int n = 0;
  while (std::getline(in, part, ',')) {
    if (n == 3 || part.empty() || part.find_first_not_of("0123456789") != std::string::npos) return false;
    v[n++] = unsigned(std::stoul(part));
  }
  if (n == 0) return false;
  d = {v[0], v[1], v[2]};
  return true;
}

std::optional<exec::DType> parse_dtype(const std::string& s) {
  static const std::map<std::string, exec::DType> m = {
      {"f32", exec::DType::F32}, {"f64", exec::DType::F64}, {"f16", exec::DType::F16}, {"bf16", exec::DType::BF16},
      {"i8", exec::DType::I8},   {"i16", exec::DType::I16}, {"i32", exec::DType::I32}, {"i64", exec::DType::I64},
      {"u8", exec::DType::U8}};
  auto it = m.find(s);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

nlohmann::json coord_json(const exec::ThreadCoord& t) {
  return {{"tid", {t.tid.x, t.tid.y, t.tid.z}}, {"ctaid", {t.ctaid.x, t.ctaid.y, t.ctaid.z}}};
}

int run_kernel(const ExecuteOptions& opt, const ptx::Module& m, const ptx::Function& f) {
  exec::Launch launch;
  if (!parse_dim3(opt.grid, launch.grid) || !parse_dim3(opt.block, launch.block)) {
    std::cerr << "dirigo execute: --grid/--block take X[,Y[,Z]] with positive integers\n";
    return 64;
  }
  launch.dynamic_shared_bytes = opt.dynamic_shared;
  std::map<std::string, std::string> args, dtypes;
  for (const auto* list : {&opt.args, &opt.dtypes})
    for (const auto& a : *list) {
      auto eq = a.find('=');
      if (eq == std::string::npos) {
        std::cerr << "dirigo execute: expected NAME=VALUE, got '" << a << "'\n";
        return 64;
      }
      (list == &opt.args ? args : dtypes)[a.substr(0, eq)] = a.substr(eq + 1);
    }
  ir::Context ctx;
  for (const auto& p : f.params) {
    auto it = args.find(p.name);
    if (it != args.end()) {
      try {
        launch.params.push_back(ptx::is_float(p.type) ? exec::ParamBinding::float_arg(std::stod(it->second))
                                                       : exec::ParamBinding::int_arg(std::stoll(it->second)));
      } catch (const std::exception&) {
        std::cerr << "dirigo execute: bad value for " << p.name << ": '" << it->second << "'\n";
        return 64;
      }
      continue;
    }
    if (ptx::type_bits(p.type) != 64 || !p.dims.empty()) {
      std::cerr << "dirigo execute: scalar parameter " << p.name << " needs --arg " << p.name << "=VALUE\n";
      return 64;
    }
    exec::DType dt = exec::DType::F32;
    if (auto d = dtypes.find(p.name); d != dtypes.end()) {
      auto parsed = parse_dtype(d->second);
      if (!parsed) {
        std::cerr << "dirigo execute: unknown dtype '" << d->second << "'\n";
        return 64;
      }
      dt = *parsed;
    }
    launch.params.push_back(exec::ParamBinding::tensor_arg(ctx.tensor(p.name), dt, 0));
  }
  exec::ExecOptions eo;
  eo.max_steps = opt.max_steps;
  eo.max_ms = opt.max_ms;
  eo.summarize_loops = !opt.step_loops;
  eo.summarize_min_trips = opt.summarize_min_trips;
  auto r = exec::execute(ctx, m, f.name, launch, eo);
  if (opt.json) {
    nlohmann::json j;
    j["kernel"] = r.kernel;
    j["bundles"] = nlohmann::json::array();
    for (const auto& b : r.bundles)
      j["bundles"].push_back({{"pred", exec::short_string(ctx, b.pred, 2000)}, {"writes", b.writes}, {"end", b.end}});
    j["writes"] = nlohmann::json::array();
    for (const auto& w : r.writes)
      j["writes"].push_back({{"bundle", w.bundle}, {"tensor", std::string(ctx.tensor_name(w.tensor))},
                             {"index", exec::short_string(ctx, w.index, 2000)}, {"value", exec::short_string(ctx, w.value, 2000)},
                             {"op", std::string(exec::write_op_name(w.op))}, {"ptx_line", w.where.ptx_line}});
    j["findings"] = nlohmann::json::array();
    for (const auto& fd : r.findings) {
      nlohmann::json x = {{"kind", fd.kind}, {"kernel", fd.kernel}, {"ptx_line", fd.where.ptx_line},
                          {"source", fd.where.source}, {"message", fd.message}};
      if (fd.thread) x["thread"] = coord_json(*fd.thread);
      if (fd.other.ptx_line) x["other_ptx_line"] = fd.other.ptx_line;
      if (fd.other_thread) x["other_thread"] = coord_json(*fd.other_thread);
      j["findings"].push_back(x);
    }
    j["idioms"] = r.idioms;
    j["steps"] = r.steps;
    j["loops_summarized"] = r.loops_summarized;
    j["summaries_retracted"] = r.summaries_retracted;
    j["ms"] = r.ms;
    if (r.unsupported) j["unsupported"] = *r.unsupported;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << exec::to_text(ctx, r);
  }
  if (!r.findings.empty()) return 1;
  if (r.unsupported) return 4;
  return 0;
}

// Where symbolic/concrete execution of one kernel plugs in.
int execute_kernel(const ExecuteOptions& opt, const ptx::Module& m) {
  if (!m.find_function(opt.kernel) || !m.find_function(opt.kernel)->is_entry) {
    std::cerr << "dirigo execute: no kernel named '" << opt.kernel << "' in " << opt.file << "\n";
    return 64;
  }
  return run_kernel(opt, m, *m.find_function(opt.kernel));
}

int run_execute(const ExecuteOptions& opt) {
  std::ifstream in(opt.file, std::ios::binary);
  if (!in) {
    std::cerr << "dirigo execute: cannot read " << opt.file << "\n";
    return 64;
  }
  std::ostringstream text;
  text << in.rdbuf();
  ptx::Module m;
  try {
    m = ptx::parse(text.str());
    if (!opt.parse_only) ptx::inline_calls(m);
  } catch (const ptx::ParseError& e) {
    std::cout << "UNSUPPORTED: " << opt.file << ":" << e.line() << ":" << e.col() << ": " << e.reason()
              << (e.token().empty() ? "" : " (at '" + e.token() + "')") << "\n";
    return 4;
  }
  if (!opt.kernel.empty()) return execute_kernel(opt, m);
  auto kernels = ptx::summarize(m);
  if (opt.json) std::cout << ptx::to_json(m, kernels).dump(2) << "\n";
  else std::cout << ptx::to_text(kernels);
  return 0;
}

Register register_execute(options_command<ExecuteOptions>(
    "execute", "List the kernels of a PTX file, or execute one symbolically (--kernel)", run_execute));

}  // namespace
}  // namespace dirigo::cli
