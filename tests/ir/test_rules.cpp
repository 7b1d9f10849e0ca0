// One "applies" and one "does not apply" case per canonicalization rule
// (Bitwuzla style): with the rule on, the rewrite happens and is counted; with
// it off the result differs; a near-miss input is left alone.
#include <random>

#include <gtest/gtest.h>

#include "ir/eval.h"
#include "ir/expr.h"
#include "ir/limits.h"
#include "ir/print.h"

using namespace dirigo::ir;

namespace {
struct Rules : ::testing::Test {
  Context c;
  Expr x = c.var("x", Sort::Real), y = c.var("y", Sort::Real), z = c.var("z", Sort::Real);
  Expr p = c.var("p", Sort::Bool);
  Expr a = c.var("a", Sort::BV32), b = c.var("b", Sort::BV32);
  Expr tid = c.var("tid.x", Sort::BV32, {0, 1023});
  Expr ctaid = c.var("ctaid.x", Sort::BV32, {0, 65535});
  Expr r(int64_t n) { return c.real_const(n); }
  Expr q(int64_t n, int64_t d) { return c.real_const(mpq_class(n, d)); }
  Expr bv(uint64_t v, Sort s = Sort::BV32) { return c.bv_const(s, v); }
  std::string str(Expr e) { return to_string(c, e); }
  // Runs `build` with the rule on (must give `want` and count the rule) and off (must not).
  template <class F>
  void check(Rule rule, F build, Expr want) {
    c.reset_rule_stats();
    Expr on = build();
    EXPECT_EQ(on, want) << rule_name(rule) << ": got " << str(on) << " want " << str(want);
    EXPECT_GT(c.rule_applications(rule), 0u) << rule_name(rule) << " not counted";
    c.set_rule_enabled(rule, false);
    Expr off = build();
    c.set_rule_enabled(rule, true);
    EXPECT_NE(off, want) << rule_name(rule) << " disabled but result unchanged: " << str(off);
  }
  // A near-miss: the rule must not fire on this input.
  template <class F>
  void untouched(Rule rule, F build) {
    c.reset_rule_stats();
    build();
    EXPECT_EQ(c.rule_applications(rule), 0u) << rule_name(rule) << " fired on a near miss";
  }
};
}  // namespace

TEST_F(Rules, ConstFold) {
  check(Rule::ConstFold, [&] { return c.add(std::vector<Expr>{r(2), x, r(3)}); }, c.add(x, r(5)));
  check(Rule::ConstFold, [&] { return c.bv_mul(bv(6), c.bv_mul(bv(7), a)); }, c.bv_mul(bv(42), a));
  EXPECT_EQ(c.bv_udiv(bv(7), bv(0)), bv(0xffffffff));
  EXPECT_EQ(c.bv_sdiv(bv(static_cast<uint32_t>(-7)), bv(2)), bv(static_cast<uint32_t>(-3)));
  EXPECT_EQ(c.bv_srem(bv(static_cast<uint32_t>(-7)), bv(2)), bv(static_cast<uint32_t>(-1)));
  EXPECT_EQ(c.call(Fn::Round, q(5, 2)), r(2));
  EXPECT_EQ(c.call(Fn::Round, q(7, 2)), r(4));
  EXPECT_EQ(c.real_to_bv(q(-7, 2), Sort::BV32, true, RoundMode::Down), bv(static_cast<uint32_t>(-4)));
  EXPECT_EQ(c.real_to_bv(r(1000), Sort::BV8, false, RoundMode::Zero), bv(255, Sort::BV8));  // saturates
  untouched(Rule::ConstFold, [&] { return c.add(r(2), x); });
}

TEST_F(Rules, UndefPropagate) {
  Expr u = c.undef(Sort::Real);
  check(Rule::UndefPropagate, [&] { return c.add(x, u); }, u);
  check(Rule::UndefPropagate, [&] { return c.lt(u, x); }, c.undef(Sort::Bool));
  untouched(Rule::UndefPropagate, [&] { return c.ite(p, u, x); });
  EXPECT_TRUE(c.ite(p, u, x)->has_undef());
}

TEST_F(Rules, AddFlatten) {
  c.set_rule_enabled(Rule::AddSort, true);
  auto build = [&] { return c.add(c.add(x, y), z); };
  c.reset_rule_stats();
  EXPECT_EQ(build()->nargs, 3u);
  EXPECT_GT(c.rule_applications(Rule::AddFlatten), 0u);
  c.set_rule_enabled(Rule::AddFlatten, false);
  EXPECT_EQ(build()->nargs, 2u);
  c.set_rule_enabled(Rule::AddFlatten, true);
  untouched(Rule::AddFlatten, [&] { return c.add(c.mul(x, y), z); });
}

TEST_F(Rules, AddCombineLike) {
  check(Rule::AddCombineLike, [&] { return c.add(c.mul(r(2), x), c.mul(r(3), x)); }, c.mul(r(5), x));
  check(Rule::AddCombineLike, [&] { return c.sub(c.mul(x, y), c.mul(y, x)); }, r(0));
  check(Rule::AddCombineLike, [&] { return c.bv_sub(c.bv_add(a, b), a); }, b);
  untouched(Rule::AddCombineLike, [&] { return c.add(c.mul(r(2), x), c.mul(r(3), y)); });
  // x - x is not folded away when x may be undefined
  Expr ux = c.ite(p, c.undef(Sort::Real), x);
  EXPECT_NE(c.sub(ux, ux), r(0));
}

