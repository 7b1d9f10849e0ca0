// Kernel-written elements in the numeric path (check/kernel_numeric.h): evaluated under their
// writers' threads, they equal the built (specialized, resolved, back-projected) expression evaluated
// by ir::Evaluator at the same points, on kernels compiled from tests/check/cuda/numeric_kernels.cu:
// a block reduction through shared memory with a per-thread loop, and a guarded per-thread loop.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../program/builder.h"
#include "check/check.h"
#include "check/lower.h"
#include "check/numeric.h"
#include "ir/eval.h"
#include "ir/limits.h"
#include "ir/print.h"
#include "ir/reduce.h"
#include "program/merge.h"
#include "smt/falsify.h"

using namespace dirigo;
using namespace dirigo::program::testing;

namespace {

std::string kernels_ptx() {
  std::ifstream f(std::string(DIRIGO_CHECK_PTX_DIR) + "/numeric_kernels.ptx");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

#define NEED_PTX(ptx)                                                     \
  if ((ptx).empty()) GTEST_SKIP() << "no PTX (nvcc absent at build time)"

bundle::LaunchOp& launch_op(bundle::Bundle& b, size_t program, size_t op) {
  return std::get<bundle::LaunchOp>(b.programs[program].ops[op]);
}

// x[rows, cols] -> out[rows]: sum over dim 1 (reference) / row_sum, one block of `threads` per row.
bundle::Bundle row_sum_bundle(const std::string& ptx, int64_t rows, int64_t cols, int64_t threads,
                              const std::string& kernel = "row_sum") {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  auto rx = ref.tensor({rows, cols}), ro = ref.tensor({rows});
  ref.input("x", rx);
  ref.aten("aten::sum", {T(rx), Ints({1}), J{{"scalar", false}, {"type", "bool"}}, None()}, {ro});
  ref.output("out0", ro);
  auto cx = cand.tensor({rows, cols}), co = cand.tensor({rows});
  cand.input("x", cx);
  cand.launch(kernel, {T(cx), T(co), I(rows, "s32"), I(cols, "s32")});
  cand.output("out0", co);
  bundle::Bundle b = make_bundle({&ref, &cand}, nullptr, ptx);
  std::get<bundle::AtenOp>(b.programs[0].ops[0]).overload = "dim_IntList";
  auto& l = launch_op(b, 1, 0);
  l.grid = {rows, 1, 1};
  l.block = {threads, 1, 1};
  return b;
}

// x (shape), w[taps] -> out (shape) by `kernel`(x, w, out, ints...) on grid x block; the reference is
// relu(x), another function of the same shape (w matched, unused): only the candidate's values are
// compared here.
bundle::Bundle taps_bundle(const std::string& ptx, const std::string& kernel, const std::vector<int64_t>& shape,
                           int64_t taps, const std::vector<int64_t>& ints, std::array<int64_t, 3> grid,
                           std::array<int64_t, 3> block) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  auto rx = ref.tensor(shape), rw = ref.tensor({taps}), ro = ref.tensor(shape);
  ref.input("x", rx);
  ref.input("w", rw, "parameter");
  ref.aten("aten::relu", {T(rx)}, {ro});
  ref.output("out0", ro);
  auto cx = cand.tensor(shape), cw = cand.tensor({taps}), co = cand.tensor(shape);
  cand.input("x", cx);
  cand.input("w", cw, "parameter");
  std::vector<J> args = {T(cx), T(cw), T(co)};
  for (int64_t v : ints) args.push_back(I(v, "s32"));
  cand.launch(kernel, args);
  cand.output("out0", co);
  bundle::Bundle b = make_bundle({&ref, &cand}, nullptr, ptx);
  auto& l = launch_op(b, 1, 0);
  l.grid = {grid[0], grid[1], grid[2]};
  l.block = {block[0], block[1], block[2]};
  return b;
}

// x[n], w[k] -> out[n]: relu of a zero-padded same-size convolution.
bundle::Bundle conv1d_bundle(const std::string& ptx, int64_t n, int64_t k) {
  return taps_bundle(ptx, "conv1d_relu", {n}, k, {n, k}, {(n + 31) / 32, 1, 1}, {32, 1, 1});
}

// x[N,C,H,W] -> sigmoid(conv2d 3x3 valid, bias) -> mean over (C', OH, OW): the reference in ATen, the
// candidate's convolution one thread per output (conv3x3_sigmoid) and the mean in ATen over what the
// kernel wrote. The mean's body reads the kernel's output at a symbolic index: the writing thread is
// solved from it (Lowering::kernel_read_symbolic), so the candidate's location is one reduction over
// the kernel's stored value, not one built value per thread.
// `sum`: the reduction is the candidate's second kernel instead (row_sum over [n, k*oh*oh]: a strided
// per-thread loop summarized into a reduction whose body reads the first kernel's output).
bundle::Bundle conv_mean_bundle(const std::string& ptx, int64_t n, int64_t c, int64_t k, int64_t h, bool sum = false) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  const int64_t oh = h - 2;
  auto drop = J{{"scalar", false}, {"type", "bool"}};
  for (ProgramBuilder* p : {&ref, &cand}) {
    auto x = p->tensor({n, c, h, h}), w = p->tensor({k, c, 3, 3}), b = p->tensor({k});
    auto y = p->tensor({n, k, oh, oh}), m = p->tensor({n});
    p->input("x", x);
    p->input("conv.weight", w, "parameter");
    p->input("conv.bias", b, "parameter");
    if (p == &ref) {
      auto cv = p->tensor({n, k, oh, oh});
      p->aten("aten::convolution", {T(x), T(w), T(b), Ints({1, 1}), Ints({0, 0}), Ints({1, 1}), drop, Ints({0, 0}),
                                    I(1)},
              {cv});
      p->aten("aten::sigmoid", {T(cv)}, {y});
    } else {
      p->launch("conv3x3_sigmoid", {T(x), T(w), T(b), T(y), I(n, "s32"), I(c, "s32"), I(k, "s32"), I(h, "s32"), I(h, "s32")});
    }
    if (p == &cand && sum)
      p->launch("row_sum", {T(y), T(m), I(n, "s32"), I(k * oh * oh, "s32")});
    else if (sum)
      p->aten("aten::sum", {T(y), Ints({1, 2, 3}), drop, None()}, {m}, {}, J::object(), "dim_IntList");
    else
      p->aten("aten::mean", {T(y), Ints({1, 2, 3}), drop}, {m}, {}, J::object(), "dim");
    p->output("out0", m);
  }
  bundle::Bundle b = make_bundle({&ref, &cand}, nullptr, ptx);
  auto& l = launch_op(b, 1, 0);
  l.grid = {(n * k * oh * oh + 127) / 128, 1, 1};
  l.block = {128, 1, 1};
  if (sum) {
    auto& r = launch_op(b, 1, 1);
    r.grid = {n, 1, 1};
    r.block = {256, 1, 1};
  }
  return b;
}

