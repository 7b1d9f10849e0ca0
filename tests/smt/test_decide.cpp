#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include <gtest/gtest.h>

#include "ir/eval.h"
#include "ir/print.h"
#include "smt/decide.h"
#include "smt/falsify.h"

using namespace dirigo;
using ir::Expr;
using ir::Fn;
using ir::Sort;
using smt::Verdict;

namespace {

struct DecideTest : ::testing::Test {
  ir::Context ctx;
  smt::Solver solver;
  // These tests are about canonical forms, cut points and Z3: random-point falsification
  // (test_falsify.cpp, DecideSampling below) would answer most Differ queries before Z3.
  smt::DecideOptions opt = [] { smt::DecideOptions o; o.falsify_points = 0; return o; }();
  Expr x = ctx.var("x", Sort::Real);
  Expr y = ctx.var("y", Sort::Real);
  Expr z = ctx.var("z", Sort::Real);
  Expr c(int64_t n) { return ctx.real_const(n); }
  Expr exp(Expr a) { return ctx.call(Fn::Exp, a); }

  smt::Decision decide(Expr a, Expr b) { return solver.decide(ctx, a, b, opt); }

  // Equal, and whether Z3 had to be asked.
  void expect_equal(Expr a, Expr b, bool solver_expected) {
    smt::Decision d = decide(a, b);
    EXPECT_EQ(d.verdict, Verdict::Equal) << ir::to_string(ctx, a) << " vs " << ir::to_string(ctx, b) << ": "
                                         << smt::verdict_name(d.verdict) << " " << d.reason;
    EXPECT_EQ(d.solver_called, solver_expected) << ir::to_string(ctx, a) << " vs " << ir::to_string(ctx, b);
  }
  // Differ, with a witness that evaluates differently in a fresh Evaluator.
  smt::Decision expect_differ(Expr a, Expr b) {
    smt::Decision d = decide(a, b);
    EXPECT_EQ(d.verdict, Verdict::Differ) << ir::to_string(ctx, a) << " vs " << ir::to_string(ctx, b) << ": "
                                          << smt::verdict_name(d.verdict) << " " << d.reason;
    if (d.verdict == Verdict::Differ) {
      EXPECT_TRUE(d.witness.has_value());
      ir::Evaluator ev(d.witness->env());
      ir::Value va = ev(a), vb = ev(b);
      EXPECT_TRUE(smt::values_differ(va, vb, 1e-9, 1e-12)) << d.witness->to_string(ctx);
    }
    return d;
  }
  double witness_of(const smt::Decision& d, std::string_view var) {
    for (const smt::LeafValue& l : d.witness->leaves)
      if (l.kind == smt::LeafValue::Kind::Var && l.name == var) return l.value.real;
    ADD_FAILURE() << "no witness value for " << var;
    return NAN;
  }
};

}  // namespace

// ---- equal pairs

TEST_F(DecideTest, PointerEqualNeedsNoSolver) {
  expect_equal(ctx.mul(x, y), ctx.mul(y, x), false);
  expect_equal(ctx.add(ctx.add(x, y), z), ctx.add(x, ctx.add(z, y)), false);
  expect_equal(exp(ctx.add(x, y)), exp(ctx.add(y, x)), false);
  EXPECT_EQ(solver.stats().solver_calls, 0u);
  EXPECT_EQ(solver.stats().equal_canonical, 3u);
}

TEST_F(DecideTest, NonlinearEqualitiesGoToZ3) {
  Expr xx = ctx.mul(x, x);
  expect_equal(ctx.max(xx, c(0)), xx, true);                                   // x*x >= 0
  expect_equal(ctx.mul(ctx.abs(x), ctx.abs(x)), xx, true);                     // |x|^2 = x^2
  expect_equal(ctx.add(ctx.min(x, y), ctx.max(x, y)), ctx.add(x, y), true);    // min + max
  expect_equal(ctx.ite(ctx.lt(x, y), ctx.sub(y, x), ctx.sub(x, y)), ctx.abs(ctx.sub(x, y)), true);
  EXPECT_GE(solver.stats().solver_calls, 4u);
  EXPECT_GE(solver.stats().unsat, 4u);
}

TEST_F(DecideTest, MinMaxIteDiffer) {
  expect_differ(ctx.min(x, y), ctx.max(x, y));
  expect_differ(ctx.ite(ctx.lt(x, y), x, y), ctx.max(x, y));
  expect_differ(ctx.abs(x), x);
}

// ---- Ackermannized functions

TEST_F(DecideTest, AckermannCongruence) {
  // equal only because equal arguments give equal results
  Expr a = ctx.ite(ctx.eq(x, y), ctx.sub(exp(x), exp(y)), c(0));
  expect_equal(a, c(0), true);
}

TEST_F(DecideTest, AckermannMonotonicity) {
  expect_equal(ctx.max(exp(x), exp(y)), exp(ctx.max(x, y)), true);
}

TEST_F(DecideTest, ExpOfDifferentArgumentsDiffers) {
  smt::Decision d = expect_differ(exp(x), exp(y));
  ASSERT_TRUE(d.witness);
  EXPECT_NE(witness_of(d, "x"), witness_of(d, "y"));
  EXPECT_TRUE(d.solver_called);
}

TEST_F(DecideTest, EqualButUnprovableIsNeverDiffer) {
  // erf is odd, which the abstraction does not know: the model is spurious,
  // and the confirmation by evaluation must catch it.
  Expr a = ctx.call(Fn::Erf, ctx.neg(x));
  Expr b = ctx.neg(ctx.call(Fn::Erf, x));
  smt::Decision d = decide(a, b);
  EXPECT_NE(d.verdict, Verdict::Differ) << d.witness->to_string(ctx);
  EXPECT_NE(d.verdict, Verdict::Equal);
  EXPECT_GE(solver.stats().spurious, 1u);
  // sin^2 + cos^2 == 1
  Expr s = ctx.call(Fn::Sin, x), co = ctx.call(Fn::Cos, x);
  d = decide(ctx.add(ctx.mul(s, s), ctx.mul(co, co)), c(1));
  EXPECT_NE(d.verdict, Verdict::Differ);
}

