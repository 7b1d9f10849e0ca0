// `dirigo execute FILE.ptx`: parse a PTX file, inline its .func calls, and list its kernels
// (name, parameters, shared memory, registers, instruction count); `--json` for a JSON listing.
// Exit 0 on success, 4 with `UNSUPPORTED: <file>:<line>:<col>: <reason>` when the PTX cannot
// be parsed or inlined, 64 when the file cannot be read.
//
// Extension point for symbolic execution: options that select a launch (--kernel, --grid,
// --block, ...) go into ExecuteOptions and setup(); run_execute() hands a parsed, inlined
// module to execute_kernel(), which is where the executor plugs in.
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/command.h"
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
};

// Where symbolic/concrete execution of one kernel plugs in.
int execute_kernel(const ExecuteOptions& opt, const ptx::Module& m) {
  if (!m.find_function(opt.kernel) || !m.find_function(opt.kernel)->is_entry) {
    std::cerr << "dirigo execute: no kernel named '" << opt.kernel << "' in " << opt.file << "\n";
    return 64;
  }
  std::cout << "UNSUPPORTED: " << opt.file << ": kernel execution is not available in this build\n";
  return 4;
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

Register reg({"execute", "Parse a PTX file and list its kernels (later: execute one symbolically)",
              [](CLI::App& sub) -> std::function<int()> {
                auto opt = std::make_shared<ExecuteOptions>();
                sub.add_option("file", opt->file, "PTX file")->required();
                sub.add_flag("--json", opt->json, "JSON listing");
                sub.add_flag("--parse-only", opt->parse_only, "only parse (no inlining); exit 0 or 4");
                sub.add_option("--kernel", opt->kernel, "kernel to execute");
                return [opt] { return run_execute(*opt); };
              }});

}  // namespace
}  // namespace dirigo::cli
