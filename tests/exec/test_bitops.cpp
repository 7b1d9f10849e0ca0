// lop3 / prmt / shf semantics: each form on random 32-bit inputs, symbolic write set (evaluated)
// == concrete interpreter == a C++ reference of the PTX ISA definition.
#include <fmt/format.h>

#include "exec_test_util.h"

namespace dirigo::exec::test {
namespace {

// k(out, a, b): %r2 = a[tid], %r3 = b[tid]; `body` computes %r4; out[tid] = %r4.
ptx::Module int_kernel(const std::string& body) {
  std::string text = std::string(".version 8.5\n.target sm_90\n.address_size 64\n") +
                     ".visible .entry k(.param .u64 k_out, .param .u64 k_a, .param .u64 k_b)\n{\n"
                     ".reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<16>;\n"
                     "ld.param.u64 %rd1, [k_out];\nld.param.u64 %rd2, [k_a];\nld.param.u64 %rd3, [k_b];\n"
                     "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd5, %r1, 4;\n"
                     "add.s64 %rd6, %rd1, %rd5;\nadd.s64 %rd7, %rd2, %rd5;\nadd.s64 %rd8, %rd3, %rd5;\n"
                     "ld.global.u32 %r2, [%rd7];\nld.global.u32 %r3, [%rd8];\n" +
                     body + "\nst.global.u32 [%rd6], %r4;\nret;\n}\n";
  auto m = ptx::parse(text);
  ptx::inline_calls(m);
  return m;
}

// Runs `body` on 64 threads of random 32-bit a, b (plus a few edge values) and compares.
void check(const std::string& body, const std::function<uint32_t(uint32_t, uint32_t, uint32_t)>& ref) {
  SCOPED_TRACE(body);
  auto m = int_kernel(body);
  const int n = 64;
  std::mt19937 g(17);
  std::vector<double> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = double(int32_t(g()));
    b[i] = double(int32_t(g()));
  }
  a[0] = 0; b[0] = -1; a[1] = -1; b[1] = 0; a[2] = 0x7f; b[2] = -128;  // edges
  Harness h;
  h.tensor("out", DType::I32, std::vector<double>(n, 0));
  h.tensor("a", DType::I32, a);
  h.tensor("b", DType::I32, b);
  h.launch.block = {uint32_t(n)};
  auto r = execute(h.ctx, m, "k", h.launch);
  ASSERT_FALSE(r.unsupported) << *r.unsupported;
  ASSERT_TRUE(r.findings.empty()) << to_text(h.ctx, r);
  auto c = run_concrete(h.ctx, m, "k", h.launch, h.input);
  ASSERT_FALSE(c.unsupported) << *c.unsupported;
  Resolver res(h.ctx, r);
  int32_t out = h.ids["out"];
  for (int i = 0; i < n; ++i) {
    double want = double(int32_t(ref(uint32_t(int32_t(a[i])), uint32_t(int32_t(b[i])), uint32_t(i))));
    EXPECT_EQ(symbolic_value(h, r, out, i, res), want) << "thread " << i;
    EXPECT_EQ(c.memory.tensors.at(out)[i], want) << "thread " << i;
  }
}

uint32_t lop3_ref(uint32_t a, uint32_t b, uint32_t c, uint8_t lut) {
  uint32_t r = 0;
  for (int bit = 0; bit < 32; ++bit) {
    unsigned idx = ((a >> bit & 1) << 2) | ((b >> bit & 1) << 1) | (c >> bit & 1);
    r |= uint32_t(lut >> idx & 1) << bit;
  }
  return r;
}

TEST(Lop3, Xor3) {
  check("lop3.b32 %r4, %r2, %r3, %r1, 0x96;", [](uint32_t a, uint32_t b, uint32_t t) { return a ^ b ^ t; });
}
TEST(Lop3, EveryTableAgainstTheMintermDefinition) {
  for (int lut : {0x00, 0xFF, 0xE8, 0xF8, 0x80, 0x01, 0x6A, 0x3C, 0xCA}) {
    uint32_t c = 0x0F0F1234;
    check(fmt::format("mov.u32 %r5, {};\nlop3.b32 %r4, %r2, %r3, %r5, {};", c, lut),
          [&](uint32_t a, uint32_t b, uint32_t) { return lop3_ref(a, b, c, uint8_t(lut)); });
  }
}
TEST(Lop3, NonConstantTableIsUnsupported) {
  auto m = int_kernel("lop3.b32 %r4, %r2, %r3, %r1, %r2;");
  Harness h;
  h.tensor("out", DType::I32, std::vector<double>(4, 0));
  h.tensor("a", DType::I32, std::vector<double>(4, 1));
  h.tensor("b", DType::I32, std::vector<double>(4, 2));
  h.launch.block = {4};
  auto r = execute(h.ctx, m, "k", h.launch);
  ASSERT_TRUE(r.unsupported);
  EXPECT_NE(r.unsupported->find("lop3"), std::string::npos) << *r.unsupported;
}

uint32_t prmt_ref(uint32_t a, uint32_t b, uint32_t sel) {
  uint64_t src = (uint64_t(b) << 32) | a;
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) {
    unsigned s = sel >> (4 * k) & 15;
    uint32_t byte = uint32_t(src >> (8 * (s & 7))) & 0xff;
    if (s & 8) byte = (byte & 0x80) ? 0xff : 0;
    r |= byte << (8 * k);
  }
  return r;
}

