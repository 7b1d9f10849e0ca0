// Options that more than one command takes, declared once so that they read the same everywhere.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "mutate/compiler.h"
#include "score/options.h"

namespace dirigo::cli {

// --compiler, for the commands that compile mutants (mutate, killmatrix).
inline void add_compiler_option(CLI::App& sub, std::string& compiler) {
  sub.add_option("--compiler", compiler, "auto (NVRTC, then nvcc), nvrtc or nvcc")
      ->check(CLI::IsMember({"auto", "nvrtc", "nvcc"}));
}
inline mutate::Backend compiler_backend(const std::string& name) {
  return name == "nvrtc" ? mutate::Backend::Nvrtc : name == "nvcc" ? mutate::Backend::Nvcc : mutate::Backend::Auto;
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
