// Products (Mul, BvMul) and negation: flattening, constant folding, distribution over sums within a
// size budget.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

Expr Context::Impl::mul_n(Sort s, std::span<const Expr> xs) {
  Op mulop = s == Sort::Real ? Op::Mul : Op::BvMul;
  Op addop = s == Sort::Real ? Op::Add : Op::BvAdd;
  check_sorts(xs, s, op_name(mulop));
  if (xs.empty()) return one(s);
  if (xs.size() == 1) return xs[0];
  Expr c = one(s);
  unsigned nconst = 0;
  std::vector<Expr> atoms;
  atoms.reserve(xs.size());
  auto konst = [&](Expr k) {
    if (!take_const(nconst)) return false;
    c = cmul(c, k);
    return true;
  };
  if (!gather_operands(mulop, Rule::MulFlatten, xs, atoms, konst)) return undef(s);
  if (atoms.empty()) return c;
  if (is_zero(c) && std::none_of(atoms.begin(), atoms.end(), [](Expr a) { return a->has_undef(); }) &&
      apply(Rule::MulIdentity))
    return c;
  if (on(Rule::MulSort) && sort_runs(atoms, [&](Expr a, Expr b) { return less(a, b); })) apply(Rule::MulSort);
  // distribution over sums
  size_t nadd = std::count_if(atoms.begin(), atoms.end(), [&](Expr a) { return a->op == addop; });
  if (nadd) {
    if (nadd == 1 && atoms.size() == 1 && !is_one(c)) {
      if (atoms[0]->nargs <= kDistributeConstLimit && apply(Rule::MulDistributeConst))
        return scale_sum(s, atoms[0], c);
      nadd = 0;  // c*(a+b) stays factored; the product rule below is for sums times atoms
    }
  }
  if (nadd) {
    // Expand only small products of small sums: bounded term count, bounded
    // operand size (so recurrences like e = e*y + 1 stay linear), bounded nesting.
    uint64_t total = 1, size = 0;
    for (Expr a : atoms) {
      size += std::min<uint64_t>(a->size, kDistributeSizeBudget + 1);
      if (a->op == addop && (total *= a->nargs) > kDistributeLimit) break;
    }
    if (total <= kDistributeLimit && size <= kDistributeSizeBudget && distribute_depth < 4 &&
        apply(Rule::MulDistributeSmall)) {
      ++distribute_depth;
      struct Dec { int& d; ~Dec() { --d; } } dec{distribute_depth};
      std::vector<Expr> others{c};
      for (Expr a : atoms)
        if (a->op != addop) others.push_back(a);
      std::vector<Expr> prods{mul_n(s, others)}, next;
      for (Expr a : atoms) {
        if (a->op != addop) continue;
        next.clear();
        for (Expr p : prods)
          for (Expr t : a->args()) {
            Expr pt[] = {p, t};
            next.push_back(mul_n(s, pt));
          }
        prods.swap(next);
      }
      return add_n(s, prods);
    }
  }
  if (s == Sort::Real && nadd && atoms.size() > 1) {
    bool moved = false;
    for (Expr& a : atoms) {
      // Uniform sums only, up to 2^14 terms: rescaling is O(n) per product, and a batch variance's
      // 10^5 products (x_i - mean)^2 each hold a 10^5-term sum (whose coefficients differ anyway).
      if (a->op != addop || a->nargs > (1u << 14)) continue;
      mpq_class lead = sum_lead(a);
      if (lead == 1 || lead == 0 || !uniform_sum(a, lead) || !apply(Rule::MulSumContent)) continue;
      a = scale_sum(s, a, mk_real(1 / lead));
      c = cmul(c, mk_real(lead));
      moved = true;
    }
    if (moved) {
      atoms.insert(atoms.begin(), c);
      return mul_n(s, atoms);
    }
  }
  // The constant's magnitude goes into the first min/max factor, its sign stays (-2*max(x, y) is
  // -1*max(2x, 2y)): -m/6 and max(x/6, ...) of one max m then cancel as like terms.
  if (s == Sort::Real && !is_one(c) && c->rational() != -1) {
    auto mm = std::find_if(atoms.begin(), atoms.end(), [](Expr a) { return a->op == Op::Min || a->op == Op::Max; });
    if (mm != atoms.end() && apply(Rule::MulDistributeMinMax)) {
      bool negative = c->rational() < 0;
      Expr magnitude = negative ? mk_real(-c->rational()) : c;
      std::vector<Expr> scaled;
      scaled.reserve((*mm)->nargs);
      for (Expr a : (*mm)->args()) {
        Expr pt[] = {magnitude, a};
        scaled.push_back(mul_n(s, pt));
      }
      *mm = minmax_n((*mm)->op, s, scaled);
      if (negative) atoms.insert(atoms.begin(), mk_real(mpq_class(-1)));
      return mul_n(s, atoms);
    }
  }
  bool keep_one = nconst > 0 && !on(Rule::MulIdentity);
  if (is_one(c) && !keep_one && atoms.size() == 1) {
    if (nconst) apply(Rule::MulIdentity);
    return atoms[0];
  }
  if (!is_one(c) || keep_one) atoms.insert(atoms.begin(), c);
  return raw(mulop, s, atoms);
}

Expr Context::Impl::neg(Expr a) {
  Expr m1 = a->sort == Sort::Real ? mk_real(mpq_class(-1)) : ones(a->sort);
  if (!apply(Rule::NegToMul)) return raw2(a->sort == Sort::Real ? Op::Mul : Op::BvMul, a->sort, m1, a);
  Expr xs[] = {m1, a};
  return mul_n(a->sort, xs);
}

}  // namespace dirigo::ir
