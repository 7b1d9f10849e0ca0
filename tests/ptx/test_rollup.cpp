// Math-idiom rollup (ptx/rollup.h): each template applies to nvcc's sequence (copied from
// nvcc 13 -arch=sm_90 output of our own test kernels) and does not apply to near misses.
#include <gtest/gtest.h>

#include "ptx/rollup.h"
#include "ptx_test_util.h"

namespace dirigo::ptx {
namespace {

using K = RolledInstr::Kind;

// expf(x), default lowering; x in %f1, result in %f17.
const char* kExpf = R"(
  ld.global.f32 %f1, [%rd1];
  mov.f32 %f2, 0f3F000000;
  mov.f32 %f3, 0f3BBB989D;
  fma.rn.f32 %f4, %f1, %f3, %f2;
  cvt.sat.f32.f32 %f5, %f4;
  mov.f32 %f6, 0f4B400001;
  mov.f32 %f7, 0f437C0000;
  fma.rm.f32 %f8, %f5, %f7, %f6;
  add.f32 %f9, %f8, 0fCB40007F;
  neg.f32 %f10, %f9;
  mov.f32 %f11, 0f3FB8AA3B;
  fma.rn.f32 %f12, %f1, %f11, %f10;
  mov.f32 %f13, 0f32A57060;
  fma.rn.f32 %f14, %f1, %f13, %f12;
  mov.b32 %r6, %f8;
  shl.b32 %r7, %r6, 23;
  mov.b32 %f15, %r7;
  ex2.approx.ftz.f32 %f16, %f14;
  mul.f32 %f17, %f16, %f15;
  st.global.f32 [%rd2], %f17;
)";

struct Rolled {
  Module m;
  Rollup r;
  const Function& f() const { return m.functions.at(0); }
  int count(K k) const { return int(std::count_if(r.at.begin(), r.at.end(), [&](const RolledInstr& x) { return x.kind == k; })); }
  const RolledInstr* math() const {
    for (const auto& x : r.at) if (x.kind == K::Math) return &x;
    return nullptr;
  }
};

Rolled roll(const std::string& body) {
  Rolled out{test::parse_kernel(body), {}};
  out.r = rollup(out.f());
  return out;
}

TEST(Rollup, ExpfDefaultSequenceBecomesOneExp) {
  auto x = roll(kExpf);
  const RolledInstr* m = x.math();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->fn, ir::Fn::Exp);
  EXPECT_EQ(m->dest, "%f17");
  ASSERT_EQ(m->args.size(), 1u);
  EXPECT_EQ(m->args[0].name, "%f1");
  EXPECT_EQ(x.count(K::Absorbed), 17);  // everything between the load and the store
  EXPECT_EQ(x.r.at.front().kind, K::Keep);
  EXPECT_EQ(x.r.at.back().kind, K::Keep);
  EXPECT_EQ(x.r.matched, std::vector<std::string>{"expf"});
}

TEST(Rollup, ExpfWithAWrongConstantIsNotRolledUp) {
  std::string body = kExpf;
  body.replace(body.find("0f32A57060"), 10, "0f32A57061");
  auto x = roll(body);
  EXPECT_EQ(x.math(), nullptr);
  EXPECT_EQ(x.count(K::Absorbed), 0);
}

TEST(Rollup, SharedIntermediateStaysExecutable) {
  // nvcc may reuse an idiom's intermediate elsewhere: that instruction and its inputs stay
  std::string body = std::string(kExpf) + "  add.f32 %f18, %f4, %f4;\n";
  auto x = roll(body);
  ASSERT_NE(x.math(), nullptr);
  const auto& f = x.f();
  for (size_t i = 0; i < f.body.size(); ++i) {
    if (f.body[i].operands.empty() || f.body[i].operands[0].kind != Operand::Kind::Register) continue;
    const auto& d = f.body[i].operands[0].name;
    if (d == "%f4" || d == "%f2" || d == "%f3") EXPECT_EQ(x.r.at[i].kind, K::Keep) << d;
    if (d == "%f8") EXPECT_EQ(x.r.at[i].kind, K::Absorbed);
  }
}

