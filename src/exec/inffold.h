// Folding IEEE infinities out of a specialized value.
//
// Execute represents an infinite float as the Real Vars "-inf" / "+inf" (a softmax's masked lanes
// load -inf). Once a value is specialized to one thread, an infinity that reached it through a
// thread-dependent select (a shuffle partner on a masked lane) sits among finite terms:
// max(x, -inf), exp2(c·(-inf − m)), s + 0·… . Tensor data are finite reals in the model, so these
// fold exactly; what would need a finite operand's sign or gives NaN (inf − inf) is left alone, and
// the Var then makes the value UNSUPPORTED where it is used.
#pragma once

#include "ir/expr.h"

namespace dirigo::exec {

// e with every foldable occurrence of the Vars "-inf"/"+inf" folded; e itself when it has none.
ir::Expr fold_infinities(ir::Context& ctx, ir::Expr e);

}  // namespace dirigo::exec
