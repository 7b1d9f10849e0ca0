// Evaluator (fp64 / fp32 / bitvectors / undef) and the reference meaning of functions.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/eval.h"
#include "ir/expr.h"

using namespace dirigo::ir;

namespace {
Env vars(std::map<std::string, Value> m) {
  Env e;
  e.var = [m](std::string_view n, Sort) { return m.at(std::string(n)); };
  return e;
}
}  // namespace

TEST(Eval, Fp32RoundsEveryOperation) {
  Context c;
  Expr x = c.var("x", Sort::Real), y = c.var("y", Sort::Real);
  Env env = vars({{"x", Value::of_real(0.1)}, {"y", Value::of_real(0.2)}});
  Evaluator f64(env, Precision::F64), f32(env, Precision::F32);
  Expr s = c.add(x, y);
  EXPECT_EQ(f64.real(s), 0.1 + 0.2);
  EXPECT_EQ(f32.real(s), static_cast<double>(0.1f + 0.2f));
  EXPECT_NE(f64.real(s), f32.real(s));
  // 1/3 as a constant: nearest double / nearest float
  Expr third = c.real_const(mpq_class(1, 3));
  EXPECT_EQ(f64.real(third), 1.0 / 3.0);
  EXPECT_EQ(f32.real(third), static_cast<double>(1.0f / 3.0f));
  // functions in fp32: computed in double, rounded to float
  Expr e = c.call(Fn::Exp, x);
  EXPECT_EQ(f32.real(e), static_cast<double>(static_cast<float>(std::exp(static_cast<double>(0.1f)))));
}

TEST(Eval, HandComputedReals) {
  Context c;
  Expr x = c.var("x", Sort::Real), y = c.var("y", Sort::Real);
  Evaluator ev(vars({{"x", Value::of_real(3)}, {"y", Value::of_real(-2)}}));
  EXPECT_EQ(ev.real(c.add(c.mul(x, x), c.mul(c.real_const(2), y))), 5.0);
  EXPECT_EQ(ev.real(c.div(x, y)), -1.5);
  EXPECT_EQ(ev.real(c.max(x, y)), 3.0);
  EXPECT_EQ(ev.real(c.min(std::vector<Expr>{x, y, c.real_const(-7)})), -7.0);
  EXPECT_EQ(ev.real(c.abs(y)), 2.0);
  EXPECT_EQ(ev.real(c.ite(c.lt(y, x), x, y)), 3.0);
  EXPECT_EQ(ev(c.le(x, y)).bits, 0u);
}

TEST(Eval, Bitvectors) {
  Context c;
  Expr a = c.var("a", Sort::BV32), b = c.var("b", Sort::BV32);
  Evaluator ev(vars({{"a", Value::of_bv(Sort::BV32, 0xfffffff0u)}, {"b", Value::of_bv(Sort::BV32, 3)}}));
  EXPECT_EQ(ev(c.bv_add(a, c.bv_const(Sort::BV32, 0x20))).bits, 0x10u);  // wraps
  EXPECT_EQ(ev(c.bv_sdiv(a, b)).bits, static_cast<uint32_t>(-16 / 3));
  EXPECT_EQ(ev(c.bv_srem(a, b)).bits, static_cast<uint32_t>(-16 % 3));
  EXPECT_EQ(ev(c.bv_udiv(a, b)).bits, 0xfffffff0u / 3);
  EXPECT_EQ(ev(c.bv_ashr(a, b)).bits, static_cast<uint32_t>(-16 >> 3));
  EXPECT_EQ(ev(c.bv_lshr(a, b)).bits, 0xfffffff0u >> 3);
  EXPECT_EQ(ev(c.bv_mulhi(a, b, false)).bits, static_cast<uint32_t>((0xfffffff0ull * 3) >> 32));
  EXPECT_EQ(ev(c.bv_mulhi(a, b, true)).bits, 0xffffffffu);  // -16*3 = -48: high word all ones
  EXPECT_EQ(ev(c.sext(a, Sort::BV64)).bits, 0xfffffffffffffff0ull);
  EXPECT_EQ(ev(c.zext(a, Sort::BV64)).bits, 0xfffffff0ull);
  EXPECT_EQ(ev(c.trunc(a, Sort::BV8)).bits, 0xf0u);
  EXPECT_EQ(ev(c.bv_not(b)).bits, 0xfffffffcu);
  EXPECT_EQ(ev(c.bv_min(a, b, true)).bits, 0xfffffff0u);
  EXPECT_EQ(ev(c.bv_min(a, b, false)).bits, 3u);
  EXPECT_EQ(ev(c.slt(a, b)).bits, 1u);
  EXPECT_EQ(ev(c.ult(a, b)).bits, 0u);
  EXPECT_EQ(ev(c.bv_shl(b, c.bv_const(Sort::BV32, 40))).bits, 0u);  // over-wide shift
  EXPECT_EQ(ev.real(c.bv_to_real(a, true)), -16.0);
  EXPECT_EQ(ev.real(c.bv_to_real(a, false)), 4294967280.0);
}

