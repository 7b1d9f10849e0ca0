// What the printer (print.cpp) and the summaries (summary.cpp) write alike.
#pragma once

#include <string_view>

#include "ir/expr.h"

namespace dirigo::ir {

// The symbol of an op printed infix, (a op b op c), with `times` for products; empty when the op
// is printed as f(args).
std::string_view infix_symbol(Op o, std::string_view times);

}  // namespace dirigo::ir
