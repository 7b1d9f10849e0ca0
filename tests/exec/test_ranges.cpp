// Safety checks decided over thread ranges, not threads (exec/interval.h: bounds_over_ranges and
// the rules under it), each rule with a case where it applies and one where it must not; and
// 10^8-thread launches whose bounds are proven, or broken with a thread, over ranges.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "exec/interval.h"
#include "exec/sat.h"
#include "ir/print.h"
#include "ir/reduce.h"
#include "exec_test_util.h"

namespace dirigo::exec::test {
namespace {

using ir::Bounds;
using ir::Expr;
using ir::Sort;

// A 2D launch of 16x16 blocks over a 10000 x 10000 image (10^8 threads), as a conv kernel has it.
struct Image {
  ir::Context ctx;
  ThreadVars tv{ctx, {16, 16, 1}, {625, 625, 1}};
  Expr c32(uint64_t v) { return ctx.bv_const(Sort::BV32, v); }
  Expr c64(uint64_t v) { return ctx.bv_const(Sort::BV64, v); }
  Expr z(Expr e) { return ctx.zext(e, Sort::BV64); }
  Expr col() { return ctx.bv_add(tv.tid[0], ctx.bv_mul(c32(16), tv.ctaid[0])); }
  Expr row() { return ctx.bv_add(tv.tid[1], ctx.bv_mul(c32(16), tv.ctaid[1])); }
  Expr minus1(Expr e) { return ctx.bv_add(e, c32(0xffffffff)); }
  // nvcc's `r - 1 >= 0 && c - 1 >= 0`
  Expr up_left_ok() { return ctx.sle(c32(0), ctx.bv_or(minus1(col()), minus1(row()))); }
  ThreadBox full() { return *box_of(tv, ctx.bool_const(true)); }
};

// --- guards_of: an OR's upper bound bounds its operands

TEST(RangeRules, NonNegativeOrBoundsBothOperands) {
  Image im;
  auto g = guards_of(im.up_left_ok());
  ASSERT_TRUE(g);
  auto it = g->find(im.minus1(im.row()));
  ASSERT_NE(it, g->end());
  EXPECT_EQ(it->second.hi, 0x7fffffffu);  // r - 1 >= 0 as a signed value
}

TEST(RangeRules, NegativeOrSaysNothingAboutItsOperands) {
  Image im;
  auto g = guards_of(im.ctx.slt(im.ctx.bv_or(im.minus1(im.col()), im.minus1(im.row())), im.c32(0)));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->count(im.minus1(im.row())), 0u);  // one of them is negative, not which
}

// --- range_over: a sum with a negative constant, taken with signed representatives

TEST(RangeRules, SignedSumFitsOneWindow) {
  Image im;
  ThreadBox box = im.full();
  box[0] = {1, 15};  // tid.x >= 1
  Expr e = im.ctx.bv_add(im.c64(uint64_t(-4)), im.ctx.bv_mul(im.c64(4), im.z(im.tv.tid[0])));
  auto r = range_over(e, im.tv, box);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lo, 0u);
  EXPECT_EQ(r->hi, 56u);
}

TEST(RangeRules, SignedSumAcrossZeroIsNotNarrowed) {
  Image im;
  Expr e = im.ctx.bv_add(im.c64(uint64_t(-4)), im.ctx.bv_mul(im.c64(4), im.z(im.tv.tid[0])));
  auto r = range_over(e, im.tv, im.full());  // tid.x = 0 gives 2^64 - 4, tid.x = 1 gives 0
  EXPECT_TRUE(!r || r->hi > 56u);
}

// --- propagate_guards: bounds propagation over affine guards

TEST(RangeRules, AffineGuardNarrowsTheOtherVar) {
  Image im;
  ThreadBox box = im.full();
  box[4] = {0, 0};  // first block row
  auto b = propagate_guards(im.tv, im.up_left_ok(), box);
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)[1].lo, 1u);  // -1 + 16*0 + tid.y >= 0
  box[4] = {0, 0}, box[3] = {0, 0};
  b = propagate_guards(im.tv, im.up_left_ok(), box);
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)[0].lo, 1u);
  EXPECT_EQ((*b)[1].lo, 1u);
}

TEST(RangeRules, GuardOverAWideBoxLeavesItAlone) {
  Image im;
  auto b = propagate_guards(im.tv, im.up_left_ok(), im.full());  // ctaid.y = 1 admits tid.y = 0
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)[1].lo, 0u);
  // a non-affine subject (tid.x * tid.y) is no affine guard: nothing narrowed
  Expr prod = im.ctx.bv_mul(im.tv.tid[0], im.tv.tid[1]);
  ThreadBox box = im.full();
  box[3] = box[4] = {0, 0};
  b = propagate_guards(im.tv, im.ctx.ule(im.c32(1), prod), box);
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)[0].lo, 0u);
  EXPECT_EQ((*b)[1].lo, 0u);
}