TEST_F(Rules, AddSort) {
  Expr xy = c.add(x, y);
  check(Rule::AddSort, [&] { return c.add(y, x); }, xy);
  // Builds whose operands already come sorted are not counted.
  c.reset_rule_stats();
  c.add(std::vector<Expr>(xy->args().begin(), xy->args().end()));
  EXPECT_EQ(c.rule_applications(Rule::AddSort), 0u);
}

TEST_F(Rules, AddIdentity) {
  check(Rule::AddIdentity, [&] { return c.add(x, r(0)); }, x);
  untouched(Rule::AddIdentity, [&] { return c.add(x, r(1)); });
}

TEST_F(Rules, MulFlatten) {
  c.reset_rule_stats();
  EXPECT_EQ(c.mul(c.mul(x, y), z)->nargs, 3u);
  EXPECT_GT(c.rule_applications(Rule::MulFlatten), 0u);
  c.set_rule_enabled(Rule::MulFlatten, false);
  EXPECT_EQ(c.mul(c.mul(x, y), z)->nargs, 2u);
  c.set_rule_enabled(Rule::MulFlatten, true);
  untouched(Rule::MulFlatten, [&] { return c.mul(c.add(x, y), c.call(Fn::Exp, z)); });
}

TEST_F(Rules, MulSort) {
  Expr xy = c.mul(x, y);
  check(Rule::MulSort, [&] { return c.mul(y, x); }, xy);
  untouched(Rule::MulSort, [&] { return c.mul(xy->arg(0), xy->arg(1)); });
}

TEST_F(Rules, MulIdentity) {
  check(Rule::MulIdentity, [&] { return c.mul(x, r(1)); }, x);
  check(Rule::MulIdentity, [&] { return c.mul(x, r(0)); }, r(0));
  check(Rule::MulIdentity, [&] { return c.bv_mul(a, bv(0)); }, bv(0));
  // x*0 is kept when x may be undefined (poison must stay visible)
  Expr ux = c.ite(p, c.undef(Sort::Real), x);
  untouched(Rule::MulIdentity, [&] { return c.mul(ux, r(0)); });
  EXPECT_TRUE(c.mul(ux, r(0))->has_undef());
}

TEST_F(Rules, MulDistributeConst) {
  check(Rule::MulDistributeConst, [&] { return c.mul(r(2), c.add(x, y)); },
        c.add(c.mul(r(2), x), c.mul(r(2), y)));
  check(Rule::MulDistributeConst, [&] { return c.bv_mul(bv(4), c.bv_add(a, bv(1))); },
        c.bv_add(c.bv_mul(bv(4), a), bv(4)));
  untouched(Rule::MulDistributeConst, [&] { return c.mul(r(2), c.call(Fn::Exp, x)); });
  // A sum of more than kDistributeConstLimit terms (a batch statistic over a GEMM) stays factored:
  // scaling it would copy every term; as a term of another sum it is one monomial.
  std::vector<Expr> big;
  for (unsigned i = 0; i <= kDistributeConstLimit; ++i) big.push_back(c.elem(c.tensor("t"), i));
  Expr s = c.add(big);
  untouched(Rule::MulDistributeConst, [&] { return c.mul(q(1, 3), s); });
  Expr scaled = c.mul(q(1, 3), s);
  ASSERT_EQ(scaled->op, Op::Mul);
  EXPECT_EQ(scaled->nargs, 2u);
  EXPECT_EQ(c.add(x, c.neg(scaled))->nargs, 2u);
  EXPECT_EQ(c.mul(r(3), scaled), s);  // constants still fold
  // next to another big sum it is distributed, so shared terms cancel as before
  EXPECT_EQ(c.sub(s, s), r(0));
  EXPECT_EQ(c.sub(c.add(s, x), s), x);
  EXPECT_EQ(c.add(c.neg(s), c.add(s, y)), y);
}

TEST_F(Rules, MulDistributeSmall) {
  Expr want = c.add(std::vector<Expr>{c.mul(x, x), c.mul(x, z), c.mul(x, y), c.mul(y, z)});
  check(Rule::MulDistributeSmall, [&] { return c.mul(c.add(x, y), c.add(x, z)); }, want);
  // A product of 7 binomials has 128 > kDistributeLimit terms: kept factored.
  std::vector<Expr> fs;
  for (int i = 0; i < 7; ++i) fs.push_back(c.add(c.var("v" + std::to_string(i), Sort::Real), r(1)));
  untouched(Rule::MulDistributeSmall, [&] { return c.mul(fs); });
  EXPECT_EQ(c.mul(fs)->op, Op::Mul);
}

TEST_F(Rules, NegToMul) {
  check(Rule::NegToMul, [&] { return c.neg(c.mul(r(2), x)); }, c.mul(r(-2), x));
  check(Rule::NegToMul, [&] { return c.bv_neg(c.bv_mul(bv(3), a)); }, c.bv_mul(bv(static_cast<uint32_t>(-3)), a));
  untouched(Rule::NegToMul, [&] { return c.add(x, y); });
}

TEST_F(Rules, DivToRecip) {
  check(Rule::DivToRecip, [&] { return c.div(x, r(4)); }, c.mul(q(1, 4), x));
  check(Rule::DivToRecip, [&] { return c.div(x, c.mul(r(2), y)); },
        c.mul(std::vector<Expr>{q(1, 2), x, c.recip(y)}));
  untouched(Rule::DivToRecip, [&] { return c.div(x, y); });
  EXPECT_EQ(c.div(x, y), c.mul(x, c.call(Fn::Recip, y)));
  EXPECT_EQ(c.call(Fn::Recip, r(0))->op, Op::Call);  // 1/0 is not folded
  EXPECT_NE(c.mul(x, c.recip(x)), r(1));               // x * (1/x) is not cancelled (unsound at 0)
}

