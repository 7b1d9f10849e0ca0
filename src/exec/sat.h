// Exact satisfiability of thread-identity predicates (internal to exec).
//
// Launch dimensions are concrete, so a predicate over tid/ctaid is decided by enumerating the
// Vars it mentions. Three things keep that cheap:
//   - a conjunction splits into components over disjoint Vars (each decided alone, memoized
//     by the hash-consed component node);
//   - atoms `v < c`, `v <= c`, `c <= v`, `v == c` tighten each Var's range before enumerating;
//   - expressions are compiled once into a flat bitvector program (BvProgram) evaluated per
//     point without allocation.
// A component larger than ExecOptions::max_enumeration points is answered "satisfiable"
// (conservative for splitting: at worst an empty bundle survives) and counted in `inexact`.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "exec/deadline.h"
#include "exec/exec.h"
#include "ir/expr.h"

namespace dirigo::exec {

// A DAG of bitvector/bool operations over a fixed Var list, flattened in post-order.
class BvProgram {
 public:
  // Compiles roots over `vars`. ok() is false when some node is not a BV/Bool operation over
  // those Vars (reals, tensor data, Undef, another Var).
  BvProgram(std::span<const ir::Expr> vars, std::span<const ir::Expr> roots);
  bool ok() const { return ok_; }
  // Evaluates every root at the point (one value per var). Results: raw bits (bool 0/1).
  void eval(const uint64_t* point, uint64_t* out);
 private:
  struct Ins { ir::Op op; uint8_t width; uint8_t sub_width; bool is_signed; uint32_t a, b, c; uint32_t nargs; uint32_t args_at; uint64_t k; };
  std::vector<Ins> code_;
  std::vector<uint32_t> argbuf_;
  std::vector<uint32_t> roots_;
  std::vector<uint64_t> regs_;
  bool ok_ = true;
};

class ThreadSat {
 public:
  ThreadSat(ir::Context& ctx, const ThreadVars& tv, uint64_t max_enumeration);
  // Is `e` satisfiable by some thread of the launch?
  bool sat(ir::Expr e);
  // A thread satisfying e (nullopt when unsatisfiable or undecided).
  std::optional<ThreadCoord> witness(ir::Expr e);
  // Whether an expression mentions only thread-identity Vars and constants.
  bool thread_only(ir::Expr e);
  bool mentions_ctaid(ir::Expr e);
  void set_deadline(Deadline* d) { deadline_ = d; }  // enumerations stop (TimeLimit) when it passes
  uint64_t inexact() const { return inexact_; }
  uint64_t queries() const { return queries_; }
  uint64_t points_evaluated() const { return points_; }  // condition evaluations of the enumerations
  const ThreadVars& vars() const { return tv_; }
  ir::Context& ctx() { return ctx_; }

 private:
  struct Range { uint64_t lo, hi; };
  std::optional<std::vector<uint64_t>> solve_component(ir::Expr conj, const std::vector<int>& var_ids, bool want_point);
  std::optional<ThreadCoord> solve(ir::Expr e, bool want_point);
  int var_id(ir::Expr v) const;
  int var_mask(ir::Expr e);  // bit i: e mentions ThreadVars::all()[i]; -1: a leaf that is not a thread Var
  std::optional<bool> interval_decide(const std::vector<ir::Expr>& atoms);
  // Local: a small node whose operands are small too is cut at its operands when that costs at
  // most 256 times its points (keeps their relations). Merge: cut at the highest small nodes, then
  // lowered wherever that adds no points (two atoms over one sub-expression end up sharing it).
  enum class CutMode { Local, Merge };
  bool refuted_by_cuts(ir::Expr conj, const std::vector<int>& var_ids, const std::vector<Range>& range,
                       CutMode mode = CutMode::Local);
  // A question of more than kProbeAbove points (up to max_enumeration, each a full evaluation):
  // kProbePoints seeded random points first (a satisfying one is a real thread), then its atoms
  // two by two: a pair sees fewer bits and sub-expressions than the whole (`t odd` and `t even`
  // over t = 31 & (L >> 6), `tid.x >> 6 odd` and `63 & (4*ctaid.x + (tid.x >> 6)) even`), so it
  // is enumerated over its own low bits (at most kPairPoints) or refuted by cuts; an unsatisfiable
  // pair refutes the conjunction. 096's conv kernel: 216 such questions of 2^19 points, 22 s.
  static constexpr uint64_t kProbeAbove = uint64_t(1) << 16, kPairPoints = uint64_t(1) << 14;
  static constexpr unsigned kProbePoints = 1024;
  static constexpr size_t kMaxPairAtoms = 24;
  std::optional<std::vector<uint64_t>> probe(BvProgram& prog, const std::vector<Range>& range);
  bool refuted_by_atom_pairs(const std::vector<ir::Expr>& atoms, const std::vector<int>& var_ids,
                             const std::vector<Range>& range);
  // refuted_by_cuts' node ranges, kept across questions: (node, box lo/hi) -> range (nullopt: not small)
  std::map<std::pair<ir::Expr, std::array<uint64_t, 12>>, std::optional<ir::Bounds>> small_memo_;
  std::unordered_map<ir::Expr, bool> pair_refuted_;  // atom pair -> refuted (cuts are not exact: no "sat")
  // Every thread Var's bounds, with the component's Vars (ids) narrowed to `range`.
  std::array<ir::Bounds, 6> box_of(const std::vector<int>& var_ids, const std::vector<Range>& range);
  // The first point of the box (first variable fastest) where the compiled condition holds.
  std::optional<std::vector<uint64_t>> first_satisfying(BvProgram& prog, const std::vector<Range>& range);
  // low bits of each thread Var cond can see; with a box, sums of small range count only their bits
  std::array<unsigned, 6> low_bits_demand(ir::Expr cond, const std::array<ir::Bounds, 6>* box = nullptr);

