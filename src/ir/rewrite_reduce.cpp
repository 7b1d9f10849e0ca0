// Reductions: construction (abstraction of named indices into de Bruijn Bound leaves), the
// binder-aware walks (loose indices, shifting, instantiation) and the rules that act inside one
// reduction: empty / one-point domains, invariant bodies, factors and terms pulled out of a sum,
// nested reductions of one op flattened. Reductions combined by a sum or a max/min are merged in
// rewrite_reduce_merge.cpp.
#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

Expr Context::Impl::bound_leaf(uint32_t k) {
  Key key{Op::Bound, Sort::BV64};
  key.u = k;
  return intern(key);
}

Context::Impl::Box Context::Impl::box_of(Expr r) {
  Box b;
  for (unsigned d = 0; d < r->reduce_rank(); ++d) b.emplace_back(r->reduce_lo(d), r->reduce_hi(d));
  return b;
}

uint32_t Context::Impl::loose(Expr e) {
  if (!e->has_free_bound()) return 0;
  if (e->op == Op::Bound) return static_cast<uint32_t>(e->u) + 1;
  if (auto it = loose_memo.find(e); it != loose_memo.end()) return it->second;
  uint32_t r = 0;
  if (e->op == Op::Reduce) {
    uint32_t b = loose(e->reduce_body());
    r = b > e->reduce_rank() ? b - e->reduce_rank() : 0;
  } else {
    for (Expr c : e->args()) r = std::max(r, loose(c));
  }
  loose_memo.emplace(e, r);
  return r;
}

namespace {
// Whether e reads a free Bound(k) with depth <= k < depth + n (one reduction's own indices).
bool uses_indices(Expr e, uint32_t depth, uint32_t n, std::map<std::pair<Expr, uint32_t>, bool>& memo) {
  if (!e->has_free_bound()) return false;
  if (e->op == Op::Bound) return e->u >= depth && e->u < uint64_t(depth) + n;
  auto key = std::make_pair(e, depth);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  bool r = false;
  if (e->op == Op::Reduce) r = uses_indices(e->reduce_body(), depth + e->reduce_rank(), n, memo);
  else
    for (Expr c : e->args())
      if ((r = uses_indices(c, depth, n, memo))) break;
  memo.emplace(key, r);
  return r;
}
}  // namespace

Expr Context::Impl::map_bound_leaves(Expr e, uint32_t depth, const std::function<Expr(Expr, uint32_t)>& leaf) {
  std::map<std::pair<Expr, uint32_t>, Expr> memo;
  std::function<Expr(Expr, uint32_t)> go = [&](Expr x, uint32_t d) -> Expr {
    if (loose(x) <= d) return x;
    if (x->op == Op::Bound) return leaf(x, d);
    auto key = std::make_pair(x, d);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    Expr r;
    if (x->op == Op::Reduce) {
      r = reduce_n(x->reduce_op(), box_of(x), go(x->reduce_body(), d + x->reduce_rank()));
    } else {
      std::vector<Expr> a;
      for (Expr c : x->args()) a.push_back(go(c, d));
      r = rebuild(x, a);
    }
    memo.emplace(key, r);
    return r;
  };
  return go(e, depth);
}

Expr Context::Impl::shift(Expr e, uint32_t cutoff, int64_t delta) {
  if (delta == 0 || loose(e) <= cutoff) return e;
  return map_bound_leaves(e, cutoff, [&](Expr x, uint32_t cut) {
    // x sits below cut - cutoff binders of e itself: moved, it must still point past them (an index
    // an enclosing reduction binds; removing binders, as ReduceInvariant does, moves it down to them)
    int64_t k = static_cast<int64_t>(x->u) + delta;
    if (k < static_cast<int64_t>(cut) - static_cast<int64_t>(cutoff))
      throw std::logic_error("shift: a bound index would be captured");
    return bound_leaf(static_cast<uint32_t>(k));
  });
}

Expr Context::Impl::instantiate(Expr e, std::span<const Expr> values) {
  const uint32_t n = static_cast<uint32_t>(values.size());
  for (Expr v : values)
    if (v->has_free_bound()) throw std::invalid_argument("instantiate: index values must be closed");
  return map_bound_leaves(e, 0, [&](Expr x, uint32_t depth) {
    uint32_t j = static_cast<uint32_t>(x->u) - depth;
    return j < n ? values[j] : bound_leaf(static_cast<uint32_t>(x->u) - n);
  });
}

