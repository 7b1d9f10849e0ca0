// Structural helpers: substitution, leaves, sizes, cut points. All iterative.
#include <algorithm>
#include <unordered_set>

#include "ir/expr_internal.h"
#include "ir/walk.h"

namespace dirigo::ir {
using detail::NodeMap;
using detail::NodeSet;

namespace {
bool is_mapped_leaf(Expr e) { return e->op == Op::Var || e->op == Op::TensorElem || e->op == Op::Load; }
}  // namespace

struct Substituter::Impl {
  Context& ctx;
  LeafMap map;
  NodeMap<Expr> memo;
};

Substituter::Substituter(Context& ctx, LeafMap map) : impl_(std::make_shared<Impl>(Impl{ctx, std::move(map), {}})) {}
void Substituter::clear() { impl_->memo.clear(); }
Expr Substituter::operator()(Expr e) {
  Impl& I = *impl_;
  auto stop = [&](Expr x) -> Expr {
    if (x->nargs) return nullptr;
    if (x->op == Op::Var || x->op == Op::TensorElem)
      if (Expr r = I.map(x)) return r;
    return x;
  };
  auto after = [&](Expr x, Expr r) -> Expr {
    // A rebuilt Load may have folded to an element (or stayed a Load): map it now.
    if (x->op == Op::Load && is_mapped_leaf(r))
      if (Expr m = I.map(r)) return m;
    return r;
  };
  return rebuild_post_order(I.ctx, e, I.memo, stop, after);
}

Expr substitute(Context& ctx, Expr e, const Substituter::LeafMap& map) { return Substituter(ctx, map)(e); }

template <class F>
static void visit_dag(Expr e, F f) {  // f(x) returns false to skip x's children
  NodeSet seen;
  seen.insert(e);
  std::vector<Expr> st{e};
  while (!st.empty()) {
    Expr x = st.back();
    st.pop_back();
    if (!f(x)) continue;
    for (Expr c : x->args())
      if (seen.insert(c)) st.push_back(c);
  }
}

std::vector<Expr> leaves(Expr e) {
  std::vector<Expr> out;
  visit_dag(e, [&](Expr x) {
    if (x->op == Op::Var || x->op == Op::TensorElem || x->op == Op::Load || x->op == Op::Undef) out.push_back(x);
    return true;
  });
  std::sort(out.begin(), out.end(), [](Expr a, Expr b) {
    if (a->hash != b->hash) return a->hash < b->hash;
    if (a->op != b->op) return a->op < b->op;
    if (a->sort != b->sort) return a->sort < b->sort;
    if (a->name() != b->name()) return a->name() < b->name();
    if (a->tensor() != b->tensor()) return a->tensor() < b->tensor();
    if (a->u != b->u) return a->u < b->u;
    return a->v != b->v ? a->v < b->v : a->id < b->id;
  });
  return out;
}

bool contains_op(Expr e, Op op) {
  bool found = false;
  visit_dag(e, [&](Expr x) {
    if (x->op == op) found = true;
    return !found;
  });
  return found;
}

bool depends_on_data(Expr e) { return e->has_data(); }

uint64_t dag_size(Expr e) {
  uint64_t n = 0;
  visit_dag(e, [&](Expr) { ++n; return true; });
  return n;
}

CutResult cut_shared(Context& ctx, Expr a, Expr b) {
  NodeSet in_b;
  visit_dag(b, [&](Expr x) { in_b.insert(x); return true; });
  // Top-down over a: the first common non-leaf node on each path is a maximal cut.
  std::vector<Expr> order;
  visit_dag(a, [&](Expr x) {
    if (x->nargs && !x->has_free_bound() && in_b.count(x)) {  // an open node stands for many values
      order.push_back(x);
      return false;
    }
    return true;
  });
  CutResult r;
  NodeMap<Expr> memo;
  // Deterministic fresh-variable order: sort cuts canonically.
  std::sort(order.begin(), order.end(), [&](Expr x, Expr y) { return ctx.compare(x, y) < 0; });
  for (Expr c : order) {
    Expr v = ctx.fresh_var("cut", c->sort);
    memo.emplace(c, v);
    r.cuts.emplace_back(v, c);
  }
  auto stop = [](Expr x) -> Expr { return x->nargs ? nullptr : x; };
  r.a = rebuild_post_order(ctx, a, memo, stop);
  r.b = rebuild_post_order(ctx, b, memo, stop);
  return r;
}

}  // namespace dirigo::ir
