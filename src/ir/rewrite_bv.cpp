// Bitvector bit operations (and, or, xor, not), shifts and width changes (zext, sext, trunc).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

Expr Context::Impl::bitop_n(Op op, std::span<const Expr> xs) {
  if (xs.empty()) throw std::invalid_argument(fmt::format("{} of no operands", op_name(op)));
  Sort s = xs[0]->sort;
  check_bv(xs[0], op_name(op));
  check_sorts(xs, s, op_name(op));
  if (xs.size() == 1) return xs[0];
  uint64_t m = width_mask(bv_width(s));
  uint64_t c = op == Op::BvAnd ? m : 0;
  unsigned nconst = 0;
  std::vector<Expr> atoms;
  auto konst = [&](uint64_t k) {
    if (!take_const(nconst)) return false;
    c = op == Op::BvAnd ? (c & k) : op == Op::BvOr ? (c | k) : (c ^ k);
    return true;
  };
  std::vector<Expr> extra_consts;
  for (Expr x : xs) {
    if (x->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
    if (x->op == op) {
      for (Expr a : x->args())
        if (!(a->op == Op::ConstBV && konst(a->u))) (a->op == Op::ConstBV ? extra_consts : atoms).push_back(a);
    } else if (x->op == Op::ConstBV) {
      if (!konst(x->u)) extra_consts.push_back(x);
    } else {
      atoms.push_back(x);
    }
  }
  bool any_undef = std::any_of(atoms.begin(), atoms.end(), [](Expr a) { return a->has_undef(); });
  sort_runs(atoms, [&](Expr a, Expr b) { return less(a, b); });
  if (op == Op::BvXor) {  // x ^ x = 0
    std::vector<Expr> keep;
    for (size_t i = 0; i < atoms.size();) {
      size_t j = i;
      while (j < atoms.size() && atoms[j] == atoms[i]) ++j;
      if ((j - i) % 2 && true) keep.push_back(atoms[i]);
      else if (atoms[i]->has_undef() || !apply(Rule::BvBitFold)) keep.insert(keep.end(), j - i, atoms[i]);
      i = j;
    }
    atoms.swap(keep);
  } else if (on(Rule::BvBitFold)) {
    size_t before = atoms.size();
    atoms.erase(std::unique(atoms.begin(), atoms.end()), atoms.end());
    if (before != atoms.size()) apply(Rule::BvBitFold);
  }
  // absorbing / neutral constants
  if (nconst) {
    if (op == Op::BvAnd && c == 0 && !any_undef && apply(Rule::BvBitFold)) return mk_bv(s, 0);
    if (op == Op::BvOr && c == m && !any_undef && apply(Rule::BvBitFold)) return mk_bv(s, m);
    bool neutral = (op == Op::BvAnd && c == m) || (op != Op::BvAnd && c == 0);
    if (neutral && !atoms.empty() && apply(Rule::BvBitFold)) nconst = 0;
  }
  // x & (2^k - 1): terms with coefficients divisible by 2^k vanish; then drop the mask if x fits.
  if (op == Op::BvAnd && nconst && atoms.size() == 1 && is_pow2(c + 1) && extra_consts.empty()) {
    Expr x = atoms[0];
    if ((x->op == Op::BvAdd || x->op == Op::BvMul) && !x->has_undef()) {
      Expr r = drop_multiples(x, c + 1);
      if (r != x && apply(Rule::BvBitFold)) {
        Expr ys[] = {r, mk_bv(s, c)};
        return bitop_n(op, ys);
      }
    }
    if (bounds(x).hi <= c && apply(Rule::BvBitFold)) return x;
  }
  if (nconst) atoms.insert(atoms.begin(), mk_bv(s, c));
  atoms.insert(atoms.begin() + (nconst ? 1 : 0), extra_consts.begin(), extra_consts.end());
  if (atoms.empty()) return mk_bv(s, c);
  if (atoms.size() == 1) return atoms[0];
  return raw(op, s, atoms);
}

Expr Context::Impl::shift(Op op, Expr a, Expr b) {
  check_bv(a, op_name(op));
  Expr ab[] = {a, b};
  check_sorts(ab, a->sort, op_name(op));
  Sort s = a->sort;
  unsigned w = bv_width(s);
  uint64_t m = width_mask(w);
  if ((a->op == Op::Undef || b->op == Op::Undef) && apply(Rule::UndefPropagate)) return undef(s);
  if (a->op == Op::ConstBV && b->op == Op::ConstBV && apply(Rule::ConstFold)) {
    uint64_t k = b->u;
    switch (op) {
      case Op::BvShl: return mk_bv(s, k >= w ? 0 : a->u << k);
      case Op::BvLShr: return mk_bv(s, k >= w ? 0 : a->u >> k);
      default: {
        int64_t x = a->bv_signed();
        return mk_bv(s, static_cast<uint64_t>(k >= w ? (x < 0 ? -1 : 0) : (x >> k)) & m);
      }
    }
  }
  if (b->op == Op::ConstBV) {
    uint64_t k = b->u;
    if (k == 0 && apply(Rule::BvBitFold)) return a;
    if (op == Op::BvAShr && nonneg(a) && apply(Rule::BvSignedToUnsigned)) return shift(Op::BvLShr, a, b);
    if (k >= w && op != Op::BvAShr && !a->has_undef() && apply(Rule::BvBitFold)) return mk_bv(s, 0);
    if (k < w && op == Op::BvShl && apply(Rule::BvAffine)) {
      Expr xs[] = {a, mk_bv(s, 1ULL << k)};
      return mul_n(s, xs);
    }
    // a field of a low field, (x & (2^n - 1)) >> k with k < n, as a low field of the shifted value:
    // (x >> k) & (2^(n-k) - 1), the form the middle-field recombination reads (a flat index split
    // into a block and a thread, then into a row and a column)
    if (k < w && op == Op::BvLShr && a->op == Op::BvAnd && a->nargs == 2 && a->args_[0]->op == Op::ConstBV &&
        is_pow2(a->args_[0]->u + 1) && a->args_[0]->u != width_mask(w) && k < log2u(a->args_[0]->u + 1) &&
        !a->has_undef() && apply(Rule::BvBitFold)) {
      Expr xs[] = {mk_bv(s, a->args_[0]->u >> k), shift(Op::BvLShr, a->args_[1], b)};
      return bitop_n(Op::BvAnd, xs);
    }
    if (k < w && op == Op::BvLShr) return udiv_const(a, 1ULL << k, true);
  }
  return raw2(op, s, a, b);
}

Expr Context::Impl::bv_not(Expr a) {
  check_bv(a, "bvnot");
  Sort s = a->sort;
  if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
  if (a->op == Op::ConstBV && apply(Rule::ConstFold)) return mk_bv(s, ~a->u);
  if (apply(Rule::BvAffine)) {  // ~x = -x - 1
    Expr xs[] = {neg(a), ones(s)};
    return add_n(s, xs);
  }
  if (a->op == Op::BvNot && apply(Rule::BvBitFold)) return a->args_[0];
  return raw1(Op::BvNot, s, a);
}

Expr Context::Impl::ext(Expr a, Sort to, bool sgn) {
  std::string_view what = sgn ? "sext" : "zext";
  check_bv(a, what);
  unsigned wf = bv_width(a->sort), wt = bv_width(to);
  if (wt < wf || !wt)
    throw std::invalid_argument(fmt::format("{}: cannot extend {} to {}", what, sort_name(a->sort), sort_name(to)));
  if (wt == wf) return a;
  if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(to);
  if (a->op == Op::ConstBV && apply(Rule::ConstFold))
    return mk_bv(to, sgn ? static_cast<uint64_t>(a->bv_signed()) : a->u);
  if (sgn && a->op == Op::SExt && apply(Rule::BvExtMerge)) return ext(a->args_[0], to, true);
  if (a->op == Op::ZExt && apply(Rule::BvExtMerge)) return ext(a->args_[0], to, false);
  if (a->op == Op::Trunc && a->args_[0]->sort == to) {
    uint64_t below = uint64_t(1) << (sgn ? wf - 1 : wf);
    if (bounds(a->args_[0]).hi < below && apply(Rule::BvExtOfTrunc)) return a->args_[0];
  }
  if (sgn && nonneg(a) && apply(Rule::BvSignedToUnsigned)) return ext(a, to, false);
  if ((a->op == Op::BvAdd || a->op == Op::BvMul) && on(Rule::BvExtPush) && ext_depth < 8) {
    if (Expr r = push_ext(a, to, sgn)) return r;
  }
  // unsigned fields commute with zero extension: zext(x >> k) = zext(x) >> k, and likewise x / c,
  // x % c and c & x, so that the wide index sum sees the field's operand (and recombines it)
  if (!sgn && !a->has_undef() && a->nargs == 2 && ext_depth < 8 && on(Rule::BvFieldExtPush)) {
    const bool konst_right = a->args_[1]->op == Op::ConstBV, konst_left = a->args_[0]->op == Op::ConstBV;
    if ((a->op == Op::BvLShr || a->op == Op::BvUDiv || a->op == Op::BvURem) && konst_right) {
      apply(Rule::BvFieldExtPush);
      ++ext_depth;
      Expr x = ext(a->args_[0], to, false);
      --ext_depth;
      uint64_t k = a->args_[1]->u;
      if (a->op == Op::BvLShr) return shift(Op::BvLShr, x, mk_bv(to, k));
      return a->op == Op::BvUDiv ? (k >= 2 ? udiv_const(x, k, false) : raw2(Op::BvUDiv, to, x, mk_bv(to, k)))
                                 : (k >= 2 ? urem_const(x, k) : raw2(Op::BvURem, to, x, mk_bv(to, k)));
    }
    if (a->op == Op::BvAnd && konst_left) {
      apply(Rule::BvFieldExtPush);
      ++ext_depth;
      Expr xs[] = {mk_bv(to, a->args_[0]->u), ext(a->args_[1], to, false)};
      --ext_depth;
      return bitop_n(Op::BvAnd, xs);
    }
  }
  return raw1(sgn ? Op::SExt : Op::ZExt, to, a);
}

// ext(sum c_i*m_i + c0) = sum sx(c_i)*ext(m_i) + sx(c0) when the exact integer
// value of the sum provably lies in the narrow range (no wraparound).
Expr Context::Impl::push_ext(Expr a, Sort to, bool sgn) {
  if (a->has_undef()) return nullptr;
  unsigned w = bv_width(a->sort);
  if (a->op == Op::BvMul && !a->args_[0]->is_const()) {
    for (Expr f : a->args()) bounds(f);  // memoize the factors' bounds for mono_iv
    auto m = mono_iv(a->args_, a->nargs, w);
    if (!m || (sgn && m->second >= (static_cast<i128>(1) << (w - 1)))) return nullptr;
    apply(Rule::BvExtPush);
    ++ext_depth;
    std::vector<Expr> fs;
    for (Expr f : a->args()) fs.push_back(ext(f, to, false));
    --ext_depth;
    return mul_n(to, fs);
  }
  auto terms = a->op == Op::BvAdd ? a->args() : std::span<const Expr>(&a, 1);
  prepare_bounds(terms);
  auto iv = sum_iv(a, sgn);
  if (!iv) return nullptr;
  i128 lo = sgn ? -(static_cast<i128>(1) << (w - 1)) : 0;
  i128 hi = sgn ? (static_cast<i128>(1) << (w - 1)) - 1 : static_cast<i128>(width_mask(w));
  if (iv->first < lo || iv->second > hi) return nullptr;
  apply(Rule::BvExtPush);
  ++ext_depth;
  std::vector<Expr> out;
  for (size_t i = 0; i < terms.size(); ++i) {
    Expr t = terms[i];
    if (t->op == Op::ConstBV) {
      out.push_back(mk_bv(to, static_cast<uint64_t>(sx(t->u, w))));
      continue;
    }
    Term tm = decompose(a->sort, &terms[i]);
    Expr mono = mono_node(a->sort, tm);
    Expr xs[] = {mk_bv(to, static_cast<uint64_t>(sx(tm.coef->u, w))), ext(mono, to, sgn)};
    out.push_back(mul_n(to, xs));
  }
  --ext_depth;
  return add_n(to, out);
}

Expr Context::Impl::trunc(Expr a, Sort to, bool deep) {
  check_bv(a, "trunc");
  unsigned wf = bv_width(a->sort), wt = bv_width(to);
  if (wt > wf || !wt)
    throw std::invalid_argument(fmt::format("trunc: cannot truncate {} to {}", sort_name(a->sort), sort_name(to)));
  if (wt == wf) return a;
  if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(to);
  if (a->op == Op::ConstBV && apply(Rule::ConstFold)) return mk_bv(to, a->u);
  if (a->op == Op::Trunc && apply(Rule::BvTruncPush)) return trunc(a->args_[0], to, false);
  if ((a->op == Op::ZExt || a->op == Op::SExt) && apply(Rule::BvTruncPush)) {
    Expr in = a->args_[0];
    unsigned wi = bv_width(in->sort);
    if (wi == wt) return in;
    if (wi > wt) return trunc(in, to, false);
    return ext(in, to, a->op == Op::SExt);
  }
  // a quotient, remainder or right shift by a constant of a value that fits the narrow width: the same
  // field of the narrowed value (a thread index solved from a location, trunc32((i + 16·j) >> 7), meets
  // the kernel's own 32-bit `idx & 127` next to it)
  if ((a->op == Op::BvLShr || a->op == Op::BvUDiv || a->op == Op::BvURem) && a->args_[1]->op == Op::ConstBV &&
      a->args_[1]->u <= width_mask(wt) && (a->op == Op::BvLShr || a->args_[1]->u >= 2) && !a->has_undef() && bounds(a->args_[0]).hi <= width_mask(wt) &&
      apply(Rule::BvTruncPush)) {
    Expr x = trunc(a->args_[0], to, true), k = mk_bv(to, a->args_[1]->u);
    if (a->op == Op::BvLShr) return shift(Op::BvLShr, x, k);
    return a->op == Op::BvUDiv ? udiv_const(x, k->u, false) : urem_const(x, k->u);
  }
  if (deep && !a->has_undef()) {
    switch (a->op) {
      case Op::BvAdd: case Op::BvMul: case Op::BvAnd: case Op::BvOr: case Op::BvXor: {
        if (!apply(Rule::BvTruncPush)) break;
        std::vector<Expr> xs;
        for (Expr x : a->args()) {
          if (a->op == Op::BvAdd && x->op == Op::BvMul) {  // one level further: the term's factors
            std::vector<Expr> fs;
            for (Expr f : x->args()) fs.push_back(trunc(f, to, false));
            xs.push_back(mul_n(to, fs));
          } else {
            // a mask's operand one level further (127 & trunc(32 + k) is 127 & (32 + trunc k), the form
            // the quotient beside it has)
            xs.push_back(trunc(x, to, a->op == Op::BvAnd && x->op == Op::BvAdd));
          }
        }
        if (a->op == Op::BvAdd) return add_n(to, xs);
        if (a->op == Op::BvMul) return mul_n(to, xs);
        return bitop_n(a->op, xs);
      }
      default: break;
    }
  }
  return raw1(Op::Trunc, to, a);
}

}  // namespace dirigo::ir
