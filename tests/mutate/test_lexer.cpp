#include <gtest/gtest.h>

#include "mutate/lexer.h"
#include "mutate/source_model.h"

namespace dirigo::mutate {
namespace {

std::string concat(std::string_view src) {
  std::string out;
  for (const auto& t : lex(src)) out += token_text(src, t);
  return out;
}

TEST(Lexer, RoundTripsByteForByte) {
  std::string src =
      "#include <cuda_fp16.h>\n#define N 256 \\\n  + 1\n// a + b comment\n__global__ void k(float* a) {\n"
      "  /* block\n comment */ a[0] = 1.5e-3f + 0x1Fu; const char* s = \"x + \\\" y\"; char c = '\\'';\n"
      "  k2<<<(n + 255) / 256, 256>>>(a); x >>= 2; \\\n}\n\t\r\n@$";
  EXPECT_EQ(concat(src), src);
}

TEST(Lexer, TokenKinds) {
  std::string src = "x = 1.0e+5f + .5 - 0x10; // c\n#pragma unroll\ns = \"a+b\";";
  auto toks = lex(src);
  std::vector<std::string> sig;
  for (const auto& t : toks)
    if (!t.trivia()) sig.emplace_back(token_text(src, t));
  EXPECT_EQ(sig, (std::vector<std::string>{"x", "=", "1.0e+5f", "+", ".5", "-", "0x10", ";", "s", "=", "\"a+b\"", ";"}));
  int preproc = 0, comments = 0;
  for (const auto& t : toks) {
    preproc += t.kind == TokKind::Preproc;
    comments += t.kind == TokKind::Comment;
  }
  EXPECT_EQ(preproc, 1);
  EXPECT_EQ(comments, 1);
}

TEST(Lexer, LaunchChevronsOnlyInsideLaunch) {
  std::string src = "k<<<g, b>>>(x); y = a >> 2; z = v<w<u>>> 1;";
  auto toks = lex(src);
  int launches = 0, shifts = 0;
  for (const auto& t : toks) {
    launches += token_text(src, t) == ">>>";
    shifts += token_text(src, t) == ">>";
  }
  EXPECT_EQ(launches, 1);
  EXPECT_EQ(shifts, 2);
}

TEST(Lexer, LineAndColumn) {
  std::string src = "a\n  bb + c";
  auto toks = lex(src);
  std::vector<std::pair<int, int>> pos;
  for (const auto& t : toks)
    if (!t.trivia()) pos.emplace_back(t.line, t.col);
  EXPECT_EQ(pos, (std::vector<std::pair<int, int>>{{1, 1}, {2, 3}, {2, 6}, {2, 8}}));
}

TEST(Lexer, RawStringAndUnterminated) {
  std::string src = "auto s = R\"(a \" + b)\"; const char* t = \"unterminated\n";
  EXPECT_EQ(concat(src), src);
  auto toks = lex(src);
  int strings = 0;
  for (const auto& t : toks) strings += t.kind == TokKind::String;
  EXPECT_EQ(strings, 2);
}

TEST(SourceModel, FunctionsAndDeviceScope) {
  SourceModel m(
      "template <typename T> __device__ T sq(T v) { return v * v; }\n"
      "__global__ void k(const float* __restrict__ x, float* y, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  for (int j = 0; j < n; ++j) { if (i < n) y[i] = static_cast<float>(x[i]); }\n}\n"
      "torch::Tensor f(torch::Tensor t) { k<<<(n + 255) / 256, 256>>>(a, b, n); return t; }\n");
  ASSERT_EQ(m.functions().size(), 3u);
  EXPECT_TRUE(m.functions()[0].is_device);
  EXPECT_TRUE(m.functions()[0].is_template);
  EXPECT_TRUE(m.functions()[1].is_global);
  EXPECT_EQ(m.functions()[1].name, "k");
  EXPECT_FALSE(m.functions()[2].device_code());
  ASSERT_EQ(m.for_loops().size(), 1u);
  ASSERT_EQ(m.ifs().size(), 1u);
  ASSERT_EQ(m.launches().size(), 1u);
  EXPECT_EQ(m.launches()[0].args.size(), 2u);
  EXPECT_EQ(m.text(m.launches()[0].name_tok), "k");
  // the `<` of static_cast<float> is a template bracket, the loop's `<` is not
  int casts = 0, cmps = 0;
  for (int i = 0; i < m.size(); ++i) {
    if (m.is(i, "<") && m.template_angle(i)) ++casts;
    if (m.is(i, "<") && !m.template_angle(i) && m.in_device(i)) ++cmps;
  }
  EXPECT_EQ(casts, 2);  // template <typename T> and static_cast<float>
  EXPECT_EQ(cmps, 2);
  const Decl* x = m.decl_of("x", 1, m.size());
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(x->pointer && x->param && x->is_const);
  EXPECT_EQ(x->type, "float");
}

TEST(SourceModel, UnbalancedInputDoesNotCrash) {
  for (std::string s : {"__global__ void k( {", "}}}{{", "for (;;", "a<<<b", "__global__ void k() { if (", ")))"}) {
    SourceModel m(s);
    EXPECT_EQ(m.source(), s);
  }
}

}  // namespace
}  // namespace dirigo::mutate
