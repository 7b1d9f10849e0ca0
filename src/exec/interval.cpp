#include "exec/interval.h"

#include <random>
#include <unordered_map>
#include <vector>

#include "exec/sat.h"
#include "ir/bits.h"

namespace dirigo::exec {

using ir::Bounds;
using ir::Expr;
using ir::Op;
using u128 = unsigned __int128;

namespace {

int var_index(const ThreadVars& tv, Expr v) {
  auto all = tv.all();
  for (int i = 0; i < 6; ++i)
    if (all[i] == v) return i;
  return -1;
}

// e == k + sum coef * atom (mod 2^w), atoms standing for their unsigned values. Descends through
// sums, constant factors and constant left shifts, and through a zero-extension when the sum
// inside cannot wrap over the ranges `r` (then its integer value is the combination). Recursion
// only across zero-extensions (depth <= 3: each one narrows the width).
struct LinForm {
  uint64_t k = 0;
  std::vector<std::pair<Expr, uint64_t>> terms;  // distinct atoms
  void add(Expr atom, uint64_t c, uint64_t mask) {
    for (auto& [a, x] : terms)
      if (a == atom) { x = (x + c) & mask; return; }
    terms.push_back({atom, c & mask});
  }
};

// Whether `f` (at width w) never wraps over the ranges: all its coefficients taken as
// non-negative, k + sum coef * hi fits in w bits.
bool never_wraps(const LinForm& f, unsigned w, const std::unordered_map<Expr, Bounds>& r) {
  u128 hi = f.k;
  for (auto& [a, c] : f.terms) hi += u128(c) * r.at(a).hi;
  return hi <= ir::width_mask(w);
}

LinForm linearize(Expr root, const std::unordered_map<Expr, Bounds>& r) {
  const unsigned w = ir::bv_width(root->sort);
  const uint64_t mask = ir::width_mask(w);
  LinForm f;
  std::vector<std::pair<Expr, uint64_t>> stack{{root, 1}};
  while (!stack.empty()) {
    auto [e, m] = stack.back();
    stack.pop_back();
    if (e->op == Op::ConstBV) { f.k = (f.k + m * e->bv_value()) & mask; continue; }
    if (e->op == Op::BvAdd) { for (Expr a : e->args()) stack.push_back({a, m}); continue; }
    if (e->op == Op::BvMul && e->nargs == 2 && e->arg(0)->op == Op::ConstBV) {
      stack.push_back({e->arg(1), m * e->arg(0)->bv_value()});
      continue;
    }
    if (e->op == Op::BvShl && e->arg(1)->op == Op::ConstBV && e->arg(1)->bv_value() < w) {
      stack.push_back({e->arg(0), m << e->arg(1)->bv_value()});
      continue;
    }
    if (e->op == Op::ZExt) {
      Expr x = e->arg(0);
      LinForm inner = linearize(x, r);
      if (!never_wraps(inner, ir::bv_width(x->sort), r)) { f.add(x, m, mask); continue; }
      f.k = (f.k + m * inner.k) & mask;
      for (auto& [a, c] : inner.terms) f.add(a, m * c, mask);
      continue;
    }
    f.add(e, m, mask);
  }
  return f;
}

// A sum holding k2 * (a / c) (udiv, `>> s`, or sdiv of a non-negative a) next to k1 * a holds
// the pair g(a) = k1 * a + k2 * (a / c), whose terms an interval rule would otherwise treat as
// independent (a is often L = tid + 256*ctaid, spread over the sum's terms). Over a's range:
//  - k1, k2 >= 0 (`L + 15*(L / 123)`): g is non-decreasing, so [g(a.lo), g(a.hi)], exact;
//  - otherwise g(a) = k1 * (a mod c) + (k2 + k1 * c) * (a / c), with the mod in [0, c - 1]: nvcc's
//    `i - (i / n) * n` and its scaled forms (`8192*L - 2^26*(L >> 13)` is 8192 * (L mod 8192)).
// Returns the sum's range with every such pair replaced by its range and the other terms added as
// intervals; nullopt when there is no pair or the result may wrap. When several quotients of one a
// sit in the sum (`4*L - 140*(L/35) + 2^18*(L/156800)`), the pairs that are exact remainders
// (k2 + k1 * c == 0) are taken first: a monotone pair would use up k1 * a and leave the
// remainder's quotient as an independent, wrapping term.
// The range of the pair k1 * a + k2 * (a / c) inside the sum f (k1 read off f's coefficient of
// a's first atom), with k1 * a taken out of f; nullopt (f unchanged) when there is no such pair,
// when pass 0 meets a monotone pair, or when the pair may wrap.
std::optional<Bounds> pair_range(LinForm& f, Expr a, uint64_t c, uint64_t k2, int pass,
                                 const std::unordered_map<Expr, Bounds>& r, unsigned w) {
  const uint64_t mask = ir::width_mask(w);
  const unsigned wa = ir::bv_width(a->sort);
  LinForm A = linearize(a, r);
  if (A.terms.empty() || !never_wraps(A, wa, r)) return std::nullopt;  // then a's value is the combination
  // k1 from a's first atom: k1 * alpha == beta, the coefficient the sum gives that atom
  auto [x0, alpha] = A.terms[0];
  uint64_t beta = 0;
  for (auto& [t, b] : f.terms)
    if (t == x0) beta = b;
  if (alpha == 0 || beta == 0 || beta % alpha != 0) return std::nullopt;
  const uint64_t k1 = beta / alpha, k3 = (k2 + k1 * c) & mask;
  if (pass == 0 && k3 != 0) return std::nullopt;
  const Bounds ra = r.at(a);
  u128 lo, hi;
  if (u128(k1) * ra.hi + u128(k2) * (ra.hi / c) <= mask) {  // k1, k2 small: monotone
    lo = u128(k1) * ra.lo + u128(k2) * (ra.lo / c), hi = u128(k1) * ra.hi + u128(k2) * (ra.hi / c);
  } else {
    const Bounds rem = ra.hi < c ? ra : Bounds{0, c - 1};
    lo = u128(k1) * rem.lo + u128(k3) * (ra.lo / c), hi = u128(k1) * rem.hi + u128(k3) * (ra.hi / c);
    if (hi > mask) return std::nullopt;
  }
  // the sum is g(a) + (the rest, with k1 * a and k2 * (a / c) taken out)
  f.k = (f.k - k1 * A.k) & mask;
  for (auto& [x, al] : A.terms) f.add(x, (mask - k1 * al + 1) & mask, mask);  // minus k1 * alpha
  return Bounds{uint64_t(lo), uint64_t(hi)};
}

std::optional<Bounds> quotient_pairs(Expr sum, const std::unordered_map<Expr, Bounds>& r) {
  const unsigned w = ir::bv_width(sum->sort);
  const uint64_t mask = ir::width_mask(w);
  LinForm f = linearize(sum, r);
  std::vector<Bounds> pairs;
  for (int pass = 0; pass < 2; ++pass) for (size_t i = 0; i < f.terms.size(); ++i) {
    auto [d, k2] = f.terms[i];
    if (k2 == 0 || d->nargs != 2) continue;
    const unsigned wa = ir::bv_width(d->sort);
    uint64_t c = 0;
    if (d->op == Op::BvAnd && (d->arg(0)->op == Op::ConstBV) != (d->arg(1)->op == Op::ConstBV)) {
      // a & ~(2^s - 1) is 2^s * (a >> s): nvcc's `i - (i & -32)` is i mod 32
      Expr m = d->arg(0)->op == Op::ConstBV ? d->arg(0) : d->arg(1);
      Expr a = d->arg(0)->op == Op::ConstBV ? d->arg(1) : d->arg(0);
      const uint64_t low = ~m->bv_value() & ir::width_mask(wa);  // must be 2^s - 1, s >= 1
      if (low == 0 || (low & (low + 1)) != 0) continue;
      c = low + 1;
      const uint64_t k2c = (k2 * c) & mask;  // k2 * (a & ~low) = (k2 * c) * (a / c)
      if (auto g = pair_range(f, a, c, k2c, pass, r, w)) {
        f.terms[i].second = 0;
        pairs.push_back(*g);
      }
      continue;
    }
    if (d->arg(1)->op != Op::ConstBV) continue;
    Expr a = d->arg(0);
    if (d->op == Op::BvLShr && d->arg(1)->bv_value() < wa) c = uint64_t(1) << d->arg(1)->bv_value();
    else if (d->op == Op::BvUDiv) c = d->arg(1)->bv_value();
    else if (d->op == Op::BvSDiv && r.at(a).hi <= ir::width_mask(wa) / 2 && d->arg(1)->bv_value() <= ir::width_mask(wa) / 2)
      c = d->arg(1)->bv_value();  // both non-negative: the unsigned quotient
    if (c < 2) continue;
    if (auto g = pair_range(f, a, c, k2, pass, r, w)) {
      f.terms[i].second = 0;
      pairs.push_back(*g);
    }
  }
  if (pairs.empty()) return std::nullopt;
  u128 lo = f.k, hi = f.k;
  for (auto& [t, c] : f.terms) {
    if (c == 0) continue;
    lo += u128(c) * r.at(t).lo, hi += u128(c) * r.at(t).hi;
  }
  for (auto& p : pairs) lo += p.lo, hi += p.hi;
  if (hi > mask) return std::nullopt;
  return Bounds{uint64_t(lo), uint64_t(hi)};
}

// A sum whose operands lie wholly above 2^(w-1) (negative constants and offsets: `-40004 + 4*tid.x
// + ...` at 64 bits) taken with those operands as negative numbers: when the integer sum then stays
// inside one window [m 2^w, (m+1) 2^w), the w-bit sum is that integer minus m 2^w, exactly. The
// unsigned sum of the same operands wraps for some threads and not others and says nothing.
std::optional<Bounds> signed_sum(Expr sum, const std::unordered_map<Expr, Bounds>& r) {
  const unsigned w = ir::bv_width(sum->sort);
  const __int128 half = __int128(1) << (w - 1), mod = half * 2;
  __int128 lo = 0, hi = 0;
  bool negative = false;
  for (Expr a : sum->args()) {
    const Bounds b = r.at(a);
    if (__int128(b.lo) >= half) lo += __int128(b.lo) - mod, hi += __int128(b.hi) - mod, negative = true;
    else lo += b.lo, hi += b.hi;
  }
  if (!negative) return std::nullopt;
  auto floor_div = [](__int128 a, __int128 m) { return a >= 0 ? a / m : -((-a + m - 1) / m); };
  const __int128 m = floor_div(lo, mod);
  if (floor_div(hi, mod) != m) return std::nullopt;
  return Bounds{uint64_t(lo - m * mod), uint64_t(hi - m * mod)};
}

// What a condition says when it holds (or fails): the atoms below its conjunctions, De Morgan
// through negated disjunctions, and `g ? a : b` as a (as b) once the facts so far decide g. These
// are the guards of if-converted and merged regions: `!(g ? ((32 <=s i) || (i <s 0)) : false) && g`
// says 0 <=s i <s 32. `known` maps every node met (Nots peeled) to its truth value.
struct Facts {
  std::vector<std::pair<Expr, bool>> atoms;  // (atom, holds)
  std::unordered_map<Expr, bool> known;
  // false: the condition contradicts the facts (no thread satisfies it)
  bool add(Expr cond, bool holds) {
    std::vector<std::pair<Expr, bool>> work{{cond, holds}}, ites;
    for (;;) {
      while (!work.empty()) {
        auto [e, h] = work.back();
        work.pop_back();
        while (e->op == Op::Not) e = e->arg(0), h = !h;
        if (e->op == Op::ConstBool) {
          if (e->bool_value() != h) return false;
          continue;
        }
        auto [it, fresh] = known.try_emplace(e, h);
        if (!fresh) {
          if (it->second != h) return false;
          continue;
        }
        if ((e->op == Op::And && h) || (e->op == Op::Or && !h)) {
          for (Expr a : e->args()) work.push_back({a, h});
        } else if (e->op == Op::Ite) {
          ites.push_back({e, h});
        } else {
          atoms.push_back({e, h});
        }
      }
      bool progress = false;
      for (size_t i = 0; i < ites.size();) {
        auto [e, h] = ites[i];
        auto g = value(e->arg(0));
        if (!g) { ++i; continue; }
        work.push_back({e->arg(*g ? 1 : 2), h});
        ites[i] = ites.back();
        ites.pop_back();
        progress = true;
      }
      if (!progress) return true;
    }
  }
  // g's truth value when the facts decide it: known, or an And/Or whose known arguments do
  std::optional<bool> value(Expr g) const {
    auto literal = [&](Expr x) -> std::optional<bool> {
      bool neg = false;
      while (x->op == Op::Not) x = x->arg(0), neg = !neg;
      if (x->op == Op::ConstBool) return x->bool_value() != neg;
      if (auto it = known.find(x); it != known.end()) return it->second != neg;
      return std::nullopt;
    };
    if (auto v = literal(g)) return v;
    bool neg = false;
    while (g->op == Op::Not) g = g->arg(0), neg = !neg;
    if (g->op != Op::And && g->op != Op::Or) return std::nullopt;
    const bool is_and = g->op == Op::And;
    bool all = true;
    for (Expr a : g->args()) {
      auto v = literal(a);
      if (!v) all = false;
      else if (*v != is_and) return is_and == neg;  // a false conjunct, a true disjunct
    }
    if (!all) return std::nullopt;
    return is_and != neg;
  }
};

// `s <s c`, `c <=s s`, ... and their negations as a signed interval of s; nullopt: another atom.
struct SignedBound { Expr subject; __int128 lo, hi; };
std::optional<SignedBound> signed_bound(Expr a, bool holds) {
  if ((a->op != Op::Slt && a->op != Op::Sle) || a->nargs != 2) return std::nullopt;
  Expr x = a->arg(0), y = a->arg(1);
  const bool const_right = y->op == Op::ConstBV;
  if (const_right == (x->op == Op::ConstBV)) return std::nullopt;
  Expr s = const_right ? x : y;
  const unsigned w = ir::bv_width(s->sort);
  const __int128 smin = -(__int128(1) << (w - 1)), smax = (__int128(1) << (w - 1)) - 1;
  const __int128 c = (const_right ? y : x)->bv_signed();
  const bool strict = a->op == Op::Slt;
  // s <(=) c (const_right) or c <(=) s; a failing atom is the opposite strictness on the other side
  const bool upper = const_right == holds;
  const bool excl = holds ? strict : !strict;
  if (upper) return SignedBound{s, smin, excl ? c - 1 : c};
  return SignedBound{s, excl ? c + 1 : c, smax};
}

// The unsigned bounds the facts put on sub-expressions; false when they contradict.
bool guards_from(const Facts& f, Guards& g) {
  auto narrow = [&](Expr s, Bounds b) {
    auto [it, fresh] = g.try_emplace(s, b);
    if (!fresh) it->second = {std::max(it->second.lo, b.lo), std::min(it->second.hi, b.hi)};
    return it->second.lo <= it->second.hi;
  };
  std::unordered_map<Expr, std::pair<__int128, __int128>> sb;
  for (auto [a, h] : f.atoms) {
    if (auto ab = bound_of_atom(a, !h)) {
      if (!narrow(ab->subject, {ab->lo, ab->hi})) return false;
    } else if (auto s = signed_bound(a, h)) {
      auto [it, fresh] = sb.try_emplace(s->subject, s->lo, s->hi);
      if (!fresh) it->second = {std::max(it->second.first, s->lo), std::min(it->second.second, s->hi)};
      if (it->second.first > it->second.second) return false;
    }
  }
  for (auto& [s, b] : sb) {  // a signed interval on one side of zero is an unsigned one
    const __int128 m = __int128(1) << ir::bv_width(s->sort);
    if (b.first >= 0 && !narrow(s, {uint64_t(b.first), uint64_t(b.second)})) return false;
    if (b.second < 0 && !narrow(s, {uint64_t(b.first + m), uint64_t(b.second + m)})) return false;
  }
  // `k + x` in [lo, hi] puts x in [lo - k, hi - k] when that does not wrap (`(63 & t) - 1 <= 30`
  // says 1 <= (63 & t) <= 31, which the rewritten `4*sext(j)` = `-4 + 4*zext(63 & t)` needs)
  std::vector<std::pair<Expr, Bounds>> shifted;
  for (auto& [s, b] : g) {
    if (s->op != Op::BvAdd || s->nargs != 2 || s->arg(0)->op != Op::ConstBV) continue;
    const uint64_t mask = ir::width_mask(ir::bv_width(s->sort)), k = s->arg(0)->bv_value();
    const uint64_t lo = (b.lo - k) & mask, hi = (b.hi - k) & mask;
    if (lo <= hi && hi - lo == b.hi - b.lo) shifted.push_back({s->arg(1), {lo, hi}});
  }
  for (auto& [x, b] : shifted)
    if (!narrow(x, b)) return false;
  // each operand of an OR is at most the OR (unsigned): nvcc tests `r - 1 >= 0 && c - 1 >= 0` as
  // `0 <=s ((c - 1) | (r - 1))`, whose sign bit is clear only when both operands' are
  std::vector<std::pair<Expr, uint64_t>> ors;
  for (auto& [s, b] : g)
    if (s->op == Op::BvOr) ors.push_back({s, b.hi});
  for (auto& [s, hi] : ors)
    if (hi < ir::width_mask(ir::bv_width(s->sort)))
      for (Expr a : s->args())
        if (a->op != Op::ConstBV && !narrow(a, {0, hi})) return false;
  return true;
}

}  // namespace

std::optional<Guards> guards_of(Expr pred) {
  Guards g;
  Facts f;
  if (pred && (!f.add(pred, true) || !guards_from(f, g))) return std::nullopt;
  return g;
}

std::optional<ThreadBox> box_of(const ThreadVars& tv, Expr pred) {
  auto g = guards_of(pred);
  if (!g) return std::nullopt;
  ThreadBox box;
  auto all = tv.all();
  for (int i = 0; i < 6; ++i) {
    box[i] = all[i]->bounds();
    if (auto it = g->find(all[i]); it != g->end())
      box[i] = {std::max(box[i].lo, it->second.lo), std::min(box[i].hi, it->second.hi)};
    if (box[i].lo > box[i].hi) return std::nullopt;
  }
  return box;
}

namespace {
// x % d over ranges: exact when x's range lies within one period of a single divisor (a box of
// threads inside one row of `i % N`), else [0, d - 1] clipped by x.
Bounds rem_range(Bounds x, Bounds d) {
  if (x.hi < d.lo) return x;
  if (d.lo == d.hi && x.lo / d.lo == x.hi / d.lo) return {x.lo % d.lo, x.hi % d.lo};
  return {0, std::min(x.hi, d.hi - 1)};
}

std::optional<Bounds> range_in(Expr root, const ThreadVars& tv, const ThreadBox& box, const Guards* guards, int ite_depth,
                               RangeMemo* memo = nullptr);

// An arm of `c ? x : y` matters only for the threads that take it: its range under the guards
// plus what c (or !c) says. nullopt: no thread takes it; {} (hi < lo): no answer. Nested ites
// beyond a few levels take the plain union (each level re-walks its arms).
std::optional<std::optional<Bounds>> arm_range(Expr cond, bool taken, Expr arm, const ThreadVars& tv, const ThreadBox& box,
                                               const Guards* guards, int ite_depth) {
  Facts f;
  Guards g = guards ? *guards : Guards{};
  if (!f.add(cond, taken) || !guards_from(f, g)) return std::nullopt;
  return range_in(arm, tv, box, &g, ite_depth + 1);
}
}  // namespace

std::optional<Bounds> range_over(Expr root, const ThreadVars& tv, const ThreadBox& box, const Guards* guards) {
  return range_in(root, tv, box, guards, 0);
}

std::optional<Bounds> range_over(Expr root, const ThreadVars& tv, const ThreadBox& box, RangeMemo& memo,
                                 const Guards* guards) {
  return range_in(root, tv, box, guards, 0, &memo);
}

namespace {
std::optional<Bounds> range_in(Expr root, const ThreadVars& tv, const ThreadBox& box, const Guards* guards, int ite_depth,
                               RangeMemo* memo) {
  constexpr int kMaxIteDepth = 4;
  RangeMemo local;
  RangeMemo& r = memo ? *memo : local;
  std::vector<std::pair<Expr, bool>> stack{{root, false}};
  while (!stack.empty()) {
    // not a structured binding: the lambdas below capture e, which clang 14 (the sanitizer build) rejects
    const Expr e = stack.back().first;
    const bool expanded = stack.back().second;
    stack.pop_back();
    if (r.count(e)) continue;
    if (!ir::is_bv(e->sort)) return std::nullopt;
    if (!expanded && e->nargs > 0) {
      stack.push_back({e, true});
      for (Expr a : e->args())  // an ite's condition is no bitvector: its arms are ranged below
        if (!r.count(a) && !(e->op == Op::Ite && a == e->arg(0))) stack.push_back({a, false});
      continue;
    }
    const unsigned w = ir::bv_width(e->sort);
    const Bounds full{0, ir::width_mask(w)};
    auto arg = [&](unsigned i) { return r.at(e->arg(i)); };
    auto signed_nonneg = [&](unsigned i) {  // operand i is non-negative as a signed value
      return arg(i).hi <= ir::width_mask(ir::bv_width(e->arg(i)->sort)) / 2;
    };
    Bounds out = full;
    switch (e->op) {
      case Op::ConstBV: out = {e->bv_value(), e->bv_value()}; break;
      case Op::Var: {
        int i = var_index(tv, e);
        out = i >= 0 ? box[i] : e->bounds();
        break;
      }
      case Op::BvAdd: {
        u128 lo = 0, hi = 0;
        for (unsigned i = 0; i < e->nargs; ++i) lo += arg(i).lo, hi += arg(i).hi;
        // both ends wrapped the same number of times (`0xffffffff + x` with x >= 1): no gap between
        if (w < 64 && (lo >> w) == (hi >> w)) out = {uint64_t(lo) & ir::width_mask(w), uint64_t(hi) & ir::width_mask(w)};
        else if (w == 64 && (lo >> 64) == (hi >> 64)) out = {uint64_t(lo), uint64_t(hi)};
        if (auto q = quotient_pairs(e, r)) out = {std::max(out.lo, q->lo), std::min(out.hi, q->hi)};
        if (auto s = signed_sum(e, r)) out = {std::max(out.lo, s->lo), std::min(out.hi, s->hi)};
        break;
      }
      case Op::BvMul: {
        u128 lo = 1, hi = 1;
        bool fits = true;
        for (unsigned i = 0; i < e->nargs && fits; ++i) {
          lo *= arg(i).lo;
          hi *= arg(i).hi;
          fits = hi <= ir::width_mask(w);
        }
        if (fits) out = {uint64_t(lo), uint64_t(hi)};
        break;
      }
      case Op::BvMulHiU: case Op::BvMulHiS: {
        // high half of c * x (nvcc's division by a constant): monotone in x for one constant c, x
        // ranged as a signed value for mulhi_s (then the result's sign may not change over the range)
        if (e->nargs != 2 || w > 32) break;
        const bool sgn = e->op == Op::BvMulHiS;
        int ci = e->arg(0)->op == Op::ConstBV ? 0 : e->arg(1)->op == Op::ConstBV ? 1 : -1;
        if (ci < 0) break;
        Expr k = e->arg(ci);
        Bounds x = arg(1 - ci);
        const __int128 mod = __int128(1) << w, half = mod / 2;
        __int128 c = sgn ? __int128(k->bv_signed()) : __int128(k->bv_value()), xl = x.lo, xh = x.hi;
        if (sgn) {
          if (x.hi < uint64_t(half)) {}  // non-negative
          else if (x.lo >= uint64_t(half)) xl -= mod, xh -= mod;
          else break;
        }
        auto hi_half = [&](__int128 v) { return v >= 0 ? v >> w : -((-v + mod - 1) >> w); };  // floor(v / 2^w)
        __int128 a = hi_half(c * xl), b = hi_half(c * xh);
        __int128 lo = std::min(a, b), hi = std::max(a, b);
        if (lo >= 0) out = {uint64_t(lo), uint64_t(hi)};
        else if (hi < 0) out = {uint64_t(lo + mod), uint64_t(hi + mod)};
        break;
      }
      case Op::BvShl:
        if (e->arg(1)->op == Op::ConstBV && e->arg(1)->bv_value() < w) {
          unsigned s = unsigned(e->arg(1)->bv_value());
          if ((u128(arg(0).hi) << s) <= ir::width_mask(w)) out = {arg(0).lo << s, arg(0).hi << s};
        }
        break;
      case Op::BvLShr:
        if (e->arg(1)->op == Op::ConstBV && e->arg(1)->bv_value() < w)
          out = {arg(0).lo >> e->arg(1)->bv_value(), arg(0).hi >> e->arg(1)->bv_value()};
        else out = {0, arg(0).hi};
        break;
      case Op::BvAShr:
        if (signed_nonneg(0) && e->arg(1)->op == Op::ConstBV && e->arg(1)->bv_value() < w)
          out = {arg(0).lo >> e->arg(1)->bv_value(), arg(0).hi >> e->arg(1)->bv_value()};
        break;
      case Op::BvUDiv:
        if (arg(1).lo > 0) out = {arg(0).lo / arg(1).hi, arg(0).hi / arg(1).lo};
        break;
      case Op::BvSDiv:
        if (arg(1).lo > 0 && signed_nonneg(0) && signed_nonneg(1)) out = {arg(0).lo / arg(1).hi, arg(0).hi / arg(1).lo};
        break;
      case Op::BvURem:
        if (arg(1).lo > 0) out = rem_range(arg(0), arg(1));
        break;
      case Op::BvSRem:
        if (arg(1).lo > 0 && signed_nonneg(0) && signed_nonneg(1)) out = rem_range(arg(0), arg(1));
        break;
      case Op::BvAnd: {
        uint64_t hi = UINT64_MAX;
        for (unsigned i = 0; i < e->nargs; ++i) hi = std::min(hi, arg(i).hi);
        out = {0, hi};
        // x & (2^k - 1) is x % 2^k
        if (e->nargs == 2 && e->arg(0)->op == Op::ConstBV && e->arg(0)->bv_value() != UINT64_MAX &&
            (e->arg(0)->bv_value() & (e->arg(0)->bv_value() + 1)) == 0) {
          uint64_t d = e->arg(0)->bv_value() + 1;
          out = rem_range(arg(1), Bounds{d, d});
        }
        break;
      }
      case Op::BvOr: case Op::BvXor: {
        uint64_t m = 0;
        for (unsigned i = 0; i < e->nargs; ++i) m |= arg(i).hi;
        uint64_t p = 1;
        while (p <= m && p != 0) p <<= 1;
        out = {0, p == 0 ? UINT64_MAX : p - 1};
        out.hi = std::min(out.hi, ir::width_mask(w));
        if (e->op == Op::BvOr)  // an OR is at least each operand: `(c - 1) | r <s 0` once c - 1 is negative
          for (unsigned i = 0; i < e->nargs; ++i) out.lo = std::max(out.lo, arg(i).lo);
        break;
      }
      case Op::BvUMin: case Op::BvUMax: case Op::BvSMin: case Op::BvSMax: {
        // signed: as unsigned where every operand is non-negative (else the whole range)
        const bool is_signed = e->op == Op::BvSMin || e->op == Op::BvSMax;
        bool nonneg = true;
        for (unsigned i = 0; is_signed && i < e->nargs; ++i) nonneg = nonneg && signed_nonneg(i);
        if (!nonneg) break;
        const bool is_min = e->op == Op::BvUMin || e->op == Op::BvSMin;
        Bounds b = arg(0);
        for (unsigned i = 1; i < e->nargs; ++i) {
          if (is_min) b = {std::min(b.lo, arg(i).lo), std::min(b.hi, arg(i).hi)};
          else b = {std::max(b.lo, arg(i).lo), std::max(b.hi, arg(i).hi)};
        }
        out = b;
        break;
      }
      case Op::ZExt: out = arg(0); break;
      case Op::SExt: if (signed_nonneg(0)) out = arg(0); break;
      case Op::Trunc: if (arg(0).hi <= ir::width_mask(w)) out = arg(0); break;
      case Op::Ite: {
        std::optional<Bounds> arms[2] = {arg(1), arg(2)};
        if (ite_depth < kMaxIteDepth)
          for (int k = 0; k < 2; ++k) {
            auto a = arm_range(e->arg(0), k == 0, e->arg(1 + k), tv, box, guards, ite_depth);
            if (!a) arms[k].reset();  // no thread takes this arm
            else if (*a) arms[k] = Bounds{std::max(arms[k]->lo, (*a)->lo), std::min(arms[k]->hi, (*a)->hi)};
          }
        if (!arms[0] && !arms[1]) out = arg(1);  // no thread at all: any range is vacuous
        else if (!arms[0] || !arms[1]) out = arms[0] ? *arms[0] : *arms[1];
        else out = {std::min(arms[0]->lo, arms[1]->lo), std::max(arms[0]->hi, arms[1]->hi)};
        break;
      }
      default:
        if (e->nargs == 0) return std::nullopt;  // TensorElem, Undef, other leaves: no range
        break;                                   // an unknown operation: the full range of its width
    }
    if (guards)  // every thread of the predicate keeps e inside its guard
      if (auto it = guards->find(e); it != guards->end()) {
        out = {std::max(out.lo, it->second.lo), std::min(out.hi, it->second.hi)};
        if (out.lo > out.hi) out.hi = out.lo;  // no such thread: any range is vacuous
      }
    r.emplace(e, out);
  }
  return r.at(root);
}
}  // namespace

std::optional<Bounds> RangeCache::range(Expr e, Expr pred) {
  const unsigned w = ir::is_bv(e->sort) ? ir::bv_width(e->sort) : 0;
  if (w == 0) return std::nullopt;
  if (e->op == Op::BvLShr && e->arg(1)->op == Op::ConstBV && e->arg(1)->bv_value() < w) {
    auto r = range(e->arg(0), pred);
    if (!r) return std::nullopt;
    unsigned k = unsigned(e->arg(1)->bv_value());
    return Bounds{r->lo >> k, r->hi >> k};
  }
  if (e->op == Op::BvAdd) {
    if (auto r = split_sum(e, pred)) return r;
    if (e->nargs >= 2 && e->arg(0)->op == Op::ConstBV) {  // constants sort first
      uint64_t c = e->arg(0)->bv_value();
      // the loop-variant constant of an n-ary sum: `k0 + t1 + t2` is `k0 + (t1 + t2)`, and the
      // hash-consed rest is the same node every iteration
      std::vector<Expr> rest(e->args().begin() + 1, e->args().end());
      Expr r_e = rest.size() == 1 ? rest[0] : ctx_.bv_add(rest);
      auto r = range(r_e, pred);
      if (!r || u128(r->hi) + c > ir::width_mask(w)) return enumerate(e, pred);
      return Bounds{r->lo + c, r->hi + c};
    }
  }
  if (e->op == Op::BvMul && e->nargs == 2 && e->arg(0)->op == Op::ConstBV) {
    uint64_t c = e->arg(0)->bv_value();
    auto r = range(e->arg(1), pred);
    if (!r || u128(r->hi) * c > ir::width_mask(w)) return enumerate(e, pred);
    return Bounds{r->lo * c, r->hi * c};
  }
  if (e->op == Op::ZExt) return range(e->arg(0), pred);
  return enumerate(e, pred);
}

const std::optional<ThreadBox>& RangeCache::box(Expr pred) {
  auto it = boxes_.find(pred);
  if (it == boxes_.end()) it = boxes_.emplace(pred, box_of(tv_, pred)).first;
  return it->second;
}

int RangeCache::thread_mask(Expr root) {
  auto all = tv_.all();
  std::vector<std::pair<Expr, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [e, expanded] = stack.back();
    stack.pop_back();
    if (masks_.count(e)) continue;
    if (!expanded && e->nargs > 0) {
      stack.push_back({e, true});
      for (Expr a : e->args())
        if (!masks_.count(a)) stack.push_back({a, false});
      continue;
    }
    int m = 0;
    if (e->op == Op::Var) {
      int i = var_index(tv_, e);
      m = i < 0 ? -1 : 1 << i;
    } else if (e->nargs == 0) {
      m = e->op == Op::ConstBV || e->op == Op::ConstBool ? 0 : -1;  // tensor data, Undef: not thread-only
    } else {
      for (Expr a : e->args()) {
        int am = masks_.at(a);
        m = am < 0 || m < 0 ? -1 : m | am;
      }
    }
    masks_.emplace(e, m);
  }
  return masks_.at(root);
}

