// Opening, expanding and comparing reductions (ir/reduce.h).
#include "ir/reduce.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"
#include "ir/walk.h"

namespace dirigo::ir {
using namespace detail;

Box reduce_box(Expr r) {
  if (r->op != Op::Reduce) throw std::invalid_argument("reduce_box: not a reduction");
  Box b;
  for (unsigned d = 0; d < r->reduce_rank(); ++d) b.emplace_back(r->reduce_lo(d), r->reduce_hi(d));
  return b;
}

uint64_t reduce_count(Expr r) {
  unsigned __int128 n = 1;
  for (auto [lo, hi] : reduce_box(r)) {
    n *= static_cast<uint64_t>(hi - lo);
    if (n > UINT64_MAX) return UINT64_MAX;
  }
  return static_cast<uint64_t>(n);
}

uint64_t reduce_terms(Expr r) {
  auto sat = [](unsigned __int128 v) { return v > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(v); };
  // Evaluation opens a reduction's body at every point, but a closed reduction below it only once (the
  // evaluator's memo): its terms are counted once, however many bodies it sits in.
  NodeSet closed_seen;
  std::function<uint64_t(Expr)> terms = [&](Expr red) -> uint64_t {
    unsigned __int128 per = 0, once = 0;
    auto count = [&](Expr c) {
      if (c->has_free_bound()) per += terms(c);
      else if (closed_seen.insert(c)) once += terms(c);
    };
    // the reductions directly below the body's other nodes (their own bodies are terms' business)
    NodeSet seen;
    if (red->reduce_body()->op == Op::Reduce) count(red->reduce_body());
    post_order(red->reduce_body(), [&](Expr x) { return seen.count(x) > 0 || x->op == Op::Reduce; }, [&](Expr x) {
      seen.insert(x);
      for (Expr c : x->args())
        if (c->op == Op::Reduce) count(c);
    });
    return sat(static_cast<unsigned __int128>(reduce_count(red)) * std::max<uint64_t>(1, sat(per)) + once);
  };
  return terms(r);
}

std::vector<Expr> top_reductions(Expr e) {
  std::vector<Expr> out, st{e};
  NodeSet seen;
  seen.insert(e);
  while (!st.empty()) {
    Expr x = st.back();
    st.pop_back();
    if (x->op == Op::Reduce) {
      out.push_back(x);
      continue;
    }
    for (Expr c : x->args())
      if (seen.insert(c)) st.push_back(c);
  }
  return out;
}

uint64_t expansion_terms(Expr e) {
  uint64_t t = 0;
  for (Expr r : top_reductions(e)) t = std::min<uint64_t>(UINT64_MAX / 2, t + reduce_terms(r));
  return t;
}

bool contains_reduce(Expr e) {
  NodeSet seen;
  bool found = false;
  post_order(e, [&](Expr x) { return found || seen.count(x) > 0; },
             [&](Expr x) {
               seen.insert(x);
               found |= x->op == Op::Reduce;
             });
  return found;
}

Expr instantiate(Context& ctx, Expr r, std::span<const int64_t> point) {
  Box b = reduce_box(r);
  if (point.size() != b.size()) throw std::invalid_argument("instantiate: point rank differs from the domain's");
  auto& I = ContextAccess::impl(ctx);
  std::vector<Expr> at;  // innermost binder (the last dim) first
  for (size_t j = 0; j < point.size(); ++j)
    at.push_back(I.mk_bv(Sort::BV64, static_cast<uint64_t>(point[point.size() - 1 - j])));
  return I.instantiate(r->reduce_body(), at);
}

Expr instantiate_at(Context& ctx, Expr r, std::span<const Expr> values) {
  if (values.size() != r->reduce_rank()) throw std::invalid_argument("instantiate_at: one value per dim needed");
  std::vector<Expr> at(values.rbegin(), values.rend());  // innermost binder (the last dim) first
  return ContextAccess::impl(ctx).instantiate(r->reduce_body(), at);
}

Expr expand_reduce(Context& ctx, Expr r) {
  if (r->has_free_bound()) throw std::invalid_argument("expand_reduce: the reduction reads enclosing indices");
  Box b = reduce_box(r);
  std::vector<Expr> terms;
  std::vector<int64_t> p(b.size());
  for (size_t d = 0; d < b.size(); ++d) p[d] = b[d].first;
  if (reduce_count(r) == 0) return ctx.real_const(r->reduce_op() == ReduceOp::Prod ? 1 : 0);
  for (;;) {
    terms.push_back(instantiate(ctx, r, p));
    size_t d = b.size();
    while (d-- > 0) {
      if (++p[d] < b[d].second) break;
      p[d] = b[d].first;
    }
    if (d == size_t(-1)) break;
  }
  switch (r->reduce_op()) {
    case ReduceOp::Sum: return ctx.add(terms);
    case ReduceOp::Prod: return ctx.mul(terms);
    case ReduceOp::Max: return ctx.max(terms);
    case ReduceOp::Min: return ctx.min(terms);
  }
  throw std::invalid_argument("expand_reduce: unknown op");
}

Expr expand_reductions(Context& ctx, Expr e, uint64_t max_points) {
  NodeMap<Expr> memo;
  // Only closed nodes are rewritten here; a reduction's body is reached through its own expansion.
  return rebuild_post_order(ctx, e, memo, [&](Expr x) -> Expr {
    if (x->nargs == 0 || !contains_reduce(x)) return x;
    if (x->op == Op::Reduce)
      return reduce_count(x) <= max_points ? expand_reductions(ctx, expand_reduce(ctx, x), max_points) : x;
    return nullptr;
  });
}

std::optional<std::vector<int64_t>> body_offset(Context& ctx, Expr a, Expr b) {
  if (a->op != Op::Reduce || b->op != Op::Reduce || a->reduce_op() != b->reduce_op() ||
      a->reduce_rank() != b->reduce_rank())
    return std::nullopt;
  return ContextAccess::impl(ctx).align_bodies(a->reduce_body(), b->reduce_body(), a->reduce_rank());
}

std::optional<DomainDifference> domain_difference(Context& ctx, Expr a, Expr b) {
  auto off = body_offset(ctx, a, b);
  if (!off) return std::nullopt;
  Box ba = reduce_box(a), bb = reduce_box(b);
  for (size_t d = 0; d < bb.size(); ++d) bb[d] = {bb[d].first + (*off)[d], bb[d].second + (*off)[d]};  // in a's coordinates
  if (ba == bb) return std::nullopt;
  auto inter = [](const Box& x, const Box& y) {
    unsigned __int128 n = 1;
    for (size_t d = 0; d < x.size(); ++d) {
      int64_t lo = std::max(x[d].first, y[d].first), hi = std::min(x[d].second, y[d].second);
      n *= static_cast<uint64_t>(std::max<int64_t>(hi - lo, 0));
    }
    return n > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(n);
  };
  DomainDifference r;
  r.offset = *off;
  uint64_t common = inter(ba, bb);
  r.only_a = reduce_count(a) - common;
  r.only_b = reduce_count(b) - common;
  // A point of x outside y: in some dim, a coordinate of x's range outside y's, the others anywhere in x.
  auto outside = [](const Box& x, const Box& y) -> std::optional<std::vector<int64_t>> {
    for (size_t d = 0; d < x.size(); ++d) {
      std::optional<int64_t> c;  // (b's box in a's coordinates may start below 0)
      if (x[d].first < x[d].second) {
        if (x[d].first < y[d].first) c = x[d].first;
        else if (x[d].second > y[d].second) c = x[d].second - 1;
      }
      if (!c) continue;
      std::vector<int64_t> p;
      bool empty = false;
      for (size_t e = 0; e < x.size(); ++e) {
        p.push_back(e == d ? *c : x[e].first);
        empty |= x[e].first >= x[e].second;
      }
      if (!empty) return p;
    }
    return std::nullopt;
  };
  if (auto p = outside(ba, bb)) r.point = *p, r.in_a = true;
  else if (auto q = outside(bb, ba)) {
    r.point = *q, r.in_a = false;
    for (size_t d = 0; d < r.point.size(); ++d) r.point[d] -= r.offset[d];  // back to b's coordinates
  } else {
    return std::nullopt;
  }
  return r;
}

}  // namespace dirigo::ir