TEST(Rollup, ExpfFusedIntoAnAccumulatingFma) {
  std::string body = kExpf;
  body.replace(body.find("mul.f32 %f17, %f16, %f15;"), 25, "fma.rn.f32 %f17, %f16, %f15, %f19;");
  auto x = roll(body);
  const RolledInstr* m = x.math();
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(m->addend);
  EXPECT_EQ(m->addend->name, "%f19");
}

TEST(Rollup, FastMathExp) {
  auto x = roll("ld.global.f32 %f1, [%rd1];\n mul.ftz.f32 %f2, %f1, 0f3FB8AA3B;\n ex2.approx.ftz.f32 %f3, %f2;\n");
  ASSERT_NE(x.math(), nullptr);
  EXPECT_EQ(x.math()->fn, ir::Fn::Exp);
  EXPECT_FALSE(x.math()->negate);
  EXPECT_EQ(x.r.matched, std::vector<std::string>{"__expf"});
}

TEST(Rollup, FastMathExpOfNegation) {
  auto x = roll("ld.global.f32 %f1, [%rd1];\n mul.ftz.f32 %f2, %f1, 0fBFB8AA3B;\n ex2.approx.ftz.f32 %f3, %f2;\n");
  ASSERT_NE(x.math(), nullptr);
  EXPECT_TRUE(x.math()->negate);
}

TEST(Rollup, PlainEx2IsNotAnExp) {
  auto x = roll("ld.global.f32 %f1, [%rd1];\n mul.ftz.f32 %f2, %f1, 0f40000000;\n ex2.approx.ftz.f32 %f3, %f2;\n");
  EXPECT_EQ(x.math(), nullptr);
}

TEST(Rollup, FastMathLog) {
  auto x = roll("ld.global.f32 %f1, [%rd1];\n lg2.approx.ftz.f32 %f2, %f1;\n mul.ftz.f32 %f3, %f2, 0f3F317218;\n");
  ASSERT_NE(x.math(), nullptr);
  EXPECT_EQ(x.math()->fn, ir::Fn::Log);
  EXPECT_EQ(x.math()->args[0].name, "%f1");
}

TEST(Rollup, TanhfDefaultSequence) {
  auto x = roll(R"(
  ld.global.f32 %f1, [%rd1];
  abs.f32 %f2, %f1;
  mul.f32 %f3, %f2, 0f4038AA3B;
  ex2.approx.ftz.f32 %f4, %f3;
  add.f32 %f5, %f4, 0f3F800000;
  mov.f32 %f6, 0f3F800000;
  rcp.approx.ftz.f32 %f7, %f5;
  mov.f32 %f8, 0fC0000000;
  fma.rn.f32 %f9, %f7, %f8, %f6;
  setp.ge.f32 %p2, %f2, 0f41102CB4;
  selp.f32 %f10, 0f3F800000, %f9, %p2;
  copysign.f32 %f11, %f1, %f10;
  mul.f32 %f12, %f1, %f1;
  mov.f32 %f13, 0fBD563CAE;
  mov.f32 %f14, 0f3C80F082;
  fma.rn.f32 %f15, %f14, %f12, %f13;
  fma.rn.f32 %f16, %f15, %f12, 0f3E085941;
  fma.rn.f32 %f17, %f16, %f12, 0fBEAAA9ED;
  fma.rn.f32 %f18, %f17, %f12, 0f00000000;
  fma.rn.f32 %f19, %f18, %f1, %f1;
  setp.ge.f32 %p3, %f2, 0f3F19999A;
  selp.f32 %f0, %f11, %f19, %p3;
  st.global.f32 [%rd2], %f0;
)");
  ASSERT_NE(x.math(), nullptr);
  EXPECT_EQ(x.math()->fn, ir::Fn::Tanh);
  EXPECT_EQ(x.math()->dest, "%f0");
  EXPECT_EQ(x.math()->args[0].name, "%f1");
  EXPECT_EQ(x.r.matched, std::vector<std::string>{"tanhf"});
}

