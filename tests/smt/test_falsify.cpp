#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ir/eval.h"
#include "smt/falsify.h"

using namespace dirigo;
using ir::Expr;
using ir::Sort;

namespace {

struct FalsifyTest : ::testing::Test {
  ir::Context ctx;
  int32_t x = ctx.tensor("in:x"), w = ctx.tensor("in:w"), bias = ctx.tensor("in:b");
  // a row of a GEMM with 72 products, as in a conv location: bilinear in free inputs and weights
  Expr dot(int n) {
    Expr s = ctx.real_const(0);
    for (int i = 0; i < n; ++i) s = ctx.add(s, ctx.mul(ctx.elem(x, i), ctx.elem(w, i)));
    return s;
  }
  // the witness re-evaluates to the values it carries, through Witness::env (unlisted leaves are 0)
  void expect_replays(const smt::Witness& wit, Expr a, Expr b) {
    ir::Evaluator ev(wit.env());
    EXPECT_EQ(ev(a).real, wit.a.real);
    EXPECT_EQ(ev(b).real, wit.b.real);
  }
};

TEST_F(FalsifyTest, DroppedBiasIsFoundBeyondTolerance) {
  Expr ref = ctx.add(dot(72), ctx.elem(bias, 3)), cand = dot(72);
  smt::FalsifyOptions opt;
  opt.tolerance = smt::Tolerance{};
  auto wit = smt::falsify(ref, cand, opt);
  ASSERT_TRUE(wit);
  EXPECT_TRUE(wit->exceeds_tolerance);
  EXPECT_EQ(wit->leaves.size(), 145u);  // 72 x, 72 w and the bias: every leaf read is listed
  expect_replays(*wit, ref, cand);
}

TEST_F(FalsifyTest, EqualFunctionsInAnotherFormGiveNoWitness) {
  Expr u = ctx.elem(x, 0), v = ctx.elem(x, 1);
  Expr a = ctx.mul(ctx.add(u, v), ctx.sub(u, v)), b = ctx.sub(ctx.mul(u, u), ctx.mul(v, v));
  EXPECT_FALSE(smt::falsify(a, b));
  Expr t = ctx.call(ir::Fn::Tanh, u);
  Expr via_sigmoid = ctx.sub(ctx.mul(ctx.real_const(2), ctx.call(ir::Fn::Sigmoid, ctx.mul(ctx.real_const(2), u))),
                             ctx.real_const(1));
  EXPECT_FALSE(smt::falsify(t, via_sigmoid));  // tanh(u) = 2 sigmoid(2u) - 1
}

TEST_F(FalsifyTest, RoundingOnlyDifferenceIsReturnedBelowTolerance) {
  Expr u = ctx.elem(x, 0);
  Expr a = ctx.mul(u, ctx.real_const_from_double(0.2)), b = ctx.mul(u, ctx.real_const_from_double(double(0.2f)));
  smt::FalsifyOptions opt;
  opt.tolerance = smt::Tolerance{};
  auto wit = smt::falsify(a, b, opt);
  ASSERT_TRUE(wit);  // differs beyond fp64 noise (3e-9 relative) ...
  EXPECT_FALSE(wit->exceeds_tolerance);  // ... but never beyond KernelBench's tolerance
  opt.tolerance.reset();
  EXPECT_TRUE(smt::falsify(a, b, opt));
}

TEST_F(FalsifyTest, SymbolicLoadsReadTheSampledElements) {
  int32_t idx = ctx.tensor("in:idx");
  Expr i = ctx.elem(idx, 0, Sort::BV64);
  Expr a = ctx.load(x, i), b = ctx.load(x, ctx.bv_add(i, ctx.bv_const(Sort::BV64, 1)));
  auto wit = smt::falsify(a, b);
  ASSERT_TRUE(wit);
  expect_replays(*wit, a, b);
}

TEST_F(FalsifyTest, UndefinedValuesAndViolatedAssumptionsGiveNoWitness) {
  Expr u = ctx.elem(x, 0);
  EXPECT_FALSE(smt::falsify(ctx.add(u, ctx.undef(Sort::Real)), u));
  std::vector<Expr> never{ctx.lt(u, u)};
  smt::FalsifyOptions opt;
  opt.assumptions = &never;
  EXPECT_FALSE(smt::falsify(u, ctx.add(u, ctx.real_const(1)), opt));
}

TEST_F(FalsifyTest, SameSeedSamePoint) {
  Expr ref = ctx.add(dot(4), ctx.elem(bias, 0)), cand = dot(4);
  auto w1 = smt::falsify(ref, cand), w2 = smt::falsify(ref, cand);
  ASSERT_TRUE(w1 && w2);
  EXPECT_EQ(w1->a.real, w2->a.real);
  smt::FalsifyOptions other;
  other.seed = 2;
  EXPECT_NE(smt::falsify(ref, cand, other)->a.real, w1->a.real);
}

}  // namespace

