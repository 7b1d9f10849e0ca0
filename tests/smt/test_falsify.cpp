#include <gtest/gtest.h>

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