TEST_F(DecideTest, SpuriousFunctionValuesAreRefinedAway) {
  // Different only at x == 2. At x == 1 the abstraction may pick erf(1) + erf(-1) != 0,
  // which the evaluation refutes; the sample point erf(+-1) then forces x == 2.
  Expr at1 = ctx.add(ctx.call(Fn::Erf, x), ctx.call(Fn::Erf, ctx.neg(x)));
  Expr a = ctx.ite(ctx.eq(x, c(1)), at1, ctx.ite(ctx.eq(x, c(2)), c(1), c(0)));
  for (int seed = 0; seed < 4; ++seed) {
    opt.random_seed = static_cast<unsigned>(seed);
    opt.use_cache = false;
    smt::Decision d = expect_differ(a, c(0));
    if (d.witness) EXPECT_EQ(witness_of(d, "x"), 2.0);
  }
  EXPECT_GE(solver.stats().refinements, 1u);  // with these seeds Z3 does pick x == 1 first
}

// ---- differ pairs

TEST_F(DecideTest, DifferWitnessEvaluatesDifferently) {
  expect_differ(ctx.mul(x, y), ctx.add(ctx.mul(x, y), ctx.mul(ctx.real_const(mpq_class(1, 1000)), z)));
  expect_differ(ctx.div(x, y), ctx.div(y, x));
  expect_differ(ctx.mul(x, x), ctx.mul(x, y));
}

TEST_F(DecideTest, DifferenceBelowFp64ResolutionIsScaledUp) {
  // the first model (y small) differs by ~1e-20, invisible next to x; a second
  // query asks for a difference of at least 1
  Expr tiny = ctx.real_const(mpq_class(1, mpz_class("100000000000000000000")));
  smt::Decision d = expect_differ(ctx.add(x, c(1)), ctx.add(ctx.add(x, c(1)), ctx.mul(tiny, y)));
  ASSERT_TRUE(d.witness);
  EXPECT_GE(std::fabs(witness_of(d, "y")), 1e19);
  EXPECT_GE(d.solver_checks, 2u);  // the plain model was below resolution
}

TEST_F(DecideTest, WitnessCoversEveryOriginalLeaf) {
  int32_t t = ctx.tensor("X");
  Expr e0 = ctx.elem(t, 0), e1 = ctx.elem(t, 1), e2 = ctx.elem(t, 2);
  Expr common = ctx.mul(e2, e2);
  smt::Decision d = expect_differ(ctx.add(common, e0), ctx.add(common, e1));
  ASSERT_TRUE(d.witness);
  // e2 cancels before the solver: it is not listed, so it is 0 in the witness
  EXPECT_EQ(d.witness->leaves.size(), 2u);
  EXPECT_LE(d.query_nodes, 5u);  // e0 + (-1)*e1
  // variables are always listed, with their bounds respected when unconstrained
  Expr v = ctx.var("v", Sort::BV32, ir::Bounds{16, 31});
  Expr r = ctx.bv_to_real(v, false);
  smt::Decision dv = expect_differ(ctx.add(ctx.mul(r, e2), e0), ctx.add(ctx.mul(r, e2), e1));
  ASSERT_TRUE(dv.witness);
  bool listed = false;
  for (const smt::LeafValue& l : dv.witness->leaves)
    if (l.name == "v") {
      listed = true;
      EXPECT_EQ(l.value.bits, 16u);
    }
  EXPECT_TRUE(listed);
}

TEST_F(DecideTest, CutVariablesDoNotLeakIntoTheWitness) {
  Expr shared = exp(ctx.mul(x, y));
  smt::Decision d = expect_differ(ctx.add(shared, z), ctx.mul(shared, z));
  ASSERT_TRUE(d.witness);
  for (const smt::LeafValue& l : d.witness->leaves) EXPECT_FALSE(l.name.starts_with("!")) << l.name;
}

// ---- symbolic loads

TEST_F(DecideTest, LoadsAreConsistentWithElements) {
  int32_t t = ctx.tensor("T");
  Expr i = ctx.var("i", Sort::BV64);
  Expr ld = ctx.load(t, i);
  Expr e5 = ctx.elem(t, 5);
  // equal: the load reads element 5 whenever i == 5
  expect_equal(ctx.ite(ctx.eq(i, ctx.bv_const(Sort::BV64, 5)), ld, e5), e5, true);
  smt::Decision d = expect_differ(ld, e5);
  ASSERT_TRUE(d.witness);
  EXPECT_GE(d.witness->leaves.size(), 2u);
}

// ---- bitvectors

TEST_F(DecideTest, AffineAddressInversion) {
  Expr tid = ctx.var("tid", Sort::BV32, ir::Bounds{0, 255});
  Expr base = ctx.bv_const(Sort::BV32, 16);
  Expr addr = ctx.bv_add(ctx.bv_mul(ctx.bv_const(Sort::BV32, 4), tid), base);
  smt::SatResult r = solver.solve(ctx, ctx.eq(addr, ctx.bv_const(Sort::BV32, 1020)), opt);
  ASSERT_EQ(r.status, smt::SatResult::Status::Sat) << r.reason;
  ASSERT_EQ(r.model.size(), 1u);
  EXPECT_EQ(r.model[0].value.bits, 251u);
  // odd target: no thread writes it
  r = solver.solve(ctx, ctx.eq(addr, ctx.bv_const(Sort::BV32, 1021)), opt);
  EXPECT_EQ(r.status, smt::SatResult::Status::Unsat) << r.reason;
  // in range of the arithmetic but outside tid's bounds
  r = solver.solve(ctx, ctx.eq(addr, ctx.bv_const(Sort::BV32, 4 * 300 + 16)), opt);
  EXPECT_EQ(r.status, smt::SatResult::Status::Unsat) << r.reason;
}

