// What the printer (print.cpp) and the summaries (summary.cpp) write alike.
#pragma once

#include <string>
#include <string_view>

#include "ir/expr.h"

namespace dirigo::ir {

// The symbol of an op printed infix, (a op b op c), with `times` for products; empty when the op
// is printed as f(args).
std::string_view infix_symbol(Op o, std::string_view times);

// The name of a node printed as f(args) where both write the same: smin, zext32, real_s, a call's
// function, else the op's name. The printer and the summaries differ on mulhi and real2bv.
std::string function_name(Expr x);

}  // namespace dirigo::ir
