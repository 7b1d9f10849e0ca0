// Re-rolling expanded reductions into Reduce nodes (ir/reroll.h). The shape hash and the lattice
// only propose a re-rolling; it is kept only when the body instantiated at every point of the box
// is, node for node, the term it stands for.
#include "ir/reroll.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/expr_internal.h"
#include "ir/reduce.h"
#include "ir/walk.h"

namespace dirigo::ir {
using namespace detail;

namespace {

bool closed_reduce(Expr e) { return e->op == Op::Reduce && !e->has_free_bound(); }

// A read at a data-free index that is not a constant: inside a reduction's body (it mentions the bound
// indices) or at a symbolic location (its Vars). Instances differ in the index's constant addends.
bool bound_load(Expr e) { return e->op == Op::Load && !e->arg(0)->has_data() && e->arg(0)->op != Op::ConstBV; }

// A bound load's index as `rest + offset` (offset: its constant addends, wrapping like the BV64 sum;
// 0 when none): instances of one body at different points differ in the offsets only. `rest` is
// the hash of the index without them.
struct Offset {
  int64_t value = 0;
  uint64_t rest = 0;
};
Offset split_offset(Expr idx) {
  if (idx->op != Op::BvAdd) return {0, idx->hash};
  Offset o;
  uint64_t n = 0, only = 0, sum = 0;
  for (Expr a : idx->args()) {
    if (a->op == Op::ConstBV) {
      o.value = int64_t(uint64_t(o.value) + a->bv_value());
    } else {
      ++n, only = a->hash;
      sum += mix64(a->hash + 0x9e3779b97f4a7c15ULL);
    }
  }
  o.rest = n == 1 ? only : mix64(uint64_t(Op::BvAdd) + 0x5bd1e995ULL) ^ sum;
  return o;
}

// A hash of e's structure with every tensor read's index left out, and inside reductions the
// constant offset of each read's index (parts without data are opaque: their own hash). Equal for
// two instances of one body; collisions only cost a failed verification.
class ShapeHash {
 public:
  uint64_t operator()(Expr e) {
    if (e->op == Op::TensorElem) return mix64(0x5eedULL ^ (uint64_t(uint32_t(e->tensor())) << 8) ^ uint64_t(e->sort));
    if (bound_load(e)) return load_shape(e);
    if (e->is_leaf() || !e->has_data()) return e->hash;
    if (auto it = memo_.find(e); it != memo_.end()) return it->second;
    std::vector<Expr> st{e};
    while (!st.empty()) {  // children first, iteratively
      Expr x = st.back();
      bool ready = true;
      for (Expr c : x->args())
        if (!trivial(c) && !memo_.count(c)) {
          st.push_back(c);
          ready = false;
        }
      if (!ready) continue;
      st.pop_back();
      if (memo_.count(x)) continue;
      memo_.emplace(x, combine(x, x->args()));
    }
    return memo_.at(e);
  }
  // The hash of a product of `atoms` (as a Mul without its coefficient would hash).
  uint64_t product(std::span<const Expr> atoms) {
    if (atoms.size() == 1) return (*this)(atoms[0]);
    uint64_t h = tag(Op::Mul, Sort::Real, 0, 0, -1);
    for (Expr a : atoms) h += mix64((*this)(a) + 0x9e3779b97f4a7c15ULL);
    return h;
  }