// Unsigned and signed extremes of `g` over the box, enumerating only the Vars of var_mask.
std::optional<RangeCache::Reps> RangeCache::group_reps(Expr g, unsigned var_mask, const ThreadBox& bx) {
  std::array<uint64_t, 12> key{};
  for (int i = 0; i < 6; ++i)
    if (var_mask >> i & 1) key[2 * i] = bx[i].lo, key[2 * i + 1] = bx[i].hi;
  auto it = groups_.find({g, key});
  if (it != groups_.end()) return it->second;
  std::optional<Reps> result;
  long double points = 1;
  for (int i = 0; i < 6; ++i)
    if (var_mask >> i & 1) points *= (long double)(bx[i].hi - bx[i].lo + 1);
  std::vector<Expr> vars = tv_.all();
  Expr roots[] = {g};
  BvProgram prog(vars, roots);
  if (prog.ok() && points <= (long double)max_points_) {
    const unsigned w = ir::bv_width(g->sort);
    const uint64_t sign = w >= 64 ? uint64_t(1) << 63 : uint64_t(1) << (w - 1);
    Reps r{UINT64_MAX, 0, INT64_MAX, INT64_MIN};
    uint64_t p[6], out = 0;
    for (int i = 0; i < 6; ++i) p[i] = bx[i].lo;
    for (;;) {
      if (deadline_) deadline_->tick("in a bounds proof");
      ++points_;
      prog.eval(p, &out);
      int64_t sv = int64_t((out ^ sign) - sign);  // two's complement value of the w-bit result
      r.umin = std::min(r.umin, out), r.umax = std::max(r.umax, out);
      r.smin = std::min(r.smin, sv), r.smax = std::max(r.smax, sv);
      int i = 0;
      while (i < 6 && (!(var_mask >> i & 1) || p[i] == bx[i].hi)) { p[i] = bx[i].lo; ++i; }
      if (i == 6) break;
      ++p[i];
    }
    result = r;
  }
  groups_.emplace(std::make_pair(g, key), result);
  return result;
}

