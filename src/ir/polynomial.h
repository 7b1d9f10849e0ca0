// Real sums and products expanded into sums of monomials over the sub-expressions that are neither
// (atoms: calls, min/max, ite, reductions, leaves), each atom itself rebuilt over expanded operands.
//
// The canonical forms distribute a product over sums only while it stays small (kDistributeLimit),
// so one polynomial can keep two shapes: a kernel's `(x0 - S/512)·r·w` and the reference's
// `(511/512·x0 - x1/512 - …)·r·w` (S a 512-term sum) are one expansion and two nodes. Two
// expressions whose expansions are equal are equal for every value of the atoms (a ring identity),
// so `expansion(a - b) == 0` proves a == b; a different expansion proves nothing (atoms are compared
// as nodes).
#pragma once

#include <cstddef>
#include <functional>

#include "ir/expr.h"

namespace dirigo::ir {

struct ExpansionOptions {
  // A product whose expansion would have more monomials than this stays one atom (its operands
  // expanded); so does a sum past it.
  size_t max_terms = size_t(1) << 15;
  // Called every few thousand monomials (a deadline throws from it).
  std::function<void()> tick;
};

// e with every real sum and product expanded (nullptr when e has an Undef: poison is no ring element).
Expr expansion(Context& ctx, Expr e, const ExpansionOptions& opt = {});

// Terms of a real sum that differ in one sum factor only, c·F·X₁ + … + c·F·Xₙ (X a sum or a sum
// reduction), collected into c·F·(X₁ + … + Xₙ) with the partials merged (merge_interleaved): the
// unrolled-by-4 loop's `Σ_k x[4k+j]` that a variance's cross term `m·Σ(x - m)` multiplies one by
// one is the whole row's sum again, which the other program's statistic multiplies once. Equal to
// e (distributivity); applied bottom-up. `tick` (optional) is called every few thousand terms.
Expr collect_partial_sums(Context& ctx, Expr e, const std::function<void()>& tick = {});

}  // namespace dirigo::ir