TEST_F(Rules, MinMaxFlatten) {
  c.reset_rule_stats();
  EXPECT_EQ(c.min(c.min(x, y), z)->nargs, 3u);
  EXPECT_GT(c.rule_applications(Rule::MinMaxFlatten), 0u);
  c.set_rule_enabled(Rule::MinMaxFlatten, false);
  EXPECT_EQ(c.min(c.min(x, y), z)->nargs, 2u);
  c.set_rule_enabled(Rule::MinMaxFlatten, true);
  untouched(Rule::MinMaxFlatten, [&] { return c.min(c.max(x, y), z); });
}

TEST_F(Rules, MinMaxSortDedup) {
  check(Rule::MinMaxSortDedup, [&] { return c.max(std::vector<Expr>{x, y, x}); }, c.max(y, x));
  check(Rule::MinMaxSortDedup, [&] { return c.bv_min(a, a, false); }, a);
  Expr m = c.min(x, y);
  untouched(Rule::MinMaxSortDedup, [&] { return c.min(m->arg(0), m->arg(1)); });
}

TEST_F(Rules, MinMaxConst) {
  Expr want = c.min(r(1), x);
  check(Rule::MinMaxConst, [&] { return c.min(std::vector<Expr>{r(3), x, r(1)}); }, want);
  EXPECT_EQ(want->nargs, 2u);
  EXPECT_EQ(want->arg(0), r(1));  // constant first
  untouched(Rule::MinMaxConst, [&] { return c.min(r(3), x); });
}

TEST_F(Rules, MinMaxFloatLimit) {
  // a kernel's `m = FLT_MAX; m = fminf(m, v)` against torch's min over the same values
  Expr flt_max = c.real_const(mpq_class(mpz_class("340282346638528859811704183484516925440")));
  check(Rule::MinMaxFloatLimit, [&] { return c.min(std::vector<Expr>{flt_max, x, y}); }, c.min(x, y));
  check(Rule::MinMaxFloatLimit, [&] { return c.max(c.neg(flt_max), x); }, x);
  untouched(Rule::MinMaxFloatLimit, [&] { return c.min(c.real_const(mpq_class(mpz_class("340282346638528859811704183484516925439"))), x); });
  untouched(Rule::MinMaxFloatLimit, [&] { return c.max(flt_max, x); });  // max(FLT_MAX, x) is FLT_MAX, not x
  EXPECT_EQ(c.min(flt_max, r(3)), r(3));  // constants alone still fold
}

TEST_F(Rules, MulDistributeMinMax) {
  // relu(x + y) / 2 and max(0, x/2 + y/2) are one node
  Expr want = c.max(r(0), c.add(c.mul(q(1, 2), x), c.mul(q(1, 2), y)));
  check(Rule::MulDistributeMinMax, [&] { return c.mul(q(1, 2), c.max(r(0), c.add(x, y))); }, want);
  // with another factor: the scale goes into the min, whichever way the product was grouped
  Expr grouped = c.mul(z, c.min(c.mul(r(3), x), c.mul(r(3), y)));
  check(Rule::MulDistributeMinMax, [&] { return c.mul(c.mul(r(3), z), c.min(x, y)); }, grouped);
  EXPECT_EQ(c.mul(z, c.mul(r(3), c.min(x, y))), grouped);
  // negative: the magnitude goes in, the sign stays (-c*max would swap min and max)
  check(Rule::MulDistributeMinMax, [&] { return c.mul(r(-2), c.max(x, y)); },
        c.mul(r(-1), c.max(c.mul(r(2), x), c.mul(r(2), y))));
  // so -m/6 + max(x/6, y/6) of one max m is 0 (dev pair 052: log-sum-exp's shift against the max it used)
  EXPECT_EQ(c.add(c.mul(q(-1, 6), c.max(x, y)), c.mul(q(1, 6), c.max(x, y))), r(0));
  EXPECT_EQ(c.add(c.mul(std::vector<Expr>{q(-1, 6), z, c.max(x, y)}), c.mul(z, c.max(c.mul(q(1, 6), x), c.mul(q(1, 6), y)))), r(0));
  untouched(Rule::MulDistributeMinMax, [&] { return c.mul(r(-1), c.max(x, y)); });  // the sign alone
  untouched(Rule::MulDistributeMinMax, [&] { return c.mul(z, c.max(x, y)); });      // no constant
}

TEST_F(Rules, IteConstCond) {
  check(Rule::IteConstCond, [&] { return c.ite(c.bool_const(true), x, y); }, x);
  untouched(Rule::IteConstCond, [&] { return c.ite(p, x, y); });
}

TEST_F(Rules, IteSameArms) {
  check(Rule::IteSameArms, [&] { return c.ite(p, x, x); }, x);
  untouched(Rule::IteSameArms, [&] { return c.ite(p, x, y); });
}

TEST_F(Rules, IteNegCond) {
  check(Rule::IteNegCond, [&] { return c.ite(c.not_(p), x, y); }, c.ite(p, y, x));
  check(Rule::IteNegCond, [&] { return c.ite(p, c.bool_const(false), c.bool_const(true)); }, c.not_(p));
  untouched(Rule::IteNegCond, [&] { return c.ite(p, x, y); });
}