// A remainder over a box inside one period of its divisor is exact, and `k + X == c` is X == c - k
// even where the sum's range wraps through a negative k: a row of `col % 100` and the group index
// `col / 100 - 7 == 0` are decided over boxes, not thread by thread.
TEST(RangeRules, RemainderWithinOnePeriodAndShiftedEquality) {
  Image im;
  ThreadBox box = im.full();
  box[3] = {44, 45};  // columns 704..735: one period of % 100
  box[4] = box[1] = {0, 0};
  Expr rem = im.ctx.bv_urem(im.col(), im.c32(100));
  EXPECT_EQ(truth_over_box(im.tv, im.ctx.ult(rem, im.c32(36)), box), true);
  EXPECT_EQ(truth_over_box(im.tv, im.ctx.ult(rem, im.c32(4)), box), false);
  Expr mask = im.ctx.bv_and(im.col(), im.c32(1023));  // within one period of 1024 too
  EXPECT_EQ(truth_over_box(im.tv, im.ctx.ule(im.c32(704), mask), box), true);
  Expr group = im.ctx.bv_add(im.ctx.bv_udiv(im.col(), im.c32(100)), im.c32(uint32_t(-7)));
  EXPECT_EQ(truth_over_box(im.tv, im.ctx.eq(group, im.c32(0)), box), true);
  EXPECT_EQ(truth_over_box(im.tv, im.ctx.eq(group, im.c32(1)), box), false);
  box[3] = {44, 50};  // columns 704..815 cross 800
  EXPECT_EQ(truth_over_box(im.tv, im.ctx.ult(rem, im.c32(36)), box), std::nullopt);
}

TEST(RangeRules, TruthOverABoxFromOperandRanges) {
  Image im;
  ThreadBox box = im.full();
  box[0] = box[3] = {0, 0};  // column 0: c - 1 = 0xffffffff, negative
  Expr neg = im.ctx.slt(im.ctx.bv_or(im.minus1(im.col()), im.row()), im.c32(0));
  EXPECT_EQ(truth_over_box(im.tv, neg, box), true);  // an OR is at least its operands
  EXPECT_EQ(truth_over_box(im.tv, im.ctx.not_(neg), box), false);
  EXPECT_EQ(truth_over_box(im.tv, neg, im.full()), std::nullopt);  // columns >= 1 make it false
  Expr either = im.ctx.or_(im.ctx.ult(im.col(), im.c32(0)), neg);
  EXPECT_EQ(truth_over_box(im.tv, either, box), true);
}

TEST(RangeRules, ContradictoryGuardEmptiesTheBox) {
  Image im;
  ThreadBox box = im.full();
  // 16*ctaid.y + tid.y >= 20000: no row of a 10000-row grid
  EXPECT_FALSE(propagate_guards(im.tv, im.ctx.ule(im.c32(20000), im.row()), box));
}

// --- range_over: the high half of a product with a constant (nvcc's division by a constant)

TEST(RangeRules, MulHiByAConstantIsNeverUnderApproximated) {
  std::mt19937 g(11);
  for (int iter = 0; iter < 300; ++iter) {
    ir::Context ctx;
    ThreadVars tv{ctx, {256, 1, 1}, {64, 1, 1}};
    const bool sgn = g() % 2;
    const uint32_t c = g(), k = g() % 3 == 0 ? g() : g() % 1000;
    Expr L = ctx.bv_add(ctx.bv_add(tv.tid[0], ctx.bv_mul(ctx.bv_const(Sort::BV32, 256), tv.ctaid[0])),
                        ctx.bv_const(Sort::BV32, k));
    Expr e = ctx.bv_mulhi(ctx.bv_const(Sort::BV32, c), L, sgn);
    ThreadBox box = *box_of(tv, ctx.bool_const(true));
    box[0] = {g() % 128, 128 + g() % 128};
    box[3] = {g() % 32, 32 + g() % 32};
    auto r = range_over(e, tv, box);
    auto vars = tv.all();
    Expr roots[] = {e};
    BvProgram prog(vars, roots);
    uint64_t p[6] = {0, 0, 0, 0, 0, 0}, v, lo = UINT64_MAX, hi = 0;
    for (p[3] = box[3].lo; p[3] <= box[3].hi; ++p[3])
      for (p[0] = box[0].lo; p[0] <= box[0].hi; ++p[0]) prog.eval(p, &v), lo = std::min(lo, v), hi = std::max(hi, v);
    if (r) EXPECT_TRUE(r->lo <= lo && hi <= r->hi) << "iteration " << iter << ": [" << r->lo << ", " << r->hi
                                                   << "] misses [" << lo << ", " << hi << "]";
  }
}

