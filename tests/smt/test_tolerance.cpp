// Equal within tolerance (smt/tolerance.h): rounding-only differences are bounded below atol
// for leaves in [-bound, bound]; real differences are not.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "ir/expr.h"
#include "smt/decide.h"
#include "smt/tolerance.h"
#include "smt/translate.h"

using namespace dirigo;
using ir::Expr;
using ir::Fn;

namespace {
struct ToleranceTest : ::testing::Test {
  ir::Context c;
  int32_t t = c.tensor("tol:x");
  Expr x = c.elem(t, 0), y = c.elem(t, 1), z = c.elem(t, 2);
  Expr f32(double v) { return c.real_const_from_double(double(float(v))); }
  Expr exact(int64_t n, int64_t d) { return c.real_const(mpq_class(n, d)); }
  smt::DecideOptions with_tolerance() {
    smt::DecideOptions o;
    o.tolerance = smt::Tolerance{};
    o.use_cache = false;
    return o;
  }
};
}  // namespace

TEST_F(ToleranceTest, IntervalsOfLeavesAndFunctions) {
  smt::Interval sq = smt::interval_of(c.mul(x, x), 10);
  EXPECT_GE(sq.lo, -1e-9);
  EXPECT_NEAR(sq.hi, 100, 1e-6);
  smt::Interval th = smt::interval_of(c.call(Fn::Tanh, c.mul(c.real_const(1000), x)), 10);
  EXPECT_GE(th.lo, -1.0 - 1e-9);
  EXPECT_LE(th.hi, 1.0 + 1e-9);
  smt::Interval lg = smt::interval_of(c.call(Fn::Log, x), 10);  // log of a value that may be <= 0
  EXPECT_TRUE(std::isinf(lg.hi));
}

TEST_F(ToleranceTest, ExactDivisionBySevenVsF32Reciprocal) {
  // torch divides by 7, a kernel multiplies by 0.14285715f (1/6 and other n/d with d <= 10 are
  // snapped to one constant before this stage: AxiomTest.SnapConstants)
  Expr h = c.min(c.real_const(6), c.max(c.real_const(0), c.add(x, c.real_const(3))));
  Expr ref = c.mul(c.mul(x, h), exact(1, 7));
  Expr cand = c.mul(c.mul(x, h), f32(1.0 / 7));
  double d = smt::difference_bound(c, ref, cand, 10);
  EXPECT_GT(d, 0);
  EXPECT_LT(d, 1e-6);
  smt::Decision dec = smt::decide(c, ref, cand, with_tolerance());
  EXPECT_EQ(dec.verdict, smt::Verdict::Equal);
  EXPECT_EQ(dec.stage, smt::Stage::Tolerance);
  EXPECT_GE(dec.difference_bound, 0);
  // without a tolerance they are different reals
  smt::DecideOptions exact_opt;
  exact_opt.use_cache = false;
  EXPECT_EQ(smt::decide(c, ref, cand, exact_opt).verdict, smt::Verdict::Differ);
}

TEST_F(ToleranceTest, PythonScalarKeptInF64VsRoundedToF32) {
  Expr s = c.add(c.call(Fn::Tanh, x), c.call(Fn::Tanh, y));
  Expr ref = c.sub(s, c.real_const_from_double(0.2));
  Expr cand = c.sub(s, f32(0.2));
  smt::Decision dec = smt::decide(c, ref, cand, with_tolerance());
  EXPECT_EQ(dec.verdict, smt::Verdict::Equal);
  EXPECT_EQ(dec.stage, smt::Stage::Tolerance);
}

TEST_F(ToleranceTest, MishOfAShiftedSumThroughItsExpansion) {
  // torch: mish(S - 0.7123) ; kernel: t * tanh(softplus(t)) with t = S - 0.7123f
  Expr sum = c.add(std::vector<Expr>{c.mul(x, y), c.mul(y, z), c.mul(x, z)});
  Expr ref = c.call(Fn::Mish, c.sub(sum, c.real_const_from_double(0.7123)));
  Expr tc = c.sub(sum, f32(0.7123));
  Expr cand = c.mul(tc, c.call(Fn::Tanh, c.call(Fn::Softplus, tc)));
  double d = smt::difference_bound(c, ref, cand, 10);
  EXPECT_LT(d, 1e-4);
  EXPECT_EQ(smt::decide(c, ref, cand, with_tolerance()).stage, smt::Stage::Tolerance);
}