struct Candidate {
  program::Merged m;
  ir::Context ctx;
  check::Lowering low;
  explicit Candidate(const bundle::Bundle& b) : m(program::merge(b, {false, false})), low(ctx, b, m, false, {}) {
    low.execute_all();
  }
  const program::View& out() const { return m.outputs[0].cand; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : out().shape) n *= s;
    return n;
  }
};

// Every location of the candidate's output, at a point in fp64 and fp32 together (the check's
// lanes): the thread-environment values against the built expression evaluated by ir::Evaluator
// (fp64 up to summation order, fp32 up to rounding in another order), against the old template path
// (fp64) and, tape against ir::Evaluator on the record values, the same numbers bit for bit.
void expect_kernel_values_match(const bundle::Bundle& b) {
  Candidate c(b);
  const uint64_t seed = 7;
  const unsigned point = 2;
  check::NumericOptions o{.seed = seed, .points = {point, point}, .bound = 10};
  o.precisions = {ir::Precision::F64, ir::Precision::F32};
  check::NumericOptions by_evaluator = o, by_template = o;
  by_evaluator.kernel_tape = false;
  by_template.kernel_threads = false;
  check::NumericEvaluator fast(c.low, o), slow(c.low, by_evaluator), old(c.low, by_template);
  ir::Env env;
  env.elem = [&](int32_t t, int64_t i, ir::Sort s) {
    return smt::draw(seed, point, smt::name_key(c.ctx.tensor_name(t)), i, s, 10);
  };
  for (int64_t flat = 0; flat < c.numel(); ++flat) {
    ir::Expr e = c.low.element(c.out(), flat);
    double want = ir::Evaluator(env, ir::Precision::F64)(e).real;
    double want32 = ir::Evaluator(env, ir::Precision::F32)(e).real;
    std::vector<double> v = fast.element(c.out(), flat), s = slow.element(c.out(), flat);
    EXPECT_NEAR(v[0], want, 1e-9 * (1 + std::fabs(want))) << "location " << flat;
    EXPECT_NEAR(v[1], want32, 1e-6 * (1 + std::fabs(want32))) << "location " << flat;
    EXPECT_EQ(v[0], s[0]) << "location " << flat;
    EXPECT_EQ(v[1], s[1]) << "location " << flat;
    EXPECT_NEAR(v[0], old.element(c.out(), flat)[0], 1e-9 * (1 + std::fabs(want))) << "location " << flat;
  }
  EXPECT_EQ(fast.stats().kernel_elements, uint64_t(c.numel()));
  EXPECT_EQ(old.stats().kernel_elements, 0u);
  EXPECT_GT(old.stats().template_nodes, 0u);
}

}  // namespace