TEST(RangeRules, MulHiOverASignChangeIsNotNarrowed) {
  Image im;
  // x = col - 8 is negative for the first 8 columns: mulhi_s over both signs has no monotone range
  Expr x = im.ctx.bv_add(im.col(), im.c32(uint64_t(-8) & 0xffffffffu));
  ThreadBox box = im.full();
  box[3] = {0, 0};
  auto r = range_over(im.ctx.bv_mulhi(im.c32(0x92492493u), x, true), im.tv, box);
  EXPECT_TRUE(!r || (r->lo == 0 && r->hi == 0xffffffffu));
  box[0] = {8, 15};  // x in [0, 7]: exact, floor(c * x / 2^32) in [-4, 0] — still both signs
  r = range_over(im.ctx.bv_mulhi(im.c32(0x12492493u), x, true), im.tv, box);  // c > 0: [0, 0]
  ASSERT_TRUE(r);
  EXPECT_EQ(r->hi, 0u);
}

// --- bounds_over_ranges

// x[(r - 1) * 10000 + (c - 1)] under r - 1 >= 0 && c - 1 >= 0, as nvcc writes it (a byte offset
// with the constant folded in, then >> 2).
Expr halo_index(Image& im, uint64_t w) {
  Expr terms[] = {im.c64(uint64_t(-int64_t(4 * w + 4))), im.ctx.bv_mul(im.c64(64), im.z(im.tv.ctaid[0])),
                  im.ctx.bv_mul(im.c64(4 * w), im.z(im.tv.tid[1])), im.ctx.bv_mul(im.c64(4), im.z(im.tv.tid[0])),
                  im.ctx.bv_mul(im.c64(64 * w), im.z(im.tv.ctaid[1]))};
  Expr off = im.ctx.bv_add(terms);
  return im.ctx.bv_lshr(off, im.c64(2));
}

TEST(BoundsOverRanges, HaloLoadProvenWithoutEnumerating) {
  Image im;
  Expr idx = halo_index(im, 10000);
  // one interval over the whole box cannot: r = 0 would wrap below zero
  auto g = guards_of(im.up_left_ok());
  auto r = range_over(idx, im.tv, *box_of(im.tv, im.up_left_ok()), &*g);
  EXPECT_TRUE(!r || r->hi >= 100000000u);
  auto d = bounds_over_ranges(im.tv, im.up_left_ok(), idx, 100000000);
  EXPECT_EQ(d.answer, BoundsOverRanges::Answer::InBounds);
  EXPECT_LE(d.boxes, 16u);  // split at the guards' boundaries: a handful of boxes, not 10^8 threads
}

TEST(BoundsOverRanges, MissingGuardGivesAnEvaluatedWitness) {
  Image im;
  Expr idx = halo_index(im, 10000);
  // only r - 1 >= 0 guarded: at row 1, column 0 the byte offset is -4 (element 2^62 - 1); every
  // other thread stays inside
  Expr pred = im.ctx.sle(im.c32(0), im.minus1(im.row()));
  auto d = bounds_over_ranges(im.tv, pred, idx, 100000000);
  ASSERT_EQ(d.answer, BoundsOverRanges::Answer::Violated);
  ASSERT_TRUE(d.witness);
  const auto& t = *d.witness;
  EXPECT_EQ(t.tid.x + 16 * t.ctaid.x, 0u);           // column 0: c - 1 = -1
  EXPECT_EQ(t.tid.y + 16 * t.ctaid.y, 1u);           // row 1: the only row whose offset stays in
}

TEST(BoundsOverRanges, UnknownWhenTheBoxBudgetEnds) {
  Image im;
  auto d = bounds_over_ranges(im.tv, im.up_left_ok(), halo_index(im, 10000), 100000000, 1);
  EXPECT_EQ(d.answer, BoundsOverRanges::Answer::Unknown);
}

// --- relational guards: `a < b` between two affine thread expressions

// The element a triangular loop reads at its i-th step, row * 10000 + (row + i), under the loop's
// exit test `row + i < col` (col <= 9999): in bounds, though row alone may reach 9999.
TEST(BoundsOverRanges, RelationalGuardBoundsTheIndex) {
  Image im;
  const uint64_t i = 7;
  Expr k = im.ctx.bv_add(im.row(), im.c32(i));
  Expr idx = im.ctx.bv_add(im.ctx.bv_mul(im.c64(10000), im.z(im.row())), im.z(k));
  Expr pred = im.ctx.ult(k, im.col());
  auto d = bounds_over_ranges(im.tv, pred, idx, 100000000);
  EXPECT_EQ(d.answer, BoundsOverRanges::Answer::InBounds);
  EXPECT_LE(d.boxes, 2u);  // the guard's dual bound, not a box split
}

