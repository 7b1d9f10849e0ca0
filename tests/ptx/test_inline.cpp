// Inlining of .func calls (inline.h).
#include <gtest/gtest.h>

#include <algorithm>

#include "ptx/inline.h"
#include "ptx_test_util.h"

namespace dirigo::ptx {
namespace {

const char* kHeader = ".version 8.0\n.target sm_80\n.address_size 64\n";

// sq(x) = x*x with an early return for negative x (returns 0): a callee with a label and two rets.
const char* kSq = R"(.func (.param .b32 func_retval0) sq(.param .b32 sq_param_0)
{
	.reg .pred %p<2>;
	.reg .f32 %f<4>;
	ld.param.f32 %f1, [sq_param_0];
	setp.lt.f32 %p1, %f1, 0f00000000;
	@%p1 bra $L__BB0_2;
	mul.f32 %f2, %f1, %f1;
	st.param.f32 [func_retval0+0], %f2;
	ret;
$L__BB0_2:
	mov.f32 %f3, 0f00000000;
	st.param.f32 [func_retval0+0], %f3;
	ret;
}
)";

std::string caller(const std::string& callee, int calls) {
  std::string s = ".visible .entry k(.param .f32 k_param_0)\n{\n\t.reg .f32 %f<8>;\n\tld.param.f32 %f1, [k_param_0];\n";
  for (int i = 0; i < calls; ++i) {
    s += "\t{\n\t.param .b32 param0;\n\tst.param.f32 [param0+0], %f" + std::to_string(i + 1) +
         ";\n\t.param .b32 retval0;\n\tcall.uni (retval0), " + callee +
         ", (param0);\n\tld.param.f32 %f" + std::to_string(i + 2) + ", [retval0+0];\n\t}\n";
  }
  return s + "\tret;\n}\n";
}

bool has_call(const Function& f) {
  return std::any_of(f.body.begin(), f.body.end(), [](const Instruction& i) { return i.op == Opcode::Call; });
}

TEST(PtxInline, CallIsReplacedByCalleeBodyWithExplicitParamPassing) {
  Module m = parse(std::string(kHeader) + kSq + caller("sq", 1));
  inline_calls(m);
  const Function& k = *m.find_function("k");
  EXPECT_FALSE(has_call(k));
  // ld k_param, st.param, [7 callee instructions: ld, setp, bra, mul, st, (ret->bra), mov, st], ld.param, ret
  std::vector<std::string> texts;
  for (const auto& i : k.body) texts.push_back(i.text);
  std::vector<std::string> want = {"ld.param.f32", "st.param.f32", "ld.param.f32", "setp.lt.f32", "bra",
                                   "mul.f32",      "st.param.f32", "bra.uni",      "mov.f32",     "st.param.f32",
                                   "ld.param.f32", "ret"};
  EXPECT_EQ(texts, want);
  // The callee's parameter and return variable now name the caller's call-site variables.
  EXPECT_EQ(k.body[1].operands[0].name, "param0$1");
  EXPECT_EQ(k.body[2].operands[1].name, "param0$1");
  EXPECT_EQ(k.body[6].operands[0].name, "retval0$1");
  EXPECT_EQ(k.body[10].operands[1].name, "retval0$1");
  // Callee registers renamed and declared; labels renamed and re-pointed.
  EXPECT_EQ(k.body[2].operands[0].name, "%f$i1_1");
  EXPECT_EQ(k.register_type("%f$i1_1"), Type::F32);
  EXPECT_EQ(k.register_type("%p$i1_1"), Type::Pred);
  EXPECT_EQ(k.body[4].operands[0].name, "$L__BB0_2$i1");
  EXPECT_EQ(k.labels.at("$L__BB0_2$i1"), 8u);
  EXPECT_EQ(k.body[7].operands[0].name, "$Lret$i1");  // the first ret jumps past the body
  EXPECT_EQ(k.labels.at("$Lret$i1"), 10u);
  EXPECT_EQ(k.body[4].guard->reg, "%p$i1_1");
}

TEST(PtxInline, TwoCallSitesGetDistinctNames) {
  Module m = parse(std::string(kHeader) + kSq + caller("sq", 2));
  inline_calls(m);
  const Function& k = *m.find_function("k");
  EXPECT_FALSE(has_call(k));
  EXPECT_TRUE(k.labels.count("$L__BB0_2$i1"));
  EXPECT_TRUE(k.labels.count("$L__BB0_2$i2"));
  EXPECT_TRUE(k.register_type("%f$i2_3").has_value());
  EXPECT_EQ(k.locals.size(), 4u);  // param0$1, retval0$1, param0$2, retval0$2
}

TEST(PtxInline, NestedCallsAreInlinedTransitively) {
  std::string quad = R"(.func (.param .b32 func_retval0) quad(.param .b32 quad_param_0)
{
	.reg .f32 %f<4>;
	ld.param.f32 %f1, [quad_param_0];
	{
	.param .b32 param0;
	st.param.f32 [param0+0], %f1;
	.param .b32 retval0;
	call.uni (retval0), sq, (param0);
	ld.param.f32 %f2, [retval0+0];
	}
	mul.f32 %f3, %f2, %f2;
	st.param.f32 [func_retval0+0], %f3;
	ret;
}
)";
  Module m = parse(std::string(kHeader) + kSq + quad + caller("quad", 1));
  inline_calls(m);
  EXPECT_FALSE(has_call(*m.find_function("quad")));
  const Function& k = *m.find_function("k");
  EXPECT_FALSE(has_call(k));
  // sq's registers went through two renamings (into quad, then into k).
  EXPECT_TRUE(k.register_type("%f$i1_$i1_1").has_value());
}