// A dropped bias behind a clamp: at [-10, 10] (and [-1, 1]) the 8,192-term dot product is far beyond
// the clamp on both sides, so only the small-scale points of the ladder show the bias.
TEST_F(FalsifyTest, DroppedBiasBehindAClampIsFoundAtASmallScale) {
  Expr lo = ctx.real_const(-2), hi = ctx.real_const(2);
  auto clamp = [&](Expr v) { return ctx.min(ctx.max(v, lo), hi); };
  Expr sum = dot(8192);
  Expr ref = clamp(ctx.add(sum, ctx.elem(bias, 0))), cand = clamp(sum);
  smt::FalsifyOptions opt;
  opt.tolerance = smt::Tolerance{};
  // draws keyed by the tensors' names, not their process-wide ids: the same values whichever tests ran first
  opt.key_of = [&](int32_t t) { return smt::name_key(ctx.tensor_name(t)); };
  opt.points = 2;  // [-10, 10] and [-1, 1] only: saturated, both sides equal
  EXPECT_FALSE(smt::falsify(ref, cand, opt));
  opt.points = 8;
  auto wit = smt::falsify(ref, cand, opt);
  ASSERT_TRUE(wit);
  EXPECT_TRUE(wit->exceeds_tolerance);
  expect_replays(*wit, ref, cand);
}

