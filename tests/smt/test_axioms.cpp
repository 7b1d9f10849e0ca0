// One applies / does-not-apply pair per axiom (rule), plus an end-to-end check
// that normalized pairs are decided without the solver.
#include <set>

#include <gtest/gtest.h>

#include "ir/print.h"

#include "smt/axioms.h"
#include "smt/decide.h"
#include "smt/translate.h"

using namespace dirigo;
using ir::Expr;
using ir::Fn;
using ir::Sort;
using smt::Axiom;

namespace {

struct AxiomTest : ::testing::Test {
  ir::Context ctx;
  Expr x = ctx.var("x", Sort::Real);
  Expr y = ctx.var("y", Sort::Real);
  Expr one = ctx.real_const(1);
  Expr two = ctx.real_const(2);

  Expr call(Fn f, Expr a) { return ctx.call(f, a); }
  Expr sigmoid_exp(Expr a) { return call(Fn::Recip, ctx.add(one, call(Fn::Exp, ctx.neg(a)))); }

  // Normalizes `in`; expects `want` (pointer-equal) and that `axiom` fired.
  void applies(Axiom axiom, Expr in, Expr want, smt::AxiomOptions opt = {}) {
    smt::Normalizer n(ctx, opt);
    Expr got = n(in);
    EXPECT_EQ(got, want) << smt::axiom_name(axiom) << ": got " << ir::to_string(ctx, got) << " want "
                         << ir::to_string(ctx, want);
    EXPECT_GE(n.applications(axiom), 1u) << smt::axiom_name(axiom);
  }
  // Normalizes `in`; expects it unchanged and that `axiom` did not fire.
  void does_not_apply(Axiom axiom, Expr in, smt::AxiomOptions opt = {}) {
    smt::Normalizer n(ctx, opt);
    EXPECT_EQ(n(in), in) << smt::axiom_name(axiom);
    EXPECT_EQ(n.applications(axiom), 0u) << smt::axiom_name(axiom);
  }
  smt::AxiomOptions without(Axiom a) {
    smt::AxiomOptions o;
    o.set(a, false);
    return o;
  }
};

}  // namespace

TEST_F(AxiomTest, SigmoidToExp) {
  applies(Axiom::SigmoidToExp, call(Fn::Sigmoid, x), sigmoid_exp(x));
  does_not_apply(Axiom::SigmoidToExp, call(Fn::Sigmoid, x), without(Axiom::SigmoidToExp));
  does_not_apply(Axiom::SigmoidToExp, call(Fn::Exp, x));
}

TEST_F(AxiomTest, TanhToExp) {
  Expr want = ctx.sub(ctx.mul(two, sigmoid_exp(ctx.mul(two, x))), one);
  applies(Axiom::TanhToExp, call(Fn::Tanh, x), want);
  does_not_apply(Axiom::TanhToExp, call(Fn::Tanh, x), without(Axiom::TanhToExp));
}

TEST_F(AxiomTest, SoftplusToLog) {
  applies(Axiom::SoftplusToLog, call(Fn::Softplus, x), call(Fn::Log, ctx.add(one, call(Fn::Exp, x))));
  does_not_apply(Axiom::SoftplusToLog, call(Fn::Log, ctx.add(one, call(Fn::Exp, x))));
}

TEST_F(AxiomTest, Log1pToLog) {
  applies(Axiom::Log1pToLog, call(Fn::Log1p, x), call(Fn::Log, ctx.add(one, x)));
  does_not_apply(Axiom::Log1pToLog, call(Fn::Log, x));
}

TEST_F(AxiomTest, Expm1ToExp) {
  applies(Axiom::Expm1ToExp, call(Fn::Expm1, x), ctx.sub(call(Fn::Exp, x), one));
  does_not_apply(Axiom::Expm1ToExp, call(Fn::Expm1, x), without(Axiom::Expm1ToExp));
}

TEST_F(AxiomTest, Exp2ToExpExact) {
  smt::AxiomOptions exact;
  exact.fast_math_is_exact = false;
  Expr ln2 = ctx.var(smt::kLn2Var, Sort::Real);
  applies(Axiom::Exp2ToExp, call(Fn::Exp2, x), call(Fn::Exp, ctx.mul(x, ln2)), exact);
  exact.set(Axiom::Exp2ToExp, false);
  does_not_apply(Axiom::Exp2ToExp, call(Fn::Exp2, x), exact);
}

TEST_F(AxiomTest, Log2ToLogExact) {
  smt::AxiomOptions exact;
  exact.fast_math_is_exact = false;
  Expr ln2 = ctx.var(smt::kLn2Var, Sort::Real);
  applies(Axiom::Log2ToLog, call(Fn::Log2, x), ctx.mul(call(Fn::Log, x), call(Fn::Recip, ln2)), exact);
  does_not_apply(Axiom::Log2ToLog, call(Fn::Log, x), exact);
}

