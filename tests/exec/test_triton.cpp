// Triton's PTX: the idioms it emits (masked loads with `other` values moved in as bits, floats in
// untyped registers, -inf lanes of a softmax, stmatrix layout conversions) as small hand-written
// kernels, and whole kernels of examples/triton compiled by Triton 3.6 for sm_90
// (tests/exec/triton/*.ptx, tests/exec/triton/generate.py), checked element by element against a
// reference computed here.
#include <algorithm>
#include <cmath>

#include "exec/inffold.h"
#include "exec_test_util.h"
#include "ptx/matrix.h"

namespace dirigo::exec::test {
namespace {

using ir::Expr;

// kernel k(out, in [, extra params]); %rd3 = out + 4*tid, %rd4 = in + 4*tid, %r1 = tid.x
ptx::Module kernel(const std::string& body, const std::string& extra_params = "") {
  std::string text = std::string(".version 8.7\n.target sm_90a\n.address_size 64\n") +
                     ".visible .entry k(.param .u64 .ptr .global .align 1 k_out, .param .u64 .ptr .global .align 1 k_in" +
                     extra_params + ")\n{\n"
                     ".reg .pred %p<8>;\n.reg .b32 %r<40>;\n.reg .f32 %f<8>;\n.reg .b64 %rd<16>;\n"
                     ".shared .align 16 .b8 smem[1024];\n"
                     "ld.param.b64 %rd1, [k_out];\nld.param.b64 %rd2, [k_in];\n"
                     "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd5, %r1, 4;\nadd.s64 %rd3, %rd1, %rd5;\nadd.s64 %rd4, %rd2, %rd5;\n" +
                     body + "\nret;\n}\n";
  auto m = ptx::parse(text);
  ptx::inline_calls(m);
  return m;
}

struct Run {
  Harness h;
  ExecResult r;
};

std::unique_ptr<Run> run(const ptx::Module& m, uint32_t n, std::vector<double> in, std::vector<double> scalars_f = {}) {
  auto R = std::make_unique<Run>();
  R->h.tensor("out", DType::F32, std::vector<double>(n, 0));
  R->h.tensor("in", DType::F32, std::move(in));
  for (double v : scalars_f) R->h.scalar_f(v);
  R->h.launch.block = {n};
  R->r = execute(R->h.ctx, m, "k", R->h.launch);
  return R;
}

// every element of `out` after the launch, symbolically (inverted, evaluated) and, where the concrete
// interpreter runs it (no infinities), concretely, equals the reference
void check_outputs(Harness& h, const ptx::Module& m, const std::string& kernel, const std::string& out,
                   const std::vector<double>& reference, double tol, bool concrete = true) {
  auto r = execute(h.ctx, m, kernel, h.launch);
  ASSERT_FALSE(r.unsupported) << *r.unsupported;
  ASSERT_TRUE(r.findings.empty()) << to_text(h.ctx, r);
  int32_t t = h.ids.at(out);
  Resolver res(h.ctx, r);
  for (size_t i = 0; i < reference.size(); ++i) {
    double s = symbolic_value(h, r, t, int64_t(i), res);
    ASSERT_TRUE(close(s, reference[i], tol)) << kernel << " " << out << "[" << i << "]: symbolic " << s
                                             << " reference " << reference[i];
  }
  if (!concrete) return;
  auto c = run_concrete(h.ctx, m, kernel, h.launch, h.input);
  ASSERT_FALSE(c.unsupported) << *c.unsupported;
  const auto& conc = c.memory.tensors.at(t);
  for (size_t i = 0; i < reference.size(); ++i)
    ASSERT_TRUE(close(conc[i], reference[i], tol)) << kernel << " " << out << "[" << i << "]: concrete " << conc[i]
                                                   << " reference " << reference[i];
}

// ------------------------------------------------------------------ idioms

TEST(Triton, FloatParameterReadAsUntypedBits) {
  // Triton reads an fp32 argument with ld.param.b32 into a %r register and multiplies by it
  auto m = kernel("ld.param.b32 %r2, [k_s];\nld.global.b32 %r3, [%rd4];\nmul.f32 %r4, %r3, %r2;\nst.global.b32 [%rd3], %r4;",
                  ", .param .u32 k_s");
  std::vector<double> in = random_vec(32, 1);
  auto R = run(m, 32, in, {2.5});
  ASSERT_FALSE(R->r.unsupported) << *R->r.unsupported;
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[size_t(i)] = in[size_t(i)] * 2.5;
  check_outputs(R->h, m, "k", "out", ref, 1e-12);
}

TEST(Triton, MaskedLoadOtherValueIsAFloatAcrossAShuffle) {
  // lanes 0-15 load, lanes 16-31 keep `other` = 0.0 moved in as integer bits; the butterfly adds
  // each lane's value to its partner's: a float on one side, the skipped load's bits on the other
  auto m = kernel("setp.lt.u32 %p1, %r1, 16;\nmov.b32 %r2, 0;\nmov.u32 %r3, %r2;\n@%p1 ld.global.b32 { %r3 }, [ %rd4 + 0 ];\n"
                  "shfl.sync.bfly.b32 %r4, %r3, 16, 31, -1;\nadd.f32 %r5, %r3, %r4;\nst.global.b32 [%rd3], %r5;");
  std::vector<double> in = random_vec(32, 2);
  auto R = run(m, 32, in);
  ASSERT_FALSE(R->r.unsupported) << *R->r.unsupported;
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[size_t(i)] = i < 16 ? in[size_t(i)] : in[size_t(i - 16)];
  check_outputs(R->h, m, "k", "out", ref, 1e-12);
}

TEST(Triton, DataGuardedMaskedLoadMergesWithTheOtherValueAsAFloat) {
  // the guard depends on data: ite(x > 0, x, 1.0), the 1.0 given as bits 0x3f800000
  auto m = kernel("ld.global.b32 %r2, [%rd4];\nsetp.gt.f32 %p1, %r2, 0f00000000;\nmov.b32 %r3, 1065353216;\n"
                  "@%p1 ld.global.b32 { %r3 }, [ %rd4 + 0 ];\nadd.f32 %r4, %r3, 0f3F800000;\nst.global.b32 [%rd3], %r4;");
  std::vector<double> in = random_vec(32, 3);
  auto R = run(m, 32, in);
  ASSERT_FALSE(R->r.unsupported) << *R->r.unsupported;
  std::vector<double> ref(32);
  for (int i = 0; i < 32; ++i) ref[size_t(i)] = (in[size_t(i)] > 0 ? in[size_t(i)] : 1.0) + 1.0;
  check_outputs(R->h, m, "k", "out", ref, 1e-12);
}

TEST(Triton, MinusInfinityLanesExponentiateToZero) {
  // a softmax's masked lane: (-inf - m) * log2(e), then ex2: 0; added to x it leaves x
  auto m = kernel("ld.global.b32 %r2, [%rd4];\nmov.b32 %r3, -8388608;\nsub.f32 %r4, %r3, %r2;\n"
                  "mul.f32 %r5, %r4, 0f3FB8AA3B;\nex2.approx.f32 %r6, %r5;\nadd.f32 %r7, %r6, %r2;\nst.global.b32 [%rd3], %r7;");
  std::vector<double> in = random_vec(32, 4);
  auto R = run(m, 32, in);
  ASSERT_FALSE(R->r.unsupported) << *R->r.unsupported;
  check_outputs(R->h, m, "k", "out", in, 1e-12, /*concrete=*/false);
}

TEST(Triton, InfinityArithmeticThatNeedsTheOperandsSignIsUnsupported) {
  for (const char* op : {"sub.f32 %r4, %r3, %r3;", "mul.f32 %r4, %r3, %r2;"}) {  // inf - inf; -inf * x
    auto m = kernel(std::string("ld.global.b32 %r2, [%rd4];\nmov.b32 %r3, -8388608;\n") + op + "\nst.global.b32 [%rd3], %r4;");
    auto R = run(m, 32, random_vec(32, 5));
    ASSERT_TRUE(R->r.unsupported) << op;
    EXPECT_NE(R->r.unsupported->find("arithmetic on an infinite value"), std::string::npos) << *R->r.unsupported;
  }
}

TEST(Triton, FoldInfinitiesAfterSpecialization) {
  ir::Context ctx;
  Expr ninf = ctx.var("-inf", ir::Sort::Real), pinf = ctx.var("+inf", ir::Sort::Real);
  int32_t t = ctx.tensor("x");
  Expr x = ctx.elem(t, 0, ir::Sort::Real), y = ctx.elem(t, 1, ir::Sort::Real);
  EXPECT_EQ(fold_infinities(ctx, ctx.max(x, ninf)), x);
  EXPECT_EQ(fold_infinities(ctx, ctx.min(x, pinf)), x);
  EXPECT_EQ(fold_infinities(ctx, ctx.max(x, pinf)), pinf);
  // x + exp2(1.4427 * (-inf - y)) = x
  Expr e = ctx.add(x, ctx.call(ir::Fn::Exp2, ctx.mul(ctx.real_const_from_double(1.4426950216293335),
                                                       ctx.sub(ninf, y))));
  EXPECT_EQ(fold_infinities(ctx, e), x);
  EXPECT_EQ(fold_infinities(ctx, ctx.lt(ninf, x)), ctx.bool_const(true));
  EXPECT_EQ(fold_infinities(ctx, ctx.le(x, ninf)), ctx.bool_const(false));
  // what needs a sign or is NaN stays: inf - inf, inf * x
  Expr nan = ctx.add(pinf, ninf), unknown = ctx.mul(ninf, x);
  EXPECT_EQ(fold_infinities(ctx, nan), nan);
  EXPECT_EQ(fold_infinities(ctx, unknown), unknown);
  EXPECT_EQ(fold_infinities(ctx, ctx.add(x, y)), ctx.add(x, y));
}

// stmatrix .x2: lane t's register j goes to row t/4 of matrix j, at the row address lane 8j + t/4 holds,
// word t%4. Each lane names row (lane%8) of matrix (lane/8) at smem + 128·(lane/8) + 16·(lane%8).
constexpr const char* kStmatrix =
    "ld.global.b32 %r2, [%rd4];\nadd.f32 %r3, %r2, 0f3F800000;\n"
    "mov.u32 %r10, smem;\nshr.u32 %r11, %r1, 3;\nand.b32 %r12, %r1, 7;\nshl.b32 %r13, %r11, 7;\nshl.b32 %r14, %r12, 4;\n"
    "add.s32 %r15, %r10, %r13;\nadd.s32 %r16, %r15, %r14;\n"
    "stmatrix.sync.aligned.m8n8.x2.shared.b16 [%r16], {%r2, %r3};\nbar.sync 0;\n"
    "shl.b32 %r17, %r1, 2;\nadd.s32 %r18, %r10, %r17;\nld.shared.b32 %r19, [%r18];\nld.shared.b32 %r20, [%r18+128];\n"
    "add.f32 %r21, %r19, %r20;\nst.global.b32 [%rd3], %r21;";

double stmatrix_reference(const std::vector<double>& in, int w) {
  // word w of the 256-byte buffer (matrix w/32, row (w%32)/4, word w%4) came from lane 4·row + word, register matrix
  auto word = [&](int k) {
    int j = k / 32, row = (k % 32) / 4, col = k % 4;
    double x = in[size_t(4 * row + col)];
    return j == 0 ? x : x + 1.0;
  };
  return word(w) + word(w + 32);
}

TEST(Triton, StmatrixBecomesShufflesAndSharedStores) {
  auto m = kernel(kStmatrix);
  std::vector<double> in = random_vec(32, 6);
  auto R = run(m, 32, in);
  ASSERT_FALSE(R->r.unsupported) << *R->r.unsupported;
  std::vector<double> ref(32);
  for (int t = 0; t < 32; ++t) ref[size_t(t)] = stmatrix_reference(in, t);
  check_outputs(R->h, m, "k", "out", ref, 1e-12);
}

TEST(Triton, StmatrixLoweringKeepsLabelsAndSourceLines) {
  auto m = kernel(std::string("bra $L1;\n$L1:\n") + kStmatrix);
  ptx::Function f = *m.find_function("k");
  size_t at = 0;
  while (f.body[at].op != ptx::Opcode::Stmatrix) ++at;
  int line = f.body[at].loc.ptx_line;
  size_t label = f.labels.at("$L1"), n = f.body.size();
  ASSERT_EQ(ptx::lower_matrix_moves(f), 1);
  EXPECT_EQ(f.labels.at("$L1"), label);  // before the rewritten instruction: unchanged
  EXPECT_EQ(f.body.size(), n - 1 + 4 + 2 * 4);  // laneid arithmetic, then per matrix add/shfl/add/st
  size_t shuffles = 0;
  for (size_t i = at; i < at + 12; ++i) {
    EXPECT_EQ(f.body[i].loc.ptx_line, line);
    shuffles += f.body[i].op == ptx::Opcode::Shfl;
  }
  EXPECT_EQ(shuffles, 2u);
  EXPECT_EQ(f.body[at + 12].op, ptx::Opcode::Bar);
  for (const auto& in : f.body) EXPECT_NE(in.op, ptx::Opcode::Stmatrix);
}

TEST(Triton, LdmatrixIsTheInverseLoad) {
  // lane t stores x[t] at word t; ldmatrix .x1 gives lane t word t%4 of row t/4 at the address lane t/4
  // names (smem + 16·lane): word 4·(t/4) + t%4 = t, so every lane reads back its own value
  auto m = kernel("ld.global.b32 %r2, [%rd4];\nmov.u32 %r10, smem;\nshl.b32 %r11, %r1, 2;\nadd.s32 %r12, %r10, %r11;\n"
                  "st.shared.b32 [%r12], %r2;\nbar.sync 0;\nshl.b32 %r13, %r1, 4;\nadd.s32 %r14, %r10, %r13;\n"
                  "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r15}, [%r14];\nst.global.b32 [%rd3], %r15;");
  std::vector<double> in = random_vec(32, 7);
  auto R = run(m, 32, in);
  ASSERT_FALSE(R->r.unsupported) << *R->r.unsupported;
  check_outputs(R->h, m, "k", "out", in, 1e-12);
}

TEST(Triton, TransposingStmatrixStaysUnsupported) {
  std::string body = kStmatrix;
  body.replace(body.find("x2.shared"), 9, "x2.trans.shared");
  auto R = run(kernel(body), 32, random_vec(32, 8));
  ASSERT_TRUE(R->r.unsupported);
  EXPECT_NE(R->r.unsupported->find("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16"), std::string::npos)
      << *R->r.unsupported;
}

// ------------------------------------------------------------------ whole kernels

std::shared_ptr<ptx::Module> triton_module(const std::string& name) {
  auto m = std::make_shared<ptx::Module>(ptx::parse_file(std::string(DIRIGO_TRITON_PTX_DIR) + "/" + name + ".ptx"));
  ptx::inline_calls(*m);
  return m;
}

void scratch(Harness& h) {  // Triton's global and profile scratch pointers: null
  h.scalar(0);
  h.scalar(0);
}

TEST(TritonKernel, ElementwiseSwishScaleClamp) {
  auto m = triton_module("elementwise");
  Harness h;
  const int n = 350;
  auto x = random_vec(n, 11, -3, 3);
  h.tensor("x", DType::F32, x);
  h.tensor("out", DType::F32, std::vector<double>(n, 0));
  h.scalar(n);
  h.scalar_f(2.0);
  scratch(h);
  h.launch.grid = {3};
  h.launch.block = {128};
  std::vector<double> ref(n);
  for (int i = 0; i < n; ++i) {
    double v = x[size_t(i)] / (1 + std::exp(-x[size_t(i)])) * 2.0;
    ref[size_t(i)] = std::min(std::max(v, -1.0), 1.0);
  }
  check_outputs(h, *m, "swish_scale_clamp", "out", ref, 1e-6);
}

TEST(TritonKernel, ElementwiseWithVectorizedAccesses) {
  // pointers 16-byte aligned and n a multiple of 16: Triton loads and stores four floats at a time
  auto m = triton_module("elementwise_v4");
  Harness h;
  const int n = 2048;
  auto x = random_vec(n, 20, -3, 3);
  h.tensor("x", DType::F32, x);
  h.tensor("out", DType::F32, std::vector<double>(n, 0));
  h.scalar(n);
  h.scalar_f(2.0);
  scratch(h);
  h.launch.grid = {2};
  h.launch.block = {128};
  std::vector<double> ref(n);
  for (int i = 0; i < n; ++i) {
    double v = x[size_t(i)] / (1 + std::exp(-x[size_t(i)])) * 2.0;
    ref[size_t(i)] = std::min(std::max(v, -1.0), 1.0);
  }
  check_outputs(h, *m, "swish_scale_clamp", "out", ref, 1e-6);
}

TEST(TritonKernel, SoftmaxWithMinusInfinityPadding) {
  auto m = triton_module("softmax");
  Harness h;
  const int rows = 8, cols = 48;
  auto x = random_vec(rows * cols, 12, -4, 4);
  h.tensor("out", DType::F32, std::vector<double>(rows * cols, 0));
  h.tensor("in", DType::F32, x);
  h.scalar(cols);
  h.scalar(cols);
  h.scalar(cols);
  scratch(h);
  h.launch.grid = {rows};
  h.launch.block = {128};
  h.launch.dynamic_shared_bytes = 8;  // the compiled kernel's metadata.shared
  std::vector<double> ref(rows * cols);
  for (int r = 0; r < rows; ++r) {
    double mx = -INFINITY, s = 0;
    for (int c = 0; c < cols; ++c) mx = std::max(mx, x[size_t(r * cols + c)]);
    for (int c = 0; c < cols; ++c) s += std::exp(x[size_t(r * cols + c)] - mx);
    for (int c = 0; c < cols; ++c) ref[size_t(r * cols + c)] = std::exp(x[size_t(r * cols + c)] - mx) / s;
  }
  check_outputs(h, *m, "softmax_kernel", "out", ref, 1e-6, /*concrete=*/false);
}

TEST(TritonKernel, LayerNormTwoPass) {
  auto m = triton_module("layernorm");
  Harness h;
  const int rows = 4, n = 48;
  auto x = random_vec(rows * n, 13), w = random_vec(n, 14), b = random_vec(n, 15);
  h.tensor("x", DType::F32, x);
  h.tensor("w", DType::F32, w);
  h.tensor("b", DType::F32, b);
  h.tensor("y", DType::F32, std::vector<double>(rows * n, 0));
  h.scalar(n);
  h.scalar_f(1e-5);
  scratch(h);
  h.launch.grid = {rows};
  h.launch.block = {64};
  h.launch.dynamic_shared_bytes = 8;  // the compiled kernel's metadata.shared
  std::vector<double> ref(rows * n);
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < n; ++c) mean += x[size_t(r * n + c)] / n;
    for (int c = 0; c < n; ++c) var += (x[size_t(r * n + c)] - mean) * (x[size_t(r * n + c)] - mean) / n;
    for (int c = 0; c < n; ++c)
      ref[size_t(r * n + c)] = (x[size_t(r * n + c)] - mean) / std::sqrt(var + 1e-5) * w[size_t(c)] + b[size_t(c)];
  }
  check_outputs(h, *m, "layernorm_kernel", "y", ref, 1e-5);
}