TEST(Rollup, LoneSelpIsNotTanh) {
  auto x = roll("setp.ge.f32 %p2, %f2, 0f3F19999A;\n selp.f32 %f0, %f1, %f3, %p2;\n");
  EXPECT_EQ(x.math(), nullptr);
}

}  // namespace
}  // namespace dirigo::ptx

namespace dirigo::ptx {
namespace {

// erff(x), default lowering (nvcc 13, sm_90): a selp-driven polynomial, then a data-dependent
// branch around the large-|x| path; both paths define %f19.
const char* kErff = R"(
  ld.global.f32 %f1, [%rd1];
  abs.f32 %f2, %f1;
  setp.ltu.f32 %p1, %f2, 0f3F8060FE;
  setp.ge.f32 %p2, %f2, 0f3F8060FE;
  mul.f32 %f3, %f1, %f1;
  selp.f32 %f4, %f2, %f3, %p2;
  selp.f32 %f5, 0f38EB4C3A, 0f38B1E96A, %p2;
  selp.f32 %f6, 0fBAAE005B, 0fBA574D20, %p2;
  fma.rn.f32 %f7, %f5, %f4, %f6;
  neg.f32 %f8, %f2;
  selp.f32 %f9, %f8, %f1, %p2;
  fma.rn.f32 %f19, %f7, %f9, %f9;
  @%p1 bra DONE;
  ex2.approx.ftz.f32 %f10, %f19;
  mov.f32 %f11, 0f3F800000;
  sub.f32 %f12, %f11, %f10;
  copysign.f32 %f19, %f1, %f12;
DONE:
  st.global.f32 [%rd2], %f19;
)";

TEST(Rollup, ErffRegionWithBranchBecomesOneErf) {
  auto x = roll(kErff);
  const RolledInstr* m = x.math();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->fn, ir::Fn::Erf);
  EXPECT_EQ(m->dest, "%f19");
  EXPECT_EQ(m->args[0].name, "%f1");
  // the branch is absorbed: execution falls through to the pseudo-instruction
  const auto& f = x.f();
  for (size_t i = 0; i < f.body.size(); ++i)
    if (f.body[i].op == Opcode::Bra) EXPECT_EQ(x.r.at[i].kind, K::Absorbed);
  EXPECT_EQ(x.r.at.back().kind, K::Keep);  // the store
}

TEST(Rollup, ErffWithAnUnrelatedInstructionUnderTheBranchIsNotRolledUp) {
  std::string body = kErff;
  body.replace(body.find("  ex2.approx"), 0, "  add.f32 %f18, %f1, %f1;\n");
  auto x = roll(body + "  st.global.f32 [%rd3], %f18;\n");
  EXPECT_EQ(x.math(), nullptr);  // it would run unconditionally after the rewrite
}

TEST(Rollup, ErffMissingItsThresholdIsNotRolledUp) {
  std::string body = kErff;
  for (size_t p; (p = body.find("0f3F8060FE")) != std::string::npos;) body.replace(p, 10, "0f3F800000");
  EXPECT_EQ(roll(body).math(), nullptr);
}