TEST_F(AxiomTest, FastMathExp2OfScaledArgumentIsExp) {
  // nvcc's fast exp: ex2.approx(x * 1.4426950f)
  Expr c = ctx.real_const_from_double(static_cast<float>(1.4426950408889634));
  applies(Axiom::FastMathIsExact, call(Fn::Exp2, ctx.mul(c, x)), call(Fn::Exp, x));
  // also through an affine argument (online softmax: (x - m) * log2e)
  Expr arg = ctx.mul(c, ctx.sub(x, y));
  applies(Axiom::FastMathIsExact, call(Fn::Exp2, arg), call(Fn::Exp, ctx.sub(x, y)));
  smt::AxiomOptions exact;
  exact.fast_math_is_exact = false;
  smt::Normalizer n(ctx, exact);
  EXPECT_NE(n(call(Fn::Exp2, ctx.mul(c, x))), call(Fn::Exp, x));
  EXPECT_EQ(n.applications(Axiom::FastMathIsExact), 0u);
}

TEST_F(AxiomTest, FastMathLog2ScaledIsLog) {
  Expr c = ctx.real_const_from_double(static_cast<float>(0.6931471805599453));
  applies(Axiom::FastMathIsExact, ctx.mul(c, call(Fn::Log2, x)), call(Fn::Log, x));
}

TEST_F(AxiomTest, RsqrtToRecip) {
  applies(Axiom::RsqrtToRecip, call(Fn::Rsqrt, x), call(Fn::Recip, call(Fn::Sqrt, x)));
  does_not_apply(Axiom::RsqrtToRecip, call(Fn::Sqrt, x));
}

TEST_F(AxiomTest, SiluToSigmoid) {
  applies(Axiom::SiluToSigmoid, call(Fn::Silu, x), ctx.mul(x, sigmoid_exp(x)));
  does_not_apply(Axiom::SiluToSigmoid, call(Fn::Silu, x), without(Axiom::SiluToSigmoid));
}

TEST_F(AxiomTest, MishToTanh) {
  smt::Normalizer n(ctx);
  Expr want = n(ctx.mul(x, call(Fn::Tanh, call(Fn::Softplus, x))));
  applies(Axiom::MishToTanh, call(Fn::Mish, x), want);
  does_not_apply(Axiom::MishToTanh, call(Fn::Mish, x), without(Axiom::MishToTanh));
}

TEST_F(AxiomTest, EluToExp) {
  Expr want = ctx.ite(ctx.lt(ctx.real_const(0), x), x, ctx.sub(call(Fn::Exp, x), one));
  applies(Axiom::EluToExp, call(Fn::Elu, x), want);
  does_not_apply(Axiom::EluToExp, call(Fn::Elu, x), without(Axiom::EluToExp));
}

TEST_F(AxiomTest, ErfcToErf) {
  applies(Axiom::ErfcToErf, call(Fn::Erfc, x), ctx.sub(one, call(Fn::Erf, x)));
  does_not_apply(Axiom::ErfcToErf, call(Fn::Erf, x));
}

TEST_F(AxiomTest, SinhCoshToExp) {
  Expr half = ctx.real_const(mpq_class(1, 2));
  applies(Axiom::SinhCoshToExp, call(Fn::Sinh, x),
          ctx.mul(half, ctx.sub(call(Fn::Exp, x), call(Fn::Exp, ctx.neg(x)))));
  applies(Axiom::SinhCoshToExp, call(Fn::Cosh, x),
          ctx.mul(half, ctx.add(call(Fn::Exp, x), call(Fn::Exp, ctx.neg(x)))));
  does_not_apply(Axiom::SinhCoshToExp, call(Fn::Asinh, x));
}

TEST_F(AxiomTest, PowSmallInt) {
  applies(Axiom::PowSmallInt, ctx.call(Fn::Pow, x, ctx.real_const(3)), ctx.mul(ctx.mul(x, x), x));
  applies(Axiom::PowSmallInt, ctx.call(Fn::Pow, x, ctx.real_const(-2)), call(Fn::Recip, ctx.mul(x, x)));
  applies(Axiom::PowSmallInt, ctx.call(Fn::Pow, x, ctx.real_const(0)), one);
  applies(Axiom::PowSmallInt, ctx.call(Fn::Pow, x, ctx.real_const(mpq_class(1, 2))), call(Fn::Sqrt, x));
  does_not_apply(Axiom::PowSmallInt, ctx.call(Fn::Pow, x, ctx.real_const(mpq_class(5, 2))));
  does_not_apply(Axiom::PowSmallInt, ctx.call(Fn::Pow, x, ctx.real_const(9)));
  does_not_apply(Axiom::PowSmallInt, ctx.call(Fn::Pow, x, y));
}