TEST(TritonKernel, SumOverTheMiddleAxis) {
  auto m = triton_module("rowsum");
  Harness h;
  const int B = 4, R = 12, C = 10;
  auto x = random_vec(B * R * C, 16);
  h.tensor("x", DType::F32, x);
  h.tensor("out", DType::F32, std::vector<double>(B * C, 0));
  h.scalar(R);
  h.scalar(C);
  scratch(h);
  h.launch.grid = {uint32_t(B), uint32_t(C)};
  h.launch.block = {32};
  std::vector<double> ref(B * C, 0);
  for (int b = 0; b < B; ++b)
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) ref[size_t(b * C + c)] += x[size_t((b * R + r) * C + c)];
  check_outputs(h, *m, "sum_dim1", "out", ref, 1e-9);
}

TEST(TritonKernel, GemmWithBiasAndReluThroughStmatrix) {
  auto m = triton_module("gemm_epilogue");
  Harness h;
  const int M = 40, N = 20, K = 24;
  auto a = random_vec(M * K, 17), w = random_vec(N * K, 18), bias = random_vec(N, 19);
  h.tensor("a", DType::F32, a);
  h.tensor("w", DType::F32, w);
  h.tensor("bias", DType::F32, bias);
  h.tensor("c", DType::F32, std::vector<double>(M * N, 0));
  for (int v : {M, N, K, K, 1, K, 1, N, 1}) h.scalar(v);  // M N K, a strides, w strides (n, k), c strides
  scratch(h);
  h.launch.grid = {3, 2};
  h.launch.block = {128};
  h.launch.dynamic_shared_bytes = 2048;  // the compiled kernel's metadata.shared
  std::vector<double> ref(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = bias[size_t(j)];
      for (int k = 0; k < K; ++k) s += a[size_t(i * K + k)] * w[size_t(j * K + k)];
      ref[size_t(i * N + j)] = std::max(s, 0.0);
    }
  check_outputs(h, *m, "gemm_bias_relu", "c", ref, 1e-9);
}

