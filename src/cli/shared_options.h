// Options that more than one command takes, declared once so that they read the same everywhere.
#pragma once

#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "mutate/compiler.h"
#include "score/options.h"

namespace dirigo::cli {

// --compiler and --cache, for the commands that compile mutants (mutate, killmatrix).
struct CompileChoice {
  std::string compiler = "auto", cache = ".cache/mutate/compile";
};
inline void add_compile_options(CLI::App& sub, CompileChoice& c) {
  sub.add_option("--compiler", c.compiler, "auto (NVRTC, then nvcc), nvrtc or nvcc")
      ->check(CLI::IsMember({"auto", "nvrtc", "nvcc"}));
  sub.add_option("--cache", c.cache, "compile cache directory");
}
// The compiler `c` chooses, with the rest of `co` as given; null once it has printed why there is
// none (the command then exits 4, UNSUPPORTED).
inline std::unique_ptr<mutate::Compiler> chosen_compiler(const CompileChoice& c, mutate::CompilerOptions co = {}) {
  co.backend = c.compiler == "nvrtc" ? mutate::Backend::Nvrtc
               : c.compiler == "nvcc" ? mutate::Backend::Nvcc
                                      : mutate::Backend::Auto;
  co.cache_dir = c.cache;
  std::string why;
  auto compiler = mutate::make_compiler(co, &why);
  if (!compiler) std::cout << "UNSUPPORTED: " << why << "\n";
  return compiler;
}

// --json and -q: the report as JSON, and no progress line (score, suite).
inline void add_report_flags(CLI::App& sub, bool& json, bool& quiet) {
  sub.add_flag("--json", json, "print JSON");
  sub.add_flag("-q,--quiet", quiet, "no progress line");
}
// The report as --json prints it; the command then exits 0.
inline int print_json(const nlohmann::json& report) {
  std::cout << report.dump(1) << "\n";
  return 0;
}

// --store, --protocols, --only and --source: the kill matrix that score and suite read and the
// protocols that apply.
inline void add_matrix_source_options(CLI::App& sub, score::MatrixSource& src, const char* only_help) {
  sub.add_option("--store,--db", src.store, "SQLite results store written by dirigo killmatrix")->required();
  sub.add_option("--protocols", src.protocols_file, "JSON array of protocols (replaces the built-ins)");
  sub.add_option("--only", src.only, only_help);
  sub.add_option("--source", src.source, "runs to use: auto (gpu if present), cpu, gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
}

}  // namespace dirigo::cli