// tanhf(x) with its large-|x| path in a block of its own, in the shape the issue reports for nvcc's
// branching form (written here from that description, registers renumbered): a branch on
// |x| < 0.6, the ex2/rcp/fma/selp path ending in the sign-bit trick, the polynomial on the
// other path; both define %f18.
const char* kTanhBranching = R"(
  ld.global.f32 %f1, [%rd1];
  abs.f32 %f2, %f1;
  setp.ltu.f32 %p1, %f2, 0f3F19999A;
  @%p1 bra SMALL;
  mul.f32 %f3, %f2, 0f4038AA3B;
  ex2.approx.ftz.f32 %f4, %f3;
  add.f32 %f5, %f4, 0f3F800000;
  rcp.approx.ftz.f32 %f6, %f5;
  fma.rn.f32 %f7, %f6, 0fC0000000, 0f3F800000;
  setp.ge.f32 %p2, %f2, 0f41102CB4;
  selp.f32 %f8, 0f3F800000, %f7, %p2;
  mov.b32 %r1, %f8;
  mov.b32 %r2, %f1;
  and.b32 %r3, %r2, -2147483648;
  or.b32 %r4, %r3, %r1;
  mov.b32 %f18, %r4;
  bra.uni DONE;
SMALL:
  mul.f32 %f9, %f1, %f1;
  fma.rn.f32 %f10, %f9, 0f3C80F082, 0fBD563CAE;
  fma.rn.f32 %f11, %f10, %f9, 0f3E085941;
  fma.rn.f32 %f12, %f11, %f9, 0fBEAAA9ED;
  fma.rn.f32 %f13, %f12, %f9, 0f00000000;
  fma.rn.f32 %f18, %f13, %f1, %f1;
DONE:
  st.global.f32 [%rd2], %f18;
)";

TEST(Rollup, TanhfBranchingWithSignBitTrickBecomesOneTanh) {
  auto x = roll(kTanhBranching);
  const RolledInstr* m = x.math();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->fn, ir::Fn::Tanh);
  EXPECT_EQ(m->dest, "%f18");
  EXPECT_EQ(m->args[0].name, "%f1");
  EXPECT_EQ(x.r.matched, std::vector<std::string>{"tanhf (branching)"});
  EXPECT_EQ(x.count(K::Math) + x.count(K::Absorbed), int(x.f().body.size()) - 2);  // all but load and store
  EXPECT_TRUE(unmatched_float_bits(x.f(), x.r).empty());
}

// The same with the paths swapped (the polynomial falls through, the large path is the branch
// target) and a copysign instruction: the anchor is then the copysign.
TEST(Rollup, TanhfBranchingWithCopysignLastBecomesOneTanh) {
  std::string body = kTanhBranching;
  std::string big = body.substr(body.find("  mul.f32 %f3"), body.find("  bra.uni DONE;") - body.find("  mul.f32 %f3"));
  std::string small = body.substr(body.find("  mul.f32 %f9"), body.find("DONE:") - body.find("  mul.f32 %f9"));
  big = big.substr(0, big.find("  mov.b32 %r1")) + "  copysign.f32 %f18, %f1, %f8;\n";
  std::string swapped = body.substr(0, body.find("  setp.ltu")) + "  setp.ge.f32 %p1, %f2, 0f3F19999A;\n  @%p1 bra BIG;\n" +
                        small + "  bra.uni DONE;\nBIG:\n" + big + "DONE:\n  st.global.f32 [%rd2], %f18;\n";
  auto x = roll(swapped);
  const RolledInstr* m = x.math();
  ASSERT_NE(m, nullptr) << swapped;
  EXPECT_EQ(m->fn, ir::Fn::Tanh);
  EXPECT_EQ(m->args[0].name, "%f1");
  EXPECT_EQ(x.r.at[x.f().body.size() - 2].kind, K::Math);  // the copysign, last before the store
}

// Near misses stay as written: a sign taken from another register than the tested one, and a
// polynomial path whose result is scaled afterwards.
TEST(Rollup, TanhfBranchingNearMissesAreNotRolledUp) {
  std::string body = kTanhBranching;
  std::string other_sign = body;
  other_sign.replace(other_sign.find("mov.b32 %r2, %f1"), 16, "mov.b32 %r2, %f9");
  EXPECT_EQ(roll(other_sign).math(), nullptr);
  std::string scaled = body;
  scaled.replace(scaled.find("DONE:"), 5, "  mul.f32 %f18, %f18, 0f40000000;\nDONE:");
  auto x = roll(scaled);
  for (const auto& r : x.r.matched) EXPECT_NE(r, "tanhf (branching)");
  std::string no_threshold = body;
  no_threshold.replace(no_threshold.find("0f41102CB4"), 10, "0f41000000");
  EXPECT_EQ(roll(no_threshold).math(), nullptr);
}