TEST_F(AxiomTest, ExpSum) {
  applies(Axiom::ExpSum, ctx.mul(call(Fn::Exp, x), call(Fn::Exp, y)), call(Fn::Exp, ctx.add(x, y)));
  applies(Axiom::ExpSum, ctx.mul(y, ctx.mul(call(Fn::Exp, x), call(Fn::Exp, x))),
          ctx.mul(y, call(Fn::Exp, ctx.mul(two, x))));
  does_not_apply(Axiom::ExpSum, ctx.mul(y, call(Fn::Exp, x)));
}

TEST_F(AxiomTest, RecipExp) {
  applies(Axiom::RecipExp, call(Fn::Recip, call(Fn::Exp, x)), call(Fn::Exp, ctx.neg(x)));
  does_not_apply(Axiom::RecipExp, call(Fn::Recip, call(Fn::Log, x)));
}

// A max-shifted softmax and log-sum-exp read as the unshifted ones (examples/execute_bugs/softmax_correct,
// dev pair 052): the shared summand -m leaves the sum of exponentials.
TEST_F(AxiomTest, ExpShift) {
  Expr z = ctx.var("z", Sort::Real), m = ctx.max(x, ctx.max(y, z));
  Expr shifted = ctx.add(std::vector<Expr>{call(Fn::Exp, ctx.sub(x, m)), call(Fn::Exp, ctx.sub(y, m)),
                                           ctx.mul(two, call(Fn::Exp, ctx.sub(z, m)))});
  Expr plain = ctx.add(std::vector<Expr>{call(Fn::Exp, x), call(Fn::Exp, y), ctx.mul(two, call(Fn::Exp, z))});
  applies(Axiom::ExpShift, call(Fn::Log, shifted), ctx.add(ctx.neg(m), call(Fn::Log, plain)));
  applies(Axiom::ExpShift, call(Fn::Recip, shifted), ctx.mul(call(Fn::Exp, m), call(Fn::Recip, plain)));
  // the softmax itself: exp(x - m) / shifted == exp(x) / plain, without the solver
  smt::Solver solver;
  smt::Decision d = solver.decide(ctx, ctx.mul(call(Fn::Exp, ctx.sub(x, m)), call(Fn::Recip, shifted)),
                                  ctx.mul(call(Fn::Exp, x), call(Fn::Recip, plain)));
  EXPECT_EQ(d.verdict, smt::Verdict::Equal) << d.reason;
  EXPECT_FALSE(d.solver_called);
  // no summand in every term / a term without an exponential / switched off
  does_not_apply(Axiom::ExpShift, call(Fn::Log, ctx.add(call(Fn::Exp, ctx.sub(x, m)), call(Fn::Exp, y))));
  does_not_apply(Axiom::ExpShift, call(Fn::Log, ctx.add(call(Fn::Exp, ctx.sub(x, m)), ctx.sub(y, m))));
  does_not_apply(Axiom::ExpShift, call(Fn::Recip, shifted), without(Axiom::ExpShift));
}

TEST_F(AxiomTest, ExpLog) {
  Expr pos = ctx.add(one, call(Fn::Exp, y));  // provably > 0
  applies(Axiom::ExpLog, call(Fn::Exp, call(Fn::Log, pos)), pos);
  smt::Normalizer n(ctx);  // (1+e^y)^2 expands, and e^y*e^y becomes e^(2y)
  applies(Axiom::ExpLog, call(Fn::Exp, ctx.mul(ctx.real_const(-2), call(Fn::Log, pos))),
          n(call(Fn::Recip, ctx.mul(pos, pos))));
  does_not_apply(Axiom::ExpLog, call(Fn::Exp, call(Fn::Log, x)));  // x may be <= 0
}

TEST_F(AxiomTest, SqrtSquare) {
  Expr nonneg = ctx.mul(x, x);
  Expr s = call(Fn::Sqrt, nonneg);
  applies(Axiom::SqrtSquare, ctx.mul(s, s), nonneg);
  Expr sx = call(Fn::Sqrt, x);  // x may be negative: sqrt(x)^2 is NaN there, not x
  does_not_apply(Axiom::SqrtSquare, ctx.mul(sx, sx));
}

TEST_F(AxiomTest, GeluTanhIsErf) {
  applies(Axiom::GeluTanhIsErf, call(Fn::GeluTanh, x), call(Fn::GeluErf, x));
  smt::AxiomOptions strict;
  strict.gelu_tanh_is_erf = false;
  does_not_apply(Axiom::GeluTanhIsErf, call(Fn::GeluTanh, x), strict);
}