// The same read one step further than its guard allows (`row + i <= col + i`, i.e. row <= col):
// not in bounds, and the thread is on the diagonal's end.
TEST(BoundsOverRanges, RelationalGuardThatDoesNotBoundGivesAWitness) {
  Image im;
  Expr k = im.ctx.bv_add(im.row(), im.c32(1));
  Expr idx = im.ctx.bv_add(im.ctx.bv_mul(im.c64(10000), im.z(im.row())), im.z(k));
  auto d = bounds_over_ranges(im.tv, im.ctx.ule(im.row(), im.col()), idx, 100000000);
  ASSERT_EQ(d.answer, BoundsOverRanges::Answer::Violated);
  ASSERT_TRUE(d.witness);
  EXPECT_EQ(d.witness->tid.y + 16 * d.witness->ctaid.y, 9999u);
}

// Random affine guards (plain, signed, nvcc's OR form, relational, some under Or/Not) and 64-bit indices with negative offsets
// over a small 2D launch: InBounds must mean no thread of the predicate is out of bounds (brute
// force over all 960 threads), Violated must come with such a thread.
TEST(BoundsOverRanges, AgreesWithBruteForce) {
  std::mt19937 g(7);
  size_t in_bounds = 0, violated = 0;
  for (int iter = 0; iter < 400; ++iter) {
    ir::Context ctx;
    ThreadVars tv{ctx, {8, 4, 1}, {5, 6, 1}};
    auto c32 = [&](int64_t v) { return ctx.bv_const(Sort::BV32, uint64_t(v) & 0xffffffffu); };
    auto c64 = [&](int64_t v) { return ctx.bv_const(Sort::BV64, uint64_t(v)); };
    Expr col = ctx.bv_add(tv.tid[0], ctx.bv_mul(c32(8), tv.ctaid[0]));  // 0..39
    Expr row = ctx.bv_add(tv.tid[1], ctx.bv_mul(c32(4), tv.ctaid[1]));  // 0..23
    auto pick = [&](int n) { return int(g() % unsigned(n)); };
    auto shifted = [&](Expr e) { return ctx.bv_add(e, c32(pick(5) - 2)); };
    std::vector<Expr> atoms;
    for (int a = pick(4); a-- > 0;) {
      Expr s = pick(2) ? shifted(col) : shifted(row);
      switch (pick(6)) {
        case 0: atoms.push_back(ctx.ult(s, c32(pick(40)))); break;
        case 1: atoms.push_back(ctx.sle(c32(0), s)); break;
        case 2: atoms.push_back(ctx.slt(s, c32(pick(40)))); break;
        case 3: atoms.push_back(pick(2) ? ctx.ult(shifted(row), shifted(col)) : ctx.ule(shifted(col), shifted(row))); break;
        case 4: atoms.push_back(ctx.slt(shifted(row), ctx.bv_add(col, shifted(row)))); break;
        default: atoms.push_back(ctx.sle(c32(0), ctx.bv_or(shifted(col), shifted(row)))); break;
      }
    }
    // disjunctions and negations too (decided over a box by truth_over_box, not by guards)
    if (atoms.size() >= 2 && pick(2)) atoms = {ctx.or_(atoms[0], atoms[1]), atoms.size() > 2 ? atoms[2] : atoms[0]};
    if (!atoms.empty() && pick(3) == 0) atoms[0] = ctx.not_(atoms[0]);
    Expr pred = ctx.and_(atoms);
    const int64_t w = 40, dr = pick(5) - 2, dc = pick(5) - 2;
    // 4 * ((row + dr) * w + col + dc) at 64 bits, then >> 2: the element index
    Expr terms[] = {c64(4 * (dr * w + dc)), ctx.bv_mul(c64(4 * w), ctx.zext(tv.tid[1], Sort::BV64)),
                    ctx.bv_mul(c64(16 * w), ctx.zext(tv.ctaid[1], Sort::BV64)),
                    ctx.bv_mul(c64(4), ctx.zext(tv.tid[0], Sort::BV64)),
                    ctx.bv_mul(c64(32), ctx.zext(tv.ctaid[0], Sort::BV64))};
    Expr idx = ctx.bv_lshr(ctx.bv_add(terms), c64(2));
    const uint64_t extent = 40 * 24 - uint64_t(pick(3)) * 40;
    auto vars = tv.all();
    Expr roots[] = {pred, idx};
    BvProgram prog(vars, roots);
    bool any_bad = false;
    uint64_t p[6] = {0, 0, 0, 0, 0, 0}, out[2];
    for (p[4] = 0; p[4] < 6; ++p[4]) for (p[3] = 0; p[3] < 5; ++p[3]) for (p[1] = 0; p[1] < 4; ++p[1])
      for (p[0] = 0; p[0] < 8; ++p[0]) {
        prog.eval(p, out);
        any_bad = any_bad || (out[0] && out[1] >= extent);
      }
    auto d = bounds_over_ranges(tv, pred, idx, extent);
    if (d.answer == BoundsOverRanges::Answer::InBounds) {
      ++in_bounds;
      EXPECT_FALSE(any_bad) << "iteration " << iter;
    } else if (d.answer == BoundsOverRanges::Answer::Violated) {
      ++violated;
      ASSERT_TRUE(d.witness);
      uint64_t q[6] = {d.witness->tid.x, d.witness->tid.y, 0, d.witness->ctaid.x, d.witness->ctaid.y, 0};
      prog.eval(q, out);
      EXPECT_TRUE(out[0] && out[1] >= extent) << "iteration " << iter;
    }
  }
  EXPECT_GT(in_bounds, 50u);  // both answers occur
  EXPECT_GT(violated, 50u);
}