// c + sum of groups over disjoint Vars: the groups vary independently over the box, so the sum's
// extremes are the sums of the groups' extremes. Each group's value is taken as all-unsigned or
// all-signed representatives; when the integer sum of representatives stays inside [0, 2^w) for
// every point, it equals the wrapped w-bit sum, so the bounds are exact for the box (and the box
// contains every thread of the predicate).
std::optional<Bounds> RangeCache::split_sum(Expr sum, Expr pred) {
  const unsigned w = ir::bv_width(sum->sort);
  const auto& bx = box(pred);
  if (!bx) return std::nullopt;
  std::vector<Expr> terms;
  uint64_t c = 0;
  for (Expr a : sum->args()) {
    if (a->op == Op::ConstBV) c += a->bv_value();
    else terms.push_back(a);
  }
  // union of overlapping Var masks
  std::vector<std::pair<unsigned, std::vector<Expr>>> groups;
  for (Expr t : terms) {
    int m = thread_mask(t);
    if (m < 0) return std::nullopt;
    std::pair<unsigned, std::vector<Expr>> g{unsigned(m), {t}};
    for (size_t i = 0; i < groups.size();) {
      if (groups[i].first & g.first) {
        g.first |= groups[i].first;
        g.second.insert(g.second.end(), groups[i].second.begin(), groups[i].second.end());
        groups.erase(groups.begin() + long(i));
      } else {
        ++i;
      }
    }
    groups.push_back(std::move(g));
  }
  if (groups.size() < 2) return std::nullopt;  // one group: nothing gained over enumerating it whole
  const uint64_t umask = ir::width_mask(w);
  c &= umask;
  const uint64_t sign = uint64_t(1) << (w - 1);
  __int128 ulo = 0, uhi = 0, slo = 0, shi = 0;
  for (auto& [mask, ts] : groups) {
    Expr g = ts.size() == 1 ? ts[0] : ctx_.bv_add(ts);
    auto r = group_reps(g, mask, *bx);
    if (!r) return std::nullopt;
    ulo += r->umin, uhi += r->umax, slo += r->smin, shi += r->smax;
  }
  // the constant, too, as its unsigned or its signed value
  const __int128 top = __int128(umask), cu = __int128(c), cs = __int128(int64_t((c ^ sign) - sign));
  std::optional<Bounds> best;
  for (auto [lo, hi] : {std::pair{cu + ulo, cu + uhi}, std::pair{cs + ulo, cs + uhi}, std::pair{cu + slo, cu + shi},
                        std::pair{cs + slo, cs + shi}})
    if (lo >= 0 && hi <= top && (!best || uint64_t(hi - lo) < best->hi - best->lo)) best = Bounds{uint64_t(lo), uint64_t(hi)};
  return best;
}