TEST_F(AxiomTest, SoftplusThreshold) {
  smt::Normalizer n(ctx);
  Expr sp = n(call(Fn::Softplus, x));
  Expr twenty = ctx.real_const(20);
  // F.softplus's linear region, spelled with softplus, log1p(exp) or as where(x <= t, .., x)
  applies(Axiom::SoftplusThreshold, ctx.ite(ctx.lt(twenty, x), x, call(Fn::Softplus, x)), sp);
  applies(Axiom::SoftplusThreshold, ctx.ite(ctx.lt(twenty, x), x, call(Fn::Log1p, call(Fn::Exp, x))), sp);
  applies(Axiom::SoftplusThreshold, ctx.ite(ctx.le(x, twenty), call(Fn::Log1p, call(Fn::Exp, x)), x), sp);
  // beta 2: 2x > 20 ? x : softplus(2x)/2, also of a sum
  for (Expr v : {x, ctx.add(x, y)}) {
    Expr bx = ctx.mul(two, v);
    Expr half_sp = ctx.div(call(Fn::Softplus, bx), two);
    applies(Axiom::SoftplusThreshold, ctx.ite(ctx.lt(twenty, bx), v, half_sp), n(half_sp));
  }
  // not: a threshold where the branches differ in fp32 (exp(-5) is 1e-3 of x), another value than x,
  // another function, or switched off
  does_not_apply(Axiom::SoftplusThreshold, ctx.ite(ctx.lt(ctx.real_const(5), x), x, sp));
  does_not_apply(Axiom::SoftplusThreshold, ctx.ite(ctx.lt(twenty, x), y, sp));
  Expr e = n(call(Fn::Exp, x));
  does_not_apply(Axiom::SoftplusThreshold, ctx.ite(ctx.lt(twenty, x), x, e));
  does_not_apply(Axiom::SoftplusThreshold, ctx.ite(ctx.lt(twenty, x), x, sp), without(Axiom::SoftplusThreshold));
  EXPECT_TRUE(smt::axiom_is_approximation(Axiom::SoftplusThreshold));
}

TEST_F(AxiomTest, MishOfThresholdedSoftplusIsMishModuloTheThreshold) {
  // torch's mish kernel has no threshold; its decomposition through F.softplus does
  smt::Solver solver;
  Expr thresholded = ctx.ite(ctx.lt(ctx.real_const(20), x), x, call(Fn::Log1p, call(Fn::Exp, x)));
  smt::Decision d = solver.decide(ctx, call(Fn::Mish, x), ctx.mul(x, call(Fn::Tanh, thresholded)), {});
  EXPECT_EQ(d.verdict, smt::Verdict::Equal) << d.reason;
  EXPECT_EQ(d.approximations, std::vector<std::string>{"SoftplusThreshold"});
  smt::DecideOptions exact;
  exact.axioms.set(Axiom::SoftplusThreshold, false);
  EXPECT_NE(solver.decide(ctx, call(Fn::Mish, x), ctx.mul(x, call(Fn::Tanh, thresholded)), exact).verdict,
            smt::Verdict::Equal);
}

TEST_F(AxiomTest, EveryAxiomHasADistinctName) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < static_cast<size_t>(Axiom::Count_); ++i) names.insert(smt::axiom_name(static_cast<Axiom>(i)));
  EXPECT_EQ(names.size(), static_cast<size_t>(Axiom::Count_));
  EXPECT_TRUE(smt::axiom_is_approximation(Axiom::GeluTanhIsErf));
  EXPECT_FALSE(smt::axiom_is_approximation(Axiom::SigmoidToExp));
}

TEST_F(AxiomTest, SignFacts) {
  EXPECT_TRUE(smt::provably_nonneg(ctx.mul(x, x)));
  EXPECT_TRUE(smt::provably_positive(ctx.add(one, call(Fn::Exp, x))));
  EXPECT_FALSE(smt::provably_positive(ctx.mul(x, x)));
  EXPECT_FALSE(smt::provably_nonneg(ctx.mul(x, y)));
  EXPECT_TRUE(smt::provably_nonneg(ctx.max(x, ctx.abs(y))));
}

// ---- end to end: kernel spellings vs torch spellings decided without Z3

TEST_F(AxiomTest, KernelAndTorchSpellingsAreEqualWithoutSolver) {
  smt::Solver solver;
  smt::DecideOptions opt;
  auto equal_by_axioms = [&](Expr a, Expr b) {
    smt::Decision d = solver.decide(ctx, a, b, opt);
    EXPECT_EQ(d.verdict, smt::Verdict::Equal) << ir::to_string(ctx, a) << " vs " << ir::to_string(ctx, b) << ": " << d.reason;
    EXPECT_FALSE(d.solver_called);
  };
  // sigmoid vs 1/(1+exp(-x))
  equal_by_axioms(call(Fn::Sigmoid, x), ctx.div(one, ctx.add(one, call(Fn::Exp, ctx.neg(x)))));
  // tanh(x) vs 2*sigmoid(2x) - 1
  equal_by_axioms(call(Fn::Tanh, x), ctx.sub(ctx.mul(two, call(Fn::Sigmoid, ctx.mul(two, x))), one));
  // silu vs x * sigmoid
  equal_by_axioms(call(Fn::Silu, x), ctx.mul(x, call(Fn::Sigmoid, x)));
  // softplus vs log1p(exp)
  equal_by_axioms(call(Fn::Softplus, x), call(Fn::Log1p, call(Fn::Exp, x)));
  // exp(a)*exp(b) vs exp(a+b); 1/exp(x) vs exp(-x)
  equal_by_axioms(ctx.mul(call(Fn::Exp, x), call(Fn::Exp, y)), call(Fn::Exp, ctx.add(y, x)));
  equal_by_axioms(ctx.div(one, call(Fn::Exp, x)), call(Fn::Exp, ctx.neg(x)));
  // gelu approximation equivalence (on by default)
  equal_by_axioms(call(Fn::GeluTanh, x), call(Fn::GeluErf, x));
  EXPECT_EQ(solver.stats().solver_calls, 0u);
}

