// Function-vocabulary normalization before the solver (paper §4.2).
//
// Torch semantics and kernels name the same mathematics differently
// (sigmoid vs 1/(1+exp(-x)), tanh vs 2*sigmoid(2x)-1, ...). Before a query,
// both sides are rewritten into ONE canonical vocabulary:
//
//   Exp, Log, Sqrt, Recip, Erf, GeluErf, Pow (non-integer exponent), the
//   trigonometric / inverse hyperbolic functions, Selu, and the exactly
//   interpreted Floor/Ceil/Round/Trunc/Sign.
//
// Sound identities are always on. Approximation equivalences (gelu_tanh ==
// gelu_erf, fast-math == exact) are switches, on by default. Every rule has a
// name, can be switched off, and counts its applications (for the per-axiom
// tests). The pass is iterative and memoized over the DAG.
//
// SnapConstants is an approximation equivalence: a constant within fp32
// relative error (2^-22) of 1/sqrt(2), sqrt(2), sqrt(2/pi), ln2, log2(e), pi
// or the GELU-tanh 0.044715 (and sqrt(2/pi)*0.044715) becomes ONE canonical
// rational (the f64 value; log2(e) is 1/ln2 exactly so that products cancel).
// That is how a kernel's 0.70710678f and PyTorch's 0.7071067811865476 are
// identified. It is on while gelu_forms or fast_math_is_exact is on and runs
// in the vocabulary pass, after the GELU forms were recognized (those take the
// program's constant within 2^-22 and a small rational scale a:
// t + t*erf(t*0.7071067811865476) -> 2*gelu_erf(t)).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>
#include <string_view>
#include <unordered_map>

#include "ir/expr.h"
#include "smt/deadline.h"

namespace dirigo::smt {

enum class Axiom : uint8_t {
  // ---- sound identities (always on unless switched off for a test)
  SigmoidToExp,    // sigmoid(x) -> 1/(1+exp(-x))
  TanhToExp,       // tanh(x) -> 2*sigmoid(2x) - 1
  SoftplusToLog,   // softplus(x) -> log(1+exp(x))
  Log1pToLog,      // log1p(x) -> log(1+x)
  Expm1ToExp,      // expm1(x) -> exp(x) - 1
  Exp2ToExp,       // exp2(x) -> exp(x*ln2)   (ln2: the reserved Var "!ln2", or the fast-math constant)
  Log2ToLog,       // log2(x) -> log(x)/ln2
  RsqrtToRecip,    // rsqrt(x) -> 1/sqrt(x)
  SiluToSigmoid,   // silu(x) -> x*sigmoid(x)
  MishToTanh,      // mish(x) -> x*tanh(softplus(x))
  EluToExp,        // elu(x) (alpha 1) -> x > 0 ? x : expm1(x)
  ErfcToErf,       // erfc(x) -> 1 - erf(x)
  SinhCoshToExp,   // sinh(x) -> (exp(x)-exp(-x))/2 ; cosh(x) -> (exp(x)+exp(-x))/2
  PowSmallInt,     // pow(x, n) -> x*...*x (|n| <= 8, negative n through Recip); pow(x, ±1/2) -> sqrt
  ExpSum,          // exp(a)*exp(b) -> exp(a+b)
  RecipExp,        // 1/exp(a) -> exp(-a)
  ExpLog,          // exp(k*log(y)) -> y^k for integer |k| <= 8 when y > 0 is provable
  SqrtSquare,      // sqrt(x)*sqrt(x) -> x when x >= 0 is provable
  ExpShift,        // a summand T common to every term's exp argument leaves the sum S = sum_j exp(T + b_j)*r_j:
                   // 1/S -> exp(-T)/S', log(S) -> T + log(S') (max-shifted softmax / logsumexp)
  // ---- approximation equivalences (switches)
  GeluTanhIsErf,   // gelu_tanh(x) -> gelu_erf(x)
  GeluErfForm,     // a*0.5*s*(1 + erf(c*s)), c ~ 1/sqrt(2), a = n/d small (as canonicalized) -> a*gelu_erf(s)
  GeluTanhForm,    // a*0.5*s*(1 + tanh(k*(s + 0.044715*s^3))), k ~ sqrt(2/pi) -> a*gelu_tanh(s)
  FastMathIsExact, // exp2(c*x) with c ~ log2(e) -> exp(x); log2 scaled by the f32 ln2 -> log
  SnapConstants,   // a constant within 2^-22 (relative) of a known irrational -> ONE canonical rational
  SoftplusThreshold,  // x if t < b*x else softplus(b*x)/b -> softplus(b*x)/b, for a threshold t where the two
                      // branches round alike in fp32 (exp(-t) <= t * 2^-24; PyTorch's softplus: t = 20)
  Count_
};
std::string_view axiom_name(Axiom a);
bool axiom_is_approximation(Axiom a);

struct AxiomOptions {
  bool gelu_tanh_is_erf = true;   // approximation equivalence, on by default (paper §4.2)
  bool fast_math_is_exact = true; // approximation equivalence, on by default
  bool gelu_forms = true;         // expanded GELU formulas (f32 constants) are GELU, on by default
  std::array<bool, static_cast<size_t>(Axiom::Count_)> enabled = make_all_on();
  static constexpr std::array<bool, static_cast<size_t>(Axiom::Count_)> make_all_on() {
    std::array<bool, static_cast<size_t>(Axiom::Count_)> a{};
    a.fill(true);
    return a;
  }
  bool on(Axiom a) const;
  void set(Axiom a, bool on_) { enabled[static_cast<size_t>(a)] = on_; }
  uint64_t fingerprint() const;  // part of the result-cache key
};

// Rewrites expressions of one Context into the canonical vocabulary.
// Reuse one Normalizer for both sides of a query (shared memo).
class Normalizer {
 public:
  explicit Normalizer(ir::Context& ctx, AxiomOptions opt = {});
  ir::Expr operator()(ir::Expr e);
  uint64_t applications(Axiom a) const { return counts_[static_cast<size_t>(a)]; }
  uint64_t total_applications() const;
  // Past this deadline every walk throws StageTimeout (not owned; null: no deadline).
  void set_deadline(Ticker* t) { ticker_ = t; }

