// If-then-else: constant and equal branches, and ite over comparisons recognized as min/max, clamps
// and leaky max.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

Expr Context::Impl::ite(Expr c, Expr t, Expr e) {
  if (c->sort != Sort::Bool) throw std::invalid_argument("ite: condition must be bool");
  if (t->sort != e->sort)
    throw std::invalid_argument(fmt::format("ite: arms of sorts {} and {}", sort_name(t->sort), sort_name(e->sort)));
  Sort s = t->sort;
  if (c->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
  if (c->op == Op::ConstBool && apply(Rule::IteConstCond)) return c->u ? t : e;
  if (t == e && !c->has_undef() && apply(Rule::IteSameArms)) return t;
  if (c->op == Op::Not && apply(Rule::IteNegCond)) return ite(c->args_[0], e, t);
  if (s == Sort::Bool && t->op == Op::ConstBool && e->op == Op::ConstBool && apply(Rule::IteNegCond))
    return t->u ? c : not_(c);
  if (c->nargs == 2 && on(Rule::IteToMinMax)) {
    Op mn = Op::Count_, mx = Op::Count_;
    switch (c->op) {
      case Op::Lt: case Op::Le: mn = Op::Min; mx = Op::Max; break;
      case Op::Slt: case Op::Sle: mn = Op::BvSMin; mx = Op::BvSMax; break;
      case Op::Ult: case Op::Ule: mn = Op::BvUMin; mx = Op::BvUMax; break;
      default: break;
    }
    if (mn != Op::Count_ && c->args_[0]->sort == s) {
      Expr a = c->args_[0], b = c->args_[1], ab[] = {a, b};
      if (t == a && e == b && apply(Rule::IteToMinMax)) return minmax_n(mn, s, ab);
      if (t == b && e == a && apply(Rule::IteToMinMax)) return minmax_n(mx, s, ab);
    }
  }
  if (s == Sort::Real && (c->op == Op::Lt || c->op == Op::Le) && on(Rule::IteLeakyToMax))
    if (Expr m = leaky_max(c->args_[0], c->args_[1], t, e)) return m;
  if (s == Sort::Real && (c->op == Op::Lt || c->op == Op::Le) && on(Rule::IteToMinMax))
    if (Expr m = clamp_minmax(c->args_[0], c->args_[1], t, e)) return m;
  Expr xs[] = {c, t, e};
  return raw(Op::Ite, s, xs);
}

// A clamp written as nested ternaries: v < lo ? lo : min(hi, v) is max(lo, min(hi, v)), and
// hi < v ? hi : max(lo, v) is min(hi, max(lo, v)), when every other bound of the inner min (max)
// is a constant on the right side of the outer one (at v = lo both arms agree, so < and <= alike).
// nullptr when it is not that form.
Expr Context::Impl::clamp_minmax(Expr a, Expr b, Expr t, Expr e) {
  Op inner = Op::Count_;
  Expr v = nullptr, bound = nullptr;
  if (b->op == Op::ConstReal && t == b) inner = Op::Min, v = a, bound = b;       // v < lo ? lo : min(.., v)
  else if (a->op == Op::ConstReal && t == a) inner = Op::Max, v = b, bound = a;  // hi < v ? hi : max(.., v)
  if (inner == Op::Count_ || e->op != inner) return nullptr;
  bool has_v = false;
  for (uint32_t i = 0; i < e->nargs; ++i) {
    Expr x = e->args_[i];
    if (x == v) { has_v = true; continue; }
    if (x->op != Op::ConstReal) return nullptr;
    if (inner == Op::Min ? x->rational() < bound->rational() : x->rational() > bound->rational()) return nullptr;
  }
  if (!has_v || !apply(Rule::IteToMinMax)) return nullptr;
  Expr xs[] = {bound, e};
  return minmax_n(inner == Op::Min ? Op::Max : Op::Min, Sort::Real, xs);
}

// ite(a < b, t, e) as max(lin, k*lin) with 0 <= k <= 1: 0 < lin ? lin : k*lin, or lin < 0 ? k*lin : lin
// (equal at lin = 0 either way, so < and <= alike). nullptr when it is not that form.
Expr Context::Impl::leaky_max(Expr a, Expr b, Expr t, Expr e) {
  Expr lin = nullptr, scaled = nullptr;
  if (is_zero(a) && b == t) lin = t, scaled = e;
  else if (is_zero(b) && a == e) lin = e, scaled = t;
  if (!lin || lin->is_const() || scaled->is_const() || scaled->op != lin->op ||
      (lin->op == Op::Add && lin->nargs != scaled->nargs))
    return nullptr;
  // k from the first non-constant terms' coefficients, then checked exactly: k*lin is scaled
  auto first = [](Expr x) {
    if (x->op != Op::Add) return x;
    for (uint32_t i = 0; i < x->nargs; ++i)
      if (!x->args_[i]->is_const()) return x->args_[i];
    return x;
  };
  auto coef = [](Expr term) {
    return term->op == Op::Mul && term->args_[0]->op == Op::ConstReal ? term->args_[0]->rational() : mpq_class(1);
  };
  mpq_class k = coef(first(scaled)) / coef(first(lin));
  if (k < 0 || k > 1) return nullptr;
  Expr ks[] = {mk_real(k), lin};
  if (mul_n(Sort::Real, ks) != scaled || !apply(Rule::IteLeakyToMax)) return nullptr;
  Expr xs[] = {lin, scaled};
  return minmax_n(Op::Max, Sort::Real, xs);
}

}  // namespace dirigo::ir
