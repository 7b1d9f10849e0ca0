// Instruction-level semantics on small hand-written PTX kernels (no nvcc needed).
#include "exec_test_util.h"

namespace dirigo::exec::test {
namespace {

// kernel k(out, in) with register banks; `body` follows the pointer setup:
// %rd1 = out (global), %rd2 = in (global), %r1 = tid.x, %rd3 = out + 4*tid, %rd4 = in + 4*tid.
ptx::Module kernel(const std::string& body) {
  std::string text = std::string(".version 8.5\n.target sm_90\n.address_size 64\n") +
                     ".visible .entry k(.param .u64 k_out, .param .u64 k_in)\n{\n"
                     ".reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .f32 %f<32>;\n.reg .b64 %rd<16>;\n"
                     "ld.param.u64 %rd1, [k_out];\nld.param.u64 %rd2, [k_in];\n"
                     "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd5, %r1, 4;\nadd.s64 %rd3, %rd1, %rd5;\nadd.s64 %rd4, %rd2, %rd5;\n" +
                     body + "\nret;\n}\n";
  auto m = ptx::parse(text);
  ptx::inline_calls(m);
  return m;
}

struct Run {
  Harness h;
  ExecResult r;
  ConcreteResult c;
};

// Runs symbolically and concretely with `n` threads, out: `out_dtype`, in: random floats.
std::unique_ptr<Run> run(const ptx::Module& m, uint32_t n, DType out_dtype = DType::F32, std::vector<double> in = {}) {
  auto R = std::make_unique<Run>();
  if (in.empty()) in = random_vec(n, 99);
  R->h.tensor("out", out_dtype, std::vector<double>(n, 0));
  R->h.tensor("in", DType::F32, in);
  R->h.launch.block = {n};
  R->r = execute(R->h.ctx, m, "k", R->h.launch);
  R->c = run_concrete(R->h.ctx, m, "k", R->h.launch, R->h.input);
  return R;
}

TEST(Semantics, ThreadPredicateSplitsTheBundle) {
  auto m = kernel("setp.lt.u32 %p1, %r1, 8;\n@%p1 bra DONE;\nld.global.f32 %f1, [%rd4];\nst.global.f32 [%rd3], %f1;\nDONE:");
  auto R = run(m, 32);
  ASSERT_TRUE(R->r.ok()) << to_text(R->h.ctx, R->r);
  EXPECT_EQ(R->r.bundles.size(), 2u);
  ASSERT_EQ(R->r.writes.size(), 1u);
  // the writer of element 3 does not exist; element 20 is written by thread 20
  Resolver res(R->h.ctx, R->r);
  EXPECT_TRUE(writers_of(R->h.ctx, R->r, R->h.ids["out"], 3, &res).empty());
  auto w = writers_of(R->h.ctx, R->r, R->h.ids["out"], 20, &res);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].thread.tid.x, 20u);
}

TEST(Semantics, DataPredicateBecomesAnIteValue) {
  auto m = kernel("ld.global.f32 %f1, [%rd4];\nsetp.gt.f32 %p1, %f1, 0f00000000;\nselp.f32 %f2, %f1, 0f00000000, %p1;\n"
                  "st.global.f32 [%rd3], %f2;");
  auto R = run(m, 32);
  ASSERT_TRUE(R->r.ok());
  EXPECT_EQ(R->r.bundles.size(), 1u);
  ASSERT_EQ(R->r.writes.size(), 1u);
  // relu: max(x, 0) after canonicalization of ite(0 < x, x, 0)
  ir::Expr v = R->r.writes[0].value;
  EXPECT_TRUE(v->op == ir::Op::Max || v->op == ir::Op::Ite) << short_string(R->h.ctx, v);
}

TEST(Semantics, GuardedInstructionOnDataMergesWithTheOldValue) {
  auto m = kernel("ld.global.f32 %f1, [%rd4];\nmov.f32 %f2, 0f3F800000;\nsetp.gt.f32 %p1, %f1, 0f00000000;\n"
                  "@%p1 mov.f32 %f2, %f1;\nst.global.f32 [%rd3], %f2;");
  auto R = run(m, 32);
  ASSERT_TRUE(R->r.ok()) << to_text(R->h.ctx, R->r);
  auto in = R->h.input.tensors.at(R->h.ids["in"]);
  const auto& out = R->c.memory.tensors.at(R->h.ids["out"]);
  Resolver res(R->h.ctx, R->r);
  for (int i = 0; i < 32; ++i) {
    double want = in[i] > 0 ? in[i] : 1.0;
    EXPECT_EQ(out[i], want);
    EXPECT_EQ(symbolic_value(R->h, R->r, R->h.ids["out"], i, res), want);
  }
}

