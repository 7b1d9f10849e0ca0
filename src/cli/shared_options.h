// What more than one command takes. The options themselves are groups of options/shared.json; these are
// the structs they fill.
#pragma once

#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/option_spec.h"
#include "mutate/compiler.h"
#include "score/options.h"

namespace dirigo::cli {

// --compiler and --cache (group "compile"), for the commands that compile mutants (mutate, killmatrix).
struct CompileChoice {
  std::string compiler = "auto", cache = ".cache/mutate/compile";
};
DIRIGO_CLI_MEMBERS(CompileChoice, compiler, cache)

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

// The report as --json prints it; the command then exits 0.
inline int print_json(const nlohmann::json& report) {
  std::cout << report.dump(1) << "\n";
  return 0;
}

// --store, --protocols, --only and --source (group "matrix_source"): the kill matrix that score and
// suite read and the protocols that apply.
DIRIGO_CLI_MEMBERS(score::MatrixSource, store, protocols_file, only, source)

}  // namespace dirigo::cli