// --- sat_over_ranges and ThreadSat's use of it

TEST(SatOverRanges, PartialLastTileRowFoundAtACorner) {
  Image im;
  // rows >= 9990 of the 10000: only the last block row's upper lanes
  auto d = sat_over_ranges(im.tv, im.ctx.ule(im.c32(9990), im.row()));
  ASSERT_EQ(d.answer, SatOverRanges::Answer::Sat);
  EXPECT_GE(d.witness->tid.y + 16 * d.witness->ctaid.y, 9990u);
  EXPECT_LE(d.boxes, 4u);
}

TEST(SatOverRanges, ContradictoryAffineGuardsRefuted) {
  Image im;
  // r >= 5000 and r - 1 < 3000 (an nvcc-style shifted subject): no thread
  Expr pred = im.ctx.and_(im.ctx.ule(im.c32(5000), im.row()), im.ctx.ult(im.minus1(im.row()), im.c32(3000)));
  auto d = sat_over_ranges(im.tv, pred);
  EXPECT_EQ(d.answer, SatOverRanges::Answer::Unsat);
}

TEST(SatOverRanges, NonAffineContradictionIsLeftUnknown) {
  Image im;
  // tid.x * ctaid.x == 7 with both even: parity, which no range rule sees (16 boxes reach no points)
  Expr prod = im.ctx.bv_mul(im.tv.tid[0], im.tv.ctaid[0]);
  Expr even_t = im.ctx.eq(im.ctx.bv_and(im.tv.tid[0], im.c32(1)), im.c32(0));
  Expr even_c = im.ctx.eq(im.ctx.bv_and(im.tv.ctaid[0], im.c32(1)), im.c32(0));
  Expr atoms[] = {im.ctx.eq(prod, im.c32(7)), even_t, even_c};
  Expr pred = im.ctx.and_(atoms);
  auto d = sat_over_ranges(im.tv, pred, nullptr, 16);
  EXPECT_EQ(d.answer, SatOverRanges::Answer::Unknown);
}

TEST(SatOverRanges, ThreadSatDecidesLargeQuestionsWithoutEnumerating) {
  ir::Context ctx;
  ThreadVars tv{ctx, {16, 16, 1}, {63, 63, 1}};  // 1008 x 1008: 10^6 threads, below the 2^24 cap
  Expr row = ctx.bv_add(tv.tid[1], ctx.bv_mul(ctx.bv_const(Sort::BV32, 16), tv.ctaid[1]));
  Expr col = ctx.bv_add(tv.tid[0], ctx.bv_mul(ctx.bv_const(Sort::BV32, 16), tv.ctaid[0]));
  ThreadSat sat(ctx, tv, uint64_t(1) << 24);
  // r + c >= 2000 (one component over four Vars: 10^6 points): a corner of the image; with
  // r < 990 no thread (c would pass 1007)
  Expr sum = ctx.bv_add(row, col);
  Expr corner = ctx.ule(ctx.bv_const(Sort::BV32, 2000), sum);
  EXPECT_TRUE(sat.sat(corner));
  auto w = sat.witness(corner);
  ASSERT_TRUE(w);
  EXPECT_GE(w->tid.y + 16 * w->ctaid.y + w->tid.x + 16 * w->ctaid.x, 2000u);
  EXPECT_FALSE(sat.sat(ctx.and_(corner, ctx.ult(row, ctx.bv_const(Sort::BV32, 990)))));
  EXPECT_LT(sat.points_evaluated(), 1000u);  // enumeration would evaluate up to 10^6 points per question
}

