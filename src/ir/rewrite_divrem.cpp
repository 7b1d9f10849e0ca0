// Bitvector division and remainder (constant folding, division by constants through sums and
// shifts) and the high half of products.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

// x with every term whose coefficient is a multiple of d (a power of two) removed, constant reduced mod d.
Expr Context::Impl::drop_multiples(Expr x, uint64_t d) {
  Sort s = x->sort;
  auto terms = x->op == Op::BvAdd ? x->args() : std::span<const Expr>(&x, 1);
  std::vector<Expr> keep;
  bool changed = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    Expr t = terms[i];
    uint64_t c = t->op == Op::ConstBV ? t->u : decompose(s, &terms[i]).coef->u;
    if (t->op == Op::ConstBV) {
      if (c % d) keep.push_back(mk_bv(s, c % d));
      changed |= c % d != c;
    } else if (c % d == 0) {
      changed = true;
    } else {
      keep.push_back(t);
    }
  }
  return changed ? add_n(s, keep) : x;
}

std::optional<Context::Impl::NoWrapTerms> Context::Impl::no_wrap_terms(Expr x) {
  if ((x->op != Op::BvAdd && x->op != Op::BvMul) || x->has_undef()) return std::nullopt;
  Sort s = x->sort;
  unsigned w = bv_width(s);
  auto terms = x->op == Op::BvAdd ? x->args() : std::span<const Expr>(&x, 1);
  prepare_bounds(terms);
  NoWrapTerms nw;
  i128 hi = 0;
  const i128 lim = static_cast<i128>(width_mask(w));
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i]->op == Op::ConstBV) {
      hi += terms[i]->u;
      nw.c0 += terms[i]->u;
      continue;
    }
    Term tm = decompose(s, &terms[i]);
    auto mi = mono_iv(tm.f, tm.nf, w);
    if (!mi) return std::nullopt;
    if (mi->second != 0 && static_cast<i128>(tm.coef->u) > (lim - hi) / mi->second) return std::nullopt;
    const i128 top = static_cast<i128>(tm.coef->u) * mi->second;
    hi += top;  // exact unsigned sum stays below 2^w
    nw.mono.push_back(tm);
    nw.at.push_back(i);
    nw.hi.push_back(top);
  }
  if (hi > lim) return std::nullopt;
  return nw;
}

// Split x (affine) by divisor d: returns (quotient terms, remainder expr) when the
// sum provably does not wrap (exact unsigned arithmetic) and some term is divisible.
std::optional<std::pair<Expr, Expr>> Context::Impl::div_split(Expr x, uint64_t d) {
  auto nw = no_wrap_terms(x);
  if (!nw) return std::nullopt;
  Sort s = x->sort;
  auto terms = x->op == Op::BvAdd ? x->args() : std::span<const Expr>(&x, 1);
  std::vector<Expr> quot, rem;
  if (nw->c0 / d) quot.push_back(mk_bv(s, nw->c0 / d));
  if (nw->c0 % d) rem.push_back(mk_bv(s, nw->c0 % d));
  for (size_t j = 0; j < nw->mono.size(); ++j) {
    Term tm = nw->mono[j];
    if (tm.coef->u % d == 0) {
      tm.coef = mk_bv(s, tm.coef->u / d);
      quot.push_back(term_node(s, tm));
    } else {
      rem.push_back(terms[nw->at[j]]);
    }
  }
  if (quot.empty()) return std::nullopt;
  return std::pair{add_n(s, quot), add_n(s, rem)};
}

// x (an affine sum that does not wrap) as g*a + b with g > 1 dividing d and b's range below g: then
// x / d = a / (d/g) and x % d = g*(a % (d/g)) + b. A flat index split by a block size, (k0 + 16*k1) >> 7
// with k0 < 16, is k1 >> 3, the field the kernel's own row arithmetic meets. The largest such g.
std::optional<Context::Impl::GcdSplit> Context::Impl::gcd_split(Expr x, uint64_t d) {
  if (x->op != Op::BvAdd) return std::nullopt;
  auto nw = no_wrap_terms(x);
  if (!nw) return std::nullopt;
  Sort s = x->sort;
  auto terms = x->args();
  std::vector<uint64_t> gs;
  for (const Term& t : nw->mono)
    if (uint64_t g = std::gcd(t.coef->u, d); g > 1) gs.push_back(g);
  std::sort(gs.begin(), gs.end(), std::greater<>());
  gs.erase(std::unique(gs.begin(), gs.end()), gs.end());
  for (uint64_t g : gs) {
    std::vector<Expr> a, b;
    i128 bhi = nw->c0 % g;
    for (size_t j = 0; j < nw->mono.size(); ++j) {
      Term tm = nw->mono[j];
      if (tm.coef->u % g == 0) {
        tm.coef = mk_bv(s, tm.coef->u / g);
        a.push_back(term_node(s, tm));
      } else {
        b.push_back(terms[nw->at[j]]);
        bhi += nw->hi[j];
      }
    }
    if (a.empty() || b.empty() || bhi >= static_cast<i128>(g)) continue;
    if (nw->c0 / g) a.push_back(mk_bv(s, nw->c0 / g));
    if (nw->c0 % g) b.push_back(mk_bv(s, nw->c0 % g));
    return GcdSplit{add_n(s, a), add_n(s, b), g};
  }
  return std::nullopt;
}

