// If-conversion of forward branch regions (internal to exec).
//
// A conditional `bra` whose predicate depends on loaded data cannot split a bundle (bundles are
// domains over thread identity). When the branch and everything up to its reconvergence point
// form an acyclic forward region, the machine instead runs the region once, instruction by
// instruction in PTX order, each under the predicate of the paths that reach it ("guard"):
// register writes merge as ite(guard, new, old), stores store ite(guard, new, old element), and
// safety checks ask about the threads the guard's thread part admits. PTX order is a topological
// order of a forward region, so every register read sees the value of the path actually taken:
// the result is exact, not an over-approximation.
//
// The same mechanism also converts short side-effect-free regions behind thread-identity
// branches once a launch has many bundles (per-tap bounds tests of transposed convolutions
// multiply bundles combinatorially; their taps only load and accumulate).
#pragma once

#include <unordered_map>

#include <functional>
#include <string>

#include "ir/expr.h"
#include "ptx/ast.h"
#include "ptx/rollup.h"

namespace dirigo::exec {

struct IfRegion {
  size_t end = 0;              // reconvergence pc: every path from the branch reaches it, nothing jumps past it
  size_t size = 0;             // executed (non-absorbed) instructions in [branch, end)
  bool side_effects = false;   // a store / atomic inside
  std::string refusal;         // non-empty: not convertible, and why (names the offending PTX line)
};

// Scans the region of the branch at `pc` (its target must lie ahead). A region is convertible
// when every branch inside jumps forward to at most `end` and it holds no loop, return, exit,
// trap, call, barrier or warp collective. Absorbed math-idiom instructions are ignored.
// With `allow_loops`, back edges that stay inside the region (target after `pc`) are allowed: the
// region is then a single-entry piece whose only exit is `end` (used for state merging, where
// each side runs its loops with its own concrete counters).
IfRegion find_if_region(const ptx::Function& f, const ptx::Rollup& rollup, size_t pc, bool allow_loops = false);

// The thread-identity part of a guard: an over-approximation of "some data makes the guard true"
// that is exact when the guard mentions no data. Data comparisons become `true` (with their
// polarity pushed through Not/And/Or), thread-only atoms stay.
ir::Expr thread_projection(ir::Context& ctx, ir::Expr guard, const std::function<bool(ir::Expr)>& thread_only);

// "Some input satisfies `cond`", as a thread-only predicate: the Boolean skeleton (Not/And/Or/
// Bool ite) is evaluated for every assignment of its data atoms (an atom and its canonical
// negation are one variable; Undef leaves are free), keeping the thread atoms. Exact up to
// dependencies between distinct data atoms (x > 1 vs x > 0 count as independent). Above
// `max_atoms` distinct data atoms it falls back to thread_projection.
ir::Expr exists_data(ir::Context& ctx, ir::Expr cond, const std::function<bool(ir::Expr)>& thread_only,
                     unsigned max_atoms = 8);

// Whether `cond` is false for every assignment of its atoms taken as free variables (exact for up
// to 10 distinct atoms; above, false): unsatisfiable for every thread and input.
bool propositionally_unsat(ir::Context& ctx, ir::Expr cond);

// e with every occurrence of the node `from` replaced by `to` (iterative, memoized over the DAG)
ir::Expr replace_node(ir::Context& ctx, ir::Expr e, ir::Expr from, ir::Expr to);

// `cond` with every comparison over an ite operand split into an ite of comparisons
// (`32 <=s ite(c, x, Undef)` -> `ite(c, 32 <=s x, Undef)`): an equivalent condition whose atoms
// are the comparisons of the arms, so a register's if-converted history shares its atoms with the
// guards that selected it (propositional checks see `c ∧ ¬c`; data/Undef atoms become free
// Booleans for exists_data instead of hiding thread atoms). memo: kept by the caller.
ir::Expr lift_ite_atoms(ir::Context& ctx, ir::Expr cond, std::unordered_map<ir::Expr, ir::Expr>& memo);

// The condition under which `v` is undefined: Undef leaves, through ite arms under their
// conditions; any other operator is undefined when one of its operands is. `false` without Undef.
ir::Expr undef_condition(ir::Context& ctx, ir::Expr v);
// The same with a memo kept by the caller across calls (a Machine asks it of every register at
// every region end; the values share their sub-terms).
ir::Expr undef_condition(ir::Context& ctx, ir::Expr v, std::unordered_map<ir::Expr, ir::Expr>& memo);

}  // namespace dirigo::exec