 private:
  // Bottom-up rebuild of root applying `step` at every node (and again on what it returns).
  ir::Expr walk(ir::Expr root, std::unordered_map<ir::Expr, ir::Expr>& memo, ir::Expr (Normalizer::*step)(ir::Expr));
  ir::Expr rewrite(ir::Expr e);  // one top-level step on a node with normalized children
  ir::Expr recognize_forms(ir::Expr e);  // expanded formulas -> named functions (runs first)
  ir::Expr expand_binomial_forms(ir::Expr e);  // (its helper: a*S*(1 + tanh(u)) over a long S, distributed)
  std::optional<std::pair<ir::Expr, ir::Expr>> exp_shift(ir::Expr s);  // ExpShift: (T, S without it)
  std::optional<std::pair<mpq_class, ir::Expr>> gelu_form(ir::Expr f, const std::vector<ir::Expr>& carriers);
  ir::Expr snap_constant(ir::Expr e);    // SnapConstants on a ConstReal
  ir::Expr rewrite_call(ir::Expr e);
  ir::Expr rewrite_mul(ir::Expr e);
  ir::Expr softplus_threshold(ir::Expr e);  // SoftplusThreshold on an Ite (e itself where it does not apply)
  bool fire(Axiom a);
  ir::Expr ln2();
  ir::Expr small_power(ir::Expr base, int64_t n);

  ir::Context& ctx_;
  AxiomOptions opt_;
  std::unordered_map<ir::Expr, ir::Expr> memo_, forms_memo_;
  std::array<uint64_t, static_cast<size_t>(Axiom::Count_)> counts_{};
  Ticker* ticker_ = nullptr;
};

// Sign facts provable by a shallow syntactic look (bounded depth).
bool provably_nonneg(ir::Expr e);
bool provably_positive(ir::Expr e);

}  // namespace dirigo::smt
