// Equal within tolerance: a sound upper bound on |a - b| for every real leaf in [-bound, bound].
//
// Two programs often differ only in how a constant was rounded: PyTorch's exact `x / 6` vs a
// kernel's `x * 0.16666667f`, a Python scalar 0.2 kept in fp64 vs rounded to fp32. Over the reals
// they differ, so the exact pipeline finds a witness whose difference is ~1e-8 and the location
// would be SUSPECT. Here both sides are walked together (same shape, aligned by a skeleton hash
// that ignores constant values) and the difference is bounded bottom-up:
//   constants |c - c'|;  sums: the sum of the matched terms' bounds (+ sup|t| of unmatched ones);
//   products: telescoping  sum_i D_i * prod_{j<i} sup|b_j| * prod_{j>i} sup|a_j|;
//   min/max/abs: the largest operand bound (1-Lipschitz); f(x) vs f(y): sup|f'| on the hull * D;
//   anything else: the interval of a - b.
// Intervals are evaluated with every real leaf in [-bound, bound]. Iterative and memoized.
#pragma once

#include <optional>

#include "ir/expr.h"
#include "smt/axioms.h"

namespace dirigo::smt {

struct Interval {
  double lo, hi;
  double mag() const;  // sup |x|
};

// Interval of e with every real leaf in [-bound, bound] (-inf..inf where nothing is known).
Interval interval_of(ir::Expr e, double bound);

// Upper bound on |a - b| (Real expressions of one Context) over all real leaves in [-bound, bound];
// +inf when nothing useful is known. Both sides are first rewritten by a Normalizer restricted to
// the identities that keep functions Lipschitz-friendly (mish -> x*tanh(softplus x), silu, gelu
// forms; tanh/sigmoid/softplus are not expanded into exp).
// Past `deadline` (when given) it throws StageTimeout.
double difference_bound(ir::Context& ctx, ir::Expr a, ir::Expr b, double bound, const AxiomOptions& axioms = {},
                        Ticker* deadline = nullptr);

}  // namespace dirigo::smt