TEST(PtxInline, VoidCallAndGuardedCall) {
  std::string store = R"(.func store(.param .b64 store_param_0, .param .b32 store_param_1)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [store_param_0];
	ld.param.u32 %r1, [store_param_1];
	st.global.u32 [%rd1], %r1;
	ret;
}
.visible .entry k(.param .u64 k_param_0)
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [k_param_0];
	setp.eq.s32 %p1, %r1, 0;
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd1;
	.param .b32 param1;
	st.param.b32 [param1+0], %r1;
	@%p1 call.uni store, (param0, param1);
	}
	ret;
}
)";
  Module m = parse(std::string(kHeader) + store);
  inline_calls(m);
  const Function& k = *m.find_function("k");
  EXPECT_FALSE(has_call(k));
  // @%p1 call  ->  @!%p1 bra skip; body; skip:
  auto it = std::find_if(k.body.begin(), k.body.end(), [](const Instruction& i) { return i.op == Opcode::Bra; });
  ASSERT_NE(it, k.body.end());
  ASSERT_TRUE(it->guard.has_value());
  EXPECT_TRUE(it->guard->negated);
  EXPECT_EQ(it->guard->reg, "%p1");
  EXPECT_EQ(k.labels.at(it->operands[0].name), k.body.size() - 1);  // right before the final ret
  EXPECT_EQ(k.body[k.body.size() - 2].text, "st.global.u32");
}

TEST(PtxInline, RecursionIsAnErrorNamingTheFunction) {
  std::string rec = R"(.func (.param .b32 func_retval0) fact(.param .b32 fact_param_0)
{
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [fact_param_0];
	{
	.param .b32 param0;
	st.param.b32 [param0+0], %r1;
	.param .b32 retval0;
	call.uni (retval0), fact, (param0);
	ld.param.b32 %r2, [retval0+0];
	}
	st.param.b32 [func_retval0+0], %r2;
	ret;
}
)";
  Module m = parse(std::string(kHeader) + rec);
  try {
    inline_calls(m);
    FAIL() << "recursion not detected";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.token(), "fact");
    EXPECT_NE(e.reason().find("recursive call cycle fact -> fact"), std::string::npos);
    EXPECT_EQ(e.line(), 12);  // the call instruction
  }
}

TEST(PtxInline, MutualRecursionNamesTheCycle) {
  std::string text = std::string(kHeader) + R"(.func a();
.func b()
{
	call.uni a;
	ret;
}
.func a()
{
	call.uni b;
	ret;
}
)";
  Module m = parse(text);
  try {
    inline_calls(m);
    FAIL() << "recursion not detected";
  } catch (const ParseError& e) {
    EXPECT_NE(e.reason().find("a -> b -> a"), std::string::npos) << e.what();
  }
}

TEST(PtxInline, ExternalCallsStayAndArgumentMismatchFails) {
  std::string ext = std::string(kHeader) + R"(.extern .func (.param .b32 func_retval0) vprintf(.param .b64 p0, .param .b64 p1);
.visible .entry k()
{
	.reg .b32 %r<2>;
	{
	.param .b64 param0;
	.param .b64 param1;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	}
	ret;
}
)";
  Module m = parse(ext);
  inline_calls(m);
  EXPECT_TRUE(has_call(*m.find_function("k")));

  Module bad = parse(std::string(kHeader) + kSq + R"(.visible .entry k()
{
	{
	.param .b32 param0;
	.param .b32 param1;
	.param .b32 retval0;
	call.uni (retval0), sq, (param0, param1);
	}
	ret;
}
)");
  try {
    inline_calls(bad);
    FAIL() << "argument mismatch not detected";
  } catch (const ParseError& e) {
    EXPECT_NE(e.reason().find("passes 2 arguments, 'sq' takes 1"), std::string::npos);
  }
}

}  // namespace
}  // namespace dirigo::ptx
