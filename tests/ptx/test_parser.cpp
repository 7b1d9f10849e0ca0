// Module structure, declarations, operands, line info and block scoping.
#include <gtest/gtest.h>

#include "ptx_test_util.h"

namespace dirigo::ptx {
namespace {

using test::parse_kernel;
using test::parse_one;

TEST(PtxParser, ModuleDirectives) {
  Module m = parse(".version 9.0\n.target sm_90a, debug\n.address_size 64\n");
  EXPECT_EQ(m.version, "9.0");
  ASSERT_EQ(m.target.size(), 2u);
  EXPECT_EQ(m.target[0], "sm_90a");
  EXPECT_EQ(m.target[1], "debug");
  EXPECT_EQ(m.address_size, 64);
  EXPECT_TRUE(m.functions.empty());
}

TEST(PtxParser, EntryParamsWithPtrAndAlign) {
  Module m = parse(R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry kern(
	.param .u64 .ptr .global .align 16 kern_param_0,
	.param .align 16 .b8 kern_param_1[24],
	.param .f32 kern_param_2
)
.maxntid 256, 1, 1
.minnctapersm 2
{
	ret;
}
)");
  ASSERT_EQ(m.functions.size(), 1u);
  const Function& f = m.functions[0];
  EXPECT_TRUE(f.is_entry);
  EXPECT_TRUE(f.is_visible);
  EXPECT_EQ(f.name, "kern");
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_EQ(f.params[0].type, Type::U64);
  EXPECT_TRUE(f.params[0].is_ptr);
  EXPECT_EQ(f.params[0].ptr_space, StateSpace::Global);
  EXPECT_EQ(f.params[0].ptr_align, 16);
  EXPECT_EQ(f.params[1].align, 16);
  EXPECT_EQ(f.params[1].type, Type::B8);
  ASSERT_EQ(f.params[1].dims.size(), 1u);
  EXPECT_EQ(f.params[1].size_bytes(), 24u);
  EXPECT_EQ(f.params[2].type, Type::F32);
  EXPECT_EQ(f.directives.at("maxntid"), (std::vector<int64_t>{256, 1, 1}));
  EXPECT_EQ(f.directives.at("minnctapersm"), (std::vector<int64_t>{2}));
  EXPECT_EQ(m.kernels().size(), 1u);
}

TEST(PtxParser, RegisterRangesAndSingles) {
  Module m = parse_kernel(".reg .b32 %SP, %x;\nmov.u32 %r19, %x;");
  const Function& f = m.functions[0];
  EXPECT_EQ(f.register_type("%r19"), Type::B32);
  EXPECT_EQ(f.register_type("%r20"), std::nullopt);  // %r<20> declares %r0..%r19
  EXPECT_EQ(f.register_type("%rd3"), Type::B64);
  EXPECT_EQ(f.register_type("%p0"), Type::Pred);
  EXPECT_EQ(f.register_type("%x"), Type::B32);
  EXPECT_EQ(f.register_count(), 6u * 20u + 2u);
}

TEST(PtxParser, SharedConstGlobalLocalVariables) {
  Module m = parse(R"(.version 8.0
.target sm_80
.address_size 64
.extern .shared .align 16 .b8 smem[];
.const .align 4 .b8 kW[8] = {0, 0, 128, 62, 0, 0, 0, 63};
.global .align 4 .u32 gCounter = 7;
.global .align 4 .f32 gOne = 0f3F800000;
.global .align 8 .u64 gPtr = generic(gCounter);
.visible .entry k()
{
	.local .align 4 .b8 __local_depot0[32];
	.shared .align 4 .f32 tile[16][17];
	ret;
}
)");
  ASSERT_EQ(m.globals.size(), 5u);
  const Variable* smem = m.find_global("smem");
  ASSERT_NE(smem, nullptr);
  EXPECT_TRUE(smem->is_extern);
  EXPECT_EQ(smem->space, StateSpace::Shared);
  EXPECT_EQ(smem->align, 16);
  EXPECT_EQ(smem->dims, std::vector<uint64_t>{0});
  EXPECT_EQ(smem->size_bytes(), 0u);
  const Variable* kw = m.find_global("kW");
  ASSERT_NE(kw, nullptr);
  EXPECT_EQ(kw->space, StateSpace::Const);
  ASSERT_EQ(kw->init.size(), 8u);
  EXPECT_EQ(kw->init[2].int_value, 128);
  EXPECT_EQ(m.find_global("gCounter")->init.at(0).int_value, 7);
  EXPECT_EQ(m.find_global("gOne")->init.at(0).float_bits, 0x3F800000u);
  EXPECT_EQ(m.find_global("gPtr")->init.at(0).kind, Operand::Kind::Symbol);
  EXPECT_EQ(m.find_global("gPtr")->init.at(0).name, "gCounter");
  const Function& f = m.functions[0];
  ASSERT_EQ(f.locals.size(), 2u);
  EXPECT_EQ(f.locals[0].space, StateSpace::Local);
  EXPECT_EQ(f.locals[0].size_bytes(), 32u);
  EXPECT_EQ(f.locals[1].dims, (std::vector<uint64_t>{16, 17}));
  EXPECT_EQ(f.locals[1].size_bytes(), 16u * 17u * 4u);
}

TEST(PtxParser, HexFloatKeepsBitsAndValue) {
  Instruction i = parse_one("fma.rn.f32 %f1, %f2, 0f3FB8AA3B, 0fBF800000;");
  ASSERT_EQ(i.operands.size(), 4u);
  EXPECT_EQ(i.operands[2].kind, Operand::Kind::Float);
  EXPECT_EQ(i.operands[2].float_width, 32);
  EXPECT_EQ(i.operands[2].float_bits, 0x3FB8AA3Bu);
  EXPECT_NEAR(i.operands[2].float_value, 1.4426950216293335, 1e-12);  // log2(e) rounded to f32
  EXPECT_EQ(i.operands[3].float_value, -1.0);
  Instruction d = parse_one("add.f64 %fd1, %fd2, 0d3FF8000000000000;");
  EXPECT_EQ(d.operands[2].float_width, 64);
  EXPECT_EQ(d.operands[2].float_bits, 0x3FF8000000000000ull);
  EXPECT_EQ(d.operands[2].float_value, 1.5);
}

TEST(PtxParser, IntegerImmediates) {
  Instruction a = parse_one("add.s32 %r1, %r2, -16;");
  EXPECT_EQ(a.operands[2].kind, Operand::Kind::Int);
  EXPECT_EQ(a.operands[2].int_value, -16);
  Instruction b = parse_one("and.b32 %r1, %r2, 0xFFFF0000;");
  EXPECT_EQ(b.operands[2].int_value, 0xFFFF0000ll);
  Instruction c = parse_one("mov.b64 %rd1, 0xFFFFFFFFFFFFFFFF;");
  EXPECT_EQ(uint64_t(c.operands[1].int_value), ~0ull);
  EXPECT_TRUE(c.operands[1].int_unsigned);
  Instruction d = parse_one("mov.f64 %fd1, 1.5;");  // decimal float literal: f64
  EXPECT_EQ(d.operands[1].kind, Operand::Kind::Float);
  EXPECT_EQ(d.operands[1].float_value, 1.5);
  Instruction e = parse_one("shl.b32 %r1, %r2, 010;");  // octal
  EXPECT_EQ(e.operands[2].int_value, 8);
}

TEST(PtxParser, AddressOperands) {
  Module m = parse_kernel(
      "ld.global.f32 %f1, [%rd1+16];\n"
      "ld.global.f32 %f1, [%rd1+-8];\n"
      "ld.shared.f32 %f2, [sm];\n"
      "ld.shared.f32 %f2, [sm+128];\n"
      "ld.param.u64 %rd2, [k_p0];");
  const auto& b = m.functions[0].body;
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0].operands[1].kind, Operand::Kind::Address);
  EXPECT_TRUE(b[0].operands[1].base_is_register);
  EXPECT_EQ(b[0].operands[1].name, "%rd1");
  EXPECT_EQ(b[0].operands[1].offset, 16);
  EXPECT_EQ(b[1].operands[1].offset, -8);
  EXPECT_FALSE(b[2].operands[1].base_is_register);
  EXPECT_EQ(b[2].operands[1].name, "sm");
  EXPECT_EQ(b[3].operands[1].offset, 128);
  EXPECT_EQ(b[4].operands[1].name, "k_p0");
}

