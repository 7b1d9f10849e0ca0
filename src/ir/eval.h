// Concrete evaluation of expressions, in fp64 (reals as doubles) or IEEE fp32
// (every real operation rounded to float, as a GPU would). Bitvectors are exact.
// Used to confirm witnesses, to cross-check symbolic results against the
// concrete interpreter, and by property tests. Iterative and memoized.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "ir/expr.h"

namespace dirigo::ir {

enum class Precision { F64, F32 };

struct Value {
  Sort sort = Sort::Real;
  double real = 0;      // Real (in F32 mode, always a float-representable value)
  uint64_t bits = 0;    // BV (truncated to width) and Bool (0/1)
  bool undef = false;   // the value depends on an Undef leaf
  static Value of_real(double d) { Value v; v.real = d; return v; }
  static Value of_bv(Sort s, uint64_t b) { Value v; v.sort = s; v.bits = b; return v; }
  static Value of_bool(bool b) { Value v; v.sort = Sort::Bool; v.bits = b; return v; }
};

// Supplies leaf values. Unset callbacks mean "no value": evaluation throws
// std::runtime_error naming the missing leaf.
struct Env {
  std::function<Value(int32_t tensor, int64_t index, Sort sort)> elem;
  std::function<Value(std::string_view name, Sort sort)> var;
  // Set: called every 65,536 evaluated nodes (a deadline throws from it; one evaluation of a giant
  // location's 10^6-10^7 nodes takes seconds).
  std::function<void()> tick;
  // Set: the Real elements of `tensor` are 0 except at the returned indices (sorted; empty: all 0),
  // and finite; nullptr: no such promise for that tensor. A sum, max or min is then evaluated at the
  // points where its body can be nonzero only — its body is 0 wherever a factor read of such a
  // tensor is (docs/ir.md "Sparse points") — with the same result as every point (bit for bit; a
  // max or min whose ties are ±0 may keep the other zero): a domain witness that sets one element per tensor evaluates a 32768² GEMM row in microseconds.
  std::function<const std::vector<int64_t>*(int32_t tensor)> support;
  // With `support`: a reduction of more points than this that no such read restricts throws
  // std::runtime_error instead of being enumerated (0: no limit).
  uint64_t max_dense_points = 0;
};

class Evaluator {
 public:
  Evaluator(const Env& env, Precision p = Precision::F64);
  Value operator()(Expr e);       // memo shared across calls
  double real(Expr e) { return (*this)(e).real; }
  void clear();
 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Reference semantics of a named function in double precision (also used by the SMT witness check).
double apply_fn(Fn f, double x, double y = 0);

}  // namespace dirigo::ir