TEST(Prmt, DefaultModeSelectors) {
  for (uint32_t sel : {0x3210u, 0x0123u, 0x7654u, 0x5140u, 0x1032u, 0x8880u, 0xB3A1u, 0x4444u})
    check(fmt::format("prmt.b32 %r4, %r2, %r3, {};", sel), [&](uint32_t a, uint32_t b, uint32_t) { return prmt_ref(a, b, sel); });
}
TEST(Prmt, NamedModes) {
  // PTX ISA table: mode, selector c[1:0] -> source byte for d.b0..d.b3
  struct Case { const char* mode; uint32_t s; unsigned bytes[4]; };
  for (const Case& cs : {Case{"f4e", 1, {1, 2, 3, 4}}, Case{"b4e", 0, {0, 7, 6, 5}}, Case{"b4e", 3, {3, 2, 1, 0}},
                         Case{"rc8", 2, {2, 2, 2, 2}}, Case{"ecl", 1, {1, 1, 2, 3}}, Case{"ecr", 2, {0, 1, 2, 2}},
                         Case{"rc16", 1, {2, 3, 2, 3}}}) {
    uint32_t sel = cs.bytes[0] | cs.bytes[1] << 4 | cs.bytes[2] << 8 | cs.bytes[3] << 12;
    check(fmt::format("prmt.b32.{} %r4, %r2, %r3, {};", cs.mode, cs.s),
          [&](uint32_t a, uint32_t b, uint32_t) { return prmt_ref(a, b, sel); });
  }
}

uint32_t shf_ref(uint32_t a, uint32_t b, uint32_t n, bool left, bool clamp) {
  n = clamp ? std::min(n, 32u) : (n & 31);
  uint64_t cat = (uint64_t(b) << 32) | a;
  return left ? uint32_t((n == 0 ? cat : cat << n) >> 32) : uint32_t(cat >> n);
}

TEST(Shf, LeftWrap) {
  for (uint32_t n : {0u, 1u, 7u, 31u, 32u, 37u})
    check(fmt::format("shf.l.wrap.b32 %r4, %r2, %r3, {};", n),
          [&](uint32_t a, uint32_t b, uint32_t) { return shf_ref(a, b, n, true, false); });
}
TEST(Shf, RightClamp) {
  for (uint32_t n : {0u, 3u, 16u, 31u, 32u, 40u})
    check(fmt::format("shf.r.clamp.b32 %r4, %r2, %r3, {};", n),
          [&](uint32_t a, uint32_t b, uint32_t) { return shf_ref(a, b, n, false, true); });
}
TEST(Shf, RightWrapWithARegisterAmount) {
  // the amount is thread identity: tid & 63 covers wrap-around
  check("and.b32 %r5, %r1, 63;\nshf.r.wrap.b32 %r4, %r2, %r3, %r5;",
        [](uint32_t a, uint32_t b, uint32_t tid) { return shf_ref(a, b, tid & 63, false, false); });
}

}  // namespace
}  // namespace dirigo::exec::test
