// ptx_parse: parse (and inline) many PTX files, one JSON line per file. Used by
// scripts/ptx-coverage.py; depends only on dirigo_ptx so it builds while other modules change.
//   ptx_parse [--no-inline] [--rollup] FILE...   or   ptx_parse [--no-inline] [--rollup] - < list-of-paths
// --rollup adds, per kernel, the math idioms matched, the opcodes used and the float-bit
// manipulations no idiom absorbed (what Execute would refuse; ptx/rollup.h).
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ptx/inline.h"
#include "ptx/parser.h"
#include "ptx/rollup.h"

namespace {
nlohmann::json parse_one(const std::string& path, bool inline_funcs, bool with_rollup) {
  nlohmann::json j{{"file", path}};
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    j["ok"] = false;
    j["reason"] = "cannot read file";
    return j;
  }
  std::ostringstream text;
  text << in.rdbuf();
  try {
    dirigo::ptx::Module m = dirigo::ptx::parse(text.str());
    size_t instructions = 0;
    for (const auto& f : m.functions) instructions += f.body.size();
    j["parsed_instructions"] = instructions;
    if (inline_funcs) dirigo::ptx::inline_calls(m);
    j["ok"] = true;
    j["kernels"] = m.kernels().size();
    if (with_rollup) {
      nlohmann::json ks = nlohmann::json::array();
      for (const auto& f : m.functions) {
        if (!f.is_entry || !f.has_body) continue;
        auto r = dirigo::ptx::rollup(f);
        auto bits = dirigo::ptx::unmatched_float_bits(f, r);
        std::set<std::string> ops;
        for (size_t i = 0; i < f.body.size(); ++i)
          if (r.at[i].kind == dirigo::ptx::RolledInstr::Kind::Keep) ops.insert(std::string(dirigo::ptx::opcode_name(f.body[i].op)));
        nlohmann::json k{{"name", f.name}, {"idioms", r.matched}, {"opcodes", ops}, {"float_bits", bits.size()}};
        if (!bits.empty()) k["float_bits_first"] = bits.front().message;
        ks.push_back(k);
      }
      j["kernel_info"] = ks;
    }
  } catch (const dirigo::ptx::ParseError& e) {
    j["ok"] = false;
    j["line"] = e.line();
    j["col"] = e.col();
    j["reason"] = e.reason();
    j["token"] = e.token();
  } catch (const std::exception& e) {
    j["ok"] = false;
    j["reason"] = std::string("internal error: ") + e.what();
  }
  return j;
}
}  // namespace

int main(int argc, char** argv) {
  bool inline_funcs = true, with_rollup = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-inline") inline_funcs = false;
    else if (a == "--rollup") with_rollup = true;
    else if (a == "-") for (std::string line; std::getline(std::cin, line);) { if (!line.empty()) files.push_back(line); }
    else files.push_back(a);
  }
  int failed = 0;
  for (const auto& f : files) {
    auto j = parse_one(f, inline_funcs, with_rollup);
    failed += !j["ok"].get<bool>();
    std::cout << j.dump() << "\n";
  }
  return failed ? 1 : 0;
}
