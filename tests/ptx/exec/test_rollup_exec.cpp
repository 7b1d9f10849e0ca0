// The rollup's expressions are right: every kernel of tests/ptx/cuda/mathfns.cu (nvcc 13,
// sm_80/sm_90a x default/--use_fast_math x plain/-O3 -lineinfo) is executed by exec::execute
// (which applies the rollup), and the stored expression, evaluated by ir::Evaluator on sample
// inputs, equals the math function computed on the host within tolerance. A separate binary
// (test_ptx_exec) so test_ptx keeps building while src/exec changes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>

#include "exec/exec.h"
#include "ir/eval.h"
#include "ptx/inline.h"
#include "ptx/parser.h"

namespace dirigo::ptx {
namespace {

namespace fs = std::filesystem;

fs::path mathfns(const std::string& arch, const std::string& variant) {
  return fs::path(DIRIGO_PTX_NVCC_DIR) / ("mathfns." + arch + "." + variant + ".ptx");
}

struct Case {
  std::function<float(float, float)> ref;
  bool negative_a = true;  // defined for a < 0 too
};

float softplus_ref(float a) { return a > 20.0f ? a : log1pf(expf(a)); }

const std::map<std::string, Case> kCases = {
    {"m_powf", {[](float a, float b) { return powf(a, b); }, false}},
    {"m_powf_const", {[](float a, float) { return powf(a, 1.5f); }, false}},
    {"m_powf_intrinsic", {[](float a, float b) { return powf(a, b); }, false}},
    {"m_exp2f", {[](float a, float) { return exp2f(a); }}},
    {"m_log2f", {[](float a, float) { return log2f(a); }, false}},
    {"m_sqrtf", {[](float a, float) { return sqrtf(a); }, false}},
    {"m_rsqrtf", {[](float a, float) { return 1.0f / sqrtf(a); }, false}},
    {"m_fdividef", {[](float a, float b) { return a / b; }}},
    {"m_div", {[](float a, float b) { return a / b; }}},
    {"m_rcp", {[](float a, float) { return 1.0f / a; }}},
    {"m_expf", {[](float a, float) { return expf(a); }}},
    {"m_logf", {[](float a, float) { return logf(a); }, false}},
    {"m_tanhf", {[](float a, float) { return tanhf(a); }}},
    {"m_sigmoid", {[](float a, float) { return 1.0f / (1.0f + expf(-a)); }}},
    {"m_sigmoid_intrinsic", {[](float a, float) { return 1.0f / (1.0f + expf(-a)); }}},
    {"m_silu", {[](float a, float) { return a / (1.0f + expf(-a)); }}},
    {"m_not_silu", {[](float a, float b) { return a / (1.0f + expf(-b)); }}},
    {"m_softplus", {[](float a, float) { return softplus_ref(a); }}},
    {"m_softplus_logf", {[](float a, float) { return softplus_ref(a); }}},
    {"m_sum_exp", {[](float a, float b) { return 4.0f * expf(a - b); }}},  // every a[k] has the sample value
    {"m_tanh_via_exp", {[](float a, float) { return tanhf(a); }}},
};

struct Run {
  ir::Context ctx;
  exec::ExecResult r;
  int32_t a = -1, b = -1;
};

std::unique_ptr<Run> run(const Module& m, const std::string& kernel) {
  auto out = std::make_unique<Run>();
  int32_t o = out->ctx.tensor("o");
  out->a = out->ctx.tensor("a");
  out->b = out->ctx.tensor("b");
  exec::Launch l;
  l.params = {exec::ParamBinding::tensor_arg(o, exec::DType::F32, 4), exec::ParamBinding::tensor_arg(out->a, exec::DType::F32, 4),
              exec::ParamBinding::tensor_arg(out->b, exec::DType::F32, 4)};
  out->r = exec::execute(out->ctx, m, kernel, l);
  return out;
}

Module load(const fs::path& p) {
  Module m = parse_file(p.string());
  inline_calls(m);
  return m;
}

TEST(RollupExec, RolledExpressionsEvaluateToTheMathFunction) {
  if (!fs::exists(mathfns("sm_80", "plain"))) GTEST_SKIP() << "no nvcc output";
  const float as[] = {0.37f, 1.7f, 4.2f, -2.5f, 25.0f}, bs[] = {0.5f, 2.25f, -1.3f};
  for (const char* arch : {"sm_80", "sm_90a"})
    for (const char* variant : {"plain", "fast", "O3_lineinfo", "fast_O3_lineinfo"}) {
      bool fast = std::string(variant).find("fast") != std::string::npos;
      Module m = load(mathfns(arch, variant));
      for (const auto& [kernel, c] : kCases) {
        SCOPED_TRACE(std::string(arch) + "." + variant + " " + kernel);
        auto x = run(m, kernel);
        ASSERT_FALSE(x->r.unsupported) << *x->r.unsupported;
        ASSERT_EQ(x->r.writes.size(), 1u);
        ir::Expr value = x->r.writes[0].value;
        for (float a : as)
          for (float b : bs) {
            if (a < 0 && !c.negative_a) continue;
            if (a > 20 && kernel.find("softplus") == std::string::npos) continue;
            ir::Env env;
            env.elem = [&](int32_t t, int64_t, ir::Sort) { return ir::Value::of_real(t == x->a ? a : b); };
            ir::Evaluator ev(env);
            double got = ev.real(value), want = c.ref(a, b);
            // the rolled node is the exact function; fast-math SFU results are a few ulp
            // (ex2/lg2.approx: 2^-22 relative) off, libm's float results half an ulp
            double tol = (fast ? 2e-5 : 2e-6) * std::max(1.0, std::fabs(want));
            EXPECT_NEAR(got, want, tol) << "a=" << a << " b=" << b << " value=" << value;
          }
      }
    }
}

TEST(RollupExec, BitManipulationOnFloatsIsUnsupportedNamingKernelAndLine) {
  if (!fs::exists(mathfns("sm_80", "plain"))) GTEST_SKIP() << "no nvcc output";
  for (const char* variant : {"plain", "fast"}) {
    Module m = load(mathfns("sm_90a", variant));
    auto x = run(m, "m_bits");
    ASSERT_TRUE(x->r.unsupported) << variant;
    const std::string& why = *x->r.unsupported;
    EXPECT_NE(why.find("kernel m_bits"), std::string::npos) << why;
    EXPECT_NE(why.find("PTX line"), std::string::npos) << why;
    EXPECT_NE(why.find("float"), std::string::npos) << why;
    EXPECT_TRUE(x->r.writes.empty());
  }
}

}  // namespace
}  // namespace dirigo::ptx