TEST_F(DecideTest, BitvectorWitness) {
  Expr t = ctx.var("t", Sort::BV32);
  Expr four = ctx.bv_const(Sort::BV32, 4);
  // (4t)/4 == t only without overflow
  smt::Decision d = expect_differ(ctx.bv_udiv(ctx.bv_mul(four, t), four), t);
  ASSERT_TRUE(d.witness);
  EXPECT_GE(d.witness->leaves[0].value.bits, uint64_t{1} << 30);
  // with tid bounded, it is equal
  Expr tid = ctx.var("tid", Sort::BV32, ir::Bounds{0, 255});
  smt::Decision e = decide(ctx.bv_udiv(ctx.bv_mul(four, tid), four), tid);
  EXPECT_EQ(e.verdict, Verdict::Equal) << e.reason;
}

TEST_F(DecideTest, ConversionsRoundTrip) {
  Expr b = ctx.var("b", Sort::BV8);
  Expr r = ctx.bv_to_real(b, true);
  smt::Decision d = decide(ctx.real_to_bv(r, Sort::BV8, true, ir::RoundMode::NearestEven), b);
  EXPECT_EQ(d.verdict, Verdict::Equal) << d.reason;
  // rounding modes differ at x = 0.5
  expect_differ(ctx.real_to_bv(x, Sort::BV32, true, ir::RoundMode::Down),
                ctx.real_to_bv(x, Sort::BV32, true, ir::RoundMode::Up));
  expect_differ(ctx.call(Fn::Floor, x), ctx.call(Fn::Round, x));
}

// ---- budgets and errors

TEST_F(DecideTest, ResourceLimitGivesTimeout) {
  opt.rlimit = 1;
  smt::Decision d = decide(ctx.max(ctx.mul(x, x), c(0)), ctx.mul(x, x));
  EXPECT_EQ(d.verdict, Verdict::Timeout) << smt::verdict_name(d.verdict) << " " << d.reason;
}

TEST_F(DecideTest, WallClockTimeoutIsNotAHang) {
  // Factoring a 60-bit semiprime by bit-blasting: far beyond 300 ms.
  Expr p = ctx.var("p", Sort::BV64, ir::Bounds{2, 0xffffffffull});
  Expr q = ctx.var("q", Sort::BV64, ir::Bounds{2, 0xffffffffull});
  Expr factored = ctx.eq(ctx.bv_mul(p, q), ctx.bv_const(Sort::BV64, 1000000016000000063ull));
  opt.timeout_ms = 300;
  opt.rlimit = 0;
  auto t0 = std::chrono::steady_clock::now();
  smt::Decision d = decide(ctx.ite(factored, c(1), c(0)), c(0));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(d.verdict, Verdict::Timeout) << d.reason;
  EXPECT_LT(s, 3.0);
  t0 = std::chrono::steady_clock::now();
  smt::SatResult r = solver.solve(ctx, factored, opt);
  s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, smt::SatResult::Status::Timeout) << r.reason;
  EXPECT_LT(s, 3.0);
}

TEST_F(DecideTest, Z3ExceptionBecomesUnknown) {
  opt.solver_params.push_back({"no_such_parameter_for_z3", 1});
  smt::Decision d = decide(ctx.max(ctx.mul(x, x), c(0)), ctx.mul(x, x));
  EXPECT_EQ(d.verdict, Verdict::Unknown);
  EXPECT_NE(d.reason.find("z3 exception"), std::string::npos) << d.reason;
  EXPECT_EQ(solver.stats().exceptions, 1u);
}

TEST_F(DecideTest, SortMismatchIsUnknownNotACrash) {
  smt::Decision d = decide(x, ctx.var("b", Sort::BV32));
  EXPECT_EQ(d.verdict, Verdict::Unknown);
  EXPECT_NE(d.reason.find("sort mismatch"), std::string::npos);
}

TEST_F(DecideTest, UndefinedValueIsNeverAWitness) {
  smt::Decision d = decide(ctx.undef(Sort::Real), x);
  EXPECT_NE(d.verdict, Verdict::Differ);
  EXPECT_NE(d.verdict, Verdict::Equal);
}

// ---- cache

TEST_F(DecideTest, RepeatedQueryHitsTheCache) {
  Expr a = ctx.max(ctx.mul(x, x), c(0)), b = ctx.mul(x, x);
  smt::Decision d1 = decide(a, b);
  ASSERT_EQ(d1.verdict, Verdict::Equal);
  EXPECT_TRUE(d1.solver_called);
  smt::Decision d2 = decide(a, b);
  EXPECT_EQ(d2.verdict, Verdict::Equal);
  EXPECT_EQ(d2.stage, smt::Stage::Cache);
  EXPECT_FALSE(d2.solver_called);
  EXPECT_EQ(solver.stats().cache_hits, 1u);
  EXPECT_EQ(solver.stats().cache_misses, 1u);
  EXPECT_EQ(solver.cache().hits(), 1u);

  // Differ results are cached with their witness and re-confirmed
  smt::Decision d3 = expect_differ(exp(x), exp(y));
  smt::Decision d4 = expect_differ(exp(x), exp(y));
  EXPECT_EQ(d4.stage, smt::Stage::Cache);
  EXPECT_FALSE(d4.solver_called);
}

TEST_F(DecideTest, ProofThatNeededCutDefinitionsIsNotCachedForTheCutQuery) {
  // max(M, 0) vs M cuts M to a variable c: max(c, 0) != c is sat, the witness
  // is spurious, and only M's definition (Motzkin: M >= 0) proves Equal. That
  // proof must not be reused for max(P, 0) vs P, whose cut query is the same.
  auto m = [&](std::initializer_list<Expr> l) { return ctx.mul(std::vector<Expr>(l)); };
  Expr M = ctx.add(std::vector<Expr>{m({x, x, x, x, y, y}), m({x, x, y, y, y, y}), m({c(-3), x, x, y, y}), c(1)});
  smt::Decision d = decide(ctx.max(M, c(0)), M);
  ASSERT_EQ(d.verdict, Verdict::Equal) << d.reason;
  EXPECT_GE(d.solver_checks, 2u);
  Expr P = ctx.add(ctx.mul(x, y), z);
  expect_differ(ctx.max(P, c(0)), P);
}

