// Helpers over Reduce nodes (ir/expr.h: Op::Reduce, Op::Bound): opening a reduction at a point,
// expanding it into the n-ary form the rest of dirigo always used (the fallback below a size
// threshold), and comparing the domains of two reductions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace dirigo::ir {

using Box = std::vector<std::pair<int64_t, int64_t>>;  // per dim [lo, hi)
Box reduce_box(Expr reduce);
uint64_t reduce_count(Expr reduce);  // points of the box (saturating)
// What expanding `reduce` fully costs: its points times the terms of the reductions nested in its
// body (saturating). A sum over 2048 rows of 2048-term products is 2048 points but 4 M terms.
uint64_t reduce_terms(Expr reduce);
// The outermost reductions of e (not those inside other reductions' bodies), each once.
std::vector<Expr> top_reductions(Expr e);
// What evaluating e's reductions costs: reduce_terms of its outermost reductions, summed (saturating).
uint64_t expansion_terms(Expr e);
bool contains_reduce(Expr e);

// The body of `reduce` at `point` (one coordinate per dim, in dim order).
Expr instantiate(Context& ctx, Expr reduce, std::span<const int64_t> point);
// The body at symbolic index values (closed expressions, e.g. bounded BV64 Vars), in dim order.
Expr instantiate_at(Context& ctx, Expr reduce, std::span<const Expr> values);
// The reduction as one n-ary Add / Mul / Max / Min over its points (the points in row-major order).
Expr expand_reduce(Context& ctx, Expr reduce);
// Every closed reduction of at most max_points points below e expanded (inner ones first); larger
// ones stay. The result equals e for every input.
Expr expand_reductions(Context& ctx, Expr e, uint64_t max_points);

// Two reductions of one op whose bodies are one function up to an index offset (body_b(k) ==
// body_a(k + offset); offset 0 when the bodies are equal) over boxes that differ in a's coordinates:
// a point one side sums and the other does not (the term only one side has), in the coordinates of
// the side it belongs to (in_a: a's), and how many points each lacks. nullopt when the ops differ, no
// offset relates the bodies, or the boxes cover the same points.
struct DomainDifference {
  std::vector<int64_t> point;
  bool in_a = true;
  uint64_t only_a = 0, only_b = 0;  // points in a but not b, and in b but not a
  std::vector<int64_t> offset;      // per dim: b's index k reads a's body at k + offset
};
std::optional<DomainDifference> domain_difference(Context& ctx, Expr a, Expr b);
// The offset per dim with body_b(k) == body_a(k + offset), when one is found (ReduceMerge's alignment).
std::optional<std::vector<int64_t>> body_offset(Context& ctx, Expr a, Expr b);

// Each Load below `body` with its index's start (at the Var k = 0) and step (from k = 0 to 1, 0 for a
// read that does not move with k); nullopt when some step is not a constant.
struct StridedRead {
  Expr load, start;
  int64_t step;
};
std::optional<std::vector<StridedRead>> strided_reads(Context& ctx, Expr body, Expr k);

// op over box of body (Bound leaves, as Context::reduce_abstracted) with the body rebuilt over index
// Vars bounded by the box: the rules that need bounds fire on its index arithmetic (a flat index
// split into fields by a view, (63 & k) + 64·(63 & (k >> 6)) + ..., is k again below 2^12).
Expr reduce_bounded(Context& ctx, ReduceOp op, const Box& box, Expr body);

// The partials of a block- or grid-stride loop combined by a tree (shared memory, shuffles), merged:
// n one-dim reductions R_t = op_{k<T} f_t(k) of one op, combined by that op, whose reads are at
// a + t·d + n·d·k (t = 0..n-1 in some order) are op_{j<n·T} g(j) with g's reads at a + d·j, kept only
// when f_t(k) == g(n·k + t) for every t (hash-consed, exact); operands equal to g(n·T), g(n·T + 1), ...
// (the remainder iterations of the threads that ran one more) extend it. Below e (reduction bodies
// included), bottom-up, at closed nodes.
Expr merge_interleaved(Context& ctx, Expr e);

}  // namespace dirigo::ir
