// The translation must agree with ir::Evaluator (the witness check relies on
// it): every op is translated, its leaves replaced by concrete values inside
// Z3, simplified, and compared with the evaluator on the same values.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>
#include <z3++.h>

#include "ir/eval.h"
#include "ir/print.h"
#include "smt/translate.h"

using namespace dirigo;
using ir::Expr;
using ir::Fn;
using ir::Sort;

namespace {

struct TranslateTest : ::testing::Test {
  ir::Context ctx;
  z3::context z;

  // Evaluate `e` both ways at the given leaf values; report disagreements.
  void agree(Expr e, const std::vector<std::pair<Expr, ir::Value>>& values) {
    smt::Translator tr(z, ctx);
    z3::expr ze = tr(e);
    z3::expr_vector from(z), to(z);
    for (const auto& [leaf, v] : values) {
      const z3::expr* zl = tr.lookup(leaf);
      if (!zl) continue;
      from.push_back(*zl);
      if (v.sort == Sort::Real) to.push_back(smt::double_to_real(z, v.real));
      else if (v.sort == Sort::Bool) to.push_back(z.bool_val(v.bits != 0));
      else to.push_back(z.bv_val(v.bits, ir::bv_width(v.sort)));
    }
    z3::expr got = ze.substitute(from, to).simplify();
    std::vector<z3::expr> side = tr.take_constraints();  // e.g. the definition of a conversion
    if (!side.empty()) {
      z3::solver s(z);
      for (z3::expr& c : side) s.add(c.substitute(from, to));
      ASSERT_EQ(s.check(), z3::sat) << ir::to_string(ctx, e);
      got = s.get_model().eval(got, true);
    }
    ir::Env env;
    env.var = [&](std::string_view name, Sort s) {
      for (const auto& [leaf, v] : values)
        if (leaf->op == ir::Op::Var && leaf->name() == name) return v;
      ADD_FAILURE() << "no value for " << name;
      return ir::Value{};
    };
    ir::Evaluator ev(env);
    ir::Value want = ev(e);
    std::string where = ir::to_string(ctx, e);
    if (e->sort == Sort::Real) {
      EXPECT_DOUBLE_EQ(smt::numeral_to_double(got), want.real) << where << " -> " << got;
    } else if (e->sort == Sort::Bool) {
      EXPECT_EQ(got.is_true(), want.bits != 0) << where << " -> " << got;
    } else {
      uint64_t bits = 0;
      ASSERT_TRUE(Z3_get_numeral_uint64(z, got, &bits)) << where << " -> " << got;
      EXPECT_EQ(bits, want.bits) << where;
    }
  }
};

}  // namespace

TEST_F(TranslateTest, BitvectorOpsAgreeWithEvaluator) {
  Expr a = ctx.var("a", Sort::BV32), b = ctx.var("b", Sort::BV32);
  std::vector<Expr> exprs = {
      ctx.bv_add(a, b), ctx.bv_sub(a, b), ctx.bv_mul(a, b), ctx.bv_udiv(a, b), ctx.bv_sdiv(a, b),
      ctx.bv_urem(a, b), ctx.bv_srem(a, b), ctx.bv_shl(a, b), ctx.bv_lshr(a, b), ctx.bv_ashr(a, b),
      ctx.bv_and(a, b), ctx.bv_or(a, b), ctx.bv_xor(a, b), ctx.bv_not(a), ctx.bv_min(a, b, true),
      ctx.bv_max(a, b, true), ctx.bv_min(a, b, false), ctx.bv_max(a, b, false), ctx.bv_mulhi(a, b, true),
      ctx.bv_mulhi(a, b, false), ctx.zext(a, Sort::BV64), ctx.sext(a, Sort::BV64), ctx.trunc(a, Sort::BV8),
      ctx.ult(a, b), ctx.slt(a, b), ctx.ule(a, b), ctx.sle(a, b), ctx.eq(a, b)};
  std::vector<uint64_t> samples = {0, 1, 3, 31, 32, 33, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 12345678};
  for (Expr e : exprs)
    for (uint64_t va : samples)
      for (uint64_t vb : samples)
        agree(e, {{a, ir::Value::of_bv(Sort::BV32, va)}, {b, ir::Value::of_bv(Sort::BV32, vb)}});
}