TEST_F(Rules, IteToMinMax) {
  check(Rule::IteToMinMax, [&] { return c.ite(c.lt(x, y), x, y); }, c.min(x, y));
  check(Rule::IteToMinMax, [&] { return c.ite(c.le(x, y), y, x); }, c.max(x, y));
  check(Rule::IteToMinMax, [&] { return c.ite(c.slt(a, b), a, b); }, c.bv_min(a, b, true));
  check(Rule::IteToMinMax, [&] { return c.ite(c.ult(a, b), b, a); }, c.bv_max(a, b, false));
  untouched(Rule::IteToMinMax, [&] { return c.ite(c.lt(x, y), x, z); });
  // a clamp as nested ternaries (dev pair 052): x < -1 ? -1 : min(1, x), and 1 < x ? 1 : max(-1, x)
  Expr lo = c.real_const(-1), hi = c.real_const(1);
  check(Rule::IteToMinMax, [&] { return c.ite(c.lt(x, lo), lo, c.min(hi, x)); }, c.min(hi, c.max(lo, x)));
  check(Rule::IteToMinMax, [&] { return c.ite(c.le(x, lo), lo, c.min(hi, x)); }, c.min(hi, c.max(lo, x)));
  check(Rule::IteToMinMax, [&] { return c.ite(c.lt(hi, x), hi, c.max(lo, x)); }, c.min(hi, c.max(lo, x)));
  // an inner bound on the wrong side of the outer one is no clamp (x < 1 ? 1 : min(-1, x) is 1 or -1)
  untouched(Rule::IteToMinMax, [&] { return c.ite(c.lt(x, hi), hi, c.min(lo, x)); });
  untouched(Rule::IteToMinMax, [&] { return c.ite(c.lt(x, lo), lo, c.min(y, x)); });
}

TEST_F(Rules, CmpIteConst) {
  Expr gt = c.lt(r(20), x);  // a boolean tensor materialized as 0/1
  auto as01 = [&] { return c.ite(gt, r(1), r(0)); };
  check(Rule::CmpIteConst, [&] { return c.eq(r(0), as01()); }, c.not_(gt));
  check(Rule::CmpIteConst, [&] { return c.eq(as01(), r(1)); }, gt);
  check(Rule::CmpIteConst, [&] { return c.lt(r(0), as01()); }, gt);
  check(Rule::CmpIteConst, [&] { return c.eq(r(2), as01()); }, c.bool_const(false));
  check(Rule::CmpIteConst, [&] { return c.eq(c.ite(p, bv(1), bv(0)), bv(0)); }, c.not_(p));
  untouched(Rule::CmpIteConst, [&] { return c.eq(r(0), c.ite(gt, r(1), y)); });  // an arm not constant
  untouched(Rule::CmpIteConst, [&] { return c.eq(x, as01()); });                 // no constant side
}

TEST_F(Rules, LogOfExp) {
  check(Rule::LogOfExp, [&] { return c.call(Fn::Log, c.call(Fn::Exp, c.add(x, y))); }, c.add(x, y));
  untouched(Rule::LogOfExp, [&] { return c.call(Fn::Exp, c.call(Fn::Log, x)); });  // x <= 0 has no log
  untouched(Rule::LogOfExp, [&] { return c.call(Fn::Log, c.call(Fn::Exp2, x)); });
}

TEST_F(Rules, ClampOrder) {
  // fmaxf(fminf(x, 1), -1) and fminf(fmaxf(x, -1), 1) are one clamp (dev pair 052's hardtanh)
  Expr lo = c.real_const(-1), hi = c.real_const(1);
  check(Rule::ClampOrder, [&] { return c.max(lo, c.min(hi, x)); }, c.min(hi, c.max(lo, x)));
  check(Rule::ClampOrder, [&] { return c.max(lo, c.min(std::vector<Expr>{hi, x, y})); },
        c.min(hi, c.max(lo, c.min(x, y))));
  untouched(Rule::ClampOrder, [&] { return c.max(hi, c.min(lo, x)); });  // bounds crossed: constant 1, not a clamp
  untouched(Rule::ClampOrder, [&] { return c.min(hi, c.max(lo, x)); });  // already in order
  untouched(Rule::ClampOrder, [&] { return c.max(lo, c.min(y, x)); });
}

TEST_F(Rules, MulSumContent) {
  // swish(S)/2 of a GEMM row: torch's (1/2)*sigmoid(S)*S and a kernel's sigmoid(S)*(S/2) are one node
  // (a sum past MulDistributeSmall's limits: smaller products are expanded whole)
  int32_t t = c.tensor("rules:sum_content");
  std::vector<Expr> terms, halves;
  Expr half = c.real_const(mpq_class(1, 2));
  for (int64_t i = 0; i < 100; ++i) terms.push_back(c.elem(t, i)), halves.push_back(c.mul(half, c.elem(t, i)));
  Expr s = c.add(terms), sig = c.call(Fn::Sigmoid, s), half_s = c.add(halves);
  Expr want = c.mul(std::vector<Expr>{half, sig, s});
  check(Rule::MulSumContent, [&] { return c.mul(sig, half_s); }, want);
  untouched(Rule::MulSumContent, [&] { return c.mul(sig, s); });  // lead coefficient 1 already
  // like terms stay like terms: y*S - y*S is 0, y*S + y*(S/2) is (3/2)*y*S
  EXPECT_EQ(c.sub(c.mul(sig, s), c.mul(sig, s)), c.real_const(0));
  EXPECT_EQ(c.add(c.mul(sig, s), c.mul(sig, half_s)), c.mul(std::vector<Expr>{c.real_const(mpq_class(3, 2)), sig, s}));
  // a lone sum times a constant is still distributed (MulDistributeConst)
  EXPECT_EQ(c.mul(half, s), half_s);
}