TEST(ResultCacheTest, BoundedByCapacity) {
  smt::ResultCache cache(2);
  for (uint64_t i = 0; i < 5; ++i) cache.store({i, 0, 1, 0, 0}, {Verdict::Equal, {}});
  EXPECT_LE(cache.size(), 2u);
  EXPECT_EQ(cache.flushes(), 2u);
  EXPECT_TRUE(cache.lookup({4, 0, 1, 0, 0}).has_value());
  EXPECT_FALSE(cache.lookup({0, 0, 1, 0, 0}).has_value());
}

TEST_F(DecideTest, CacheIsSharedAcrossContexts) {
  auto cache = std::make_shared<smt::ResultCache>();
  smt::Solver s1(cache), s2(cache);
  ir::Context other;
  Expr ox = other.var("x", Sort::Real);
  Expr a1 = ctx.max(ctx.mul(x, x), c(0)), b1 = ctx.mul(x, x);
  Expr a2 = other.max(other.mul(ox, ox), other.real_const(0)), b2 = other.mul(ox, ox);
  EXPECT_EQ(s1.decide(ctx, a1, b1).verdict, Verdict::Equal);
  smt::Decision d = s2.decide(other, a2, b2);
  EXPECT_EQ(d.verdict, Verdict::Equal);
  EXPECT_EQ(d.stage, smt::Stage::Cache);
  EXPECT_EQ(s2.stats().solver_calls, 0u);
}

// ---- tolerance-aware witnesses

TEST_F(DecideTest, ToleranceWitnessExceedsTolerance) {
  opt.tolerance = smt::Tolerance{};  // atol = rtol = 1e-2, leaves in [-10, 10]
  smt::Decision d = expect_differ(ctx.mul(x, y), ctx.add(ctx.mul(x, y), ctx.mul(ctx.real_const(mpq_class(1, 10)), z)));
  ASSERT_TRUE(d.witness);
  EXPECT_TRUE(d.witness->exceeds_tolerance);
  for (const smt::LeafValue& l : d.witness->leaves) EXPECT_LE(std::fabs(l.value.real), 10.0) << l.name;
}

TEST_F(DecideTest, ToleranceFallsBackToPlainQuery) {
  // |1e-4 * z| <= 1e-3 < atol for z in [-10, 10]: no witness beyond tolerance (and, with
  // within_tolerance on, Equal at Stage::Tolerance: tests/smt/test_tolerance.cpp)
  opt.tolerance = smt::Tolerance{};
  opt.within_tolerance = false;
  smt::Decision d = expect_differ(x, ctx.add(x, ctx.mul(ctx.real_const(mpq_class(1, 10000)), z)));
  ASSERT_TRUE(d.witness);
  EXPECT_FALSE(d.witness->exceeds_tolerance);
}

// ---- scale: shared sub-terms are cut before Z3

TEST_F(DecideTest, LargeSumsWithOneChangedTermReduceToATinyQuery) {
  int32_t X = ctx.tensor("X"), W = ctx.tensor("W");
  std::vector<Expr> ta, tb;
  for (int i = 0; i < 2000; ++i) {
    Expr p = ctx.mul(ctx.elem(X, i), ctx.elem(W, i % 37));
    ta.push_back(p);
    tb.push_back(i == 777 ? ctx.mul(c(2), p) : p);
  }
  smt::Decision d = expect_differ(ctx.add(ta), ctx.add(tb));
  EXPECT_TRUE(d.solver_called);
  EXPECT_LT(d.query_nodes, 20u);
}

// ---- booleans (path conditions)

TEST_F(DecideTest, BooleanConditions) {
  smt::Decision d = expect_differ(ctx.lt(x, y), ctx.le(x, y));
  ASSERT_TRUE(d.witness);
  EXPECT_EQ(witness_of(d, "x"), witness_of(d, "y"));  // they differ exactly at x == y
  Expr in_range = ctx.and_(ctx.le(c(0), x), ctx.lt(x, c(10)));
  Expr split = ctx.or_(ctx.and_(ctx.le(c(0), x), ctx.lt(x, c(5))), ctx.and_(ctx.le(c(5), x), ctx.lt(x, c(10))));
  smt::Decision e = decide(in_range, split);
  EXPECT_EQ(e.verdict, Verdict::Equal) << e.reason;
}

// ---- one solver per worker thread, one shared cache

static Expr c0(ir::Context& ctx) { return ctx.real_const(0); }

TEST(DecideThreads, WorkersWithOwnSolversShareACache) {
  auto cache = std::make_shared<smt::ResultCache>();
  std::vector<std::thread> workers;
  std::atomic<int> equal{0}, differ{0};
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([&, t] {
      ir::Context ctx;  // a Context is confined to its thread, and so is a Solver
      smt::Solver solver(cache);
      Expr x = ctx.var("x", Sort::Real), y = ctx.var("y", Sort::Real);
      for (int i = 0; i < 5; ++i) {
        Expr k = ctx.real_const(i + t);
        smt::Decision a = solver.decide(ctx, ctx.max(ctx.mul(ctx.mul(x, x), k), c0(ctx)), ctx.mul(ctx.mul(x, x), k));
        equal += a.verdict == Verdict::Equal;
        smt::Decision b = solver.decide(ctx, ctx.call(Fn::Exp, ctx.mul(k, x)), ctx.call(Fn::Exp, ctx.mul(k, y)));
        differ += b.verdict == Verdict::Differ || (i + t == 0 && b.verdict == Verdict::Equal);
      }
    });
  for (auto& w : workers) w.join();
  EXPECT_EQ(equal.load(), 20);
  EXPECT_EQ(differ.load(), 20);
  EXPECT_GT(cache->hits(), 0u);  // the same (i + t) queries recur across threads
}

