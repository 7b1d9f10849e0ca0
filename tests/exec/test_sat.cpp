// ThreadSat (exec/sat.h): exact satisfiability of thread predicates, checked against brute force.
#include <gtest/gtest.h>

#include <random>

#include "exec/sat.h"

namespace dirigo::exec {
namespace {

// Random conjunctions of bounds on L = 256*ctaid.x + tid.x (+ constant), the shape of bounds
// checks (decided by interval reasoning), and of atoms on tid.x alone (enumeration).
TEST(ThreadSat, AgreesWithBruteForce) {
  ir::Context ctx;
  ThreadVars tv(ctx, {256}, {16});
  ThreadSat sat(ctx, tv, uint64_t(1) << 24);
  std::mt19937 g(7);
  auto c32 = [&](uint64_t v) { return ctx.bv_const(ir::Sort::BV32, v); };
  ir::Expr L = ctx.bv_add(ctx.bv_mul(c32(256), tv.ctaid[0]), tv.tid[0]);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<ir::Expr> atoms;
    std::vector<std::function<bool(uint64_t, uint64_t)>> ref;
    int n = 1 + int(g() % 3);
    for (int a = 0; a < n; ++a) {
      uint64_t k = g() % 300, c = g() % 5000;
      bool on_tid = g() % 4 == 0, upper = g() % 2, negate = g() % 2;
      ir::Expr lhs = on_tid ? ctx.bv_add(tv.tid[0], c32(k)) : ctx.bv_add(L, c32(k));
      ir::Expr atom = upper ? ctx.ult(lhs, c32(c)) : ctx.ule(c32(c), lhs);
      if (negate) atom = ctx.not_(atom);
      atoms.push_back(atom);
      ref.push_back([=](uint64_t t, uint64_t b) {
        uint64_t v = (on_tid ? t : 256 * b + t) + k;
        bool r = upper ? v < c : c <= v;
        return negate ? !r : r;
      });
    }
    bool want = false;
    for (uint64_t b = 0; b < 16 && !want; ++b)
      for (uint64_t t = 0; t < 256 && !want; ++t) {
        bool all = true;
        for (auto& f : ref) all = all && f(t, b);
        want = all;
      }
    ir::Expr conj = ctx.and_(atoms);
    EXPECT_EQ(sat.sat(conj), want) << "trial " << trial;
    auto w = sat.witness(conj);
    EXPECT_EQ(w.has_value(), want);
    if (w) for (auto& f : ref) EXPECT_TRUE(f(w->tid.x, w->ctaid.x));
  }
  EXPECT_EQ(sat.inexact(), 0u);
}

TEST(ThreadSat, ThreadOnlyClassification) {
  ir::Context ctx;
  ThreadVars tv(ctx, {32, 4}, {8});
  ThreadSat sat(ctx, tv, 1 << 20);
  EXPECT_TRUE(sat.thread_only(ctx.ult(tv.tid[1], ctx.bv_const(ir::Sort::BV32, 2))));
  EXPECT_FALSE(sat.thread_only(ctx.lt(ctx.elem(ctx.tensor("sat.x"), 0), ctx.real_const(0))));
  EXPECT_TRUE(sat.mentions_ctaid(ctx.eq(tv.ctaid[0], ctx.bv_const(ir::Sort::BV32, 1))));
  EXPECT_FALSE(sat.mentions_ctaid(tv.tid[0]));
}

// 80M threads (too many to enumerate), and the condition sees them through output coordinates
// of non-power-of-two extents (`L % 34`, `L / 34 % 34`: every bit of L matters, so the low-bits
// reduction does not apply). Each small-range sub-expression becomes a fresh Var over its
// interval and the rest is enumerated: `w` odd and `w + 1` odd is refuted (the shape of 096's
// stride tests), and a satisfiable condition stays "satisfiable" (the cut proves only
// unsatisfiability; no thread is exhibited, so it counts as inexact).
TEST(ThreadSat, RefutesThroughSmallRangeSubterms) {
  ir::Context ctx;
  ThreadVars tv(ctx, {256}, {314432});
  ThreadSat sat(ctx, tv, uint64_t(1) << 24);
  auto c32 = [&](uint64_t v) { return ctx.bv_const(ir::Sort::BV32, v); };
  ir::Expr L = ctx.bv_add(ctx.bv_mul(c32(256), tv.ctaid[0]), tv.tid[0]);
  ir::Expr w = ctx.bv_urem(L, c32(34)), h = ctx.bv_urem(ctx.bv_udiv(L, c32(34)), c32(34));
  auto odd = [&](ir::Expr e) { return ctx.not_(ctx.eq(ctx.bv_srem(e, c32(2)), c32(0))); };
  ir::Expr contradiction = ctx.and_(std::vector<ir::Expr>{odd(w), odd(ctx.bv_add(w, c32(1))), ctx.eq(h, c32(5))});
  EXPECT_FALSE(sat.sat(contradiction));
  EXPECT_EQ(sat.inexact(), 0u);
  EXPECT_TRUE(sat.sat(ctx.and_(odd(w), ctx.eq(h, c32(5)))));
  EXPECT_EQ(sat.inexact(), 1u);
}

// A Var seen only through its low bits (masks and shifts of sums and products): 2^27 threads,
// but the condition depends on ctaid.x only modulo 2^11, so [0, 2048) is enumerated exactly — an
// unsatisfiable correlation between `63 & (4*ctaid.x + q)` and `1 & q` (q = tid.x >> 6) is
// refuted, a satisfiable one gets a real witness thread.
TEST(ThreadSat, LowBitsOfAVarAreEnumeratedExactly) {
  ir::Context ctx;
  ThreadVars tv(ctx, {256}, {524288});
  ThreadSat sat(ctx, tv, uint64_t(1) << 24);
  auto c32 = [&](uint64_t v) { return ctx.bv_const(ir::Sort::BV32, v); };
  ir::Expr q = ctx.bv_lshr(tv.tid[0], c32(6));
  ir::Expr X = ctx.bv_add(ctx.bv_mul(c32(4), tv.ctaid[0]), q);
  ir::Expr row = ctx.bv_and(X, c32(63)), depth = ctx.bv_and(ctx.bv_lshr(X, c32(6)), c32(31));
  ir::Expr row_even = ctx.eq(ctx.bv_and(row, c32(1)), c32(0)), q_odd = ctx.eq(ctx.bv_and(q, c32(1)), c32(1));
  EXPECT_FALSE(sat.sat(ctx.and_(row_even, q_odd)));  // row = 4*ctaid + q (mod 64): same parity as q
  ir::Expr pick = ctx.and_(std::vector<ir::Expr>{ctx.eq(depth, c32(17)), ctx.eq(row, c32(5)), q_odd});
  EXPECT_TRUE(sat.sat(pick));
  auto w = sat.witness(pick);
  ASSERT_TRUE(w);
  uint64_t x = 4 * uint64_t(w->ctaid.x) + (w->tid.x >> 6);
  EXPECT_EQ(x & 63, 5u);
  EXPECT_EQ((x >> 6) & 31, 17u);
  EXPECT_EQ(sat.inexact(), 0u);
  // a full-width use of ctaid.x (a comparison) keeps the whole range: 4*ctaid.x + q < 3 with q odd
  // needs ctaid.x = 0, found only by looking at the real range
  EXPECT_TRUE(sat.sat(ctx.and_(ctx.ult(X, c32(3)), q_odd)));
}

// The low-bits reductions (and the cut refutation) never change an answer: random conditions
// over masks, shifts, `i - (i & -32)` remainders and signed halvings of a flat index, decided by a
// ThreadSat whose enumeration limit forces the reductions, against one that enumerates all 2^14
// threads.
TEST(ThreadSat, ReductionsAgreeWithFullEnumeration) {
  ir::Context ctx;
  ThreadVars tv(ctx, {64}, {256});
  ThreadSat exact(ctx, tv, uint64_t(1) << 24), small(ctx, tv, uint64_t(1) << 9);
  auto c32 = [&](uint64_t v) { return ctx.bv_const(ir::Sort::BV32, v); };
  std::mt19937 g(11);
  ir::Expr L = ctx.bv_add(ctx.bv_mul(c32(64), tv.ctaid[0]), tv.tid[0]);
  std::vector<ir::Expr> base{L, tv.tid[0], tv.ctaid[0], ctx.bv_lshr(L, c32(3)), ctx.bv_lshr(tv.tid[0], c32(2)),
                             ctx.bv_add(ctx.bv_mul(c32(4), tv.ctaid[0]), ctx.bv_lshr(tv.tid[0], c32(4)))};
  auto term = [&]() {
    ir::Expr x = base[g() % base.size()];
    switch (g() % 5) {
      case 0: return ctx.bv_add(x, ctx.bv_mul(c32(0xffffffff), ctx.bv_and(x, c32(0xffffffe0))));  // x mod 32
      case 1: return ctx.bv_and(x, c32(g() % 2 ? 1 : 31));
      case 2: return ctx.bv_ashr(ctx.bv_add(x, c32(0xffffffff)), c32(1));
      case 3: return ctx.bv_urem(x, c32(6));
      default: return ctx.bv_add(x, c32(g() % 3));
    }
  };
  int unsat = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<ir::Expr> atoms;
    for (int a = 0 + 0; a < 2 + int(g() % 3); ++a) {
      ir::Expr t = term(), k = c32(g() % 20);
      ir::Expr atom = g() % 3 == 0 ? ctx.eq(t, k) : g() % 2 ? ctx.ult(t, k) : ctx.slt(k, t);
      atoms.push_back(g() % 2 ? ctx.not_(atom) : atom);
    }
    ir::Expr conj = ctx.and_(atoms);
    bool want = exact.sat(conj);
    EXPECT_EQ(small.sat(conj) || !want, true) << "refuted a satisfiable condition, trial " << trial;
    if (!want) EXPECT_FALSE(exact.witness(conj)) << trial;
    if (auto w = small.witness(conj)) {  // a witness is a real thread satisfying the condition
      auto vars = tv.all();
      ir::Expr roots[] = {conj};
      BvProgram prog(vars, roots);
      uint64_t p[6] = {w->tid.x, 0, 0, w->ctaid.x, 0, 0}, out = 0;
      prog.eval(p, &out);
      EXPECT_TRUE(want && out) << trial;
    }
    unsat += !want;
  }
  EXPECT_EQ(exact.inexact(), 0u);
  EXPECT_GT(unsat, 10);
}

}  // namespace
// linear_of's reading holds exactly when no extension's argument leaves its range over the box: the
// flat index zext64(256*ctaid + tid), a sign-extended index that may be negative, and a 32-bit sum
// that wraps for the last blocks.
TEST(LinearOf, ExactOnlyWithoutWraparound) {
  ir::Context ctx;
  ThreadVars tv(ctx, {256}, {1u << 20});
  auto vars = tv.all();
  const std::array<uint64_t, 6> width{256, 1, 1, 1u << 20, 1, 1};
  auto c32 = [&](uint64_t v) { return ctx.bv_const(ir::Sort::BV32, v); };
  auto c64 = [&](uint64_t v) { return ctx.bv_const(ir::Sort::BV64, v); };
  ir::Expr L = ctx.bv_add(ctx.bv_mul(c32(256), tv.ctaid[0]), tv.tid[0]);
  ir::Expr flat = ctx.zext(L, ir::Sort::BV64);
  ASSERT_TRUE(linear_of(flat, vars));
  EXPECT_TRUE(linear_is_exact(flat, vars, width));
  EXPECT_TRUE(linear_is_exact(ctx.bv_add(c64(4), ctx.bv_mul(c64(3), flat)), vars, width));
  // tid - 1 sign-extended: -1 at thread 0
  ir::Expr back = ctx.sext(ctx.bv_add(tv.tid[0], c32(0xffffffff)), ir::Sort::BV64);
  ASSERT_TRUE(linear_of(back, vars));
  EXPECT_FALSE(linear_is_exact(back, vars, width));
  // 8192*ctaid + tid in 32 bits wraps past block 2^19
  ir::Expr wraps = ctx.zext(ctx.bv_add(ctx.bv_mul(c32(8192), tv.ctaid[0]), tv.tid[0]), ir::Sort::BV64);
  ASSERT_TRUE(linear_of(wraps, vars));
  EXPECT_FALSE(linear_is_exact(wraps, vars, width));
}

}  // namespace dirigo::exec