  ir::Context& ctx_;
  ThreadVars tv_;
  uint64_t max_enum_;
  std::unordered_map<ir::Expr, bool> memo_;
  std::unordered_map<ir::Expr, bool> thread_only_memo_;
  std::unordered_map<ir::Expr, int> var_masks_;
  uint64_t inexact_ = 0, queries_ = 0, points_ = 0;
  Deadline* deadline_ = nullptr;
};

// What one atom of a path predicate says about one bitvector expression: `s < c`, `s <= c`,
// `c < s`, `c <= s`, `s == c` (unsigned, a constant on one side) and the negations of the first
// four bound s to [lo, hi]; lo > hi when no value of s satisfies the atom. nullopt: any other atom.
// The one parser of bound atoms (box_of, ThreadSat's component ranges, Machine::tighten).
struct AtomBound {
  ir::Expr subject;
  uint64_t lo, hi;
};
std::optional<AtomBound> bound_of_atom(ir::Expr atom);
std::optional<AtomBound> bound_of_atom(ir::Expr atom, bool negated);  // what `!atom` says when negated

// index = k + sum c_i * v_i over thread Vars (vars in ThreadVars::all() order), when e has that
// shape (no wraparound assumed; callers verify candidates by evaluation or bound the ranges).
struct Linear {
  int64_t k = 0;
  int64_t c[6] = {0, 0, 0, 0, 0, 0};
};
std::optional<Linear> linear_of(ir::Expr e, const std::vector<ir::Expr>& vars);
// Whether linear_of's reading of e is its value at every thread of the box (Var i in [0, width[i])):
// no ZExt/SExt argument leaves the range its extension reads, and the value lies in [0, 2^63). Then
// the bits e computes are k + sum c_i v_i exactly, whatever wraps inside a width.
bool linear_is_exact(ir::Expr e, const std::vector<ir::Expr>& vars, const std::array<uint64_t, 6>& width);

// The thread part T = sum c_i v_i of an affine index over a box of widths w_i, when it is
// injective "digit by digit": sorted by |c|, each coefficient exceeds the span of the smaller ones
// (tid + 256*ctaid, p + C*HW*b). Vars of width 1 are left out (fixed in the box); nullopt when a
// varying Var has coefficient 0 or the digits overlap.
struct Digits {
  std::vector<std::pair<uint64_t, uint64_t>> terms;  // (|c|, width), ascending
  std::vector<uint64_t> below;                       // the largest value the smaller terms add
};
std::optional<Digits> digits_of(const int64_t (&c)[6], const std::array<uint64_t, 6>& width);

// Whether some k of `ks` (sorted, distinct) equals target + sum |c_i| d_i with |d_i| < width_i,
// not all d_i zero: two threads of the box whose index constants differ by k - target reach the
// same element (the digits make the d_i unique, so all zero is the same thread). Digit by digit
// from the largest, a digit value is followed only when its window (center ± the smaller digits'
// span) holds some k (two binary searches), so a group of stores costs a read a few searches per
// digit. nullopt: more than max_windows windows were needed (the caller decides another way).
std::optional<bool> digits_reach(const Digits& d, std::span<const int64_t> ks, __int128 target, size_t max_windows,
                                 Deadline* deadline = nullptr);

}  // namespace dirigo::exec
