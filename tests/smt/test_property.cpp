// Property tests: random expression pairs that are equal by construction must
// be decided Equal; one-term perturbations must be decided Differ with a
// witness that really evaluates differently.
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "ir/eval.h"
#include "ir/print.h"
#include "smt/decide.h"

using namespace dirigo;
using ir::Expr;
using ir::Fn;
using ir::Sort;
using smt::Verdict;

namespace {

// A random term as a recipe, built into ir twice: plainly, and through
// randomly chosen equivalent spellings.
struct Recipe {
  enum Kind { Leaf, Const, Add, Mul, Min, Max, Abs, Exp, Neg, Ite, Sigmoid, Tanh } kind;
  int value = 0;  // Leaf: which leaf; Const: the constant
  std::vector<Recipe> kids;
};

struct Gen {
  std::mt19937 rng;
  explicit Gen(unsigned seed) : rng(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }

  Recipe term(int depth) {
    if (depth == 0 || pick(4) == 0) {
      if (pick(5) == 0) return {Recipe::Const, pick(5) - 2, {}};
      return {Recipe::Leaf, pick(4), {}};
    }
    auto k = static_cast<Recipe::Kind>(2 + pick(10));
    int arity = (k == Recipe::Add || k == Recipe::Mul || k == Recipe::Min || k == Recipe::Max) ? 2
                : k == Recipe::Ite ? 4 : 1;
    Recipe r{k, 0, {}};
    for (int i = 0; i < arity; ++i) r.kids.push_back(term(depth - 1));
    return r;
  }
};

struct Builder {
  ir::Context& ctx;
  std::vector<Expr> leaves;
  std::mt19937* rng;  // null: plain spelling
  bool alt() { return rng && std::uniform_int_distribution<int>(0, 1)(*rng); }

  Expr build(const Recipe& r) {
    std::vector<Expr> k;
    for (const Recipe& c : r.kids) k.push_back(build(c));
    Expr one = ctx.real_const(1), two = ctx.real_const(2);
    switch (r.kind) {
      case Recipe::Leaf: return leaves[r.value];
      case Recipe::Const: return ctx.real_const(r.value);
      case Recipe::Add: return alt() ? ctx.sub(k[1], ctx.neg(k[0])) : ctx.add(k[0], k[1]);
      case Recipe::Mul: return alt() ? ctx.mul(k[1], k[0]) : ctx.mul(k[0], k[1]);
      case Recipe::Min: return alt() ? ctx.ite(ctx.le(k[0], k[1]), k[0], k[1]) : ctx.min(k[0], k[1]);
      case Recipe::Max: return alt() ? ctx.neg(ctx.min(ctx.neg(k[0]), ctx.neg(k[1]))) : ctx.max(k[0], k[1]);
      case Recipe::Abs: return alt() ? ctx.max(k[0], ctx.neg(k[0])) : ctx.abs(k[0]);
      case Recipe::Exp: {
        if (!alt()) return ctx.call(Fn::Exp, k[0]);
        Expr half = ctx.call(Fn::Exp, ctx.mul(ctx.real_const(mpq_class(1, 2)), k[0]));
        return ctx.mul(half, half);
      }
      case Recipe::Neg: return alt() ? ctx.mul(ctx.real_const(-1), k[0]) : ctx.neg(k[0]);
      case Recipe::Ite:
        return alt() ? ctx.ite(ctx.le(k[1], k[0]), k[3], k[2]) : ctx.ite(ctx.lt(k[0], k[1]), k[2], k[3]);
      case Recipe::Sigmoid:
        return alt() ? ctx.div(one, ctx.add(one, ctx.call(Fn::Exp, ctx.neg(k[0])))) : ctx.call(Fn::Sigmoid, k[0]);
      case Recipe::Tanh:
        return alt() ? ctx.sub(ctx.mul(two, ctx.call(Fn::Sigmoid, ctx.mul(two, k[0]))), one)
                     : ctx.call(Fn::Tanh, k[0]);
    }
    return nullptr;
  }
};

struct PropertyTest : ::testing::Test {
  ir::Context ctx;
  smt::Solver solver;
  std::vector<Expr> leaves;
  void SetUp() override {
    int32_t t = ctx.tensor("P");
    leaves = {ctx.var("x", Sort::Real), ctx.var("y", Sort::Real), ctx.elem(t, 0), ctx.elem(t, 1)};
  }
};

}  // namespace

TEST_F(PropertyTest, EqualByConstructionIsEqual) {
  Gen gen(1234);
  std::mt19937 spell(99);
  int by_solver = 0;
  for (int i = 0; i < 80; ++i) {
    std::vector<Recipe> terms;
    for (int j = 0; j < 3; ++j) terms.push_back(gen.term(3));
    Builder plain{ctx, leaves, nullptr}, other{ctx, leaves, &spell};
    std::vector<Expr> ta, tb;
    for (const Recipe& r : terms) ta.push_back(plain.build(r));
    for (auto it = terms.rbegin(); it != terms.rend(); ++it) tb.push_back(other.build(*it));
    Expr a = ctx.add(ta), b = ctx.add(tb);
    smt::Decision d = solver.decide(ctx, a, b);
    EXPECT_EQ(d.verdict, Verdict::Equal) << i << ": " << ir::to_string(ctx, a) << "\n vs " << ir::to_string(ctx, b)
                                         << "\n " << smt::verdict_name(d.verdict) << " " << d.reason;
    by_solver += d.solver_called;
  }
  // some pairs need Z3 (min vs ite spellings), most close before it
  EXPECT_GT(by_solver, 0);
  EXPECT_LT(solver.stats().solver_calls, 80u);
}

