// Loop summaries (exec/loopsum.cpp): a per-thread loop with concrete counters becomes a Reduce, and
// its value is the stepped value (the oracle: the same launch stepped, and the concrete interpreter).
#include "exec_test_util.h"
#include "ir/reduce.h"

namespace dirigo::exec::test {
namespace {

// k(out, in, n): %r1 = tid.x, %rd3 = out + 4*tid, %rd2 = in; `body` follows.
ptx::Module loop_kernel(const std::string& body) {
  std::string text = std::string(".version 8.5\n.target sm_90\n.address_size 64\n") +
                     ".visible .entry k(.param .u64 k_out, .param .u64 k_in)\n{\n"
                     ".reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .f32 %f<32>;\n.reg .b64 %rd<16>;\n"
                     "ld.param.u64 %rd1, [k_out];\nld.param.u64 %rd2, [k_in];\n"
                     "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd5, %r1, 4;\nadd.s64 %rd3, %rd1, %rd5;\n" +
                     body + "\nret;\n}\n";
  return ptx::parse(text);
}

// out[tid] = sum_{k < trips} in[tid + k] * in[k]  (the pointers step by 4 bytes, the counter by 1)
std::string dot_body(const std::string& trips) {
  return "mov.f32 %f2, 0f00000000;\nmov.u32 %r2, 0;\nadd.s64 %rd6, %rd2, %rd5;\nmov.u64 %rd7, %rd2;\nLOOP:\n"
         "ld.global.f32 %f3, [%rd6];\nld.global.f32 %f4, [%rd7];\nfma.rn.f32 %f2, %f3, %f4, %f2;\n"
         "add.s64 %rd6, %rd6, 4;\nadd.s64 %rd7, %rd7, 4;\nadd.s32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, " + trips +
         ";\n@%p1 bra LOOP;\nst.global.f32 [%rd3], %f2;";
}

struct Pair {
  Harness h;
  ExecResult summarized, stepped;
};

std::unique_ptr<Pair> run_both(const ptx::Module& m, uint32_t threads, size_t in_size) {
  auto P = std::make_unique<Pair>();
  P->h.tensor("out", DType::F32, std::vector<double>(threads, 0));
  P->h.tensor("in", DType::F32, random_vec(in_size, 7));
  P->h.launch.block = {threads};
  ExecOptions on;
  on.summarize_min_trips = 16;
  P->summarized = execute(P->h.ctx, m, "k", P->h.launch, on);
  ExecOptions off;
  off.summarize_loops = false;
  P->stepped = execute(P->h.ctx, m, "k", P->h.launch, off);
  return P;
}

void expect_same_values(Pair& P, uint32_t threads) {
  int32_t out = P.h.ids.at("out");
  Resolver rs(P.h.ctx, P.summarized), rt(P.h.ctx, P.stepped);
  for (uint32_t i = 0; i < threads; ++i) {
    double s = symbolic_value(P.h, P.summarized, out, i, rs), t = symbolic_value(P.h, P.stepped, out, i, rt);
    EXPECT_TRUE(close(s, t, 1e-12)) << "out[" << i << "]: summarized " << s << " stepped " << t;
  }
}

// The summarized values against the concrete interpreter, which never summarizes: out[i] for i < n,
// every `stride`-th one.
void expect_concrete_values(Pair& P, const ptx::Module& m, int64_t n, int64_t stride = 1) {
  auto c = run_concrete(P.h.ctx, m, "k", P.h.launch, P.h.input);
  ASSERT_FALSE(c.unsupported);
  Resolver rs(P.h.ctx, P.summarized);
  int32_t out = P.h.ids.at("out");
  for (int64_t i = 0; i < n; i += stride)
    EXPECT_TRUE(close(symbolic_value(P.h, P.summarized, out, i, rs), c.memory.tensors.at(out)[size_t(i)], 1e-6))
        << "out[" << i << "]";
}

TEST(LoopSummary, ADotProductLoopIsOneReductionWithTheSteppedValue) {
  auto m = loop_kernel(dot_body("1000"));
  auto P = run_both(m, 8, 1008);
  ASSERT_TRUE(P->summarized.ok()) << to_text(P->h.ctx, P->summarized);
  ASSERT_TRUE(P->stepped.ok());
  EXPECT_EQ(P->summarized.loops_summarized, 1u);
  EXPECT_EQ(P->stepped.loops_summarized, 0u);
  EXPECT_LT(P->summarized.steps, 100u) << "two stepped iterations, one symbolic one";
  EXPECT_GT(P->stepped.steps, 7000u);
  ASSERT_EQ(P->summarized.writes.size(), 1u);
  EXPECT_TRUE(ir::contains_reduce(P->summarized.writes[0].value));
  expect_same_values(*P, 8);
  expect_concrete_values(*P, m, 8);
}

TEST(LoopSummary, AReadPastTheEndAtTheLastIterationIsFound) {
  auto m = loop_kernel(dot_body("1000"));
  auto P = run_both(m, 8, 1004);  // thread 7 reads in[7 + 999] = in[1006]
  EXPECT_EQ(P->summarized.loops_summarized, 1u);
  EXPECT_TRUE(has_finding(P->summarized, "global-out-of-bounds")) << to_text(P->h.ctx, P->summarized);
  EXPECT_TRUE(has_finding(P->stepped, "global-out-of-bounds"));
}

TEST(LoopSummary, ALoopThatReadsATensorTheLaunchWritesIsSteppedAgain) {
  // the loop reads `out` (other threads' elements included) while every thread also stores to it:
  // the cross-thread read-after-write check needs every read index
  auto m = loop_kernel("mov.f32 %f2, 0f00000000;\nmov.u32 %r2, 0;\nmov.u64 %rd7, %rd1;\nLOOP:\n"
                       "ld.global.f32 %f4, [%rd7];\nadd.f32 %f2, %f2, %f4;\nadd.s64 %rd7, %rd7, 4;\n"
                       "add.s32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, 40;\n@%p1 bra LOOP;\nst.global.f32 [%rd3], %f2;");
  auto P = run_both(m, 64, 64);
  EXPECT_TRUE(P->summarized.summaries_retracted);
  EXPECT_EQ(P->summarized.loops_summarized, 0u);
  EXPECT_EQ(P->summarized.findings.size(), P->stepped.findings.size());
  EXPECT_EQ(P->summarized.unsupported.has_value(), P->stepped.unsupported.has_value());
}

TEST(LoopSummary, AThreadDependentTripCountSummarizesTheTripsEveryThreadRuns) {
  // trips = tid + 20: the 20 all threads run are one reduction, thread t steps t more
  auto m = loop_kernel("add.s32 %r3, %r1, 20;\n" + dot_body("%r3"));
  auto P = run_both(m, 8, 64);
  ASSERT_FALSE(P->summarized.unsupported) << *P->summarized.unsupported;
  EXPECT_EQ(P->summarized.loops_summarized, 1u);
  expect_same_values(*P, 8);
}

TEST(LoopSummary, ATripCountReadFromDataIsStepped) {
  // trips = in[0] as an integer: no count before the data is known
  auto m = loop_kernel("ld.global.u32 %r3, [%rd2];\nmin.u32 %r3, %r3, 40;\n" + dot_body("%r3"));
  auto P = run_both(m, 8, 64);
  EXPECT_EQ(P->summarized.loops_summarized, 0u);
  EXPECT_EQ(P->summarized.unsupported.has_value(), P->stepped.unsupported.has_value());
}

// for (i = tid; i < n; i += ntid) acc += in[i]: the counter starts at the thread's index
std::string block_stride_body(const std::string& n) {
  return "mov.f32 %f2, 0f00000000;\nmov.u32 %r2, %r1;\nmov.u32 %r4, %ntid.x;\nLOOP:\n"
         "mul.wide.u32 %rd8, %r2, 4;\nadd.s64 %rd6, %rd2, %rd8;\nld.global.f32 %f3, [%rd6];\nadd.f32 %f2, %f2, %f3;\n"
         "add.s32 %r2, %r2, %r4;\nsetp.lt.u32 %p1, %r2, " + n + ";\n@%p1 bra LOOP;\nst.global.f32 [%rd3], %f2;";
}

TEST(LoopSummary, ABlockStrideLoopWithOneTripCountForEveryThreadIsSummarized) {
  auto m = loop_kernel(block_stride_body("1024"));
  auto P = run_both(m, 8, 1024);  // 128 trips for each of the 8 threads (replayed per thread)
  ASSERT_TRUE(P->summarized.ok()) << to_text(P->h.ctx, P->summarized);
  EXPECT_EQ(P->summarized.loops_summarized, 1u);
  EXPECT_LT(P->summarized.steps, P->stepped.steps / 10);
  expect_same_values(*P, 8);
}

TEST(LoopSummary, ABlockStrideLoopReadingTheBlockSizeInsideItsBodyIsSummarized) {
  // nvcc -O3 rematerializes `mov.u32 %r, %ntid.x` next to the counter's add, inside the body: the trip
  // count's replay takes it as the launch's constant
  std::string body = block_stride_body("1024");
  body.replace(body.find("mov.u32 %r4, %ntid.x;\n"), std::string("mov.u32 %r4, %ntid.x;\n").size(), "");
  body.replace(body.find("add.s32 %r2, %r2, %r4;"), std::string("add.s32 %r2, %r2, %r4;").size(),
               "mov.u32 %r4, %ntid.x;\nadd.s32 %r2, %r2, %r4;");
  auto m = loop_kernel(body);
  auto P = run_both(m, 8, 1024);
  ASSERT_TRUE(P->summarized.ok()) << to_text(P->h.ctx, P->summarized);
  EXPECT_EQ(P->summarized.loops_summarized, 1u);
  EXPECT_LT(P->summarized.steps, P->stepped.steps / 10);
  expect_same_values(*P, 8);
  expect_concrete_values(*P, m, 8);
}

TEST(LoopSummary, ABlockStrideLoopWhoseThreadsDifferInTripsSummarizesTheTripsAllRun) {
  auto m = loop_kernel(block_stride_body("1020"));  // threads 0-3 run 128 trips, 4-7 run 127
  auto P = run_both(m, 8, 1024);
  ASSERT_TRUE(P->summarized.ok()) << to_text(P->h.ctx, P->summarized);
  EXPECT_EQ(P->summarized.loops_summarized, 1u);  // 127 for all, the last one stepped by threads 0-3
  EXPECT_LT(P->summarized.steps, P->stepped.steps / 10);
  expect_same_values(*P, 8);
  expect_concrete_values(*P, m, 8);
}

TEST(LoopSummary, ALoopFromAGroupStartOverALargeGridReplaysEachDistinctCounterOnce) {
  // block b sums in[64·(b & 15) .. + 64): 5000 blocks (past one replay per thread point), 16 distinct
  // counter tuples
  auto m = loop_kernel(
      "mov.u32 %r5, %ctaid.x;\nmad.lo.u32 %r8, %r5, 1, %r1;\nmul.wide.u32 %rd9, %r8, 4;\nadd.s64 %rd3, %rd1, %rd9;\n"
      "and.b32 %r6, %r5, 15;\nshl.b32 %r6, %r6, 6;\nadd.u32 %r7, %r6, 64;\nmov.f32 %f2, 0f00000000;\nmov.u32 %r2, %r6;\n"
      "LOOP:\nmul.wide.u32 %rd8, %r2, 4;\nadd.s64 %rd6, %rd2, %rd8;\nld.global.f32 %f3, [%rd6];\nadd.f32 %f2, %f2, %f3;\n"
      "add.s32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, %r7;\n@%p1 bra LOOP;\nst.global.f32 [%rd3], %f2;");
  Pair P;
  P.h.tensor("out", DType::F32, std::vector<double>(5000, 0));
  P.h.tensor("in", DType::F32, random_vec(1024, 7));
  P.h.launch.block = {1};
  P.h.launch.grid = {5000};
  ExecOptions on;
  P.summarized = execute(P.h.ctx, m, "k", P.h.launch, on);
  ASSERT_TRUE(P.summarized.ok()) << to_text(P.h.ctx, P.summarized);
  EXPECT_EQ(P.summarized.loops_summarized, 1u);
  expect_concrete_values(P, m, 5000, 97);
}

TEST(LoopSummary, ARunningMaximumIsOneMaxReduction) {
  auto m = loop_kernel("mov.f32 %f2, 0fFF800000;\nmov.u32 %r2, 0;\nadd.s64 %rd6, %rd2, %rd5;\nLOOP:\n"
                       "ld.global.f32 %f3, [%rd6];\nmax.f32 %f2, %f2, %f3;\nadd.s64 %rd6, %rd6, 32;\n"
                       "add.s32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, 300;\n@%p1 bra LOOP;\nst.global.f32 [%rd3], %f2;");
  auto P = run_both(m, 8, 2400);
  ASSERT_TRUE(P->summarized.ok()) << to_text(P->h.ctx, P->summarized);
  EXPECT_EQ(P->summarized.loops_summarized, 1u);
  expect_same_values(*P, 8);
}

TEST(LoopSummary, AShortLoopIsStepped) {
  auto m = loop_kernel(dot_body("10"));
  auto P = run_both(m, 8, 32);
  EXPECT_EQ(P->summarized.loops_summarized, 0u);
  EXPECT_EQ(P->summarized.writes[0].value, P->stepped.writes[0].value);
}

}  // namespace
}  // namespace dirigo::exec::test