TEST(KernelNumeric, BlockReductionThroughSharedMemoryMatchesBuiltExpression) {
  std::string ptx = kernels_ptx();
  NEED_PTX(ptx);
  bundle::Bundle b = row_sum_bundle(ptx, 3, 200, 64);  // 64 threads, 3-4 columns each, 6 tree levels
  expect_kernel_values_match(b);
  Candidate c(b);
  check::NumericEvaluator n(c.low, {.seed = 1, .points = {0}, .bound = 10});
  n.element(c.out(), 1);
  // one row: 64 per-thread partial sums, then 32 + 16 + ... + 1 tree cells read by the next level
  EXPECT_GE(n.stats().kernel_cells, 64u + 63u);
  EXPECT_EQ(n.stats().kernel_elements, 1u);
}

TEST(KernelNumeric, GuardedPerThreadLoopMatchesBuiltExpression) {
  std::string ptx = kernels_ptx();
  NEED_PTX(ptx);
  // 41 taps: threads near either edge split on 40 guards, past 32 bundles the branches are if-converted
  // (exec::ExecOptions::ifconvert_thread_after): the record values hold ites on thread predicates.
  expect_kernel_values_match(conv1d_bundle(ptx, 100, 41));
}

// The old path specialized and resolved each element's writer in the lowering's context: a row of
// 16384 columns is 16384 leaves and their sums per element. Under its node limit it cannot build one;
// the thread-environment evaluation builds no node there at all.
TEST(KernelNumeric, LargeReductionNeedsNoNodesInTheLoweringContext) {
  std::string ptx = kernels_ptx();
  NEED_PTX(ptx);
  Candidate c(row_sum_bundle(ptx, 2, 16384, 256));
  ir::set_limits(c.ctx, {c.ctx.num_nodes() + 2000});
  check::NumericOptions o{.seed = 3, .points = {1, 1}, .bound = 10};
  o.precisions = {ir::Precision::F64, ir::Precision::F32};
  check::NumericEvaluator fast(c.low, o);
  std::vector<double> v = fast.element(c.out(), 1);
  double want = 0;  // the row's draws, summed
  for (int64_t col = 0; col < 16384; ++col)
    want += smt::draw(3, 1, smt::name_key("in:x"), 16384 + col, ir::Sort::Real, 10).real;
  EXPECT_NEAR(v[0], want, 1e-9 * (1 + std::fabs(want)));
  EXPECT_NEAR(v[1], want, 1e-3 * (1 + std::fabs(want)));  // fp32: rounded sums of 16384 terms
  o.kernel_threads = false;
  check::NumericEvaluator old(c.low, o);
  EXPECT_THROW(old.element(c.out(), 1), ir::LimitExceeded);
}