TEST_F(ToleranceTest, ARealDifferenceIsNotWithinTolerance) {
  Expr ref = c.call(Fn::Tanh, x);
  Expr cand = c.add(c.call(Fn::Tanh, x), c.real_const_from_double(0.5));
  EXPECT_GT(smt::difference_bound(c, ref, cand, 10), 0.01);
  smt::Decision dec = smt::decide(c, ref, cand, with_tolerance());
  EXPECT_EQ(dec.verdict, smt::Verdict::Differ);
}

TEST_F(ToleranceTest, SmallRelativeChangeAmplifiedByExpIsNotClaimed) {
  // 1e-6 relative, but e^10 * 1e-6 = 0.022 > atol at x = 10
  Expr ref = c.call(Fn::Exp, x);
  Expr cand = c.mul(c.real_const_from_double(1.000001), c.call(Fn::Exp, x));
  EXPECT_GT(smt::difference_bound(c, ref, cand, 10), 0.01);
  EXPECT_NE(smt::decide(c, ref, cand, with_tolerance()).stage, smt::Stage::Tolerance);
}

TEST_F(ToleranceTest, DifferentShapesFallBackToIntervals) {
  // min(x, y) vs x: no alignment; |min(x,y) - x| <= 20 from intervals, nothing claimed
  EXPECT_GT(smt::difference_bound(c, c.min(x, y), x, 10), 0.01);
  EXPECT_EQ(smt::difference_bound(c, x, x, 10), 0);
}

// Budget: translation to Z3 (before Z3's own deadline applies) stops at the translator's deadline.
TEST_F(ToleranceTest, TranslationStopsAtItsDeadline) {
  std::vector<Expr> terms;
  for (int i = 0; i < 300; ++i) terms.push_back(c.call(Fn::Exp, c.elem(t, 100 + i)));  // 45,000 congruence pairs
  Expr big = c.add(terms);
  z3::context z;
  smt::Translator late(z, c, smt::TranslateOptions{.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1)});
  EXPECT_THROW(late(big), smt::TranslateTimeout);
  smt::Translator in_time(z, c);  // no deadline: the same query translates
  EXPECT_NO_THROW(in_time(big));
  // decide reports it as a Timeout, not as a crash or an Unknown
  smt::DecideOptions o;
  o.timeout_ms = 0;
  o.use_cache = false;
  o.falsify_points = 0;
  std::vector<Expr> doubled;
  for (int i = 0; i < 300; ++i) doubled.push_back(c.call(Fn::Exp, c.mul(c.real_const(2), c.elem(t, 100 + i))));
  Expr other = c.add(doubled);  // nothing cancels: the whole query must be translated
  EXPECT_EQ(smt::decide(c, big, other, o).verdict, smt::Verdict::Timeout);
}