// --- Execute on 10^8-thread launches of our conv kernels (tests/exec/cuda/ranges.cu)

ExecResult run_conv(Harness& h, const ptx::Module& m, const std::string& kernel, uint32_t hw) {
  h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("x"), DType::F32, uint64_t(hw) * hw));
  h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("w"), DType::F32, 9));
  h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("y"), DType::F32, uint64_t(hw) * hw));
  h.scalar(hw);
  h.scalar(hw);
  h.launch.grid = {(hw + 15) / 16, (hw + 15) / 16, 1};
  h.launch.block = {16, 16, 1};
  return execute(h.ctx, m, kernel, h.launch);
}

TEST(Ranges, HugeConvHaloLoadsProvenInBounds) {
  DIRIGO_LOAD(m, "ranges");
  Harness h;
  auto r = run_conv(h, *m, "conv3x3", 10000);  // 10^8 threads
  EXPECT_TRUE(r.ok()) << r.unsupported.value_or("") << to_text(h.ctx, r);
  EXPECT_TRUE(r.findings.empty());
  for (const auto& u : r.undecided) ADD_FAILURE() << u;
}

TEST(Ranges, HugeConvOffByOneHaloFoundWithAThread) {
  DIRIGO_LOAD(m, "ranges");
  Harness h;
  auto r = run_conv(h, *m, "conv3x3_oob", 10000);
  ASSERT_FALSE(r.findings.empty()) << to_text(h.ctx, r);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kind, "global-out-of-bounds");
  ASSERT_TRUE(f.thread);
  EXPECT_EQ(f.thread->tid.y + 16 * f.thread->ctaid.y, 9999u);  // the last row reads row 10000
  EXPECT_NE(f.where.source.find("conv3x3.cuh:"), std::string::npos) << f.where.source;
  for (const auto& u : r.undecided) ADD_FAILURE() << u;
}

// A loop whose trip count depends on the thread: 512 exit splits. Each bundle keeps one
// `c + row < col` (Machine::tighten keeps the tightest of atoms that differ in c), not one per
// iteration, and the reads under it are proven in bounds over ranges (relational guards).
TEST(Ranges, TriangularLoopKeepsItsBundlesShortAndInBounds) {
  DIRIGO_LOAD(m, "ranges");
  Harness h;
  const uint32_t n = 512;
  h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("a"), DType::F32, uint64_t(n) * n));
  h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("out"), DType::F32, uint64_t(n) * n));
  h.scalar(n);
  h.launch.grid = {n / 16, n / 16, 1};
  h.launch.block = {16, 16, 1};
  auto r = execute(h.ctx, *m, "triangular_rowsum", h.launch);
  ASSERT_TRUE(r.ok()) << r.unsupported.value_or("");
  EXPECT_TRUE(r.findings.empty()) << to_text(h.ctx, r);
  for (const auto& u : r.undecided) ADD_FAILURE() << u;
  EXPECT_GE(r.writes.size(), size_t(n) / 4);  // one record per trip-count class (the loop is unrolled by 4)
  for (const auto& b : r.bundles)
    EXPECT_LE(b.pred->op == ir::Op::And ? b.pred->nargs : 1u, 8u) << short_string(h.ctx, b.pred);
}

// Shared-memory checks run on one block per class of alike blocks, not on three sampled blocks:
// the race of blocks 50 and 51 (of 100) is found; blocks 0, 33 and 99 alone showed none.
ExecResult run_some_blocks(Harness& h, const ptx::Module& m, int64_t lo, int64_t hi) {
  h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("x"), DType::F32, 100 * 128));
  h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("out"), DType::F32, 100));
  h.scalar(lo);
  h.scalar(hi);
  h.launch.grid = {100, 1, 1};
  h.launch.block = {128, 1, 1};
  return execute(h.ctx, m, "rowsum_race_in_some_blocks", h.launch);
}

TEST(Ranges, SharedRaceInUnsampledBlocksFoundByBlockClasses) {
  DIRIGO_LOAD(m, "ranges");
  Harness h;
  auto r = run_some_blocks(h, *m, 50, 52);
  const Finding* f = nullptr;
  for (const auto& x : r.findings) if (x.kind == "shared-race") f = &x;
  for (const auto& u : r.undecided) ADD_FAILURE() << u;
  ASSERT_NE(f, nullptr) << r.unsupported.value_or("") << to_text(h.ctx, r);
  ASSERT_TRUE(f->thread);
  EXPECT_TRUE(f->thread->ctaid.x == 50 || f->thread->ctaid.x == 51) << f->thread->str();
  // no block skips the barrier: no race, and every block class decided
  Harness ok;
  auto r2 = run_some_blocks(ok, *m, 200, 200);
  EXPECT_TRUE(r2.findings.empty()) << to_text(ok.ctx, r2);
  for (const auto& u : r2.undecided) ADD_FAILURE() << u;
}

