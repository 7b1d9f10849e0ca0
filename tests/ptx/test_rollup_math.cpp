// Math-idiom rollup on real nvcc 13 output of tests/ptx/cuda/mathfns.cu (sm_80 and sm_90a,
// default and --use_fast_math, with and without -O3 -lineinfo): which idiom each kernel
// becomes, and near misses of every template (the kernel's text with one thing changed) that
// must NOT roll up. What the rolled expressions evaluate to is checked by executing the same
// kernels (tests/ptx/exec/test_rollup_exec.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ptx/inline.h"
#include "ptx/parser.h"
#include "ptx/rollup.h"

namespace dirigo::ptx {
namespace {

namespace fs = std::filesystem;
using K = RolledInstr::Kind;

const char* kArchs[] = {"sm_80", "sm_90a"};
const char* kVariants[] = {"plain", "fast", "O3_lineinfo", "fast_O3_lineinfo"};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path mathfns(const std::string& arch, const std::string& variant) {
  return fs::path(DIRIGO_PTX_NVCC_DIR) / ("mathfns." + arch + "." + variant + ".ptx");
}

// The module text with `from` replaced by `to` inside kernel `kernel` only.
std::string mutate(const std::string& text, const std::string& kernel, const std::string& from, const std::string& to,
                   bool all = true) {
  size_t b = text.find(".entry " + kernel + "(");
  if (b == std::string::npos) throw std::runtime_error("no kernel " + kernel);
  size_t e = text.find("\n}\n", b);
  std::string body = text.substr(b, e - b);
  size_t n = 0;
  for (size_t p = 0; (p = body.find(from, p)) != std::string::npos; p += to.size()) {
    body.replace(p, from.size(), to);
    ++n;
    if (!all) break;
  }
  if (n == 0) throw std::runtime_error("'" + from + "' not in " + kernel);
  return text.substr(0, b) + body + text.substr(e);
}

struct Rolled {
  Module m;
  const Function* f = nullptr;
  Rollup r;
  std::vector<std::string> idioms() const { return r.matched; }
  const RolledInstr* math(const std::string& idiom) const {
    for (const auto& x : r.at) if (x.kind == K::Math && x.idiom == idiom) return &x;
    return nullptr;
  }
};

Rolled roll_text(const std::string& text, const std::string& kernel) {
  Rolled out;
  out.m = parse(text);
  inline_calls(out.m);
  for (const auto& f : out.m.functions) if (f.name == kernel) out.f = &f;
  if (!out.f) throw std::runtime_error("kernel " + kernel + " not found");
  out.r = rollup(*out.f);
  return out;
}

#define REQUIRE_NVCC()                                                                         \
  if (!fs::exists(mathfns("sm_80", "plain"))) GTEST_SKIP() << "no nvcc output in " DIRIGO_PTX_NVCC_DIR

using Names = std::vector<std::string>;

// kernel -> (idioms by default, idioms under --use_fast_math). Kernels that are one SFU
// instruction (ex2/lg2/sqrt/rsqrt/rcp/div/tanh.approx) need no template: exec lowers each
// instruction to its function node.
const std::map<std::string, std::pair<Names, Names>> kExpected = {
    {"m_powf", {{"powf"}, {}}},                    // fast: ex2.approx(y * lg2.approx(x)), per instruction
    {"m_powf_const", {{"powf"}, {}}},
    {"m_powf_intrinsic", {{}, {}}},
    {"m_exp2f", {{}, {}}},                         // ex2.approx.f32
    {"m_log2f", {{"log2f"}, {}}},                  // fast: lg2.approx.ftz.f32
    {"m_sqrtf", {{}, {}}},                         // sqrt.rn / sqrt.approx
    {"m_rsqrtf", {{}, {}}},
    {"m_fdividef", {{}, {}}},                      // div.approx
    {"m_div", {{}, {}}},                           // div.rn / div.approx.ftz
    {"m_rcp", {{}, {}}},                           // rcp.rn / rcp.approx.ftz
    {"m_expf", {{"expf"}, {"__expf"}}},
    {"m_logf", {{"logf"}, {"__logf"}}},
    {"m_tanhf", {{"tanhf"}, {}}},                  // fast: tanh.approx.f32
    {"m_sigmoid", {{"sigmoid(expf)"}, {"sigmoid(__expf(-x))"}}},
    {"m_sigmoid_intrinsic", {{"sigmoid(__expf(-x))"}, {"sigmoid(__expf(-x))"}}},
    {"m_silu", {{"silu(expf)"}, {"silu(__expf(-x))"}}},
    {"m_not_silu", {{"expf"}, {"__expf(-x)"}}},
    {"m_softplus", {{"softplus"}, {"softplus"}}},
    {"m_softplus_logf", {{"softplus"}, {"softplus"}}},
    {"m_bits", {{}, {}}},
    {"m_sum_exp", {{"expf", "expf", "expf", "expf"}, {"__expf", "__expf", "__expf", "__expf"}}},
    {"m_tanh_via_exp", {{"expf", "expf"}, {"__expf"}}},
};

TEST(RollupMath, EveryKernelOfEveryVariantRollsUpAsExpected) {
  REQUIRE_NVCC();
  for (const char* arch : kArchs)
    for (const char* variant : kVariants) {
      bool fast = std::string(variant).find("fast") != std::string::npos;
      std::string text = read_text(mathfns(arch, variant));
      for (const auto& [kernel, want] : kExpected) {
        SCOPED_TRACE(std::string(arch) + "." + variant + " " + kernel);
        Rolled x = roll_text(text, kernel);
        EXPECT_EQ(x.idioms(), fast ? want.second : want.first);
        // nothing but m_bits is left with integer work on float bits
        EXPECT_EQ(unmatched_float_bits(*x.f, x.r).empty(), kernel != "m_bits");
      }
    }
}

// ---- powf

TEST(RollupMath, PowfTakesBaseThenExponent) {
  REQUIRE_NVCC();
  Rolled x = roll_text(read_text(mathfns("sm_90a", "plain")), "m_powf");
  const RolledInstr* p = x.math("powf");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->fn, ir::Fn::Pow);
  ASSERT_EQ(p->args.size(), 2u);
  // the base is the register loaded from a (param 1), the exponent from b (param 2): the
  // region's inputs, defined by the loads that stay outside it
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(p->args[k].kind, Operand::Kind::Register);
    bool loaded = false;
    for (size_t i = 0; i < x.f->body.size(); ++i) {
      const auto& in = x.f->body[i];
      if (in.op == Opcode::Ld && in.operands[0].name == p->args[k].name) {
        loaded = true;
        EXPECT_EQ(x.r.at[i].kind, K::Keep);
      }
    }
    EXPECT_TRUE(loaded) << p->args[k].name;
  }
  // every branch of the special cases is gone: only the store's path remains
  for (size_t i = 0; i < x.f->body.size(); ++i)
    if (x.f->body[i].op == Opcode::Bra) EXPECT_EQ(x.r.at[i].kind, K::Absorbed);
}