TEST_F(AxiomTest, GeluApproximationOffIsNotEqual) {
  smt::Solver solver;
  smt::DecideOptions opt;
  opt.axioms.gelu_tanh_is_erf = false;
  smt::Decision d = solver.decide(ctx, call(Fn::GeluTanh, x), call(Fn::GeluErf, x), opt);
  EXPECT_NE(d.verdict, smt::Verdict::Equal);
  if (d.verdict == smt::Verdict::Differ) {
    ir::Evaluator ev(d.witness->env());
    EXPECT_NE(ev.real(call(Fn::GeluTanh, x)), ev.real(call(Fn::GeluErf, x)));
  }
}

// ---- expanded GELU formulas (as kernels write them, with f32 constants)

namespace {
Expr k32(ir::Context& ctx, double v) { return ctx.real_const_from_double(static_cast<float>(v)); }
Expr erf_form(ir::Context& ctx, Expr s, double c = 0.7071067811865476) {
  return ctx.mul(ctx.mul(k32(ctx, 0.5), s), ctx.add(k32(ctx, 1), ctx.call(Fn::Erf, ctx.mul(s, k32(ctx, c)))));
}
Expr tanh_form(ir::Context& ctx, Expr s) {
  Expr cube = ctx.mul(s, ctx.mul(s, s));
  Expr inner = ctx.mul(k32(ctx, 0.7978845608028654), ctx.add(s, ctx.mul(k32(ctx, 0.044715), cube)));
  return ctx.mul(ctx.mul(k32(ctx, 0.5), s), ctx.add(k32(ctx, 1), ctx.call(Fn::Tanh, inner)));
}
}  // namespace

TEST_F(AxiomTest, GeluErfForm) {
  Expr z = ctx.var("z", Sort::Real), b = ctx.var("b", Sort::Real);
  for (Expr s : {x, ctx.add(x, y), ctx.add(ctx.mul(x, y), z)}) {
    applies(Axiom::GeluErfForm, erf_form(ctx, s), call(Fn::GeluErf, s));
    applies(Axiom::GeluErfForm, ctx.add(erf_form(ctx, s), b), ctx.add(call(Fn::GeluErf, s), b));  // + bias
  }
  // x / sqrtf(2) instead of x * 0.70710678f
  Expr via_div = ctx.mul(ctx.mul(k32(ctx, 0.5), x),
                         ctx.add(one, call(Fn::Erf, ctx.div(x, k32(ctx, 1.4142135623730951)))));
  applies(Axiom::GeluErfForm, via_div, call(Fn::GeluErf, x));
  does_not_apply(Axiom::GeluErfForm, erf_form(ctx, x, 0.5));  // not 1/sqrt(2)
  Expr no_linear = ctx.mul(ctx.mul(k32(ctx, 0.5), x), call(Fn::Erf, ctx.mul(x, k32(ctx, 0.7071067811865476))));
  smt::Normalizer n(ctx);
  n(no_linear);
  EXPECT_EQ(n.applications(Axiom::GeluErfForm), 0u);
  smt::AxiomOptions off;
  off.gelu_forms = false;
  smt::Normalizer n_off(ctx, off);
  EXPECT_NE(n_off(erf_form(ctx, x)), call(Fn::GeluErf, x));
  EXPECT_EQ(n_off.applications(Axiom::GeluErfForm), 0u);
}

TEST_F(AxiomTest, GeluTanhForm) {
  smt::AxiomOptions keep_tanh;
  keep_tanh.gelu_tanh_is_erf = false;
  for (Expr s : {x, ctx.add(x, y)}) applies(Axiom::GeluTanhForm, tanh_form(ctx, s), call(Fn::GeluTanh, s), keep_tanh);
  // with the approximation equivalence on (default) it ends as gelu_erf
  applies(Axiom::GeluTanhForm, tanh_form(ctx, x), call(Fn::GeluErf, x));
  // a different cubic coefficient is not GELU
  Expr cube = ctx.mul(x, ctx.mul(x, x));
  Expr inner = ctx.mul(k32(ctx, 0.7978845608028654), ctx.add(x, ctx.mul(k32(ctx, 0.05), cube)));
  Expr other = ctx.mul(ctx.mul(k32(ctx, 0.5), x), ctx.add(one, call(Fn::Tanh, inner)));
  smt::Normalizer n(ctx, keep_tanh);
  n(other);
  EXPECT_EQ(n.applications(Axiom::GeluTanhForm), 0u);
}