// ---- ReduceOrigin: every box dim starts at 0, its lo moved into the body's index (k -> k + lo). A
// reduction is a set of body values, and its box's placement is a choice of coordinates: fixing it
// makes a sum over x[1..n) read as a slice (Σ_{k<n-1} x[k+1]) and as a range (Σ_{k∈[1,n)} x[k]) one
// node. Reductions with bodies at shifted indices are related by align_bodies (rewrite_reduce_merge.cpp).
Expr Context::Impl::offset_indices(Expr body, std::span<const int64_t> off) {
  const uint32_t n = static_cast<uint32_t>(off.size());
  if (std::all_of(off.begin(), off.end(), [](int64_t o) { return o == 0; })) return body;
  return map_bound_leaves(body, 0, [&](Expr x, uint32_t depth) {
    uint64_t j = x->u - depth;  // the reduction's dim n-1-j
    if (j >= n || off[n - 1 - j] == 0) return x;
    Expr xs[] = {x, mk_bv(Sort::BV64, static_cast<uint64_t>(off[n - 1 - j]))};
    return add_n(Sort::BV64, xs);
  });
}

Expr Context::Impl::reduce_from(ReduceOp op, std::span<const std::pair<int64_t, int64_t>> box, Expr body) {
  bool negative = std::any_of(box.begin(), box.end(), [](auto d) { return d.first < 0; });
  return negative ? reduce_at_origin(op, box, body) : reduce_n(op, box, body);
}

Expr Context::Impl::reduce_at_origin(ReduceOp op, std::span<const std::pair<int64_t, int64_t>> box, Expr body) {
  Box zero;
  std::vector<int64_t> off;
  for (auto [lo, hi] : box) {
    zero.emplace_back(0, hi - lo);
    off.push_back(lo);
  }
  return reduce_n(op, zero, offset_indices(body, off));
}

Expr Context::Impl::reduce_raw(ReduceOp op, std::span<const std::pair<int64_t, int64_t>> box, Expr body) {
  std::vector<Expr> args{body};
  for (auto [lo, hi] : box) {
    args.push_back(mk_bv(Sort::BV64, static_cast<uint64_t>(lo)));
    args.push_back(mk_bv(Sort::BV64, static_cast<uint64_t>(hi)));
  }
  Key k{Op::Reduce, body->sort, static_cast<uint8_t>(op), args};
  uint8_t attrs = body->attrs;
  if (loose(body) <= box.size()) attrs &= static_cast<uint8_t>(~Node::kHasBound);
  Pre pre{key_hash(k), attrs, body->size == UINT64_MAX ? UINT64_MAX : body->size + 1 + 2 * box.size()};
  return intern(k, &pre);
}

// The scale of a real min/max (or sum): its first non-constant operand's constant coefficient
// (through a nested min/max, a clamp's max inside its min); 0 when every operand is constant.
mpq_class Context::Impl::minmax_scale(Expr m) {
  for (Expr a : m->args()) {
    if (a->op == Op::ConstReal) continue;
    if (a->op == Op::Min || a->op == Op::Max) return minmax_scale(a);
    if (a->op == Op::Mul && a->args_[0]->op == Op::ConstReal) return a->args_[0]->rational();
    return 1;
  }
  return 0;
}