std::optional<Bounds> RangeCache::enumerate(Expr e, Expr pred) {
  auto& by_e = memo_[pred];
  if (auto it = by_e.find(e); it != by_e.end()) return it->second;
  std::optional<Bounds> result;
  const auto& bx = box(pred);
  std::vector<Expr> vars = tv_.all();
  Expr roots[] = {pred, e};
  BvProgram prog(vars, roots);
  long double points = 1;
  if (bx)
    for (const auto& b : *bx) points *= (long double)(b.hi - b.lo + 1);
  if (bx && prog.ok() && points <= (long double)max_points_) {
    uint64_t p[6], out[2];
    for (int i = 0; i < 6; ++i) p[i] = (*bx)[i].lo;
    Bounds r{UINT64_MAX, 0};
    bool any = false;
    for (;;) {
      if (deadline_) deadline_->tick("in a bounds proof");
      ++points_;
      prog.eval(p, out);
      if (out[0]) { r.lo = std::min(r.lo, out[1]); r.hi = std::max(r.hi, out[1]); any = true; }
      int i = 0;
      while (i < 6 && p[i] == (*bx)[i].hi) { p[i] = (*bx)[i].lo; ++i; }
      if (i == 6) break;
      ++p[i];
    }
    result = any ? r : Bounds{0, 0};  // no thread: any range is vacuous
  }
  by_e.emplace(e, result);
  return result;
}