// x / d or (as_shift) x >> log2(d) for a constant d >= 2.
Expr Context::Impl::udiv_const(Expr x, uint64_t d, bool as_shift) {
  Sort s = x->sort;
  if (on(Rule::BvDivRemConst)) {
    if (auto sp = div_split(x, d)) {
      apply(Rule::BvDivRemConst);
      Expr xs[] = {sp->first, udiv_const(sp->second, d, as_shift)};
      return add_n(s, xs);
    }
    if (bounds(x).hi < d && !x->has_undef() && apply(Rule::BvDivRemConst)) return mk_bv(s, 0);
    if (auto gs = gcd_split(x, d); gs && apply(Rule::BvDivRemConst))
      return gs->g == d ? gs->a : udiv_const(gs->a, d / gs->g, as_shift);
  }
  if (as_shift) return raw2(Op::BvLShr, s, x, mk_bv(s, log2u(d)));
  if (is_pow2(d) && apply(Rule::BvDivRemConst)) return raw2(Op::BvLShr, s, x, mk_bv(s, log2u(d)));
  return raw2(Op::BvUDiv, s, x, mk_bv(s, d));
}

Expr Context::Impl::urem_const(Expr x, uint64_t d) {
  Sort s = x->sort;
  if (on(Rule::BvDivRemConst)) {
    if (auto gs = gcd_split(x, d); gs && apply(Rule::BvDivRemConst)) {
      Expr hi[] = {mk_bv(s, gs->g), gs->g == d ? mk_bv(s, 0) : urem_const(gs->a, d / gs->g)};
      Expr xs[] = {mul_n(s, hi), gs->b};
      return add_n(s, xs);
    }
    if (is_pow2(d)) {
      apply(Rule::BvDivRemConst);
      Expr xs[] = {x, mk_bv(s, d - 1)};
      return bitop_n(Op::BvAnd, xs);
    }
    if (auto sp = div_split(x, d)) {
      apply(Rule::BvDivRemConst);
      return urem_const(sp->second, d);
    }
    if (bounds(x).hi < d && apply(Rule::BvDivRemConst)) return x;
  }
  return raw2(Op::BvURem, s, x, mk_bv(s, d));
}

uint64_t Context::Impl::fold_sdiv(Expr a, Expr b, uint64_t m) {
  int64_t x = a->bv_signed(), y = b->bv_signed();
  if (y == 0) return x < 0 ? 1 : m;
  if (y == -1) return static_cast<uint64_t>(0) - static_cast<uint64_t>(x);  // INT_MIN / -1 wraps
  return static_cast<uint64_t>(x / y);
}

uint64_t Context::Impl::fold_srem(Expr a, Expr b) {
  int64_t x = a->bv_signed(), y = b->bv_signed();
  if (y == 0) return static_cast<uint64_t>(x);
  if (y == -1) return 0;
  return static_cast<uint64_t>(x % y);
}

Expr Context::Impl::divrem(Op op, Expr a, Expr b) {
  check_bv(a, op_name(op));
  Expr ab[] = {a, b};
  check_sorts(ab, a->sort, op_name(op));
  Sort s = a->sort;
  uint64_t m = width_mask(bv_width(s));
  if ((a->op == Op::Undef || b->op == Op::Undef) && apply(Rule::UndefPropagate)) return undef(s);
  if (a->op == Op::ConstBV && b->op == Op::ConstBV && apply(Rule::ConstFold)) {
    switch (op) {
      case Op::BvUDiv: return mk_bv(s, fold_udiv(a->u, b->u, m));
      case Op::BvURem: return mk_bv(s, fold_urem(a->u, b->u));
      case Op::BvSDiv: return mk_bv(s, fold_sdiv(a, b, m));
      default: return mk_bv(s, fold_srem(a, b));
    }
  }
  if ((op == Op::BvSDiv || op == Op::BvSRem) && nonneg(a) && nonneg(b) && apply(Rule::BvSignedToUnsigned))
    return divrem(op == Op::BvSDiv ? Op::BvUDiv : Op::BvURem, a, b);
  // x /s 1 = x and x %s 1 = 0 for every x, INT_MIN included (strides of 1 in generic index code)
  if (b->op == Op::ConstBV && b->u == 1 && (op == Op::BvSDiv || op == Op::BvSRem) && !a->has_undef() &&
      apply(Rule::BvDivRemConst))
    return op == Op::BvSDiv ? a : mk_bv(s, 0);
  if (b->op == Op::ConstBV && b->u >= 1 && (op == Op::BvUDiv || op == Op::BvURem)) {
    if (b->u == 1 && !a->has_undef() && apply(Rule::BvDivRemConst)) return op == Op::BvUDiv ? a : mk_bv(s, 0);
    if (b->u >= 2) return op == Op::BvUDiv ? udiv_const(a, b->u, false) : urem_const(a, b->u);
  }
  return raw2(op, s, a, b);
}

Expr Context::Impl::mulhi(Expr a, Expr b, bool sgn) {
  check_bv(a, "bvmulhi");
  Expr ab[] = {a, b};
  check_sorts(ab, a->sort, "bvmulhi");
  Sort s = a->sort;
  unsigned w = bv_width(s);
  if ((a->op == Op::Undef || b->op == Op::Undef) && apply(Rule::UndefPropagate)) return undef(s);
  if (a->op == Op::ConstBV && b->op == Op::ConstBV && apply(Rule::ConstFold)) {
    i128 p = sgn ? sx(a->u, w) * sx(b->u, w) : static_cast<i128>(static_cast<unsigned __int128>(a->u) * b->u);
    if (!sgn) return mk_bv(s, static_cast<uint64_t>((static_cast<unsigned __int128>(a->u) * b->u) >> w));
    return mk_bv(s, static_cast<uint64_t>(static_cast<unsigned __int128>(p) >> w));
  }
  if (less(b, a)) std::swap(a, b);
  return raw2(sgn ? Op::BvMulHiS : Op::BvMulHiU, s, a, b);
}

}  // namespace dirigo::ir