// GELU of a long sum (dev pair 018: 128 pooled minima): 0.5*S*(1 + tanh(..)) stays a product, too
// large to distribute; its binomial factor is expanded for the recognition.
TEST_F(AxiomTest, GeluFormsOfALongSum) {
  smt::AxiomOptions keep_tanh;
  keep_tanh.gelu_tanh_is_erf = false;
  int32_t t = ctx.tensor("axioms:long_sum");
  std::vector<Expr> terms;
  for (int64_t i = 0; i < 100; ++i) terms.push_back(ctx.elem(t, i));
  Expr s = ctx.add(terms);
  applies(Axiom::GeluTanhForm, tanh_form(ctx, s), call(Fn::GeluTanh, s), keep_tanh);
  applies(Axiom::GeluErfForm, erf_form(ctx, s), call(Fn::GeluErf, s));
  Expr b = ctx.var("b", Sort::Real);
  applies(Axiom::GeluErfForm, ctx.add(erf_form(ctx, s), b), ctx.add(call(Fn::GeluErf, s), b));
}

// GELU of a ReLU output: MulDistributeMinMax moves every constant into a max factor, so the kernel's
// 0.5*s and k*0.044715*s^3 read max(0, x/2) and s*s*max(0, c*x) — or, with k shared by the linear
// term, s*max(0, 0.044715*x)*max(0, k*x) (dev pair 040, labelled correct, was SUSPECT).
TEST_F(AxiomTest, GeluTanhFormOfAReluOutput) {
  smt::AxiomOptions keep_tanh;
  keep_tanh.gelu_tanh_is_erf = false;
  Expr zero = ctx.real_const(0);
  Expr s = ctx.max(zero, x);
  applies(Axiom::GeluTanhForm, tanh_form(ctx, s), call(Fn::GeluTanh, s), keep_tanh);
  auto relu_of = [&](double c) { return ctx.max(zero, ctx.mul(k32(ctx, c), x)); };
  Expr k_x = relu_of(0.7978845608028654), half = relu_of(0.5);
  Expr inner = ctx.add(ctx.mul(std::vector<Expr>{s, relu_of(0.044715), k_x}), k_x);
  Expr kernel = ctx.add(ctx.mul(ctx.call(Fn::Tanh, inner), half), half);
  applies(Axiom::GeluTanhForm, kernel, call(Fn::GeluTanh, s), keep_tanh);
  // the cubic's constant is no 0.044715 wherever it sits: not GELU
  Expr off = ctx.add(ctx.mul(ctx.call(Fn::Tanh, ctx.add(ctx.mul(std::vector<Expr>{s, relu_of(0.05), k_x}), k_x)), half),
                     half);
  smt::Normalizer n(ctx, keep_tanh);
  n(off);
  EXPECT_EQ(n.applications(Axiom::GeluTanhForm), 0u);
}

TEST_F(AxiomTest, KernelGeluEqualsTorchGeluWithoutSolver) {
  smt::Solver solver;
  int32_t t = ctx.tensor("conv");
  Expr s = ctx.add(ctx.mul(ctx.elem(t, 0), ctx.elem(t, 1)), ctx.elem(t, 2));
  Expr bias = ctx.elem(t, 3);
  for (Expr kernel : {erf_form(ctx, s), tanh_form(ctx, s)}) {
    smt::Decision d = solver.decide(ctx, ctx.add(call(Fn::GeluErf, s), bias), ctx.add(kernel, bias));
    EXPECT_EQ(d.verdict, smt::Verdict::Equal) << d.reason;
    EXPECT_FALSE(d.solver_called);
  }
}

// ---- constants snapped to one canonical rational per irrational