TEST(Ranges, BarrierDivergenceInUnsampledBlocksFoundByBlockClasses) {
  DIRIGO_LOAD(m, "ranges");
  auto run = [&](Harness& h, int64_t lo, int64_t hi) {
    h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("x"), DType::F32, 100 * 128));
    h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("out"), DType::F32, 100 * 128));
    h.scalar(lo);
    h.scalar(hi);
    h.launch.grid = {100, 1, 1};
    h.launch.block = {128, 1, 1};
    return execute(h.ctx, *m, "early_exit_in_some_blocks", h.launch);
  };
  Harness h;
  auto r = run(h, 50, 52);
  const Finding* f = nullptr;
  for (const auto& x : r.findings) if (x.kind == "barrier-divergence") f = &x;
  for (const auto& u : r.undecided) ADD_FAILURE() << u;
  ASSERT_NE(f, nullptr) << r.unsupported.value_or("") << to_text(h.ctx, r);
  ASSERT_TRUE(f->thread);
  EXPECT_TRUE(f->thread->ctaid.x == 50 || f->thread->ctaid.x == 51) << f->thread->str();
  Harness ok;
  auto r2 = run(ok, 200, 200);
  EXPECT_TRUE(r2.findings.empty()) << to_text(ok.ctx, r2);
  for (const auto& u : r2.undecided) ADD_FAILURE() << u;
}

TEST(Ranges, ShuffleInactiveLaneInUnsampledBlocksFoundByBlockClasses) {
  DIRIGO_LOAD(m, "ranges");
  auto run = [&](Harness& h, int64_t lo, int64_t hi) {
    h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("x"), DType::F32, 100 * 32));
    h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("out"), DType::F32, 100 * 32));
    h.scalar(lo);
    h.scalar(hi);
    h.launch.grid = {100, 1, 1};
    h.launch.block = {32, 1, 1};
    return execute(h.ctx, *m, "shuffle_exit_in_some_blocks", h.launch);
  };
  Harness h;
  auto r = run(h, 50, 52);
  const Finding* f = nullptr;
  for (const auto& x : r.findings) if (x.kind == "shuffle-inactive-lane") f = &x;
  for (const auto& u : r.undecided) ADD_FAILURE() << u;
  ASSERT_NE(f, nullptr) << r.unsupported.value_or("") << to_text(h.ctx, r);
  ASSERT_TRUE(f->thread);
  EXPECT_TRUE(f->thread->ctaid.x == 50 || f->thread->ctaid.x == 51) << f->thread->str();
  Harness ok;
  auto r2 = run(ok, 200, 200);
  EXPECT_TRUE(r2.findings.empty()) << to_text(ok.ctx, r2);
  for (const auto& u : r2.undecided) ADD_FAILURE() << u;
}

// A non-affine store index inverted over thread ranges, not by enumerating the 2^25-thread launch.
TEST(Ranges, PaddedStoreWritersFoundWithoutEnumerating) {
  DIRIGO_LOAD(m, "ranges");
  Harness h;
  const uint64_t n = uint64_t(1) << 25;
  int32_t y = h.ctx.tensor("y");
  h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("x"), DType::F32, n));
  h.launch.params.push_back(ParamBinding::tensor_arg(y, DType::F32, n / 7 * 8 + 8));
  h.scalar(int64_t(n));
  h.launch.grid = {uint32_t(n / 256), 1, 1};
  h.launch.block = {256, 1, 1};
  auto r = execute(h.ctx, *m, "pad_rows", h.launch);
  ASSERT_TRUE(r.ok()) << r.unsupported.value_or("") << to_text(h.ctx, r);
  Resolver res(h.ctx, r);
  auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i : {uint64_t(0), uint64_t(12345678), n - 1}) {
    auto ws = writers_of(h.ctx, r, y, int64_t(i / 7 * 8 + i % 7), &res, false);
    ASSERT_EQ(ws.size(), 1u) << i;
    EXPECT_EQ(ws[0].thread.ctaid.x * 256 + ws[0].thread.tid.x, i);
  }
  EXPECT_TRUE(writers_of(h.ctx, r, y, 8 * 1000 + 7, &res, false).empty());  // a padding element
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ ranges ] 4 elements of a 2^25-thread non-affine store inverted in %.1f ms\n", ms);
  EXPECT_LT(ms, 2000 * kBudgetScale);  // enumeration: 2^25 evaluations per element
}

