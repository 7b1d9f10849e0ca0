// Interval reasoning over thread identity (internal to exec).
//
// Proving a global access in bounds by enumerating threads costs O(threads) per access, and
// today's KernelBench launches have millions of threads and loops of thousands of iterations.
// Most addresses are affine in (tid, ctaid) with guards of the form `v < c`, so one interval
// evaluation over the bundle's box of thread ranges proves them safe in O(nodes). The result is
// an over-approximation: "hi < extent" is a proof, anything else is no answer.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <unordered_map>

#include "exec/deadline.h"
#include "exec/exec.h"
#include "ir/expr.h"

namespace dirigo::exec {

// Ranges of the six thread-identity Vars (ThreadVars::all() order) for one bundle.
using ThreadBox = std::array<ir::Bounds, 6>;

// The launch's ranges narrowed by the simple atoms (`v < c`, `v <= c`, `c <= v`, `v == c`) of a
// conjunctive path predicate; other atoms are ignored, so the box contains every thread of `pred`.
// nullopt when the atoms are contradictory.
std::optional<ThreadBox> box_of(const ThreadVars& tv, ir::Expr pred);

// Unsigned bounds the atoms of a conjunctive path predicate put on its sub-expressions
// (`(tid.x + 256*ctaid.x) <u n`, `tid.x < 64`, ...): every thread of the predicate keeps each
// expression inside its bounds. nullopt when some atom is unsatisfiable on its own.
using Guards = std::unordered_map<ir::Expr, ir::Bounds>;
std::optional<Guards> guards_of(ir::Expr pred);

// Unsigned range of a bitvector expression over every point of the box that satisfies the guards
// (none: the whole box); nullopt when a node is outside what the rules know (reals, loads,
// unbounded Vars...). Never narrower than the truth.
std::optional<ir::Bounds> range_over(ir::Expr e, const ThreadVars& tv, const ThreadBox& box, const Guards* guards = nullptr);
// The same, sharing `memo` (node -> range over this box and guards) with earlier calls: ranging
// every sum of one condition walks each node once instead of once per enclosing sum.
using RangeMemo = std::unordered_map<ir::Expr, ir::Bounds>;
std::optional<ir::Bounds> range_over(ir::Expr e, const ThreadVars& tv, const ThreadBox& box, RangeMemo& memo,
                                     const Guards* guards = nullptr);  // memo: for this box and these guards only

// Range of a thread-only bitvector expression over the threads of `pred` (a sound
// over-approximation, exact in the common cases), for bounds proofs. Loop iterations change only
// constant offsets, constant factors and constant right shifts, so those are peeled and the rest
// is computed once per (expression, predicate): a K-iteration loop costs one computation, not K.
// A sum whose terms fall into groups over disjoint thread Vars (`f(tid) + g(ctaid)`) is the sum of
// the groups' ranges over the predicate's box, each group enumerated over its own Vars only
// (256 + 8192 points instead of 2M); otherwise the expression is enumerated over the predicate's
// threads. nullopt when the threads are too many to enumerate or the expression is not thread-only.
class RangeCache {
 public:
  RangeCache(ir::Context& ctx, const ThreadVars& tv, uint64_t max_points) : ctx_(ctx), tv_(tv), max_points_(max_points) {}
  std::optional<ir::Bounds> range(ir::Expr e, ir::Expr pred);
  void set_deadline(Deadline* d) { deadline_ = d; }  // enumerations stop (TimeLimit) when it passes
  uint64_t points_enumerated() const { return points_; }
 private:
  struct Reps { uint64_t umin, umax; int64_t smin, smax; };  // unsigned and signed extremes
  std::optional<ir::Bounds> enumerate(ir::Expr e, ir::Expr pred);
  std::optional<ir::Bounds> split_sum(ir::Expr sum, ir::Expr pred);
  std::optional<Reps> group_reps(ir::Expr g, unsigned var_mask, const ThreadBox& box);
  int thread_mask(ir::Expr e);  // bit i: mentions ThreadVars::all()[i]; -1: not thread-only
  const std::optional<ThreadBox>& box(ir::Expr pred);
  ir::Context& ctx_;
  const ThreadVars& tv_;
  uint64_t max_points_;
  Deadline* deadline_ = nullptr;
  uint64_t points_ = 0;
  std::unordered_map<ir::Expr, std::unordered_map<ir::Expr, std::optional<ir::Bounds>>> memo_;  // pred -> e -> range
  std::unordered_map<ir::Expr, std::optional<ThreadBox>> boxes_;                               // pred -> box
  std::unordered_map<ir::Expr, int> masks_;
  std::map<std::pair<ir::Expr, std::array<uint64_t, 12>>, std::optional<Reps>> groups_;        // (group, box) -> reps
};

// A thread satisfying `pred`, looked for at the box corners and `samples` seeded random points
// (for predicates too large to enumerate). Every answer is checked by evaluation.
std::optional<ThreadCoord> sample_witness(const ThreadVars& tv, ir::Expr pred, unsigned samples = 4096);

// `index <u extent` for every thread of `pred`, decided over sub-boxes of pred's thread box rather
// than thread by thread (10^8-thread launches): each sub-box is narrowed by bounds propagation over
// pred's affine guards (`-1 + 16*ctaid.y + tid.y >= 0` with ctaid.y = 0 says tid.y >= 1), then the
// index is ranged over it (range_over); a box left undecided is split where a guard starts to hold
// for all of it (ctaid.y = 0 | ctaid.y >= 1), else halved on its widest Var. Its corners and center
// are evaluated first: a thread of pred whose index is past the extent is a witness (Violated).
// Unknown after max_boxes sub-boxes, or where the question does not compile to a BvProgram.
struct BoundsOverRanges {
  enum class Answer { InBounds, Violated, Unknown } answer = Answer::Unknown;
  std::optional<ThreadCoord> witness;  // Violated: evaluated, pred holds and the index is >= extent
  size_t boxes = 0;                    // sub-boxes looked at
};
BoundsOverRanges bounds_over_ranges(const ThreadVars& tv, ir::Expr pred, ir::Expr index, uint64_t extent,
                                    size_t max_boxes = 512, Deadline* deadline = nullptr);
// Satisfiability of a thread predicate by the same sub-box search (within `box` when given): Sat
// with an evaluated thread, Unsat when every sub-box is refuted (propagation or truth_over_box),
// Unknown after max_boxes sub-boxes.
struct SatOverRanges {
  enum class Answer { Sat, Unsat, Unknown } answer = Answer::Unknown;
  std::optional<ThreadCoord> witness;
  size_t boxes = 0;
};
SatOverRanges sat_over_ranges(const ThreadVars& tv, ir::Expr pred, const ThreadBox* box = nullptr, size_t max_boxes = 256,
                              Deadline* deadline = nullptr);
// Every thread satisfying `cond`, found over sub-boxes (propagation and truth_over_box prune, the
// widest mentioned Var is halved down to single values, each evaluated): the threads writing one
// element of a non-affine store index (`cond` = pred && index == element) without enumerating the
// launch. nullopt after max_boxes boxes or max_solutions threads, or if cond does not compile.
std::optional<std::vector<ThreadCoord>> solutions_over_ranges(const ThreadVars& tv, ir::Expr cond, size_t max_boxes = 4096,
                                                              size_t max_solutions = 4096, Deadline* deadline = nullptr);
// Three-valued truth of a thread condition (And/Or/Not over comparisons) over every point of the
// box, from interval ranges of the comparisons' operands; nullopt: not decided that way.
std::optional<bool> truth_over_box(const ThreadVars& tv, ir::Expr cond, const ThreadBox& box);
// `box` narrowed by bounds propagation over the affine guards of `pred` (exposed for tests);
// nullopt when no point of the box satisfies them.
std::optional<ThreadBox> propagate_guards(const ThreadVars& tv, ir::Expr pred, const ThreadBox& box);

}  // namespace dirigo::exec