TEST_F(AxiomTest, SnapConstants) {
  const Expr c64 = ctx.real_const_from_double(0.7071067811865476);  // PyTorch's 1/sqrt(2): canonical
  // the f32 spelling snaps to the f64 one, also as a small multiple (sqrt(2) = 2/sqrt(2))
  applies(Axiom::SnapConstants, call(Fn::Erf, ctx.mul(k32(ctx, 0.7071067811865476), x)), call(Fn::Erf, ctx.mul(c64, x)));
  applies(Axiom::SnapConstants, ctx.mul(k32(ctx, 1.4142135623730951), x), ctx.mul(ctx.mul(two, c64), x));
  applies(Axiom::SnapConstants, ctx.mul(k32(ctx, -0.7071067811865476), x), ctx.mul(ctx.neg(c64), x));
  // log2(e) snaps to exactly 1/ln2 (so that canonical ln2*log2e products cancel)
  mpq_class ln2_64(0.6931471805599453);
  applies(Axiom::SnapConstants, ctx.mul(k32(ctx, 1.4426950408889634), call(Fn::Log, x)),
          ctx.mul(ctx.real_const(mpq_class(1 / ln2_64)), call(Fn::Log, x)));
  // plain small rationals: f32 1/6 (hardswish), 0.1f and 1 + 2^-25 snap to 1/6, 1/10 and 1
  applies(Axiom::SnapConstants, ctx.mul(k32(ctx, 1.0 / 6), x), ctx.mul(ctx.real_const(mpq_class(1, 6)), x));
  applies(Axiom::SnapConstants, ctx.mul(ctx.real_const_from_double(0.1), x), ctx.mul(ctx.real_const(mpq_class(1, 10)), x));
  applies(Axiom::SnapConstants, ctx.min(ctx.real_const(mpq_class(33554433, 33554432)), x), ctx.min(one, x));
  // decimal scales: a norm's eps 1e-5f is PyTorch's double 1e-5 (and 1e-6 stays apart from it)
  applies(Axiom::SnapConstants, ctx.add(k32(ctx, 1e-5), x), ctx.add(ctx.real_const(mpq_class(1, 100000)), x));
  applies(Axiom::SnapConstants, ctx.add(k32(ctx, 1e-6), x), ctx.add(ctx.real_const(mpq_class(1, 1000000)), x));
  // not near a known irrational or small rational / canonical already / switched off
  does_not_apply(Axiom::SnapConstants, call(Fn::Erf, ctx.mul(k32(ctx, 0.7123), x)));
  does_not_apply(Axiom::SnapConstants, ctx.mul(ctx.real_const(mpq_class(1, 6)), x));
  does_not_apply(Axiom::SnapConstants, call(Fn::Erf, ctx.mul(ctx.real_const_from_double(0.70710), x)));
  does_not_apply(Axiom::SnapConstants, ctx.mul(c64, x));
  does_not_apply(Axiom::SnapConstants, ctx.mul(k32(ctx, 0.7071067811865476), x), without(Axiom::SnapConstants));
  smt::AxiomOptions exact;
  exact.fast_math_is_exact = false;
  exact.gelu_forms = false;
  does_not_apply(Axiom::SnapConstants, ctx.mul(k32(ctx, 0.7071067811865476), x), exact);
}

TEST_F(AxiomTest, ScaledGeluFormsAreGelu) {
  const Expr c64 = ctx.real_const_from_double(0.7071067811865476);
  // torch: y * (1 + erf(y * 0.7071067811865476)) == 2 * gelu(y)
  Expr doubled = ctx.mul(y, ctx.add(one, call(Fn::Erf, ctx.mul(y, c64))));
  applies(Axiom::GeluErfForm, doubled, ctx.mul(two, call(Fn::GeluErf, y)));
  // f32 spelling, scale 3, argument (x+y)
  Expr s = ctx.add(x, y);
  Expr tripled = ctx.mul(ctx.mul(k32(ctx, 1.5), s), ctx.add(one, call(Fn::Erf, ctx.mul(k32(ctx, 0.7071067811865476), s))));
  applies(Axiom::GeluErfForm, tripled, ctx.mul(ctx.real_const(3), call(Fn::GeluErf, s)));
  // erf(sqrt(2)*x) is gelu of 2x
  Expr of_2x = ctx.add(x, ctx.mul(x, call(Fn::Erf, ctx.mul(k32(ctx, 1.4142135623730951), x))));
  applies(Axiom::GeluErfForm, of_2x, call(Fn::GeluErf, ctx.mul(two, x)));
  // scaled tanh form (kept as gelu_tanh with the approximation off)
  smt::AxiomOptions keep_tanh;
  keep_tanh.gelu_tanh_is_erf = false;
  applies(Axiom::GeluTanhForm, ctx.mul(two, tanh_form(ctx, s)), ctx.mul(two, call(Fn::GeluTanh, s)), keep_tanh);
  // a different erf scale is not GELU
  Expr off_scale = ctx.add(x, ctx.mul(x, call(Fn::Erf, ctx.mul(k32(ctx, 0.7), x))));
  smt::Normalizer n(ctx);
  n(off_scale);
  EXPECT_EQ(n.applications(Axiom::GeluErfForm), 0u);
}

TEST_F(AxiomTest, ScaledGeluEqualsTorchGeluWithoutSolver) {
  smt::Solver solver;
  Expr torch_form = ctx.mul(x, ctx.add(one, call(Fn::Erf, ctx.mul(x, ctx.real_const_from_double(0.7071067811865476)))));
  smt::Decision d = solver.decide(ctx, ctx.mul(two, call(Fn::GeluErf, x)), torch_form);
  EXPECT_EQ(d.verdict, smt::Verdict::Equal) << d.reason;
  EXPECT_FALSE(d.solver_called);
}