TEST_F(ToleranceTest, PassedDeadlineStopsTheBoundNamingIt) {
  std::vector<Expr> ta, tb;
  for (int i = 0; i < 5000; ++i) {
    ta.push_back(c.mul(c.elem(t, i), exact(1, 6)));
    tb.push_back(c.mul(c.elem(t, i), f32(1.0 / 6)));
  }
  Expr a = c.call(ir::Fn::Tanh, c.add(ta)), b = c.call(ir::Fn::Tanh, c.add(tb));
  smt::Ticker passed(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  EXPECT_THROW(smt::difference_bound(c, a, b, 10, {}, &passed), smt::StageTimeout);
  EXPECT_LT(smt::difference_bound(c, a, b, 10), 1e-2);  // without a deadline: a rounding-only difference
}

// c*max(x, y) with c < 0 is min(c*x, c*y): a kernel that scales by -1/3 before a clamp and a
// reference that scales after it differ only by the rounding of the constant.
TEST_F(ToleranceTest, NegativeFactorPushedIntoMinMax) {
  Expr after = c.mul(exact(-1, 3), c.max(x, y));
  Expr before = c.min(c.mul(f32(-1.0 / 3), x), c.mul(f32(-1.0 / 3), y));
  EXPECT_LT(smt::difference_bound(c, after, before, 10), 1e-6);
  Expr positive = c.mul(exact(1, 3), c.min(x, y));  // c > 0 keeps the kind
  EXPECT_LT(smt::difference_bound(c, positive, c.min(c.mul(f32(1.0 / 3), x), c.mul(f32(1.0 / 3), y)), 10), 1e-6);
  // a min is not a max: still a real difference
  EXPECT_GT(smt::difference_bound(c, after, c.max(c.mul(f32(-1.0 / 3), x), c.mul(f32(-1.0 / 3), y)), 10), 1e-2);
}

TEST_F(ToleranceTest, MaxArmsWithOneSkeletonPairByTheirCoefficients) {
  // leaky ReLU of 2*(x*y + z): max(2S, kS) with k in fp64 vs fp32. A skeleton ignores constants, so both
  // arms look alike; where the two max nodes list their arms in different orders (pair 079), pairing by
  // position compared 2S with kS' and bounded nothing.
  Expr s = c.add(c.mul(x, y), z);
  Expr two_s = c.mul(c.real_const(2), s);
  int flipped = 0;
  for (double k : {0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5}) {
    Expr ref = c.max(two_s, c.mul(c.real_const_from_double(k), s));
    Expr cand = c.max(two_s, c.mul(f32(k), s));
    flipped += (ref->arg(0) == two_s) != (cand->arg(0) == two_s);
    double d = smt::difference_bound(c, ref, cand, 10);
    EXPECT_GE(d, 0) << k;
    EXPECT_LT(d, 1e-4) << k;
  }
  EXPECT_GT(flipped, 0);  // the case above occurred
}

TEST_F(ToleranceTest, ASolverModelOfSnappedFormsIsNoWitnessOfTheSnappedConstants) {
  // pair 002: torch's x * hardswish(x) = x * x * min(6, max(0, x + 3)) / 6 against a kernel's
  // x * (x * min(1 + 2^-25, max(0, 0.5 + 2^-26 + 0.16666667f * x))), x a conv sum. The snapped forms
  // agree; a model Z3 finds for them with a cut left free evaluated the originals, which differ by
  // the f32 constants alone (10^-8 relative), and "confirmed" a difference no tolerance admits.
  // v has 9 terms: (h*v)*v distributes h over v (9 terms), v*v (81 > kDistributeLimit) stays a product
  int32_t w = c.tensor("tol:w");
  std::vector<Expr> terms{z};
  for (int i = 0; i < 8; ++i) terms.push_back(c.mul(c.elem(w, i), c.elem(t, 3 + i)));
  Expr v = c.add(terms);
  Expr h_ref = c.mul(exact(1, 6), c.min(c.real_const(6), c.max(c.real_const(0), c.add(v, c.real_const(3)))));
  Expr ref = c.mul(c.mul(h_ref, v), v);
  Expr h_cand = c.min(exact(33554433, 33554432), c.max(c.real_const(0), c.add(exact(33554433, 67108864), c.mul(f32(1.0 / 6), v))));
  Expr cand = c.mul(h_cand, c.mul(v, v));
  smt::Decision dec = smt::decide(c, ref, cand, with_tolerance());
  EXPECT_NE(dec.verdict, smt::Verdict::Differ) << dec.reason;
  // with exact axioms only (no snapping) they are different reals
  smt::DecideOptions exact_opt;
  exact_opt.use_cache = false;
  exact_opt.axioms.fast_math_is_exact = false;
  exact_opt.axioms.gelu_forms = false;
  EXPECT_EQ(smt::decide(c, ref, cand, exact_opt).verdict, smt::Verdict::Differ);
}
