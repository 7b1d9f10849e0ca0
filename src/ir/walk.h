// Iterative post-order traversal of an expression DAG (no recursion over depth: one location can
// be millions of nodes deep in sums of products).
#pragma once
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace dirigo::ir {

// Calls visit(e) once for every node below root (root included) for which has(e) is false,
// children before parents; visit must make has(e) true (typically by storing e's result in a memo).
template <class Has, class Visit>
void post_order(Expr root, Has&& has, Visit&& visit) {
  std::vector<std::pair<Expr, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [e, expanded] = stack.back();
    if (has(e)) {
      stack.pop_back();
      continue;
    }
    if (!expanded) {
      stack.back().second = true;
      for (Expr c : e->args())
        if (!has(c)) stack.push_back({c, false});
      continue;
    }
    stack.pop_back();
    visit(e);
  }
}

}  // namespace dirigo::ir