TEST_F(Rules, IteLeakyToMax) {
  Expr s = c.add(x, y);
  Expr tenth = c.real_const(mpq_class(1, 10));
  Expr leaky = c.max(s, c.mul(tenth, s));
  check(Rule::IteLeakyToMax, [&] { return c.ite(c.lt(c.real_const(0), s), s, c.mul(tenth, s)); }, leaky);
  check(Rule::IteLeakyToMax, [&] { return c.ite(c.le(c.real_const(0), s), s, c.mul(tenth, s)); }, leaky);
  check(Rule::IteLeakyToMax, [&] { return c.ite(c.lt(s, c.real_const(0)), c.mul(tenth, s), s); }, leaky);
  // a slope above 1 is a min, a scaled arm of another sum is no leaky ReLU
  untouched(Rule::IteLeakyToMax, [&] { return c.ite(c.lt(c.real_const(0), s), s, c.mul(c.real_const(2), s)); });
  untouched(Rule::IteLeakyToMax, [&] { return c.ite(c.lt(c.real_const(0), s), s, c.mul(tenth, c.add(x, z))); });
}

TEST_F(Rules, BoolSimplify) {
  Expr p2 = c.var("p2", Sort::Bool);
  check(Rule::BoolSimplify, [&] { return c.not_(c.not_(p)); }, p);
  check(Rule::BoolSimplify, [&] { return c.and_(p, c.not_(p)); }, c.bool_const(false));
  check(Rule::BoolSimplify, [&] { return c.or_(p, c.bool_const(true)); }, c.bool_const(true));
  check(Rule::BoolSimplify, [&] { return c.and_(c.and_(p, p2), p); }, c.and_(p2, p));
  check(Rule::BoolSimplify, [&] { return c.not_(c.lt(x, y)); }, c.le(y, x));
  untouched(Rule::BoolSimplify, [&] { return c.and_(p, p2); });
}

TEST_F(Rules, CmpCanon) {
  check(Rule::CmpCanon, [&] { return c.eq(c.add(x, y), c.add(y, x)); }, c.bool_const(true));
  check(Rule::CmpCanon, [&] { return c.lt(x, c.add(x, r(1))); }, c.bool_const(true));
  check(Rule::CmpCanon, [&] { return c.ult(tid, bv(1024)); }, c.bool_const(true));  // bounds decide
  check(Rule::CmpCanon, [&] { return c.eq(c.bv_add(a, bv(1)), a); }, c.bool_const(false));
  check(Rule::CmpCanon, [&] { return c.eq(tid, bv(5000)); }, c.bool_const(false));  // outside tid's bounds
  EXPECT_NE(c.eq(tid, bv(5)), c.bool_const(false));                                  // inside: no fold
  // constants move to one side: a + 3 == b + 5 and b + 2 == a are the same node
  Expr e1 = c.eq(c.bv_add(a, bv(3)), c.bv_add(b, bv(5)));
  EXPECT_EQ(e1, c.eq(c.bv_add(b, bv(2)), a));
  EXPECT_EQ(e1, c.eq(a, c.bv_add(b, bv(2))));
  check(Rule::CmpCanon, [&] { return c.eq(c.add(x, r(1)), c.add(y, r(4))); }, c.eq(c.add(y, r(3)), x));
  untouched(Rule::CmpCanon, [&] { return c.lt(x, y); });
  untouched(Rule::CmpCanon, [&] { return c.ult(tid, bv(1000)); });
}

TEST_F(Rules, BvExtOfTrunc) {
  Expr k = c.var("k", Sort::BV64, {0, 4095}), big = c.var("big", Sort::BV64, {0, uint64_t(1) << 40});
  check(Rule::BvExtOfTrunc, [&] { return c.zext(c.trunc(k, Sort::BV32), Sort::BV64); }, k);
  check(Rule::BvExtOfTrunc, [&] { return c.sext(c.trunc(k, Sort::BV16), Sort::BV64); }, k);
  untouched(Rule::BvExtOfTrunc, [&] { return c.zext(c.trunc(big, Sort::BV32), Sort::BV64); });  // may wrap
  untouched(Rule::BvExtOfTrunc, [&] { return c.sext(c.trunc(k, Sort::BV8), Sort::BV64); });     // 4095 > 127
}

TEST_F(Rules, BvAffine) {
  check(Rule::BvAffine, [&] { return c.bv_shl(a, bv(3)); }, c.bv_mul(bv(8), a));
  check(Rule::BvAffine, [&] { return c.bv_not(a); }, c.bv_sub(c.bv_neg(a), bv(1)));
  EXPECT_EQ(c.bv_not(c.bv_not(a)), a);
  untouched(Rule::BvAffine, [&] { return c.bv_shl(a, b); });
}

TEST_F(Rules, BvExtMerge) {
  Expr a8 = c.var("a8", Sort::BV8);
  check(Rule::BvExtMerge, [&] { return c.zext(c.zext(a8, Sort::BV16), Sort::BV32); }, c.zext(a8, Sort::BV32));
  check(Rule::BvExtMerge, [&] { return c.sext(c.sext(a8, Sort::BV16), Sort::BV32); }, c.sext(a8, Sort::BV32));
  untouched(Rule::BvExtMerge, [&] { return c.sext(a8, Sort::BV32); });
}