TEST(PtxParser, VectorOperandsAndSinks) {
  Module m = parse_kernel(
      "ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];\n"
      "mov.b64 {%r1, _}, %rd2;\n"
      "st.global.v2.f32 [%rd3+8], {%f5, %f6};");
  const auto& b = m.functions[0].body;
  ASSERT_EQ(b[0].operands[0].kind, Operand::Kind::Vector);
  ASSERT_EQ(b[0].operands[0].elements.size(), 4u);
  EXPECT_EQ(b[0].operands[0].elements[3].name, "%f4");
  EXPECT_EQ(b[0].mod.vector_width, 4);
  EXPECT_EQ(b[1].operands[0].elements[1].kind, Operand::Kind::Sink);
  EXPECT_EQ(b[2].operands[1].kind, Operand::Kind::Vector);
  EXPECT_EQ(b[2].mod.vector_width, 2);
}

TEST(PtxParser, PredicatedInstructionsAndLabels) {
  Module m = parse_kernel(
      "setp.ge.s32 %p1, %r1, %r2;\n"
      "@%p1 bra $L__BB0_2;\n"
      "@!%p1 add.s32 %r3, %r3, 1;\n"
      "$L__BB0_2:\n"
      "ret;");
  const Function& f = m.functions[0];
  ASSERT_EQ(f.body.size(), 4u);
  ASSERT_TRUE(f.body[1].guard.has_value());
  EXPECT_EQ(f.body[1].guard->reg, "%p1");
  EXPECT_FALSE(f.body[1].guard->negated);
  EXPECT_EQ(f.body[1].operands[0].kind, Operand::Kind::Symbol);
  EXPECT_TRUE(f.body[2].guard->negated);
  EXPECT_EQ(f.labels.at("$L__BB0_2"), 3u);
  EXPECT_EQ(f.body[3].op, Opcode::Ret);
}