TEST_F(FalsifyTest, PassedDeadlineThrowsNamingSampling) {
  smt::Ticker passed(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  smt::FalsifyOptions opt;
  opt.deadline = &passed;
  EXPECT_THROW(smt::falsify(dot(8), ctx.add(dot(8), ctx.elem(bias, 0)), opt), smt::StageTimeout);
  opt.deadline = nullptr;
  EXPECT_TRUE(smt::falsify(dot(8), ctx.add(dot(8), ctx.elem(bias, 0)), opt));
}

TEST_F(FalsifyTest, OddPointsDrawNonNegativeValues) {
  // x and |x| differ exactly where x < 0: never at the non-negative (odd) points, at some even one
  Expr u = ctx.elem(x, 0);
  Expr a = u, b = ctx.abs(u);
  smt::FalsifyOptions opt;
  opt.points = 1;
  bool even_differs = false;
  for (unsigned p = 0; p < 8; ++p) {
    opt.first_point = p;
    auto wit = smt::falsify(a, b, opt);
    if (p % 2) EXPECT_FALSE(wit) << "point " << p;
    else even_differs = even_differs || wit.has_value();
  }
  EXPECT_TRUE(even_differs);
}

TEST_F(FalsifyTest, RunningVarUnderRsqrtIsFoundAtANonNegativePoint) {
  // eval-mode batch norm (running_var read under rsqrt) vs a reference that normalizes by a
  // variance it computes: at symmetric points rv < 0 gives NaN, never a difference beyond tolerance
  int32_t rv = ctx.tensor("in:running_var");
  Expr eps = ctx.real_const_from_double(1e-5);
  Expr u = ctx.elem(x, 0), v = ctx.elem(x, 1);
  Expr mean = ctx.mul(ctx.real_const(mpq_class(1, 2)), ctx.add(u, v));
  Expr var = ctx.mul(ctx.real_const(mpq_class(1, 4)), ctx.mul(ctx.sub(u, v), ctx.sub(u, v)));
  Expr ref = ctx.mul(ctx.sub(u, mean), ctx.call(ir::Fn::Rsqrt, ctx.add(var, eps)));
  Expr cand = ctx.mul(u, ctx.call(ir::Fn::Rsqrt, ctx.add(ctx.elem(rv, 0), eps)));
  smt::FalsifyOptions opt;
  opt.tolerance = smt::Tolerance{};
  auto wit = smt::falsify(ref, cand, opt);
  ASSERT_TRUE(wit);
  EXPECT_TRUE(wit->exceeds_tolerance);
  expect_replays(*wit, ref, cand);
}

// key_of = name_key(tensor name): each leaf takes smt::draw's value for (seed, point, name key, index),
// which python/dirigo/replay.py regenerates from the names alone (the giant-location witness).
TEST_F(FalsifyTest, NameKeyedPointsAreDrawsOfTheNames) {
  Expr ref = ctx.add(dot(8), ctx.elem(bias, 3)), cand = dot(8);
  smt::FalsifyOptions opt{.points = 1, .first_point = 2, .seed = 7};
  opt.tolerance = smt::Tolerance{};
  opt.key_of = [this](int32_t t) { return smt::name_key(ctx.tensor_name(t)); };
  auto wit = smt::falsify(ref, cand, opt);
  ASSERT_TRUE(wit);
  for (const auto& l : wit->leaves) {
    ir::Value want = smt::draw(7, 2, smt::name_key(ctx.tensor_name(l.tensor)), l.index, Sort::Real, opt.bound);
    EXPECT_EQ(l.value.real, want.real) << ctx.tensor_name(l.tensor) << "[" << l.index << "]";
  }
  opt.key_of = nullptr;  // keyed by tensor id: other values
  auto by_id = smt::falsify(ref, cand, opt);
  ASSERT_TRUE(by_id);
  EXPECT_NE(by_id->leaves[0].value.real, wit->leaves[0].value.real);
}

// The distribution points: N(0, 1) (KernelBench's torch.randn), U[-1, 1], N(0, 10^2), N(0, 0.01^2),
// U[-1000, 1000], each signed then non-negative; their moments over 20,000 draws.
TEST(DistributionPoints, DrawTheirDistributions) {
  struct Want {
    smt::Distribution d;
    double scale;
  };
  const Want want[smt::kDistributions] = {{smt::Distribution::Normal, 1}, {smt::Distribution::Uniform, 1},
                                          {smt::Distribution::Normal, 10}, {smt::Distribution::Normal, 0.01},
                                          {smt::Distribution::Uniform, 1000}};
  const int n = 20000;
  for (unsigned k = 0; k < 2 * smt::kDistributions; ++k) {
    unsigned p = smt::kDistributionPoint + k;
    const Want& w = want[k / 2];
    EXPECT_EQ(smt::point_distribution(p), w.d) << p;
    EXPECT_EQ(smt::point_bound(p, 10), w.scale) << p;
    smt::PointSampler s(7, p, 10);
    double sum = 0, sq = 0, lo = 1e300, hi = -1e300;
    for (int i = 0; i < n; ++i) {
      double v = s.real(123, i);
      EXPECT_EQ(v, smt::draw(7, p, 123, i, Sort::Real, 10).real);  // one definition of a draw
      sum += v, sq += v * v, lo = std::min(lo, v), hi = std::max(hi, v);
    }
    double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
    bool nonneg = k % 2 == 1;
    if (nonneg) EXPECT_GE(lo, 0) << p;
    else EXPECT_LT(lo, 0) << p;
    if (w.d == smt::Distribution::Uniform) {
      EXPECT_LE(hi, w.scale);
      EXPECT_GE(lo, -w.scale);
      EXPECT_NEAR(sd, w.scale * (nonneg ? 0.2887 : 0.5774), 0.02 * w.scale) << p;  // 1/sqrt(12), 2/sqrt(12)
    } else if (nonneg) {  // |N(0, s^2)|: mean s sqrt(2/pi)
      EXPECT_NEAR(mean, w.scale * 0.7979, 0.02 * w.scale) << p;
    } else {
      EXPECT_NEAR(mean, 0, 0.03 * w.scale) << p;
      EXPECT_NEAR(sd, w.scale, 0.02 * w.scale) << p;
      EXPECT_GT(hi, 3 * w.scale) << p;  // tails, not a clipped uniform
    }
  }
}

// The uniform ladder below kDistributionPoint is what it was: element draws unchanged.
TEST(DistributionPoints, LadderPointsStayUniform) {
  for (unsigned p : {0u, 1u, 2u, 7u, 63u}) {
    EXPECT_EQ(smt::point_distribution(p), smt::Distribution::Uniform);
    smt::PointSampler s(3, p, 10);
    uint64_t base = smt::PointSampler::mix(3 * 1000003ull + p);
    for (int64_t i = 0; i < 100; ++i) {
      double unit = double(smt::PointSampler::mix(base ^ smt::PointSampler::leaf_hash(9, i)) >> 11) * 0x1.0p-53;
      double b = smt::point_bound(p, 10);
      EXPECT_EQ(s.real(9, i), smt::point_nonnegative(p) ? unit * b : (unit * 2 - 1) * b);
    }
  }
}

// falsify() draws a distribution point's element leaves as PointSampler does.
TEST_F(FalsifyTest, DistributionPointDrawsAsTheSampler) {
  Expr ref = ctx.add(dot(8), ctx.elem(bias, 0)), cand = dot(8);
  unsigned p = smt::kDistributionPoint;  // N(0, 1)
  auto wit = smt::falsify(ref, cand, {.points = 1, .first_point = p, .seed = 5});
  ASSERT_TRUE(wit);
  smt::PointSampler s(5, p, 10);
  for (const auto& l : wit->leaves)
    if (l.kind == smt::LeafValue::Kind::Elem) EXPECT_EQ(l.value.real, s.real(uint64_t(l.tensor), l.index));
}
