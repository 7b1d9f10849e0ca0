// ptx_parse: parse (and inline) many PTX files, one JSON line per file. Used by
// scripts/ptx-coverage.py; depends only on dirigo_ptx so it builds while other modules change.
//   ptx_parse [--no-inline] FILE...      or      ptx_parse [--no-inline] - < list-of-paths
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ptx/inline.h"
#include "ptx/parser.h"

namespace {
nlohmann::json parse_one(const std::string& path, bool inline_funcs) {
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
  bool inline_funcs = true;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-inline") inline_funcs = false;
    else if (a == "-") for (std::string line; std::getline(std::cin, line);) { if (!line.empty()) files.push_back(line); }
    else files.push_back(a);
  }
  int failed = 0;
  for (const auto& f : files) {
    auto j = parse_one(f, inline_funcs);
    failed += !j["ok"].get<bool>();
    std::cout << j.dump() << "\n";
  }
  return failed ? 1 : 0;
}