// ---- assumptions and budgets

TEST(DecideAssumptions, EqualUnderAssumptionsAndWitnessesSatisfyThem) {
  ir::Context ctx;
  smt::Solver solver;
  Expr x = ctx.var("x", Sort::Real), y = ctx.var("y", Sort::Real);
  Expr zero = ctx.real_const(0);
  smt::DecideOptions opt;
  EXPECT_EQ(solver.decide(ctx, ctx.abs(x), x, opt).verdict, Verdict::Differ);
  opt.assumptions = {ctx.le(zero, x)};
  smt::Decision d = solver.decide(ctx, ctx.abs(x), x, opt);
  EXPECT_EQ(d.verdict, Verdict::Equal) << d.reason;
  d = solver.decide(ctx, ctx.call(Fn::Sqrt, ctx.mul(x, x)), x, opt);  // sqrt is exact on its domain
  EXPECT_EQ(d.verdict, Verdict::Equal) << d.reason;
  // a witness lies inside the assumptions
  opt.assumptions = {ctx.lt(ctx.real_const(3), x), ctx.lt(x, y)};
  d = solver.decide(ctx, ctx.mul(x, y), ctx.mul(x, x), opt);
  ASSERT_EQ(d.verdict, Verdict::Differ) << d.reason;
  ir::Evaluator ev(d.witness->env());
  EXPECT_GT(ev.real(x), 3.0);
  EXPECT_LT(ev.real(x), ev.real(y));
  // contradictory assumptions: vacuously equal
  opt.assumptions = {ctx.lt(x, zero), ctx.lt(zero, x)};
  EXPECT_EQ(solver.decide(ctx, x, y, opt).verdict, Verdict::Equal);
  // not a condition
  opt.assumptions = {x};
  EXPECT_EQ(solver.decide(ctx, x, y, opt).verdict, Verdict::Unknown);
}

TEST(DecideBudget, OversizedQueryIsUnknown) {
  ir::Context ctx;
  smt::Solver solver;
  smt::DecideOptions opt;
  opt.max_query_nodes = 3;
  opt.falsify_points = 0;  // the query-size limit is what is tested
  Expr x = ctx.var("x", Sort::Real), y = ctx.var("y", Sort::Real);
  smt::Decision d = solver.decide(ctx, ctx.mul(x, y), ctx.add(x, y), opt);
  EXPECT_EQ(d.verdict, Verdict::Unknown);
  EXPECT_NE(d.reason.find("limit"), std::string::npos) << d.reason;
  EXPECT_FALSE(d.solver_called);
}

// ---- online softmax (FlashAttention's rescaling) vs the textbook formula

TEST(DecideIdioms, OnlineSoftmaxEqualsSoftmax) {
  ir::Context ctx;
  smt::Solver solver;
  int32_t t = ctx.tensor("logits");
  constexpr int n = 6;
  std::vector<Expr> xs;
  for (int i = 0; i < n; ++i) xs.push_back(ctx.elem(t, i));
  auto exp = [&](Expr a) { return ctx.call(Fn::Exp, a); };
  // textbook: exp(x_0 - max) / sum_j exp(x_j - max)
  Expr m = ctx.max(xs);
  std::vector<Expr> es;
  for (Expr x : xs) es.push_back(exp(ctx.sub(x, m)));
  Expr reference = ctx.div(es[0], ctx.add(es));
  // online: running max and a rescaled running sum, as a kernel's loop computes them
  Expr run_m = xs[0], run_l = ctx.real_const(1);
  for (int i = 1; i < n; ++i) {
    Expr new_m = ctx.max(run_m, xs[i]);
    run_l = ctx.add(ctx.mul(run_l, exp(ctx.sub(run_m, new_m))), exp(ctx.sub(xs[i], new_m)));
    run_m = new_m;
  }
  Expr online = ctx.div(exp(ctx.sub(xs[0], run_m)), run_l);
  smt::Decision d = solver.decide(ctx, reference, online);
  EXPECT_EQ(d.verdict, Verdict::Equal) << d.reason;
  EXPECT_FALSE(d.solver_called);
  // forgetting one rescale is a bug with a witness
  Expr bad_l = ctx.real_const(1);
  run_m = xs[0];
  for (int i = 1; i < n; ++i) {
    Expr new_m = ctx.max(run_m, xs[i]);
    Expr scale = i == 3 ? ctx.real_const(1) : exp(ctx.sub(run_m, new_m));
    bad_l = ctx.add(ctx.mul(bad_l, scale), exp(ctx.sub(xs[i], new_m)));
    run_m = new_m;
  }
  Expr bad = ctx.div(exp(ctx.sub(xs[0], run_m)), bad_l);
  smt::Decision e = solver.decide(ctx, reference, bad);
  ASSERT_EQ(e.verdict, Verdict::Differ) << e.reason;
  ir::Evaluator ev(e.witness->env());
  EXPECT_TRUE(smt::values_differ(ev(reference), ev(bad), 1e-9, 1e-12));
}

// ---- bit-vector identities and non-identities (bit-blasted by Z3 where ir does not close them)