Expr Context::Impl::reduce_n(ReduceOp op, std::span<const std::pair<int64_t, int64_t>> box, Expr body) {
  if (body->sort != Sort::Real) throw std::invalid_argument("reduce: only real bodies are supported");
  if (box.empty()) throw std::invalid_argument("reduce: a domain needs at least one dim");
  const uint32_t n = static_cast<uint32_t>(box.size());
  mpq_class count(1);
  for (auto [lo, hi] : box) {
    if (lo < 0 || hi < lo) throw std::invalid_argument(fmt::format("reduce: bad dim [{}, {})", lo, hi));
    count *= mpq_class(static_cast<long>(hi - lo));
  }
  if (body->op == Op::Undef && apply(Rule::UndefPropagate)) return body;
  if (count == 0 && on(Rule::ReduceEmpty)) {
    if (op == ReduceOp::Max || op == ReduceOp::Min)
      throw std::invalid_argument(fmt::format("reduce: {} over an empty domain", reduce_op_name(op)));
    apply(Rule::ReduceEmpty);
    return op == ReduceOp::Sum ? zero(Sort::Real) : one(Sort::Real);
  }
  if (count == 1 && apply(Rule::ReduceEmpty)) {  // values listed innermost binder first
    std::vector<Expr> at;
    for (uint32_t j = 0; j < n; ++j) at.push_back(mk_bv(Sort::BV64, static_cast<uint64_t>(box[n - 1 - j].first)));
    return instantiate(body, at);
  }
  std::map<std::pair<Expr, uint32_t>, bool> umemo;
  if (!uses_indices(body, 0, n, umemo) && op != ReduceOp::Prod && apply(Rule::ReduceInvariant)) {
    Expr b = shift(body, n, -static_cast<int64_t>(n));
    if (op == ReduceOp::Sum) {
      Expr xs[] = {mk_real(count), b};
      return mul_n(Sort::Real, xs);
    }
    return b;
  }
  if (std::any_of(box.begin(), box.end(), [](auto d) { return d.first != 0; }) && apply(Rule::ReduceOrigin)) {
    return reduce_at_origin(op, box, body);
  }
  if (op == ReduceOp::Sum && body->op == Op::Add && apply(Rule::ReduceSplitSum)) {
    std::vector<Expr> parts;
    for (Expr t : body->args()) parts.push_back(reduce_n(op, box, t));
    return add_n(Sort::Real, parts);
  }
  if (body->op == Op::Mul) {
    std::vector<Expr> out, in;
    for (Expr f : body->args()) {
      bool invariant = op == ReduceOp::Sum ? !uses_indices(f, 0, n, umemo)
                                           // max/min commute only with a positive constant factor
                                           : (op != ReduceOp::Prod && f->op == Op::ConstReal && f->rational() > 0);
      (invariant ? out : in).push_back(f);
    }
    if (!out.empty() && !in.empty() && apply(Rule::ReduceFactor)) {
      for (Expr& f : out) f = shift(f, n, -static_cast<int64_t>(n));
      out.push_back(reduce_n(op, box, mul_n(Sort::Real, in)));
      return mul_n(Sort::Real, out);
    }
  }
  // A positive scale the canonical forms moved into a min/max body (MulDistributeMinMax): a mean of
  // clamped values built term by term is Σ min(c, max(-c, c·x(k))), the reference's c·Σ min(1, max(-1, x(k))).
  // Likewise a max/min over a sum whose terms all carry the scale (max_{k<2} (S(k)/2 + b(k)/2), a
  // pool of a scaled linear layer): c·max_k (S(k) + b(k)).
  const bool scaled_sum = (op == ReduceOp::Max || op == ReduceOp::Min) && body->op == Op::Add;
  if (op != ReduceOp::Prod && body->sort == Sort::Real && (body->op == Op::Min || body->op == Op::Max || scaled_sum)) {
    mpq_class c = minmax_scale(body);
    if (c > 0 && c != 1) {
      Expr inv[] = {mk_real(mpq_class(1 / c)), body};
      Expr unit = mul_n(Sort::Real, inv);  // min(1, max(-1, x(k))): the scale distributed back in
      if (unit->op == (scaled_sum ? Op::Add : body->op) && minmax_scale(unit) == 1 && apply(Rule::ReduceFactor)) {
        Expr xs[] = {mk_real(c), reduce_n(op, box, unit)};
        return mul_n(Sort::Real, xs);
      }
    }
  }
  if (body->op == Op::Reduce && body->reduce_op() == op && apply(Rule::ReduceFlatten)) {
    Box both(box.begin(), box.end());
    Box inner = box_of(body);
    both.insert(both.end(), inner.begin(), inner.end());
    return reduce_n(op, both, body->reduce_body());
  }
  return reduce_raw(op, box, body);
}

}  // namespace dirigo::ir

namespace dirigo::ir {

Expr Context::reduce(ReduceOp op, std::span<const Expr> index_vars, std::span<const std::pair<int64_t, int64_t>> box,
                     Expr body) {
  if (index_vars.size() != box.size())
    throw std::invalid_argument(fmt::format("reduce: {} index variables for {} dims", index_vars.size(), box.size()));
  for (Expr v : index_vars)
    if (v->op != Op::Var || v->sort != Sort::BV64) throw std::invalid_argument("reduce: index variables must be BV64 vars");
  auto& I = *impl_;
  const uint32_t n = static_cast<uint32_t>(index_vars.size());
  // Abstraction: var of dim d -> Bound(depth + n - 1 - d), depth = binders crossed on the way down.
  std::map<std::pair<Expr, uint32_t>, Expr> memo;
  std::function<Expr(Expr, uint32_t)> go = [&](Expr x, uint32_t depth) -> Expr {
    if (x->op == Op::Var) {
      for (uint32_t d = 0; d < n; ++d)
        if (index_vars[d] == x) return I.bound_leaf(depth + n - 1 - d);
      return x;
    }
    if (x->nargs == 0) return x;
    auto key = std::make_pair(x, depth);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    Expr r;
    if (x->op == Op::Reduce) {
      r = I.reduce_n(x->reduce_op(), I.box_of(x), go(x->reduce_body(), depth + x->reduce_rank()));
    } else {
      std::vector<Expr> a;
      bool same = true;
      for (Expr c : x->args()) {
        a.push_back(go(c, depth));
        same &= a.back() == c;
      }
      r = same ? x : I.rebuild(x, a);
    }
    memo.emplace(key, r);
    return r;
  };
  // Free Bound leaves of the body refer to enclosing reductions: lift them past the new binders.
  Expr b = I.shift(body, 0, n);
  return I.reduce_n(op, box, go(b, 0));
}

}  // namespace dirigo::ir