TEST(Eval, RealToBvRoundsAndSaturates) {
  Context c;
  Expr x = c.var("x", Sort::Real);
  auto at = [&](double v, Sort s, bool sg, RoundMode rm) {
    Evaluator ev(vars({{"x", Value::of_real(v)}}));
    return ev(c.real_to_bv(x, s, sg, rm)).bits;
  };
  EXPECT_EQ(at(2.5, Sort::BV32, true, RoundMode::NearestEven), 2u);
  EXPECT_EQ(at(-2.5, Sort::BV32, true, RoundMode::Down), static_cast<uint32_t>(-3));
  EXPECT_EQ(at(1e20, Sort::BV32, true, RoundMode::Zero), 0x7fffffffu);
  EXPECT_EQ(at(-5, Sort::BV8, false, RoundMode::Zero), 0u);
  EXPECT_EQ(at(std::nan(""), Sort::BV32, true, RoundMode::Zero), 0u);
}

TEST(Eval, UndefIsTracked) {
  Context c;
  Expr p = c.var("p", Sort::Bool), x = c.var("x", Sort::Real);
  Expr v = c.add(c.ite(p, c.undef(Sort::Real), x), c.real_const(1));
  Evaluator t(vars({{"p", Value::of_bool(true)}, {"x", Value::of_real(2)}}));
  Evaluator f(vars({{"p", Value::of_bool(false)}, {"x", Value::of_real(2)}}));
  EXPECT_TRUE(t(v).undef);
  EXPECT_FALSE(f(v).undef);
  EXPECT_EQ(f.real(v), 3.0);
}

TEST(Eval, TensorsAndLoads) {
  Context c;
  int32_t T = c.tensor("T_eval");
  Expr i = c.var("i", Sort::BV64);
  Env env;
  env.elem = [](int32_t, int64_t idx, Sort) { return Value::of_real(10.0 * idx); };
  env.var = [](std::string_view, Sort s) { return Value::of_bv(s, 7); };
  Evaluator ev(env);
  EXPECT_EQ(ev.real(c.load(T, i)), 70.0);
  EXPECT_EQ(ev.real(c.add(c.elem(T, 2), c.elem(T, 3))), 50.0);
  Evaluator none(Env{});
  EXPECT_THROW(none(c.elem(T, 1)), std::runtime_error);
}

TEST(Eval, ApplyFnReferenceValues) {
  EXPECT_NEAR(apply_fn(Fn::GeluErf, 1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(apply_fn(Fn::GeluTanh, 1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(apply_fn(Fn::Softplus, 0.0), std::log(2.0), 1e-15);
  EXPECT_NEAR(apply_fn(Fn::Softplus, 1000.0), 1000.0, 1e-9);  // no overflow
  EXPECT_NEAR(apply_fn(Fn::Silu, 1.0), 1.0 / (1.0 + std::exp(-1.0)), 1e-15);
  EXPECT_NEAR(apply_fn(Fn::Mish, 1.0), 0.8650983882673103, 1e-15);
  EXPECT_NEAR(apply_fn(Fn::Elu, -1.0), std::exp(-1.0) - 1.0, 1e-15);
  EXPECT_NEAR(apply_fn(Fn::Selu, -1.0), -1.1113307378125625, 1e-15);
  EXPECT_NEAR(apply_fn(Fn::Selu, 2.0), 2.1014019747109608, 1e-15);
  EXPECT_EQ(apply_fn(Fn::Round, 2.5), 2.0);
  EXPECT_EQ(apply_fn(Fn::Round, 3.5), 4.0);
  EXPECT_EQ(apply_fn(Fn::Round, -2.5), -2.0);
  EXPECT_EQ(apply_fn(Fn::Round, 2.6), 3.0);
  EXPECT_EQ(apply_fn(Fn::Sign, -0.5), -1.0);
  EXPECT_EQ(apply_fn(Fn::Sign, 0.0), 0.0);
  EXPECT_EQ(apply_fn(Fn::Recip, 4.0), 0.25);
  EXPECT_EQ(apply_fn(Fn::Rsqrt, 4.0), 0.5);
  EXPECT_EQ(apply_fn(Fn::Pow, 2.0, 10.0), 1024.0);
  EXPECT_NEAR(apply_fn(Fn::Sigmoid, 0.0), 0.5, 0);
}

TEST(Eval, ConstantFoldingAgreesWithApplyFn) {
  // Exact folds done by the canonicalizer must match the reference meaning.
  Context c;
  Evaluator ev(Env{});
  for (Fn f : {Fn::Floor, Fn::Ceil, Fn::Round, Fn::Trunc, Fn::Sign})
    for (double v : {-2.5, -1.0, -0.25, 0.0, 0.5, 1.5, 2.5, 7.0}) {
      Expr e = c.call(f, c.real_const_from_double(v));
      EXPECT_TRUE(e->is_const()) << fn_name(f);
      EXPECT_EQ(ev.real(e), apply_fn(f, v)) << fn_name(f) << "(" << v << ")";
    }
  for (int i = 0; i < static_cast<int>(Fn::Count_); ++i) {
    Fn f = static_cast<Fn>(i);
    if (fn_arity(f) != 1) continue;
    for (double v : {0.0, 1.0}) {
      Expr e = c.call(f, c.real_const_from_double(v));
      if (e->is_const()) EXPECT_EQ(ev.real(e), apply_fn(f, v)) << fn_name(f) << "(" << v << ")";
    }
  }
}
