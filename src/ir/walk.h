// Iterative post-order traversal of an expression DAG (no recursion over depth: one location can
// be millions of nodes deep in sums of products), and the bottom-up rebuild on top of it.
#pragma once
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace dirigo::ir {

// Calls visit(e) once for every node below root (root included) for which has(e) is false,
// children before parents; visit must make has(e) true (typically by storing e's result in a memo).
// stop(e) is asked once per such node when it is first reached, before its children: it returns
// true when it has made has(e) true itself (a leaf of the walk: its children are not visited).
// children(e) is the range of e's operands the walk follows, in the order they are pushed (the last
// is visited first).
template <class Children, class Has, class Stop, class Visit>
void walk_post_order(Expr root, Children&& children, Has&& has, Stop&& stop, Visit&& visit) {
  std::vector<std::pair<Expr, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [e, expanded] = stack.back();
    if (has(e)) {
      stack.pop_back();
      continue;
    }
    if (!expanded) {
      if (stop(e)) {
        stack.pop_back();
        continue;
      }
      stack.back().second = true;
      for (Expr c : children(e))
        if (!has(c)) stack.push_back({c, false});
      continue;
    }
    stack.pop_back();
    visit(e);
  }
}

// walk_post_order over every operand.
template <class Has, class Stop, class Visit>
void post_order(Expr root, Has&& has, Stop&& stop, Visit&& visit) {
  walk_post_order(root, [](Expr e) { return e->args(); }, has, stop, visit);
}

template <class Has, class Visit>
void post_order(Expr root, Has&& has, Visit&& visit) {
  post_order(root, has, [](Expr) { return false; }, visit);
}

// x over its children's results in memo (memo.at(c)), through the canonicalizer; x itself when
// no child changed.
template <class Memo>
Expr rebuild_from_children(Context& ctx, Expr x, const Memo& memo) {
  std::vector<Expr> args;
  bool same = true;
  for (Expr c : x->args()) {
    args.push_back(memo.at(c));
    same &= args.back() == c;
  }
  return same ? x : ctx.rebuild(x, args);
}

// root rebuilt bottom-up, results in memo (a map from Expr to Expr): replace(x) returns x's result,
// or nullptr to rebuild x from its children's (rebuild_from_children), which after(x, rebuilt) may
// still change.
template <class Memo, class Replace, class After>
Expr rebuild_post_order(Context& ctx, Expr root, Memo& memo, Replace&& replace, After&& after) {
  auto has = [&](Expr x) { return memo.count(x) > 0; };
  auto stop = [&](Expr x) {
    Expr r = replace(x);
    if (r) memo.emplace(x, r);
    return r != nullptr;
  };
  post_order(root, has, stop, [&](Expr x) { memo.emplace(x, after(x, rebuild_from_children(ctx, x, memo))); });
  return memo.at(root);
}

template <class Memo, class Replace>
Expr rebuild_post_order(Context& ctx, Expr root, Memo& memo, Replace&& replace) {
  return rebuild_post_order(ctx, root, memo, replace, [](Expr, Expr r) { return r; });
}

}  // namespace dirigo::ir