// The writers of one atomic group statistic (59,400 threads of a 2^23-thread launch) found as whole
// thread boxes: each is the group's slice of the flat index, checked against the index computed here.
TEST(Ranges, AGroupStatisticsWritersAreFoundAsBoxes) {
  DIRIGO_LOAD(m, "ranges");
  Harness h;
  const int64_t spatial = 19800, channels = 24, groups = 8, batch = 17;
  const int64_t total = batch * channels * spatial;  // 8,078,400 threads
  int32_t sums = h.ctx.tensor("sums");
  h.launch.params.push_back(ParamBinding::tensor_arg(h.ctx.tensor("x"), DType::F32, uint64_t(total)));
  h.launch.params.push_back(ParamBinding::tensor_arg(sums, DType::F32, uint64_t(batch * groups)));
  for (int64_t v : {total, channels, spatial, groups}) h.scalar(v);
  h.launch.grid = {uint32_t((total + 255) / 256), 1, 1};
  h.launch.block = {256, 1, 1};
  auto r = execute(h.ctx, *m, "group_sums", h.launch);
  ASSERT_TRUE(r.ok()) << r.unsupported.value_or("") << to_text(h.ctx, r);
  Resolver res(h.ctx, r);
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t g : {int64_t(0), int64_t(5 * groups + 3), batch * groups - 1}) {
    auto ws = writers_of(h.ctx, r, sums, g, &res, false);
    ASSERT_EQ(int64_t(ws.size()), channels / groups * spatial) << g;
    for (const auto& w : ws) {
      int64_t i = int64_t(w.thread.ctaid.x) * 256 + w.thread.tid.x;
      int64_t c = i / spatial % channels, n = i / spatial / channels;
      ASSERT_LT(i, total);
      ASSERT_EQ(n * groups + c * groups / channels, g) << i;
    }
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ ranges ] 3 group statistics of a 2^23-thread launch inverted in %.1f ms\n", ms);
  EXPECT_LT(ms, 500 * kBudgetScale);  // enumeration: 2^23 evaluations per element (~0.5 s each)
}

// An atomic from thread 0 of each block, its value a tree over the block's shared memory: built once
// for a symbolic block (specialize_tid) and then specialized to each block, it is the per-thread
// specialization node for node. Blocks whose shared stores depend on the block are refused.
TEST(Ranges, ABlockUniformTreeIsSpecializedOnceForEveryBlock) {
  DIRIGO_LOAD(m, "ranges");
  Harness h;
  const int64_t k = 2048, pairs = 8, rows = 3;
  int32_t x = h.ctx.tensor("x"), w = h.ctx.tensor("w"), out = h.ctx.tensor("out");
  h.launch.params.push_back(ParamBinding::tensor_arg(x, DType::F32, uint64_t(rows * k)));
  h.launch.params.push_back(ParamBinding::tensor_arg(w, DType::F32, uint64_t(2 * pairs * k)));
  h.launch.params.push_back(ParamBinding::tensor_arg(out, DType::F32, uint64_t(rows)));
  h.scalar(k), h.scalar(pairs);
  h.launch.grid = {uint32_t(rows * pairs), 1, 1};
  h.launch.block = {128, 1, 1};
  auto r = execute(h.ctx, *m, "pooled_dot_atomic", h.launch);
  ASSERT_TRUE(r.ok()) << r.unsupported.value_or("") << to_text(h.ctx, r);
  EXPECT_EQ(r.loops_summarized, 1u);
  Resolver res(h.ctx, r);
  auto ws = writers_of(h.ctx, r, out, 1, &res, false);
  ASSERT_EQ(ws.size(), size_t(pairs));
  auto v = res.specialize_tid(r.writes[ws[0].write].value, ws[0].thread.tid);
  ASSERT_TRUE(v);
  Expr merged = ir::merge_interleaved(h.ctx, *v);  // the 128 partials of each dot product: one reduction each
  EXPECT_EQ(ir::top_reductions(merged).size(), 2u) << ir::to_string(h.ctx, merged, {.max_nodes = 400});
  for (const auto& wr : ws) {
    ThreadCoord t = wr.thread;
    EXPECT_EQ(res.specialize_block(*v, t), res.specialize(r.writes[wr.write].value, t)) << t.str();
  }
  // shared stores under a block condition: no symbolic block
  Harness h2;
  auto r2 = run_some_blocks(h2, *m, 50, 52);
  Resolver res2(h2.ctx, r2);
  bool refused = false;
  for (const auto& wr : r2.writes)
    if (!res2.specialize_tid(wr.value, {0, 0, 0})) refused = true;
  EXPECT_TRUE(refused);
}

}  // namespace
}  // namespace dirigo::exec::test