// logf(x): subnormal scaling, integer exponent extraction, polynomial, inf patch, log(0) = -inf
const char* kLogf = R"(
  ld.global.f32 %f1, [%rd1];
  setp.lt.f32 %p1, %f1, 0f00800000;
  mul.f32 %f2, %f1, 0f4B000000;
  selp.f32 %f3, %f2, %f1, %p1;
  selp.f32 %f4, 0fC1B80000, 0f00000000, %p1;
  mov.b32 %r2, %f3;
  add.s32 %r3, %r2, -1059760811;
  and.b32 %r4, %r3, -8388608;
  sub.s32 %r5, %r2, %r4;
  mov.b32 %f5, %r5;
  cvt.rn.f32.s32 %f6, %r4;
  fma.rn.f32 %f7, %f6, 0f34000000, %f4;
  add.f32 %f8, %f5, 0fBF800000;
  fma.rn.f32 %f9, %f8, 0fBF000000, 0f3EAAAA78;
  mul.f32 %f10, %f8, %f9;
  fma.rn.f32 %f11, %f10, %f8, %f8;
  fma.rn.f32 %f12, %f7, 0f3F317218, %f11;
  setp.lt.u32 %p2, %r2, 2139095040;
  @%p2 bra L2;
  mov.f32 %f13, 0f7F800000;
  fma.rn.f32 %f12, %f3, %f13, %f13;
L2:
  setp.eq.f32 %p3, %f3, 0f00000000;
  selp.f32 %f14, 0fFF800000, %f12, %p3;
  st.global.f32 [%rd2], %f14;
)";

TEST(Rollup, LogfRegionBecomesOneLog) {
  auto x = roll(kLogf);
  const RolledInstr* m = x.math();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->fn, ir::Fn::Log);
  EXPECT_EQ(m->dest, "%f14");
  EXPECT_EQ(m->args[0].name, "%f1");
  EXPECT_EQ(x.r.matched, std::vector<std::string>{"logf"});
  EXPECT_EQ(x.count(K::Math) + x.count(K::Absorbed), int(x.f().body.size()) - 2);  // all but load and store
}

TEST(Rollup, LogfWithAnotherExponentMagicIsNotRolledUp) {
  std::string body = kLogf;
  body.replace(body.find("-1059760811"), 11, "-1059760812");
  EXPECT_EQ(roll(body).math(), nullptr);
}


TEST(Rollup, LogfWithAParameterReadInterleavedIsRolledUp) {
  // nvcc hoists a later store's `ld.param` of its pointer to the branch's join, inside the range
  std::string body = kLogf;
  body.replace(body.find("L2:\n") + 4, 0, "  ld.param.u64 %rd4, [k_p0];\n");
  auto x = roll(body);
  const RolledInstr* m = x.math();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->fn, ir::Fn::Log);
  const auto& f = x.f();
  for (size_t i = 0; i < f.body.size(); ++i)
    if (f.body[i].op == Opcode::Ld && f.body[i].mod.space == StateSpace::Param) EXPECT_EQ(x.r.at[i].kind, K::Keep);
}

TEST(Rollup, LogfWithAParameterReadUnderItsBranchIsNotRolledUp) {
  // on the side the inf patch skips: it would run unconditionally after the rewrite
  std::string body = kLogf;
  body.replace(body.find("  mov.f32 %f13"), 0, "  ld.param.u64 %rd4, [k_p0];\n");
  EXPECT_EQ(roll(body).math(), nullptr);
}

}  // namespace
}  // namespace dirigo::ptx
