// One small test per opcode family: the opcode and its structured modifiers.
#include <gtest/gtest.h>

#include "ptx_test_util.h"

namespace dirigo::ptx {
namespace {

using test::parse_kernel;
using test::parse_one;

TEST(PtxOpcode, IntegerArithmetic) {
  Instruction add = parse_one("add.s32 %r1, %r2, %r3;");
  EXPECT_EQ(add.op, Opcode::Add);
  EXPECT_EQ(add.mod.types, std::vector<Type>{Type::S32});
  Instruction mw = parse_one("mul.wide.s32 %rd1, %r1, 4;");
  EXPECT_EQ(mw.op, Opcode::Mul);
  EXPECT_EQ(mw.mod.mul, MulMode::Wide);
  Instruction mad = parse_one("mad.lo.s32 %r1, %r2, %r3, %r4;");
  EXPECT_EQ(mad.op, Opcode::Mad);
  EXPECT_EQ(mad.mod.mul, MulMode::Lo);
  Instruction hi = parse_one("mul.hi.u32 %r1, %r2, %r3;");
  EXPECT_EQ(hi.mod.mul, MulMode::Hi);
  EXPECT_EQ(parse_one("rem.s32 %r1, %r2, 7;").op, Opcode::Rem);
  EXPECT_EQ(parse_one("div.u32 %r1, %r2, 13;").op, Opcode::Div);
  Instruction cc = parse_one("add.cc.u32 %r1, %r2, %r3;");
  EXPECT_TRUE(cc.mod.cc);
  EXPECT_EQ(parse_one("addc.u32 %r1, %r2, %r3;").op, Opcode::Addc);
  EXPECT_EQ(parse_one("sad.u32 %r1, %r2, %r3, %r4;").op, Opcode::Sad);
  EXPECT_EQ(parse_one("mul24.lo.s32 %r1, %r2, %r3;").op, Opcode::Mul24);
}

TEST(PtxOpcode, FloatArithmeticRoundingFtzSat) {
  Instruction f = parse_one("fma.rn.ftz.sat.f32 %f1, %f2, %f3, %f4;");
  EXPECT_EQ(f.op, Opcode::Fma);
  EXPECT_EQ(f.mod.rounding, Rounding::Rn);
  EXPECT_TRUE(f.mod.ftz);
  EXPECT_TRUE(f.mod.sat);
  EXPECT_EQ(f.mod.types, std::vector<Type>{Type::F32});
  EXPECT_EQ(parse_one("add.rz.f32 %f1, %f2, %f3;").mod.rounding, Rounding::Rz);
  EXPECT_EQ(parse_one("fma.rm.f32 %f1, %f2, %f3, %f4;").mod.rounding, Rounding::Rm);
  EXPECT_EQ(parse_one("mul.rp.f64 %fd1, %fd2, %fd3;").mod.rounding, Rounding::Rp);
  Instruction neg = parse_one("neg.f32 %f1, %f2;");
  EXPECT_EQ(neg.op, Opcode::Neg);
  Instruction abs = parse_one("abs.ftz.f32 %f1, %f2;");
  EXPECT_EQ(abs.op, Opcode::Abs);
  EXPECT_TRUE(abs.mod.ftz);
  Instruction mx = parse_one("max.NaN.f32 %f1, %f2, %f3;");
  EXPECT_EQ(mx.op, Opcode::Max);
  EXPECT_TRUE(mx.mod.nan);
  EXPECT_EQ(parse_one("min.ftz.f32 %f1, %f2, %f3;").op, Opcode::Min);
  EXPECT_EQ(parse_one("copysign.f32 %f1, %f2, %f3;").op, Opcode::Copysign);
  Instruction h2 = parse_one("fma.rn.f16x2 %r1, %r2, %r3, %r4;");
  EXPECT_EQ(h2.mod.types, std::vector<Type>{Type::F16x2});
  Instruction relu = parse_one("fma.rn.relu.bf16 %rs1, %rs2, %rs3, %rs4;");
  EXPECT_EQ(relu.mod.misc, std::vector<std::string>{"relu"});
}

TEST(PtxOpcode, SpecialFunctionsApproxFull) {
  Instruction ex2 = parse_one("ex2.approx.ftz.f32 %f1, %f2;");
  EXPECT_EQ(ex2.op, Opcode::Ex2);
  EXPECT_TRUE(ex2.mod.approx);
  EXPECT_TRUE(ex2.mod.ftz);
  EXPECT_EQ(parse_one("lg2.approx.f32 %f1, %f2;").op, Opcode::Lg2);
  Instruction rcp = parse_one("rcp.rn.f64 %fd1, %fd2;");
  EXPECT_EQ(rcp.op, Opcode::Rcp);
  EXPECT_EQ(rcp.mod.rounding, Rounding::Rn);
  EXPECT_EQ(parse_one("rsqrt.approx.f32 %f1, %f2;").op, Opcode::Rsqrt);
  EXPECT_EQ(parse_one("sqrt.rn.f32 %f1, %f2;").op, Opcode::Sqrt);
  EXPECT_EQ(parse_one("sin.approx.ftz.f32 %f1, %f2;").op, Opcode::Sin);
  EXPECT_EQ(parse_one("cos.approx.f32 %f1, %f2;").op, Opcode::Cos);
  EXPECT_EQ(parse_one("tanh.approx.f32 %f1, %f2;").op, Opcode::Tanh);
  Instruction full = parse_one("div.full.f32 %f1, %f2, %f3;");
  EXPECT_TRUE(full.mod.full);
  EXPECT_FALSE(full.mod.approx);
  EXPECT_TRUE(parse_one("div.approx.f32 %f1, %f2, %f3;").mod.approx);
}

TEST(PtxOpcode, ComparisonAndSelection) {
  Instruction s = parse_one("setp.lt.s32 %p1, %r1, %r2;");
  EXPECT_EQ(s.op, Opcode::Setp);
  EXPECT_EQ(s.mod.cmp, CmpOp::Lt);
  EXPECT_EQ(parse_one("setp.lo.u32 %p1, %r1, %r2;").mod.cmp, CmpOp::Lo);  // not a mul mode here
  EXPECT_EQ(parse_one("setp.hs.u64 %p1, %rd1, %rd2;").mod.cmp, CmpOp::Hs);
  EXPECT_EQ(parse_one("setp.gtu.f32 %p1, %f1, %f2;").mod.cmp, CmpOp::Gtu);
  EXPECT_EQ(parse_one("setp.nan.f32 %p1, %f1, %f1;").mod.cmp, CmpOp::Nan);
  Instruction sb = parse_one("setp.ne.and.s32 %p1, %r1, 0, %p2;");
  EXPECT_EQ(sb.mod.cmp, CmpOp::Ne);
  EXPECT_EQ(sb.mod.bool_op, BoolOp::And);
  ASSERT_EQ(sb.operands.size(), 4u);
  Instruction pq = parse_one("setp.eq.f32 %p1|%p2, %f1, %f2;");
  EXPECT_EQ(pq.operands[0].kind, Operand::Kind::Pair);
  EXPECT_EQ(pq.operands[0].elements[1].name, "%p2");
  Instruction set = parse_one("set.gt.u32.f32 %r1, %f1, %f2;");
  EXPECT_EQ(set.op, Opcode::Set);
  EXPECT_EQ(set.mod.types, (std::vector<Type>{Type::U32, Type::F32}));
  Instruction sel = parse_one("selp.f32 %f1, %f2, 0f3C23D70A, %p1;");
  EXPECT_EQ(sel.op, Opcode::Selp);
  EXPECT_EQ(sel.operands[3].name, "%p1");
  EXPECT_EQ(parse_one("slct.f32.s32 %f1, %f2, %f3, %r1;").op, Opcode::Slct);
}

TEST(PtxOpcode, LogicShiftAndBits) {
  EXPECT_EQ(parse_one("and.b32 %r1, %r2, 255;").op, Opcode::And);
  EXPECT_EQ(parse_one("or.pred %p1, %p2, %p3;").mod.types, std::vector<Type>{Type::Pred});
  EXPECT_EQ(parse_one("xor.b64 %rd1, %rd2, %rd3;").op, Opcode::Xor);
  EXPECT_EQ(parse_one("not.pred %p1, %p2;").op, Opcode::Not);
  EXPECT_EQ(parse_one("cnot.b32 %r1, %r2;").op, Opcode::Cnot);
  Instruction neg_src = parse_one("and.pred %p1, %p2, !%p3;");
  EXPECT_TRUE(neg_src.operands[2].negated);
  EXPECT_EQ(parse_one("lop3.b32 %r1, %r2, %r3, %r4, 0x96;").operands.size(), 5u);
  EXPECT_EQ(parse_one("shl.b64 %rd1, %rd2, 2;").op, Opcode::Shl);
  EXPECT_EQ(parse_one("shr.s32 %r1, %r2, 31;").op, Opcode::Shr);
  Instruction shf = parse_one("shf.l.wrap.b32 %r1, %r2, %r3, %r4;");
  EXPECT_TRUE(shf.mod.shift_left);
  EXPECT_TRUE(shf.mod.wrap);
  EXPECT_EQ(parse_one("popc.b32 %r1, %r2;").op, Opcode::Popc);
  EXPECT_EQ(parse_one("clz.b32 %r1, %r2;").op, Opcode::Clz);
  EXPECT_TRUE(parse_one("bfind.shiftamt.u32 %r1, %r2;").mod.shiftamt);
  EXPECT_EQ(parse_one("brev.b32 %r1, %r2;").op, Opcode::Brev);
  EXPECT_EQ(parse_one("bfe.u32 %r1, %r2, 8, 4;").op, Opcode::Bfe);
  EXPECT_EQ(parse_one("bfi.b64 %rd1, %rd2, %rd3, 32, 32;").op, Opcode::Bfi);
  EXPECT_EQ(parse_one("prmt.b32 %r1, %r2, %r3, 0x5410;").op, Opcode::Prmt);
}

TEST(PtxOpcode, MovAndConversions) {
  Instruction mv = parse_one("mov.u32 %r1, %tid.x;");
  EXPECT_EQ(mv.op, Opcode::Mov);
  EXPECT_EQ(mv.operands[1].kind, Operand::Kind::Register);
  EXPECT_EQ(mv.operands[1].name, "%tid.x");
  Instruction addr = parse_one("mov.u64 %rd1, sm;");
  EXPECT_EQ(addr.operands[1].kind, Operand::Kind::Symbol);
  Instruction cvt = parse_one("cvt.rn.f32.s32 %f1, %r1;");
  EXPECT_EQ(cvt.op, Opcode::Cvt);
  EXPECT_EQ(cvt.mod.rounding, Rounding::Rn);
  EXPECT_EQ(cvt.mod.types, (std::vector<Type>{Type::F32, Type::S32}));
  EXPECT_EQ(parse_one("cvt.rzi.s32.f32 %r1, %f1;").mod.rounding, Rounding::Rzi);
  EXPECT_EQ(parse_one("cvt.rni.f32.f32 %f1, %f2;").mod.rounding, Rounding::Rni);
  EXPECT_TRUE(parse_one("cvt.sat.f32.f32 %f1, %f2;").mod.sat);
  Instruction h = parse_one("cvt.rn.f16.f32 %rs1, %f1;");
  EXPECT_EQ(h.mod.types, (std::vector<Type>{Type::F16, Type::F32}));
  EXPECT_EQ(parse_one("cvt.rn.bf16x2.f32 %r1, %f1, %f2;").operands.size(), 3u);
  EXPECT_EQ(parse_one("cvt.u64.u32 %rd1, %r1;").mod.types, (std::vector<Type>{Type::U64, Type::U32}));
  Instruction cvta = parse_one("cvta.to.global.u64 %rd1, %rd2;");
  EXPECT_EQ(cvta.op, Opcode::Cvta);
  EXPECT_TRUE(cvta.mod.to);
  EXPECT_EQ(cvta.mod.space, StateSpace::Global);
  Instruction cvta2 = parse_one("cvta.shared.u64 %rd1, %rd2;");
  EXPECT_FALSE(cvta2.mod.to);
  EXPECT_EQ(cvta2.mod.space, StateSpace::Shared);
  EXPECT_EQ(parse_one("isspacep.global %p1, %rd1;").mod.space, StateSpace::Global);
}

TEST(PtxOpcode, LoadsStoresSpacesAndCacheOps) {
  Instruction ld = parse_one("ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];");
  EXPECT_EQ(ld.op, Opcode::Ld);
  EXPECT_EQ(ld.mod.space, StateSpace::Global);
  EXPECT_EQ(ld.mod.cache, CacheOp::Nc);
  EXPECT_EQ(ld.mod.vector_width, 4);
  EXPECT_EQ(parse_one("ld.global.cg.f32 %f1, [%rd1];").mod.cache, CacheOp::Cg);
  EXPECT_EQ(parse_one("ld.shared.f32 %f1, [%r1];").mod.space, StateSpace::Shared);
  EXPECT_EQ(parse_one("ld.local.u32 %r1, [%rd1];").mod.space, StateSpace::Local);
  EXPECT_EQ(parse_one("ld.const.f32 %f1, [sm];").mod.space, StateSpace::Const);
  EXPECT_EQ(parse_one("ld.param.u64 %rd1, [k_p0];").mod.space, StateSpace::Param);
  Instruction hint = parse_one("ld.global.L1::no_allocate.L2::256B.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];");
  EXPECT_EQ(hint.mod.misc, (std::vector<std::string>{"L1::no_allocate", "L2::256B"}));
  Instruction vol = parse_one("ld.volatile.shared.f32 %f1, [%r1];");
  EXPECT_EQ(vol.mod.order, MemOrder::Volatile);
  Instruction acq = parse_one("ld.acquire.gpu.global.u32 %r1, [%rd1];");
  EXPECT_EQ(acq.mod.order, MemOrder::Acquire);
  EXPECT_EQ(acq.mod.scope, Scope::Gpu);
  Instruction st = parse_one("st.global.cs.f32 [%rd1+4], %f1;");
  EXPECT_EQ(st.op, Opcode::St);
  EXPECT_EQ(st.mod.cache, CacheOp::Cs);
  EXPECT_EQ(st.operands[0].kind, Operand::Kind::Address);
  EXPECT_EQ(parse_one("st.shared::cta.u32 [%r1], %r2;").mod.space, StateSpace::Shared);
  EXPECT_EQ(parse_one("ldu.global.f32 %f1, [%rd1];").op, Opcode::Ldu);
  EXPECT_EQ(parse_one("prefetch.global.L2 [%rd1];").op, Opcode::Prefetch);
}

TEST(PtxOpcode, AtomicsAndReductions) {
  Instruction a = parse_one("atom.global.add.f32 %f1, [%rd1], %f2;");
  EXPECT_EQ(a.op, Opcode::Atom);
  EXPECT_EQ(a.mod.atom, AtomOp::Add);
  EXPECT_EQ(a.mod.space, StateSpace::Global);
  Instruction cas = parse_one("atom.global.cas.b32 %r1, [%rd1], %r2, %r3;");
  EXPECT_EQ(cas.mod.atom, AtomOp::Cas);
  EXPECT_EQ(cas.operands.size(), 4u);
  EXPECT_EQ(parse_one("atom.shared.max.s32 %r1, [%r2], %r3;").mod.atom, AtomOp::Max);
  EXPECT_EQ(parse_one("atom.global.inc.u32 %r1, [%rd1], 100;").mod.atom, AtomOp::Inc);
  EXPECT_EQ(parse_one("atom.global.exch.b32 %r1, [%rd1], %r2;").mod.atom, AtomOp::Exch);
  EXPECT_EQ(parse_one("atom.global.or.b32 %r1, [%rd1], %r2;").mod.atom, AtomOp::Or);
  Instruction red = parse_one("red.relaxed.gpu.global.add.f32 [%rd1], %f1;");
  EXPECT_EQ(red.op, Opcode::Red);
  EXPECT_EQ(red.mod.atom, AtomOp::Add);
  EXPECT_EQ(red.mod.order, MemOrder::Relaxed);
  EXPECT_EQ(red.mod.scope, Scope::Gpu);
  Instruction rx = parse_one("redux.sync.add.s32 %r1, %r2, -1;");
  EXPECT_EQ(rx.op, Opcode::Redux);
  EXPECT_TRUE(rx.mod.sync);
  EXPECT_EQ(rx.mod.atom, AtomOp::Add);
}

TEST(PtxOpcode, WarpShuffleVoteMatch) {
  Instruction s = parse_one("shfl.sync.down.b32 %r1|%p1, %r2, 16, 31, -1;");
  EXPECT_EQ(s.op, Opcode::Shfl);
  EXPECT_TRUE(s.mod.sync);
  EXPECT_EQ(s.mod.shfl, ShflMode::Down);
  EXPECT_EQ(s.operands[0].kind, Operand::Kind::Pair);
  EXPECT_EQ(s.operands[4].int_value, -1);
  EXPECT_EQ(parse_one("shfl.sync.bfly.b32 %r1, %r2, 1, 31, -1;").mod.shfl, ShflMode::Bfly);
  EXPECT_EQ(parse_one("shfl.sync.up.b32 %r1, %r2, 1, 0, -1;").mod.shfl, ShflMode::Up);
  EXPECT_EQ(parse_one("shfl.sync.idx.b32 %r1, %r2, 0, 31, -1;").mod.shfl, ShflMode::Idx);
  Instruction v = parse_one("vote.sync.ballot.b32 %r1, %p1, -1;");
  EXPECT_EQ(v.op, Opcode::Vote);
  EXPECT_EQ(v.mod.vote, VoteMode::Ballot);
  EXPECT_EQ(parse_one("vote.sync.all.pred %p1, %p2, -1;").mod.vote, VoteMode::All);
  EXPECT_EQ(parse_one("vote.sync.any.pred %p1, !%p2, -1;").mod.vote, VoteMode::Any);
  EXPECT_EQ(parse_one("vote.sync.uni.pred %p1, %p2, -1;").mod.vote, VoteMode::Uni);
  EXPECT_EQ(parse_one("match.any.sync.b32 %r1, %r2, -1;").mod.vote, VoteMode::Any);
  EXPECT_EQ(parse_one("activemask.b32 %r1;").op, Opcode::Activemask);
}

TEST(PtxOpcode, BarriersAndFences) {
  Instruction b = parse_one("bar.sync 0;");
  EXPECT_EQ(b.op, Opcode::Bar);
  EXPECT_TRUE(b.mod.sync);
  EXPECT_EQ(parse_one("barrier.sync.aligned 0;").op, Opcode::Barrier);
  EXPECT_EQ(parse_one("bar.warp.sync -1;").mod.misc, std::vector<std::string>{"warp"});
  Instruction red = parse_one("bar.red.popc.u32 %r1, 0, %p1;");
  EXPECT_EQ(red.operands.size(), 3u);
  EXPECT_EQ(parse_one("membar.gl;").mod.scope, Scope::Gpu);
  EXPECT_EQ(parse_one("membar.cta;").mod.scope, Scope::Cta);
  Instruction f = parse_one("fence.acq_rel.gpu;");
  EXPECT_EQ(f.op, Opcode::Fence);
  EXPECT_EQ(f.mod.order, MemOrder::AcqRel);
}

TEST(PtxOpcode, AsyncCopyAndTensorCore) {
  Instruction cp = parse_one("cp.async.cg.shared.global [%r1], [%rd1], 16;");
  EXPECT_EQ(cp.op, Opcode::CpAsync);
  EXPECT_EQ(cp.mod.cache, CacheOp::Cg);
  EXPECT_EQ(cp.mod.space, StateSpace::Shared);
  EXPECT_EQ(cp.mod.space2, StateSpace::Global);
  EXPECT_EQ(parse_one("cp.async.commit_group;").op, Opcode::CpAsyncCommitGroup);
  EXPECT_EQ(parse_one("cp.async.wait_group 0;").op, Opcode::CpAsyncWaitGroup);
  EXPECT_EQ(parse_one("cp.async.wait_all;").op, Opcode::CpAsyncWaitAll);
  Instruction mma = parse_one(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, "
      "{%r5, %r6}, {%f5, %f6, %f7, %f8};");
  EXPECT_EQ(mma.op, Opcode::Mma);
  EXPECT_TRUE(mma.mod.aligned);
  EXPECT_EQ(mma.mod.types, (std::vector<Type>{Type::F32, Type::F16, Type::F16, Type::F32}));
  EXPECT_EQ(mma.mod.misc, (std::vector<std::string>{"m16n8k16", "row", "col"}));
  Instruction ldm = parse_one("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];");
  EXPECT_EQ(ldm.op, Opcode::Ldmatrix);
  EXPECT_EQ(ldm.mod.space, StateSpace::Shared);
  EXPECT_EQ(parse_one("wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r1, %r2}, [%rd1], %r3;").op,
            Opcode::WmmaLoad);
}

TEST(PtxOpcode, ControlFlow) {
  Module m = parse_kernel("bra.uni $L1;\n$L1:\n@%p1 exit;\ntrap;\nret;");
  const auto& b = m.functions[0].body;
  EXPECT_EQ(b[0].op, Opcode::Bra);
  EXPECT_TRUE(b[0].mod.uni);
  EXPECT_EQ(b[1].op, Opcode::Exit);
  EXPECT_EQ(b[2].op, Opcode::Trap);
  EXPECT_EQ(b[3].op, Opcode::Ret);
}

TEST(PtxOpcode, MiscIntegerHelpers) {
  EXPECT_EQ(parse_one("dp4a.s32.s32 %r1, %r2, %r3, %r4;").mod.types, (std::vector<Type>{Type::S32, Type::S32}));
  EXPECT_EQ(parse_one("testp.finite.f32 %p1, %f1;").mod.misc, std::vector<std::string>{"finite"});
  EXPECT_EQ(parse_one("nanosleep.u32 100;").op, Opcode::Nanosleep);
  EXPECT_EQ(parse_one("mov.u32 %r1, %laneid;").operands[1].name, "%laneid");
}

// Every word of the enum-valued modifiers sets its own value (the parser's word lists follow the
// enums' declaration order).
TEST(PtxOpcode, EveryEnumModifierWord) {
  const char* cmps[] = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
                        "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
  for (int i = 0; i < int(std::size(cmps)); ++i)
    EXPECT_EQ(parse_one(std::string("setp.") + cmps[i] + ".f32 %p1, %f1, %f2;").mod.cmp, CmpOp(i + 1)) << cmps[i];
  const char* roundings[] = {"rn", "rz", "rm", "rp"};
  for (int i = 0; i < int(std::size(roundings)); ++i)
    EXPECT_EQ(parse_one(std::string("add.") + roundings[i] + ".f32 %f1, %f2, %f3;").mod.rounding, Rounding(i + 1));
  const char* integer_roundings[] = {"rni", "rzi", "rmi", "rpi"};
  for (int i = 0; i < int(std::size(integer_roundings)); ++i)
    EXPECT_EQ(parse_one(std::string("cvt.") + integer_roundings[i] + ".f32.f32 %f1, %f2;").mod.rounding,
              Rounding(int(Rounding::Rni) + i));
  const char* caches[] = {"ca", "cg", "cs", "lu", "cv"};
  for (int i = 0; i < int(std::size(caches)); ++i)
    EXPECT_EQ(parse_one(std::string("ld.global.") + caches[i] + ".f32 %f1, [%rd1];").mod.cache, CacheOp(i + 1));
  const char* atoms[] = {"and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max"};
  for (int i = 0; i < int(std::size(atoms)); ++i) {
    std::string ops = atoms[i] == std::string("cas") ? "%r1, [%rd1], %r2, %r3;" : "%r1, [%rd1], %r2;";
    EXPECT_EQ(parse_one(std::string("atom.global.") + atoms[i] + ".b32 " + ops).mod.atom, AtomOp(i + 1)) << atoms[i];
  }
  const char* shfls[] = {"up", "down", "bfly", "idx"};
  for (int i = 0; i < int(std::size(shfls)); ++i)
    EXPECT_EQ(parse_one(std::string("shfl.sync.") + shfls[i] + ".b32 %r1|%p1, %r2, 16, 31, -1;").mod.shfl,
              ShflMode(i + 1));
  EXPECT_EQ(parse_one("membar.gl;").mod.scope, Scope::Gpu);
  EXPECT_EQ(parse_one("membar.cta;").mod.scope, Scope::Cta);
  EXPECT_EQ(parse_one("membar.sys;").mod.scope, Scope::Sys);
}

}  // namespace
}  // namespace dirigo::ptx
