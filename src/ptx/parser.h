// PTX text -> AST (ast.h). A hand-written lexer and recursive-descent parser for the PTX
// that nvcc 12/13 emits (sm_80, sm_90, sm_90a; with or without --use_fast_math, -O3,
// -lineinfo). Throws ParseError (line:col, reason, offending token) on anything it does
// not understand; never crashes on bad input.
#pragma once

#include <string>
#include <string_view>

#include "ptx/ast.h"

namespace dirigo::ptx {

Module parse(std::string_view text);

// Reads and parses a file; I/O failures are std::runtime_error naming the path.
Module parse_file(const std::string& path);

}  // namespace dirigo::ptx
