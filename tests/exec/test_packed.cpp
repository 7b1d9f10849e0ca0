// Packed half2 / bf16x2 semantics on hand-written PTX: 32-bit loads of two halves, each packed
// opcode per half, 32-bit stores; symbolic (evaluated) == concrete == reference per element.
#include <fmt/format.h>

#include "exec_test_util.h"

namespace dirigo::exec::test {
namespace {

// k(out, a, b) over f16/bf16 tensors: %r2 = a[2t..2t+1], %r3 = b[...]; `body` computes %r4.
ptx::Module packed_kernel(const std::string& body) {
  std::string text = std::string(".version 8.5\n.target sm_90\n.address_size 64\n") +
                     ".visible .entry k(.param .u64 k_out, .param .u64 k_a, .param .u64 k_b)\n{\n"
                     ".reg .pred %p<8>;\n.reg .b16 %rs<8>;\n.reg .f32 %f<8>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<16>;\n"
                     "ld.param.u64 %rd1, [k_out];\nld.param.u64 %rd2, [k_a];\nld.param.u64 %rd3, [k_b];\n"
                     "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd5, %r1, 4;\n"
                     "add.s64 %rd6, %rd1, %rd5;\nadd.s64 %rd7, %rd2, %rd5;\nadd.s64 %rd8, %rd3, %rd5;\n"
                     "ld.global.b32 %r2, [%rd7];\nld.global.b32 %r3, [%rd8];\n" +
                     body + "\nst.global.b32 [%rd6], %r4;\nret;\n}\n";
  auto m = ptx::parse(text);
  ptx::inline_calls(m);
  return m;
}

struct Out { std::optional<std::string> unsupported; };

// ref(a, b, element) -> expected out element; halves are exact small dyadic values.
Out check(const std::string& body, DType dt, const std::function<double(double, double, int)>& ref, bool swap = false) {
  SCOPED_TRACE(body);
  auto m = packed_kernel(body);
  const int threads = 16, n = 2 * threads;
  std::vector<double> a(n), b(n);
  for (int i = 0; i < n; ++i) { a[i] = (i % 7) * 0.25 - 0.75; b[i] = (i % 5) * 0.5 - 1.0; }
  Harness h;
  h.tensor("out", dt, std::vector<double>(n, 0));
  h.tensor("a", dt, a);
  h.tensor("b", dt, b);
  h.launch.block = {threads};
  auto r = execute(h.ctx, m, "k", h.launch);
  if (r.unsupported) return {r.unsupported};
  EXPECT_TRUE(r.findings.empty()) << to_text(h.ctx, r);
  auto c = run_concrete(h.ctx, m, "k", h.launch, h.input);
  EXPECT_FALSE(c.unsupported) << *c.unsupported;
  if (c.unsupported) return {};
  Resolver res(h.ctx, r);
  for (int i = 0; i < n; ++i) {
    double want = swap ? a[i ^ 1] : ref(a[i], b[i], i);
    EXPECT_EQ(symbolic_value(h, r, h.ids["out"], i, res), want) << "element " << i;
    EXPECT_EQ(c.memory.tensors.at(h.ids["out"])[i], want) << "element " << i;
  }
  return {};
}

TEST(Packed, AddSubMulFma) {
  EXPECT_FALSE(check("add.rn.f16x2 %r4, %r2, %r3;", DType::F16, [](double a, double b, int) { return a + b; }).unsupported);
  EXPECT_FALSE(check("sub.f16x2 %r4, %r2, %r3;", DType::F16, [](double a, double b, int) { return a - b; }).unsupported);
  EXPECT_FALSE(check("mul.f16x2 %r4, %r2, %r3;", DType::F16, [](double a, double b, int) { return a * b; }).unsupported);
  EXPECT_FALSE(check("fma.rn.f16x2 %r4, %r2, %r3, %r2;", DType::F16,
                     [](double a, double b, int) { return a * b + a; }).unsupported);
}
TEST(Packed, NegAbsMinMax) {
  EXPECT_FALSE(check("neg.f16x2 %r4, %r2;", DType::F16, [](double a, double, int) { return -a; }).unsupported);
  EXPECT_FALSE(check("abs.f16x2 %r4, %r2;", DType::F16, [](double a, double, int) { return std::fabs(a); }).unsupported);
  EXPECT_FALSE(check("min.f16x2 %r4, %r2, %r3;", DType::F16, [](double a, double b, int) { return std::min(a, b); }).unsupported);
  EXPECT_FALSE(check("max.bf16x2 %r4, %r2, %r3;", DType::BF16, [](double a, double b, int) { return std::max(a, b); }).unsupported);
}
TEST(Packed, ImmediateHalvesAndBf16) {
  // 0x3C004000: upper half 1.0, lower half 2.0 (f16); 0x3F804000 in bf16: upper 1.0, lower 2.0
  EXPECT_FALSE(check("mul.f16x2 %r4, %r2, 0x3C004000;", DType::F16,
                     [](double a, double, int i) { return a * (i % 2 ? 1.0 : 2.0); }).unsupported);
  EXPECT_FALSE(check("mov.b32 %r5, 0x3F804000;\nfma.rn.bf16x2 %r4, %r2, %r5, %r3;", DType::BF16,
                     [](double a, double b, int i) { return a * (i % 2 ? 1.0 : 2.0) + b; }).unsupported);
}
TEST(Packed, CvtPackAndMovUnpack) {
  // unpack both operands, add in f32, repack with cvt.rn.f16x2.f32 (a -> upper half)
  EXPECT_FALSE(check("mov.b32 {%rs1, %rs2}, %r2;\nmov.b32 {%rs3, %rs4}, %r3;\ncvt.f32.f16 %f1, %rs1;\n"
                     "cvt.f32.f16 %f2, %rs2;\ncvt.f32.f16 %f3, %rs3;\nadd.f32 %f4, %f1, %f3;\nmul.f32 %f5, %f2, %f2;\n"
                     "cvt.rn.f16x2.f32 %r4, %f5, %f4;",
                     DType::F16, [](double a, double b, int i) { return i % 2 ? a * a : a + b; }).unsupported);
  // mov.b32 %r, {%rs_lo, %rs_hi} packs two halves (swapped here)
  EXPECT_FALSE(check("mov.b32 {%rs1, %rs2}, %r2;\nmov.b32 %r4, {%rs2, %rs1};", DType::F16,
                     [](double, double, int) { return 0.0; }, /*swap=*/true).unsupported);
}
TEST(Packed, IntegerBitTricksOnHalvesAreUnsupported) {
  // nvcc's __habs2 on older targets: and.b32 with 0x7fff7fff
  auto o = check("and.b32 %r4, %r2, 2147450879;", DType::F16, [](double a, double, int) { return std::fabs(a); });
  ASSERT_TRUE(o.unsupported);
  EXPECT_NE(o.unsupported->find("packed half2"), std::string::npos) << *o.unsupported;
}
TEST(Packed, ShuffleOfAPackedValueIsUnsupported) {
  auto o = check("shfl.sync.bfly.b32 %r4, %r2, 1, 31, -1;", DType::F16, [](double a, double, int) { return a; });
  ASSERT_TRUE(o.unsupported);
  EXPECT_NE(o.unsupported->find("packed half2"), std::string::npos) << *o.unsupported;
}

}  // namespace
}  // namespace dirigo::exec::test