TEST(RollupMath, PowfWithConstantExponentPassesTheConstant) {
  REQUIRE_NVCC();
  Rolled x = roll_text(read_text(mathfns("sm_80", "plain")), "m_powf_const");
  const RolledInstr* p = x.math("powf");
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->args.size(), 2u);
  EXPECT_EQ(p->args[1].kind, Operand::Kind::Float);
  EXPECT_EQ(p->args[1].float_value, 1.5);
}

TEST(RollupMath, PowfWithAWrongExp2CoefficientIsNotRolledUpAndIsUnsupported) {
  REQUIRE_NVCC();
  std::string text = mutate(read_text(mathfns("sm_90a", "plain")), "m_powf", "0f3AAF85ED", "0f3AAF85EE");
  Rolled x = roll_text(text, "m_powf");
  EXPECT_TRUE(x.idioms().empty());
  auto bits = unmatched_float_bits(*x.f, x.r);
  ASSERT_FALSE(bits.empty());
  // names the kernel and the PTX line of the first integer instruction on float bits
  const auto& first = bits.front();
  EXPECT_EQ(first.ptx_line, x.f->body[first.index].loc.ptx_line);
  EXPECT_NE(first.message.find("UNSUPPORTED: kernel m_powf, PTX line " + std::to_string(first.ptx_line)), std::string::npos)
      << first.message;
  EXPECT_NE(first.message.find("float bits"), std::string::npos);
}

TEST(RollupMath, PowfWhoseIntermediateIsUsedAfterItIsNotRolledUp) {
  REQUIRE_NVCC();
  // store |x| (the abs at the start of the idiom) after the merge point: two live results
  std::string text = read_text(mathfns("sm_90a", "plain"));
  Rolled ok = roll_text(text, "m_powf");
  std::string abs_reg;
  for (const auto& in : ok.f->body)
    if (in.op == Opcode::Abs && abs_reg.empty()) abs_reg = in.operands[0].name;
  ASSERT_FALSE(abs_reg.empty());
  std::string store_line;
  for (const auto& in : ok.f->body)
    if (in.op == Opcode::St) store_line = in.operands[0].name;
  ASSERT_FALSE(store_line.empty());
  text = mutate(text, "m_powf", "\tret;", "\tst.global.f32 [" + store_line + "+4], " + abs_reg + ";\n\tret;", false);
  EXPECT_TRUE(roll_text(text, "m_powf").idioms().empty());
}

TEST(RollupMath, FastMathPowfStaysPerInstruction) {
  REQUIRE_NVCC();
  // ex2.approx(y * lg2.approx(x)) is NaN for x < 0 where pow(x, 2) is not: rolling it into Pow
  // would be a wrong expression. exec lowers it to Exp2(y * Log2(x)) instruction by instruction.
  Rolled x = roll_text(read_text(mathfns("sm_90a", "fast")), "m_powf");
  EXPECT_TRUE(x.idioms().empty());
  int sfu = 0;
  for (size_t i = 0; i < x.f->body.size(); ++i) {
    const auto& in = x.f->body[i];
    if (in.op != Opcode::Ex2 && in.op != Opcode::Lg2) continue;
    ++sfu;
    EXPECT_EQ(x.r.at[i].kind, K::Keep);
  }
  EXPECT_EQ(sfu, 2);
}

