// n-ary min and max over reals and bitvectors (signed, unsigned): flattened, sorted, deduplicated,
// constants folded; a signed min/max of non-negative operands made unsigned; float limits.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

int Context::Impl::const_cmp(Op op, Expr a, Expr b) {  // a <=> b in the order op uses
  if (a->sort == Sort::Real) return cmp(a->rational(), b->rational());
  bool sgn = op == Op::BvSMin || op == Op::BvSMax;
  if (sgn) {
    int64_t x = a->bv_signed(), y = b->bv_signed();
    return x < y ? -1 : x > y;
  }
  return a->u < b->u ? -1 : a->u > b->u;
}

// A real constant no finite float passes: >= FLT_MAX for a min, <= -FLT_MAX for a max.
bool Context::Impl::float_limit(bool mn, Expr c) {
  static const mpq_class flt_max(mpz_class("340282346638528859811704183484516925440"));
  return mn ? c->rational() >= flt_max : c->rational() <= -flt_max;
}

Expr Context::Impl::minmax_n(Op op, Sort s, std::span<const Expr> xs) {
  check_sorts(xs, s, op_name(op));
  if (xs.empty()) throw std::invalid_argument(fmt::format("{} of no operands", op_name(op)));
  if (xs.size() == 1) return xs[0];
  if ((op == Op::Max || op == Op::Min) && on(Rule::ReduceMerge) &&
      std::any_of(xs.begin(), xs.end(), [](Expr x) { return x->op == Op::Reduce; })) {
    std::vector<Expr> flat;
    for (Expr x : xs) {
      if (x->op == op && x->nargs <= kDistributeLimit) flat.insert(flat.end(), x->args_, x->args_ + x->nargs);
      else flat.push_back(x);
    }
    if (merge_reductions(op, flat)) return minmax_n(op, s, flat);
  }
  bool mn = is_min(op);
  if ((op == Op::BvSMin || op == Op::BvSMax) &&
      std::all_of(xs.begin(), xs.end(), [&](Expr x) { return nonneg(x); }) && apply(Rule::BvSignedToUnsigned))
    return minmax_n(mn ? Op::BvUMin : Op::BvUMax, s, xs);
  if (xs.size() == 2 && on(Rule::MinMaxFlatten) && on(Rule::MinMaxSortDedup)) {
    for (int k = 0; k < 2; ++k) {  // big canonical node + one atom (a reduction loop): O(log n) search
      Expr big = xs[k], t = xs[1 - k];
      if (big->op != op || big->nargs < 16 || t->op == op || t->is_const() || t->op == Op::Undef) continue;
      const Expr* first = big->args_ + (big->args_[0]->is_const() ? 1 : 0);
      const Expr* last = big->args_ + big->nargs;
      const Expr* it = std::lower_bound(first, last, t, [&](Expr p, Expr q) { return less(p, q); });
      apply(Rule::MinMaxFlatten);
      apply(Rule::MinMaxSortDedup);
      if (it != last && *it == t) return big;
      std::vector<Expr> args(big->args_, it);
      args.push_back(t);
      args.insert(args.end(), it, last);
      uint64_t size = big->size > UINT64_MAX - t->size ? UINT64_MAX : big->size + t->size;
      Pre pre{big->hash + child_mix(t), static_cast<uint8_t>(big->attrs | t->attrs), size};
      return intern(Key{op, s, 0, args}, &pre);
    }
  }
  Expr best = nullptr;
  std::vector<Expr> atoms;
  atoms.reserve(xs.size());
  auto konst = [&](Expr k) {
    if (!best) { best = k; return true; }
    if (!apply(Rule::MinMaxConst)) return false;
    int c = const_cmp(op, k, best);
    if (mn ? c < 0 : c > 0) best = k;
    return true;
  };
  if (!gather_operands(op, Rule::MinMaxFlatten, xs, atoms, konst)) return undef(s);
  if (on(Rule::MinMaxSortDedup)) {
    bool changed = sort_runs(atoms, [&](Expr a, Expr b) { return less(a, b); });
    size_t before = atoms.size();
    atoms.erase(std::unique(atoms.begin(), atoms.end()), atoms.end());
    if (changed || before != atoms.size()) apply(Rule::MinMaxSortDedup);
  }
  if (best && s == Sort::Real && !atoms.empty() && float_limit(mn, best) && apply(Rule::MinMaxFloatLimit))
    best = nullptr;
  if (best) atoms.insert(atoms.begin(), best);
  if (atoms.size() == 1) return atoms[0];
  if (op == Op::Max && s == Sort::Real && best && atoms.size() == 2 && atoms[1]->op == Op::Min &&
      atoms[1]->args_[0]->op == Op::ConstReal && atoms[1]->args_[0]->rational() >= best->rational() &&
      apply(Rule::ClampOrder)) {
    Expr inner = atoms[1];
    Expr lo_y[] = {best, minmax_n(Op::Min, s, {inner->args_ + 1, inner->nargs - 1})};
    Expr hi_rest[] = {inner->args_[0], minmax_n(Op::Max, s, lo_y)};
    return minmax_n(Op::Min, s, hi_rest);
  }
  return raw(op, s, atoms);
}

}  // namespace dirigo::ir
