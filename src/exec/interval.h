// Interval reasoning over thread identity (internal to exec).
//
// Proving a global access in bounds by enumerating threads costs O(threads) per access, and
// today's KernelBench launches have millions of threads and loops of thousands of iterations.
// Most addresses are affine in (tid, ctaid) with guards of the form `v < c`, so one interval
// evaluation over the bundle's box of thread ranges proves them safe in O(nodes). The result is
// an over-approximation: "hi < extent" is a proof, anything else is no answer.
#pragma once

#include <array>
#include <optional>
#include <unordered_map>

#include "exec/exec.h"
#include "ir/expr.h"

namespace dirigo::exec {

// Ranges of the six thread-identity Vars (ThreadVars::all() order) for one bundle.
using ThreadBox = std::array<ir::Bounds, 6>;

// The launch's ranges narrowed by the simple atoms (`v < c`, `v <= c`, `c <= v`, `v == c`) of a
// conjunctive path predicate; other atoms are ignored, so the box contains every thread of `pred`.
// nullopt when the atoms are contradictory.
std::optional<ThreadBox> box_of(const ThreadVars& tv, ir::Expr pred);

// Unsigned range of a bitvector expression over every point of the box; nullopt when a node is
// outside what the rules know (reals, loads, unbounded Vars...). Never narrower than the truth.
std::optional<ir::Bounds> range_over(ir::Expr e, const ThreadVars& tv, const ThreadBox& box);

// Exact range of a thread-only bitvector expression over the threads of `pred`, by peeling constant
// offsets, constant factors and constant right shifts (loop iterations change only those) and
// enumerating the rest once per (expression, predicate): a K-iteration loop costs one enumeration,
// not K. nullopt when the threads are too many to enumerate or the expression is not thread-only.
class RangeCache {
 public:
  RangeCache(const ThreadVars& tv, uint64_t max_points) : tv_(tv), max_points_(max_points) {}
  std::optional<ir::Bounds> range(ir::Expr e, ir::Expr pred);
 private:
  std::optional<ir::Bounds> enumerate(ir::Expr e, ir::Expr pred);
  const ThreadVars& tv_;
  uint64_t max_points_;
  std::unordered_map<ir::Expr, std::unordered_map<ir::Expr, std::optional<ir::Bounds>>> memo_;  // pred -> e -> range
};

// A thread satisfying `pred`, looked for at the box corners and `samples` seeded random points
// (for predicates too large to enumerate). Every answer is checked by evaluation.
std::optional<ThreadCoord> sample_witness(const ThreadVars& tv, ir::Expr pred, unsigned samples = 4096);

}  // namespace dirigo::exec
