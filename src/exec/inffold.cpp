#include "exec/inffold.h"

#include <unordered_map>
#include <vector>

#include "ir/walk.h"

namespace dirigo::exec {

using ir::Expr;
using ir::Op;
using ir::Sort;

namespace {

struct Folder {
  ir::Context& ctx;
  Expr ninf = ctx.var("-inf", Sort::Real), pinf = ctx.var("+inf", Sort::Real);
  std::unordered_map<Expr, Expr> memo;

  int inf_sign(Expr x) const { return x == pinf ? 1 : x == ninf ? -1 : 0; }
  Expr inf_of(int s) const { return s > 0 ? pinf : ninf; }

  // x, once its arguments are folded: an infinity absorbed or propagated where the result is exact
  Expr fold_node(Expr x) {
    auto a = x->args();
    switch (x->op) {
      case Op::Add: {
        int s = 0;
        for (Expr t : a) {
          int k = inf_sign(t);
          if (k && s && k != s) return x;  // inf - inf: NaN, not folded
          if (k) s = k;
        }
        return s ? inf_of(s) : x;
      }
      case Op::Mul: {
        int s = 1;
        bool any = false;
        for (Expr t : a) {
          if (int k = inf_sign(t)) { any = true; s *= k; continue; }
          if (t->op != Op::ConstReal || sgn(t->rational()) == 0) return x;  // sign unknown, or 0·inf
          s *= sgn(t->rational());
        }
        return any ? inf_of(s) : x;
      }
      case Op::Max: case Op::Min: {
        Expr identity = x->op == Op::Max ? ninf : pinf, absorbing = x->op == Op::Max ? pinf : ninf;
        std::vector<Expr> keep;
        for (Expr t : a) {
          if (t == absorbing) return absorbing;
          if (t != identity) keep.push_back(t);
        }
        if (keep.size() == a.size()) return x;
        if (keep.empty()) return identity;
        return x->op == Op::Max ? ctx.max(keep) : ctx.min(keep);
      }
      case Op::Abs:
        return inf_sign(a[0]) ? pinf : x;
      case Op::Call: {
        if (a.size() != 1) return x;
        int k = inf_sign(a[0]);
        if (!k) return x;
        switch (x->fn()) {
          case ir::Fn::Exp: case ir::Fn::Exp2: return k < 0 ? ctx.real_const(0) : pinf;
          case ir::Fn::Recip: return ctx.real_const(0);
          case ir::Fn::Tanh: return ctx.real_const(k);
          default: return x;
        }
      }
      case Op::Lt: case Op::Le: {  // finite operands lie strictly between the infinities
        int l = inf_sign(a[0]), r = inf_sign(a[1]);
        if (!l && !r) return x;
        if (l && r) return ctx.bool_const(x->op == Op::Le ? l <= r : l < r);
        if (l) return ctx.bool_const(l < 0);
        return ctx.bool_const(r > 0);
      }
      case Op::Eq: {
        if (a[0]->sort != Sort::Real) return x;
        int l = inf_sign(a[0]), r = inf_sign(a[1]);
        if (!l && !r) return x;
        if (l && r) return ctx.bool_const(l == r);
        return ctx.bool_const(false);
      }
      default:
        return x;
    }
  }

  Expr fold(Expr root) {
    return ir::rebuild_post_order(ctx, root, memo, [](Expr x) { return x->nargs == 0 ? x : nullptr; },
                                  [&](Expr, Expr y) { return y->nargs ? fold_node(y) : y; });
  }
};

}  // namespace

Expr fold_infinities(ir::Context& ctx, Expr e) {
  bool has = false;
  for (Expr l : ir::leaves(e))
    if (l->op == Op::Var && l->sort == Sort::Real && (l->name() == "-inf" || l->name() == "+inf")) has = true;
  if (!has) return e;
  Folder f{ctx};
  return f.fold(e);
}

}  // namespace dirigo::exec
