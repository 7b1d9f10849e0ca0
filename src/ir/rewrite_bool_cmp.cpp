// Booleans (not, and, or) and comparisons (eq, ult, ule, slt, sle, lt, le).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

Expr Context::Impl::not_(Expr a) {
  if (a->sort != Sort::Bool) throw std::invalid_argument("not: bool operand expected");
  if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return a;
  if (a->op == Op::ConstBool && apply(Rule::ConstFold)) return mk_bool(!a->u);
  if (a->op == Op::Not && apply(Rule::BoolSimplify)) return a->args_[0];
  Op flip = Op::Count_;
  switch (a->op) {
    case Op::Lt: flip = Op::Le; break;
    case Op::Le: flip = Op::Lt; break;
    case Op::Ult: flip = Op::Ule; break;
    case Op::Ule: flip = Op::Ult; break;
    case Op::Slt: flip = Op::Sle; break;
    case Op::Sle: flip = Op::Slt; break;
    default: break;
  }
  if (flip != Op::Count_ && apply(Rule::BoolSimplify)) return cmp_op(flip, a->args_[1], a->args_[0]);
  return raw1(Op::Not, Sort::Bool, a);
}

Expr Context::Impl::andor(Op op, std::span<const Expr> xs) {
  check_sorts(xs, Sort::Bool, op_name(op));
  bool absorb = op == Op::Or;  // the constant that decides: true for or, false for and
  if (xs.empty()) return mk_bool(!absorb);
  if (xs.size() == 1) return xs[0];
  std::vector<Expr> atoms;
  bool absorbed = false, undef_seen = false;
  for (Expr x : xs) {
    if (x->op == Op::Undef) undef_seen = true;
    if (x->op == op && apply(Rule::BoolSimplify)) atoms.insert(atoms.end(), x->args_, x->args_ + x->nargs);
    else atoms.push_back(x);
  }
  if (undef_seen && apply(Rule::UndefPropagate)) return undef(Sort::Bool);
  if (on(Rule::BoolSimplify)) {
    bool any_undef = std::any_of(atoms.begin(), atoms.end(), [](Expr a) { return a->has_undef(); });
    size_t before = atoms.size();
    std::erase_if(atoms, [&](Expr a) {
      if (a->op != Op::ConstBool) return false;
      if (a->bool_value() == absorb) absorbed = true;
      return true;
    });
    if (absorbed && !any_undef) { apply(Rule::BoolSimplify); return mk_bool(absorb); }
    if (absorbed) atoms.push_back(mk_bool(absorb));
    sort_runs(atoms, [&](Expr a, Expr b) { return less(a, b); });
    atoms.erase(std::unique(atoms.begin(), atoms.end()), atoms.end());
    if (!any_undef) {
      std::unordered_set<Expr> set(atoms.begin(), atoms.end());
      for (Expr a : atoms)
        if (a->op == Op::Not && set.count(a->args_[0])) { apply(Rule::BoolSimplify); return mk_bool(absorb); }
    }
    if (atoms.size() != before) apply(Rule::BoolSimplify);
    if (atoms.empty()) return mk_bool(!absorb);
    if (atoms.size() == 1) return atoms[0];
  }
  return raw(op, Sort::Bool, atoms);
}

// b - a as a constant, when cheap to find out (both sides small)
Expr Context::Impl::const_diff(Expr a, Expr b) {
  if (a->sort == Sort::Bool || a->size + b->size > 64) return nullptr;
  // a - b can only be a nonzero constant when a sum with a constant term is involved
  bool sums = a->op == Op::Add || a->op == Op::BvAdd || b->op == Op::Add || b->op == Op::BvAdd;
  if (!sums && !(a->is_const() && b->is_const())) return nullptr;
  Expr xs[] = {b, neg(a)};
  Expr d = add_n(a->sort, xs);
  return d->is_const() ? d : nullptr;
}

