// Scale limits of a Context: what keeps one location whose expression would reach tens of millions
// of nodes within the check's time and memory budget.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "ir/expr.h"

namespace dirigo::ir {

// MulDistributeConst (c*(a+b) -> c*a + c*b) applies to sums of at most this many terms; a larger
// sum stays factored as c*sum (as a term of another sum it is one monomial). Scaling a batch
// statistic's sum over a GEMM (8M terms) would copy every term, and x - mean would copy them again.
constexpr uint32_t kDistributeConstLimit = 1u << 16;

// A node with more operands than this also counts half its operands toward Limits::max_nodes.
constexpr size_t kWideNode = 64;

// Thrown by a Context's constructors once its limits are exceeded: a location whose expression
// would not fit in memory or time ends promptly instead of swapping.
class LimitExceeded : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Node creation throws LimitExceeded once the Context holds max_nodes node units (node_units()), or (checked every
// 4096 new nodes) once `deadline` has passed. Every long loop of the canonicalizer creates nodes,
// so this bounds expression building without a tick in each loop. Default: no limits.
struct Limits {
  size_t max_nodes = SIZE_MAX;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};
void set_limits(Context& c, const Limits& l);
Limits limits(Context& c);

// Puts back the limits a Context had when the guard was made, on every way out of its scope (a
// LimitExceeded thrown by a narrowed stage included); in between they may be set freely.
class LimitsGuard {
 public:
  explicit LimitsGuard(Context& c) : ctx_(c), saved_(limits(c)) {}
  ~LimitsGuard() { set_limits(ctx_, saved_); }
  LimitsGuard(const LimitsGuard&) = delete;
  LimitsGuard& operator=(const LimitsGuard&) = delete;
  const Limits& saved() const { return saved_; }

 private:
  Context& ctx_;
  Limits saved_;
};

}  // namespace dirigo::ir