std::optional<ThreadCoord> sample_witness(const ThreadVars& tv, Expr pred, unsigned samples) {
  std::vector<Expr> vars = tv.all();
  Expr roots[] = {pred};
  BvProgram prog(vars, roots);
  if (!prog.ok()) return std::nullopt;
  auto box = box_of(tv, pred);
  if (!box) return std::nullopt;
  std::mt19937_64 rng(0x5eed);
  uint64_t point[6], out = 0;
  auto found = [&] {
    ThreadCoord c;
    c.tid = {uint32_t(point[0]), uint32_t(point[1]), uint32_t(point[2])};
    c.ctaid = {uint32_t(point[3]), uint32_t(point[4]), uint32_t(point[5])};
    return c;
  };
  for (unsigned corner = 0; corner < 64; ++corner) {  // boundary threads violate most often
    for (int i = 0; i < 6; ++i) point[i] = (corner >> i) & 1 ? (*box)[i].hi : (*box)[i].lo;
    prog.eval(point, &out);
    if (out) return found();
  }
  for (unsigned s = 0; s < samples; ++s) {
    for (int i = 0; i < 6; ++i) {
      const Bounds& b = (*box)[i];
      point[i] = b.lo + (b.hi == b.lo ? 0 : rng() % (b.hi - b.lo + 1));
    }
    prog.eval(point, &out);
    if (out) return found();
  }
  return std::nullopt;
}

}  // namespace dirigo::exec

// ---------------------------------------------------------------- decisions over sub-boxes

