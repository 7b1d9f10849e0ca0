// Printing (human form, SMT-LIB) and the structural helpers (substitute, leaves, cut points).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/eval.h"
#include "ir/expr.h"
#include "ir/print.h"

using namespace dirigo::ir;

TEST(Print, HumanForm) {
  Context c;
  Expr x = c.var("x", Sort::Real), y = c.var("y", Sort::Real);
  int32_t T = c.tensor("Tp");
  EXPECT_EQ(to_string(c, c.elem(T, 17)), "Tp[17]");
  EXPECT_EQ(to_string(c, c.real_const(mpq_class(-3, 4))), "-3/4");
  Expr s = c.add(x, y);
  std::string one = to_string(c, s);
  EXPECT_TRUE(one == "(x + y)" || one == "(y + x)") << one;
  EXPECT_EQ(to_string(c, c.call(Fn::Exp, x)), "exp(x)");
  EXPECT_EQ(to_string(c, c.load(T, c.var("i", Sort::BV64))), "Tp[i]");
}

TEST(Print, SharedSubtermsAreLetBound) {
  Context c;
  Expr x = c.var("x", Sort::Real);
  Expr e = c.call(Fn::Exp, c.add(x, c.real_const(1)));
  Expr both = c.mul(c.call(Fn::Tanh, e), c.call(Fn::Sin, e));
  std::string s = to_string(c, both);
  EXPECT_NE(s.find("let t0 = exp((1 + x));"), std::string::npos) << s;
  EXPECT_EQ(s.find("exp(", s.find(';')), std::string::npos) << "shared term printed twice: " << s;
  PrintOptions no_let;
  no_let.let_shared = false;
  std::string t = to_string(c, both, no_let);
  EXPECT_EQ(t.find("let"), std::string::npos);
}

TEST(Print, IteWithElidedOperandsPrintsAsFunction) {
  // Past the node budget an ite's elided operands merge into one "…" part; the (c ? a : b) form
  // then read parts past the end (bad_alloc on a real transposed-conv location).
  Context c;
  Expr x = c.var("x", Sort::Real), y = c.var("y", Sort::Real);
  Expr e = c.ite(c.lt(x, y), c.call(Fn::Exp, c.add(x, y)), c.call(Fn::Tanh, c.mul(x, y)));
  PrintOptions tiny;
  tiny.max_nodes = 2;  // the ite and its condition: both arms elided
  std::string s = to_string(c, e, tiny);
  EXPECT_EQ(s.rfind("ite(", 0), 0u) << s;
  EXPECT_NE(s.find("nodes)"), std::string::npos) << s;
  EXPECT_EQ(to_string(c, c.ite(c.lt(x, y), c.call(Fn::Exp, x), y)), "((x < y) ? exp(x) : y)");
}

TEST(Print, BudgetBoundsOutputOfHugeDag) {
  Context c;
  // a chain of 1e6 nodes plus a sum of 1e5 terms
  Expr e = c.var("x", Sort::Real);
  for (int i = 0; i < 333333; ++i) e = c.add(c.mul(c.real_const(2), c.call(Fn::Tanh, e)), c.real_const(1));
  ASSERT_GE(dag_size(e), 1000000u);
  int32_t T = c.tensor("Tbig");
  std::vector<Expr> ts;
  for (int i = 0; i < 100000; ++i) ts.push_back(c.elem(T, i));
  Expr big = c.add(e, c.add(ts));
  std::string s = to_string(c, big);
  EXPECT_LT(s.size(), 20000u) << s.substr(0, 2000);
  EXPECT_NE(s.find("more)"), std::string::npos) << s;  // the 100,000-term sum: operands elided
  std::string chain = to_string(c, e);
  EXPECT_LT(chain.size(), 20000u);
  EXPECT_NE(chain.find("nodes)"), std::string::npos) << chain;  // the deep chain: node budget
  PrintOptions small;
  small.max_nodes = 10;
  EXPECT_LT(to_string(c, big, small).size(), 2000u);
  // SMT-LIB output of the deep chain stays linear (long terms are named)
  std::string smt = to_smtlib(c, e);
  EXPECT_LT(smt.size(), 400u * 1000000u);
  EXPECT_NE(smt.find("(define-fun |t"), std::string::npos);
}

