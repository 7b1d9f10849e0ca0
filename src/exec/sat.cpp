#include "exec/sat.h"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <stdexcept>
#include <unordered_set>

#include <fmt/format.h>

#include "exec/interval.h"
#include "ir/bits.h"
#include "ir/walk.h"

namespace dirigo::exec {

using ir::Expr;
using ir::Op;

namespace {
int64_t sext_of(uint64_t v, unsigned w) {
  if (w >= 64) return int64_t(v);
  uint64_t m = uint64_t(1) << (w - 1);
  return int64_t((v ^ m) - m);
}
}  // namespace

BvProgram::BvProgram(std::span<const Expr> vars, std::span<const Expr> roots) {
  std::unordered_map<Expr, uint32_t> slot;
  for (size_t i = 0; i < vars.size(); ++i) {
    Ins in{Op::Var, uint8_t(ir::bv_width(vars[i]->sort)), 0, false, uint32_t(i), 0, 0, 0, 0, 0};
    slot[vars[i]] = uint32_t(code_.size());
    code_.push_back(in);
  }
  // iterative post-order
  for (Expr root : roots) {
    std::vector<std::pair<Expr, bool>> stack{{root, false}};
    while (!stack.empty() && ok_) {
      auto [e, expanded] = stack.back();
      stack.pop_back();
      if (slot.count(e)) continue;
      if (!expanded) {
        stack.push_back({e, true});
        for (Expr a : e->args()) if (!slot.count(a)) stack.push_back({a, false});
        continue;
      }
      Ins in{e->op, uint8_t(e->sort == ir::Sort::Bool ? 1 : ir::bv_width(e->sort)), 0, e->is_signed(), 0, 0, 0,
             e->nargs, uint32_t(argbuf_.size()), 0};
      switch (e->op) {
        case Op::ConstBool: in.k = e->bool_value(); break;
        case Op::ConstBV: in.k = e->bv_value(); break;
        case Op::Var: ok_ = false; break;  // not one of ours
        case Op::Not: case Op::And: case Op::Or: case Op::Ite: case Op::Ult: case Op::Ule: case Op::Slt:
        case Op::Sle: case Op::BvAdd: case Op::BvMul: case Op::BvUDiv: case Op::BvSDiv: case Op::BvURem:
        case Op::BvSRem: case Op::BvShl: case Op::BvLShr: case Op::BvAShr: case Op::BvAnd: case Op::BvOr:
        case Op::BvXor: case Op::BvNot: case Op::BvSMin: case Op::BvSMax: case Op::BvUMin: case Op::BvUMax:
        case Op::BvMulHiU: case Op::BvMulHiS:
          break;
        case Op::Eq:
          if (e->arg(0)->sort == ir::Sort::Real) ok_ = false;
          break;
        case Op::ZExt: case Op::SExt: case Op::Trunc:
          in.sub_width = uint8_t(ir::bv_width(e->arg(0)->sort));
          break;
        default: ok_ = false;
      }
      if (!ok_) break;
      for (Expr a : e->args()) argbuf_.push_back(slot.at(a));
      slot[e] = uint32_t(code_.size());
      code_.push_back(in);
    }
    if (!ok_) return;
    roots_.push_back(slot.at(root));
  }
  regs_.resize(code_.size());
}

void BvProgram::eval(const uint64_t* point, uint64_t* out) {
  uint64_t* r = regs_.data();
  for (size_t i = 0; i < code_.size(); ++i) {
    const Ins& in = code_[i];
    const uint32_t* a = argbuf_.data() + in.args_at;
    uint64_t m = ir::width_mask(in.width);
    uint64_t v = 0;
    switch (in.op) {
      case Op::Var: v = point[in.a]; break;
      case Op::ConstBool: case Op::ConstBV: v = in.k; break;
      case Op::Not: v = !r[a[0]]; break;
      case Op::And: v = 1; for (uint32_t j = 0; j < in.nargs; ++j) v &= r[a[j]]; break;
      case Op::Or: v = 0; for (uint32_t j = 0; j < in.nargs; ++j) v |= r[a[j]]; break;
      case Op::Eq: v = r[a[0]] == r[a[1]]; break;
      case Op::Ult: v = r[a[0]] < r[a[1]]; break;
      case Op::Ule: v = r[a[0]] <= r[a[1]]; break;
      case Op::Slt: case Op::Sle: {
        unsigned w = code_[a[0]].width;
        int64_t x = sext_of(r[a[0]], w), y = sext_of(r[a[1]], w);
        v = in.op == Op::Slt ? x < y : x <= y;
        break;
      }
      case Op::Ite: v = r[a[0]] ? r[a[1]] : r[a[2]]; break;
      case Op::BvAdd: for (uint32_t j = 0; j < in.nargs; ++j) v += r[a[j]]; break;
      case Op::BvMul: v = 1; for (uint32_t j = 0; j < in.nargs; ++j) v *= r[a[j]]; break;
      case Op::BvAnd: v = ~uint64_t(0); for (uint32_t j = 0; j < in.nargs; ++j) v &= r[a[j]]; break;
      case Op::BvOr: for (uint32_t j = 0; j < in.nargs; ++j) v |= r[a[j]]; break;
      case Op::BvXor: for (uint32_t j = 0; j < in.nargs; ++j) v ^= r[a[j]]; break;
      case Op::BvNot: v = ~r[a[0]]; break;
      case Op::BvUDiv: v = r[a[1]] ? r[a[0]] / r[a[1]] : m; break;
      case Op::BvURem: v = r[a[1]] ? r[a[0]] % r[a[1]] : r[a[0]]; break;
      case Op::BvSDiv: case Op::BvSRem: {
        int64_t x = sext_of(r[a[0]], in.width), y = sext_of(r[a[1]], in.width);
        if (y == 0) v = in.op == Op::BvSDiv ? (x < 0 ? 1 : m) : uint64_t(x);
        else if (y == -1) v = in.op == Op::BvSDiv ? uint64_t(-x) : 0;
        else v = uint64_t(in.op == Op::BvSDiv ? x / y : x % y);
        break;
      }
      case Op::BvShl: v = r[a[1]] >= in.width ? 0 : r[a[0]] << r[a[1]]; break;
      case Op::BvLShr: v = r[a[1]] >= in.width ? 0 : r[a[0]] >> r[a[1]]; break;
      case Op::BvAShr: {
        int64_t x = sext_of(r[a[0]], in.width);
        v = uint64_t(r[a[1]] >= in.width ? (x < 0 ? -1 : 0) : x >> r[a[1]]);
        break;
      }
      case Op::BvSMin: case Op::BvSMax: {
        int64_t x = sext_of(r[a[0]], in.width), y = sext_of(r[a[1]], in.width);
        v = uint64_t(in.op == Op::BvSMin ? std::min(x, y) : std::max(x, y));
        break;
      }
      case Op::BvUMin: v = std::min(r[a[0]], r[a[1]]); break;
      case Op::BvUMax: v = std::max(r[a[0]], r[a[1]]); break;
      case Op::BvMulHiU: {
        unsigned __int128 p = (unsigned __int128)r[a[0]] * r[a[1]];
        v = uint64_t(p >> in.width);
        break;
      }
      case Op::BvMulHiS: {
        __int128 p = (__int128)sext_of(r[a[0]], in.width) * sext_of(r[a[1]], in.width);
        v = uint64_t(p >> in.width);
        break;
      }
      case Op::ZExt: v = r[a[0]]; break;
      case Op::SExt: v = uint64_t(sext_of(r[a[0]], in.sub_width)); break;
      case Op::Trunc: v = r[a[0]]; break;
      default: v = 0;
    }
    r[i] = v & m;
  }
  for (size_t i = 0; i < roots_.size(); ++i) out[i] = r[roots_[i]];
}

std::optional<AtomBound> bound_of_atom(Expr a) {
  bool neg = false;
  if (a->op == Op::Not) { neg = true; a = a->arg(0); }
  return bound_of_atom(a, neg);
}

std::optional<AtomBound> bound_of_atom(Expr a, bool neg) {
  if ((a->op != Op::Ult && a->op != Op::Ule && a->op != Op::Eq) || a->nargs != 2) return std::nullopt;
  Expr x = a->arg(0), y = a->arg(1);
  const bool const_right = y->op == Op::ConstBV;
  if (const_right == (x->op == Op::ConstBV)) return std::nullopt;
  Expr s = const_right ? x : y;
  const uint64_t c = (const_right ? y : x)->bv_value(), top = ir::width_mask(ir::bv_width(s->sort));
  const AtomBound empty{s, 1, 0};
  if (a->op == Op::Eq) return neg ? std::nullopt : std::optional<AtomBound>(AtomBound{s, c, c});
  // as an upper bound `s <= u` or a lower bound `l <= s`; negation swaps the side and strictness
  const bool strict = a->op == Op::Ult;
  const bool upper = const_right != neg;         // s < c, s <= c, !(c < s), !(c <= s)
  const bool excl = neg ? !strict : strict;      // !(c <= s) is s < c; !(s <= c) is c < s
  if (upper) {
    if (excl && c == 0) return empty;
    return AtomBound{s, 0, excl ? c - 1 : c};
  }
  if (excl && c == top) return empty;
  return AtomBound{s, excl ? c + 1 : c, top};
}

// ---------------------------------------------------------------- ThreadSat

ThreadSat::ThreadSat(ir::Context& ctx, const ThreadVars& tv, uint64_t max_enumeration)
    : ctx_(ctx), tv_(tv), max_enum_(max_enumeration) {}

int ThreadSat::var_id(Expr v) const {
  auto all = tv_.all();
  for (int i = 0; i < 6; ++i)
    if (all[i] == v) return i;
  return -1;
}

bool ThreadSat::thread_only(Expr e) {
  if (e->is_const()) return true;
  auto it = thread_only_memo_.find(e);
  if (it != thread_only_memo_.end()) return it->second;
  bool ok = true;
  for (Expr l : ir::leaves(e))
    if (l->op != Op::Var || var_id(l) < 0) { ok = false; break; }
  thread_only_memo_[e] = ok;
  return ok;
}

// Path predicates repeat their atoms across thousands of queries (each split adds one atom):
// the leaves of each atom are collected once.
int ThreadSat::var_mask(Expr e) {
  if (auto it = var_masks_.find(e); it != var_masks_.end()) return it->second;
  int mask = 0;
  for (Expr l : ir::leaves(e)) {
    int id = var_id(l);
    if (id < 0) { mask = -1; break; }
    mask |= 1 << id;
  }
  var_masks_.emplace(e, mask);
  return mask;
}

bool ThreadSat::mentions_ctaid(Expr e) {
  for (Expr l : ir::leaves(e)) {
    int id = var_id(l);
    if (id >= 3) return true;
  }
  return false;
}

// Every atom compares ONE affine form L = sum c_i v_i (c_i >= 0, no wraparound) plus a
// constant with a constant: the conjunction is an interval for L. When L's coefficients form
// a "contiguous" system (each at most 1 + the span of the smaller ones, e.g. 256*ctaid + tid),
// L takes every integer between its min and max, so the answer is an interval intersection.
// Returns nullopt when the shape does not apply.
std::optional<bool> ThreadSat::interval_decide(const std::vector<Expr>& atoms) {
  auto all = tv_.all();
  std::optional<std::array<int64_t, 6>> coef;
  __int128 lo = 0, hi = 0;  // constraint on L
  bool first = true;
  for (Expr a : atoms) {
    bool neg = false;
    if (a->op == Op::Not) { neg = true; a = a->arg(0); }
    if ((a->op != Op::Ult && a->op != Op::Ule) || a->nargs != 2) return std::nullopt;
    Expr x = a->arg(0), y = a->arg(1);
    bool const_right = y->op == Op::ConstBV;
    if (const_right == (x->op == Op::ConstBV)) return std::nullopt;
    Expr lin = const_right ? x : y;
    unsigned w = ir::bv_width(lin->sort);
    // parse lin = k + sum c_i v_i
    std::array<int64_t, 6> c{};
    int64_t k = 0;
    std::vector<std::pair<Expr, int64_t>> st{{lin, 1}};
    while (!st.empty()) {
      auto [e, m] = st.back();
      st.pop_back();
      if (e->op == Op::ConstBV) { k += m * int64_t(e->bv_value()); continue; }
      if (e->op == Op::Var) { int id = var_id(e); if (id < 0) return std::nullopt; c[id] += m; continue; }
      if (e->op == Op::ZExt) { st.push_back({e->arg(0), m}); continue; }
      if (e->op == Op::BvAdd) { for (Expr z : e->args()) st.push_back({z, m}); continue; }
      if (e->op == Op::BvMul && e->nargs == 2 && e->arg(0)->op == Op::ConstBV) {
        st.push_back({e->arg(1), m * int64_t(e->arg(0)->bv_value())});
        continue;
      }
      return std::nullopt;
    }
    __int128 mx = k, mn = k;
    for (int i = 0; i < 6; ++i) {
      if (c[i] < 0 || k < 0) return std::nullopt;
      if (c[i]) { mx += __int128(c[i]) * all[i]->bounds().hi; mn += __int128(c[i]) * all[i]->bounds().lo; }
    }
    if (w < 64 && mx >= (__int128(1) << w)) return std::nullopt;  // could wrap
    if (coef && *coef != c) return std::nullopt;
    coef = c;
    // constraint on S = L - k
    __int128 cv = int64_t(const_right ? y->bv_value() : x->bv_value());
    __int128 slo = 0, shi = (__int128(1) << 100);
    bool strict = a->op == Op::Ult;
    // const_right: S + k (<|<=) cv ; else cv (<|<=) S + k ; neg flips
    if (const_right != neg) {  // upper bound
      __int128 bound = const_right ? cv : cv;  // S + k < cv  (or not(cv <= S + k) == S + k < cv)
      bool st2 = const_right ? strict : !strict;
      shi = bound - k - (st2 ? 1 : 0);
    } else {  // lower bound
      bool st2 = const_right ? !strict : strict;  // not(S+k < cv) == S+k >= cv ; cv < S+k
      slo = cv - k + (st2 ? 1 : 0);
    }
    if (first) { lo = slo; hi = shi; first = false; }
    else { lo = std::max(lo, slo); hi = std::min(hi, shi); }
  }
  if (!coef) return std::nullopt;
  // contiguity of S over the box
  std::vector<int> ids;
  for (int i = 0; i < 6; ++i) if ((*coef)[i]) ids.push_back(i);
  std::sort(ids.begin(), ids.end(), [&](int a, int b) { return (*coef)[a] < (*coef)[b]; });
  __int128 span = 0, smin = 0;
  for (int i : ids) {
    __int128 ci = (*coef)[i];
    if (ci > span + 1) return std::nullopt;
    span += ci * (all[i]->bounds().hi - all[i]->bounds().lo);
    smin += ci * all[i]->bounds().lo;
  }
  __int128 smax = smin + span;
  return std::max(lo, smin) <= std::min(hi, smax);
}

std::optional<std::vector<uint64_t>> ThreadSat::solve_component(Expr conj, const std::vector<int>& ids, bool want_point) {
  // ranges from bounds, tightened by simple atoms
  std::vector<Range> range;
  auto all = tv_.all();
  for (int id : ids) range.push_back({all[id]->bounds().lo, all[id]->bounds().hi});
  std::vector<Expr> atoms;
  if (conj->op == Op::And) atoms.assign(conj->args().begin(), conj->args().end());
  else atoms.push_back(conj);
  auto pos = [&](Expr v) { int id = var_id(v); auto it = std::find(ids.begin(), ids.end(), id); return id < 0 || it == ids.end() ? -1 : int(it - ids.begin()); };
  for (Expr a : atoms) {
    auto bd = bound_of_atom(a);
    if (!bd || bd->subject->op != Op::Var || pos(bd->subject) < 0) continue;
    auto& r = range[pos(bd->subject)];
    r.lo = std::max(r.lo, bd->lo), r.hi = std::min(r.hi, bd->hi);
    if (r.lo > r.hi) return std::nullopt;
  }
  // a Var the condition sees only through its low d bits (masks, shifts, sums and products of
  // them: `63 & (4*ctaid.x + q)`, `31 & ((4*ctaid.x + q) >> 6)`) takes every residue mod 2^d in
  // any 2^d consecutive values of its range: enumerating [lo, lo + 2^d) is exact, and every point
  // is a real thread (096: ctaid.x over 2048 values instead of 524288)
  auto reduce = [&](const ThreadBox* box) {
    auto demand = low_bits_demand(conj, box);
    for (size_t k = 0; k < ids.size(); ++k) {
      unsigned d = demand[size_t(ids[k])];
      if (d < 63 && range[k].hi - range[k].lo + 1 > (uint64_t(1) << d))
        range[k].hi = range[k].lo + (uint64_t(1) << d) - 1;
    }
  };
  auto points = [&] {
    long double total = 1;
    for (auto& r : range) total *= (long double)(r.hi - r.lo + 1);
    return total;
  };
  for (auto& r : range)
    if (r.lo > r.hi) return std::nullopt;
  const std::vector<Range> tightened = range;
  reduce(nullptr);
  if (points() > (long double)max_enum_) {
    // sums whose range stays below 2^k show only k bits (`i − (i & −32)` is i mod 32, so the
    // comparisons above it see bits 0..4 of i, not all 32)
    range = tightened;  // the box is the real ranges, not the reduced ones
    ThreadBox box = box_of(ids, range);
    reduce(&box);
    // a query this large is otherwise answered "satisfiable" (conservatively) at once: only a modest
    // enumeration is worth it (a 2^23-point one can take a whole budget and decide nothing)
    if (points() > (long double)std::min<uint64_t>(max_enum_, uint64_t(1) << 20)) range = tightened;
  }
  long double total = points();
  if (!want_point) {
    if (auto d = interval_decide(atoms)) {
      if (!*d) return std::nullopt;
      std::vector<uint64_t> q;
      for (auto& r : range) q.push_back(r.lo);
      return q;
    }
  }
  std::vector<Expr> vars;
  for (int id : ids) vars.push_back(all[id]);
  Expr roots[] = {conj};
  BvProgram prog(vars, roots);
  // over thread ranges first: sub-boxes refuted by their guards' bounds or holding an evaluated
  // thread decide most large questions without enumerating (a partial tile's `r >= h` half)
  auto over_ranges = [&]() -> std::optional<std::optional<std::vector<uint64_t>>> {
    ThreadBox box = box_of(ids, range);
    auto d = sat_over_ranges(tv_, conj, &box, 64, deadline_);
    if (d.answer == SatOverRanges::Answer::Unknown) return std::nullopt;
    if (d.answer == SatOverRanges::Answer::Unsat) return std::optional<std::vector<uint64_t>>{};
    const uint32_t c[6] = {d.witness->tid.x, d.witness->tid.y, d.witness->tid.z,
                           d.witness->ctaid.x, d.witness->ctaid.y, d.witness->ctaid.z};
    std::vector<uint64_t> q;
    for (int id : ids) q.push_back(c[id]);
    return q;
  };
  if (!prog.ok() || total > (long double)max_enum_) {
    if (want_point && prog.ok())
      if (auto d = over_ranges(); d && *d) return *d;  // an evaluated thread, where enumeration cannot
    if (!want_point && prog.ok() && refuted_by_cuts(conj, ids, range)) return std::nullopt;
    ++inexact_;
    if (want_point) return std::nullopt;
    std::vector<uint64_t> p;
    for (auto& r : range) p.push_back(r.lo);
    return p;  // undecided: answered satisfiable
  }
  if (total > (long double)kProbeAbove)
    if (auto d = over_ranges()) return *d;
  if (!want_point && total > (long double)kProbeAbove) {
    // a long exact enumeration: a satisfiable question is usually answered by a few sampled
    // points, an unsatisfiable one by two of its atoms (see refuted_by_atom_pairs)
    if (auto p = probe(prog, range)) return p;
    if (refuted_by_atom_pairs(atoms, ids, range)) return std::nullopt;
  }
  return first_satisfying(prog, range);
}

std::optional<std::vector<uint64_t>> ThreadSat::probe(BvProgram& prog, const std::vector<Range>& range) {
  uint64_t state = 0x9E3779B97F4A7C15ull, out = 0;
  std::vector<uint64_t> p(range.size());
  for (unsigned i = 0; i < kProbePoints; ++i) {
    for (size_t k = 0; k < range.size(); ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;  // LCG: deterministic
      p[k] = range[k].lo + (state >> 17) % (range[k].hi - range[k].lo + 1);
    }
    prog.eval(p.data(), &out);
    if (out) return p;
  }
  return std::nullopt;
}

bool ThreadSat::refuted_by_atom_pairs(const std::vector<Expr>& atoms, const std::vector<int>& ids,
                                      const std::vector<Range>& range) {
  if (atoms.size() < 2 || atoms.size() > kMaxPairAtoms) return false;
  auto all = tv_.all();
  for (size_t i = 0; i < atoms.size(); ++i)
    for (size_t j = i + 1; j < atoms.size(); ++j) {
      Expr sub = ctx_.and_(atoms[i], atoms[j]);
      if (sub->op == Op::ConstBool) {
        if (!sub->bool_value()) return true;
        continue;
      }
      auto [it, fresh] = pair_refuted_.try_emplace(sub, false);
      if (fresh) {
        // the pair sees fewer low bits than the whole question: enumerate it exactly when that
        // leaves few points, else cut it at its small sub-expressions, lowered or not
        std::vector<Range> r = range;
        auto demand = low_bits_demand(sub);
        long double points = 1;
        for (size_t k = 0; k < ids.size(); ++k) {
          unsigned d = demand[size_t(ids[k])];
          if (d < 63 && r[k].hi - r[k].lo + 1 > (uint64_t(1) << d)) r[k].hi = r[k].lo + (uint64_t(1) << d) - 1;
          points *= (long double)(r[k].hi - r[k].lo + 1);
        }
        bool refuted = false;
        std::vector<Expr> vars;
        for (int id : ids) vars.push_back(all[id]);
        Expr roots[] = {sub};
        BvProgram prog(vars, roots);
        if (prog.ok() && points <= (long double)kPairPoints) refuted = !first_satisfying(prog, r);
        else if (prog.ok()) refuted = refuted_by_cuts(sub, ids, range) || refuted_by_cuts(sub, ids, range, CutMode::Merge);
        it->second = refuted;
      }
      if (it->second) return true;
    }
  return false;
}

std::optional<std::vector<uint64_t>> ThreadSat::first_satisfying(BvProgram& prog,
                                                                 const std::vector<Range>& range) {
  std::vector<uint64_t> p;
  for (auto& r : range) p.push_back(r.lo);
  uint64_t out = 0;
  while (true) {
    if (deadline_) deadline_->tick("in a satisfiability enumeration");
    ++points_;
    prog.eval(p.data(), &out);
    if (out) return p;
    size_t k = 0;  // odometer, first var fastest
    for (; k < p.size(); ++k) {
      if (p[k] < range[k].hi) { ++p[k]; break; }
      p[k] = range[k].lo;
    }
    if (k == p.size()) return std::nullopt;
  }
}

// How many low bits of each thread Var the condition can observe: demands flow from the
// comparisons (all bits of their operands) down through operators whose low d result bits depend
// only on the low d (or d + c) bits of their operands; anything else asks for every bit.
std::array<unsigned, 6> ThreadSat::low_bits_demand(Expr cond, const ThreadBox* box) {
  std::array<unsigned, 6> out{};
  std::vector<Expr> order;  // children before parents
  std::unordered_set<Expr> seen;
  ir::post_order(cond, [&](Expr e) { return seen.count(e) > 0; }, [&](Expr e) { seen.insert(e); order.push_back(e); });
  std::unordered_map<Expr, unsigned> demand;
  RangeMemo sums;  // ranges of the sums' nodes, shared
  auto ask = [&](Expr e, unsigned d) {
    unsigned w = ir::is_bv(e->sort) ? ir::bv_width(e->sort) : 1;
    auto& x = demand[e];
    x = std::max(x, std::min(d, w));
  };
  auto const_of = [](Expr e) -> std::optional<uint64_t> {
    if (e->op == Op::ConstBV) return e->bv_value();
    return std::nullopt;
  };
  for (size_t i = order.size(); i-- > 0;) {  // parents first
    Expr e = order[i];
    unsigned w = ir::is_bv(e->sort) ? ir::bv_width(e->sort) : 1;
    unsigned d = e == cond ? w : demand.count(e) ? demand[e] : 0;
    if (box && e->op == Op::BvAdd && d > 1) {  // a sum below 2^k has k meaningful bits
      auto r = range_over(e, tv_, *box, sums);
      if (r && r->lo <= r->hi) d = std::min<unsigned>(d, std::max(1u, unsigned(std::bit_width(r->hi))));
    }
    if (e->op == Op::Var) {
      int id = var_id(e);
      if (id >= 0) out[size_t(id)] = std::max(out[size_t(id)], d);
      continue;
    }
    if (!ir::is_bv(e->sort)) {  // Boolean structure and comparisons: operands in full
      for (Expr a : e->args()) ask(a, ir::is_bv(a->sort) ? ir::bv_width(a->sort) : 1);
      continue;
    }
    switch (e->op) {
      case Op::BvAdd: case Op::BvMul: case Op::BvOr: case Op::BvXor: case Op::BvNot:
        for (Expr a : e->args()) ask(a, d);
        break;
      case Op::BvAnd: {
        unsigned dm = d;  // a constant mask bounds what the other operands can show
        for (Expr a : e->args())
          if (auto c = const_of(a)) dm = std::min<unsigned>(dm, unsigned(std::bit_width(*c)));
        for (Expr a : e->args()) ask(a, dm);
        break;
      }
      case Op::BvShl: case Op::BvLShr: case Op::BvAShr: {
        auto c = const_of(e->arg(1));
        if (!c || *c >= w) { for (Expr a : e->args()) ask(a, 64); break; }
        unsigned da = e->op == Op::BvShl ? (d > *c ? d - unsigned(*c) : 0) : unsigned(std::min<uint64_t>(w, d + *c));
        if (e->op == Op::BvAShr && d + *c >= w) da = w;
        ask(e->arg(0), da);
        break;
      }
      case Op::ZExt: case Op::SExt: case Op::Trunc: {
        unsigned wi = ir::bv_width(e->arg(0)->sort);
        ask(e->arg(0), e->op == Op::SExt && d > wi ? wi : std::min(d, wi));
        break;
      }
      case Op::Ite:
        ask(e->arg(0), 1);
        ask(e->arg(1), d);
        ask(e->arg(2), d);
        break;
      default:
        for (Expr a : e->args()) ask(a, 64);
    }
  }
  return out;
}

// Too many threads to enumerate, but the condition may see them only through a few
// sub-expressions of small range: output coordinates of a flat index L (`(L / 1156) % 34`,
// `L − 34·(L / 34)`) over 80M threads. Each such sub-expression becomes a fresh Var over its
// interval (range_over: never narrower than the truth), and the rest of the condition is
// enumerated over those Vars. The values the threads give them jointly are a subset of that
// product, so no satisfying point proves the condition unsatisfiable; a satisfying point proves
// nothing (it may combine values no single thread has). Cuts are taken as low as the ranges stay
// small, and `k + R` is cut at R, so related terms share their Var (`w % 2` and `(w + 1) % 2` are
// both over w, not two independent bits).
ThreadBox ThreadSat::box_of(const std::vector<int>& ids, const std::vector<Range>& range) {
  auto all = tv_.all();
  ThreadBox box;
  for (int i = 0; i < 6; ++i) box[size_t(i)] = all[i]->bounds();
  for (size_t k = 0; k < ids.size(); ++k) box[size_t(ids[k])] = {range[k].lo, range[k].hi};
  return box;
}

bool ThreadSat::refuted_by_cuts(Expr conj, const std::vector<int>& ids, const std::vector<Range>& range, CutMode mode) {
  auto all = tv_.all();
  ThreadBox box = box_of(ids, range);
  // a node's range: range_over, else enumerated over the node's own thread Vars when they are
  // few (`tid.x − 64·(tid.x >> 6)` over 256 points), each as an unsigned interval
  // both bounds keep a refutation attempt cheap (it runs on the inexact path of every split and
  // undef check of a large launch; at 2^24 points 011's Execute ran out of its 20 s)
  constexpr uint64_t kOwnPoints = uint64_t(1) << 12;
  const long double kCutPoints = (long double)std::min<uint64_t>(max_enum_, uint64_t(1) << 16);
  std::unordered_map<Expr, std::optional<ir::Bounds>> ranges;
  std::array<uint64_t, 12> box_key;
  for (size_t i = 0; i < 6; ++i) box_key[2 * i] = box[i].lo, box_key[2 * i + 1] = box[i].hi;
  auto small = [&](Expr e) -> std::optional<ir::Bounds> {
    auto [it, fresh] = ranges.try_emplace(e);
    if (!fresh) return it->second;
    // the same sub-expressions (an output coordinate's decoding) recur in thousands of questions
    auto [kept, new_key] = small_memo_.try_emplace({e, box_key});
    if (!new_key) return it->second = kept->second;
    auto r = range_over(e, tv_, box);
    if (!r || r->lo > r->hi || (long double)(r->hi - r->lo) >= kCutPoints) {
      r.reset();
      int mask = var_mask(e);
      long double own = 1;
      std::vector<Expr> vs;
      for (int i = 0; i < 6; ++i)
        if (mask > 0 && (mask >> i & 1)) { own *= (long double)(box[size_t(i)].hi - box[size_t(i)].lo + 1); vs.push_back(all[i]); }
      if (!vs.empty() && own <= (long double)kOwnPoints) {
        Expr roots[] = {e};
        BvProgram prog(vs, roots);
        if (prog.ok()) {
          std::vector<uint64_t> p;
          for (int i = 0; i < 6; ++i) if (mask >> i & 1) p.push_back(box[size_t(i)].lo);
          std::vector<int> at;
          for (int i = 0; i < 6; ++i) if (mask >> i & 1) at.push_back(i);
          uint64_t lo = ~uint64_t(0), hi = 0, out = 0;
          while (true) {
            prog.eval(p.data(), &out);
            lo = std::min(lo, out), hi = std::max(hi, out);
            size_t k = 0;
            for (; k < p.size(); ++k) {
              if (p[k] < box[size_t(at[k])].hi) { ++p[k]; break; }
              p[k] = box[size_t(at[k])].lo;
            }
            if (k == p.size()) break;
          }
          if ((long double)(hi - lo) < kCutPoints) r = ir::Bounds{lo, hi};
        }
      }
    }
    it->second = kept->second = r;
    return r;
  };
  auto width = [](const ir::Bounds& r) { return (long double)(r.hi - r.lo) + 1; };
  struct Offset { Expr k, rest; };
  auto offset_of = [&](Expr e) -> std::optional<Offset> {  // k + R with R of small range
    if (e->op != Op::BvAdd) return std::nullopt;
    Expr k = nullptr;
    std::vector<Expr> rest;
    for (Expr a : e->args()) {
      if (a->op == Op::ConstBV) k = a;
      else rest.push_back(a);
    }
    if (!k || rest.empty()) return std::nullopt;
    Expr R = ctx_.bv_add(rest);
    if (!small(R)) return std::nullopt;
    return Offset{k, R};
  };
  // phase 1, top-down: which nodes become Vars, which are k + (their rest)
  std::unordered_map<Expr, ir::Bounds> cut;
  std::unordered_map<Expr, Offset> offset;
  long double points = 1;
  std::unordered_set<Expr> seen;
  std::vector<Expr> stack{conj};
  // Merge may end with far fewer points than its first frontier has
  const long double phase1_points = mode == CutMode::Merge ? kCutPoints * kCutPoints : kCutPoints;
  while (!stack.empty() && points <= phase1_points) {
    Expr e = stack.back();
    stack.pop_back();
    if (e->is_const() || !seen.insert(e).second) continue;
    if (ir::is_bv(e->sort)) {
      if (e->op == Op::Var) {
        int id = var_id(e);
        if (id < 0) return false;
        cut[e] = box[size_t(id)];
        points *= (long double)(box[size_t(id)].hi - box[size_t(id)].lo + 1);
        continue;
      }
      if (auto o = offset_of(e)) {
        offset[e] = *o;
        stack.push_back(o->rest);
        continue;
      }
      if (auto r = small(e)) {
        // every operand of small range too, and not many more points: cut there instead, keeping
        // their relations (`w % 2` and `(w + 1) % 2` both over w)
        bool lower = true;
        long double below = 1;
        for (Expr a : e->args()) {
          if (a->is_const()) continue;
          std::optional<ir::Bounds> ra;
          if (!ir::is_bv(a->sort)) lower = false;
          else if (auto o = offset_of(a)) ra = small(o->rest);
          else ra = small(a);
          if (!ra) lower = false;
          else below *= width(*ra);
        }
        if (below > width(*r) * 256 || mode == CutMode::Merge) lower = false;
        if (!lower) {
          cut[e] = *r;
          points *= (long double)(r->hi - r->lo + 1);
          continue;
        }
      }
    }
    for (Expr a : e->args()) stack.push_back(a);
  }
  if (points > phase1_points || cut.empty()) return false;
  if (mode == CutMode::Merge) {
    // lower a cut node to its operands' cuts when that adds no points: `1 & (1 + t)` next to
    // `t % 2` becomes a function of t, the one Var both share (each such step only gains relations)
    // the cuts below e: its operands', looking through up to two levels of operands that are no
    // small range themselves (`-2*((1 + t) >> 1)` wraps; `(1 + t) >> 1` below it is small)
    auto operand_cuts = [&](Expr e, std::vector<std::pair<Expr, ir::Bounds>>& out,
                            std::vector<std::pair<Expr, Offset>>& offs) {
      std::vector<std::pair<Expr, int>> todo;
      for (Expr a : e->args()) todo.push_back({a, 0});
      while (!todo.empty()) {
        auto [a, depth] = todo.back();
        todo.pop_back();
        if (a->is_const()) continue;
        if (!ir::is_bv(a->sort)) return false;
        if (a->op == Op::Var) {
          int id = var_id(a);
          if (id < 0) return false;
          out.push_back({a, box[size_t(id)]});
        } else if (auto o = offset_of(a)) {
          offs.push_back({a, *o});
          out.push_back({o->rest, *small(o->rest)});
        } else if (auto r = small(a)) {
          out.push_back({a, *r});
        } else if (depth < 2 && a->nargs > 0) {
          for (Expr b : a->args()) todo.push_back({b, depth + 1});
        } else {
          return false;
        }
      }
      return true;
    };
    // one pass over the cut nodes; shared_only: only lowerings onto nodes already cut (no new
    // points) — done first, so that `1 & (1 + t)` joins t before t itself is lowered further;
    // else the one lowering that leaves the fewest points within the budget, then back to shared
    // ones (each lowering only gains relations; the budget bounds the enumeration)
    auto pass = [&](bool shared_only) {
      std::vector<Expr> nodes;
      for (const auto& [e, r] : cut) if (e->op != Op::Var) nodes.push_back(e);
      std::sort(nodes.begin(), nodes.end(), [](Expr a, Expr b) { return a->id < b->id; });  // deterministic
      bool changed = false;
      Expr best = nullptr;
      long double best_total = 0;
      std::vector<std::pair<Expr, ir::Bounds>> best_below;
      std::vector<std::pair<Expr, Offset>> best_offs;
      for (Expr f : nodes) {
        std::vector<std::pair<Expr, ir::Bounds>> below;
        std::vector<std::pair<Expr, Offset>> offs;
        if (!operand_cuts(f, below, offs)) continue;
        long double added = 1;
        std::unordered_set<Expr> counted;
        for (const auto& [x, r] : below)
          if (!cut.count(x) && counted.insert(x).second) added *= width(r);
        if (shared_only) {
          if (added > 1) continue;
          cut.erase(f);
          for (const auto& [x, r] : below) cut.emplace(x, r);
          for (const auto& [x, o] : offs) offset.emplace(x, o);
          changed = true;
          continue;
        }
        // else: the lowering that leaves the fewest points, within the budget
        long double total = 1;
        for (const auto& [x, r] : cut) total *= width(r);
        total = total / width(cut.at(f)) * added;
        if (total <= kCutPoints && (!best || total < best_total)) {
          best = f, best_total = total;
          best_below = std::move(below), best_offs = std::move(offs);
        }
      }
      if (best) {
        cut.erase(best);
        for (const auto& [x, r] : best_below) cut.emplace(x, r);
        for (const auto& [x, o] : best_offs) offset.emplace(x, o);
        changed = true;
      }
      return changed;
    };
    for (int rounds = 0; rounds < 256; ++rounds) {
      while (pass(true)) {}
      if (!pass(false)) break;
    }
    points = 1;
    for (const auto& [e, r] : cut) points *= width(r);
    if (points > kCutPoints) return false;
  }
  // phase 2, bottom-up: the condition over the cut Vars
  std::vector<Expr> fresh;
  std::vector<Range> fresh_range;
  std::unordered_map<Expr, Expr> value;
  auto children = [&](Expr e) -> std::vector<Expr> {
    if (cut.count(e) || e->is_const()) return {};
    if (auto it = offset.find(e); it != offset.end()) return {it->second.rest};
    return {e->args().begin(), e->args().end()};
  };
  auto has = [&](Expr e) { return value.count(e) > 0; };
  ir::walk_post_order(conj, children, has, [](Expr) { return false; }, [&](Expr e) {
    if (e->is_const()) value[e] = e;
    else if (auto it = cut.find(e); it != cut.end()) {
      Expr v = ctx_.var(fmt::format("cut{}.{}", fresh.size(), e->id), e->sort, it->second);
      fresh.push_back(v);
      fresh_range.push_back({it->second.lo, it->second.hi});
      value[e] = v;
    } else if (auto ot = offset.find(e); ot != offset.end()) {
      value[e] = ctx_.bv_add(ot->second.k, value.at(ot->second.rest));
    } else {
      std::vector<Expr> args;
      for (Expr a : e->args()) args.push_back(value.at(a));
      value[e] = ctx_.rebuild(e, args);
    }
  });
  Expr abstract = value.at(conj);
  if (abstract->op == Op::ConstBool) return !abstract->bool_value();
  Expr roots[] = {abstract};
  BvProgram prog(fresh, roots);
  if (!prog.ok()) return false;
  return !first_satisfying(prog, fresh_range);  // no abstract point satisfies it: unsat
}

std::optional<ThreadCoord> ThreadSat::solve(Expr e, bool want_point) {
  ++queries_;
  ThreadCoord tc{{0, 0, 0}, {0, 0, 0}};
  if (e->op == Op::ConstBool) {
    if (!e->bool_value()) return std::nullopt;
    return tc;
  }
  std::vector<Expr> atoms;
  if (e->op == Op::And) atoms.assign(e->args().begin(), e->args().end());
  else atoms.push_back(e);
  // components over disjoint vars (union-find over the 6 thread vars; atoms with other leaves fail)
  int parent[6] = {0, 1, 2, 3, 4, 5};
  auto find = [&](int x) { while (parent[x] != x) x = parent[x] = parent[parent[x]]; return x; };
  std::vector<std::vector<int>> atom_vars(atoms.size());
  for (size_t i = 0; i < atoms.size(); ++i) {
    int mask = var_mask(atoms[i]);
    if (mask < 0) { ++inexact_; return want_point ? std::nullopt : std::optional<ThreadCoord>(tc); }
    for (int v = 0; v < 6; ++v)
      if (mask >> v & 1) atom_vars[i].push_back(v);
    for (size_t j = 1; j < atom_vars[i].size(); ++j) parent[find(atom_vars[i][j])] = find(atom_vars[i][0]);
  }
  std::vector<uint64_t> value(6, 0);
  for (int root = 0; root < 6; ++root) {
    if (find(root) != root) continue;
    std::vector<Expr> comp;
    for (size_t i = 0; i < atoms.size(); ++i)
      if (!atom_vars[i].empty() && find(atom_vars[i][0]) == root) comp.push_back(atoms[i]);
    if (comp.empty()) continue;
    std::vector<int> ids;
    for (int v = 0; v < 6; ++v) if (find(v) == root) ids.push_back(v);
    Expr conj = ctx_.and_(comp);
    if (!want_point) {
      auto it = memo_.find(conj);
      if (it != memo_.end()) { if (!it->second) return std::nullopt; continue; }
    }
    auto p = solve_component(conj, ids, want_point);
    if (!want_point) memo_[conj] = p.has_value();
    if (!p) return std::nullopt;
    for (size_t k = 0; k < ids.size(); ++k) value[ids[k]] = (*p)[k];
  }
  // atoms without vars are constants (false would have folded the conjunction)
  tc.tid = {uint32_t(value[0]), uint32_t(value[1]), uint32_t(value[2])};
  tc.ctaid = {uint32_t(value[3]), uint32_t(value[4]), uint32_t(value[5])};
  return tc;
}

bool ThreadSat::sat(Expr e) { return solve(e, false).has_value(); }
std::optional<ThreadCoord> ThreadSat::witness(Expr e) { return solve(e, true); }

std::optional<Linear> linear_of(Expr e, const std::vector<Expr>& vars) {
  std::vector<std::pair<Expr, int64_t>> stack{{e, 1}};
  Linear L;
  while (!stack.empty()) {
    auto [x, m] = stack.back();
    stack.pop_back();
    switch (x->op) {
      case Op::ConstBV: L.k += m * x->bv_signed(); break;
      case Op::Var: {
        auto it = std::find(vars.begin(), vars.end(), x);
        if (it == vars.end()) return std::nullopt;
        L.c[it - vars.begin()] += m;
        break;
      }
      case Op::ZExt: case Op::SExt: stack.push_back({x->arg(0), m}); break;
      case Op::BvAdd: for (Expr a : x->args()) stack.push_back({a, m}); break;
      case Op::BvMul: {
        int64_t f = m;
        Expr rest = nullptr;
        for (Expr a : x->args()) {
          if (a->op == Op::ConstBV) f *= a->bv_signed();
          else if (rest) return std::nullopt;
          else rest = a;
        }
        if (rest) stack.push_back({rest, f}); else L.k += f;
        break;
      }
      default: return std::nullopt;
    }
  }
  return L;
}

bool linear_is_exact(Expr e, const std::vector<Expr>& vars, const std::array<uint64_t, 6>& width) {
  using i128 = __int128;
  struct Iv {
    i128 lo, hi;
  };
  const i128 kLimit = i128(1) << 100;  // far past any index: a product beyond it is refused, not wrapped
  std::function<std::optional<Iv>(Expr)> go = [&](Expr x) -> std::optional<Iv> {
    switch (x->op) {
      case Op::ConstBV: return Iv{x->bv_signed(), x->bv_signed()};
      case Op::Var: {
        auto it = std::find(vars.begin(), vars.end(), x);
        if (it == vars.end()) return std::nullopt;
        return Iv{0, i128(width[size_t(it - vars.begin())]) - 1};
      }
      case Op::ZExt: case Op::SExt: {
        auto a = go(x->arg(0));
        unsigned w = ir::bv_width(x->arg(0)->sort);
        i128 lo = x->op == Op::ZExt ? 0 : -(i128(1) << (w - 1));
        i128 hi = x->op == Op::ZExt ? (i128(1) << w) - 1 : (i128(1) << (w - 1)) - 1;
        if (!a || a->lo < lo || a->hi > hi) return std::nullopt;
        return a;
      }
      case Op::BvAdd: {
        Iv s{0, 0};
        for (Expr c : x->args()) {
          auto a = go(c);
          if (!a) return std::nullopt;
          s.lo += a->lo, s.hi += a->hi;
          if (s.lo < -kLimit || s.hi > kLimit) return std::nullopt;
        }
        return s;
      }
      case Op::BvMul: {
        i128 f = 1;
        std::optional<Iv> rest;
        for (Expr c : x->args()) {
          if (c->op == Op::ConstBV) {
            f *= c->bv_signed();
          } else {
            if (rest) return std::nullopt;
            rest = go(c);
            if (!rest) return std::nullopt;
          }
          if (f < -kLimit || f > kLimit) return std::nullopt;
        }
        if (!rest) return Iv{f, f};
        if ((rest->lo < 0 ? -rest->lo : rest->lo) > kLimit / (f < 0 ? -f : f + 1) ||
            (rest->hi < 0 ? -rest->hi : rest->hi) > kLimit / (f < 0 ? -f : f + 1))
          return std::nullopt;
        i128 a = f * rest->lo, b = f * rest->hi;
        return Iv{std::min(a, b), std::max(a, b)};
      }
      default: return std::nullopt;
    }
  };
  auto r = go(e);
  return r && ir::bv_width(e->sort) == 64 && r->lo >= 0 && r->hi < (i128(1) << 63);
}

std::optional<Digits> digits_of(const int64_t (&c)[6], const std::array<uint64_t, 6>& width) {
  Digits d;
  for (size_t i = 0; i < 6; ++i) {
    if (width[i] == 1) continue;
    if (c[i] == 0) return std::nullopt;  // threads differing only in this Var share the element
    d.terms.push_back({uint64_t(c[i] < 0 ? -c[i] : c[i]), width[i]});
  }
  std::sort(d.terms.begin(), d.terms.end());
  unsigned __int128 span = 0;
  for (auto [ci, w] : d.terms) {
    if (ci <= span) return std::nullopt;
    d.below.push_back(uint64_t(span));
    span += (unsigned __int128)ci * (w - 1);
    if (span >> 63) return std::nullopt;  // beyond any index
  }
  return d;
}

std::optional<bool> digits_reach(const Digits& D, std::span<const int64_t> ks, __int128 target, size_t max_windows,
                                 Deadline* deadline) {
  if (ks.empty()) return false;
  const __int128 kmin = ks.front(), kmax = ks.back();
  auto any_in = [&](__int128 lo, __int128 hi) {  // some k in [lo, hi]
    if (hi < kmin || lo > kmax || lo > hi) return false;
    auto it = std::lower_bound(ks.begin(), ks.end(), int64_t(std::max(lo, kmin)));
    return it != ks.end() && __int128(*it) <= hi;
  };
  auto floor_div = [](__int128 a, __int128 c) { return a >= 0 ? a / c : -((-a + c - 1) / c); };
  struct Window { size_t n; __int128 center; bool zero; };  // digits left, center, all digits so far 0
  std::vector<Window> stack{{D.terms.size(), target, true}};
  size_t windows = 0;
  while (!stack.empty()) {
    auto [n, center, zero] = stack.back();
    stack.pop_back();
    if (n == 0) {  // center is a k (its window of width 0 held one)
      if (!zero) return true;
      continue;
    }
    if (deadline) deadline->tick("in the global read-after-write check");
    const __int128 c = D.terms[n - 1].first, r = D.terms[n - 1].second, below = D.below[n - 1];
    if (n == 1 && c == 1) {  // the last digit reaches every integer of center ± (r - 1)
      if (!zero ? any_in(center - (r - 1), center + (r - 1))
                : any_in(center - (r - 1), center - 1) || any_in(center + 1, center + (r - 1)))
        return true;
      continue;
    }
    // the digit values whose window [center + c d - below, center + c d + below] meets [kmin, kmax]
    const __int128 dlo = std::max(-(r - 1), -floor_div(center + below - kmin, c));
    const __int128 dhi = std::min(r - 1, floor_div(kmax + below - center, c));
    for (__int128 d = dlo; d <= dhi; ++d) {
      if (++windows > max_windows) return std::nullopt;
      const __int128 m = center + c * d;
      if (any_in(m - below, m + below)) stack.push_back({n - 1, m, zero && d == 0});
    }
  }
  return false;
}

}  // namespace dirigo::exec