// The check end to end on a kernel-written output too large to build (a tiny build_nodes): the
// right kernel is never a BUG, a kernel summing the wrong rows is one, found numerically.
TEST(KernelNumeric, CheckDecidesKernelOutputsNumerically) {
  std::string ptx = kernels_ptx();
  NEED_PTX(ptx);
  check::Options opt;
  opt.budget_s = 60;
  opt.trim_prefix = false;
  opt.build_nodes = 50;
  opt.seed = 3;
  bundle::Bundle good = row_sum_bundle(ptx, 3, 200, 64);
  check::Report r = check::check_bundle(good, opt);
  EXPECT_NE(r.outcome, check::Outcome::Bug) << r.reason;
  ASSERT_FALSE(r.locations.empty());
  EXPECT_NE(r.locations[0].reason.find("none differs"), std::string::npos) << r.locations[0].reason;
  bundle::Bundle bad = row_sum_bundle(ptx, 3, 200, 64);
  launch_op(bad, 1, 0).args[3].value = bundle::Scalar{bundle::ScalarType::S32, 100};  // cols 100: other rows
  check::Report rb = check::check_bundle(bad, opt);
  ASSERT_EQ(rb.outcome, check::Outcome::Bug) << rb.reason;
  const check::LocationResult& l = rb.locations[*rb.first_differ];
  EXPECT_EQ(l.stage, smt::Stage::Sampling);
  EXPECT_NE(l.reason.find("evaluated numerically"), std::string::npos) << l.reason;
}