TEST(Print, WideNodePrintsAtMostMaxOperands) {
  Context c;
  int32_t T = c.tensor("Tw");
  std::vector<Expr> mins;
  for (int i = 0; i < 64; ++i) mins.push_back(c.min(c.elem(T, 2 * i), c.elem(T, 2 * i + 1)));
  std::string s = to_string(c, c.add(mins));
  size_t printed = 0;
  for (size_t at = s.find("min("); at != std::string::npos; at = s.find("min(", at + 1)) ++printed;
  EXPECT_EQ(printed, 8u) << s;
  EXPECT_NE(s.find("…(+56 more)"), std::string::npos) << s;
  PrintOptions all;
  all.max_operands = SIZE_MAX;
  all.max_nodes = SIZE_MAX;
  std::string full = to_string(c, c.add(mins), all);
  EXPECT_EQ(full.find("more)"), std::string::npos);
  EXPECT_NE(full.find("Tw[127]"), std::string::npos);
}

TEST(Print, SmtLib) {
  Context c;
  Expr x = c.var("x", Sort::Real);
  Expr a = c.var("a", Sort::BV32);
  int32_t T = c.tensor("Ts");
  Expr lhs = c.add(c.call(Fn::Exp, x), c.elem(T, 3));
  Expr rhs = c.add(c.bv_to_real(c.bv_mul(a, c.bv_const(Sort::BV32, 3)), true), c.min(x, c.real_const(mpq_class(1, 2))));
  std::string s = to_smtlib(c, lhs, rhs);
  EXPECT_NE(s.find("(declare-const |x| Real)"), std::string::npos) << s;
  EXPECT_NE(s.find("(declare-const |a| (_ BitVec 32))"), std::string::npos) << s;
  EXPECT_NE(s.find("(declare-const |Ts[3]| Real)"), std::string::npos) << s;
  EXPECT_NE(s.find("(declare-fun |exp| (Real) Real)"), std::string::npos) << s;
  EXPECT_NE(s.find("(assert (distinct"), std::string::npos) << s;
  EXPECT_NE(s.find("(/ 1.0 2.0)"), std::string::npos) << s;
  EXPECT_NE(s.find("(check-sat)"), std::string::npos);
  // a Load makes the tensor an array-like function; its elements use it too
  Expr ld = c.add(c.load(T, c.var("i", Sort::BV64)), c.elem(T, 3));
  std::string t = to_smtlib(c, ld);
  EXPECT_NE(t.find("(declare-fun |Ts| ((_ BitVec 64)) Real)"), std::string::npos) << t;
  EXPECT_NE(t.find("(|Ts| (_ bv3 64))"), std::string::npos) << t;
}

TEST(Analysis, SubstituteFoldsLoadsAndIsReusable) {
  Context c;
  int32_t A = c.tensor("A_sub"), B = c.tensor("B_sub");
  Expr i = c.var("i", Sort::BV64);
  Expr e = c.add(c.load(A, i), c.elem(B, 2));
  Substituter sub(c, [&](Expr leaf) -> Expr {
    if (leaf->op == Op::Var) return c.bv_const(Sort::BV64, 5);
    if (leaf->op == Op::TensorElem && leaf->tensor() == A) return c.mul(c.real_const(2), c.elem(B, leaf->index()));
    return nullptr;
  });
  Expr r = sub(e);
  EXPECT_EQ(r, c.add(c.mul(c.real_const(2), c.elem(B, 5)), c.elem(B, 2)));
  EXPECT_EQ(sub(c.mul(e, e)), c.mul(r, r));  // memo reused for the shared part
  EXPECT_EQ(substitute(c, e, [](Expr) { return nullptr; }), e);
}

TEST(Analysis, LeavesSizesData) {
  Context c;
  Expr x = c.var("x", Sort::Real);
  int32_t T = c.tensor("T_leaves");
  Expr e = c.add(c.mul(x, c.elem(T, 1)), c.call(Fn::Exp, x));
  auto ls = leaves(e);
  EXPECT_EQ(ls.size(), 2u);
  EXPECT_TRUE(depends_on_data(e));
  EXPECT_FALSE(depends_on_data(c.call(Fn::Exp, x)));
  EXPECT_TRUE(contains_op(e, Op::Call));
  EXPECT_FALSE(contains_op(e, Op::Min));
  EXPECT_EQ(dag_size(e), 5u);  // x, T[1], x*T[1], exp(x), the sum: x counted once
}

