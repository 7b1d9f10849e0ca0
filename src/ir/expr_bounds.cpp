// Unsigned interval analysis of bitvector nodes (Context::bv_bounds), memoized per node; the rewrites
// use it to decide comparisons, drop redundant masks and simplify division.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

bool Context::Impl::nonneg(Expr e) {
  unsigned w = bv_width(e->sort);
  return bounds(e).hi < (1ULL << (w - 1));
}

bool Context::Impl::analysed(Op o) {
  switch (o) {
    case Op::ZExt: case Op::SExt: case Op::Trunc: case Op::BvAdd: case Op::BvMul: case Op::BvAnd:
    case Op::BvOr: case Op::BvLShr: case Op::BvUDiv: case Op::BvURem: case Op::BvUMin: case Op::BvUMax:
    case Op::Ite: case Op::BvSMin: case Op::BvSMax: case Op::BvXor:
      return true;
    default:
      return false;
  }
}

Bounds Context::Impl::memo_bounds(Expr e) {
  if (e->op == Op::ConstBV) return {e->u, e->u};
  if (e->op == Op::Var) return e->bounds();
  auto it = bounds_memo.find(e);
  return it == bounds_memo.end() ? full(e->sort) : it->second;
}

// Memoize bounds of every factor of every term (mono_iv reads the memo only).
void Context::Impl::prepare_bounds(std::span<const Expr> terms) {
  for (Expr t : terms)
    if (!t->is_const()) {
      if (t->op == Op::BvMul) for (Expr f : t->args()) bounds(f);
      else bounds(t);
    }
}

// Exact unsigned interval of a product of factors, or nullopt if it may wrap.
std::optional<std::pair<i128, i128>> Context::Impl::mono_iv(const Expr* f, uint32_t nf, unsigned w) {
  i128 lo = 1, hi = 1, lim = static_cast<i128>(width_mask(w));
  for (uint32_t i = 0; i < nf; ++i) {
    Bounds b = memo_bounds(f[i]);
    if (b.hi != 0 && hi > lim / static_cast<i128>(b.hi)) return std::nullopt;  // would exceed 2^w - 1
    lo *= b.lo;
    hi *= b.hi;
  }
  return std::pair{lo, hi};
}

// Exact integer interval of sum c_i*m_i + c0 with coefficients read signed
// and monomials as their unsigned values; nullopt on possible overflow of i128 range.
std::optional<std::pair<i128, i128>> Context::Impl::sum_iv(Expr e, bool signed_atoms) {
  unsigned w = bv_width(e->sort);
  i128 lo = 0, hi = 0;
  const i128 cap = static_cast<i128>(1) << 100;
  auto terms = e->op == Op::BvAdd ? e->args() : std::span<const Expr>(&e, 1);
  for (size_t i = 0; i < terms.size(); ++i) {
    Expr t = terms[i];
    if (t->op == Op::ConstBV) { lo += sx(t->u, w); hi += sx(t->u, w); continue; }
    Term tm = decompose(e->sort, &terms[i]);
    i128 c = sx(tm.coef->u, w), mlo, mhi;
    auto m = mono_iv(tm.f, tm.nf, w);
    if (!m) { mlo = 0; mhi = static_cast<i128>(width_mask(w)); }
    else { mlo = m->first; mhi = m->second; }
    if (signed_atoms && mhi >= (static_cast<i128>(1) << (w - 1))) {
      mlo = -(static_cast<i128>(1) << (w - 1));
      mhi = (static_cast<i128>(1) << (w - 1)) - 1;
    }
    i128 a = c * mlo, b = c * mhi;  // |c| <= 2^63, |m| <= 2^64: fits in 128 bits
    if (a < -cap || a > cap || b < -cap || b > cap) return std::nullopt;
    lo += std::min(a, b);
    hi += std::max(a, b);
    if (lo < -cap || hi > cap) return std::nullopt;
  }
  return std::pair{lo, hi};
}

