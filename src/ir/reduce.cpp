// Opening, expanding and comparing reductions (ir/reduce.h).
#include "ir/reduce.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>
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

std::optional<std::vector<StridedRead>> strided_reads(Context& ctx, Expr body, Expr k) {
  std::vector<StridedRead> reads;
  auto at = [&](Expr e, int64_t v) {
    return substitute(ctx, e, [&](Expr leaf) -> Expr { return leaf == k ? ctx.bv_const(Sort::BV64, uint64_t(v)) : nullptr; });
  };
  for (Expr l : leaves(body)) {
    if (l->op != Op::Load) continue;
    Expr a = at(l->arg(0), 0), s = ctx.bv_sub(at(l->arg(0), 1), a);
    if (s->op != Op::ConstBV) return std::nullopt;
    reads.push_back({l, a, s->bv_signed()});
  }
  return reads;
}

namespace {

// Reduces of one op over one box [0, T) merged as merge_interleaved says: g over the Var jv, j < count.
struct Merged {
  Expr jv = nullptr, g = nullptr;
  int64_t count = 0;
};
std::optional<Merged> merge_group(Context& ctx, const std::vector<Expr>& group, uint64_t& fresh) {
  const size_t n = group.size();
  const int64_t T = reduce_box(group[0])[0].second;
  Expr kv = ctx.var(fmt::format("interleave.k{}", fresh), Sort::BV64, Bounds{0, uint64_t(T - 1)});
  Expr jv = ctx.var(fmt::format("interleave.j{}", fresh++), Sort::BV64, Bounds{0, uint64_t(T) * n - 1});
  // each partial's body at k and its reads that move with k (the others are the same in every term)
  std::vector<Expr> bodies;
  std::vector<std::vector<StridedRead>> moving(n);
  for (size_t p = 0; p < n; ++p) {
    Expr at[] = {kv};
    bodies.push_back(instantiate_at(ctx, group[p], at));
    auto reads = strided_reads(ctx, bodies[p], kv);
    if (!reads) return std::nullopt;
    for (const StridedRead& r : *reads)
      if (r.step != 0) moving[p].push_back(r);
    if (moving[p].empty()) return std::nullopt;
  }
  // the first moving read fixes d and each partial's t: its start is a + t·d
  const StridedRead& first = moving[0].front();
  if (first.step % int64_t(n) != 0) return std::nullopt;
  const int64_t d = first.step / int64_t(n);
  std::vector<int64_t> t_of(n);
  int64_t t_min = 0;
  for (size_t p = 0; p < n; ++p) {
    // the read of first's tensor and step (the body's operand order follows hashes of the indices,
    // so it is not the same read first in every partial); the proof below checks the choice
    std::optional<int64_t> t;
    for (const StridedRead& r : moving[p]) {
      if (r.load->tensor() != first.load->tensor() || r.step != first.step) continue;
      Expr diff = ctx.bv_sub(r.start, first.start);
      if (diff->op != Op::ConstBV || diff->bv_signed() % d != 0) continue;
      t = diff->bv_signed() / d;
      break;
    }
    if (!t) return std::nullopt;
    t_of[p] = *t;
    t_min = std::min(t_min, t_of[p]);
  }
  std::vector<uint8_t> seen(n, 0);
  size_t origin = 0;  // the partial with t = 0 after shifting
  for (size_t p = 0; p < n; ++p) {
    int64_t t = t_of[p] - t_min;
    if (t >= int64_t(n) || seen[size_t(t)]) return std::nullopt;
    seen[size_t(t)] = 1;
    t_of[p] = t;
    if (t == 0) origin = p;
  }
  // g: the origin's body with each moving read at a + (s/n)·j
  std::unordered_map<Expr, Expr> rebuilt;
  for (const StridedRead& r : moving[origin]) {
    if (r.step % int64_t(n) != 0) return std::nullopt;
    Expr step = ctx.bv_const(Sort::BV64, uint64_t(r.step / int64_t(n)));
    rebuilt[r.load] = ctx.load(r.load->tensor(), ctx.bv_add(r.start, ctx.bv_mul(step, jv)), r.load->sort);
  }
  Expr g = substitute(ctx, bodies[origin], [&](Expr leaf) -> Expr {
    auto it = rebuilt.find(leaf);
    return it == rebuilt.end() ? nullptr : it->second;
  });
  for (Expr l : leaves(g))
    if (l == kv) return std::nullopt;  // k reaches the body other than through read indices
  // the proof: f_t(k) == g(n·k + t) for every partial
  for (size_t p = 0; p < n; ++p) {
    Expr j = ctx.bv_add(ctx.bv_mul(ctx.bv_const(Sort::BV64, n), kv), ctx.bv_const(Sort::BV64, uint64_t(t_of[p])));
    if (substitute(ctx, g, [&](Expr leaf) -> Expr { return leaf == jv ? j : nullptr; }) != bodies[p]) return std::nullopt;
  }
  return Merged{jv, g, T * int64_t(n)};
}

// Interleaved partials among the operands of one Add/Max/Min: those of one extent and one constant
// factor as one group (a tree's result flattens to all its partials; a positive factor of a max
// distributes into it), then the loose terms that continue the merged range.
bool merge_operands(Context& ctx, Op combine, std::vector<Expr>& xs, uint64_t& fresh) {
  ReduceOp want = combine == Op::Add ? ReduceOp::Sum : combine == Op::Max ? ReduceOp::Max : ReduceOp::Min;
  struct Part { Expr coef, reduce; };  // coef: nullptr for 1
  auto partial = [&](Expr x) -> std::optional<Part> {
    Part p{nullptr, x};
    if (x->op == Op::Mul && x->nargs == 2 && x->arg(0)->op == Op::ConstReal &&
        (combine == Op::Add || x->arg(0)->rational() > 0))
      p = {x->arg(0), x->arg(1)};
    Expr r = p.reduce;
    if (r->op != Op::Reduce || r->reduce_op() != want || r->reduce_rank() != 1 || r->has_free_bound() ||
        reduce_box(r)[0].first != 0 || reduce_box(r)[0].second <= 0)
      return std::nullopt;
    return p;
  };
  std::map<std::pair<int64_t, Expr>, std::vector<size_t>> groups;  // by extent and factor
  std::vector<Expr> reduce_of(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    if (auto p = partial(xs[i])) {
      reduce_of[i] = p->reduce;
      groups[{reduce_box(p->reduce)[0].second, p->coef}].push_back(i);
    }
  // Partials of two loops in one group (a thread's two dot products summed, x·w₀ + x·w₁, 128 partials
  // each) are told apart by their reads' offsets from one another, which one body keeps in every
  // partial: merged body by body.
  std::vector<std::pair<Expr, std::vector<size_t>>> bodies;  // (factor, partials)
  for (auto& [key, idx] : groups) {
    if (idx.size() < 2) continue;
    std::map<std::vector<std::pair<int32_t, uint64_t>>, std::vector<size_t>> by_body;
    for (size_t i : idx) {
      Expr kv = ctx.var("interleave.sig", Sort::BV64, Bounds{0, uint64_t(key.first - 1)});
      Expr at[] = {kv};
      auto reads = strided_reads(ctx, instantiate_at(ctx, reduce_of[i], at), kv);
      std::vector<std::pair<int32_t, uint64_t>> sig;
      if (reads) {
        // moving reads by their offsets from the first moving one; reads that stay put as they are
        std::stable_sort(reads->begin(), reads->end(), [](const StridedRead& a, const StridedRead& b) {
          return a.load->tensor() != b.load->tensor() ? a.load->tensor() < b.load->tensor() : a.step < b.step;
        });
        const StridedRead* first_moving = nullptr;
        for (const StridedRead& r : *reads)
          if (r.step != 0 && !first_moving) first_moving = &r;
        for (const StridedRead& r : *reads) {
          Expr d = r.step == 0 || !first_moving ? r.start : ctx.bv_sub(r.start, first_moving->start);
          sig.emplace_back(r.load->tensor(), d->op == Op::ConstBV ? d->bv_value() : d->hash ^ uint64_t(r.step != 0));
        }
      }
      by_body[sig].push_back(i);
    }
    for (auto& [sig, members] : by_body) bodies.emplace_back(key.second, std::move(members));
  }
  std::vector<size_t> gone;
  for (auto& [factor, idx] : bodies) {
    const std::pair<int64_t, Expr> key{reduce_box(reduce_of[idx[0]])[0].second, factor};
    if (idx.size() < 2) continue;
    std::vector<Expr> group;
    for (size_t i : idx) group.push_back(reduce_of[i]);
    auto m = merge_group(ctx, group, fresh);
    if (!m) continue;
    gone.insert(gone.end(), idx.begin() + 1, idx.end());
    // the remainder iterations some threads ran past the common trip count: loose terms g(count), ...
    std::unordered_map<Expr, size_t> loose;
    for (size_t i = 0; i < xs.size(); ++i) loose.emplace(xs[i], i);
    for (;;) {
      Expr at = substitute(ctx, m->g, [&](Expr leaf) -> Expr {
        return leaf == m->jv ? ctx.bv_const(Sort::BV64, uint64_t(m->count)) : nullptr;
      });
      auto it = loose.find(key.second ? ctx.mul(key.second, at) : at);
      if (it == loose.end() || std::find(gone.begin(), gone.end(), it->second) != gone.end() ||
          std::find(idx.begin(), idx.end(), it->second) != idx.end())
        break;
      gone.push_back(it->second);
      ++m->count;
    }
    Expr ivs[] = {m->jv};
    std::pair<int64_t, int64_t> box[] = {{0, m->count}};
    Expr r = ctx.reduce(want, ivs, box, m->g);
    xs[idx[0]] = key.second ? ctx.mul(key.second, r) : r;
  }
  if (gone.empty()) return false;
  std::sort(gone.rbegin(), gone.rend());
  for (size_t i : gone) xs.erase(xs.begin() + std::ptrdiff_t(i));
  return true;
}

}  // namespace

Expr reduce_bounded(Context& ctx, ReduceOp op, const Box& box, Expr body) {
  Expr r = ctx.reduce_abstracted(op, box, body);
  if (r->op != Op::Reduce) return r;
  Box b = reduce_box(r);
  if (std::any_of(b.begin(), b.end(), [](auto d) { return d.first < 0 || d.second <= d.first; })) return r;
  std::vector<Expr> vars;
  for (size_t d = 0; d < b.size(); ++d)
    vars.push_back(ctx.var(fmt::format("bounded.k{}", d), Sort::BV64,
                           Bounds{uint64_t(b[d].first), uint64_t(b[d].second - 1)}));
  return ctx.reduce(op, vars, b, instantiate_at(ctx, r, vars));
}

Expr merge_interleaved(Context& ctx, Expr e) {
  if (!contains_reduce(e)) return e;
  NodeMap<Expr> memo;
  uint64_t fresh = 0;
  return rebuild_post_order(
      ctx, e, memo, [&](Expr x) -> Expr { return x->nargs == 0 || !contains_reduce(x) ? x : nullptr; },
      [&](Expr, Expr r) {
        if (r->sort != Sort::Real || r->has_free_bound() || (r->op != Op::Add && r->op != Op::Max && r->op != Op::Min))
          return r;
        std::vector<Expr> xs(r->args().begin(), r->args().end());
        if (!merge_operands(ctx, r->op, xs, fresh)) return r;
        return r->op == Op::Add ? ctx.add(xs) : r->op == Op::Max ? ctx.max(xs) : ctx.min(xs);
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
