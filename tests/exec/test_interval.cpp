// Interval rules of bounds proofs (exec/interval.h): each rule is exact or a sound
// over-approximation, checked against brute force over every thread of a small launch.
#include <gtest/gtest.h>

#include <random>

#include "exec/interval.h"
#include "exec/sat.h"
#include "exec_test_util.h"
#include "ir/print.h"

namespace dirigo::exec::test {
namespace {

using ir::Bounds;
using ir::Expr;
using ir::Sort;

// The exact unsigned range of e over the threads satisfying pred (nullopt: no such thread).
std::optional<Bounds> brute_range(const ThreadVars& tv, Expr e, Expr pred) {
  auto vars = tv.all();
  Expr roots[] = {pred, e};
  BvProgram prog(vars, roots);
  EXPECT_TRUE(prog.ok());
  uint64_t lo = UINT64_MAX, hi = 0, p[6], out[2];
  bool any = false;
  for (p[5] = 0; p[5] < tv.grid.z; ++p[5]) for (p[4] = 0; p[4] < tv.grid.y; ++p[4]) for (p[3] = 0; p[3] < tv.grid.x; ++p[3])
  for (p[2] = 0; p[2] < tv.block.z; ++p[2]) for (p[1] = 0; p[1] < tv.block.y; ++p[1]) for (p[0] = 0; p[0] < tv.block.x; ++p[0]) {
    prog.eval(p, out);
    if (out[0]) lo = std::min(lo, out[1]), hi = std::max(hi, out[1]), any = true;
  }
  if (!any) return std::nullopt;
  return Bounds{lo, hi};
}

std::optional<Bounds> interval(const ThreadVars& tv, Expr e, Expr pred) {
  auto box = box_of(tv, pred);
  auto guards = guards_of(pred);
  EXPECT_TRUE(box && guards);
  return range_over(e, tv, *box, &*guards);
}

struct Launch1D {
  ir::Context ctx;
  ThreadVars tv{ctx, {256, 1, 1}, {64, 1, 1}};
  Expr c32(uint64_t v) { return ctx.bv_const(Sort::BV32, v); }
  Expr c64(uint64_t v) { return ctx.bv_const(Sort::BV64, v); }
  Expr z(Expr e) { return ctx.zext(e, Sort::BV64); }
  Expr L() { return ctx.bv_add(tv.tid[0], ctx.bv_mul(tv.ctaid[0], c32(256))); }  // linear thread id
};

TEST(BoundOfAtom, EachShapeAndItsNegation) {
  ir::Context ctx;
  Expr x = ctx.var("x", Sort::BV32), c = ctx.bv_const(Sort::BV32, 10);
  auto b = [&](Expr atom) { return bound_of_atom(atom); };
  auto is = [&](std::optional<AtomBound> ab, uint64_t lo, uint64_t hi) {
    return ab && ab->subject == x && ab->lo == lo && ab->hi == hi;
  };
  EXPECT_TRUE(is(b(ctx.ult(x, c)), 0, 9));
  EXPECT_TRUE(is(b(ctx.ule(x, c)), 0, 10));
  EXPECT_TRUE(is(b(ctx.ult(c, x)), 11, 0xffffffff));
  EXPECT_TRUE(is(b(ctx.ule(c, x)), 10, 0xffffffff));
  EXPECT_TRUE(is(b(ctx.eq(x, ctx.bv_const(Sort::BV32, 0))), 0, 0));  // x == 10 is canonically 0 == x - 10
  EXPECT_TRUE(is(b(ctx.not_(ctx.ult(x, c))), 10, 0xffffffff));
  EXPECT_TRUE(is(b(ctx.not_(ctx.ule(x, c))), 11, 0xffffffff));
  EXPECT_TRUE(is(b(ctx.not_(ctx.ult(c, x))), 0, 10));
  EXPECT_TRUE(is(b(ctx.not_(ctx.ule(c, x))), 0, 9));
  EXPECT_FALSE(b(ctx.not_(ctx.eq(x, c))));
  EXPECT_FALSE(b(ctx.slt(x, c)));
}

// `L <u n` bounds L itself, so `L / d` stops one short of the box's maximum.
TEST(RangeOver, GuardOnASumBoundsItsUses) {
  Launch1D t;
  Expr pred = t.ctx.ult(t.L(), t.c32(256 * 64 - 100));
  Expr e = t.ctx.bv_udiv(t.L(), t.c32(100));
  auto r = interval(t.tv, e, pred);
  auto truth = brute_range(t.tv, e, pred);
  ASSERT_TRUE(r && truth);
  EXPECT_EQ(r->hi, truth->hi);
  EXPECT_EQ(r->hi, 162u);
  auto unguarded = range_over(e, t.tv, *box_of(t.tv, t.ctx.bool_const(true)));
  EXPECT_EQ(unguarded->hi, 163u) << "without the guard the box allows L = 16383";
}

// 8192*tid + 2^21*ctaid - 2^26*(L >> 13) is 8192 * (L mod 8192): an interval per term wraps.
TEST(RangeOver, ScaledRemainderPairIsExact) {
  Launch1D t;
  ThreadVars tv(t.ctx, {256, 1, 1}, {128, 1, 1});
  Expr L = t.ctx.bv_add(tv.tid[0], t.ctx.bv_mul(tv.ctaid[0], t.c32(256)));
  Expr e = t.ctx.bv_add(std::vector<Expr>{t.ctx.bv_mul(tv.tid[0], t.c32(8192)), t.ctx.bv_mul(tv.ctaid[0], t.c32(0x200000)),
                                          t.ctx.bv_mul(t.ctx.bv_lshr(L, t.c32(13)), t.c32(0xfc000000))});
  Expr pred = t.ctx.bool_const(true);
  auto box = box_of(tv, pred);
  auto r = range_over(e, tv, *box);
  auto truth = brute_range(tv, e, pred);
  ASSERT_TRUE(r && truth);
  EXPECT_EQ(r->lo, truth->lo);
  EXPECT_EQ(r->hi, truth->hi);
  EXPECT_EQ(r->hi, 8192u * 8191u);
}

// nvcc's `i - (i & -32)` (i mod 32) and `1 + i - (i & -32)`: a & ~(2^s - 1) is 2^s * (a >> s),
// so it pairs with the `i` spread over the sum like a quotient (002's transposed-conv taps).
TEST(RangeOver, HighBitMaskPairsLikeAQuotient) {
  Launch1D t;
  ThreadVars tv(t.ctx, {256, 1, 1}, {128, 1, 1});
  Expr L = t.ctx.bv_add(tv.tid[0], t.ctx.bv_mul(tv.ctaid[0], t.c32(256)));
  Expr q = t.ctx.bv_lshr(L, t.c32(10));
  for (uint64_t k : {0u, 1u}) {
    Expr e = t.ctx.bv_add(std::vector<Expr>{t.c32(k), q, t.ctx.bv_mul(t.c32(0xffffffff), t.ctx.bv_and(q, t.c32(0xffffffe0)))});
    Expr pred = t.ctx.bool_const(true);
    auto r = range_over(e, tv, *box_of(tv, pred));
    auto truth = brute_range(tv, e, pred);
    ASSERT_TRUE(r && truth) << k;
    EXPECT_EQ(r->lo, truth->lo) << k;
    EXPECT_EQ(r->hi, truth->hi) << k;
  }
  // a mask that is not ~(2^s - 1) is no quotient: no claim narrower than the truth
  Expr odd = t.ctx.bv_add(L, t.ctx.bv_mul(t.c32(0xffffffff), t.ctx.bv_and(L, t.c32(0xffffffd0))));
  auto r = range_over(odd, tv, *box_of(tv, t.ctx.bool_const(true)));
  auto truth = brute_range(tv, odd, t.ctx.bool_const(true));
  if (r) EXPECT_TRUE(r->lo <= truth->lo && truth->hi <= r->hi);
}

// zext(L) + k*zext(L / d) with k > 0 is non-decreasing in L: the range is [g(lo), g(hi)] over
// the guarded L, tighter than the sum of the terms' ranges.
TEST(RangeOver, MonotoneQuotientPairIsExact) {
  Launch1D t;
  Expr L = t.L();
  Expr pred = t.ctx.ult(L, t.c32(15000));
  Expr e = t.ctx.bv_add(std::vector<Expr>{t.ctx.bv_mul(t.z(t.ctx.bv_udiv(L, t.c32(1237))), t.c64(5000)),
                                          t.ctx.bv_mul(t.z(t.tv.ctaid[0]), t.c64(256)), t.z(t.tv.tid[0])});
  auto r = interval(t.tv, e, pred);
  auto truth = brute_range(t.tv, e, pred);
  ASSERT_TRUE(r && truth);
  EXPECT_EQ(r->lo, truth->lo);
  EXPECT_EQ(r->hi, truth->hi);
}

// Random sums of quotients, remainders, shifts and masks of L and of the thread Vars, with
// random guards: the interval always contains the truth (a bounds proof is never wrong).
TEST(RangeOver, RandomQuotientSumsAreNeverUnderApproximated) {
  ir::Context ctx;
  ThreadVars tv(ctx, {64, 2, 1}, {24, 1, 1});
  auto c32 = [&](uint64_t v) { return ctx.bv_const(Sort::BV32, v); };
  auto c64 = [&](uint64_t v) { return ctx.bv_const(Sort::BV64, v); };
  Expr L = ctx.bv_add(std::vector<Expr>{tv.tid[0], ctx.bv_mul(tv.tid[1], c32(64)), ctx.bv_mul(tv.ctaid[0], c32(128))});
  std::mt19937_64 rng(7);
  int proved = 0;
  for (int iter = 0; iter < 300; ++iter) {
    auto pick = [&](uint64_t n) { return rng() % n; };
    std::vector<Expr> terms;
    uint64_t d = 2 + pick(200);
    for (int k = 0, n = 2 + int(pick(4)); k < n; ++k) {
      Expr atom;
      switch (pick(7)) {
        case 0: atom = ctx.bv_udiv(L, c32(d)); break;
        case 1: atom = ctx.bv_urem(L, c32(d)); break;
        case 2: atom = ctx.bv_lshr(L, c32(1 + pick(8))); break;
        case 3: atom = tv.tid[pick(2)]; break;
        case 4: atom = tv.ctaid[0]; break;
        case 5: atom = ctx.bv_sdiv(L, c32(d)); break;
        default: atom = L; break;
      }
      uint64_t coef = pick(3) == 0 ? uint64_t(-int64_t(1 + pick(3000))) : 1 + pick(3000);
      terms.push_back(ctx.bv_mul(ctx.zext(atom, Sort::BV64), c64(coef)));
      if (pick(3) == 0) terms.push_back(ctx.bv_mul(ctx.zext(ctx.bv_udiv(L, c32(d)), Sort::BV64), c64(uint64_t(-int64_t(coef * d)))));
    }
    terms.push_back(c64(pick(1000)));
    Expr e = ctx.bv_add(terms);
    Expr pred = ctx.bool_const(true);
    if (pick(2)) pred = ctx.ult(L, c32(1 + pick(24 * 128)));
    if (pick(3) == 0) pred = ctx.and_(pred, ctx.not_(ctx.ult(ctx.bv_udiv(L, c32(d)), c32(pick(20)))));
    auto box = box_of(tv, pred);
    auto guards = guards_of(pred);
    auto truth = brute_range(tv, e, pred);
    if (!box || !guards || !truth) continue;
    auto r = range_over(e, tv, *box, &*guards);
    if (!r) continue;
    ++proved;
    EXPECT_LE(r->lo, truth->lo) << iter;
    EXPECT_GE(r->hi, truth->hi) << iter;
  }
  EXPECT_GT(proved, 100) << "most sums get a range";
}

// A transposed convolution's gather index (a traced launch's shape, 80M threads):
// 4*t + 512*c - 140*(L/35) is 4*(L mod 35), next to another quotient of the same L
// (2^18*(L/156800)). The remainder pair must be taken before the monotone one, which would use up
// 4*L and leave -140*(L/35) to wrap.
TEST(RangeOver, RemainderPairBeforeMonotonePairOfTheSameSum) {
  ir::Context ctx;
  ThreadVars tv(ctx, {128, 1, 1}, {627200, 1, 1});
  auto c32 = [&](uint64_t v) { return ctx.bv_const(Sort::BV32, v); };
  auto c64 = [&](uint64_t v) { return ctx.bv_const(Sort::BV64, v); };
  auto z = [&](Expr e) { return ctx.zext(e, Sort::BV64); };
  Expr L = ctx.bv_add(ctx.bv_mul(tv.ctaid[0], c32(128)), tv.tid[0]);
  Expr q = ctx.bv_udiv(L, c32(35));
  Expr e = ctx.bv_add(std::vector<Expr>{c64(132), ctx.bv_mul(z(q), c64(uint64_t(-140))), ctx.bv_mul(z(tv.ctaid[0]), c64(512)),
                                        ctx.bv_mul(z(ctx.bv_urem(q, c32(35))), c64(128)),
                                        ctx.bv_mul(z(ctx.bv_udiv(L, c32(156800))), c64(0x40000)), ctx.bv_mul(z(tv.tid[0]), c64(4))});
  auto r = range_over(e, tv, *box_of(tv, ctx.bool_const(true)));
  uint64_t lo = UINT64_MAX, hi = 0;  // the truth, over every L (t and c enter only through L)
  for (uint64_t l = 0; l < 128u * 627200u; ++l) {
    uint64_t v = 132 + 4 * (l % 35) + 128 * (l / 35 % 35) + 0x40000 * (l / 156800);
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  ASSERT_TRUE(r);
  EXPECT_LE(r->lo, lo);
  EXPECT_GE(r->hi, hi);
  EXPECT_EQ(r->hi, 132u + 4 * 34 + 128 * 34 + 0x40000u * 511) << "the three terms' ranges, no wraparound";
}

// `0 <=s i` and `!((16 <=s i) || (i <s 0))` in a path predicate bound i to [0, 15] (signed atoms
// on one side of zero, De Morgan through a negated disjunction): i = (31 & L) - 1 wraps as an
// interval, so without them 1024 * (i /s 2) has no range.
TEST(RangeOver, SignedAtomsAndNegatedDisjunctionsGuard) {
  Launch1D t;
  Expr i = t.ctx.bv_add(t.ctx.bv_and(t.L(), t.c32(31)), t.c32(0xffffffff));
  Expr half = t.ctx.bv_sdiv(i, t.c32(2));
  Expr pred = t.ctx.and_(t.ctx.sle(t.c32(0), i), t.ctx.not_(t.ctx.or_(t.ctx.sle(t.c32(16), half), t.ctx.slt(half, t.c32(0)))));
  Expr e = t.ctx.bv_add(t.ctx.bv_mul(half, t.c32(1024)), t.tv.tid[0]);
  auto r = interval(t.tv, e, pred);
  auto truth = brute_range(t.tv, e, pred);
  ASSERT_TRUE(r && truth);
  EXPECT_LE(r->lo, truth->lo);
  EXPECT_GE(r->hi, truth->hi);
  EXPECT_EQ(r->hi, 1024u * 15 + 255);
  auto g = guards_of(pred);
  ASSERT_TRUE(g && g->count(half) && g->count(i));
  EXPECT_EQ(g->at(half).hi, 15u);
  EXPECT_EQ(g->at(i).hi, 0x7fffffffu) << "0 <=s i alone: the non-negative half";
  EXPECT_FALSE(guards_of(t.ctx.and_(t.ctx.slt(half, t.c32(0)), t.ctx.sle(t.c32(3), half)))) << "contradictory signed atoms";
}

// An ite's arm is ranged under its condition: `c ? 4*sext(j) : 0` with c = `!(g ? ((32 <=s j) ||
// (j <s 0)) : false) && g` (an if-converted region's guard, g decided by the other conjunct)
// keeps 0 <=s j <s 32 although j = (63 & tid) - 1 wraps; the arm no thread takes is dropped.
TEST(RangeOver, IteArmsUnderTheirConditions) {
  Launch1D t;
  Expr j = t.ctx.bv_add(t.ctx.bv_and(t.tv.tid[0], t.c32(63)), t.c32(0xffffffff));
  Expr g = t.ctx.sle(t.c32(0), j);
  Expr bad = t.ctx.or_(t.ctx.sle(t.c32(32), j), t.ctx.slt(j, t.c32(0)));
  Expr c = t.ctx.and_(t.ctx.not_(t.ctx.ite(g, bad, t.ctx.bool_const(false))), g);
  Expr e = t.ctx.ite(c, t.ctx.bv_mul(t.ctx.sext(j, Sort::BV64), t.c64(4)), t.c64(0));
  Expr pred = t.ctx.bool_const(true);
  auto r = interval(t.tv, e, pred);
  auto truth = brute_range(t.tv, e, pred);
  ASSERT_TRUE(r && truth);
  EXPECT_LE(r->lo, truth->lo);
  EXPECT_GE(r->hi, truth->hi);
  EXPECT_EQ(r->hi, 4u * 31) << ir::to_string(t.ctx, e);
  // the else arm is unreachable under a predicate that implies c: only the then arm counts
  Expr e2 = t.ctx.ite(g, t.ctx.bv_mul(t.ctx.zext(j, Sort::BV64), t.c64(4)), t.c64(1u << 20));
  auto r2 = interval(t.tv, e2, t.ctx.and_(g, t.ctx.ult(j, t.c32(10))));
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->hi, 36u);
}

// A sum whose both ends wrap the same number of times has no gap: `0xffffffff + x` with x in
// [1, 10] is [0, 9]. A guard on `k + x` bounds x too, when shifting back does not wrap.
TEST(RangeOver, ConsistentWrapAndConstantOffsetGuards) {
  Launch1D t;
  Expr x = t.ctx.bv_add(t.ctx.bv_and(t.tv.tid[0], t.c32(7)), t.c32(1));  // [1, 8]
  Expr e = t.ctx.bv_add(x, t.c32(0xffffffff));
  auto r = interval(t.tv, e, t.ctx.bool_const(true));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lo, 0u);
  EXPECT_EQ(r->hi, 7u);
  Expr y = t.ctx.bv_and(t.tv.tid[0], t.c32(63));
  Expr shifted = t.ctx.bv_add(y, t.c32(0xfffffffe));  // y - 2
  auto g = guards_of(t.ctx.ult(shifted, t.c32(5)));
  ASSERT_TRUE(g && g->count(y));
  EXPECT_EQ(g->at(y).lo, 2u);
  EXPECT_EQ(g->at(y).hi, 6u);
  auto wraps = guards_of(t.ctx.ult(t.ctx.bv_add(y, t.c32(3)), t.c32(5)));  // y + 3 < 5: y in {0, 1} or y >= 2^32 - 3
  ASSERT_TRUE(wraps);
  EXPECT_FALSE(wraps->count(y)) << "[-3, 1] wraps: no interval for y";
}

}  // namespace
}  // namespace dirigo::exec::test