TEST_F(Rules, BvSignedToUnsigned) {
  check(Rule::BvSignedToUnsigned, [&] { return c.sext(tid, Sort::BV64); }, c.zext(tid, Sort::BV64));
  check(Rule::BvSignedToUnsigned, [&] { return c.slt(tid, ctaid); }, c.ult(tid, ctaid));
  check(Rule::BvSignedToUnsigned, [&] { return c.bv_sdiv(tid, bv(3)); }, c.bv_udiv(tid, bv(3)));
  check(Rule::BvSignedToUnsigned, [&] { return c.bv_to_real(tid, true); }, c.bv_to_real(tid, false));
  untouched(Rule::BvSignedToUnsigned, [&] { return c.sext(a, Sort::BV64); });
}

TEST_F(Rules, BvExtPush) {
  Expr want = c.bv_add(c.zext(tid, Sort::BV64), c.bv_const(Sort::BV64, 1));
  check(Rule::BvExtPush, [&] { return c.zext(c.bv_add(tid, bv(1)), Sort::BV64); }, want);
  // signed: 1024*ctaid + tid - 5 stays within int32 for these bounds
  Expr idx = c.bv_add(std::vector<Expr>{c.bv_mul(bv(1024), ctaid), tid, bv(static_cast<uint32_t>(-5))});
  Expr want2 = c.bv_add(std::vector<Expr>{c.bv_mul(c.bv_const(Sort::BV64, 1024), c.zext(ctaid, Sort::BV64)),
                                          c.zext(tid, Sort::BV64), c.bv_const(Sort::BV64, static_cast<uint64_t>(-5))});
  check(Rule::BvExtPush, [&] { return c.sext(idx, Sort::BV64); }, want2);
  // Without bounds the sum may wrap in 32 bits: no push.
  untouched(Rule::BvExtPush, [&] { return c.zext(c.bv_add(a, bv(1)), Sort::BV64); });
  // 65538*65535 overflows 32 bits: no push either (65537*65535 = 2^32-1 would fit).
  untouched(Rule::BvExtPush, [&] { return c.zext(c.bv_mul(bv(65538), ctaid), Sort::BV64); });
  EXPECT_EQ(c.zext(c.bv_mul(bv(65536), ctaid), Sort::BV64),
            c.bv_mul(c.bv_const(Sort::BV64, 65536), c.zext(ctaid, Sort::BV64)));
}

TEST_F(Rules, BvTruncPush) {
  Expr a64 = c.var("a64", Sort::BV64), b64 = c.var("b64", Sort::BV64);
  check(Rule::BvTruncPush, [&] { return c.trunc(c.zext(a, Sort::BV64), Sort::BV32); }, a);
  check(Rule::BvTruncPush, [&] { return c.trunc(c.bv_add(a64, c.bv_mul(c.bv_const(Sort::BV64, 3), b64)), Sort::BV32); },
        c.bv_add(c.trunc(a64, Sort::BV32), c.bv_mul(bv(3), c.trunc(b64, Sort::BV32))));
  untouched(Rule::BvTruncPush, [&] { return c.trunc(c.bv_udiv(a64, b64), Sort::BV32); });
}

TEST_F(Rules, BvBitFold) {
  check(Rule::BvBitFold, [&] { return c.bv_and(a, bv(0)); }, bv(0));
  check(Rule::BvBitFold, [&] { return c.bv_xor(a, a); }, bv(0));
  check(Rule::BvBitFold, [&] { return c.bv_and(tid, bv(1023)); }, tid);  // mask wider than the bounds
  check(Rule::BvBitFold, [&] { return c.bv_and(c.bv_add(c.bv_mul(bv(4), a), b), bv(3)); }, c.bv_and(b, bv(3)));
  check(Rule::BvBitFold, [&] { return c.bv_or(a, bv(0)); }, a);
  untouched(Rule::BvBitFold, [&] { return c.bv_and(tid, bv(511)); });
}

TEST_F(Rules, BvDivRemConst) {
  Expr lin = c.bv_add(c.bv_mul(bv(1024), ctaid), tid);
  check(Rule::BvDivRemConst, [&] { return c.bv_udiv(lin, bv(1024)); }, ctaid);
  check(Rule::BvDivRemConst, [&] { return c.bv_urem(lin, bv(1024)); }, tid);
  check(Rule::BvDivRemConst, [&] { return c.bv_lshr(lin, bv(10)); }, ctaid);
  Expr lin3 = c.bv_add(c.bv_mul(bv(3), ctaid), c.bv_urem(tid, bv(3)));
  check(Rule::BvDivRemConst, [&] { return c.bv_udiv(lin3, bv(3)); }, ctaid);
  check(Rule::BvDivRemConst, [&] { return c.bv_udiv(tid, bv(2048)); }, bv(0));
  // signed division by 1 (a stride of 1 in generic index code): x for every x, remainder 0
  check(Rule::BvDivRemConst, [&] { return c.bv_sdiv(a, bv(1)); }, a);
  check(Rule::BvDivRemConst, [&] { return c.bv_srem(a, bv(1)); }, bv(0));
  untouched(Rule::BvDivRemConst, [&] { return c.bv_sdiv(a, bv(static_cast<uint32_t>(-1))); });
  // Unbounded: 1024*a + b may wrap, so the quotient is not split.
  untouched(Rule::BvDivRemConst, [&] { return c.bv_udiv(c.bv_add(c.bv_mul(bv(1024), a), b), bv(1000)); });
}