TEST(PtxParser, LineInfoFromLocAndPtxLines) {
  Module m = parse(R"(.version 9.0
.target sm_90a
.address_size 64
.visible .entry k()
{
	.reg .b32 %r<3>;
	mov.u32 %r1, %tid.x;
	.loc	1 12 5
	add.s32 %r2, %r1, 1;
	.loc	1 13 0, function_name $L__info_string0, inlined_at 1 20 3
	ret;
}
	.file	1 "/tmp/a.cu"
	.section	.debug_str
	{
$L__info_string0:
.b8 95,90,0
	}
)");
  const auto& b = m.functions[0].body;
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].loc.ptx_line, 7);
  EXPECT_EQ(b[0].loc.file, -1);  // before any .loc
  EXPECT_EQ(b[1].loc.ptx_line, 9);
  EXPECT_EQ(b[1].loc.file, 1);
  EXPECT_EQ(b[1].loc.line, 12);
  EXPECT_EQ(b[1].loc.col, 5);
  EXPECT_EQ(b[2].loc.line, 13);
  EXPECT_EQ(m.files.at(1), "/tmp/a.cu");
}

TEST(PtxParser, BlockLocalNamesAreRenamed) {
  // Two blocks declare the same name; each use resolves to its own block's declaration.
  Module m = parse_kernel(
      "{ .reg .b32 %temp; mov.b64 {%r1, %temp}, %rd1; }\n"
      "{ .reg .b32 %temp; mov.b64 {%temp, %r2}, %rd1; }\n"
      "{ .reg .f16 low, high; mov.b32 {low, high}, %r3; }");
  const auto& b = m.functions[0].body;
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].operands[0].elements[1].name, "%temp$1");
  EXPECT_EQ(b[1].operands[0].elements[0].name, "%temp$2");
  EXPECT_EQ(b[2].operands[0].elements[0].name, "low$3");
  EXPECT_EQ(b[2].operands[0].elements[0].kind, Operand::Kind::Register);  // declared without %
  EXPECT_EQ(m.functions[0].register_type("high$3"), Type::F16);
}