 private:
  bool trivial(Expr c) const { return c->op == Op::TensorElem || bound_load(c) || c->is_leaf() || !c->has_data(); }
  static uint64_t load_shape(Expr e) {
    return mix64(0x10adULL ^ (uint64_t(uint32_t(e->tensor())) << 8) ^ uint64_t(e->sort)) ^ mix64(split_offset(e->arg(0)).rest);
  }
  static uint64_t tag(Op op, Sort s, uint8_t flags, uint64_t u, int32_t t) {
    return mix64(uint64_t(op) | uint64_t(s) << 8 | uint64_t(flags) << 16 | uint64_t(uint32_t(t)) << 24) ^ mix64(u + 1);
  }
  uint64_t combine(Expr x, std::span<const Expr> args) {
    uint64_t h = tag(x->op, x->sort, x->flags, x->u, x->tensor());
    if (commutative(x->op) || x->op == Op::Eq) {  // operand order follows the (index-dependent) hashes
      for (Expr c : args) h += mix64((*this)(c) + 0x9e3779b97f4a7c15ULL);
    } else {
      for (Expr c : args) h = mix64(h * 31 + (*this)(c));
    }
    return h;
  }
  std::unordered_map<Expr, uint64_t> memo_;
};

// Where a read sits in a term's instances: its element index, or a bound load's constant offset.
int64_t read_at(Expr r) { return r->op == Op::TensorElem ? r->index() : split_offset(r->arg(0)).value; }

// The distinct tensor reads of e — element reads, and bound loads inside its reductions — ordered by
// (tensor, kind, index shape, index or offset).
std::vector<Expr> reads_of(Expr e) {
  std::vector<Expr> out, st{e};
  std::unordered_set<Expr> seen{e};
  while (!st.empty()) {
    Expr x = st.back();
    st.pop_back();
    if (x->op == Op::TensorElem || bound_load(x)) {
      out.push_back(x);
      continue;
    }
    if (!x->has_data()) continue;
    for (Expr c : x->args())
      if (seen.insert(c).second) st.push_back(c);
  }
  auto key = [](Expr r) {
    bool load = r->op != Op::TensorElem;
    return std::tuple(r->tensor(), load, load ? split_offset(r->arg(0)).rest : 0, read_at(r));
  };
  std::sort(out.begin(), out.end(), [&](Expr a, Expr b) { return key(a) < key(b); });
  return out;
}

struct Term {
  Expr term;           // the operand as it is
  Expr coef = nullptr; // Add: its constant coefficient (nullptr: 1)
  std::vector<Expr> reads;
  std::vector<int64_t> at;  // the reads' indices (bound loads: offsets)
};

// The lattice {v0 + Σ_d p_d·step_d : p in Π [0, extent_d)} the sorted vectors enumerate in row-major
// order (dims outer first); nullopt when they do not.
struct Lattice {
  std::vector<int64_t> extent;
  std::vector<std::vector<int64_t>> step;
};
std::optional<Lattice> lattice_of(const std::vector<const std::vector<int64_t>*>& v) {
  const size_t n = v.size(), m = v[0]->size();
  auto diff = [&](size_t a, size_t b) {
    std::vector<int64_t> d(m);
    for (size_t j = 0; j < m; ++j) d[j] = (*v[b])[j] - (*v[a])[j];
    return d;
  };
  Lattice inner_first;
  std::vector<size_t> cur(n);
  for (size_t q = 0; q < n; ++q) cur[q] = q;
  while (cur.size() > 1) {
    auto s = diff(cur[0], cur[1]);
    if (std::all_of(s.begin(), s.end(), [](int64_t x) { return x == 0; })) return std::nullopt;
    size_t L = 1;
    while (L < cur.size() && diff(cur[L - 1], cur[L]) == s) ++L;
    if (cur.size() % L != 0) return std::nullopt;
    inner_first.extent.push_back(static_cast<int64_t>(L));
    inner_first.step.push_back(std::move(s));
    std::vector<size_t> next;
    for (size_t q = 0; q < cur.size(); q += L) next.push_back(cur[q]);
    cur = std::move(next);
  }
  Lattice lat;
  lat.extent.assign(inner_first.extent.rbegin(), inner_first.extent.rend());
  lat.step.assign(inner_first.step.rbegin(), inner_first.step.rend());
  // every point (the detection looked at the first row of each level only)
  std::vector<int64_t> p(lat.extent.size(), 0);
  for (size_t q = 0; q < n; ++q) {
    for (size_t j = 0; j < m; ++j) {
      int64_t want = (*v[0])[j];
      for (size_t d = 0; d < p.size(); ++d) want += p[d] * lat.step[d][j];
      if ((*v[q])[j] != want) return std::nullopt;
    }
    for (size_t d = p.size(); d-- > 0;) {
      if (++p[d] < lat.extent[d]) break;
      p[d] = 0;
    }
  }
  return lat;
}

// e with each read in `offset` moved to a new index: an element read T[i] to Load(T, offset), a bound
// load T[rest + c] to Load(T, rest + offset), where offset (over the new reduction's indices, Bound
// leaves at depth 0) is lifted past the reductions the read sits in. Data-free parts are untouched.
Expr replace_reads(Context& ctx, Expr e, const std::unordered_map<Expr, Expr>& offset) {
  std::map<std::pair<Expr, uint32_t>, Expr> memo;
  struct Frame {
    Expr x;
    uint32_t depth;
    bool expanded;
  };
  std::vector<Frame> st{{e, 0, false}};
  auto done = [&](Expr x, uint32_t depth) { return memo.find({x, depth}); };
  while (!st.empty()) {
    auto [x, depth, expanded] = st.back();
    if (done(x, depth) != memo.end()) {
      st.pop_back();
      continue;
    }
    if (x->op == Op::TensorElem || bound_load(x)) {
      st.pop_back();
      Expr r = x;
      if (auto it = offset.find(x); it != offset.end()) {
        Expr off = ctx.lift_bound(it->second, depth);
        if (x->op == Op::TensorElem) {
          r = ctx.load(x->tensor(), off, x->sort);
        } else {
          Expr idx = off;
          Expr old = x->arg(0);
          if (old->op == Op::BvAdd) {
            for (Expr a : old->args())
              if (a->op != Op::ConstBV) idx = ctx.bv_add(idx, a);
          } else {
            idx = ctx.bv_add(idx, old);
          }
          r = ctx.load(x->tensor(), idx, x->sort);
        }
      }
      memo.emplace(std::pair(x, depth), r);
      continue;
    }
    if (x->is_leaf() || !x->has_data()) {
      st.pop_back();
      memo.emplace(std::pair(x, depth), x);
      continue;
    }
    const uint32_t inner = x->op == Op::Reduce ? depth + x->reduce_rank() : depth;
    if (!expanded) {
      st.back().expanded = true;
      for (Expr c : x->args())
        if (done(c, c == x->arg(0) ? inner : depth) == memo.end()) st.push_back({c, c == x->arg(0) ? inner : depth, false});
      continue;
    }
    st.pop_back();
    std::vector<Expr> a;
    bool same = true;
    for (unsigned i = 0; i < x->nargs; ++i) {
      a.push_back(memo.at({x->arg(i), i == 0 ? inner : depth}));
      same &= a.back() == x->arg(i);
    }
    Expr r = x;
    if (!same) r = x->op == Op::Reduce ? ctx.reduce_abstracted(x->reduce_op(), reduce_box(x), a[0]) : ctx.rebuild(x, a);
    memo.emplace(std::pair(x, depth), r);
  }
  return memo.at({e, 0});
}

// The operand without its constant coefficient.
Expr strip(Context& ctx, const Term& t) {
  if (!t.coef) return t.term;
  if (t.term->nargs == 2) return t.term->arg(1);
  return ctx.mul(t.term->args().subspan(1));
}

// One group of same-shape terms as coef·Reduce(body) when the lattice and every instance check out.
struct Rerolled {
  Expr reduce;
  Expr coef;  // the most common coefficient (nullptr: 1)
};
std::optional<Rerolled> reroll_group(Context& ctx, ReduceOp op, std::vector<Term*>& g) {
  std::sort(g.begin(), g.end(), [](const Term* a, const Term* b) { return a->at < b->at; });
  std::vector<const std::vector<int64_t>*> v;
  for (const Term* t : g) v.push_back(&t->at);
  auto lat = lattice_of(v);
  if (!lat) return std::nullopt;
  const size_t D = lat->extent.size();
  // the body: the first term with each varying read at v0 + Σ step_d · index_d (dim d is Bound(D-1-d))
  const Term& t0 = *g[0];
  std::unordered_map<Expr, Expr> map;
  for (size_t j = 0; j < t0.reads.size(); ++j) {
    Expr idx = ctx.bv_const(Sort::BV64, static_cast<uint64_t>(t0.at[j]));
    bool varies = false;
    for (size_t d = 0; d < D; ++d)
      if (int64_t s = lat->step[d][j]) {
        idx = ctx.bv_add(idx, ctx.bv_mul(ctx.bv_const(Sort::BV64, static_cast<uint64_t>(s)), ctx.bound(uint32_t(D - 1 - d))));
        varies = true;
      }
    if (varies) map.emplace(t0.reads[j], idx);
  }
  Expr body = replace_reads(ctx, strip(ctx, t0), map);
  auto& I = ContextAccess::impl(ctx);
  std::vector<int64_t> p(D, 0);
  std::vector<Expr> at(D);
  for (const Term* t : g) {
    for (size_t j = 0; j < D; ++j) at[j] = ctx.bv_const(Sort::BV64, static_cast<uint64_t>(p[D - 1 - j]));
    if (I.instantiate(body, at) != strip(ctx, *t)) return std::nullopt;
    for (size_t d = D; d-- > 0;) {
      if (++p[d] < lat->extent[d]) break;
      p[d] = 0;
    }
  }
  std::vector<std::pair<int64_t, int64_t>> box;
  for (int64_t n : lat->extent) box.emplace_back(0, n);
  std::unordered_map<Expr, size_t> count;
  Expr coef = nullptr;
  size_t best = 0;
  for (const Term* t : g)
    if (size_t c = ++count[t->coef]; c > best) best = c, coef = t->coef;
  // the new reduction in normal form, also where the constructor factored an invariant out of it
  // (-t1·x[4k + t] over t < 4: t1·Σ_{t<4, k<128} x[4k + t])
  Expr red = ctx.reduce_abstracted(op, box, body);
  if (red->op == Op::Mul) {
    std::vector<Expr> a;
    for (Expr f : red->args()) a.push_back(closed_reduce(f) ? normalize_reduce(ctx, f) : f);
    red = ctx.mul(a);
  }
  return Rerolled{normalize_reduce(ctx, red), coef};
}

// The expanded square of a sum: c·x_a·x_b over every pair a < b of an index set A of one tensor (no
// other factor) is (c/2)·((Σ_A x)² − Σ_A x²), with both sums re-rolled; nullptr when the group is not
// exactly that.
Expr reroll_pairs(Context& ctx, const std::vector<Term*>& g) {
  if (g.size() < 3) return nullptr;
  const Expr coef = g[0]->coef;
  std::set<int64_t> set;
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (const Term* t : g) {
    if (t->coef != coef || t->reads.size() != 2 || t->reads[0]->tensor() != t->reads[1]->tensor()) return nullptr;
    if (strip(ctx, *t) != ctx.mul(t->reads[0], t->reads[1])) return nullptr;
    set.insert(t->at[0]), set.insert(t->at[1]);
    if (!pairs.emplace(t->at[0], t->at[1]).second) return nullptr;
  }
  const size_t n = set.size();
  if (pairs.size() != n * (n - 1) / 2) return nullptr;  // distinct pairs a < b of n elements: all of them
  const int32_t T = g[0]->reads[0]->tensor();
  const Sort sort = g[0]->reads[0]->sort;
  std::vector<Expr> xs, sq;
  for (int64_t a : set) {
    xs.push_back(ctx.elem(T, a, sort));
    sq.push_back(ctx.mul(xs.back(), xs.back()));
  }
  Expr r = reroll_node(ctx, ctx.add(xs)), q = reroll_node(ctx, ctx.add(sq));
  if (r->op != Op::Reduce || q->op != Op::Reduce) return nullptr;
  const mpq_class half = (coef ? coef->rational() : mpq_class(1)) / 2;
  return ctx.add(ctx.mul(ctx.real_const(half), ctx.mul(r, r)), ctx.mul(ctx.real_const(mpq_class(-half)), q));
}

uint64_t divrem_nodes(Expr e) {
  uint64_t n = 0;
  std::unordered_set<Expr> seen;
  post_order(e, [&](Expr x) { return seen.count(x) > 0; }, [&](Expr x) {
    seen.insert(x);
    n += x->op == Op::BvUDiv || x->op == Op::BvURem || x->op == Op::BvLShr || x->op == Op::BvAnd;
  });
  return n;
}

}  // namespace

// A dim read only through quotients and remainders by a chain of its divisors (a flat output index
// k < 7200 read as k / 900, (k / 30) % 30 and k % 30) split into the mixed-radix dims they name:
// Σ_{k<7200} f(k/900, (k/30)%30, k%30) = Σ_{a<8, b<30, c<30} f(a, b, c), the box a reference's
// reduction over those dims has. Kept where the body's divisions and remainders become fewer.
Expr split_flat_dims(Context& ctx, Expr r, RerollStats* stats) {
  Box box = reduce_box(r);
  const size_t D = box.size();
  if (std::any_of(box.begin(), box.end(), [](auto d) { return d.first != 0 || d.second < 4; })) return r;
  auto& I = ContextAccess::impl(ctx);
  std::vector<Expr> vars(D), at(D);
  for (size_t d = 0; d < D; ++d) {
    vars[d] = ctx.var(fmt::format("!split.i{}", d), Sort::BV64, {0, static_cast<uint64_t>(box[d].second - 1)});
    at[D - 1 - d] = vars[d];
  }
  Expr body = I.instantiate(r->reduce_body(), at);
  std::set<uint64_t> divisors;
  std::unordered_set<Expr> seen;
  post_order(body, [&](Expr x) { return seen.count(x) > 0; }, [&](Expr x) {
    seen.insert(x);
    if (x->nargs != 2) return;
    Expr a = x->arg(0), b = x->arg(1);
    if ((x->op == Op::BvUDiv || x->op == Op::BvURem) && b->op == Op::ConstBV) divisors.insert(b->u);
    else if (x->op == Op::BvLShr && b->op == Op::ConstBV && b->u < 63) divisors.insert(uint64_t(1) << b->u);
    else if (x->op == Op::BvAnd && a->op == Op::ConstBV && a->u < (uint64_t(1) << 62) && is_pow2(a->u + 1))
      divisors.insert(a->u + 1);
  });
  bool changed = false;
  std::vector<Expr> nvars;
  Box nbox;
  for (size_t d = 0; d < D; ++d) {
    const uint64_t n = static_cast<uint64_t>(box[d].second);
    std::vector<uint64_t> chain;  // increasing, each dividing the next and n
    for (uint64_t c : divisors)
      if (c > 1 && c < n && n % c == 0 && (chain.empty() || c % chain.back() == 0)) chain.push_back(c);
    if (!chain.empty()) {
      std::vector<Expr> parts;  // outer to inner
      std::vector<std::pair<int64_t, int64_t>> dims;
      Expr k = ctx.bv_const(Sort::BV64, 0);
      uint64_t above = n;
      for (size_t i = chain.size() + 1; i-- > 0;) {
        const uint64_t stride = i ? chain[i - 1] : 1, extent = above / stride;
        Expr v = ctx.var(fmt::format("!split.{}.{}", d, i), Sort::BV64, {0, extent - 1});
        parts.push_back(v);
        dims.emplace_back(0, static_cast<int64_t>(extent));
        k = ctx.bv_add(k, ctx.bv_mul(ctx.bv_const(Sort::BV64, stride), v));
        above = stride;
      }
      Expr split = substitute(ctx, body, [&](Expr leaf) -> Expr { return leaf == vars[d] ? k : nullptr; });
      if (divrem_nodes(split) < divrem_nodes(body)) {
        body = split;
        nvars.insert(nvars.end(), parts.begin(), parts.end());
        nbox.insert(nbox.end(), dims.begin(), dims.end());
        changed = true;
        continue;
      }
    }
    nvars.push_back(vars[d]);
    nbox.push_back(box[d]);
  }
  if (!changed) return r;
  if (stats) ++stats->normalized;
  return ctx.reduce(r->reduce_op(), nvars, nbox, body);
}

Expr normalize_reduce(Context& ctx, Expr r, RerollStats* stats) {
  if (!closed_reduce(r)) return r;
  r = split_flat_dims(ctx, r, stats);
  if (!closed_reduce(r) || contains_reduce(r->reduce_body())) return r;
  Box box = reduce_box(r);
  const size_t D = box.size();
  // zero-based boxes are the constructor's canonical form (ReduceOrigin); with that rule switched off
  // a shifted box is left as it is
  if (std::any_of(box.begin(), box.end(), [](auto d) { return d.first != 0; })) return r;
  auto& I = ContextAccess::impl(ctx);
  auto index_var = [&](size_t d, int64_t n) {
    return ctx.var(fmt::format("!reroll.i{}", d), Sort::BV64, {0, static_cast<uint64_t>(std::max<int64_t>(n, 1) - 1)});
  };
  // the body over named indices
  std::vector<Expr> vars(D), at(D);
  bool changed = false;
  for (size_t d = 0; d < D; ++d) {
    vars[d] = index_var(d, box[d].second);
    at[D - 1 - d] = vars[d];
  }
  Expr body = I.instantiate(r->reduce_body(), at);
  // merge (d, d+1), innermost pairs first, while the index arithmetic folds back (no new div/rem)
  for (size_t d = D - 1; d-- > 0;) {
    int64_t outer = box[d].second, inner = box[d + 1].second;
    Expr k = ctx.var(fmt::format("!reroll.k{}", d), Sort::BV64, {0, static_cast<uint64_t>(outer * inner - 1)});
    Expr n_inner = ctx.bv_const(Sort::BV64, static_cast<uint64_t>(inner));
    Expr vo = vars[d], vi = vars[d + 1], qo = ctx.bv_udiv(k, n_inner), qi = ctx.bv_urem(k, n_inner);
    Expr merged = substitute(ctx, body, [&](Expr leaf) -> Expr { return leaf == vo ? qo : leaf == vi ? qi : nullptr; });
    if (divrem_nodes(merged) > divrem_nodes(body)) {
      // the two dims the other way round (a sum, max or min over a box does not depend on the order):
      // a re-rolled Σ_{t<4} Σ_{k<128} x[4k + t] is the kernel's Σ_{j<512} x[j]
      Expr n_outer = ctx.bv_const(Sort::BV64, static_cast<uint64_t>(outer));
      Expr so = ctx.bv_urem(k, n_outer), si = ctx.bv_udiv(k, n_outer);
      merged = substitute(ctx, body, [&](Expr leaf) -> Expr { return leaf == vo ? so : leaf == vi ? si : nullptr; });
      if (r->reduce_op() == ReduceOp::Prod || divrem_nodes(merged) > divrem_nodes(body)) continue;
    }
    body = merged;
    vars[d] = k;
    vars.erase(vars.begin() + static_cast<std::ptrdiff_t>(d + 1));
    box[d] = {0, outer * inner};
    box.erase(box.begin() + static_cast<std::ptrdiff_t>(d + 1));
    changed = true;
  }
  Expr out = ctx.reduce(r->reduce_op(), vars, box, body);
  if (stats && changed && out != r) ++stats->normalized;
  return out;
}

Expr reroll_node(Context& ctx, Expr e, RerollOptions opt, RerollStats* stats) {
  if (e->sort != Sort::Real || (e->op != Op::Add && e->op != Op::Max && e->op != Op::Min)) return e;
  const bool sum = e->op == Op::Add;
  const ReduceOp op = sum ? ReduceOp::Sum : e->op == Op::Max ? ReduceOp::Max : ReduceOp::Min;
  ShapeHash shape;
  std::vector<Term> terms;
  std::vector<Expr> rest;  // operands that are no candidates (constants, no tensor reads)
  terms.reserve(e->nargs);
  for (Expr x : e->args()) {
    Term t{x};
    if (sum && x->op == Op::Mul && x->arg(0)->op == Op::ConstReal) t.coef = x->arg(0);
    t.reads = reads_of(x);
    if (t.reads.empty()) {
      rest.push_back(x);
      continue;
    }
    for (Expr r : t.reads) t.at.push_back(read_at(r));
    terms.push_back(std::move(t));
  }
  // groups: one shape and one sequence of read tensors
  std::map<std::pair<uint64_t, uint64_t>, std::vector<Term*>> groups;
  for (Term& t : terms) {
    uint64_t h = t.coef ? shape.product(t.term->args().subspan(1)) : shape(t.term);
    uint64_t seq = 0;
    for (Expr r : t.reads) seq = mix64(seq * 31 + uint64_t(uint32_t(r->tensor())) + 1);
    groups[{h, seq}].push_back(&t);
  }
  std::vector<Expr> out = rest;
  bool any = false;
  for (auto& [key, g] : groups) {
    std::optional<Rerolled> rr;
    if (g.size() >= std::max<size_t>(opt.min_terms, 2)) rr = reroll_group(ctx, op, g);
    if (!rr && sum)
      if (Expr p = reroll_pairs(ctx, g)) {
        any = true;
        if (stats) ++stats->sums, stats->terms += g.size();
        out.push_back(p);
        continue;
      }
    if (!rr) {
      for (Term* t : g) out.push_back(t->term);
      continue;
    }
    any = true;
    if (stats) ++stats->sums, stats->terms += g.size();
    out.push_back(rr->coef ? ctx.mul(rr->coef, rr->reduce) : rr->reduce);
    if (!sum) continue;
    // Σ c_k·m_k = c·Σ m_k + Σ (c_k − c)·m_k
    const mpq_class c = rr->coef ? rr->coef->rational() : mpq_class(1);
    for (Term* t : g) {
      if (t->coef == rr->coef) continue;
      mpq_class ck = t->coef ? t->coef->rational() : mpq_class(1);
      out.push_back(ctx.mul(ctx.real_const(mpq_class(ck - c)), strip(ctx, *t)));
    }
  }
  if (!any) return e;
  return sum ? ctx.add(out) : op == ReduceOp::Max ? ctx.max(out) : ctx.min(out);
}

mpq_class simplest_rational_near(const mpq_class& q, const mpq_class& rel) {
  if (q == 0) return q;
  if (q < 0) return -simplest_rational_near(-q, rel);
  mpq_class lo = q * (1 - rel), hi = q * (1 + rel);
  // the simplest rational in [lo, hi] by continued fractions (Stern–Brocot)
  std::vector<mpz_class> cf;  // partial quotients of the answer
  mpq_class a = lo, b = hi;
  for (int depth = 0; depth < 64; ++depth) {
    mpz_class fl = a.get_num() / a.get_den();  // floor (a > 0)
    if (mpq_class(fl) == a) { cf.push_back(fl); break; }
    if (mpq_class(fl + 1) <= b) { cf.push_back(fl + 1); break; }
    cf.push_back(fl);
    mpq_class na = 1 / (b - fl), nb = 1 / (a - fl);
    a = na, b = nb;
    if (depth == 63) return q;
  }
  mpq_class r = cf.back();
  for (size_t i = cf.size() - 1; i-- > 0;) r = mpq_class(cf[i]) + 1 / r;
  r.canonicalize();
  return r.get_den() < q.get_den() ? r : q;
}

struct Reroller::Impl {
  Context& ctx;
  RerollOptions opt;
  RerollStats stats;
  std::unordered_map<Expr, Expr> memo;
  uint64_t opened = 0;  // names the Vars reduction bodies are opened over
};

Reroller::Reroller(Context& ctx, RerollOptions opt) : impl_(new Impl{ctx, opt, {}, {}}) {}
Reroller::~Reroller() { delete impl_; }
const RerollStats& Reroller::stats() const { return impl_->stats; }

Expr Reroller::operator()(Expr e) {
  auto& m = impl_->memo;
  Context& ctx = impl_->ctx;
  const mpq_class rel(1, 1u << 22);
  post_order(e, [&](Expr x) {
    if (m.count(x)) return true;
    if (x->has_free_bound()) {  // inside a reduction's body: the body is normalized with its reduction
      m.emplace(x, x);
      return true;
    }
    if (x->op == Op::ConstReal) {
      Expr y = x;
      if (impl_->opt.snap_constants) {
        mpq_class s = simplest_rational_near(x->rational(), rel);
        if (s != x->rational()) y = ctx.real_const(s), ++impl_->stats.snapped;
      }
      m.emplace(x, y);
      return true;
    }
    if (x->is_leaf()) {
      m.emplace(x, x);
      return true;
    }
    if (closed_reduce(x)) {
      // its body re-rolled too (the unrolled taps of a convolution inside a sum over its outputs),
      // opened over fresh bounded Vars so that its reads have closed indices, then closed again
      Expr y = x;
      Box box = reduce_box(x);
      if (x->has_data() && std::all_of(box.begin(), box.end(), [](const auto& d) { return d.second > d.first; })) {
        std::vector<Expr> ks;
        for (const auto& [lo, hi] : box)
          ks.push_back(ctx.var(fmt::format("reroll{}", impl_->opened++), Sort::BV64,
                               Bounds{static_cast<uint64_t>(lo), static_cast<uint64_t>(hi - 1)}));
        Expr body = instantiate_at(ctx, x, ks);
        Expr rolled = (*this)(body);
        if (rolled != body) y = ctx.reduce(x->reduce_op(), ks, box, rolled);
      }
      m.emplace(x, closed_reduce(y) ? normalize_reduce(ctx, y, &impl_->stats) : y);
      return true;
    }
    return false;
  }, [&](Expr x) { m.emplace(x, reroll_node(ctx, rebuild_from_children(ctx, x, m), impl_->opt, &impl_->stats)); });
  return m.at(e);
}

}  // namespace dirigo::ir