TEST_F(Rules, BvDivModRecombine) {
  Expr i = c.bv_add(c.bv_mul(bv(256), ctaid), tid);  // a flat thread index
  for (uint64_t n : {768u, 1024u}) {                   // row = i / N, col = i % N (N = 1024: shifts and masks)
    Expr row = c.bv_udiv(i, bv(n)), col = c.bv_urem(i, bv(n));
    check(Rule::BvDivModRecombine, [&] { return c.bv_add(c.bv_mul(row, bv(n)), col); }, i);
    // scaled to a byte offset: 4*(row*N + col) = 4*i
    check(Rule::BvDivModRecombine, [&] { return c.bv_mul(bv(4), c.bv_add(c.bv_mul(row, bv(n)), col)); },
          c.bv_mul(bv(4), i));
    untouched(Rule::BvDivModRecombine, [&] { return c.bv_add(c.bv_mul(row, bv(n - 1)), col); });
  }
  // nested: (i / N / M) * N*M + ((i / N) % M) * N + i % N = i
  Expr q = c.bv_udiv(a, bv(6)), r0 = c.bv_urem(a, bv(6));
  Expr qq = c.bv_udiv(q, bv(5)), r1 = c.bv_urem(q, bv(5));
  check(Rule::BvDivModRecombine,
        [&] { return c.bv_add(std::vector<Expr>{c.bv_mul(qq, bv(30)), c.bv_mul(r1, bv(6)), r0}); }, a);
  // a flat index k split into three fields by a view (k < 2^17): (63 & k) + 64*(63 & (k >> 6)) + 4096*(k >> 12)
  auto b64 = [&](uint64_t v) { return bv(v, Sort::BV64); };
  Expr k = c.var("k", Sort::BV64, Bounds{0, (1u << 17) - 1});
  auto field = [&](unsigned shift, uint64_t mask) { return c.bv_and(b64(mask), c.bv_lshr(k, b64(shift))); };
  check(Rule::BvDivModRecombine,
        [&] {
          return c.bv_add(std::vector<Expr>{c.bv_and(b64(63), k), c.bv_mul(b64(64), field(6, 63)),
                                            c.bv_mul(b64(4096), c.bv_lshr(k, b64(12)))});
        },
        k);
  // the middle field's width must be the gap to the next shift
  untouched(Rule::BvDivModRecombine,
            [&] { return c.bv_add(c.bv_mul(b64(64), field(6, 31)), c.bv_mul(b64(4096), c.bv_lshr(k, b64(12)))); });
}

// The differences x - c*(x/c) and x - x%c (a kernel's `col = i - row*N`, `start = c - c%G`): the
// bounded field, not a sum no interval can bound.
TEST_F(Rules, BvDivModRecombineDifferences) {
  Expr i = c.bv_add(c.bv_mul(bv(256), ctaid), tid);
  auto minus = [&](Expr e) { return c.bv_mul(bv(0xffffffff), e); };
  check(Rule::BvDivModRecombine, [&] { return c.bv_add(i, minus(c.bv_mul(c.bv_udiv(i, bv(1000)), bv(1000)))); },
        c.bv_urem(i, bv(1000)));
  check(Rule::BvDivModRecombine, [&] { return c.bv_add(i, minus(c.bv_urem(i, bv(512)))); },
        c.bv_mul(bv(512), c.bv_udiv(i, bv(512))));
  // scaled, with a constant in x: 4*(i + 3) - 4000*((i + 3)/1000) = 4*((i + 3) % 1000)
  Expr i3 = c.bv_add(i, bv(3));
  check(Rule::BvDivModRecombine,
        [&] { return c.bv_add(c.bv_mul(bv(4), i3), minus(c.bv_mul(bv(4000), c.bv_udiv(i3, bv(1000))))); },
        c.bv_mul(bv(4), c.bv_urem(i3, bv(1000))));
  // the bounds of the result: a field below its divisor
  EXPECT_EQ(c.bv_bounds(c.bv_add(i, minus(c.bv_mul(c.bv_udiv(i, bv(1000)), bv(1000))))).hi, 999u);
  // near misses: another coefficient, another x
  untouched(Rule::BvDivModRecombine, [&] { return c.bv_add(i, minus(c.bv_mul(c.bv_udiv(i, bv(1000)), bv(999)))); });
  untouched(Rule::BvDivModRecombine, [&] { return c.bv_add(a, minus(c.bv_mul(c.bv_udiv(b, bv(8)), bv(8)))); });
  // unbounded operands (the identity holds modulo 2^32 whatever x is): against uint32_t arithmetic
  Expr d1 = c.bv_add(c.bv_add(a, b), minus(c.bv_mul(c.bv_udiv(c.bv_add(a, b), bv(12)), bv(12))));
  Expr d2 = c.bv_add(c.bv_add(a, b), minus(c.bv_urem(c.bv_add(a, b), bv(64))));
  std::mt19937 rng(7);
  for (int k = 0; k < 200; ++k) {
    uint32_t va = rng(), vb = rng(), x = va + vb;
    Env env;
    env.var = [&](std::string_view n, Sort) { return Value::of_bv(Sort::BV32, n == "a" ? va : vb); };
    Evaluator ev(env);
    EXPECT_EQ(uint32_t(ev(d1).bits), x - (x / 12) * 12) << va << " " << vb;
    EXPECT_EQ(uint32_t(ev(d2).bits), x - x % 64) << va << " " << vb;
  }
}

TEST_F(Rules, LoadFold) {
  int32_t T = c.tensor("T");
  check(Rule::LoadFold, [&] { return c.load(T, c.bv_const(Sort::BV64, 5)); }, c.elem(T, 5));
  untouched(Rule::LoadFold, [&] { return c.load(T, c.var("i", Sort::BV64)); });
}