// ---- log2f

TEST(RollupMath, Log2fWithAWrongPolynomialCoefficientIsNotRolledUp) {
  REQUIRE_NVCC();
  std::string text = mutate(read_text(mathfns("sm_80", "plain")), "m_log2f", "0fBF38AA3B", "0fBF38AA3C");
  EXPECT_TRUE(roll_text(text, "m_log2f").idioms().empty());
}

TEST(RollupMath, Log2fTakesTheLoadedValue) {
  REQUIRE_NVCC();
  Rolled x = roll_text(read_text(mathfns("sm_80", "plain")), "m_log2f");
  const RolledInstr* p = x.math("log2f");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->fn, ir::Fn::Log2);
  const Instruction* ld = nullptr;
  for (const auto& in : x.f->body) if (in.op == Opcode::Ld && in.mod.space == StateSpace::Global) ld = &in;
  ASSERT_NE(ld, nullptr);
  EXPECT_EQ(p->args.at(0).name, ld->operands[0].name);
}

// ---- softplus

TEST(RollupMath, SoftplusWithAnotherThresholdIsNotRolledUp) {
  REQUIRE_NVCC();
  for (const char* v : {"plain", "fast"}) {
    std::string text = mutate(read_text(mathfns("sm_90a", v)), "m_softplus", "0f41A00000", "0f41200000");
    Rolled x = roll_text(text, "m_softplus");
    for (const auto& n : x.idioms()) EXPECT_NE(n, "softplus") << v;
  }
}

TEST(RollupMath, SoftplusOfExpOfMinusXIsNotRolledUp) {
  REQUIRE_NVCC();
  // fast math: exp(-x) is x * -log2(e)
  std::string text = mutate(read_text(mathfns("sm_90a", "fast")), "m_softplus", "0f3FB8AA3B", "0fBFB8AA3B");
  Rolled x = roll_text(text, "m_softplus");
  for (const auto& n : x.idioms()) EXPECT_NE(n, "softplus");
}

TEST(RollupMath, SoftplusWritesTheRegisterThatHoldsXOnTheBypassPath) {
  REQUIRE_NVCC();
  Rolled x = roll_text(read_text(mathfns("sm_90a", "plain")), "m_softplus");
  const RolledInstr* p = x.math("softplus");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->fn, ir::Fn::Softplus);
  EXPECT_EQ(p->dest, p->args.at(0).name);  // nvcc coalesces x and the result
  EXPECT_FALSE(p->negate);
}

// ---- sigmoid / silu

TEST(RollupMath, SigmoidArgumentSign) {
  REQUIRE_NVCC();
  // default: expf(-x) is exp of the register holding -x, so sigmoid(-(that)); fast math folds
  // the sign into the constant: sigmoid(x) of the loaded register itself
  Rolled d = roll_text(read_text(mathfns("sm_90a", "plain")), "m_sigmoid");
  ASSERT_NE(d.math("sigmoid(expf)"), nullptr);
  EXPECT_TRUE(d.math("sigmoid(expf)")->negate);
  Rolled f = roll_text(read_text(mathfns("sm_90a", "fast")), "m_sigmoid");
  ASSERT_NE(f.math("sigmoid(__expf(-x))"), nullptr);
  EXPECT_FALSE(f.math("sigmoid(__expf(-x))")->negate);
  EXPECT_EQ(f.math("sigmoid(__expf(-x))")->fn, ir::Fn::Sigmoid);
}

TEST(RollupMath, OnePlusTwoIsNotASigmoid) {
  REQUIRE_NVCC();
  for (const char* v : {"plain", "fast"}) {
    std::string text = mutate(read_text(mathfns("sm_90a", v)), "m_sigmoid", "0f3F800000", "0f40000000");
    for (const auto& n : roll_text(text, "m_sigmoid").idioms()) EXPECT_EQ(n.find("sigmoid"), std::string::npos) << v;
  }
}

TEST(RollupMath, ExpUsedTwiceIsNotAbsorbedIntoASigmoid) {
  REQUIRE_NVCC();
  // the exp result also stored elsewhere: the sigmoid shape must leave it alone
  std::string text = read_text(mathfns("sm_90a", "fast"));
  Rolled ok = roll_text(text, "m_sigmoid");
  std::string exp_reg, addr;
  for (size_t i = 0; i < ok.f->body.size(); ++i) {
    if (ok.f->body[i].op == Opcode::Ex2) exp_reg = ok.f->body[i].operands[0].name;
    if (ok.f->body[i].op == Opcode::St) addr = ok.f->body[i].operands[0].name;
  }
  ASSERT_FALSE(exp_reg.empty());
  text = mutate(text, "m_sigmoid", "\tret;", "\tst.global.f32 [" + addr + "+4], " + exp_reg + ";\n\tret;", false);
  EXPECT_EQ(roll_text(text, "m_sigmoid").idioms(), Names{"__expf(-x)"});
}

}  // namespace
}  // namespace dirigo::ptx
