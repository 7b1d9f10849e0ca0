// Re-rolling: an expanded reduction (an n-ary sum, max or min whose terms are one body at index
// values affine in a term number: what an accumulator loop, an unrolled loop, a shared-memory tree
// or a shuffle tree leave after canonicalization) back into one Reduce node over a box, with the
// body and the index form the ATen equations build, so that a kernel's location and its
// reference's hash-cons to one node. Every re-rolling is verified term by term (the Reduce denotes
// exactly the terms it replaces); a sum that is not one is left as it is.
#pragma once

#include <cstdint>

#include "ir/expr.h"

namespace dirigo::ir {

struct RerollOptions {
  size_t min_terms = 2;  // groups of fewer terms stay expanded
  // Read every real constant as the simplest rational within a relative 2^-22 of it (a kernel's
  // 1.0f/768 as 1/768): an approximation, so the caller must say so where it is needed.
  bool snap_constants = false;
};

struct RerollStats {
  uint64_t sums = 0;       // n-ary nodes that gained a Reduce
  uint64_t terms = 0;      // terms folded into those Reduce nodes
  uint64_t normalized = 0; // existing reductions with dims coalesced
  uint64_t snapped = 0;    // constants replaced by a simpler rational (snap_constants)
};

// Bottom-up over a DAG: every closed reduction normalized (normalize_reduce), every real Add / Max /
// Min re-rolled (reroll_node) after its operands. The memo is kept across calls (both sides of a
// location share sub-terms). Throws what the Context's constructors throw (LimitExceeded).
class Reroller {
 public:
  explicit Reroller(Context& ctx, RerollOptions opt = {});
  ~Reroller();
  Expr operator()(Expr e);
  const RerollStats& stats() const;

 private:
  struct Impl;
  Impl* impl_;
};

// One n-ary real Add / Max / Min (its operands as they are): terms of one shape whose tensor-read
// indices form a lattice {v0 + Σ p_d·s_d : p in a box} become one Reduce over that box (plus, in a
// sum, c_k − c times the terms whose coefficient c_k differs from the group's most common c).
// Returns e itself when nothing re-rolls.
Expr reroll_node(Context& ctx, Expr e, RerollOptions opt = {}, RerollStats* stats = nullptr);

// A closed (zero-based: ReduceOrigin) reduction with adjacent dims whose indices only appear as
// outer·n_inner + inner merged into one (ATen's [0,6)×[0,8) over x[48·r + 8·i + j] is
// the kernel's [0,48) over x[48·r + k]). Returns r itself when nothing merges.
Expr normalize_reduce(Context& ctx, Expr r, RerollStats* stats = nullptr);

// The simplest rational (smallest denominator) within a relative `rel` of q; q itself when none is
// simpler.
mpq_class simplest_rational_near(const mpq_class& q, const mpq_class& rel);

}  // namespace dirigo::ir
