// ReduceMerge: reductions with one body over adjacent boxes, combined by the reduction's own op (a
// sum of sums, a max of maxes), become one reduction over the union: the partials of a split loop
// (a strided loop's chunks, the halves of a tree) are the whole sum.
#include <optional>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

namespace {
struct Part {
  Expr coef;    // Add: the constant coefficient (nullptr: 1); max/min: nullptr
  Expr reduce;  // the Reduce node
};

// The union of two boxes equal in every dim but one, where they touch; nullopt otherwise.
using BoxT = std::vector<std::pair<int64_t, int64_t>>;
std::optional<BoxT> adjacent_union(const BoxT& a, const BoxT& b) {
  if (a.size() != b.size()) return std::nullopt;
  int differ = -1;
  for (size_t d = 0; d < a.size(); ++d)
    if (a[d] != b[d]) {
      if (differ >= 0) return std::nullopt;
      differ = static_cast<int>(d);
    }
  if (differ < 0) return std::nullopt;  // equal boxes: a sum doubles (AddCombineLike), a max dedups
  auto u = a;
  auto [alo, ahi] = a[size_t(differ)];
  auto [blo, bhi] = b[size_t(differ)];
  if (ahi == blo) u[size_t(differ)] = {alo, bhi};
  else if (bhi == alo) u[size_t(differ)] = {blo, ahi};
  else return std::nullopt;
  return u;
}
}  // namespace

bool Context::Impl::merge_reductions(Op combine, std::vector<Expr>& xs) {
  if (!on(Rule::ReduceMerge)) return false;
  ReduceOp want = combine == Op::Add ? ReduceOp::Sum : combine == Op::Max ? ReduceOp::Max : ReduceOp::Min;
  auto part = [&](Expr x) -> std::optional<Part> {
    if (x->op == Op::Reduce && x->reduce_op() == want) return Part{nullptr, x};
    if (combine == Op::Add && x->op == Op::Mul && x->nargs == 2 && x->args_[0]->op == Op::ConstReal &&
        x->args_[1]->op == Op::Reduce && x->args_[1]->reduce_op() == want)
      return Part{x->args_[0], x->args_[1]};
    return std::nullopt;
  };
  unsigned candidates = 0;
  for (Expr x : xs) candidates += part(x).has_value();
  if (candidates < 2) return false;
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < xs.size() && !again; ++i) {
      auto pi = part(xs[i]);
      if (!pi) continue;
      for (size_t j = i + 1; j < xs.size() && !again; ++j) {
        auto pj = part(xs[j]);
        if (!pj || pj->coef != pi->coef || pj->reduce->reduce_body() != pi->reduce->reduce_body()) continue;
        auto u = adjacent_union(box_of(pi->reduce), box_of(pj->reduce));
        if (!u || !apply(Rule::ReduceMerge)) continue;
        Expr r = reduce_n(want, *u, pi->reduce->reduce_body());
        if (pi->coef) {
          Expr f[] = {pi->coef, r};
          r = mul_n(Sort::Real, f);
        }
        xs[i] = r;
        xs.erase(xs.begin() + static_cast<std::ptrdiff_t>(j));
        changed = again = true;
      }
    }
  }
  return changed;
}

}  // namespace dirigo::ir