TEST_F(DecideTest, BitvectorIdentities) {
  Expr a = ctx.var("a", Sort::BV32), b = ctx.var("b", Sort::BV32);
  auto k = [&](uint64_t v) { return ctx.bv_const(Sort::BV32, v); };
  std::vector<std::pair<Expr, Expr>> equal = {
      {ctx.bv_xor(ctx.bv_xor(a, b), b), a},
      {ctx.bv_or(ctx.bv_and(a, b), ctx.bv_and(a, ctx.bv_not(b))), a},
      {ctx.bv_sub(a, b), ctx.bv_add(ctx.bv_add(a, ctx.bv_not(b)), k(1))},
      {ctx.bv_shl(a, k(3)), ctx.bv_mul(a, k(8))},
      {ctx.bv_add(ctx.bv_min(a, b, false), ctx.bv_max(a, b, false)), ctx.bv_add(a, b)},
      {ctx.bv_urem(a, k(16)), ctx.bv_and(a, k(15))},
      {ctx.trunc(ctx.bv_mul(ctx.zext(a, Sort::BV64), ctx.zext(b, Sort::BV64)), Sort::BV32), ctx.bv_mul(a, b)},
  };
  for (auto [x, y] : equal) {
    smt::Decision d = decide(x, y);
    EXPECT_EQ(d.verdict, Verdict::Equal) << ir::to_string(ctx, x) << " vs " << ir::to_string(ctx, y) << ": " << d.reason;
  }
  std::vector<std::pair<Expr, Expr>> differ = {
      {ctx.bv_lshr(a, k(1)), ctx.bv_ashr(a, k(1))},
      {ctx.bv_udiv(a, k(3)), ctx.bv_sdiv(a, k(3))},
      {ctx.bv_add(ctx.zext(a, Sort::BV64), ctx.zext(b, Sort::BV64)), ctx.zext(ctx.bv_add(a, b), Sort::BV64)},
      {ctx.bv_mulhi(a, b, true), ctx.bv_mulhi(a, b, false)},
  };
  for (auto [x, y] : differ) expect_differ(x, y);
}

// ---- the paper's running example (KernelBench level 2, task 36): the kernel's
// loop bound sums only half the column before GELU

TEST(DecideIdioms, HalfColumnSumBeforeGeluDiffers) {
  ir::Context ctx;
  smt::Solver solver;
  int32_t M = ctx.tensor("M"), B = ctx.tensor("bias");
  auto column_sum = [&](int rows) {
    std::vector<Expr> mins;
    for (int h = 0; h < rows; ++h) {
      std::vector<Expr> cs;
      for (int c = 0; c < 16; ++c) cs.push_back(ctx.elem(M, c * 64 + h));
      mins.push_back(ctx.min(cs));
    }
    return ctx.add(mins);
  };
  Expr reference = ctx.add(ctx.call(Fn::GeluErf, column_sum(64)), ctx.elem(B, 0));
  Expr kernel = ctx.add(ctx.call(Fn::GeluTanh, column_sum(32)), ctx.elem(B, 0));  // and the tanh approximation
  smt::DecideOptions opt;
  opt.tolerance = smt::Tolerance{};
  // random points find it (at [-0.01, 0.01]: at [-10, 10] both column sums are ~-300, where gelu is 0)
  smt::Decision sampled = solver.decide(ctx, reference, kernel, opt);
  ASSERT_EQ(sampled.verdict, Verdict::Differ) << sampled.reason;
  EXPECT_EQ(sampled.stage, smt::Stage::Sampling);
  opt.falsify_points = 0;  // and so does Z3, on a small query
  smt::Decision d = solver.decide(ctx, reference, kernel, opt);
  ASSERT_EQ(d.verdict, Verdict::Differ) << d.reason;
  EXPECT_EQ(d.cuts, 1u);  // the 32 shared row minima reach Z3 as one variable
  EXPECT_LT(d.query_nodes, 32u * 17u + 16u);  // the 32 unshared minima, one cut, two gelus
  ir::Evaluator ev(d.witness->env());
  EXPECT_TRUE(smt::values_differ(ev(reference), ev(kernel), 1e-9, 1e-12));
  // the fixed kernel (full column) is equal under the gelu approximation equivalence
  Expr fixed = ctx.add(ctx.call(Fn::GeluTanh, column_sum(64)), ctx.elem(B, 0));
  smt::Decision e = solver.decide(ctx, reference, fixed, opt);
  EXPECT_EQ(e.verdict, Verdict::Equal) << e.reason;
  EXPECT_FALSE(e.solver_called);
}

TEST(DecideScale, SharedPartOfSumsUnderAFunctionIsOneCut) {
  // gelu(S1) vs gelu(S2), S1 and S2 sharing all but one of 2,000 terms: the
  // common part becomes one variable, not 1,999 (which left Z3 a 2,000-variable
  // nonlinear problem).
  ir::Context ctx;
  smt::Solver solver;
  int32_t X = ctx.tensor("X"), W = ctx.tensor("W");
  std::vector<Expr> ta, tb;
  for (int i = 0; i < 2000; ++i) {
    Expr p = ctx.mul(ctx.elem(X, i), ctx.elem(W, i % 41));
    ta.push_back(p);
    tb.push_back(i == 1234 ? ctx.mul(ctx.elem(X, i), ctx.elem(W, 40 - i % 41)) : p);
  }
  Expr a = ctx.call(Fn::GeluErf, ctx.add(ta)), b = ctx.call(Fn::GeluErf, ctx.add(tb));
  smt::Decision d = solver.decide(ctx, a, b);
  ASSERT_EQ(d.verdict, Verdict::Differ) << d.reason;
  EXPECT_LT(d.query_nodes, 40u);
  ir::Evaluator ev(d.witness->env());
  EXPECT_TRUE(smt::values_differ(ev(a), ev(b), 1e-9, 1e-12));
  // and the same sums permuted are equal without Z3
  std::vector<Expr> tc(ta.rbegin(), ta.rend());
  smt::Decision e = solver.decide(ctx, a, ctx.call(Fn::GeluErf, ctx.add(tc)));
  EXPECT_EQ(e.verdict, Verdict::Equal);
  EXPECT_FALSE(e.solver_called);
}

