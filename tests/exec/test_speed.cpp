// Execute's speed-ups keep answers exact and its deadline holds: grouped range proofs, the
// structured out-of-time flag, and deadline ticks inside launch-sized loops.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "exec/deadline.h"
#include "exec/interval.h"
#include "exec/sat.h"
#include "exec_test_util.h"

namespace dirigo::exec::test {
namespace {

using ir::Expr;
using ir::Sort;

// The exact range of e over every thread of the launch, by brute force.
std::pair<uint64_t, uint64_t> brute_range(const ThreadVars& tv, Expr e) {
  auto vars = tv.all();
  Expr roots[] = {e};
  BvProgram prog(vars, roots);
  EXPECT_TRUE(prog.ok());
  uint64_t lo = UINT64_MAX, hi = 0, p[6], out;
  for (p[5] = 0; p[5] < tv.grid.z; ++p[5]) for (p[4] = 0; p[4] < tv.grid.y; ++p[4]) for (p[3] = 0; p[3] < tv.grid.x; ++p[3])
  for (p[2] = 0; p[2] < tv.block.z; ++p[2]) for (p[1] = 0; p[1] < tv.block.y; ++p[1]) for (p[0] = 0; p[0] < tv.block.x; ++p[0]) {
    prog.eval(p, &out);
    lo = std::min(lo, out), hi = std::max(hi, out);
  }
  return {lo, hi};
}

// A tiled GEMM's load index: a negative coefficient on a masked thread term (the sum's
// thread part wraps below zero for some threads) plus a ctaid term plus a per-iteration
// constant. The grouped proof enumerates tid and ctaid separately (points << threads) and gives
// exactly the brute-force range.
TEST(RangeCache, SumOfIndependentGroupsIsExactAndCheap) {
  ir::Context ctx;
  ThreadVars tv(ctx, {32, 8, 1}, {16, 12, 1});
  RangeCache rc(ctx, tv, uint64_t(1) << 24);
  auto c64 = [&](uint64_t v) { return ctx.bv_const(Sort::BV64, v); };
  auto c32 = [&](uint64_t v) { return ctx.bv_const(Sort::BV32, v); };
  Expr lin = ctx.bv_add(ctx.bv_mul(tv.tid[1], c32(32)), tv.tid[0]);
  uint64_t total_threads = 32 * 8 * 16 * 12;
  for (uint64_t k0 : {0ull, 1792ull, 4096ull}) {
    Expr masked = ctx.zext(ctx.bv_and(ctx.bv_add(lin, c32(k0)), c32(0xffffffe0)), Sort::BV64);
    Expr e = ctx.bv_add(std::vector<Expr>{c64(0x71fc80 + k0), ctx.bv_mul(masked, c64(uint64_t(-4))),
                                          ctx.bv_mul(ctx.zext(tv.tid[1], Sort::BV64), c64(0x20080)),
                                          ctx.bv_mul(ctx.zext(tv.tid[0], Sort::BV64), c64(4)),
                                          ctx.bv_mul(ctx.zext(tv.ctaid[1], Sort::BV64), c64(0x100000))});
    auto r = rc.range(e, ctx.bool_const(true));
    ASSERT_TRUE(r) << "k0=" << k0;
    auto [lo, hi] = brute_range(tv, e);
    EXPECT_EQ(r->lo, lo) << "k0=" << k0;
    EXPECT_EQ(r->hi, hi) << "k0=" << k0;
  }
  EXPECT_LT(rc.points_enumerated(), total_threads) << "the groups were enumerated separately";
}

// When the wrapped sum leaves [0, 2^w) for some thread no grouped bound is claimed; the answer
// still covers the truth (here: a value that wraps to a huge unsigned number).
TEST(RangeCache, WrappingSumIsNeverUnderApproximated) {
  ir::Context ctx;
  ThreadVars tv(ctx, {64, 1, 1}, {4, 1, 1});
  RangeCache rc(ctx, tv, uint64_t(1) << 24);
  Expr e = ctx.bv_add(std::vector<Expr>{ctx.bv_const(Sort::BV32, 10), ctx.bv_mul(tv.tid[0], ctx.bv_const(Sort::BV32, uint64_t(-1) & 0xffffffff)),
                                        tv.ctaid[0]});
  auto r = rc.range(e, ctx.bool_const(true));
  auto [lo, hi] = brute_range(tv, e);
  ASSERT_TRUE(r);
  EXPECT_LE(r->lo, lo);
  EXPECT_GE(r->hi, hi);
  EXPECT_GE(r->hi, 0xffffff00u) << "10 - 63 + 0 wraps";
}

TEST(Deadline, TickThrowsOnceThePointHasPassed) {
  Deadline none;
  for (int i = 0; i < 100000; ++i) none.tick("x");  // no deadline: never throws
  Deadline past(Deadline::Clock::now() - std::chrono::milliseconds(1));
  EXPECT_THROW(past.check("in a test"), TimeLimit);
  bool thrown = false;
  try {
    for (int i = 0; i < 5000; ++i) past.tick("in a test");
  } catch (const TimeLimit& t) {
    thrown = true;
    EXPECT_STREQ(t.what(), "in a test");
  }
  EXPECT_TRUE(thrown) << "tick reads the clock at least every 4096 calls";
}

ptx::Module spin_kernel() {
  std::string text = ".version 8.5\n.target sm_90\n.address_size 64\n"
                     ".visible .entry k(.param .u64 k_out)\n{\n.reg .b32 %r<4>;\n"
                     "LOOP:\nbra LOOP;\nret;\n}\n";
  auto m = ptx::parse(text);
  ptx::inline_calls(m);
  return m;
}

// The out-of-time flag is structured: set for the wall-clock limit (max_ms or an absolute
// deadline), not for the step limit or a missing feature.
TEST(Deadline, OutOfTimeIsAFlagNotAMessage) {
  auto m = spin_kernel();
  {
    Harness h;
    h.tensor("out", DType::F32, {0});
    ExecOptions o;
    o.max_steps = uint64_t(1) << 40;
    o.max_ms = 30;
    auto r = execute(h.ctx, m, "k", h.launch, o);
    ASSERT_TRUE(r.unsupported);
    EXPECT_TRUE(r.out_of_time) << *r.unsupported;
    EXPECT_NE(r.unsupported->find("time limit (30 ms) reached at PTX line"), std::string::npos) << *r.unsupported;
  }
  {
    Harness h;
    h.tensor("out", DType::F32, {0});
    ExecOptions o;
    o.max_steps = uint64_t(1) << 40;
    o.max_ms = 0;  // no relative limit; the absolute deadline stops it
    o.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
    auto t0 = std::chrono::steady_clock::now();
    auto r = execute(h.ctx, m, "k", h.launch, o);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(r.unsupported);
    EXPECT_TRUE(r.out_of_time);
    EXPECT_LT(ms, 2000);
  }
  {
    Harness h;
    h.tensor("out", DType::F32, {0});
    ExecOptions o;
    o.max_steps = 1000;
    auto r = execute(h.ctx, m, "k", h.launch, o);
    ASSERT_TRUE(r.unsupported);
    EXPECT_FALSE(r.out_of_time) << "the step limit is not the wall clock";
  }
}

}  // namespace
}  // namespace dirigo::exec::test
