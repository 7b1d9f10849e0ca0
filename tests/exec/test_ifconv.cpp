// If-conversion of branch regions (exec/ifconv.h) on hand-written PTX: data-dependent
// triangles/diamonds, regions that stay UNSUPPORTED, checks inside converted sides, and the
// thread-identity conversion that replaces bundle splits.
#include <cmath>
#include <random>

#include "exec/ifconv.h"
#include "exec_test_util.h"
#include "ir/walk.h"

namespace dirigo::exec::test {
namespace {

// kernel k(out, in): %r1 = tid.x, %rd3 = &out[tid], %rd4 = &in[tid], %f1 = in[tid],
// %p1 = in[tid] > 0 (a data predicate). `body` follows.
ptx::Module data_kernel(const std::string& body) {
  std::string text = std::string(".version 8.5\n.target sm_90\n.address_size 64\n") +
                     ".visible .entry k(.param .u64 k_out, .param .u64 k_in)\n{\n"
                     ".reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .f32 %f<32>;\n.reg .b64 %rd<16>;\n"
                     "ld.param.u64 %rd1, [k_out];\nld.param.u64 %rd2, [k_in];\n"
                     "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd5, %r1, 4;\nadd.s64 %rd3, %rd1, %rd5;\nadd.s64 %rd4, %rd2, %rd5;\n"
                     "ld.global.f32 %f1, [%rd4];\nsetp.gt.f32 %p1, %f1, 0f00000000;\n" +
                     body + "\nret;\n}\n";
  auto m = ptx::parse(text);
  ptx::inline_calls(m);
  return m;
}

// out has `n` elements preset to 7, in has `n` random values in [-2, 2].
struct Case {
  Harness h;
  std::vector<double> in;
  explicit Case(uint32_t n, uint32_t in_extent = 0) {
    in = random_vec(in_extent ? in_extent : n, 5);
    h.tensor("out", DType::F32, std::vector<double>(n, 7));
    h.tensor("in", DType::F32, in);
    h.launch.block = {n};
  }
};

TEST(IfConv, DataTriangleWithStoreIsAGuardedWrite) {
  // if (!(x > 0)) out[t] = x;  -- the store sits on the fall-through side of `@p1 bra`
  auto m = data_kernel("@%p1 bra DONE;\nst.global.f32 [%rd3], %f1;\nDONE:");
  Case s(32);
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[i] = s.in[i] > 0 ? 7 : s.in[i];
  cross_check(s.h, m, "k", "out", ref);
  auto r = execute(s.h.ctx, m, "k", s.h.launch);
  EXPECT_EQ(r.ifconverted, 1u);
  EXPECT_EQ(r.bundles.size(), 1u);
}

TEST(IfConv, DataDiamondMergesRegistersAtTheJoin) {
  // v = x > 0 ? x * 2 : x + 3 + 1, via two sides and an unconditional jump to the join
  auto m = data_kernel(
      "@%p1 bra THEN;\nadd.f32 %f2, %f1, 0f40400000;\nadd.f32 %f2, %f2, 0f3F800000;\nbra.uni JOIN;\n"
      "THEN:\nmul.f32 %f2, %f1, 0f40000000;\nJOIN:\nst.global.f32 [%rd3], %f2;");
  Case s(32);
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[i] = s.in[i] > 0 ? s.in[i] * 2 : s.in[i] + 4;
  cross_check(s.h, m, "k", "out", ref);
}

TEST(IfConv, NestedDataAndThreadBranchesInsideARegion) {
  // if (x > 0) { if (tid < 8) v = 1 else v = 2 } else v = 3  -- a thread test nested in a data side
  auto m = data_kernel(
      "mov.f32 %f2, 0f40400000;\n@!%p1 bra JOIN;\nsetp.lt.u32 %p2, %r1, 8;\nmov.f32 %f2, 0f40000000;\n"
      "@!%p2 bra JOIN;\nmov.f32 %f2, 0f3F800000;\nJOIN:\nst.global.f32 [%rd3], %f2;");
  Case s(32);
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[i] = s.in[i] > 0 ? (i < 8 ? 1 : 2) : 3;
  cross_check(s.h, m, "k", "out", ref);
}

TEST(IfConv, FloatBitsMovedThroughAFreshIntegerRegisterOnOneSide) {
  // if (x > 0) v = __int_as_float(__float_as_int(x)) else v = 3: %r5 is first written on one side
  auto m = data_kernel(
      "mov.f32 %f2, 0f40400000;\n@!%p1 bra JOIN;\nmov.b32 %r5, %f1;\nmov.b32 %f2, %r5;\nJOIN:\n"
      "st.global.f32 [%rd3], %f2;");
  Case s(32);
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[i] = s.in[i] > 0 ? s.in[i] : 3;
  cross_check(s.h, m, "k", "out", ref);
}

TEST(IfConv, BranchingTanhfIsOneTanhAcrossItsDataBranch) {
  // tanhf with the large-|x| path in its own block (ptx/rollup "tanhf (branching)"): the branch on
  // |x| < 0.6 is data-dependent, the sign-bit trick alone would be UNSUPPORTED; rolled up, out = tanh(x)
  auto m = data_kernel(
      "abs.f32 %f2, %f1;\nsetp.ltu.f32 %p2, %f2, 0f3F19999A;\n@%p2 bra SMALL;\nmul.f32 %f3, %f2, 0f4038AA3B;\n"
      "ex2.approx.ftz.f32 %f4, %f3;\nadd.f32 %f5, %f4, 0f3F800000;\nrcp.approx.ftz.f32 %f6, %f5;\n"
      "fma.rn.f32 %f7, %f6, 0fC0000000, 0f3F800000;\nsetp.ge.f32 %p3, %f2, 0f41102CB4;\n"
      "selp.f32 %f8, 0f3F800000, %f7, %p3;\nmov.b32 %r11, %f8;\nmov.b32 %r12, %f1;\n"
      "and.b32 %r13, %r12, -2147483648;\nor.b32 %r14, %r13, %r11;\nmov.b32 %f18, %r14;\nbra.uni DONE;\n"
      "SMALL:\nmul.f32 %f9, %f1, %f1;\nfma.rn.f32 %f10, %f9, 0f3C80F082, 0fBD563CAE;\n"
      "fma.rn.f32 %f11, %f10, %f9, 0f3E085941;\nfma.rn.f32 %f12, %f11, %f9, 0fBEAAA9ED;\n"
      "fma.rn.f32 %f13, %f12, %f9, 0f00000000;\nfma.rn.f32 %f18, %f13, %f1, %f1;\nDONE:\n"
      "st.global.f32 [%rd3], %f18;");
  Case s(32);
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[i] = std::tanh(s.in[i]);
  cross_check(s.h, m, "k", "out", ref);
}

TEST(IfConv, DataLoopStaysUnsupported) {
  // while (x > 0) x -= 1  -- the back edge is the data branch
  auto m = data_kernel("LOOP:\nsub.f32 %f1, %f1, 0f3F800000;\nsetp.gt.f32 %p1, %f1, 0f00000000;\n@%p1 bra LOOP;\n"
                       "st.global.f32 [%rd3], %f1;");
  Case s(8);
  auto r = execute(s.h.ctx, m, "k", s.h.launch);
  ASSERT_TRUE(r.unsupported);
  EXPECT_NE(r.unsupported->find("not if-convertible: loop on data"), std::string::npos) << *r.unsupported;
  EXPECT_NE(r.unsupported->find("kernel k"), std::string::npos) << *r.unsupported;
}

TEST(IfConv, RegionContainingALoopStaysUnsupported) {
  // if (x > 0) { for (i = 0; i < 4; ++i) x *= 2 }  -- a forward data branch skipping a loop
  auto m = data_kernel("@!%p1 bra JOIN;\nmov.u32 %r2, 0;\nLOOP:\nmul.f32 %f1, %f1, 0f40000000;\nadd.s32 %r2, %r2, 1;\n"
                       "setp.lt.s32 %p2, %r2, 4;\n@%p2 bra LOOP;\nJOIN:\nst.global.f32 [%rd3], %f1;");
  Case s(8);
  auto r = execute(s.h.ctx, m, "k", s.h.launch);
  ASSERT_TRUE(r.unsupported);
  EXPECT_NE(r.unsupported->find("loop inside the branch region at PTX line 24"), std::string::npos) << *r.unsupported;
}

TEST(IfConv, RegionContainingABarrierStaysUnsupported) {
  auto m = data_kernel("@!%p1 bra JOIN;\nbar.sync 0;\nJOIN:\nst.global.f32 [%rd3], %f1;");
  Case s(8);
  auto r = execute(s.h.ctx, m, "k", s.h.launch);
  ASSERT_TRUE(r.unsupported);
  EXPECT_NE(r.unsupported->find("barrier inside the branch region"), std::string::npos) << *r.unsupported;
}

TEST(IfConv, BoundsCheckInsideASideSeesTheNestedThreadCondition) {
  // if (x > 0 && tid < 24) out[t] = in[t + 8]: in has 32 elements; the thread test keeps it inside
  std::string load = "ld.global.f32 %f3, [%rd4+32];\nst.global.f32 [%rd3], %f3;\n";
  auto guarded = data_kernel("@!%p1 bra JOIN;\nsetp.lt.u32 %p2, %r1, 24;\n@!%p2 bra JOIN;\n" + load + "JOIN:");
  Case s(32);
  auto r = execute(s.h.ctx, guarded, "k", s.h.launch);
  ASSERT_TRUE(r.ok()) << to_text(s.h.ctx, r);
  EXPECT_TRUE(r.findings.empty()) << to_text(s.h.ctx, r);
  // without the thread test the load is out of bounds for threads 24..31 whenever x > 0
  auto unguarded = data_kernel("@!%p1 bra JOIN;\n" + load + "JOIN:");
  Case s2(32);
  auto r2 = execute(s2.h.ctx, unguarded, "k", s2.h.launch);
  ASSERT_FALSE(r2.unsupported) << *r2.unsupported;
  ASSERT_TRUE(has_finding(r2, "global-out-of-bounds")) << to_text(s2.h.ctx, r2);
  ASSERT_TRUE(r2.findings[0].thread);
  EXPECT_GE(r2.findings[0].thread->tid.x, 24u);
}

TEST(IfConv, UndefinedOnlyOnTheOtherPathIsNoFinding) {
  // %f5 is set only when x > 0, and stored only when x > 0 (a second region on the same predicate)
  auto same = data_kernel("@!%p1 bra A;\nmov.f32 %f5, 0f3F800000;\nA:\n@!%p1 bra B;\nst.global.f32 [%rd3], %f5;\nB:");
  Case s(8);
  auto r = execute(s.h.ctx, same, "k", s.h.launch);
  ASSERT_TRUE(r.ok()) << to_text(s.h.ctx, r);
  EXPECT_FALSE(has_finding(r, "undef-store")) << to_text(s.h.ctx, r);
  // stored unconditionally: undefined whenever x <= 0, a real finding
  auto always = data_kernel("@!%p1 bra A;\nmov.f32 %f5, 0f3F800000;\nA:\nst.global.f32 [%rd3], %f5;");
  Case s2(8);
  auto r2 = execute(s2.h.ctx, always, "k", s2.h.launch);
  EXPECT_TRUE(has_finding(r2, "undef-store")) << to_text(s2.h.ctx, r2);
}

TEST(IfConv, ThreadBranchesConvertOnlyPastTheBundleThreshold) {
  // if (tid % 3 == 0) v = in[t] else v = 1: a load-only side on a thread predicate
  auto m = data_kernel("mov.f32 %f2, 0f3F800000;\nrem.u32 %r2, %r1, 3;\nsetp.ne.s32 %p2, %r2, 0;\n@%p2 bra J;\n"
                       "ld.global.f32 %f2, [%rd4];\nJ:\nst.global.f32 [%rd3], %f2;");
  Case s(32);
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[i] = i % 3 == 0 ? s.in[i] : 1;
  cross_check(s.h, m, "k", "out", ref);  // default threshold: splits
  auto split = execute(s.h.ctx, m, "k", s.h.launch);
  EXPECT_EQ(split.bundles.size(), 2u);
  EXPECT_EQ(split.ifconverted, 0u);
  ExecOptions o;
  o.ifconvert_thread_after = 0;
  auto conv = execute(s.h.ctx, m, "k", s.h.launch, o);
  ASSERT_TRUE(conv.ok());
  EXPECT_EQ(conv.bundles.size(), 1u);
  EXPECT_EQ(conv.ifconverted, 1u);
  Resolver res(s.h.ctx, conv);
  for (int i = 0; i < 32; ++i) EXPECT_TRUE(close(symbolic_value(s.h, conv, s.h.ids["out"], i, res), ref[i])) << i;
}

TEST(IfConv, ThreadBranchWithAStoreStillSplits) {
  auto m = data_kernel("rem.u32 %r2, %r1, 3;\nsetp.ne.s32 %p2, %r2, 0;\n@%p2 bra J;\nst.global.f32 [%rd3], %f1;\nJ:");
  Case s(32);
  ExecOptions o;
  o.ifconvert_thread_after = 0;
  auto r = execute(s.h.ctx, m, "k", s.h.launch, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.ifconverted, 0u);
  EXPECT_EQ(r.bundles.size(), 2u);
}

TEST(IfConv, WarpSizeConstant) {
  auto m = data_kernel("mov.u32 %r3, WARP_SZ;\ncvt.rn.f32.u32 %f4, %r3;\nst.global.f32 [%rd3], %f4;");
  Case s(4);
  cross_check(s.h, m, "k", "out", std::vector<double>(4, 32));
}

TEST(IfConvParts, ThreadProjectionKeepsThreadAtomsAndDropsDataAtoms) {
  ir::Context ctx;
  ir::Expr tid = ctx.var("tid.x", ir::Sort::BV32, ir::Bounds{0, 63});
  ir::Expr lt = ctx.ult(tid, ctx.bv_const(ir::Sort::BV32, 8));
  ir::Expr data = ctx.lt(ctx.real_const(0), ctx.elem(ctx.tensor("x"), 0, ir::Sort::Real));
  auto thread_only = [](ir::Expr e) { return !e->has_data(); };
  EXPECT_EQ(thread_projection(ctx, ctx.and_(lt, data), thread_only), lt);
  EXPECT_EQ(thread_projection(ctx, ctx.not_(ctx.or_(lt, data)), thread_only), ctx.not_(lt));
  EXPECT_EQ(thread_projection(ctx, ctx.or_(lt, data), thread_only), ctx.bool_const(true));
  EXPECT_EQ(thread_projection(ctx, lt, thread_only), lt);
}

TEST(IfConvParts, ExistsDataTreatsAnAtomAndItsNegationAsOneVariable) {
  ir::Context ctx;
  ir::Expr tid = ctx.var("tid.x", ir::Sort::BV32, ir::Bounds{0, 63});
  ir::Expr lt = ctx.ult(tid, ctx.bv_const(ir::Sort::BV32, 8));
  ir::Expr x = ctx.elem(ctx.tensor("x"), 0, ir::Sort::Real);
  ir::Expr pos = ctx.lt(ctx.real_const(0), x), nonpos = ctx.le(x, ctx.real_const(0));
  auto thread_only = [](ir::Expr e) { return !e->has_data() && !e->has_undef(); };
  // x > 0 and x <= 0 never hold together (the projection alone would answer `true`)
  EXPECT_EQ(exists_data(ctx, ctx.and_(pos, nonpos), thread_only), ctx.bool_const(false));
  EXPECT_EQ(thread_projection(ctx, ctx.and_(pos, nonpos), thread_only), ctx.bool_const(true));
  // a predicate register set under x > 0 and read under x > 0: its Undef arm is unreachable
  ir::Expr p2 = ctx.ite(pos, lt, ctx.undef(ir::Sort::Bool));
  EXPECT_EQ(exists_data(ctx, ctx.and_(pos, p2), thread_only), lt);
  EXPECT_EQ(exists_data(ctx, ctx.and_(pos, undef_condition(ctx, p2)), thread_only), ctx.bool_const(false));
  // an And decided by a defined false argument is defined: (p2 && x > 0) is never undefined
  ir::Expr v = ctx.ite(ctx.and_(p2, pos), ctx.real_const(1), ctx.ite(pos, ctx.real_const(2), ctx.real_const(3)));
  EXPECT_EQ(exists_data(ctx, undef_condition(ctx, v), thread_only), ctx.bool_const(false));
}

TEST(IfConvParts, UndefConditionFollowsIteArms) {
  ir::Context ctx;
  ir::Expr c = ctx.lt(ctx.real_const(0), ctx.elem(ctx.tensor("x"), 0, ir::Sort::Real));
  ir::Expr one = ctx.real_const(1);
  EXPECT_EQ(undef_condition(ctx, ctx.ite(c, one, ctx.undef(ir::Sort::Real))), ctx.not_(c));
  EXPECT_EQ(undef_condition(ctx, one), ctx.bool_const(false));
  EXPECT_EQ(undef_condition(ctx, ctx.undef(ir::Sort::Real)), ctx.bool_const(true));
}

TEST(IfConvParts, RegionEndIsTheReconvergencePoint) {
  auto m = data_kernel("@%p1 bra THEN;\nmov.f32 %f2, 0f00000000;\nbra.uni JOIN;\nTHEN:\nmov.f32 %f2, 0f3F800000;\n"
                       "JOIN:\nst.global.f32 [%rd3], %f2;");
  const auto& f = m.functions.at(0);
  auto rl = ptx::rollup(f);
  size_t bra = 0;
  while (f.body[bra].op != ptx::Opcode::Bra) ++bra;
  IfRegion r = find_if_region(f, rl, bra);
  EXPECT_TRUE(r.refusal.empty()) << r.refusal;
  EXPECT_EQ(r.end, f.labels.at("JOIN"));
  EXPECT_EQ(r.size, 3u);  // mov, bra.uni, mov
  EXPECT_FALSE(r.side_effects);
}


// ---- state merging of thread splits (merge.cpp) and pointer selects (memory.cpp)

ExecOptions merge_always() {
  ExecOptions o;
  o.ifconvert_thread_after = 0;  // the many-bundle paths from the first split on
  return o;
}

TEST(Merge, ThreadSplitOverALoopMergesAtTheReconvergencePoint) {
  // acc = 1; if (tid % 3 == 0) for (j = 0; j < 4; ++j) acc += x;  -- the test skips a loop, so
  // it cannot be if-converted; the halves run apart and merge at J
  auto m = data_kernel("mov.f32 %f2, 0f3F800000;\nrem.u32 %r2, %r1, 3;\nsetp.ne.s32 %p2, %r2, 0;\n@%p2 bra J;\n"
                       "mov.u32 %r3, 0;\nL:\nadd.f32 %f2, %f2, %f1;\nadd.u32 %r3, %r3, 1;\nsetp.lt.u32 %p3, %r3, 4;\n"
                       "@%p3 bra L;\nJ:\nst.global.f32 [%rd3], %f2;");
  Case s(32);
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[i] = i % 3 == 0 ? 1 + 4 * s.in[i] : 1;
  cross_check(s.h, m, "k", "out", ref);  // default threshold: plain split, and the interpreter
  auto r = execute(s.h.ctx, m, "k", s.h.launch, merge_always());
  ASSERT_TRUE(r.ok()) << to_text(s.h.ctx, r);
  EXPECT_EQ(r.merged, 1u);
  EXPECT_EQ(r.ifconverted, 0u);
  size_t writes_of_live = 0;
  for (const auto& b : r.bundles) writes_of_live += b.end == "merged" ? 0 : 1;
  EXPECT_EQ(writes_of_live, 1u) << to_text(s.h.ctx, r);  // one bundle reaches the store
  EXPECT_EQ(r.writes.size(), 1u);
  Resolver res(s.h.ctx, r);
  for (int i = 0; i < 32; ++i) EXPECT_TRUE(close(symbolic_value(s.h, r, s.h.ids["out"], i, res), ref[i])) << i;
}

TEST(Merge, HalvesWithDifferentStoresStayApart) {
  // if (tid % 3 == 0) for (j = 0; j < 2; ++j) out[t] = x;  -- own stores differ: no merge
  auto m = data_kernel("rem.u32 %r2, %r1, 3;\nsetp.ne.s32 %p2, %r2, 0;\n@%p2 bra J;\nmov.u32 %r3, 0;\nL:\n"
                       "st.global.f32 [%rd3], %f1;\nadd.u32 %r3, %r3, 1;\nsetp.lt.u32 %p3, %r3, 2;\n@%p3 bra L;\nJ:");
  Case s(32);
  auto r = execute(s.h.ctx, m, "k", s.h.launch, merge_always());
  ASSERT_TRUE(r.ok()) << to_text(s.h.ctx, r);
  EXPECT_EQ(r.merged, 0u);
  EXPECT_EQ(r.bundles.size(), 2u);
  Resolver res(s.h.ctx, r);
  for (int i = 0; i < 32; ++i)
    EXPECT_TRUE(close(symbolic_value(s.h, r, s.h.ids["out"], i, res), i % 3 == 0 ? s.in[i] : 7)) << i;
}

TEST(Merge, RegisterSetOnOneSideIsDefinedWhereTheSameTestUsesIt) {
  // if (c) { v = 0; for (2) v += x; }  ...  if (c) out[t] = v;  -- v is ite(c, 2x, undef) after
  // the merge; the second split's taken half must not see the undefined arm
  auto m = data_kernel("rem.u32 %r2, %r1, 3;\nsetp.ne.s32 %p2, %r2, 0;\n@%p2 bra J;\nmov.u32 %r3, 0;\n"
                       "mov.f32 %f5, 0f00000000;\nL:\nadd.f32 %f5, %f5, %f1;\nadd.u32 %r3, %r3, 1;\n"
                       "setp.lt.u32 %p3, %r3, 2;\n@%p3 bra L;\nJ:\n@%p2 bra K;\nst.global.f32 [%rd3], %f5;\nK:");
  Case s(32);
  auto r = execute(s.h.ctx, m, "k", s.h.launch, merge_always());
  ASSERT_TRUE(r.ok()) << to_text(s.h.ctx, r);
  EXPECT_TRUE(r.findings.empty()) << to_text(s.h.ctx, r);
  EXPECT_GE(r.merged, 1u);
  Resolver res(s.h.ctx, r);
  for (int i = 0; i < 32; ++i)
    EXPECT_TRUE(close(symbolic_value(s.h, r, s.h.ids["out"], i, res), i % 3 == 0 ? 2 * s.in[i] : 7)) << i;
}

TEST(Merge, RegisterLiveAfterTheJoinKeepsItsUndefinedArm) {
  // %f6 is set only when tid % 3 == 0 but stored by every thread after the join: it is live there,
  // so the merge keeps ite(c, 2x, undef) and the store is an undef-store for the other threads
  auto m = data_kernel("rem.u32 %r2, %r1, 3;\nsetp.ne.s32 %p2, %r2, 0;\n@%p2 bra J;\nmov.u32 %r3, 0;\n"
                       "mov.f32 %f6, 0f00000000;\nL:\nadd.f32 %f6, %f6, %f1;\nadd.u32 %r3, %r3, 1;\n"
                       "setp.lt.u32 %p3, %r3, 2;\n@%p3 bra L;\nJ:\nst.global.f32 [%rd3], %f6;");
  Case s(32);
  auto r = execute(s.h.ctx, m, "k", s.h.launch, merge_always());
  EXPECT_EQ(r.merged, 1u);
  EXPECT_TRUE(has_finding(r, "undef-store")) << to_text(s.h.ctx, r);
}

TEST(PointerSelect, DataConditionLoadsFromEitherTensor) {
  // p = x > 0 ? &in[t] : &out[t]; out[t] = *p
  auto m = data_kernel("selp.b64 %rd6, %rd4, %rd3, %p1;\nld.global.f32 %f3, [%rd6];\nst.global.f32 [%rd3], %f3;");
  Case s(32);
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[i] = s.in[i] > 0 ? s.in[i] : 7;
  cross_check(s.h, m, "k", "out", ref);
}

TEST(PointerSelect, ThreadConditionChecksEachArmOnItsOwnThreads) {
  // p = tid < N ? &in[t + 16] : &out[t]; out[t] = *p  -- in has 32 elements, so the `in` arm is in
  // range exactly for the threads below 16 that take it; the other threads never touch in[t + 16]
  auto kernel = [](const char* n) {
    return data_kernel(std::string("setp.lt.u32 %p4, %r1, ") + n + ";\nadd.s64 %rd7, %rd4, 64;\n" +
                       "selp.b64 %rd6, %rd7, %rd3, %p4;\nld.global.f32 %f3, [%rd6];\nst.global.f32 [%rd3], %f3;");
  };
  auto ok = kernel("16");
  Case s(32);
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[i] = i < 16 ? s.in[i + 16] : 7;
  cross_check(s.h, ok, "k", "out", ref);
  // off by one: thread 16 reads in[32]
  auto bad = kernel("17");
  Case s2(32);
  auto r = execute(s2.h.ctx, bad, "k", s2.h.launch);
  ASSERT_TRUE(has_finding(r, "global-out-of-bounds")) << to_text(s2.h.ctx, r);
  for (const auto& f : r.findings)
    if (f.kind == "global-out-of-bounds") { ASSERT_TRUE(f.thread); EXPECT_EQ(f.thread->tid.x, 16u); }
}

// The truth-table check agrees with enumerating assignments through the Context (exists_data
// with every atom a variable) on random skeletons of Not/And/Or/ite over up to 14 atoms, some of
// them negations of others (above 12 atoms the table is evaluated once per assignment of the
// rest); above 20 atoms it answers "not proven".
TEST(IfConvParts, PropositionallyUnsatMatchesEnumeration) {
  ir::Context ctx;
  std::vector<ir::Expr> atoms;
  for (int k = 0; k < 14; ++k) {
    ir::Expr x = ctx.elem(ctx.tensor("x"), k, ir::Sort::Real);
    atoms.push_back(ctx.lt(ctx.real_const(0), x));
    if (k < 6) atoms.push_back(ctx.le(x, ctx.real_const(0)));  // the first one's negation: one variable
  }
  std::mt19937 rng(7);
  int unsat = 0, wide = 0;
  for (int iter = 0; iter < 460; ++iter) {
    bool big = iter >= 400;  // 13..14 variables: more than one pass
    size_t pool = big ? 18 + rng() % 3 : 2 + rng() % 9;
    std::vector<ir::Expr> nodes(atoms.begin(), atoms.begin() + pool);
    for (int k = 0; k < (big ? 24 : 8); ++k) {
      ir::Expr a = nodes[rng() % nodes.size()], b = nodes[rng() % nodes.size()], c = nodes[rng() % nodes.size()];
      switch (rng() % 4) {
        case 0: nodes.push_back(ctx.not_(a)); break;
        case 1: nodes.push_back(ctx.and_(a, b)); break;
        case 2: nodes.push_back(ctx.or_(a, b)); break;
        default: nodes.push_back(ctx.ite(a, b, c)); break;
      }
    }
    ir::Expr cond = ctx.and_(nodes.back(), nodes[nodes.size() - 2]);
    if (big) cond = ctx.and_(cond, ctx.and_(ctx.or_(atoms[6], atoms[0]), ctx.or_(atoms[pool - 1], atoms[1])));
    ir::Expr e = exists_data(ctx, cond, [](ir::Expr) { return false; }, 14);
    bool expect = e->op == ir::Op::ConstBool && !e->bool_value();
    EXPECT_EQ(propositionally_unsat(ctx, cond), expect) << iter;
    unsat += expect;
    wide += big && expect;
  }
  EXPECT_GT(unsat, 10) << "some random conditions are contradictions";
  EXPECT_GT(wide, 0) << "some contradictions over more than 12 atoms";
  std::vector<ir::Expr> many;
  for (int k = 0; k < 16; ++k) many.push_back(ctx.lt(ctx.real_const(k), ctx.elem(ctx.tensor("y"), k, ir::Sort::Real)));
  many.push_back(ctx.not_(many[0]));  // unsatisfiable over 16 variables: decided (16 passes)
  EXPECT_TRUE(propositionally_unsat(ctx, ctx.and_(many)));
  many.pop_back();
  EXPECT_FALSE(propositionally_unsat(ctx, ctx.and_(many)));
  for (int k = 16; k < 21; ++k) many.push_back(ctx.lt(ctx.real_const(k), ctx.elem(ctx.tensor("y"), k, ir::Sort::Real)));
  many.push_back(ctx.not_(many[0]));  // unsatisfiable, but 21 variables: not decided here
  EXPECT_FALSE(propositionally_unsat(ctx, ctx.and_(many)));
  EXPECT_TRUE(propositionally_unsat(ctx, ctx.and_(atoms[0], atoms[1])));
}

// A memo kept across calls answers like fresh calls (shared sub-terms, Undef-free parts).
TEST(IfConvParts, UndefConditionWithAKeptMemoMatchesFreshCalls) {
  ir::Context ctx;
  ir::Expr x = ctx.elem(ctx.tensor("x"), 0, ir::Sort::Real);
  ir::Expr c = ctx.lt(ctx.real_const(0), x), d = ctx.lt(x, ctx.real_const(5));
  ir::Expr u = ctx.ite(c, x, ctx.undef(ir::Sort::Real));
  ir::Expr v1 = ctx.add(u, ctx.real_const(1));
  ir::Expr v2 = ctx.ite(d, v1, ctx.ite(c, ctx.real_const(2), ctx.undef(ir::Sort::Real)));
  std::unordered_map<ir::Expr, ir::Expr> memo;
  for (ir::Expr v : {v1, v2, v1, x, u}) EXPECT_EQ(undef_condition(ctx, v, memo), undef_condition(ctx, v));
  EXPECT_EQ(undef_condition(ctx, v1, memo), ctx.not_(c));
  EXPECT_EQ(undef_condition(ctx, x, memo), ctx.bool_const(false));
}

// Two accesses through one base register at different constant offsets (the address split the
// pointer check made is reused for the access): out[t] = in[t + 8] - in[t + 3], exact against the
// concrete interpreter.
TEST(IfConvParts, OneBaseRegisterAtTwoOffsets) {
  auto m = data_kernel("ld.global.f32 %f3, [%rd4+32];\nld.global.f32 %f4, [%rd4+12];\nsub.f32 %f5, %f3, %f4;\n"
                       "st.global.f32 [%rd3], %f5;");
  Case s(16, 24);
  std::vector<double> ref(16);
  for (size_t t = 0; t < 16; ++t) ref[t] = double(float(float(s.in[t + 8]) - float(s.in[t + 3])));
  cross_check(s.h, m, "k", "out", ref, 1e-6);
}

// A shared-memory address is classified by its interval (inside the shared window for every
// thread of the bundle), not by enumerating the bundle for one thread: out[t] = in[31 - t]
// through a shared array, exact against the concrete interpreter.
TEST(IfConvParts, SharedAddressByItsInterval) {
  std::string text = std::string(".version 8.5\n.target sm_90\n.address_size 64\n") +
                     ".visible .entry k(.param .u64 k_out, .param .u64 k_in)\n{\n"
                     ".reg .b32 %r<16>;\n.reg .f32 %f<8>;\n.reg .b64 %rd<16>;\n.shared .align 4 .b8 sbuf[128];\n"
                     "ld.param.u64 %rd1, [k_out];\nld.param.u64 %rd2, [k_in];\nmov.u32 %r1, %tid.x;\n"
                     "mul.wide.u32 %rd5, %r1, 4;\nadd.s64 %rd3, %rd1, %rd5;\nadd.s64 %rd4, %rd2, %rd5;\n"
                     "ld.global.f32 %f1, [%rd4];\nmov.u32 %r2, sbuf;\nshl.b32 %r3, %r1, 2;\nadd.s32 %r4, %r2, %r3;\n"
                     "st.shared.f32 [%r4], %f1;\nbar.sync 0;\nsub.s32 %r5, 31, %r1;\nshl.b32 %r6, %r5, 2;\n"
                     "add.s32 %r7, %r2, %r6;\nld.shared.f32 %f2, [%r7];\nst.global.f32 [%rd3], %f2;\nret;\n}\n";
  auto m = ptx::parse(text);
  ptx::inline_calls(m);
  Case s(32);
  std::vector<double> ref(32);
  for (size_t t = 0; t < 32; ++t) ref[t] = s.in[31 - t];
  cross_check(s.h, m, "k", "out", ref, 1e-9);
}

// A register's if-converted history `ite(g, x, Undef)` compared with a constant: the lifted
// condition compares the arms, so the guard g that selected the arm and the comparison share the
// atom g. `g ∧ 32 <=s x ∧ !(32 <=s ite(g, x, Undef))` is then propositionally false; unlifted,
// `32 <=s ite(..)` is one more free atom (and 061's conditions passed 20 of them).
TEST(IfConvParts, LiftIteAtomsComparesTheArms) {
  ir::Context ctx;
  auto k = [&](uint64_t v) { return ctx.bv_const(ir::Sort::BV32, v); };
  ir::Expr tid = ctx.var("tid.x", ir::Sort::BV32, ir::Bounds{0, 63});
  ir::Expr g = ctx.ult(tid, k(40)), h = ctx.ult(tid, k(50));
  ir::Expr x = ctx.bv_add(tid, k(3)), y = ctx.bv_sub(tid, k(9));
  ir::Expr u = ctx.undef(ir::Sort::BV32);
  ir::Expr cmp = ctx.sle(k(32), ctx.ite(g, y, u));
  ir::Expr cond = ctx.and_(std::vector<ir::Expr>{g, ctx.sle(k(32), y), ctx.not_(cmp)});
  std::unordered_map<ir::Expr, ir::Expr> memo;
  EXPECT_FALSE(propositionally_unsat(ctx, cond));
  EXPECT_TRUE(propositionally_unsat(ctx, lift_ite_atoms(ctx, cond, memo)));
  // nested, and the arms' own comparisons fold: `ite(h, ite(g, x, Undef), 0) == 0`
  ir::Expr eq = ctx.eq(ctx.ite(h, ctx.ite(g, x, u), k(0)), k(0));
  ir::Expr le = lift_ite_atoms(ctx, eq, memo);
  bool ite_operand = false;  // no comparison left with an ite operand
  ir::post_order(le, [&](ir::Expr e) { return e->nargs == 0; }, [&](ir::Expr e) {
    if (e->sort == ir::Sort::Bool && e->op != ir::Op::Ite)
      for (ir::Expr a : e->args()) ite_operand |= a->op == ir::Op::Ite;
  });
  EXPECT_FALSE(ite_operand) << short_string(ctx, le);
  ir::Expr eq2 = ctx.eq(ctx.ite(ctx.or_(g, h), u, k(0)), k(0));
  EXPECT_NE(lift_ite_atoms(ctx, eq2, memo), eq2) << short_string(ctx, lift_ite_atoms(ctx, eq2, memo));
  // an ite below an operator (`(1 & ite(g, x, Undef)) == 1`): lifted too, so `g ∧ undefined(..)`
  // is propositionally false
  ir::Expr deep = ctx.eq(ctx.bv_and(ctx.ite(g, x, u), k(1)), k(1));
  ir::Expr deep_cond = ctx.and_(std::vector<ir::Expr>{g, ctx.eq(ctx.bv_and(x, k(1)), k(1)), ctx.not_(deep)});
  EXPECT_FALSE(propositionally_unsat(ctx, deep_cond));
  EXPECT_TRUE(propositionally_unsat(ctx, lift_ite_atoms(ctx, deep_cond, memo)));

  // the lifted condition has the original's value at every thread (Undef-free conditions)
  ir::Expr plain = ctx.and_(ctx.slt(ctx.ite(g, x, k(7)), k(20)), ctx.eq(ctx.ite(h, ctx.ite(g, x, y), k(0)), k(5)));
  ir::Expr pl = lift_ite_atoms(ctx, plain, memo);
  EXPECT_NE(pl, plain);
  for (uint64_t t = 0; t < 64; ++t) {
    auto at = [&](ir::Expr e) {
      return ir::substitute(ctx, e, [&](ir::Expr l) { return l == tid ? k(t) : nullptr; });
    };
    EXPECT_EQ(at(pl), at(plain)) << t;
  }
}

}  // namespace
}  // namespace dirigo::exec::test