TEST(DecideWatchdog, InterruptsZ3AndTheSolverRecovers) {
  ir::Context ctx;
  smt::Solver solver;
  Expr p = ctx.var("p", Sort::BV64, ir::Bounds{2, 0xffffffffull});
  Expr q = ctx.var("q", Sort::BV64, ir::Bounds{2, 0xffffffffull});
  Expr factored = ctx.eq(ctx.bv_mul(p, q), ctx.bv_const(Sort::BV64, 1000000016000000063ull));
  smt::DecideOptions opt;
  opt.timeout_ms = 300;
  opt.rlimit = 0;
  opt.solver_params = {{"timeout", 600000}};  // Z3's own timeout out of the way: only the watchdog can stop it
  auto t0 = std::chrono::steady_clock::now();
  smt::Decision d = solver.decide(ctx, ctx.ite(factored, ctx.real_const(1), ctx.real_const(0)), ctx.real_const(0), opt);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(d.verdict, Verdict::Timeout) << d.reason;
  EXPECT_LT(s, 3.0);
  // the interrupted context is replaced: the next query is answered normally
  Expr x = ctx.var("x", Sort::Real);
  smt::Decision e = solver.decide(ctx, ctx.max(ctx.mul(x, x), ctx.real_const(0)), ctx.mul(x, x));
  EXPECT_EQ(e.verdict, Verdict::Equal) << e.reason;
  EXPECT_TRUE(e.solver_called);
}

// A check Z3 does not stop when interrupted (DIRIGO_INJECT_FAULT=z3-stall stands in for Z3 4.8.12's
// arithmetic on some nonlinear queries) is left running 400 ms past its deadline: the decision is a
// Timeout on time, and the next one runs in a fresh context.
TEST(DecideWatchdog, AbandonsACheckZ3DoesNotStop) {
  ir::Context ctx;
  smt::Solver solver;
  Expr x = ctx.var("x", Sort::Real);
  Expr xx = ctx.mul(x, x);
  smt::DecideOptions opt;
  opt.timeout_ms = 200;
  size_t before = smt::abandoned_checks();
  setenv("DIRIGO_INJECT_FAULT", "z3-stall", 1);
  auto t0 = std::chrono::steady_clock::now();
  smt::Decision d = solver.decide(ctx, ctx.max(xx, ctx.real_const(0)), xx, opt);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unsetenv("DIRIGO_INJECT_FAULT");
  EXPECT_EQ(d.verdict, Verdict::Timeout) << d.reason;
  EXPECT_NE(d.reason.find("abandoned"), std::string::npos) << d.reason;
  EXPECT_LT(s, 0.2 + 0.4 + 0.5);
  EXPECT_EQ(smt::abandoned_checks(), before + 1);
  opt.timeout_ms = 10000;
  opt.use_cache = false;
  smt::Decision e = solver.decide(ctx, ctx.max(xx, ctx.real_const(0)), xx, opt);
  EXPECT_EQ(e.verdict, Verdict::Equal) << e.reason;
  EXPECT_TRUE(e.solver_called);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // the stalled check ends before the test process does
}

TEST(DecideSampling, ADroppedTermIsFoundWithoutZ3AndEqualityStillNeedsAProof) {
  ir::Context ctx;
  smt::Solver solver;
  smt::DecideOptions opt;
  opt.tolerance = smt::Tolerance{};
  int32_t x = ctx.tensor("in:x"), w = ctx.tensor("in:w"), bias = ctx.tensor("in:b");
  Expr dot = ctx.real_const(0);
  for (int i = 0; i < 72; ++i) dot = ctx.add(dot, ctx.mul(ctx.elem(x, i), ctx.elem(w, i)));
  smt::Decision d = solver.decide(ctx, ctx.add(dot, ctx.elem(bias, 0)), dot, opt);
  EXPECT_EQ(d.verdict, Verdict::Differ);
  EXPECT_EQ(d.stage, smt::Stage::Sampling);
  EXPECT_FALSE(d.solver_called);
  ASSERT_TRUE(d.witness);
  EXPECT_TRUE(d.witness->exceeds_tolerance);
  // equal but not canonically so: the points agree and Z3 gives the proof
  Expr u = ctx.elem(x, 0), v = ctx.elem(x, 1);
  Expr t = ctx.call(Fn::Tanh, u), s = ctx.sub(ctx.mul(ctx.real_const(2), ctx.call(Fn::Sigmoid, ctx.mul(ctx.real_const(2), u))), ctx.real_const(1));
  smt::Decision e = solver.decide(ctx, ctx.add(t, v), ctx.add(s, v), opt);
  EXPECT_NE(e.verdict, Verdict::Differ);
  EXPECT_NE(e.stage, smt::Stage::Sampling);
}