TEST(PtxParser, PragmaAndCallPrototypeTolerated) {
  Module m = parse_kernel(
      ".pragma \"nounroll\";\n"
      "prototype_0 : .callprototype (.param .b32 _) _ (.param .b64 _);\n"
      "mov.u32 %r1, 0;");
  EXPECT_EQ(m.functions[0].body.size(), 1u);
  EXPECT_TRUE(m.functions[0].labels.empty());
}

TEST(PtxParser, FuncWithReturnAndPrototype) {
  Module m = parse(R"(.version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf (.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.func (.param .b32 func_retval0) sq(.param .b32 sq_param_0);
.func (.param .b32 func_retval0) sq(.param .b32 sq_param_0)
{
	.reg .f32 %f<3>;
	ld.param.f32 %f1, [sq_param_0];
	mul.f32 %f2, %f1, %f1;
	st.param.f32 [func_retval0+0], %f2;
	ret;
}
)");
  ASSERT_EQ(m.functions.size(), 2u);
  const Function* vp = m.find_function("vprintf");
  ASSERT_NE(vp, nullptr);
  EXPECT_TRUE(vp->is_extern);
  EXPECT_FALSE(vp->has_body);
  const Function* sq = m.find_function("sq");
  ASSERT_NE(sq, nullptr);
  EXPECT_TRUE(sq->has_body);  // the definition replaced the prototype
  EXPECT_FALSE(sq->is_entry);
  ASSERT_EQ(sq->returns.size(), 1u);
  EXPECT_EQ(sq->returns[0].name, "func_retval0");
  EXPECT_EQ(sq->body.size(), 4u);
}

TEST(PtxParser, CallOperandsSpanLines) {
  Module m = parse(R"(.version 8.0
.target sm_80
.address_size 64
.func (.param .b32 func_retval0) f(.param .b32 f_param_0)
{
	ret;
}
.visible .entry k()
{
	.reg .b32 %r<3>;
	{ // callseq 0, 0
	.param .b32 param0;
	st.param.b32 	[param0+0], %r1;
	.param .b32 retval0;
	call.uni (retval0),
	f,
	(
	param0
	);
	ld.param.b32 	%r2, [retval0+0];
	}
	ret;
}
)");
  const Function* k = m.find_function("k");
  ASSERT_EQ(k->body.size(), 4u);
  const Instruction& call = k->body[1];
  EXPECT_EQ(call.op, Opcode::Call);
  EXPECT_TRUE(call.mod.uni);
  ASSERT_EQ(call.operands.size(), 3u);
  EXPECT_EQ(call.operands[0].kind, Operand::Kind::List);
  EXPECT_EQ(call.operands[0].elements[0].name, "retval0$1");
  EXPECT_EQ(call.operands[1].name, "f");
  EXPECT_EQ(call.operands[2].elements[0].name, "param0$1");
  EXPECT_EQ(k->body[0].operands[0].name, "param0$1");  // st.param into the block-local param
  ASSERT_EQ(k->locals.size(), 2u);
  EXPECT_EQ(k->locals[0].space, StateSpace::Param);
}

TEST(PtxParser, OpcodeTableIsConsistent) {
  for (size_t i = 0; i < size_t(Opcode::Count_); ++i) {
    const OpcodeInfo& info = opcode_info(Opcode(i));
    EXPECT_EQ(info.op, Opcode(i));
    auto back = opcode_from_name(info.name);
    ASSERT_TRUE(back.has_value()) << info.name;
    EXPECT_EQ(*back, Opcode(i)) << info.name << " appears twice";
    EXPECT_LE(info.min_operands, info.max_operands) << info.name;
  }
}

}  // namespace
}  // namespace dirigo::ptx