ExecResult run_refused(const std::string& name, const std::string& kernel, int ntensors, int nscalars, Dim3 grid) {
  auto m = triton_module(name);
  Harness h;
  for (int i = 0; i < ntensors; ++i) h.tensor("t" + std::to_string(i), DType::F32, std::vector<double>(4096, 0));
  for (int i = 0; i < nscalars; ++i) h.scalar(16);
  scratch(h);
  h.launch.grid = grid;
  h.launch.block = {128};
  return execute(h.ctx, *m, kernel, h.launch);
}

TEST(TritonKernel, PipelinedLoadsAreRefusedNamingCpAsync) {
  auto r = run_refused("gemm_pipelined", "gemm_bias_relu", 4, 9, {1});
  ASSERT_TRUE(r.unsupported);
  EXPECT_NE(r.unsupported->find("'cp.async.ca.shared.global'"), std::string::npos) << *r.unsupported;
}

TEST(TritonKernel, Tf32DotIsRefusedNamingWgmma) {
  auto r = run_refused("dot_tf32", "dot_tf32", 3, 0, {1});
  ASSERT_TRUE(r.unsupported);
  EXPECT_NE(r.unsupported->find("'wgmma."), std::string::npos) << *r.unsupported;
}

}  // namespace
}  // namespace dirigo::exec::test