Expr Context::Impl::cmp_op(Op op, Expr a, Expr b) {
  Expr ab[] = {a, b};
  check_sorts(ab, a->sort, op_name(op));
  Sort s = a->sort;
  bool real_op = op == Op::Lt || op == Op::Le;
  if (op != Op::Eq && (real_op ? s != Sort::Real : !is_bv(s)))
    throw std::invalid_argument(fmt::format("{}: operands of sort {} not allowed", op_name(op), sort_name(s)));
  if ((a->op == Op::Undef || b->op == Op::Undef) && apply(Rule::UndefPropagate)) return undef(Sort::Bool);
  bool strict = op == Op::Lt || op == Op::Ult || op == Op::Slt;
  if (a->is_const() && b->is_const() && apply(Rule::ConstFold)) {
    int c;
    if (s == Sort::Real) c = cmp(a->rational(), b->rational());
    else if (op == Op::Slt || op == Op::Sle) c = a->bv_signed() < b->bv_signed() ? -1 : a->bv_signed() > b->bv_signed();
    else c = a->u < b->u ? -1 : a->u > b->u;
    return mk_bool(op == Op::Eq ? c == 0 : strict ? c < 0 : c <= 0);
  }
  if (on(Rule::CmpIteConst) && (a->is_const() || b->is_const())) {
    auto const_arms = [](Expr x) { return x->op == Op::Ite && x->args_[1]->is_const() && x->args_[2]->is_const(); };
    Expr it = a->is_const() ? b : a;
    if (const_arms(it)) {
      auto arm = [&](Expr v) { return it == a ? cmp_op(op, v, b) : cmp_op(op, a, v); };
      Expr t = arm(it->args_[1]), e = arm(it->args_[2]);
      if (t->op == Op::ConstBool && e->op == Op::ConstBool && apply(Rule::CmpIteConst)) return ite(it->args_[0], t, e);
    }
  }
  if (a == b && !a->has_undef() && apply(Rule::CmpCanon)) return mk_bool(!strict);
  if (op == Op::Eq && s == Sort::Bool && on(Rule::CmpCanon)) {
    if (a->op == Op::ConstBool) std::swap(a, b);
    if (b->op == Op::ConstBool && apply(Rule::CmpCanon)) return b->u ? a : not_(a);
  }
  if ((op == Op::Eq || real_op) && on(Rule::CmpCanon) && !a->has_undef() && !b->has_undef()) {
    if (Expr d = const_diff(a, b)) {  // d = b - a
      apply(Rule::CmpCanon);
      int sg = s == Sort::Real ? sgn(d->rational()) : (d->u != 0);
      return mk_bool(op == Op::Eq ? sg == 0 : op == Op::Lt ? sg > 0 : sg >= 0);
    }
  }
  if ((op == Op::Slt || op == Op::Sle) && nonneg(a) && nonneg(b) && apply(Rule::BvSignedToUnsigned))
    return cmp_op(op == Op::Slt ? Op::Ult : Op::Ule, a, b);
  if ((op == Op::Ult || op == Op::Ule) && on(Rule::CmpCanon) && !a->has_undef() && !b->has_undef()) {
    Bounds x = bounds(a), y = bounds(b);
    if ((strict ? x.hi < y.lo : x.hi <= y.lo) && apply(Rule::CmpCanon)) return mk_bool(true);
    if ((strict ? x.lo >= y.hi : x.lo > y.hi) && apply(Rule::CmpCanon)) return mk_bool(false);
  }
  if (op == Op::Eq && is_bv(s) && on(Rule::CmpCanon) && !a->has_undef() && !b->has_undef()) {
    Bounds x = bounds(a), y = bounds(b);  // disjoint ranges never meet (a non-null pointer vs 0)
    if ((x.hi < y.lo || y.hi < x.lo) && apply(Rule::CmpCanon)) return mk_bool(false);
  }
  if (op == Op::Eq && (s == Sort::Real || is_bv(s)) && !a->has_undef() && !b->has_undef() &&
      on(Rule::CmpCanon)) {
    // a + ca == b + cb  ->  a == b + (cb - ca), the constant-free sides ordered canonically
    auto split = [&](Expr x) -> std::pair<Expr, Expr> {
      if (x->is_const()) return {zero(s), x};
      if ((x->op == Op::Add || x->op == Op::BvAdd) && x->args_[0]->is_const())
        return {x->nargs == 2 ? x->args_[1] : raw(x->op, s, {x->args_ + 1, x->nargs - 1}), x->args_[0]};
      return {x, zero(s)};
    };
    auto [a0, ca] = split(a);
    auto [b0, cb] = split(b);
    if (less(b0, a0)) {
      std::swap(a0, b0);
      std::swap(ca, cb);
    }
    if (!is_zero(ca)) {
      apply(Rule::CmpCanon);
      Expr rhs[] = {b0, cadd(cb, cmul(ca, s == Sort::Real ? mk_real(mpq_class(-1)) : ones(s)))};
      return raw2(Op::Eq, Sort::Bool, a0, add_n(s, rhs));
    }
  }
  if (op == Op::Eq && less(b, a)) std::swap(a, b);
  return raw2(op, Sort::Bool, a, b);
}

}  // namespace dirigo::ir