namespace dirigo::exec {
namespace {

// F = k + sum c_i v_i over the thread Vars, as integers; `congruent_form` gives an F equal to the
// expression modulo 2^w at every point of the box, `exact_form` one equal to its unsigned (or, for
// a sign extension's operand, signed) value: F shifted by the one multiple of 2^w that puts F's
// range over the box inside the window. nullopt: not affine, or the range spans two windows.
struct Affine {
  __int128 k = 0;
  __int128 c[6] = {0, 0, 0, 0, 0, 0};
};

__int128 floor_div(__int128 a, __int128 m) { return a >= 0 ? a / m : -((-a + m - 1) / m); }

std::pair<__int128, __int128> form_range(const Affine& f, const ThreadBox& box) {
  __int128 lo = f.k, hi = f.k;
  for (int i = 0; i < 6; ++i) {
    if (f.c[i] == 0) continue;
    __int128 a = f.c[i] * __int128(box[i].lo), b = f.c[i] * __int128(box[i].hi);
    lo += std::min(a, b), hi += std::max(a, b);
  }
  return {lo, hi};
}

std::optional<Affine> exact_form(Expr e, const ThreadVars& tv, const ThreadBox& box, bool as_signed, int depth);

std::optional<Affine> congruent_form(Expr e, const ThreadVars& tv, const ThreadBox& box, int depth) {
  if (depth > 8 || !ir::is_bv(e->sort)) return std::nullopt;
  const unsigned w = ir::bv_width(e->sort);
  Affine f;
  switch (e->op) {
    case Op::ConstBV: f.k = __int128(e->bv_signed()); return f;
    case Op::Var: {
      int i = var_index(tv, e);
      if (i < 0) return std::nullopt;
      f.c[i] = 1;
      return f;
    }
    case Op::BvAdd:
      for (Expr a : e->args()) {
        auto g = congruent_form(a, tv, box, depth + 1);
        if (!g) return std::nullopt;
        f.k += g->k;
        for (int i = 0; i < 6; ++i) f.c[i] += g->c[i];
      }
      return f;
    case Op::BvMul: case Op::BvShl: {
      if (e->nargs != 2) return std::nullopt;
      Expr k = e->op == Op::BvShl ? e->arg(1) : e->arg(0)->op == Op::ConstBV ? e->arg(0) : e->arg(1);
      Expr x = k == e->arg(0) ? e->arg(1) : e->arg(0);
      if (k->op != Op::ConstBV || x->op == Op::ConstBV) return std::nullopt;
      if (e->op == Op::BvShl && k->bv_value() >= w) return std::nullopt;
      __int128 m = e->op == Op::BvShl ? __int128(1) << k->bv_value() : __int128(k->bv_signed());
      auto g = congruent_form(x, tv, box, depth + 1);
      if (!g) return std::nullopt;
      f.k = g->k * m;
      for (int i = 0; i < 6; ++i) f.c[i] = g->c[i] * m;
      // keep the numbers small: a huge coefficient means the product wraps (caller's windows fail)
      for (int i = 0; i < 6; ++i)
        if (f.c[i] > (__int128(1) << 80) || f.c[i] < -(__int128(1) << 80)) return std::nullopt;
      return f;
    }
    case Op::ZExt: return exact_form(e->arg(0), tv, box, false, depth + 1);
    case Op::SExt: return exact_form(e->arg(0), tv, box, true, depth + 1);
    default: return std::nullopt;
  }
}

std::optional<Affine> exact_form(Expr e, const ThreadVars& tv, const ThreadBox& box, bool as_signed, int depth) {
  auto f = congruent_form(e, tv, box, depth);
  if (!f) return std::nullopt;
  const unsigned w = ir::bv_width(e->sort);
  const __int128 mod = __int128(1) << w, base = as_signed ? -(mod / 2) : 0;
  auto [lo, hi] = form_range(*f, box);
  const __int128 m = floor_div(lo - base, mod);
  if (floor_div(hi - base, mod) != m) return std::nullopt;
  f->k -= m * mod;
  return f;
}

// One guard `s in [lo, hi]` (unsigned, s of width w) over an affine s: the integer interval F must
// lie in, over this box (the one window where F's range meets the guard); nullopt when F's range
// meets the guard in several windows (no single interval says it).
struct AffineGuard { Affine f; unsigned w; Bounds b; };
enum class Meets { None, One, Several };
Meets guard_interval(const AffineGuard& g, const ThreadBox& box, __int128& L, __int128& H) {
  const __int128 mod = __int128(1) << g.w;
  auto [flo, fhi] = form_range(g.f, box);
  const __int128 m0 = floor_div(flo - __int128(g.b.hi), mod), m1 = floor_div(fhi - __int128(g.b.lo), mod);
  int found = 0;
  for (__int128 m = m0; m <= m1 + 1 && m <= m0 + 3; ++m) {
    __int128 a = __int128(g.b.lo) + m * mod, b = __int128(g.b.hi) + m * mod;
    if (b < flo || a > fhi) continue;
    if (++found > 1) return Meets::Several;
    L = std::max(a, flo), H = std::min(b, fhi);
  }
  if (m1 + 1 > m0 + 3) return Meets::Several;
  return found ? Meets::One : Meets::None;
}

std::vector<AffineGuard> affine_guards(const ThreadVars& tv, const Guards& guards, const ThreadBox& box) {
  std::vector<AffineGuard> out;
  for (auto& [s, b] : guards) {
    if (s->op == Op::Var || !ir::is_bv(s->sort)) continue;  // box_of took those
    auto f = congruent_form(s, tv, box, 0);
    if (!f) continue;
    bool any = false;
    for (int i = 0; i < 6; ++i) any = any || f->c[i] != 0;
    if (any) out.push_back({*f, ir::bv_width(s->sort), b});
  }
  return out;
}

// Bounds propagation: each guard F in [L, H] narrows every Var of F to what the other Vars' ranges
// leave room for. false: some guard holds for no point of the box.
bool propagate(const std::vector<AffineGuard>& gs, ThreadBox& box) {
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (const auto& g : gs) {
      __int128 L, H;
      Meets m = guard_interval(g, box, L, H);
      if (m == Meets::None) return false;
      if (m == Meets::Several) continue;
      auto [flo, fhi] = form_range(g.f, box);
      for (int i = 0; i < 6; ++i) {
        const __int128 c = g.f.c[i];
        if (c == 0) continue;
        __int128 a = c * __int128(box[i].lo), b = c * __int128(box[i].hi);
        const __int128 tmin = std::min(a, b), tmax = std::max(a, b);
        // F = c v_i + (the rest), the rest in [flo - tmin, fhi - tmax]: c v_i >= L - its max, <= H - its min
        __int128 lo = L - (fhi - tmax), hi = H - (flo - tmin);
        __int128 vlo, vhi;
        if (c > 0) vlo = -floor_div(-lo, c), vhi = floor_div(hi, c);
        else vlo = -floor_div(hi, -c), vhi = floor_div(-lo, -c);
        if (vlo > __int128(box[i].lo)) box[i].lo = uint64_t(vlo), changed = true;
        if (vhi < __int128(box[i].hi)) box[i].hi = uint64_t(std::max<__int128>(vhi, 0)), changed = true;
        if (vhi < 0 || box[i].lo > box[i].hi) return false;
      }
    }
    if (!changed) break;
  }
  return true;
}

// A comparison between two thread expressions, `a <(=) b` with both affine and exact over the box
// (no wrap): the integer inequality F_a - F_b <= -1 (or <= 0). Triangular loops (`k <= col` with
// k = row + i) and halo tests relative to another index leave such atoms, which `s in [lo, hi]`
// guards cannot say.
struct RelGuard { Affine f; __int128 hi; };

std::vector<RelGuard> relational_guards(const ThreadVars& tv, Expr pred, const ThreadBox& box) {
  std::vector<RelGuard> out;
  auto add = [&](Expr a) {
    bool negated = false;
    if (a->op == Op::Not) a = a->arg(0), negated = true;
    if (a->nargs != 2 || !ir::is_bv(a->arg(0)->sort)) return;
    if (a->arg(0)->op == Op::ConstBV || a->arg(1)->op == Op::ConstBV) return;  // guards_of took those
    bool strict, as_signed;
    switch (a->op) {
      case Op::Ult: strict = true, as_signed = false; break;
      case Op::Ule: strict = false, as_signed = false; break;
      case Op::Slt: strict = true, as_signed = true; break;
      case Op::Sle: strict = false, as_signed = true; break;
      default: return;
    }
    Expr l = a->arg(0), r = a->arg(1);
    if (negated) std::swap(l, r), strict = !strict;  // !(l < r) is r <= l
    auto fl = exact_form(l, tv, box, as_signed, 0), fr = exact_form(r, tv, box, as_signed, 0);
    if (!fl || !fr) return;
    RelGuard g;
    g.f.k = fl->k - fr->k;
    bool any = false;
    for (int i = 0; i < 6; ++i) g.f.c[i] = fl->c[i] - fr->c[i], any = any || g.f.c[i] != 0;
    g.hi = strict ? -1 : 0;
    if (any) out.push_back(g);
  };
  if (pred->op == Op::And) for (Expr a : pred->args()) add(a);
  else add(pred);
  return out;
}

// Narrows each Var of `F <= hi` to what the others' minima leave room for; false: no point of the
// box satisfies some guard.
bool propagate_relational(const std::vector<RelGuard>& gs, ThreadBox& box) {
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (const auto& g : gs) {
      auto [flo, fhi] = form_range(g.f, box);
      if (flo > g.hi) return false;
      for (int i = 0; i < 6; ++i) {
        const __int128 c = g.f.c[i];
        if (c == 0) continue;
        const __int128 a = c * __int128(box[i].lo), b = c * __int128(box[i].hi);
        const __int128 room = g.hi - (flo - std::min(a, b));  // c v_i <= room
        if (c > 0) {
          const __int128 vhi = floor_div(room, c);
          if (vhi < __int128(box[i].lo)) return false;
          if (vhi < __int128(box[i].hi)) box[i].hi = uint64_t(vhi), changed = true;
        } else {
          const __int128 vlo = -floor_div(room, -c);  // v_i >= -room / -c, rounded up
          if (vlo > __int128(box[i].hi)) return false;
          if (vlo > __int128(box[i].lo)) box[i].lo = uint64_t(vlo), changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return true;
}

// An upper bound of F over the box's points that satisfy the guards, by weak duality: for any
// lambda = p/q >= 0 and guard G <= hi, q F <= max_box(q F - p G) + p hi. The lambdas tried are the
// ratios of F's and G's coefficients (the breakpoints of the dual function of one guard), one guard
// at a time; the bound is sound for any choice and exact for `4097 row + i` under `row + c < col`.
__int128 relaxed_max(const Affine& F, const std::vector<RelGuard>& gs, const ThreadBox& box) {
  __int128 best = form_range(F, box).second;
  for (const auto& g : gs)
    for (int j = 0; j < 6; ++j) {
      if (F.c[j] == 0 || g.f.c[j] == 0 || (F.c[j] > 0) != (g.f.c[j] > 0)) continue;
      const __int128 p = F.c[j] > 0 ? F.c[j] : -F.c[j], q = g.f.c[j] > 0 ? g.f.c[j] : -g.f.c[j];
      if (p > (__int128(1) << 40) || q > (__int128(1) << 40)) continue;  // keep products far from overflow
      Affine d;
      d.k = q * F.k - p * g.f.k;
      for (int i = 0; i < 6; ++i) d.c[i] = q * F.c[i] - p * g.f.c[i];
      const __int128 bound = floor_div(form_range(d, box).second + p * g.hi, q);
      best = std::min(best, bound);
    }
  return best;
}

// Where a guard holds for every point of the box, as a range of its widest Var (the others
// anywhere in the box): the boundary at which to split. nullopt: no proper split point.
std::optional<std::pair<int, Bounds>> guard_split(const std::vector<AffineGuard>& gs, const ThreadBox& box) {
  for (const auto& g : gs) {
    __int128 L, H;
    if (guard_interval(g, box, L, H) != Meets::One) continue;
    auto [flo, fhi] = form_range(g.f, box);
    if (flo >= L && fhi <= H) continue;  // holds everywhere: nothing to split
    int best = -1;
    __int128 best_span = 0;
    for (int i = 0; i < 6; ++i) {
      __int128 span = (g.f.c[i] < 0 ? -g.f.c[i] : g.f.c[i]) * __int128(box[i].hi - box[i].lo);
      if (g.f.c[i] != 0 && box[i].hi > box[i].lo && span > best_span) best = i, best_span = span;
    }
    if (best < 0) continue;
    const __int128 c = g.f.c[best];
    __int128 a = c * __int128(box[best].lo), b = c * __int128(box[best].hi);
    const __int128 tmin = std::min(a, b), tmax = std::max(a, b);
    // c v in [L - (flo - tmin), H - (fhi - tmax)] keeps F in [L, H] whatever the others are
    __int128 lo = L - (flo - tmin), hi = H - (fhi - tmax);
    __int128 vlo = c > 0 ? -floor_div(-lo, c) : -floor_div(hi, -c);
    __int128 vhi = c > 0 ? floor_div(hi, c) : floor_div(-lo, -c);
    vlo = std::max<__int128>(vlo, box[best].lo), vhi = std::min<__int128>(vhi, box[best].hi);
    if (vlo > vhi) continue;
    if (vlo == __int128(box[best].lo) && vhi == __int128(box[best].hi)) continue;
    return std::make_pair(best, Bounds{uint64_t(vlo), uint64_t(vhi)});
  }
  return std::nullopt;
}

// A comparison's truth over the box from its operands' ranges; nullopt: both values occur.
// `k + X == c` for constants k and c, as X == c - k: the sum's range wraps through k (a negative
// constant), X's need not. nullopt when it is not of that form or X's range is not exact.
std::optional<bool> shifted_eq_truth(Expr a, const ThreadVars& tv, const ThreadBox& box, RangeMemo& memo) {
  Expr sum = a->arg(0), c = a->arg(1);
  if (sum->op == Op::ConstBV) std::swap(sum, c);
  if (c->op != Op::ConstBV || sum->op != Op::BvAdd) return std::nullopt;
  const uint64_t m = ir::width_mask(ir::bv_width(sum->sort));
  uint64_t k = 0;
  bool shifted = false;
  __int128 lo = 0, hi = 0;
  for (Expr x : sum->args()) {
    if (x->op == Op::ConstBV) {
      k += x->bv_value(), shifted = true;
      continue;
    }
    auto r = range_over(x, tv, box, memo);
    if (!r) return std::nullopt;
    lo += r->lo, hi += r->hi;
  }
  if (!shifted || hi > __int128(m)) return std::nullopt;
  const uint64_t target = (c->bv_value() - k) & m;
  if (lo == hi && uint64_t(lo) == target) return true;
  if (__int128(target) < lo || __int128(target) > hi) return false;
  return std::nullopt;
}

std::optional<bool> atom_truth(Expr a, const ThreadVars& tv, const ThreadBox& box, RangeMemo& memo) {
  if (a->nargs != 2 || !ir::is_bv(a->arg(0)->sort)) return std::nullopt;
  if (a->op == Op::Eq)
    if (auto t = shifted_eq_truth(a, tv, box, memo)) return t;
  auto x = range_over(a->arg(0), tv, box, memo), y = range_over(a->arg(1), tv, box, memo);
  if (!x || !y) return std::nullopt;
  Bounds bx = *x, by = *y;
  if (a->op == Op::Slt || a->op == Op::Sle) {  // signed: each range must lie in one half
    const uint64_t half = uint64_t(1) << (ir::bv_width(a->arg(0)->sort) - 1);
    auto to_signed = [&](Bounds b, __int128& lo, __int128& hi) {
      if (b.hi < half) { lo = b.lo, hi = b.hi; return true; }
      if (b.lo >= half) { lo = __int128(b.lo) - 2 * __int128(half), hi = __int128(b.hi) - 2 * __int128(half); return true; }
      return false;
    };
    __int128 xl, xh, yl, yh;
    if (!to_signed(bx, xl, xh) || !to_signed(by, yl, yh)) return std::nullopt;
    if (a->op == Op::Slt) { if (xh < yl) return true; if (xl >= yh) return false; }
    else { if (xh <= yl) return true; if (xl > yh) return false; }
    return std::nullopt;
  }
  switch (a->op) {
    case Op::Ult: if (bx.hi < by.lo) return true; if (bx.lo >= by.hi) return false; break;
    case Op::Ule: if (bx.hi <= by.lo) return true; if (bx.lo > by.hi) return false; break;
    case Op::Eq:
      if (bx.lo == bx.hi && by.lo == by.hi && bx.lo == by.lo) return true;
      if (bx.hi < by.lo || by.hi < bx.lo) return false;
      break;
    default: break;
  }
  return std::nullopt;
}

// Three-valued truth of a thread condition over the box (And/Or/Not over comparisons).
std::optional<bool> truth_over(Expr c, const ThreadVars& tv, const ThreadBox& box, RangeMemo& memo, int depth = 0) {
  if (depth > 24) return std::nullopt;
  switch (c->op) {
    case Op::ConstBool: return c->bool_value();
    case Op::Not: {
      auto v = truth_over(c->arg(0), tv, box, memo, depth + 1);
      if (!v) return std::nullopt;
      return !*v;
    }
    case Op::And: case Op::Or: {
      const bool is_and = c->op == Op::And;
      bool all = true;
      for (Expr a : c->args()) {
        auto v = truth_over(a, tv, box, memo, depth + 1);
        if (!v) all = false;
        else if (*v != is_and) return !is_and;  // a false conjunct, a true disjunct
      }
      if (all) return is_and;
      return std::nullopt;
    }
    default: return atom_truth(c, tv, box, memo);
  }
}

}  // namespace

std::optional<bool> truth_over_box(const ThreadVars& tv, ir::Expr cond, const ThreadBox& box) {
  RangeMemo memo;
  return truth_over(cond, tv, box, memo);
}

std::optional<ThreadBox> propagate_guards(const ThreadVars& tv, ir::Expr pred, const ThreadBox& box) {
  auto guards = guards_of(pred);
  if (!guards) return std::nullopt;
  ThreadBox b = box;
  if (!propagate(affine_guards(tv, *guards, b), b)) return std::nullopt;
  return b;
}

namespace {
// The sub-box search under bounds_over_ranges and sat_over_ranges: boxes of pred's threads are
// narrowed (propagate), dropped where pred is false (truth_over) or `clear` says no thread of the
// box is bad, probed at their corners and center for a bad thread (`bad` over the evaluated roots
// {pred, extra}), and otherwise split. Found: a bad point; Clear: no box left; Unknown: budget.
enum class Search { Clear, Found, Unknown };
template <class ClearFn, class BadFn>
Search search_boxes(const ThreadVars& tv, Expr pred, Expr extra, size_t max_boxes, Deadline* deadline, ClearFn clear,
                    BadFn bad, std::optional<ThreadCoord>& witness, size_t& boxes, const ThreadBox* start = nullptr) {
  auto guards = guards_of(pred);
  auto box0 = box_of(tv, pred);
  if (!guards || !box0) return Search::Clear;  // no thread
  if (start)
    for (int i = 0; i < 6; ++i) {
      (*box0)[i] = {std::max((*box0)[i].lo, (*start)[i].lo), std::min((*box0)[i].hi, (*start)[i].hi)};
      if ((*box0)[i].lo > (*box0)[i].hi) return Search::Clear;
    }
  std::vector<Expr> vars = tv.all();
  std::vector<Expr> roots{pred};
  if (extra) roots.push_back(extra);
  BvProgram prog(vars, roots);
  const auto gs = affine_guards(tv, *guards, *box0);
  const auto rels = relational_guards(tv, pred, *box0);  // exact over box0, so over its sub-boxes
  unsigned mentioned = 0;  // Vars the question depends on: the only ones worth splitting
  for (Expr r : roots)
    for (Expr l : ir::leaves(r)) if (int i = var_index(tv, l); i >= 0) mentioned |= 1u << i;
  std::vector<ThreadBox> work{*box0};
  while (!work.empty()) {
    if (deadline) deadline->tick("in a check over thread ranges");
    ThreadBox box = work.back();
    work.pop_back();
    if (++boxes > max_boxes) return Search::Unknown;
    if (!propagate(gs, box) || !propagate_relational(rels, box)) continue;  // no thread of pred in this box
    RangeMemo memo;
    if (truth_over(pred, tv, box, memo) == false) continue;  // nor here
    if (clear(box, *guards, rels)) continue;
    if (prog.ok()) {
      uint64_t p[6], r[2];
      for (unsigned corner = 0; corner <= 64; ++corner) {
        for (int i = 0; i < 6; ++i)
          p[i] = corner == 64 ? box[i].lo + (box[i].hi - box[i].lo) / 2 : (corner >> i & 1) ? box[i].hi : box[i].lo;
        prog.eval(p, r);
        if (bad(r)) {
          witness = ThreadCoord{{uint32_t(p[0]), uint32_t(p[1]), uint32_t(p[2])}, {uint32_t(p[3]), uint32_t(p[4]), uint32_t(p[5])}};
          return Search::Found;
        }
      }
    }
    bool point = true;
    for (int i = 0; i < 6; ++i) point = point && (box[i].lo == box[i].hi || !(mentioned >> i & 1));
    if (point) {  // every thread of the box evaluates alike: the corners were all of it
      if (prog.ok()) continue;
      return Search::Unknown;
    }
    // split where a guard starts to hold for the whole box, else halve the widest Var
    int var = -1;
    std::vector<Bounds> parts;
    if (auto sp = guard_split(gs, box)) {
      var = sp->first;
      const Bounds full = box[var], mid = sp->second;
      if (full.lo < mid.lo) parts.push_back({full.lo, mid.lo - 1});
      parts.push_back(mid);
      if (mid.hi < full.hi) parts.push_back({mid.hi + 1, full.hi});
    } else {
      uint64_t widest = 0;
      for (int i = 0; i < 6; ++i)
        if ((mentioned >> i & 1) && box[i].hi - box[i].lo > widest) var = i, widest = box[i].hi - box[i].lo;
      const uint64_t half = box[var].lo + widest / 2;
      parts = {{box[var].lo, half}, {half + 1, box[var].hi}};
    }
    for (const Bounds& b : parts) {
      ThreadBox sub = box;
      sub[var] = b;
      work.push_back(sub);
    }
  }
  return Search::Clear;
}
}  // namespace

std::optional<std::vector<ThreadCoord>> solutions_over_ranges(const ThreadVars& tv, Expr cond, size_t max_boxes,
                                                              size_t max_solutions, Deadline* deadline) {
  std::vector<ThreadCoord> out;
  auto guards = guards_of(cond);
  auto box0 = box_of(tv, cond);
  if (!guards || !box0) return out;
  std::vector<Expr> vars = tv.all();
  Expr roots[] = {cond};
  BvProgram prog(vars, roots);
  if (!prog.ok()) return std::nullopt;
  const auto gs = affine_guards(tv, *guards, *box0);
  unsigned mentioned = 0;
  for (Expr l : ir::leaves(cond)) if (int i = var_index(tv, l); i >= 0) mentioned |= 1u << i;
  std::vector<ThreadBox> work{*box0};
  size_t boxes = 0;
  while (!work.empty()) {
    if (deadline) deadline->tick("in a search over thread ranges");
    ThreadBox box = work.back();
    work.pop_back();
    if (++boxes > max_boxes) return std::nullopt;
    if (!propagate(gs, box)) continue;
    RangeMemo memo;
    auto truth = truth_over(cond, tv, box, memo);
    if (truth == false) continue;
    int var = -1;
    uint64_t widest = 0;
    for (int i = 0; i < 6; ++i)
      if ((mentioned >> i & 1) && box[i].hi - box[i].lo >= widest && box[i].hi > box[i].lo)
        var = i, widest = box[i].hi - box[i].lo;
    // Every point a solution: every mentioned Var fixed and one evaluation true, or cond true over
    // the whole box (a group's slice of the launch writing its atomic statistic: one box, not
    // thousands of halvings down to single threads).
    if (var < 0 || truth == true) {
      uint64_t p[6], r = 0;
      for (int i = 0; i < 6; ++i) p[i] = box[i].lo;
      prog.eval(p, &r);
      if (!r) continue;
      uint64_t count = 1;
      for (int i = 0; i < 6; ++i) count *= box[i].hi - box[i].lo + 1;
      if (out.size() + count > max_solutions) return std::nullopt;
      for (uint64_t n = 0; n < count; ++n) {
        uint64_t q = n;
        for (int i = 0; i < 6; ++i) {
          const uint64_t w = box[i].hi - box[i].lo + 1;
          p[i] = box[i].lo + q % w, q /= w;
        }
        out.push_back({{uint32_t(p[0]), uint32_t(p[1]), uint32_t(p[2])}, {uint32_t(p[3]), uint32_t(p[4]), uint32_t(p[5])}});
      }
      continue;
    }
    const uint64_t half = box[var].lo + widest / 2;
    ThreadBox a = box, b = box;
    a[var].hi = half, b[var].lo = half + 1;
    work.push_back(b);
    work.push_back(a);
  }
  return out;
}

BoundsOverRanges bounds_over_ranges(const ThreadVars& tv, Expr pred, Expr index, uint64_t extent, size_t max_boxes,
                                    Deadline* deadline) {
  BoundsOverRanges out;
  auto clear = [&](const ThreadBox& box, const Guards& guards, const std::vector<RelGuard>& rels) {
    auto r = range_over(index, tv, box, &guards);
    if (r && r->hi < extent) return true;
    if (rels.empty()) return false;
    auto f = exact_form(index, tv, box, false, 0);
    return f && form_range(*f, box).first >= 0 && relaxed_max(*f, rels, box) < __int128(extent);
  };
  auto bad = [&](const uint64_t* r) { return r[0] && r[1] >= extent; };
  switch (search_boxes(tv, pred, index, max_boxes, deadline, clear, bad, out.witness, out.boxes)) {
    case Search::Clear: out.answer = BoundsOverRanges::Answer::InBounds; break;
    case Search::Found: out.answer = BoundsOverRanges::Answer::Violated; break;
    case Search::Unknown: out.answer = BoundsOverRanges::Answer::Unknown; break;
  }
  return out;
}

SatOverRanges sat_over_ranges(const ThreadVars& tv, Expr pred, const ThreadBox* box, size_t max_boxes,
                              Deadline* deadline) {
  SatOverRanges out;
  auto clear = [](const ThreadBox&, const Guards&, const std::vector<RelGuard>&) { return false; };
  auto bad = [](const uint64_t* r) { return r[0] != 0; };
  switch (search_boxes(tv, pred, nullptr, max_boxes, deadline, clear, bad, out.witness, out.boxes, box)) {
    case Search::Clear: out.answer = SatOverRanges::Answer::Unsat; break;
    case Search::Found: out.answer = SatOverRanges::Answer::Sat; break;
    case Search::Unknown: out.answer = SatOverRanges::Answer::Unknown; break;
  }
  return out;
}

}  // namespace dirigo::exec