// (forward data branches are if-converted: test_ifconv.cpp)
TEST(Semantics, DataDependentLoopIsUnsupported) {
  auto m = kernel("ld.global.f32 %f1, [%rd4];\nLOOP:\nsetp.gt.f32 %p1, %f1, 0f00000000;\nsub.f32 %f1, %f1, 0f3F800000;\n"
                  "@%p1 bra LOOP;\nst.global.f32 [%rd3], %f1;");
  auto R = run(m, 32);
  ASSERT_TRUE(R->r.unsupported);
  EXPECT_NE(R->r.unsupported->find("data-dependent control flow"), std::string::npos) << *R->r.unsupported;
  EXPECT_NE(R->r.unsupported->find("at PTX line 20"), std::string::npos) << *R->r.unsupported;
}

TEST(Semantics, InfiniteLoopHitsTheStepLimit) {
  auto m = kernel("LOOP:\nbra LOOP;");
  Harness h;
  h.tensor("out", DType::F32, {0});
  h.tensor("in", DType::F32, {0});
  ExecOptions o;
  o.max_steps = 10000;
  auto r = execute(h.ctx, m, "k", h.launch, o);
  ASSERT_TRUE(r.unsupported);
  EXPECT_NE(r.unsupported->find("step limit"), std::string::npos);
}

// A loop nest with concrete counters (50 x 200 iterations, a constant guard computed by a
// multiply on the way): the dry run of the counters reports the step limit at the very instruction
// and with the message stepping reaches, after a few real steps; under the limit nothing changes.
ptx::Module counter_nest() {
  return kernel("ld.global.f32 %f1, [%rd4];\nmov.f32 %f2, 0f00000000;\nmov.u32 %r2, 0;\nOUTER:\nmov.u32 %r3, 200;\n"
                "mul.lo.s32 %r4, %r2, 3;\nsetp.gt.u32 %p3, %r4, 1000;\n@%p3 bra DONE;\nINNER:\n"
                "fma.rn.f32 %f2, %f1, %f1, %f2;\nadd.s32 %r3, %r3, -1;\nsetp.ne.s32 %p1, %r3, 0;\n@%p1 bra INNER;\n"
                "add.s32 %r2, %r2, 1;\nsetp.lt.u32 %p2, %r2, 50;\n@%p2 bra OUTER;\nDONE:\nst.global.f32 [%rd3], %f2;");
}

ExecResult run_nest(const ptx::Module& m, uint64_t max_steps, bool predict, Harness&& h = Harness()) {
  h.tensor("out", DType::F32, {0, 0, 0, 0});
  h.tensor("in", DType::F32, {1, 2, 3, 4});
  h.launch.block = {4};
  ExecOptions o;
  o.max_steps = max_steps;
  o.predict_step_limit = predict;
  o.summarize_loops = false;  // the loops are the steps these tests count
  return execute(h.ctx, m, "k", h.launch, o);
}

TEST(Semantics, StepLimitPredictionMatchesStepping) {
  auto m = counter_nest();
  for (uint64_t limit : {700ull, 20000ull, 40000ull}) {
    auto stepped = run_nest(m, limit, false), predicted = run_nest(m, limit, true);
    ASSERT_TRUE(stepped.unsupported) << limit;
    ASSERT_TRUE(predicted.unsupported) << limit;
    EXPECT_EQ(*predicted.unsupported, *stepped.unsupported) << limit;
    EXPECT_EQ(stepped.steps, limit + 1);
    EXPECT_LT(predicted.steps, 30u) << "reported at the first back edge";
  }
  Harness h;  // one Context for both runs: equal values are the same hash-consed node
  auto stepped = run_nest(m, 1'000'000, false, std::move(h));
  ExecOptions o;
  o.max_steps = 1'000'000;
  o.summarize_loops = false;
  auto predicted = execute(h.ctx, m, "k", h.launch, o);
  ASSERT_TRUE(stepped.ok());
  ASSERT_TRUE(predicted.ok());
  EXPECT_EQ(predicted.steps, stepped.steps);
  ASSERT_EQ(predicted.writes.size(), 1u);
  EXPECT_EQ(predicted.writes[0].value, stepped.writes[0].value);
}