// A decision whose time is already up answers Timeout at the first stage that looks, naming it,
// without reaching Z3 (the check passes the rest of its budget as timeout_ms).
TEST(DecideDeadline, NoTimeLeftIsTimeoutNamingTheStage) {
  ir::Context ctx;
  smt::Solver solver;
  smt::DecideOptions opt;
  opt.timeout_ms = 0;
  Expr x = ctx.var("x", Sort::Real), y = ctx.var("y", Sort::Real);
  smt::Decision d = solver.decide(ctx, ctx.add(x, y), ctx.mul(x, y), opt);
  EXPECT_EQ(d.verdict, Verdict::Timeout);
  EXPECT_EQ(d.stage, smt::Stage::Axioms);
  EXPECT_NE(d.reason.find("ran out"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("axioms"), std::string::npos) << d.reason;
  EXPECT_FALSE(d.solver_called);
  // with time, the same query is decided
  opt.timeout_ms = 10000;
  EXPECT_EQ(solver.decide(ctx, ctx.add(x, y), ctx.mul(x, y), opt).verdict, Verdict::Differ);
}

// Random points are drawn by the tensors' names: which points decide a location must not depend on
// how many tensors the process registered before (dev pair 069 lost its BUG when a session's new
// code registered a few more). The sampled witness holds the value draw() gives the name's key.
TEST_F(DecideTest, SampledWitnessesAreDrawnByTensorName) {
  std::string name = "decide:keyed_by_name";
  for (int i = 0; i < 37; ++i) ctx.tensor(name + std::to_string(i));  // shift the ids a test run would see
  int32_t t = ctx.tensor(name);
  Expr x = ctx.elem(t, 5);
  smt::DecideOptions o;
  o.use_cache = false;
  o.tolerance = smt::Tolerance{};
  smt::Decision d = solver.decide(ctx, ctx.call(ir::Fn::Tanh, x), ctx.add(ctx.call(ir::Fn::Tanh, x), ctx.real_const(1)), o);
  ASSERT_EQ(d.verdict, smt::Verdict::Differ);
  ASSERT_EQ(d.stage, smt::Stage::Sampling);
  ASSERT_TRUE(d.witness);
  const smt::LeafValue* leaf = nullptr;
  for (const auto& l : d.witness->leaves)
    if (l.kind == smt::LeafValue::Kind::Elem && l.tensor == t && l.index == 5) leaf = &l;
  ASSERT_NE(leaf, nullptr);
  bool drawn = false;
  for (unsigned p = 0; p < o.falsify_points; ++p)
    drawn = drawn || smt::draw(o.random_seed, p, smt::name_key(name), 5, ir::Sort::Real, smt::point_bound(p, o.tolerance->bound)).real ==
                         leaf->value.real;
  EXPECT_TRUE(drawn) << leaf->value.real;
}

// A kernel's variance clamped at 0 (fmaxf(E[x²] − E[x]², 0)) against the reference's unclamped one:
// equal for every input by Cauchy–Schwarz, which the opaque sums only say through the translator's
// lemma (Σ x)² ≤ N·Σ x²; without the square's pair the clamp is a real difference.
// A group norm computed by a kernel (two passes, the second unrolled by 4: E[(x - m)^2] with its
// cross term over four partial sums) and by the reference (E[x^2] - m^2): equal without the solver.
TEST_F(DecideTest, ATwoPassVarianceOverUnrolledPartialsIsTheReferences) {
  int32_t X = ctx.tensor("x");
  Expr k = ctx.var("k", Sort::BV64), j = ctx.var("j", Sort::BV64);
  auto red = [&](Expr v, int64_t n, Expr body) {
    Expr ks[] = {v};
    std::pair<int64_t, int64_t> box[] = {{0, n}};
    return ctx.reduce(ir::ReduceOp::Sum, ks, box, body);
  };
  Expr xj = ctx.load(X, j);
  Expr s = red(j, 512, xj), sq = red(j, 512, ctx.mul(xj, xj));
  Expr eps = ctx.real_const(mpq_class(1, 100000));
  Expr ref_var = ctx.add(std::vector<Expr>{eps, ctx.mul(ctx.real_const(mpq_class(1, 512)), sq),
                                           ctx.mul(ctx.real_const(mpq_class(-1, 262144)), ctx.mul(s, s))});
  std::vector<Expr> cand{eps, ctx.mul(ctx.real_const(mpq_class(1, 512)), sq),
                         ctx.mul(ctx.real_const(mpq_class(1, 262144)), ctx.mul(s, s))};
  for (int64_t t = 0; t < 4; ++t) {
    Expr part = red(k, 128, ctx.load(X, ctx.bv_add(ctx.bv_const(Sort::BV64, uint64_t(t)),
                                                   ctx.bv_mul(ctx.bv_const(Sort::BV64, 4), k))));
    cand.push_back(ctx.mul(std::vector<Expr>{ctx.real_const(mpq_class(-1, 131072)), s, part}));
  }
  Expr cand_var = ctx.add(cand);
  Expr x0 = ctx.elem(X, 0), w = ctx.elem(ctx.tensor("w"), 0);
  auto norm = [&](Expr var, bool spread) {
    Expr r = ctx.call(ir::Fn::Rsqrt, var);
    Expr centered = ctx.sub(x0, ctx.mul(ctx.real_const(mpq_class(1, 512)), s));
    Expr y = spread ? ctx.add(ctx.mul(std::vector<Expr>{x0, r, w}),
                              ctx.mul(std::vector<Expr>{ctx.real_const(mpq_class(-1, 512)), s, r, w}))
                    : ctx.mul(std::vector<Expr>{centered, w, r});
    return ctx.min(c(2), ctx.max(c(-2), y));
  };
  smt::Decision d = decide(norm(ref_var, false), norm(cand_var, true));
  EXPECT_EQ(d.verdict, Verdict::Equal) << d.reason;
  EXPECT_FALSE(d.solver_called);
  // one partial of the four dropped: not equal
  cand.pop_back();
  EXPECT_NE(decide(norm(ref_var, false), norm(ctx.add(cand), true)).verdict, Verdict::Equal);
}

TEST_F(DecideTest, AClampedVarianceOverOpaqueSumsIsTheVariance) {
  int32_t X = ctx.tensor("x");
  Expr k = ctx.var("k", Sort::BV64);
  Expr xk = ctx.load(X, k);
  Expr ks[] = {k};
  std::pair<int64_t, int64_t> box[] = {{0, 1000}};
  Expr s1 = ctx.reduce(ir::ReduceOp::Sum, ks, box, xk);
  Expr s2 = ctx.reduce(ir::ReduceOp::Sum, ks, box, ctx.mul(xk, xk));
  Expr var = ctx.add(ctx.mul(ctx.real_const(mpq_class(1, 1000)), s2),
                     ctx.mul(ctx.real_const(mpq_class(-1, 1000000)), ctx.mul(s1, s1)));
  expect_equal(ctx.max(c(0), var), var, true);
  // the same clamp over a sum of cubes is no variance: it differs
  Expr s3 = ctx.reduce(ir::ReduceOp::Sum, ks, box, ctx.mul(std::vector<Expr>{xk, xk, xk}));
  Expr not_var = ctx.add(ctx.mul(ctx.real_const(mpq_class(1, 1000)), s3),
                         ctx.mul(ctx.real_const(mpq_class(-1, 1000000)), ctx.mul(s1, s1)));
  EXPECT_NE(decide(ctx.max(c(0), not_var), not_var).verdict, Verdict::Equal);
}