TEST_F(PropertyTest, OneTermPerturbationDiffers) {
  Gen gen(4321);
  int differ = 0, cases = 0;
  for (int i = 0; i < 80; ++i) {
    std::vector<Recipe> terms;
    for (int j = 0; j < 3; ++j) terms.push_back(gen.term(3));
    Builder plain{ctx, leaves, nullptr};
    std::vector<Expr> ta, tb;
    for (const Recipe& r : terms) ta.push_back(plain.build(r));
    tb = ta;
    size_t j = static_cast<size_t>(gen.pick(3));
    if (tb[j]->is_const()) continue;  // scaling a constant term may be a no-op (0)
    tb[j] = ctx.mul(ctx.real_const(2), tb[j]);
    ++cases;
    Expr a = ctx.add(ta), b = ctx.add(tb);
    smt::Decision d = solver.decide(ctx, a, b);
    EXPECT_NE(d.verdict, Verdict::Equal) << ir::to_string(ctx, a) << "\n vs " << ir::to_string(ctx, b);
    if (d.verdict != Verdict::Differ) continue;
    ++differ;
    ir::Evaluator ev(d.witness->env());
    EXPECT_TRUE(smt::values_differ(ev(a), ev(b), 1e-9, 1e-12)) << d.witness->to_string(ctx);
  }
  EXPECT_GE(differ * 10, cases * 9) << differ << " of " << cases;
}

// Mixed-sort random pairs (conversions, rounding, loads, sqrt/log/recip):
// whatever the verdict, Equal must agree with evaluation at random points and
// Differ must carry a witness that evaluates differently. Nothing may throw.
TEST_F(PropertyTest, MixedSortsVerdictsAgreeWithEvaluation) {
  std::mt19937 rng(77);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  int32_t tensor = ctx.tensor("Q");
  Expr b8 = ctx.var("b8", Sort::BV8);
  Expr idx = ctx.zext(ctx.var("i", Sort::BV8, ir::Bounds{0, 3}), Sort::BV64);
  std::function<Expr(int)> term = [&](int depth) -> Expr {
    if (depth == 0) {
      switch (pick(5)) {
        case 0: return ctx.bv_to_real(b8, pick(2) == 0);
        case 1: return ctx.load(tensor, idx);
        case 2: return ctx.real_const(pick(7) - 3);
        default: return leaves[pick(4)];
      }
    }
    Expr u = term(depth - 1);
    switch (pick(10)) {
      case 0: return ctx.add(u, term(depth - 1));
      case 1: return ctx.mul(u, term(depth - 1));
      case 2: return ctx.call(Fn::Floor, u);
      case 3: return ctx.call(Fn::Round, u);
      case 4: return ctx.bv_to_real(ctx.real_to_bv(u, Sort::BV8, pick(2) == 0, ir::RoundMode(pick(4))), true);
      case 5: return ctx.call(Fn::Sqrt, ctx.mul(u, u));
      case 6: return ctx.call(Fn::Exp, u);
      case 7: return ctx.max(u, term(depth - 1));
      case 8: return ctx.ite(ctx.lt(u, term(depth - 1)), u, ctx.neg(u));
      default: return ctx.abs(u);
    }
  };
  smt::DecideOptions opt;
  opt.timeout_ms = 2000;
  int verdicts[4] = {};
  for (int n = 0; n < 60; ++n) {
    Expr a = term(2), b = n % 3 == 0 ? ctx.add(a, ctx.real_const(0)) : term(2);
    if (n % 3 == 1) b = ctx.sub(ctx.add(a, b), b);  // equal by construction, canonical or not
    smt::Decision d;
    ASSERT_NO_THROW(d = solver.decide(ctx, a, b, opt));
    ++verdicts[static_cast<int>(d.verdict)];
    if (d.verdict == Verdict::Differ) {
      ir::Evaluator ev(d.witness->env());
      EXPECT_TRUE(smt::values_differ(ev(a), ev(b), 1e-9, 1e-12)) << d.witness->to_string(ctx);
    }
    if (d.verdict == Verdict::Equal) {
      for (int s = 0; s < 20; ++s) {
        std::vector<smt::LeafValue> point;
        for (Expr l : {leaves[0], leaves[1]}) point.push_back({smt::LeafValue::Kind::Var, -1, 0, std::string(l->name()), ir::Value::of_real(std::uniform_real_distribution<double>(-4, 4)(rng))});
        for (int k = 0; k < 4; ++k) point.push_back({smt::LeafValue::Kind::Elem, tensor, k, "", ir::Value::of_real(std::uniform_real_distribution<double>(-4, 4)(rng))});
        for (int k = 0; k < 2; ++k) point.push_back({smt::LeafValue::Kind::Elem, leaves[2]->tensor(), k, "", ir::Value::of_real(std::uniform_real_distribution<double>(-4, 4)(rng))});
        point.push_back({smt::LeafValue::Kind::Var, -1, 0, "b8", ir::Value::of_bv(Sort::BV8, static_cast<uint64_t>(pick(256)))});
        point.push_back({smt::LeafValue::Kind::Var, -1, 0, "i", ir::Value::of_bv(Sort::BV8, static_cast<uint64_t>(pick(4)))});
        smt::Witness w;
        w.leaves = point;
        ir::Evaluator ev(w.env());
        EXPECT_FALSE(smt::values_differ(ev(a), ev(b), 1e-6, 1e-9)) << ir::to_string(ctx, a) << " vs " << ir::to_string(ctx, b);
      }
    }
  }
  std::printf("mixed: equal %d differ %d unknown %d timeout %d\n", verdicts[0], verdicts[1], verdicts[2], verdicts[3]);
  EXPECT_GT(verdicts[static_cast<int>(Verdict::Equal)], 0);
  EXPECT_GT(verdicts[static_cast<int>(Verdict::Differ)], 0);
}