// The dry run stops at a branch on data: what comes after it (a data-dependent region with a loop,
// UNSUPPORTED when stepping gets there) is not skipped by a prediction of its long tail.
TEST(Semantics, StepLimitIsNotPredictedPastADataBranch) {
  auto m = kernel("ld.global.f32 %f1, [%rd4];\nsetp.gt.f32 %p4, %f1, 0f00000000;\nmov.u32 %r2, 0;\nLOOP:\n"
                  "add.s32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, 3;\n@%p1 bra LOOP;\n@%p4 bra DONE;\nmov.u32 %r3, 0;\n"
                  "TAIL:\nadd.s32 %r3, %r3, 1;\nsetp.lt.u32 %p2, %r3, 100000;\n@%p2 bra TAIL;\nDONE:");
  auto r = run_nest(m, 5000, true);
  ASSERT_TRUE(r.unsupported);
  EXPECT_NE(r.unsupported->find("data-dependent control flow"), std::string::npos) << *r.unsupported;
}

// Past a thread predicate (a trip count that depends on tid) the dry run follows one thread: its
// path alone runs past the limit, so the launch does. The loop also re-reads a pointer parameter
// and tests it against null (ld.param and a comparison that folds: a tensor pointer is not null).
ptx::Module thread_then_counter(uint32_t tail) {
  return kernel("mov.u32 %r2, 0;\nLOOP:\nadd.s32 %r2, %r2, 1;\nld.param.u64 %rd6, [k_in];\nsetp.eq.s64 %p3, %rd6, 0;\n"
                "@%p3 bra DONE;\nsetp.lt.u32 %p1, %r2, %r1;\n@%p1 bra LOOP;\nmov.u32 %r3, 0;\nTAIL:\nadd.s32 %r3, %r3, 1;\n"
                "setp.lt.u32 %p2, %r3, " + std::to_string(tail) + ";\n@%p2 bra TAIL;\nDONE:");
}

TEST(Semantics, StepLimitPredictionFollowsOneThreadPastAThreadPredicate) {
  auto long_tail = thread_then_counter(100000);
  auto stepped = run_nest(long_tail, 5000, false), predicted = run_nest(long_tail, 5000, true);
  ASSERT_TRUE(stepped.unsupported);
  ASSERT_TRUE(predicted.unsupported);
  EXPECT_NE(stepped.unsupported->find("step limit (5000 instructions) reached at PTX line"), std::string::npos);
  EXPECT_NE(predicted.unsupported->find("step limit (5000 instructions) reached: thread (tid "), std::string::npos)
      << *predicted.unsupported;
  EXPECT_LT(predicted.steps, 100u);
  // under the limit nothing is predicted: same answer, same steps
  auto short_tail = thread_then_counter(300);
  auto s2 = run_nest(short_tail, 5000, false), p2 = run_nest(short_tail, 5000, true);
  EXPECT_TRUE(s2.ok()) << *s2.unsupported;
  EXPECT_TRUE(p2.ok()) << *p2.unsupported;
  EXPECT_EQ(p2.steps, s2.steps);
}

TEST(Semantics, FloatBitManipulationWithoutIdiomIsUnsupported) {
  auto m = kernel("ld.global.f32 %f1, [%rd4];\nmov.b32 %r2, %f1;\nand.b32 %r3, %r2, 2147483647;\nmov.b32 %f2, %r3;\n"
                  "st.global.f32 [%rd3], %f2;");
  auto R = run(m, 4);
  ASSERT_TRUE(R->r.unsupported);
  EXPECT_NE(R->r.unsupported->find("PTX line 18"), std::string::npos) << *R->r.unsupported;
  EXPECT_NE(R->r.unsupported->find("kernel k"), std::string::npos);
}

TEST(Semantics, IntegerOpsMatchTheConcreteInterpreterAndCpp) {
  // out[t] = ((t - 5) * 3 >> 1 arithmetic) + bfe(t, 1, 3) + (t / 3) * (t % 3) as int32
  auto m = kernel("sub.s32 %r2, %r1, 5;\nmul.lo.s32 %r3, %r2, 3;\nshr.s32 %r4, %r3, 1;\nbfe.u32 %r5, %r1, 1, 3;\n"
                  "div.u32 %r6, %r1, 3;\nrem.u32 %r7, %r1, 3;\nmad.lo.s32 %r8, %r6, %r7, %r5;\nadd.s32 %r9, %r4, %r8;\n"
                  "st.global.u32 [%rd3], %r9;");
  auto R = run(m, 64, DType::I32);
  ASSERT_TRUE(R->r.ok()) << to_text(R->h.ctx, R->r);
  ASSERT_FALSE(R->c.unsupported) << *R->c.unsupported;
  Resolver res(R->h.ctx, R->r);
  for (int t = 0; t < 64; ++t) {
    int want = (((t - 5) * 3) >> 1) + ((t >> 1) & 7) + (t / 3) * (t % 3);
    EXPECT_EQ(R->c.memory.tensors.at(R->h.ids["out"])[t], want) << t;
    EXPECT_EQ(symbolic_value(R->h, R->r, R->h.ids["out"], t, res), want) << t;
  }
}