// hardtanh then GELU in a kernel: h = clamp(S/2, -2, 2), 0.5f*h*(1 + erff(h*0.70710678f)). The
// canonical forms move both scales into the clamps (min(1, max(-1, S/4)) and min(√2f, max(-√2f, …)))
// and torch's gelu of the clamp is one call.
TEST_F(AxiomTest, AGeluOfAClampIsTorchsGeluOfTheClamp) {
  smt::Solver solver;
  int32_t t = ctx.tensor("gemm");
  std::vector<Expr> terms;
  for (int64_t q = 0; q < 16; ++q) terms.push_back(ctx.mul(ctx.elem(t, q), ctx.elem(t, 100 + q)));
  Expr S = ctx.add(terms);
  Expr h = ctx.min(two, ctx.max(ctx.real_const(-2), ctx.mul(ctx.real_const(mpq_class(1, 2)), S)));
  Expr kernel = ctx.mul(std::vector<Expr>{k32(ctx, 0.5), h,
                                          ctx.add(one, call(Fn::Erf, ctx.mul(h, k32(ctx, 0.7071067811865476))))});
  smt::Normalizer n(ctx);
  n(kernel);
  EXPECT_EQ(n.applications(Axiom::GeluErfForm), 1u) << ir::to_string(ctx, kernel);
  smt::Decision d = solver.decide(ctx, call(Fn::GeluErf, h), kernel);
  EXPECT_EQ(d.verdict, smt::Verdict::Equal) << d.reason;
  EXPECT_FALSE(d.solver_called);
}

// A global average pool over expanded GELUs: every form of one sum is recognized in one pass
// (the sum used to be rescanned per candidate and rebuilt per form: cubic in the pooled size).
TEST_F(AxiomTest, GeluErfFormsOfAPooledSumAllAtOnce) {
  constexpr int kN = 300;
  int32_t t = ctx.tensor("in:pool");
  std::vector<Expr> forms, gelus;
  for (int i = 0; i < kN; ++i) {
    Expr s = ctx.add(ctx.elem(t, 2 * i), ctx.elem(t, 2 * i + 1));  // a conv output: a sum itself
    forms.push_back(erf_form(ctx, s));
    gelus.push_back(call(Fn::GeluErf, s));
  }
  Expr mean = ctx.mul(ctx.real_const(mpq_class(1, kN)), ctx.add(forms));
  smt::Normalizer n(ctx);
  EXPECT_EQ(n(mean), ctx.mul(ctx.real_const(mpq_class(1, kN)), ctx.add(gelus)));
  EXPECT_EQ(n.applications(Axiom::GeluErfForm), uint64_t(kN));
}

// Past its deadline a normalization stops with StageTimeout naming the stage.
TEST_F(AxiomTest, PassedDeadlineStopsNormalizationNamingIt) {
  int32_t t = ctx.tensor("in:big");
  std::vector<Expr> terms;
  for (int i = 0; i < 5000; ++i) terms.push_back(call(Fn::Sigmoid, ctx.elem(t, i)));
  smt::Ticker passed(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  smt::Normalizer n(ctx);
  n.set_deadline(&passed);
  try {
    n(ctx.add(terms));
    FAIL() << "no StageTimeout";
  } catch (const smt::StageTimeout& e) {
    EXPECT_NE(std::string(e.what()).find("normalizing"), std::string::npos) << e.what();
  }
}

// A kernel's powf(x, 3.0f) is pow(s, 3) when the forms are recognized (PowSmallInt runs later), and
// a scale inside min factors reorders a sum's terms (dev pair 018: s sums channel minima).
TEST_F(AxiomTest, GeluTanhFormWithPowAndMinFactors) {
  smt::AxiomOptions keep_tanh;
  keep_tanh.gelu_tanh_is_erf = false;
  int32_t t = ctx.tensor("axioms:sum_of_mins");
  auto kernel_gelu = [&](Expr s) {
    Expr inner = ctx.mul(k32(ctx, 0.7978845608028654),
                         ctx.add(s, ctx.mul(k32(ctx, 0.044715), ctx.call(Fn::Pow, s, ctx.real_const(3)))));
    return ctx.mul(ctx.mul(k32(ctx, 0.5), s), ctx.add(k32(ctx, 1), ctx.call(Fn::Tanh, inner)));
  };
  std::vector<Expr> leaves, mins;
  for (int64_t i = 0; i < 100; ++i) leaves.push_back(ctx.elem(t, i));
  for (int64_t i = 0; i < 4; ++i) mins.push_back(ctx.min(ctx.elem(t, 2 * i), ctx.elem(t, 2 * i + 1)));
  for (Expr s : {ctx.add(x, y), ctx.add(leaves), ctx.add(mins)})
    applies(Axiom::GeluTanhForm, ctx.add(y, kernel_gelu(s)), ctx.add(y, call(Fn::GeluTanh, s)), keep_tanh);
}
