// ReduceMerge: reductions with one body over adjacent boxes, combined by the reduction's own op (a
// sum of sums, a max of maxes), become one reduction over the union: the partials of a split loop
// (a strided loop's chunks, the halves of a tree) are the whole sum. With ReduceOrigin every box
// starts at 0, so a later chunk's body reads the first chunk's at an index offset: align_bodies finds
// that offset, and the chunk is merged at its place in the first one's coordinates.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <unordered_set>

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

// ---- alignment: body_b(k) == body_a(k + off). Candidate offsets come from one read of a tensor in each
// body: their index difference is a constant C = Σ_d s_d·off_d, with s_d the read's stride in dim d
// (its affine coefficient), solved greedily by decreasing stride; a candidate counts only when
// offset_indices(body_a, off) is body_b itself, so an offset is never assumed, only confirmed.
namespace {
// Reads of a tensor at the reduction's own level (not inside a nested reduction): Load(T, index).
void own_reads(Expr body, std::vector<Expr>& out, size_t cap) {
  std::vector<Expr> st{body};
  std::unordered_set<Expr> seen{body};
  while (!st.empty() && out.size() < cap) {
    Expr x = st.back();
    st.pop_back();
    if (!x->has_free_bound() || x->op == Op::Reduce) continue;
    if (x->op == Op::Load) {
      out.push_back(x);
      continue;
    }
    for (Expr c : x->args())
      if (seen.insert(c).second) st.push_back(c);
  }
}

bool mentions(Expr e, Expr leaf) {
  if (e == leaf) return true;
  if (!e->has_free_bound()) return false;
  std::vector<Expr> st{e};
  std::unordered_set<Expr> seen{e};
  while (!st.empty()) {
    Expr x = st.back();
    st.pop_back();
    if (x == leaf) return true;
    for (Expr c : x->args())
      if (c->has_free_bound() && seen.insert(c).second) st.push_back(c);
  }
  return false;
}

// The coefficient of index leaf b in an affine BV64 index (canonical: c0 + Σ c·atom); nullopt when b
// appears otherwise (under a division, a remainder, an extension).
std::optional<int64_t> stride_of(Expr idx, Expr b) {
  auto term = [&](Expr t) -> std::optional<int64_t> {
    if (t == b) return 1;
    if (t->op == Op::BvMul && t->nargs == 2 && t->args_[0]->op == Op::ConstBV && t->args_[1] == b)
      return t->args_[0]->bv_signed();
    if (mentions(t, b)) return std::nullopt;
    return 0;
  };
  if (idx->op != Op::BvAdd) return term(idx);
  int64_t s = 0;
  for (Expr t : idx->args()) {
    auto c = term(t);
    if (!c) return std::nullopt;
    s += *c;
  }
  return s;
}
}  // namespace

std::optional<std::vector<int64_t>> Context::Impl::align_bodies(Expr body_a, Expr body_b, unsigned rank) {
  std::vector<int64_t> zero(rank, 0);
  if (body_a == body_b) return zero;
  if (body_a->sort != body_b->sort) return std::nullopt;
  constexpr size_t kReads = 8;
  std::vector<Expr> ra, rb;
  own_reads(body_a, ra, kReads);
  own_reads(body_b, rb, kReads);
  std::vector<Expr> dims;  // the Bound leaf of dim d
  for (unsigned d = 0; d < rank; ++d) dims.push_back(bound_leaf(rank - 1 - d));
  std::vector<std::vector<int64_t>> tried;
  for (Expr la : ra) {
    if (la->sort != Sort::Real && !is_bv(la->sort)) continue;
    std::vector<std::pair<int64_t, unsigned>> strides;  // (stride, dim), nonzero only
    bool affine = true;
    for (unsigned d = 0; d < rank && affine; ++d) {
      auto s = stride_of(la->args_[0], dims[d]);
      if (!s) affine = false;
      else if (*s != 0) strides.emplace_back(*s, d);
    }
    if (!affine || strides.empty()) continue;
    std::sort(strides.begin(), strides.end(),
              [](auto x, auto y) { return std::llabs(x.first) > std::llabs(y.first); });
    for (Expr lb : rb) {
      if (lb->tensor() != la->tensor() || lb->sort != la->sort) continue;
      Expr diff[] = {lb->args_[0], mul_n(Sort::BV64, std::vector<Expr>{mk_bv(Sort::BV64, ~uint64_t(0)), la->args_[0]})};
      Expr c = add_n(Sort::BV64, diff);
      if (c->op != Op::ConstBV) continue;
      int64_t left = c->bv_signed();
      std::vector<int64_t> off(rank, 0);
      for (auto [s, d] : strides) {
        off[d] = left / s;
        left -= off[d] * s;
      }
      if (left != 0 || std::find(tried.begin(), tried.end(), off) != tried.end()) continue;
      tried.push_back(off);
      if (offset_indices(body_a, off) == body_b) return off;
    }
  }
  return std::nullopt;
}

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
        if (!pj || pj->coef != pi->coef || pj->reduce->reduce_rank() != pi->reduce->reduce_rank()) continue;
        BoxT bi = box_of(pi->reduce), bj = box_of(pj->reduce);
        // A union needs equal extents in every dim but one: only then is an offset worth looking for.
        unsigned other = 0;
        for (size_t d = 0; d < bi.size(); ++d)
          other += bi[d].second - bi[d].first != bj[d].second - bj[d].first;
        if (other > 1) continue;
        auto off = align_bodies(pi->reduce->reduce_body(), pj->reduce->reduce_body(), pi->reduce->reduce_rank());
        if (!off) continue;
        for (size_t d = 0; d < bj.size(); ++d) bj[d] = {bj[d].first + (*off)[d], bj[d].second + (*off)[d]};
        auto u = adjacent_union(bi, bj);  // in pi's coordinates (a lo may be negative)
        if (!u || !apply(Rule::ReduceMerge)) continue;
        Expr r = reduce_from(want, *u, pi->reduce->reduce_body());
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