TEST_F(Rules, AbsCanon) {
  check(Rule::AbsCanon, [&] { return c.abs(c.abs(x)); }, c.abs(x));
  check(Rule::AbsCanon, [&] { return c.abs(c.mul(r(-2), x)); }, c.mul(r(2), c.abs(x)));
  untouched(Rule::AbsCanon, [&] { return c.abs(c.add(x, y)); });
}

TEST_F(Rules, EveryRuleHasAName) {
  for (unsigned i = 0; i < static_cast<unsigned>(Rule::Count_); ++i)
    EXPECT_FALSE(rule_name(static_cast<Rule>(i)).empty());
}

// trunc of a quotient, remainder or shift of a value that fits the narrow width: the same field of
// the narrowed value; a mask's sum operand narrowed one level further.
TEST_F(Rules, BvTruncPushFields) {
  auto b64 = [&](uint64_t v) { return bv(v, Sort::BV64); };
  Expr k = c.var("k", Sort::BV64, Bounds{0, (1u << 20) - 1}), wide = c.var("w", Sort::BV64);
  check(Rule::BvTruncPush, [&] { return c.trunc(c.bv_lshr(k, b64(7)), Sort::BV32); },
        c.bv_lshr(c.trunc(k, Sort::BV32), bv(7)));
  check(Rule::BvTruncPush, [&] { return c.trunc(c.bv_and(b64(127), c.bv_add(b64(32), k)), Sort::BV32); },
        c.bv_and(bv(127), c.bv_add(bv(32), c.trunc(k, Sort::BV32))));
  // a value past 2^32: its high bits shift into the narrow field
  untouched(Rule::BvTruncPush, [&] { return c.trunc(c.bv_lshr(wide, b64(7)), Sort::BV32); });
}

// (x & (2^n - 1)) >> k with k < n: (x >> k) & (2^(n-k) - 1).
TEST_F(Rules, BvLowFieldShift) {
  check(Rule::BvBitFold, [&] { return c.bv_lshr(c.bv_and(bv(127), a), bv(4)); }, c.bv_and(bv(7), c.bv_lshr(a, bv(4))));
  untouched(Rule::BvBitFold, [&] { return c.bv_lshr(c.bv_and(bv(100), a), bv(4)); });  // not a low mask
}

// Off by default (Execute's ranges pair a 32-bit field with the guards on it); on, zero extension
// moves inside unsigned fields.
TEST_F(Rules, BvFieldExtPush) {
  EXPECT_FALSE(c.rule_enabled(Rule::BvFieldExtPush));
  c.set_rule_enabled(Rule::BvFieldExtPush, true);
  auto b64 = [&](uint64_t v) { return bv(v, Sort::BV64); };
  Expr za = c.zext(a, Sort::BV64);
  check(Rule::BvFieldExtPush, [&] { return c.zext(c.bv_lshr(a, bv(3)), Sort::BV64); }, c.bv_lshr(za, b64(3)));
  check(Rule::BvFieldExtPush, [&] { return c.zext(c.bv_and(bv(100), a), Sort::BV64); }, c.bv_and(b64(100), za));
  check(Rule::BvFieldExtPush, [&] { return c.zext(c.bv_urem(a, bv(30)), Sort::BV64); }, c.bv_urem(za, b64(30)));
  untouched(Rule::BvFieldExtPush, [&] { return c.zext(c.bv_mul(a, b), Sort::BV64); });
  untouched(Rule::BvFieldExtPush, [&] { return c.zext(c.bv_udiv(a, b), Sort::BV64); });  // no constant divisor
  c.set_rule_enabled(Rule::BvFieldExtPush, false);
}

// x = g*a + b with g dividing d and b below g: x / d = a / (d/g), x % d = g*(a % (d/g)) + b.
TEST_F(Rules, BvDivRemConstCommonFactor) {
  auto b64 = [&](uint64_t v) { return bv(v, Sort::BV64); };
  Expr k0 = c.var("k0", Sort::BV64, Bounds{0, 15}), k1 = c.var("k1", Sort::BV64, Bounds{0, 15});
  Expr x = c.bv_add(k0, c.bv_mul(b64(16), k1));
  check(Rule::BvDivRemConst, [&] { return c.bv_lshr(x, b64(7)); }, c.bv_lshr(k1, b64(3)));
  check(Rule::BvDivRemConst, [&] { return c.bv_udiv(x, b64(48)); }, c.bv_udiv(k1, b64(3)));
  EXPECT_EQ(c.bv_urem(x, b64(128)), c.bv_add(k0, c.bv_mul(b64(16), c.bv_and(b64(7), k1))));
  Expr k16 = c.var("k16", Sort::BV64, Bounds{0, 16});  // the remainder part reaches the factor
  untouched(Rule::BvDivRemConst, [&] { return c.bv_udiv(c.bv_add(k16, c.bv_mul(b64(16), k1)), b64(48)); });
}

// A block-split index: its quotient over x, its remainder over x with the multiples of 2^s dropped.
TEST_F(Rules, BvDivModRecombineCongruentRemainder) {
  auto b64 = [&](uint64_t v) { return bv(v, Sort::BV64); };
  Expr k = c.var("k", Sort::BV64, Bounds{0, 7199});
  Expr x = c.bv_add(b64(7200), k);
  Expr hi = c.bv_mul(b64(128), c.bv_lshr(x, b64(7)));
  check(Rule::BvDivModRecombine, [&] { return c.bv_add(hi, c.bv_and(b64(127), c.bv_add(b64(32), k))); }, x);
  untouched(Rule::BvDivModRecombine, [&] { return c.bv_add(hi, c.bv_and(b64(127), c.bv_add(b64(33), k))); });
}