TEST_F(TranslateTest, RealOpsAndConversionsAgreeWithEvaluator) {
  Expr x = ctx.var("x", Sort::Real), y = ctx.var("y", Sort::Real);
  Expr i = ctx.var("i", Sort::BV16);
  std::vector<Expr> exprs = {
      ctx.add(x, y), ctx.mul(x, y), ctx.min(x, y), ctx.max(x, y), ctx.abs(x), ctx.div(x, ctx.add(ctx.abs(y), ctx.real_const(1))),
      ctx.ite(ctx.lt(x, y), x, y), ctx.le(x, y), ctx.call(Fn::Floor, x), ctx.call(Fn::Ceil, x),
      ctx.call(Fn::Round, x), ctx.call(Fn::Trunc, x), ctx.call(Fn::Sign, x), ctx.bv_to_real(i, true),
      ctx.bv_to_real(i, false)};
  for (auto rm : {ir::RoundMode::NearestEven, ir::RoundMode::Zero, ir::RoundMode::Down, ir::RoundMode::Up})
    for (bool s : {true, false}) exprs.push_back(ctx.real_to_bv(x, Sort::BV8, s, rm));
  std::vector<double> samples = {0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.7, -3.7, 127.5, 200, -200, 1e10, -1e10};
  for (Expr e : exprs) {
    auto ls = ir::leaves(e);
    bool uses_y = std::find(ls.begin(), ls.end(), y) != ls.end();
    for (double vx : samples)
      for (double vy : {0.0, -1.25, 3.0}) {
        if (!uses_y && vy != 0.0) continue;
        agree(e, {{x, ir::Value::of_real(vx)}, {y, ir::Value::of_real(vy)}, {i, ir::Value::of_bv(Sort::BV16, 0xfff0)}});
      }
  }
}

TEST_F(TranslateTest, StableNamesAndAckermannization) {
  int32_t t = ctx.tensor("W");
  Expr w = ctx.elem(t, 17);
  Expr x = ctx.var("x", Sort::Real);
  smt::Translator tr(z, ctx);
  z3::expr e = tr(ctx.add(ctx.call(Fn::Exp, w), ctx.call(Fn::Exp, x)));
  EXPECT_EQ(tr.lookup(w)->to_string(), "|W[17]|");
  EXPECT_EQ(tr.fn_apps().size(), 2u);
  std::vector<z3::expr> side = tr.take_constraints();
  EXPECT_FALSE(side.empty());  // congruence + exp facts
  // no uninterpreted function remains: the formula is pure arithmetic
  z3::solver s(z);
  for (auto& c : side) s.add(c);
  s.add(e != e);
  EXPECT_EQ(s.check(), z3::unsat);
  std::vector<z3::expr> todo{e};
  for (auto& c : side) todo.push_back(c);
  while (!todo.empty()) {
    z3::expr f = todo.back();
    todo.pop_back();
    if (!f.is_app()) continue;
    if (f.decl().decl_kind() == Z3_OP_UNINTERPRETED) EXPECT_EQ(f.num_args(), 0u) << f;
    for (unsigned k = 0; k < f.num_args(); ++k) todo.push_back(f.arg(k));
  }
}

TEST_F(TranslateTest, UndefIsAFreshConstantPerNode) {
  smt::Translator tr(z, ctx);
  z3::expr u = tr(ctx.undef(Sort::Real));
  EXPECT_TRUE(u.is_const());
  EXPECT_FALSE(u.is_numeral());
}

TEST_F(TranslateTest, CongruenceStopsPastItsApplicationCap) {
  // n applications of one function give n(n-1)/2 congruence lemmas up to max_congruence_apps; past it
  // a new application gets its own facts only (a sum of 32768 sigmoids took a 20 s budget and
  // gigabytes before Z3 started)
  int32_t t = ctx.tensor("x");
  auto sum_of_exps = [&](int n) {
    std::vector<Expr> terms;
    for (int i = 0; i < n; ++i) terms.push_back(ctx.call(Fn::Exp, ctx.elem(t, i)));
    return ctx.add(terms);
  };
  smt::TranslateOptions opt;
  opt.max_lemma_apps = 0;
  opt.max_congruence_apps = 64;
  auto constraints = [&](int n) {
    smt::Translator tr(z, ctx, opt);
    tr(sum_of_exps(n));
    return tr.take_constraints().size();
  };
  size_t at32 = constraints(32), at64 = constraints(64), at128 = constraints(128);
  EXPECT_GT(at64 - at32, 32u * 32u);       // quadratic below the cap
  EXPECT_LT(at128 - at64, 64u * 4u);       // linear past it: the per-application facts only
}
