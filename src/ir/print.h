// Printing expressions: a human form that abbreviates huge DAGs (shared
// sub-terms become let-bound names, output cut after a node budget) and SMT-LIB 2.
#pragma once

#include <string>

#include "ir/expr.h"

namespace dirigo::ir {

struct PrintOptions {
  size_t max_nodes = 200;   // beyond this many distinct nodes print "…(N nodes)"
  size_t max_operands = 8;  // of an n-ary node; the rest print as "…(+N more)"
  bool let_shared = true;   // name sub-terms used more than once
};

std::string to_string(const Context& ctx, Expr e, const PrintOptions& opt = {});
// A self-contained SMT-LIB 2 script declaring every leaf and asserting (distinct a b) when b is given.
std::string to_smtlib(const Context& ctx, Expr a, Expr b = nullptr);
// A Reduce node over its printed body: `Σ_{k0<8192} body` (dims named by their de Bruijn index).
std::string reduce_string(Expr reduce, std::string_view body);

}  // namespace dirigo::ir