// An unrolled reduction accumulates through a chain of registers (f3 = fma(.., f2); f2 = fma(.., f3)):
// both share one pending term list, and f3 keeps its own prefix when f2 extends the list and a
// later instruction continues from f3 (the list branches off). out = f2 + (f3 + 5x) = 1803x.
TEST(Semantics, AccumulatorChainThroughSeveralRegisters) {
  auto m = kernel("mov.f32 %f2, 0f00000000;\nld.global.f32 %f1, [%rd4];\nmov.u32 %r2, 0;\nLOOP:\n"
                  "fma.rn.f32 %f3, %f1, 0f3F800000, %f2;\nfma.rn.f32 %f2, %f1, 0f40000000, %f3;\n"
                  "add.s32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, 300;\n@%p1 bra LOOP;\n"
                  "fma.rn.f32 %f4, %f1, 0f40A00000, %f3;\nadd.f32 %f5, %f2, %f4;\nst.global.f32 [%rd3], %f5;");
  auto R = run(m, 8);
  ASSERT_TRUE(R->r.ok()) << to_text(R->h.ctx, R->r);
  ASSERT_FALSE(R->c.unsupported) << *R->c.unsupported;
  auto in = R->h.input.tensors.at(R->h.ids["in"]);
  Resolver res(R->h.ctx, R->r);
  for (int t = 0; t < 8; ++t) {
    double want = 1803 * in[t];
    EXPECT_NEAR(R->c.memory.tensors.at(R->h.ids["out"])[t], want, 1e-9 * std::abs(want)) << t;
    EXPECT_NEAR(symbolic_value(R->h, R->r, R->h.ids["out"], t, res), want, 1e-9 * std::abs(want)) << t;
  }
}

TEST(Semantics, ConversionsBetweenFloatAndInt) {
  // out[t] = float(int(in[t] * 10) rounded toward zero) + cvt.rni of in[t]*3
  auto m = kernel("ld.global.f32 %f1, [%rd4];\nmul.f32 %f2, %f1, 0f41200000;\ncvt.rzi.s32.f32 %r2, %f2;\n"
                  "cvt.rn.f32.s32 %f3, %r2;\nmul.f32 %f4, %f1, 0f40400000;\ncvt.rni.f32.f32 %f5, %f4;\nadd.f32 %f6, %f3, %f5;\n"
                  "st.global.f32 [%rd3], %f6;");
  auto R = run(m, 32);
  ASSERT_TRUE(R->r.ok()) << to_text(R->h.ctx, R->r);
  auto in = R->h.input.tensors.at(R->h.ids["in"]);
  Resolver res(R->h.ctx, R->r);
  for (int t = 0; t < 32; ++t) {
    double want = std::trunc(in[t] * 10) + std::nearbyint(in[t] * 3);
    EXPECT_NEAR(R->c.memory.tensors.at(R->h.ids["out"])[t], want, 1e-12) << t;
    EXPECT_NEAR(symbolic_value(R->h, R->r, R->h.ids["out"], t, res), want, 1e-12) << t;
  }
}

// shfl.sync modes against the PTX formula (ANCHORS.md §B), symbolic and concrete
void check_shuffle(const std::string& mode, int b, int c, std::function<int(int lane)> partner) {
  auto m = kernel("ld.global.f32 %f1, [%rd4];\nmov.b32 %r2, %f1;\nshfl.sync." + mode + ".b32 %r3|%p1, %r2, " +
                  std::to_string(b) + ", " + std::to_string(c) + ", -1;\nmov.b32 %f2, %r3;\nst.global.f32 [%rd3], %f2;");
  auto R = run(m, 64);
  ASSERT_TRUE(R->r.ok()) << to_text(R->h.ctx, R->r);
  ASSERT_FALSE(R->c.unsupported) << *R->c.unsupported;
  auto in = R->h.input.tensors.at(R->h.ids["in"]);
  Resolver res(R->h.ctx, R->r);
  for (int t = 0; t < 64; ++t) {
    double want = in[(t & ~31) + partner(t & 31)];
    EXPECT_EQ(R->c.memory.tensors.at(R->h.ids["out"])[t], want) << mode << " t=" << t;
    EXPECT_EQ(symbolic_value(R->h, R->r, R->h.ids["out"], t, res), want) << mode << " t=" << t;
  }
}