Bounds Context::Impl::compute_bounds(Expr e) {
  unsigned w = bv_width(e->sort);
  uint64_t m = width_mask(w);
  Bounds f = full(e->sort);
  auto b = [&](unsigned i) { return memo_bounds(e->args_[i]); };
  switch (e->op) {
    case Op::ZExt: return b(0);
    case Op::SExt: {
      Bounds x = b(0);
      unsigned wi = bv_width(e->args_[0]->sort);
      return x.hi < (1ULL << (wi - 1)) ? x : f;
    }
    case Op::Trunc: { Bounds x = b(0); return x.hi <= m ? x : f; }
    case Op::BvAdd: case Op::BvMul: {
      auto iv = sum_iv(e, false);
      if (!iv) return f;
      i128 span = static_cast<i128>(1) << w;
      i128 q = iv->first >= 0 ? iv->first / span : -((-iv->first + span - 1) / span);
      i128 lo = iv->first - q * span, hi = iv->second - q * span;
      if (hi >= span) return f;
      return {static_cast<uint64_t>(lo), static_cast<uint64_t>(hi)};
    }
    case Op::BvAnd: {
      uint64_t hi = m;
      for (unsigned i = 0; i < e->nargs; ++i) hi = std::min(hi, b(i).hi);
      return {0, hi};
    }
    case Op::BvOr: case Op::BvXor: {
      uint64_t hi = 0, lo = 0;
      for (unsigned i = 0; i < e->nargs; ++i) {
        hi |= b(i).hi;
        if (e->op == Op::BvOr) lo = std::max(lo, b(i).lo);
      }
      uint64_t cap = hi ? (hi >= (1ULL << 63) ? ~0ULL : (1ULL << (log2u(hi) + 1)) - 1) : 0;
      return {lo, std::min(cap, m)};
    }
    case Op::BvLShr: {
      Bounds x = b(0), k = b(1);
      if (k.lo != k.hi || k.lo >= w) return Bounds{0, x.hi};  // x >> k <= x
      return {x.lo >> k.lo, x.hi >> k.lo};
    }
    case Op::BvUDiv: {
      Bounds x = b(0), d = b(1);
      if (d.lo == 0) return f;
      return {x.lo / d.hi, x.hi / d.lo};
    }
    case Op::BvURem: {
      Bounds x = b(0), d = b(1);
      if (d.lo == 0) return {0, x.hi};  // x % 0 = x
      return {0, std::min(x.hi, d.hi - 1)};
    }
    case Op::BvUMin: case Op::BvUMax: {
      Bounds r = b(0);
      for (unsigned i = 1; i < e->nargs; ++i) {
        Bounds x = b(i);
        if (e->op == Op::BvUMin) r = {std::min(r.lo, x.lo), std::min(r.hi, x.hi)};
        else r = {std::max(r.lo, x.lo), std::max(r.hi, x.hi)};
      }
      return r;
    }
    case Op::BvSMin: case Op::BvSMax: {  // only useful when all operands are non-negative
      Bounds r = b(0);
      for (unsigned i = 0; i < e->nargs; ++i)
        if (b(i).hi >= (1ULL << (w - 1))) return f;
      for (unsigned i = 1; i < e->nargs; ++i) {
        Bounds x = b(i);
        if (e->op == Op::BvSMin) r = {std::min(r.lo, x.lo), std::min(r.hi, x.hi)};
        else r = {std::max(r.lo, x.lo), std::max(r.hi, x.hi)};
      }
      return r;
    }
    case Op::Ite: {
      Bounds x = b(1), y = b(2);
      return {std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
    }
    default: return f;
  }
}

Bounds Context::Impl::bounds(Expr e) {
  if (!is_bv(e->sort)) throw std::invalid_argument("bv_bounds: bit-vector expression expected");
  if (e->op == Op::ConstBV || e->op == Op::Var || !analysed(e->op)) return memo_bounds(e);
  if (auto it = bounds_memo.find(e); it != bounds_memo.end()) return it->second;
  std::vector<std::pair<Expr, bool>> st{{e, false}};
  while (!st.empty()) {
    auto [x, done] = st.back();
    st.pop_back();
    if (bounds_memo.count(x)) continue;
    if (done) {
      bounds_memo.emplace(x, compute_bounds(x));
      continue;
    }
    st.emplace_back(x, true);
    for (Expr c : x->args())
      if (is_bv(c->sort) && analysed(c->op) && !bounds_memo.count(c)) st.emplace_back(c, false);
  }
  return bounds_memo.at(e);
}

}  // namespace dirigo::ir