// A block-stride loop per thread and a shared-memory tree: Execute summarizes each thread's loop, check
// merges the 256 interleaved partials into one sum over the row (ir::merge_interleaved), equal to the
// reference's Σ_{k<cols} x[r, k] with no expansion. 16384 columns: 64 trips for every thread; 16000:
// 62 for every thread and a 63rd for threads 0-127, absorbed into the merged range. The same with the
// partials combined by warp shuffles and a second level through shared memory. A kernel told a row
// length one short is a BUG, and so is a tree that drops its last level.
TEST(KernelNumeric, BlockStrideRowSumIsVerifiedAsOneReduction) {
  std::string ptx = kernels_ptx();
  NEED_PTX(ptx);
  check::Options opt;
  opt.budget_s = 60;
  opt.trim_prefix = false;
  opt.full = true;
  for (int64_t cols : {16384, 16000}) {
    bundle::Bundle b = row_sum_bundle(ptx, 2, cols, 256);
    check::Report r = check::check_bundle(b, opt);
    EXPECT_EQ(r.outcome, check::Outcome::Verified) << cols << ": " << r.reason;
    ASSERT_FALSE(r.locations.empty());
    EXPECT_NE(r.locations[0].reason.find("the same reduction nodes on both sides"), std::string::npos) << r.locations[0].reason;
  }
  // the partials combined by warp shuffles and a second level through shared memory
  for (int64_t cols : {16384, 16000}) {
    check::Report r = check::check_bundle(row_sum_bundle(ptx, 2, cols, 256, "row_sum_shfl"), opt);
    EXPECT_EQ(r.outcome, check::Outcome::Verified) << "shuffles, " << cols << ": " << r.reason;
  }
  bundle::Bundle bad = row_sum_bundle(ptx, 2, 16000, 256);
  launch_op(bad, 1, 0).args[3].value = bundle::Scalar{bundle::ScalarType::S32, 15999};
  opt.full = false;
  check::Report rb = check::check_bundle(bad, opt);
  EXPECT_EQ(rb.outcome, check::Outcome::Bug) << rb.reason;
  // the tree's last level dropped: the even threads' partials merge into Σ_{j<8192} x[r, 2j], a BUG at once
  auto t0 = std::chrono::steady_clock::now();
  check::Report rs = check::check_bundle(row_sum_bundle(ptx, 2, 16384, 256, "row_sum_short_tree"), opt);
  EXPECT_EQ(rs.outcome, check::Outcome::Bug) << rs.reason;
  ASSERT_TRUE(rs.first_differ);
  EXPECT_EQ(rs.locations[*rs.first_differ].cand_expr, "Σ_{k0<8192} (in:x[2*k0])");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(KernelIntermediates, AMeanOverAPerThreadConvolutionIsOneReduction) {
  const std::string ptx = kernels_ptx();
  NEED_PTX(ptx);
  bundle::Bundle b = conv_mean_bundle(ptx, 2, 8, 4, 18);  // 1024 sigmoids of 72 products per location
  {
    Candidate c(b);
    std::vector<ir::Expr> at = {c.ctx.var("loc.0", ir::Sort::BV64, ir::Bounds{0, 1})};
    std::string why;
    ir::Expr sym = c.low.element_symbolic(c.out(), at, &why);
    ASSERT_TRUE(sym) << why;
    EXPECT_TRUE(ir::contains_reduce(sym));
    EXPECT_LT(ir::dag_size(sym), 2000u) << ir::to_string(c.ctx, sym);  // expanded: 1024 sigmoids of 72 products
  }
  check::Options opt;
  opt.budget_s = 60;
  check::Report r = check::check_bundle(b, opt);
  EXPECT_EQ(r.outcome, check::Outcome::Verified) << r.reason;
  EXPECT_TRUE(r.outputs.at(0).symbolic) << r.outputs[0].symbolic_how;
}

// The same convolution summed by a second kernel: one block per sample, each thread's strided loop over
// the first kernel's 7200 outputs summarized, the block's tree merging the partials (Execute, the check's
// merge). Each summary reads the intermediate at its bound index: the first kernel's stored value with
// its thread solved from that index, so a location is one reduction of 72 products (expanded: 7200
// built values of 72 products each).
TEST(KernelIntermediates, ASecondKernelsSummaryReadsTheFirstKernelsValueSymbolically) {
  const std::string ptx = kernels_ptx();
  NEED_PTX(ptx);
  bundle::Bundle b = conv_mean_bundle(ptx, 2, 8, 8, 32, true);
  {
    Candidate c(b);
    ir::Expr e = c.low.element(c.out(), 1);
    EXPECT_TRUE(ir::contains_reduce(e));
    EXPECT_LT(ir::dag_size(e), 5000u) << ir::to_string(c.ctx, e, {.max_nodes = 60});
  }
  check::Options opt;
  opt.budget_s = 60;
  check::Report r = check::check_bundle(b, opt);
  EXPECT_EQ(r.outcome, check::Outcome::Verified) << r.reason;
}

// A kernel's 2-D store index (r*w + c, r and c each 16*ctaid + tid) at a symbolic location: the
// column block past the width shares digits with the row, and the store's guard c < w bounds them
// apart (Lowering::kernel_read_symbolic), so the writing thread is solved from the location; its
// value there evaluates as writers_of's, location by location, at random inputs.
TEST(KernelIntermediates, TwoDimensionalStoreSolvedUnderItsColumnGuard) {
  const std::string ptx = kernels_ptx();
  NEED_PTX(ptx);
  const int64_t h = 20, w = 37;
  bundle::Bundle b = taps_bundle(ptx, "conv3x3_2d", {h, w}, 9, {h, w}, {(w + 15) / 16, (h + 15) / 16, 1}, {16, 16, 1});
  Candidate c(b);
  std::vector<ir::Expr> at = {c.ctx.var("loc.0", ir::Sort::BV64, ir::Bounds{0, uint64_t(h - 1)}),
                              c.ctx.var("loc.1", ir::Sort::BV64, ir::Bounds{0, uint64_t(w - 1)})};
  std::string why;
  ir::Expr sym = c.low.element_symbolic(c.out(), at, &why);
  ASSERT_TRUE(sym) << why;
  size_t compared = 0;
  for (int64_t flat = 0; flat < h * w; flat += 7) {
    ir::Expr e = c.low.element(c.out(), flat);
    ir::Env env;
    env.elem = [&](int32_t t, int64_t i, ir::Sort s) { return smt::draw(3, 1, smt::name_key(c.ctx.tensor_name(t)), i, s, 10); };
    env.var = [&](std::string_view var, ir::Sort s) {
      return ir::Value::of_bv(s, uint64_t(var == "loc.0" ? flat / w : flat % w));
    };
    double want = ir::Evaluator(env)(e).real, got = ir::Evaluator(env)(sym).real;
    EXPECT_NEAR(got, want, 1e-9 * (1 + std::fabs(want))) << "location " << flat;
    ++compared;
  }
  EXPECT_GT(compared, 100u);
}