TEST(Semantics, ShuffleDown) { check_shuffle("down", 5, 31, [](int l) { return l + 5 <= 31 ? l + 5 : l; }); }
TEST(Semantics, ShuffleUp) { check_shuffle("up", 3, 0, [](int l) { return l - 3 >= 0 ? l - 3 : l; }); }
TEST(Semantics, ShuffleBfly) { check_shuffle("bfly", 6, 31, [](int l) { return l ^ 6; }); }
TEST(Semantics, ShuffleIdxBroadcast) { check_shuffle("idx", 7, 31, [](int) { return 7; }); }
// width-8 segments: c = ((32 - 8) << 8) | 31
TEST(Semantics, ShuffleDownWithinSegments) {
  check_shuffle("down", 2, ((32 - 8) << 8) | 31, [](int l) { return (l & 7) + 2 <= 7 ? l + 2 : l; });
}

}  // namespace
}  // namespace dirigo::exec::test

namespace dirigo::exec::test {
namespace {

TEST(Semantics, InitializedConstantMemoryTable) {
  // out[t] = in[t] * kW[t & 3] with kW = {0.25, 0.5, 0.125, 1.5} as bytes
  std::string text = std::string(".version 8.5\n.target sm_90\n.address_size 64\n") +
                     ".const .align 4 .b8 kW[16] = {0, 0, 128, 62, 0, 0, 0, 63, 0, 0, 0, 62, 0, 0, 192, 63};\n"
                     ".visible .entry k(.param .u64 k_out, .param .u64 k_in)\n{\n"
                     ".reg .b32 %r<8>;\n.reg .f32 %f<8>;\n.reg .b64 %rd<16>;\n"
                     "ld.param.u64 %rd1, [k_out];\nld.param.u64 %rd2, [k_in];\n"
                     "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd5, %r1, 4;\nadd.s64 %rd3, %rd1, %rd5;\nadd.s64 %rd4, %rd2, %rd5;\n"
                     "and.b64 %rd6, %rd5, 12;\nmov.u64 %rd7, kW;\nadd.s64 %rd8, %rd7, %rd6;\nld.const.f32 %f1, [%rd8];\n"
                     "ld.global.f32 %f2, [%rd4];\nmul.f32 %f3, %f2, %f1;\nst.global.f32 [%rd3], %f3;\nret;\n}\n";
  auto m = ptx::parse(text);
  auto R = run(m, 32);
  ASSERT_TRUE(R->r.ok()) << to_text(R->h.ctx, R->r);
  ASSERT_FALSE(R->c.unsupported) << *R->c.unsupported;
  auto in = R->h.input.tensors.at(R->h.ids["in"]);
  const double w[4] = {0.25, 0.5, 0.125, 1.5};
  Resolver res(R->h.ctx, R->r);
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(R->c.memory.tensors.at(R->h.ids["out"])[t], in[t] * w[t & 3]);
    EXPECT_EQ(symbolic_value(R->h, R->r, R->h.ids["out"], t, res), in[t] * w[t & 3]);
  }
}

}  // namespace
}  // namespace dirigo::exec::test

namespace dirigo::exec::test {
namespace {

TEST(Semantics, LongLoopHitsTheTimeLimit) {
  auto m = kernel("LOOP:\nbra LOOP;");
  Harness h;
  h.tensor("out", DType::F32, {0});
  h.tensor("in", DType::F32, {0});
  ExecOptions o;
  o.max_steps = uint64_t(1) << 40;
  o.max_ms = 50;
  auto r = execute(h.ctx, m, "k", h.launch, o);
  ASSERT_TRUE(r.unsupported);
  EXPECT_NE(r.unsupported->find("time limit"), std::string::npos) << *r.unsupported;
}

}  // namespace
}  // namespace dirigo::exec::test

namespace dirigo::exec::test {
namespace {

TEST(Semantics, ComparisonWithMinusInfinityFolds) {
  // m = -inf; if (x > m) m = x  (a max-reduction seed): the result is x for every finite x
  auto m = kernel("ld.global.f32 %f1, [%rd4];\nmov.f32 %f5, 0fFF800000;\nsetp.gt.f32 %p1, %f1, %f5;\n"
                  "selp.f32 %f2, %f1, %f5, %p1;\nst.global.f32 [%rd3], %f2;");
  auto R = run(m, 8);
  ASSERT_TRUE(R->r.ok()) << to_text(R->h.ctx, R->r);
  ASSERT_EQ(R->r.writes.size(), 1u);
  EXPECT_EQ(R->r.writes[0].value->op, ir::Op::Load);  // exactly x[tid]
}

}  // namespace
}  // namespace dirigo::exec::test