TEST(Analysis, CutSharedReplacesMaximalCommonSubterms) {
  Context c;
  Expr x = c.var("x", Sort::Real), y = c.var("y", Sort::Real);
  Expr shared = c.call(Fn::Exp, c.add(x, y));
  Expr a = c.add(c.mul(c.real_const(2), shared), x);
  Expr b = c.add(c.call(Fn::Tanh, shared), y);
  CutResult r = cut_shared(c, a, b);
  ASSERT_EQ(r.cuts.size(), 1u);
  EXPECT_EQ(r.cuts[0].second, shared);  // maximal: exp(x+y), not x+y
  Expr v = r.cuts[0].first;
  EXPECT_EQ(v->op, Op::Var);
  EXPECT_EQ(r.a, c.add(c.mul(c.real_const(2), v), x));
  EXPECT_EQ(r.b, c.add(c.call(Fn::Tanh, v), y));
  // equal sides collapse to one variable
  CutResult same = cut_shared(c, a, c.add(x, c.add(shared, shared)));
  EXPECT_EQ(same.a, same.b);
  EXPECT_EQ(same.a->op, Op::Var);
  // sub-expressions below a cut are not cut again
  Expr a2 = c.call(Fn::Tanh, shared), b2 = c.add(shared, c.add(x, y));
  CutResult r2 = cut_shared(c, a2, b2);
  EXPECT_EQ(r2.cuts.size(), 1u);
}

TEST(Analysis, ErrorsAreClear) {
  Context c;
  Expr x = c.var("x", Sort::Real), a = c.var("a", Sort::BV32);
  EXPECT_THROW(c.add(x, a), std::invalid_argument);
  EXPECT_THROW(c.bv_add(a, c.var("b", Sort::BV64)), std::invalid_argument);
  EXPECT_THROW(c.zext(a, Sort::BV16), std::invalid_argument);
  EXPECT_THROW(c.call(Fn::Pow, x), std::invalid_argument);
  EXPECT_THROW(c.ite(x, x, x), std::invalid_argument);
  EXPECT_THROW(c.real_const_from_double(std::numeric_limits<double>::infinity()), std::invalid_argument);
  EXPECT_THROW(c.elem(1 << 30, 0), std::out_of_range);
  EXPECT_THROW(bv_sort(12), std::invalid_argument);
  try {
    c.add(x, a);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bv32"), std::string::npos) << e.what();
  }
}

TEST(Scale, MillionTermSumAndMillionDeepChain) {
  Context c;
  int32_t T = c.tensor("T_scale");
  Expr w = c.var("w", Sort::Real);
  std::vector<Expr> ts;
  for (int i = 0; i < 1000000; ++i) ts.push_back(c.mul(w, c.elem(T, i)));
  Expr sum = c.add(ts);
  EXPECT_EQ(sum->nargs, 1000000u);
  std::reverse(ts.begin(), ts.end());
  EXPECT_EQ(c.add(ts), sum);
  EXPECT_EQ(c.sub(sum, sum), c.real_const(0));
  // substitute over the big sum
  Expr twice = substitute(c, sum, [&](Expr l) { return l == w ? c.real_const(2) : nullptr; });
  EXPECT_EQ(twice->nargs, 1000000u);
  // a chain of depth 1e6 that does not collapse: e = 2*tanh(e) + 1
  Expr e = c.var("x", Sort::Real);
  for (int i = 0; i < 1000000; ++i) e = c.add(c.mul(c.real_const(2), c.call(Fn::Tanh, e)), c.real_const(1));
  EXPECT_EQ(dag_size(e), 3000003u);  // 3 nodes per step + x, 1, 2
  Env env;
  env.var = [](std::string_view, Sort) { return Value::of_real(0.5); };
  Evaluator ev(env);
  double v = ev.real(e);
  EXPECT_TRUE(std::isfinite(v));
  Expr e2 = substitute(c, e, [&](Expr l) { return l->op == Op::Var ? c.real_const(0) : nullptr; });
  EXPECT_NE(e2, e);
  Context other;
  Expr imp = other.import(e);
  EXPECT_EQ(imp->hash, e->hash);
  CutResult r = cut_shared(c, e, c.add(e, c.real_const(1)));
  EXPECT_EQ(r.cuts.size(), 1u);
  EXPECT_FALSE(to_string(c, e).empty());
  // a recurrence e = e*y + 1 stays linear in size (no runaway polynomial expansion)
  Expr y = c.var("y", Sort::Real), f = y;
  for (int i = 0; i < 100000; ++i) f = c.add(c.mul(f, y), c.real_const(1));
  EXPECT_LT(dag_size(f), 100u * 100000u);
}
