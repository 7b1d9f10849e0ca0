// Numeric evaluation of locations (check/numeric.h) against building the expression and evaluating
// it with ir::Evaluator at the same random points, on self-contained bundles: linear + training batch
// norm, grouped strided convolution + group norm, transposed convolution, cuBLAS-free kernels of the
// running example. And the check's numeric path end to end (forced by a tiny build_nodes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "../program/builder.h"
#include "check/check.h"
#include "check/lower.h"
#include "check/numeric.h"
#include "check/search_internal.h"
#include "ir/eval.h"
#include "ir/print.h"
#include "ir/reduce.h"
#include "ir/walk.h"
#include "program/merge.h"
#include "smt/falsify.h"

using namespace dirigo;
using namespace dirigo::program::testing;

namespace {

J Bool(bool b) { return J{{"scalar", b}, {"type", "bool"}}; }

// x[6,5] -> linear(W[4,5], b[4]) -> batch_norm(training) -> tail
template <class Tail>
ProgramBuilder linear_bn(const char* name, const char* role, Tail tail) {
  ProgramBuilder p(name, role);
  auto x = p.tensor({6, 5}), w = p.tensor({4, 5}), b = p.tensor({4}), g = p.tensor({4}), beta = p.tensor({4});
  auto y = p.tensor({6, 4}), z = p.tensor({6, 4}), mean = p.tensor({4}), invstd = p.tensor({4});
  p.input("x", x);
  p.input("fc.weight", w, "parameter");
  p.input("fc.bias", b, "parameter");
  p.input("bn.weight", g, "parameter");
  p.input("bn.bias", beta, "parameter");
  p.aten("aten::linear", {T(x), T(w), T(b)}, {y});
  p.aten("aten::native_batch_norm", {T(y), T(g), T(beta), None(), None(), Bool(true), F(0.1), F(1e-5)},
         {z, mean, invstd});
  p.output("out0", tail(p, z));
  p.output("out1", y);  // the product itself (batch norm cancels a scale error in it)
  return p;
}

std::string relu(ProgramBuilder& p, const std::string& z) {
  auto r = p.tensor({6, 4});
  p.aten("aten::relu", {T(z)}, {r});
  return r;
}
std::string sigmoid(ProgramBuilder& p, const std::string& z) {
  auto r = p.tensor({6, 4});
  p.aten("aten::sigmoid", {T(z)}, {r});
  return r;
}

// x[2,4,5,5] -> conv(w[6,2,3,3], groups 2, stride 2, padding 1) -> group_norm(3 groups)
ProgramBuilder conv_gn(const char* name, const char* role) {
  ProgramBuilder p(name, role);
  auto x = p.tensor({2, 4, 5, 5}), w = p.tensor({6, 2, 3, 3}), b = p.tensor({6});
  auto c = p.tensor({2, 6, 3, 3}), g = p.tensor({6}), beta = p.tensor({6});
  auto o = p.tensor({2, 6, 3, 3}), mean = p.tensor({2, 3}), rstd = p.tensor({2, 3});
  p.input("x", x);
  p.input("conv.weight", w, "parameter");
  p.input("conv.bias", b, "parameter");
  p.input("gn.weight", g, "parameter");
  p.input("gn.bias", beta, "parameter");
  p.aten("aten::convolution", {T(x), T(w), T(b), Ints({2, 2}), Ints({1, 1}), Ints({1, 1}), Bool(false), Ints({0, 0}),
                               I(2)},
         {c});
  p.aten("aten::native_group_norm", {T(c), T(g), T(beta), I(2), I(6), I(9), I(3), F(1e-5)}, {o, mean, rstd});
  p.output("out0", o);
  return p;
}

// x[1,4,3,3] -> conv_transpose(w[4,3,3,3], stride 2, padding 1, output_padding 1) -> tanh
ProgramBuilder conv_t(const char* name, const char* role) {
  ProgramBuilder p(name, role);
  auto x = p.tensor({1, 4, 3, 3}), w = p.tensor({4, 3, 3, 3}), c = p.tensor({1, 3, 6, 6}), o = p.tensor({1, 3, 6, 6});
  p.input("x", x);
  p.input("up.weight", w, "parameter");
  p.aten("aten::convolution", {T(x), T(w), None(), Ints({2, 2}), Ints({1, 1}), Ints({1, 1}), Bool(true), Ints({1, 1}),
                               I(1)},
         {c});
  p.aten("aten::tanh", {T(c)}, {o});
  p.output("out0", o);
  return p;
}

// Every location of every output of one side: the numeric values equal the built expression's
// (fp64: up to summation order; fp32: up to fp32 rounding in another order) at four ladder points.
void expect_same_values(const bundle::Bundle& b, bool reference, const std::vector<unsigned>& points = {0, 1, 4, 7}) {
  program::Merged m = program::merge(b, {false, false});
  ir::Context ctx;
  check::Lowering low(ctx, b, m, reference, {});
  low.execute_all();
  const uint64_t seed = 5;
  check::NumericOptions o64{.seed = seed, .points = points, .bound = 10};
  check::NumericOptions o32 = o64;
  o32.precision = ir::Precision::F32;
  check::NumericEvaluator n64(low, o64), n32(low, o32);
  size_t compared = 0;
  for (const auto& out : m.outputs) {
    const program::View& view = reference ? out.ref : out.cand;
    int64_t numel = 1;
    for (int64_t s : view.shape) numel *= s;
    int64_t step = std::max<int64_t>(1, numel / 24);  // at most ~24 locations an output (the example has 4,096)
    for (int64_t flat = 0; flat < numel; flat += step) {
      ir::Expr e = low.element(view, flat);
      std::vector<double> v64 = n64.element(view, flat), v32 = n32.element(view, flat);
      for (size_t k = 0; k < points.size(); ++k) {
        ir::Env env;
        env.elem = [&](int32_t t, int64_t i, ir::Sort s) {
          return smt::draw(seed, points[k], smt::name_key(ctx.tensor_name(t)), i, s, 10);
        };
        double want = ir::Evaluator(env, ir::Precision::F64)(e).real;
        double want32 = ir::Evaluator(env, ir::Precision::F32)(e).real;
        // (equal infinities or NaN on both paths, as an exp past fp32's range gives, are the same value)
        auto same = [](double u, double v) { return u == v || (std::isnan(u) && std::isnan(v)); };
        if (!same(v64[k], want))
          EXPECT_NEAR(v64[k], want, 1e-9 * (1 + std::fabs(want))) << "location " << flat << " point " << points[k];
        if (!same(v32[k], want32))
          EXPECT_NEAR(v32[k], want32, 1e-3 * (1 + std::fabs(want32))) << "location " << flat << " point " << points[k];
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 0u);
  EXPECT_GT(n64.stats().elements, 0u);
}

// These tests are about the term-by-term numeric path: reductions stay expanded (with Reduce nodes
// their locations are small and decided symbolically).
struct ReductionsExpanded {
  ReductionsExpanded() { setenv("DIRIGO_REDUCE_ABOVE", "-1", 1); }
  ~ReductionsExpanded() { unsetenv("DIRIGO_REDUCE_ABOVE"); }
};

check::Report check_numeric(const bundle::Bundle& b) {
  ReductionsExpanded expanded;
  check::Options opt;
  opt.budget_s = 60;
  opt.trim_prefix = false;
  opt.build_nodes = 50;  // every location of these programs is larger: the numeric path decides them
  opt.symbolic_location = false;  // not whole outputs at once: these tests are about the per-location path
  opt.seed = 3;
  return check::check_bundle(b, opt);
}

}  // namespace

TEST(Numeric, LinearBatchNormMatchesBuiltExpression) {
  auto ref = linear_bn("ref", "reference", relu), cand = linear_bn("new", "candidate", sigmoid);
  auto b = make_bundle({&ref, &cand});
  expect_same_values(b, true);
  expect_same_values(b, false);
}

// The tight loop of affine sums over drawn inputs (x row times W row, 5 terms: one unrolled block of
// four and a tail) has its own code for one and for two points; four points take the per-lane one.
TEST(Numeric, AffineProductsOneAndTwoPointsMatchBuiltExpression) {
  auto ref = linear_bn("ref", "reference", relu), cand = linear_bn("new", "candidate", sigmoid);
  auto b = make_bundle({&ref, &cand});
  expect_same_values(b, true, {3});
  expect_same_values(b, false, {2, 5});
  // One element of the product alone is one sum of five multiply-adds, counted once for both points.
  program::Merged m = program::merge(b, {false, false});
  ir::Context ctx;
  check::Lowering low(ctx, b, m, true, {});
  low.execute_all();
  check::NumericEvaluator n(low, {.seed = 5, .points = {2, 5}, .bound = 10});
  n.element(m.outputs[1].ref, 7);
  EXPECT_EQ(n.stats().products, 5u);
}

// A point evaluated in fp64 and fp32 together (the check's numeric path: its fp32 evidence from the
// same walk) gives exactly what two evaluators of one precision each give.
void expect_mixed_lanes_equal_separate(const bundle::Bundle& b, bool reference) {
  program::Merged m = program::merge(b, {false, false});
  ir::Context ctx;
  check::Lowering low(ctx, b, m, reference, {});
  low.execute_all();
  check::NumericOptions mixed{.seed = 9, .points = {3, 3}, .bound = 10};
  mixed.precisions = {ir::Precision::F64, ir::Precision::F32};
  check::NumericOptions o64{.seed = 9, .points = {3}, .bound = 10}, o32 = o64;
  o32.precision = ir::Precision::F32;
  mixed.products_cache = check::make_products_cache();  // shared with the single-precision ones: keys must differ
  o64.products_cache = o32.products_cache = mixed.products_cache;
  check::NumericEvaluator nm(low, mixed), n64(low, o64), n32(low, o32);
  size_t compared = 0, rounded = 0;
  for (const auto& out : m.outputs) {
    const program::View& view = reference ? out.ref : out.cand;
    int64_t numel = 1;
    for (int64_t s : view.shape) numel *= s;
    for (int64_t flat = 0; flat < numel; flat += std::max<int64_t>(1, numel / 16)) {
      std::vector<double> v = nm.element(view, flat);
      ASSERT_EQ(v.size(), 2u);
      EXPECT_EQ(v[0], n64.element(view, flat)[0]) << "location " << flat;
      EXPECT_EQ(v[1], n32.element(view, flat)[0]) << "location " << flat;
      rounded += v[0] != v[1];
      ++compared;
    }
  }
  EXPECT_GT(compared, 0u);
  EXPECT_GT(rounded, 0u);  // the lanes are not one precision twice
}

TEST(Numeric, PointInBothPrecisionsEqualsSeparateEvaluations) {
  auto ref = linear_bn("ref", "reference", relu), cand = linear_bn("new", "candidate", sigmoid);
  expect_mixed_lanes_equal_separate(make_bundle({&ref, &cand}), true);
  auto cref = conv_gn("ref", "reference"), ccand = conv_gn("new", "candidate");
  expect_mixed_lanes_equal_separate(make_bundle({&cref, &ccand}), true);
}

// Statistics are memoized per scratch context (aten::StatsMemo): thrown away with it, never read
// back from a recycled one (a stale entry would point into freed nodes, or the wrong channel's sums).
// A convolution's sums (aten::Products runs) summed from runs-innermost draws, from the logical
// draws and term by term: the same fp32 numbers bit for bit (index order, every operation rounded),
// fp64 up to reassociation; the bias is added inside the sum.
void expect_products_paths_agree(const bundle::Bundle& b, const std::vector<unsigned>& points = {1, 1},
                                 const std::vector<ir::Precision>& precisions = {ir::Precision::F64,
                                                                                 ir::Precision::F32},
                                 bool runs = true) {
  program::Merged m = program::merge(b, {false, false});
  ir::Context ctx;
  check::Lowering low(ctx, b, m, true, {});
  low.execute_all();
  using Path = check::NumericOptions::ProductsPath;
  std::vector<std::unique_ptr<check::NumericEvaluator>> ev;
  for (Path path : {Path::Tight, Path::Logical, Path::Generic}) {
    check::NumericOptions o{.seed = 4, .points = points, .bound = 10};
    o.precisions = precisions;
    o.products_path = path;
    ev.push_back(std::make_unique<check::NumericEvaluator>(low, o));
  }
  const program::View& view = m.outputs[0].ref;
  int64_t numel = 1;
  for (int64_t s : view.shape) numel *= s;
  for (int64_t flat = 0; flat < numel; ++flat) {
    std::vector<double> want = ev[2]->element(view, flat);
    for (size_t k = 0; k < 2; ++k) {
      std::vector<double> got = ev[k]->element(view, flat);
      for (size_t p = 0; p < points.size(); ++p) {
        if (precisions[p] == ir::Precision::F32)
          EXPECT_EQ(got[p], want[p]) << "fp32, path " << k << ", lane " << p << ", location " << flat;
        else
          EXPECT_NEAR(got[p], want[p], 1e-12 * (1 + std::fabs(want[p])))
              << "fp64, path " << k << ", lane " << p << ", location " << flat;
      }
    }
  }
  const auto &tight = ev[0]->stats(), &logical = ev[1]->stats(), &generic = ev[2]->stats();
  EXPECT_GT(tight.products, 0u);
  if (runs) EXPECT_EQ(tight.runs_innermost, tight.products);  // every convolution sum from runs-innermost draws
  EXPECT_EQ(logical.tight, logical.products);
  EXPECT_EQ(logical.runs_innermost, 0u);
  EXPECT_EQ(generic.tight, 0u);
}

// The falsification tier's lanes (ten points in fp64, then the same ten in fp32): summed as groups
// of vector lanes (8, 4, then one at a time), the fp32 lanes bit for bit the term-by-term loop's.
TEST(Numeric, ManyLanesSumAsTheTermByTermLoopDoes) {
  std::vector<unsigned> points;
  std::vector<ir::Precision> precisions;
  for (ir::Precision pr : {ir::Precision::F64, ir::Precision::F32})
    for (unsigned k = 0; k < 10; ++k) points.push_back(smt::kDistributionPoint + k), precisions.push_back(pr);
  auto t = conv_t("ref", "reference"), tc = conv_t("new", "candidate");
  expect_products_paths_agree(make_bundle({&t, &tc}), points, precisions);
  auto g = conv_gn("ref", "reference"), gc = conv_gn("new", "candidate");
  expect_products_paths_agree(make_bundle({&g, &gc}), points, precisions);
  auto l = linear_bn("ref", "reference", relu), lc = linear_bn("new", "candidate", relu);  // affine sums
  expect_products_paths_agree(make_bundle({&l, &lc}), points, precisions, false);
}

TEST(Numeric, ConvolutionSumsAreTheSameOnEveryProductsPath) {
  auto t = conv_t("ref", "reference"), tc = conv_t("new", "candidate");
  expect_products_paths_agree(make_bundle({&t, &tc}));
  auto g = conv_gn("ref", "reference"), gc = conv_gn("new", "candidate");
  expect_products_paths_agree(make_bundle({&g, &gc}));
}

TEST(Numeric, RecycledScratchContextsGiveTheSameValues) {
  auto ref = conv_gn("ref", "reference"), cand = conv_gn("new", "candidate");
  auto b = make_bundle({&ref, &cand});
  program::Merged m = program::merge(b, {false, false});
  ir::Context ctx;
  check::Lowering low(ctx, b, m, true, {});
  low.execute_all();
  check::NumericOptions big{.seed = 4, .points = {0, 1}, .bound = 10}, small = big;
  small.scratch_nodes = 40;
  check::NumericEvaluator nb(low, big), ns(low, small);
  const program::View& view = m.outputs[0].ref;
  for (int64_t flat = 53; flat >= 0; flat -= 5) {  // backwards: later channels' statistics first
    auto a = nb.element(view, flat), c = ns.element(view, flat);
    EXPECT_NEAR(a[0], c[0], 1e-12 * (1 + std::fabs(a[0]))) << flat;
    EXPECT_NEAR(a[1], c[1], 1e-12 * (1 + std::fabs(a[1]))) << flat;
  }
  EXPECT_GT(ns.stats().recycles, 2u);
  EXPECT_EQ(nb.stats().recycles, 0u);
}

// A[64, 256] -> A^T (a permuted view) -> mm with B[64, 8]: each sum reads a column of A, one
// element every 256, so one element per chunk of A's draws for most of it.
ProgramBuilder transposed_mm(const char* name, const char* role) {
  ProgramBuilder p(name, role);
  auto a = p.tensor({64, 256}), bm = p.tensor({64, 8}), y = p.tensor({256, 8});
  p.input("a", a);
  p.input("b", bm);
  auto at = p.view(a, 0, {256, 64}, {1, 256});
  p.aten("aten::permute", {T(a), Ints({1, 0})}, {at});
  p.aten("aten::mm", {T(at), T(bm)}, {y});
  p.output("out0", y);
  return p;
}

// A column read draws the elements it reads, not the chunks they lie in (a transposed GEMM of
// today's shapes drew its whole 8192 x 2048 operand for one location); the values are the built
// expression's at the same draws either way.
TEST(Numeric, AColumnReadDrawsItsElementsNotTheTensor) {
  auto ref = transposed_mm("ref", "reference"), cand = transposed_mm("new", "candidate");
  auto b = make_bundle({&ref, &cand});
  expect_same_values(b, true);
  program::Merged m = program::merge(b, {false, false});
  ir::Context ctx;
  check::Lowering low(ctx, b, m, true, {});
  low.execute_all();
  check::NumericEvaluator n(low, {.seed = 5, .points = {1, 2}, .bound = 10});
  n.element(m.outputs[0].ref, 3 * 8 + 1);  // A column 3 . B column 1
  EXPECT_EQ(n.stats().products, 64u);
  EXPECT_EQ(n.stats().draws, 512u + 64u);  // B's one chunk and A's column: not A's 16,384 elements
  // every location of the product: once A's chunks have been read a quarter of their size one element
  // at a time, A is drawn whole and read from the cache (at most 1.25 A's worth, not a column a location)
  for (int64_t flat = 0; flat < 256 * 8; ++flat) n.element(m.outputs[0].ref, flat);
  EXPECT_LE(n.stats().draws, 512u + 16384u + 16384u / 4u + 64u);
}

// Evaluators at the same points given one products cache (the check's reference and candidate) draw
// each shared input once between them; other points or precisions draw their own.
TEST(Numeric, EvaluatorsAtTheSamePointsShareTheirDraws) {
  auto ref = linear_bn("ref", "reference", relu), cand = linear_bn("new", "candidate", sigmoid);
  auto b = make_bundle({&ref, &cand});
  program::Merged m = program::merge(b, {false, false});
  ir::Context ctx;
  check::Lowering low(ctx, b, m, true, {});
  low.execute_all();
  auto shared = check::make_products_cache();
  check::NumericOptions o{.seed = 5, .points = {1}, .bound = 10};
  o.products_cache = shared;
  check::NumericOptions other = o;
  other.points = {2};
  check::NumericEvaluator first(low, o), second(low, o), third(low, other);
  const program::View& y = m.outputs[1].ref;  // y = x W^T + b, [6, 4]
  auto a = first.element(y, 0);   // x row 0 . W row 0
  auto c = second.element(y, 1);  // x row 0 . W row 1: another sum, the same draws
  third.element(y, 1);
  EXPECT_EQ(first.stats().draws, 30u + 20u);  // x [6, 5] and W [4, 5], one chunk each
  EXPECT_EQ(second.stats().draws, 0u);
  EXPECT_EQ(third.stats().draws, 50u);
  EXPECT_EQ(second.stats().products, 5u);
  EXPECT_NE(a[0], c[0]);
}

TEST(Numeric, GroupedStridedConvGroupNormMatchesBuiltExpression) {
  auto ref = conv_gn("ref", "reference"), cand = conv_gn("new", "candidate");
  expect_same_values(make_bundle({&ref, &cand}), true);
}

TEST(Numeric, TransposedConvMatchesBuiltExpression) {
  auto ref = conv_t("ref", "reference"), cand = conv_t("new", "candidate");
  expect_same_values(make_bundle({&ref, &cand}), true);
}

// Reductions over reductions, read through views: a row sum of a linear layer's sigmoids, a softmax
// and a logsumexp of its outputs, a batch mean of mm with a transposed weight, a bmm's row max, row
// sums of max and average pools of the linear output, a mean of a grouped strided padded convolution,
// a sum of a transposed one, reductions over group, batch and layer norms' outputs, and a row sum over
// the linear output's unsqueezed view. With Reduce nodes from two elements up (as
// 10^3-element ones are by default), every location is one nested Reduce of a few nodes, and its value
// is the numeric path's, which evaluates the same programs term by term from their templates.
ProgramBuilder nested(const char* name, const char* role, int which) {
  ProgramBuilder p(name, role);
  auto x = p.tensor({6, 5}), w = p.tensor({24, 5}), b = p.tensor({24}), y = p.tensor({6, 24});
  p.input("x", x);
  p.input("fc.weight", w, "parameter");
  p.input("fc.bias", b, "parameter");
  J keep = J{{"scalar", true}, {"type", "bool"}}, drop = J{{"scalar", false}, {"type", "bool"}};
  switch (which) {
    case 0: {  // sum_j sigmoid(b_j + sum_k x_ik w_jk)
      auto s = p.tensor({6, 24}), o = p.tensor({6, 1});
      p.aten("aten::linear", {T(x), T(w), T(b)}, {y});
      p.aten("aten::sigmoid", {T(y)}, {s});
      p.aten("aten::sum", {T(s), Ints({1}), keep}, {o}, {}, J::object(), "dim_IntList");
      p.output("out0", o);
      break;
    }
    case 1: {
      auto o = p.tensor({6, 24}), l = p.tensor({6});
      p.aten("aten::linear", {T(x), T(w), T(b)}, {y});
      p.aten("aten::_softmax", {T(y), I(1), drop}, {o});
      p.aten("aten::logsumexp", {T(y), Ints({1}), drop}, {l});
      p.output("out0", o);
      p.output("out1", l);
      break;
    }
    case 2: {  // mean over the batch of x @ w^T, the weight read through its transposed view
      auto wt = p.view(w, 0, {5, 24}, {1, 5}), o = p.tensor({24});
      p.aten("aten::mm", {T(x), T(wt)}, {y});
      p.aten("aten::mean", {T(y), Ints({0}), drop}, {o}, {}, J::object(), "dim");
      p.output("out0", o);
      break;
    }
    case 3: {
      auto a = p.tensor({2, 3, 5}), c = p.tensor({2, 5, 24}), m = p.tensor({2, 3, 24}), o = p.tensor({2, 3});
      p.input("a", a);
      p.input("c", c);
      p.aten("aten::bmm", {T(a), T(c)}, {m});
      p.aten("aten::amax", {T(m), Ints({2}), drop}, {o});
      p.output("out0", o);
      break;
    }
    case 5: {  // sum over the row of max_pool1d(y.unsqueeze(1), 2) and of avg_pool1d(y.unsqueeze(1), 3, 2)
      auto u = p.view(y, 0, {6, 1, 24}, {24, 24, 1}), m = p.tensor({6, 1, 12}), a = p.tensor({6, 1, 11});
      auto mv = p.view(m, 0, {6, 12}, {12, 1}), av = p.view(a, 0, {6, 11}, {11, 1});
      auto o = p.tensor({6}), o2 = p.tensor({6});
      p.aten("aten::linear", {T(x), T(w), T(b)}, {y});
      p.aten("aten::max_pool1d", {T(u), Ints({2}), Ints({2}), Ints({0}), Ints({1}), drop}, {m});
      p.aten("aten::avg_pool1d", {T(u), Ints({3}), Ints({2}), Ints({0}), drop, keep}, {a});
      p.aten("aten::sum", {T(mv), Ints({1}), drop}, {o}, {}, J::object(), "dim_IntList");
      p.aten("aten::sum", {T(av), Ints({1}), drop}, {o2}, {}, J::object(), "dim_IntList");
      p.output("out0", o);
      p.output("out1", o2);
      break;
    }
    case 6: {  // mean over H, W of a grouped strided padded convolution: taps guarded at the border
      auto xi = p.tensor({2, 4, 5, 5}), cw = p.tensor({6, 2, 3, 3}), cb = p.tensor({6});
      auto c = p.tensor({2, 6, 3, 3}), o = p.tensor({2, 6});
      p.input("img", xi);
      p.input("conv.weight", cw, "parameter");
      p.input("conv.bias", cb, "parameter");
      p.aten("aten::convolution", {T(xi), T(cw), T(cb), Ints({2, 2}), Ints({1, 1}), Ints({1, 1}), drop,
                                   Ints({0, 0}), I(2)},
             {c});
      p.aten("aten::mean", {T(c), Ints({2, 3}), drop}, {o}, {}, J::object(), "dim");
      p.output("out0", o);
      break;
    }
    case 7: {  // sum of a transposed convolution (stride 2: taps on the stride's lattice only)
      auto xi = p.tensor({1, 4, 3, 3}), cw = p.tensor({4, 3, 3, 3}), c = p.tensor({1, 3, 6, 6}), o = p.tensor({1});
      p.input("img", xi);
      p.input("up.weight", cw, "parameter");
      p.aten("aten::convolution", {T(xi), T(cw), None(), Ints({2, 2}), Ints({1, 1}), Ints({1, 1}), keep,
                                   Ints({1, 1}), I(1)},
             {c});
      p.aten("aten::sum", {T(c), Ints({1, 2, 3}), drop}, {o}, {}, J::object(), "dim_IntList");
      p.output("out0", o);
      break;
    }
    case 8: {  // mean of a group norm's output over (C, H, W): each group's statistics at the reduction's index
      auto xi = p.tensor({2, 4, 5, 5}), g = p.tensor({4}), gb = p.tensor({4}), o = p.tensor({2, 4, 5, 5});
      auto gm = p.tensor({2, 2}), gr = p.tensor({2, 2}), m = p.tensor({2});
      p.input("img", xi);
      p.input("gn.weight", g, "parameter");
      p.input("gn.bias", gb, "parameter");
      p.aten("aten::native_group_norm", {T(xi), T(g), T(gb), I(2), I(4), I(25), I(2), F(1e-5)}, {o, gm, gr});
      p.aten("aten::mean", {T(o), Ints({1, 2, 3}), drop}, {m}, {}, J::object(), "dim");
      p.output("out0", m);
      break;
    }
    case 9: {  // row sums of a training batch norm and a layer norm of the linear output
      auto g = p.tensor({24}), gb = p.tensor({24}), z = p.tensor({6, 24}), bm = p.tensor({24}), bi = p.tensor({24});
      auto l = p.tensor({6, 24}), lm = p.tensor({6, 1}), lr = p.tensor({6, 1}), o = p.tensor({6}), o2 = p.tensor({6});
      p.input("bn.weight", g, "parameter");
      p.input("bn.bias", gb, "parameter");
      p.aten("aten::linear", {T(x), T(w), T(b)}, {y});
      p.aten("aten::native_batch_norm", {T(y), T(g), T(gb), None(), None(), keep, F(0.1), F(1e-5)}, {z, bm, bi});
      p.aten("aten::native_layer_norm", {T(y), Ints({24}), T(g), T(gb), F(1e-5)}, {l, lm, lr});
      p.aten("aten::sum", {T(z), Ints({1}), drop}, {o}, {}, J::object(), "dim_IntList");
      p.aten("aten::amax", {T(l), Ints({1}), drop}, {o2});
      p.output("out0", o);
      p.output("out1", o2);
      break;
    }
    default: {  // sum over dim 2 of y.unsqueeze(1): the view's dims map onto y's by their strides
      auto u = p.view(y, 0, {6, 1, 24}, {24, 24, 1}), o = p.tensor({6, 1});
      p.aten("aten::linear", {T(x), T(w), T(b)}, {y});
      p.aten("aten::sum", {T(u), Ints({2}), drop}, {o}, {}, J::object(), "dim_IntList");
      p.output("out0", o);
      break;
    }
  }
  return p;
}

struct ReductionsFromTwo {
  ReductionsFromTwo() { setenv("DIRIGO_REDUCE_ABOVE", "1", 1); }
  ~ReductionsFromTwo() { unsetenv("DIRIGO_REDUCE_ABOVE"); }
};

TEST(Numeric, NestedReductionsMatchTermByTermEvaluation) {
  ReductionsFromTwo from_two;
  for (int which = 0; which < 11; ++which) {
    SCOPED_TRACE(which);
    auto ref = nested("ref", "reference", which), cand = nested("new", "candidate", which);
    bundle::Bundle b = make_bundle({&ref, &cand});
    expect_same_values(b, true);
    program::Merged m = program::merge(b, {false, false});
    ir::Context ctx;
    check::Lowering low(ctx, b, m, true, {});
    low.execute_all();
    for (const auto& out : m.outputs) {
      ir::Expr e = low.element(out.ref, 0);
      EXPECT_GE(ir::expansion_terms(e), 30u) << ir::to_string(ctx, e);  // a 24 x 5 (or 6 x 5) cone, never expanded
      EXPECT_LT(ir::dag_size(e), 60u) << ir::to_string(ctx, e);
    }
  }
}

// Below reduce_above (1024) a reduction is expanded, unless its body reads reductions and the whole
// stands for more than 2^16 terms: a row sum of 300 sigmoids of 300-term products is one Reduce
// (9·10^4 terms), of 100 sigmoids of 100-term products expanded (10^4 terms, the form kernels give).
TEST(Numeric, MidSizeReductionOverReductionsStaysOneReduceOnlyPastItsExpansionCap) {
  for (int64_t n : {300, 100}) {
    auto side = [n](const char* name, const char* role) {
      ProgramBuilder p(name, role);
      auto x = p.tensor({2, n}), w = p.tensor({n, n}), b = p.tensor({n}), y = p.tensor({2, n}), s = p.tensor({2, n});
      auto o = p.tensor({2, 1});
      p.input("x", x);
      p.input("fc.weight", w, "parameter");
      p.input("fc.bias", b, "parameter");
      p.aten("aten::linear", {T(x), T(w), T(b)}, {y});
      p.aten("aten::sigmoid", {T(y)}, {s});
      p.aten("aten::sum", {T(s), Ints({1}), J{{"scalar", true}, {"type", "bool"}}}, {o}, {}, J::object(), "dim_IntList");
      p.output("out0", o);
      return p;
    };
    auto p = side("ref", "reference"), q = side("new", "candidate");
    bundle::Bundle bd = make_bundle({&p, &q});
    program::Merged m = program::merge(bd, {false, false});
    ir::Context ctx;
    check::Lowering low(ctx, bd, m, true, {});
    low.execute_all();
    ir::Expr e = low.element(m.outputs[0].ref, 0);
    if (n == 300) EXPECT_LT(ir::dag_size(e), 60u) << ir::to_string(ctx, e);
    else EXPECT_GT(ir::dag_size(e), uint64_t(n)) << "expanded below the cap";
  }
}

TEST(Numeric, KernelLaunchesMatchBuiltExpression) {
  // The running example: the reference's aten ops, the candidate's fused PTX kernels.
  bundle::Bundle b = bundle::read_bundle(std::string(DIRIGO_SOURCE_DIR) + "/examples/running_example/bundle-buggy");
  expect_same_values(b, true);
  expect_same_values(b, false);
}

TEST(Numeric, DifferenceIsSampledWitnessRegenerableFromThePoint) {
  auto ref = linear_bn("ref", "reference", relu), cand = linear_bn("new", "candidate", sigmoid);
  check::Report r = check_numeric(make_bundle({&ref, &cand}));
  ASSERT_EQ(r.outcome, check::Outcome::Bug) << r.reason;
  ASSERT_TRUE(r.first_differ);
  const check::LocationResult& l = r.locations[*r.first_differ];
  EXPECT_EQ(l.stage, smt::Stage::Sampling);
  ASSERT_TRUE(l.sampled);
  EXPECT_TRUE(l.leaves.empty());  // no leaf list: the point regenerates every input
  EXPECT_TRUE(l.confirmed_f32);
  EXPECT_NE(l.reason.find("evaluated numerically"), std::string::npos) << l.reason;
  // The recorded values are those of the built expressions at the recorded point.
  program::Merged m = program::merge(make_bundle({&ref, &cand}), {false, false});
  ir::Context ctx;
  auto b = make_bundle({&ref, &cand});
  check::Lowering lr(ctx, b, m, true, {}), lc(ctx, b, m, false, {});
  ir::Env env;
  env.elem = [&](int32_t t, int64_t i, ir::Sort s) {
    return smt::draw(l.sampled->seed, l.sampled->point, smt::name_key(ctx.tensor_name(t)), i, s, l.sampled->bound);
  };
  double a = ir::Evaluator(env)(lr.element(m.outputs[0].ref, l.loc.flat)).real;
  double c = ir::Evaluator(env)(lc.element(m.outputs[0].cand, l.loc.flat)).real;
  EXPECT_NEAR(l.ref_value, a, 1e-9 * (1 + std::fabs(a)));
  EXPECT_NEAR(l.cand_value, c, 1e-9 * (1 + std::fabs(c)));
  std::string w = check::witness_json(r);
  EXPECT_NE(w.find("\"sampled\""), std::string::npos);
  EXPECT_NE(w.find("\"leaves_complete\": false"), std::string::npos);
}

// x[2,4096] -> linear(W[4096,4096], b) + tanh(z) -> relu -> sum over the row, times 0.5 (the
// candidate: 0.55, its linear as t + addmm): a location of 2^24 multiply-adds, past what a random
// point may cost. tanh(z), common to both, is a trimmed prefix, so the location reads a trimmed
// result and no sparse point (the rest 0) is one the inputs can produce: it is decided at a point
// with the largest input (W) zeroed, where the row sum is one of relu(b + tanh(z)) (zeroed_witness.cpp);
// untrimmed, at a sparse point.
ProgramBuilder gemm_row_sum(const char* name, const char* role, double scale) {
  ProgramBuilder p(name, role);
  auto x = p.tensor({2, 4096}), w = p.tensor({4096, 4096}), b = p.tensor({4096}), y = p.tensor({2, 4096});
  auto z = p.tensor({2, 4096}), tz = p.tensor({2, 4096}), yz = p.tensor({2, 4096});
  auto r = p.tensor({2, 4096}), s = p.tensor({2}), o = p.tensor({2});
  p.input("x", x);
  p.input("z", z);
  p.input("fc.weight", w, "parameter");
  p.input("fc.bias", b, "parameter");
  p.aten("aten::tanh", {T(z)}, {tz});
  if (scale == 0.5) {
    p.aten("aten::linear", {T(x), T(w), T(b)}, {y});
  } else {
    auto wt = p.view(w, 0, {4096, 4096}, {1, 4096});
    p.aten("aten::t", {T(w)}, {wt});
    p.aten("aten::addmm", {T(b), T(x), T(wt)}, {y});
  }
  p.aten("aten::add", {T(y), T(tz)}, {yz}, {}, J::object(), "Tensor");
  p.aten("aten::relu", {T(yz)}, {r});
  p.aten("aten::sum", {T(r), Ints({1}), Bool(false)}, {s}, {}, J::object(), "dim_IntList");
  p.aten("aten::mul", {T(s), F(scale)}, {o}, {}, J::object(), "Scalar");
  p.output("out0", o);
  return p;
}

TEST(Numeric, GiantReductionsDifferAtAPointWithTheirLargestInputZeroed) {
  for (bool trim : {true, false}) {
    auto ref = gemm_row_sum("ref", "reference", 0.5), cand = gemm_row_sum("new", "candidate", 0.55);
    check::Options opt;
    opt.budget_s = 60;
    opt.trim_prefix = trim;
    opt.seed = 3;
    check::Report r = check::check_bundle(make_bundle({&ref, &cand}), opt);
    ASSERT_EQ(r.outcome, check::Outcome::Bug) << r.reason;
    const check::LocationResult& l = r.locations[*r.first_differ];
    EXPECT_TRUE(l.confirmed_f32);
    EXPECT_EQ(l.stage, smt::Stage::Sparse) << l.reason;  // the witness the replay sets: over program inputs
    EXPECT_FALSE(l.sampled);
    EXPECT_TRUE(l.others_zero);
    if (trim)  // found first at the zeroed point, over the trimmed result
      EXPECT_NE(l.reason.find("the first witness (sampling: "), std::string::npos) << l.reason;
    if (trim) EXPECT_NE(l.reason.find("fc.weight set to 0 everywhere"), std::string::npos) << l.reason;
    else EXPECT_NE(l.reason.find("at a sparse point"), std::string::npos) << l.reason;
  }
}

// x[2,4096] -> linear(W[4096,4096], b) -> act -> sum over the row (the candidate: over 4095 of its
// 4096 elements, a slice first), times 0.5: 2^24 multiply-adds per location, and the dropped term a
// 4096th of the sum, inside the tolerance at random inputs. The lone term's leaves at v, the rest of
// every tensor 0 (relu) or the bias at -v (sigmoid, whose other terms are then ~0): a domain witness
// evaluated at the reductions' nonzero points only (decide.cpp domain_witness, ir Env::support).
ProgramBuilder gemm_act_row_sum(const char* name, const char* role, const char* act, bool shortened) {
  ProgramBuilder p(name, role);
  auto x = p.tensor({2, 4096}), w = p.tensor({4096, 4096}), b = p.tensor({4096}), y = p.tensor({2, 4096});
  auto r = p.tensor({2, 4096}), s = p.tensor({2}), o = p.tensor({2});
  auto c = p.view(r, 0, {2, 4095}, {4096, 1});  // the slice: a view of the activation's storage
  auto wt = p.view(w, 0, {4096, 4096}, {1, 4096});
  p.input("x", x);
  p.input("fc.weight", w, "parameter");
  p.input("fc.bias", b, "parameter");
  p.aten("aten::t", {T(w)}, {wt});  // nn.Linear as traced
  p.aten("aten::addmm", {T(b), T(x), T(wt)}, {y});
  p.aten(act, {T(y)}, {r});
  if (shortened) p.aten("aten::slice", {T(r), I(1), I(0), I(4095), I(1)}, {c}, {}, J::object(), "Tensor");
  p.aten("aten::sum", {T(shortened ? c : r), Ints({1}), Bool(false)}, {s}, {}, J::object(), "dim_IntList");
  p.aten("aten::mul", {T(s), F(0.5)}, {o}, {}, J::object(), "Scalar");
  p.output("out0", o);
  return p;
}

TEST(Numeric, GiantShortenedSumsDifferWhereTheirLoneTermIsAloneNonzero) {
  for (const char* act : {"aten::sigmoid", "aten::relu"}) {
    auto ref = gemm_act_row_sum("ref", "reference", act, false), cand = gemm_act_row_sum("new", "candidate", act, true);
    check::Options opt;
    opt.budget_s = 20;
    opt.trim_prefix = false;
    opt.seed = 3;
    check::Report r = check::check_bundle(make_bundle({&ref, &cand}), opt);
    ASSERT_EQ(r.outcome, check::Outcome::Bug) << act << ": " << r.reason;
    const check::LocationResult& l = r.locations[*r.first_differ];
    EXPECT_EQ(l.stage, smt::Stage::Domain) << act << ": " << l.reason;
    EXPECT_FALSE(l.sampled);
    EXPECT_TRUE(l.confirmed_f32);
    EXPECT_TRUE(l.others_zero);
    EXPECT_LT(r.search_seconds, 5.0) << act;
    std::string w = check::witness_json(r);
    EXPECT_NE(w.find("\"others\": \"zero\""), std::string::npos) << w.substr(0, 1500);
    bool sigmoid = std::string(act) == "aten::sigmoid";
    ASSERT_EQ(l.fills.size(), sigmoid ? 1u : 0u) << act;
    if (sigmoid) {
      EXPECT_EQ(l.fills[0].input, "fc.bias");
      EXPECT_NE(w.find("\"fill\""), std::string::npos);
      // every other bias at -v: 0.5 * (4095 sigmoid(-v) + sigmoid(lone)) against 0.5 * 4095 sigmoid(-v)
      double v = -l.fills[0].value, rest = 0.5 * 4095 / (1 + std::exp(v));
      EXPECT_NEAR(l.cand_value, rest, 1e-9 * rest);
      EXPECT_GT(l.ref_value - l.cand_value, 0.4);
    } else {
      EXPECT_EQ(l.cand_value, 0.0);  // relu(0) everywhere the candidate sums
      EXPECT_GT(l.ref_value, 0.0);
    }
  }
}

TEST(Numeric, SameProgramsNeverBug) {
  auto ref = conv_gn("ref", "reference"), cand = conv_gn("new", "candidate");
  check::Report r = check_numeric(make_bundle({&ref, &cand}));
  EXPECT_NE(r.outcome, check::Outcome::Bug) << r.reason;
  EXPECT_EQ(r.equal, 0u);  // numeric evaluation never decides equal
  ASSERT_FALSE(r.locations.empty());
  EXPECT_NE(r.locations[0].reason.find("none differs"), std::string::npos) << r.locations[0].reason;
}

// A location's size estimated from one template per value: out0[0] of linear + training batch norm
// + relu needs its relu and batch-norm elements (1 each) and the batch norm's column of the product
// (6 elements of 5 multiply-adds each); the product's own location needs one element of 5.
TEST(Numeric, EstimateCountsNeededElementsAndProducts) {
  auto ref = linear_bn("ref", "reference", relu), cand = linear_bn("new", "candidate", sigmoid);
  auto b = make_bundle({&ref, &cand});
  program::Merged m = program::merge(b, {false, false});
  ir::Context ctx;
  check::Lowering low(ctx, b, m, true, {});
  low.execute_all();
  check::NumericEvaluator n(low, {.seed = 1, .points = {0}});
  auto s = n.estimate(m.outputs[0].ref, 0);
  EXPECT_EQ(s.elements, 8.0);
  EXPECT_EQ(s.products, 30.0);
  EXPECT_EQ(s.values, 3u);
  auto y = n.estimate(m.outputs[1].ref, 0);
  EXPECT_EQ(y.elements, 1.0);
  EXPECT_EQ(y.products, 5.0);
  // Then evaluated from the same scratch context: the values the estimate did not disturb.
  check::NumericEvaluator fresh(low, {.seed = 1, .points = {0}});
  EXPECT_EQ(n.element(m.outputs[0].ref, 0), fresh.element(m.outputs[0].ref, 0));
}

// Past Options::numeric_estimate a location is evaluated numerically without being built (the
// build cap is never reached: build_nodes stays at its default); at 0 it is built and decided.
TEST(Numeric, LocationEstimatedGiantGoesNumericWithoutBuilding) {
  auto ref = linear_bn("ref", "reference", relu), cand = linear_bn("new", "candidate", sigmoid);
  auto b = make_bundle({&ref, &cand});
  ReductionsExpanded expanded;
  check::Options opt;
  opt.budget_s = 60;
  opt.trim_prefix = false;
  opt.seed = 3;
  opt.numeric_estimate = 20;  // out0's locations: 8 elements + 30 multiply-adds
  check::Report r = check::check_bundle(b, opt);
  ASSERT_EQ(r.outcome, check::Outcome::Bug) << r.reason;
  const check::LocationResult& l = r.locations[*r.first_differ];
  EXPECT_NE(l.reason.find("estimated from 3 values' templates): evaluated numerically"), std::string::npos) << l.reason;
  EXPECT_EQ(l.ref_nodes, 0u);  // not built
  EXPECT_TRUE(l.sampled);
  opt.numeric_estimate = 0;
  check::Report built = check::check_bundle(b, opt);
  ASSERT_EQ(built.outcome, check::Outcome::Bug) << built.reason;
  const check::LocationResult& lb = built.locations[*built.first_differ];
  EXPECT_EQ(lb.reason.find("estimated"), std::string::npos) << lb.reason;
  EXPECT_GT(lb.ref_nodes, 0u);
}

// The estimate stops once its templates pass stop_nodes: the location is at least that large.
TEST(Numeric, EstimateStopsPastItsNodeBudget) {
  auto ref = linear_bn("ref", "reference", relu), cand = linear_bn("new", "candidate", sigmoid);
  auto b = make_bundle({&ref, &cand});
  program::Merged m = program::merge(b, {false, false});
  ir::Context ctx;
  check::Lowering low(ctx, b, m, true, {});
  low.execute_all();
  check::NumericEvaluator n(low, {.seed = 1, .points = {0}});
  auto whole = n.estimate(m.outputs[0].ref, 0);
  EXPECT_FALSE(whole.stopped);
  ASSERT_GT(whole.template_nodes, 4u);
  check::NumericEvaluator m2(low, {.seed = 1, .points = {0}});
  auto cut = m2.estimate(m.outputs[0].ref, 0, 2);
  EXPECT_TRUE(cut.stopped);
  EXPECT_LT(cut.values, whole.values);
}

// The falsification tier's distribution points (N(0, 1), U[-1, 1], N(0, 10^2), N(0, 0.01^2),
// U[-1000, 1000]) evaluate as the built expressions do at the same draws: aten equations, sums of
// products, kernel records by tape.
TEST(Numeric, DistributionPointsMatchBuiltExpression) {
  const std::vector<unsigned> points = {smt::kDistributionPoint, smt::kDistributionPoint + 3,
                                        smt::kDistributionPoint + 4, smt::kDistributionPoint + 8};
  auto ref = linear_bn("ref", "reference", relu), cand = linear_bn("new", "candidate", sigmoid);
  expect_same_values(make_bundle({&ref, &cand}), true, points);
  expect_same_values(make_bundle({&ref, &cand}), false, points);
  bundle::Bundle b = bundle::read_bundle(std::string(DIRIGO_SOURCE_DIR) + "/examples/running_example/bundle-buggy");
  expect_same_values(b, false, points);
}

namespace {
check::Options tier_options() {
  check::Options opt;
  opt.budget_s = 60;
  opt.trim_prefix = false;
  opt.seed = 3;
  return opt;
}

// x[64] -> clamp(x, -lo, lo): two such programs differ only where |x| > the smaller bound.
ProgramBuilder clamp_prog(const char* name, const char* role, double lo) {
  ProgramBuilder p(name, role);
  auto x = p.tensor({64}), y = p.tensor({64});
  p.input("x", x);
  p.aten("aten::clamp", {T(x), F(-lo), F(lo)}, {y});
  p.output("out0", y);
  return p;
}
}  // namespace

// A location whose build passes falsified_build_nodes is the tier's BUG as it was found: numeric
// values at a distribution point, evidence numeric-falsification, nothing built.
TEST(Falsify, TierBugBeforeBuilding) {
  auto ref = linear_bn("ref", "reference", relu), cand = linear_bn("new", "candidate", sigmoid);
  auto opt = tier_options();
  opt.falsified_build_nodes = 1;
  check::Report r = check::check_bundle(make_bundle({&ref, &cand}), opt);
  ASSERT_EQ(r.outcome, check::Outcome::Bug) << r.reason;
  EXPECT_EQ(r.evidence, "numeric-falsification");
  const check::LocationResult& l = r.locations[*r.first_differ];
  EXPECT_EQ(*r.first_differ, 0u);  // the search's first location
  EXPECT_EQ(l.ref_nodes, 0u);
  EXPECT_TRUE(l.confirmed_f32);
  ASSERT_TRUE(l.sampled);
  EXPECT_GE(l.sampled->point, smt::kDistributionPoint);
  EXPECT_NE(l.reason.find("falsified before the proof"), std::string::npos) << l.reason;
  EXPECT_NE(check::witness_json(r).find("\"distribution\""), std::string::npos);
}

// A falsified location small enough to build is decided by the proof as well: the report names
// both symbolic values and every leaf, as without the tier.
TEST(Falsify, SmallFalsifiedLocationKeepsTheProofsWitness) {
  auto ref = linear_bn("ref", "reference", relu), cand = linear_bn("new", "candidate", sigmoid);
  auto opt = tier_options();
  check::Report r = check::check_bundle(make_bundle({&ref, &cand}), opt);
  ASSERT_EQ(r.outcome, check::Outcome::Bug) << r.reason;
  EXPECT_EQ(r.evidence, "fp32-evaluation");
  const check::LocationResult& l = r.locations[*r.first_differ];
  EXPECT_GT(l.ref_nodes, 0u);
  EXPECT_FALSE(l.leaves.empty());
  opt.falsify_locations = 0;
  check::Report off = check::check_bundle(make_bundle({&ref, &cand}), opt);
  ASSERT_EQ(off.outcome, check::Outcome::Bug) << off.reason;
  EXPECT_EQ(off.evidence, "fp32-evaluation");
}

// A difference only large inputs reach (a clamp at 100 against one at 200): the U[-1000, 1000]
// point shows it, no smaller scale does.
TEST(Falsify, LargeValuesDistributionFindsAClampBound) {
  auto ref = clamp_prog("ref", "reference", 100), cand = clamp_prog("new", "candidate", 200);
  auto opt = tier_options();
  opt.falsified_build_nodes = 1;
  check::Report r = check::check_bundle(make_bundle({&ref, &cand}), opt);
  ASSERT_EQ(r.outcome, check::Outcome::Bug) << r.reason;
  EXPECT_EQ(r.evidence, "numeric-falsification");
  const check::LocationResult& l = r.locations[*r.first_differ];
  ASSERT_TRUE(l.sampled);
  EXPECT_EQ(smt::point_bound(l.sampled->point, 10), 1000.0);
  EXPECT_EQ(smt::point_distribution(l.sampled->point), smt::Distribution::Uniform);
}

// The same pair built and proven: equal within ±bound (the proof's input domain), different at the
// tier's large values: neither verdict is reported, the location stays undecided naming both.
TEST(Falsify, ProvenEqualWithinTheBoundButFalsifiedOutsideIsUndecided) {
  auto ref = clamp_prog("ref", "reference", 100), cand = clamp_prog("new", "candidate", 200);
  auto opt = tier_options();
  opt.max_locations = 2;
  check::Report r = check::check_bundle(make_bundle({&ref, &cand}), opt);
  EXPECT_NE(r.outcome, check::Outcome::Bug) << r.reason;
  EXPECT_NE(r.outcome, check::Outcome::Verified) << r.reason;
  ASSERT_FALSE(r.locations.empty());
  EXPECT_EQ(r.locations[0].verdict, smt::Verdict::Unknown);
  EXPECT_NE(r.locations[0].reason.find("falsification tier's numbers differ"), std::string::npos)
      << r.locations[0].reason;
}

// Equal programs: the tier finds nothing at any distribution and the proof decides them.
TEST(Falsify, EqualProgramsAreNeverTierBugs) {
  auto ref = conv_gn("ref", "reference"), cand = conv_gn("new", "candidate");
  auto opt = tier_options();
  opt.falsified_build_nodes = 1;
  check::Report r = check::check_bundle(make_bundle({&ref, &cand}), opt);
  EXPECT_NE(r.outcome, check::Outcome::Bug) << r.reason;
  EXPECT_GT(r.equal, 0u);
  auto a = clamp_prog("ref", "reference", 100), b = clamp_prog("new", "candidate", 100);
  check::Report same = check::check_bundle(make_bundle({&a, &b}), opt);
  EXPECT_NE(same.outcome, check::Outcome::Bug) << same.reason;
}

// x - mean over each group of channels, spelled through reshapes (x.view(2, 2, 50), its mean over the last
// dim, the difference viewed back as [2, 4, 5, 5]): reads of a view that is not a sub-box of its
// producer's result, at row-major coordinates by division and remainder.
ProgramBuilder group_centre_by_hand(const char* name, const char* role) {
  ProgramBuilder p(name, role);
  auto x = p.tensor({2, 4, 5, 5}), y = p.tensor({2, 4, 5, 5});
  p.input("x", x);
  p.aten("aten::sigmoid", {T(x)}, {y});  // computed, not a shared input: read through the producer
  auto g = p.view(y, 0, {2, 2, 50}, {100, 50, 1}), m = p.tensor({2, 2, 1}), d = p.tensor({2, 2, 50});
  p.aten("aten::mean", {T(g), Ints({2}), J{{"scalar", true}, {"type", "bool"}}}, {m}, {}, J::object(), "dim");
  p.aten("aten::sub", {T(g), T(m)}, {d}, {}, J::object(), "Tensor");
  auto back = p.view(d, 0, {2, 4, 5, 5}, {100, 25, 5, 1}), o = p.tensor({2, 4, 5, 5});
  p.aten("aten::relu", {T(back)}, {o});
  p.output("out0", o);
  return p;
}

// Reductions over dims of one element only (x.sum(1, keepdim=True) of x [4, 1, 3], amax likewise): at a
// symbolic location the one term itself.
ProgramBuilder one_element_reductions(const char* name, const char* role) {
  ProgramBuilder p(name, role);
  auto x = p.tensor({4, 1, 3}), y = p.tensor({4, 1, 3}), s = p.tensor({4, 1, 3}), m = p.tensor({4, 3});
  p.input("x", x);
  p.aten("aten::tanh", {T(x)}, {y});
  p.aten("aten::sum", {T(y), Ints({1}), J{{"scalar", true}, {"type", "bool"}}}, {s}, {}, J::object(), "dim_IntList");
  p.aten("aten::amax", {T(y), Ints({1}), J{{"scalar", false}, {"type", "bool"}}}, {m});
  p.output("out0", s);
  p.output("out1", m);
  return p;
}

// `sym` (an output's element at coordinates named loc.<dim>) evaluated with the coordinates bound to each
// of about `samples` locations against that location's own expression, at random points 0 and `point`;
// how many comparisons were made.
size_t compare_at_locations(ir::Context& ctx, check::Lowering& low, const program::View& view, ir::Expr sym,
                            int64_t samples, unsigned point2, size_t output) {
  size_t compared = 0;
  int64_t numel = 1;
  for (int64_t s : view.shape) numel *= s;
  for (int64_t flat = 0; flat < numel; flat += std::max<int64_t>(1, numel / samples)) {
    std::vector<int64_t> at = check::unravel(view.shape, flat);
    ir::Expr e = low.element(view, flat);
    for (unsigned point : {0u, point2}) {
      ir::Env env;
      env.elem = [&](int32_t t, int64_t i, ir::Sort s) { return smt::draw(5, point, smt::name_key(ctx.tensor_name(t)), i, s, 10); };
      env.var = [&](std::string_view name, ir::Sort s) {
        return ir::Value::of_bv(s, uint64_t(at.at(std::stoul(std::string(name.substr(4))))));
      };
      double want = ir::Evaluator(env)(e).real, got = ir::Evaluator(env)(sym).real;
      EXPECT_NEAR(got, want, 1e-9 * (1 + std::fabs(want)))
          << "output " << output << " location " << flat << "\n  symbolic: " << ir::to_string(ctx, sym, {.max_nodes = 60});
      ++compared;
    }
  }
  return compared;
}

// An output at a symbolic location (Lowering::element_symbolic: the coordinates as bounded variables, the
// form the check decides whole outputs by) evaluated with the variables bound to a location gives what
// that location's own expression gives, at the same random inputs: the symbolic-location handlers of
// convolutions, norms, pooling, matrix products and reductions (Reduce nodes) against the concrete ones
// (sums expanded term by term below reduce_above).
TEST(SymbolicLocation, EveryLocationEvaluatesAsItsOwnExpression) {
  std::vector<std::pair<ProgramBuilder, ProgramBuilder>> programs;
  programs.emplace_back(linear_bn("ref", "reference", relu), linear_bn("new", "candidate", sigmoid));
  programs.emplace_back(conv_gn("ref", "reference"), conv_gn("new", "candidate"));
  programs.emplace_back(conv_t("ref", "reference"), conv_t("new", "candidate"));
  for (int which = 0; which < 11; ++which)
    programs.emplace_back(nested("ref", "reference", which), nested("new", "candidate", which));
  programs.emplace_back(group_centre_by_hand("ref", "reference"), group_centre_by_hand("new", "candidate"));
  programs.emplace_back(one_element_reductions("ref", "reference"), one_element_reductions("new", "candidate"));
  size_t built = 0, outputs = 0, compared = 0;
  for (size_t p = 0; p < programs.size(); ++p) {
    SCOPED_TRACE(p);
    bundle::Bundle b = make_bundle({&programs[p].first, &programs[p].second});
    program::Merged m = program::merge(b, {false, false});
    for (bool reference : {true, false}) {
      ir::Context ctx;
      check::Lowering low(ctx, b, m, reference, {});
      low.execute_all();
      for (size_t o = 0; o < m.outputs.size(); ++o) {
        const program::View& view = reference ? m.outputs[o].ref : m.outputs[o].cand;
        std::vector<ir::Expr> coords;
        for (size_t k = 0; k < view.shape.size(); ++k)
          coords.push_back(ctx.var("loc." + std::to_string(k), ir::Sort::BV64, ir::Bounds{0, uint64_t(view.shape[k] - 1)}));
        ++outputs;
        ir::Expr sym = low.element_symbolic(view, coords);
        if (!sym) continue;
        ++built;
        compared += compare_at_locations(ctx, low, view, sym, 20, 5, o);
      }
    }
  }
  // Every one of these outputs has a symbolic form (the cross-check is not vacuous).
  EXPECT_EQ(built, outputs);
  EXPECT_GT(compared, 200u);
}

// Kernel-written outputs at a symbolic location (Lowering::kernel_read_symbolic: the one writing thread
// solved from the index) evaluated at a location give what that location's own expression gives
// (exec::writers_of's inversion, thread by thread), at the same random inputs, on committed GPU traces
// of our own programs: a fused min/sum kernel with a shared-memory tree (thread 0 of each block writes),
// at two shapes, the buggy variant, Triton kernels, and row kernels storing at several offsets.
TEST(SymbolicLocation, KernelWrittenElementsEvaluateAsTheirWriters) {
  const std::string ex = std::string(DIRIGO_SOURCE_DIR) + "/examples/";
  struct Case {
    std::string bundle;
    bool must;  // the candidate has a symbolic form
    bool trim;  // the shared prefix (the transposed convolution) trimmed, as check does
  };
  const std::vector<Case> cases = {{"running_example/bundle-gpu-fixed", true, false},
                                   {"running_example/bundle-gpu-buggy", true, false},
                                   {"running_example/bundle-gpu-today-fixed", true, true},
                                   {"triton/rowsum/bundle-gpu-good", true, false},
                                   {"triton/rowsum/bundle-gpu-bad", false, false},
                                   {"execute_bugs/softmax_correct/bundle", true, false},  // stores at 2 offsets
                                   {"execute_bugs/layernorm_correct/bundle", true, false},
                                   {"execute_bugs/center_rows_correct/bundle", false, false}};
  size_t built = 0, compared = 0;
  for (const auto& [name, must, trim] : cases) {
    SCOPED_TRACE(name);
    bundle::Bundle b = bundle::read_bundle(ex + name);
    program::Merged m = program::merge(b, {trim, false});
    ir::Context ctx;
    check::Lowering low(ctx, b, m, false, {});
    low.execute_all();
    for (size_t o = 0; o < m.outputs.size(); ++o) {
      const program::View& view = m.outputs[o].cand;
      std::vector<ir::Expr> coords;
      for (size_t k = 0; k < view.shape.size(); ++k)
        coords.push_back(view.shape[k] == 1 ? ctx.bv_const(ir::Sort::BV64, 0)
                                            : ctx.var("loc." + std::to_string(k), ir::Sort::BV64,
                                                      ir::Bounds{0, uint64_t(view.shape[k] - 1)}));
      std::string why;
      ir::Expr sym = low.element_symbolic(view, coords, &why);
      if (must) EXPECT_TRUE(sym) << why;
      if (!sym) continue;
      ++built;
      compared += compare_at_locations(ctx, low, view, sym, 12, 3, o);
    }
  }
  EXPECT_GE(built, 4u);
  EXPECT_GT(compared, 80u);
}

// Both programs the same function: every output is decided once at its symbolic location and the pair
// is VERIFIED after min_locations of each output one by one; with the option off each location is
// decided on its own. An output that differs is still found (BUG) beside one decided symbolically.
TEST(SymbolicLocation, SameExpressionDecidesEveryLocationOfTheOutput) {
  auto ref = conv_gn("ref", "reference"), cand = conv_gn("new", "candidate");
  bundle::Bundle b = make_bundle({&ref, &cand});
  check::Options opt;
  opt.budget_s = 60;
  opt.trim_prefix = false;  // (trimmed, the whole of identical programs would be a shared input)
  check::Report r = check::check_bundle(b, opt);
  ASSERT_EQ(r.outcome, check::Outcome::Verified) << r.reason;
  EXPECT_NE(r.outputs[0].symbolic_expr.find("rsqrt"), std::string::npos) << r.outputs[0].symbolic_expr;  // built, not a leaf
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_TRUE(r.outputs[0].symbolic) << r.outputs[0].symbolic_how;
  EXPECT_EQ(r.symbolic_locations, size_t(r.total_locations) - opt.min_locations);
  EXPECT_EQ(r.equal, size_t(r.total_locations));
  EXPECT_EQ(r.locations.size(), opt.min_locations);  // the cross-check, one by one
  EXPECT_NE(r.outputs[0].symbolic_expr.find("loc0."), std::string::npos) << r.outputs[0].symbolic_expr;

  opt.jobs = 2;  // the same with two workers taking the spot locations
  check::Report two = check::check_bundle(b, opt);
  EXPECT_EQ(two.outcome, check::Outcome::Verified) << two.reason;
  EXPECT_EQ(two.symbolic_locations, r.symbolic_locations);
  EXPECT_EQ(two.locations.size(), opt.min_locations);
  opt.jobs = 1;

  opt.symbolic_location = false;
  check::Report off = check::check_bundle(b, opt);
  EXPECT_EQ(off.symbolic_locations, 0u);
  EXPECT_FALSE(off.outputs[0].symbolic);
  EXPECT_GT(off.locations.size(), opt.min_locations);

  // through reshapes of computed tensors (division and remainder of the coordinates)
  auto gr = group_centre_by_hand("ref", "reference"), gc = group_centre_by_hand("new", "candidate");
  opt.symbolic_location = true;
  check::Report reshaped = check::check_bundle(make_bundle({&gr, &gc}), opt);
  EXPECT_EQ(reshaped.outcome, check::Outcome::Verified) << reshaped.reason;
  EXPECT_TRUE(reshaped.outputs[0].symbolic) << reshaped.outputs[0].symbolic_how;

  auto lr = linear_bn("ref", "reference", relu), lc = linear_bn("new", "candidate", sigmoid);
  check::Report bug = check::check_bundle(make_bundle({&lr, &lc}), opt);
  EXPECT_EQ(bug.outcome, check::Outcome::Bug) << bug.reason;
  ASSERT_EQ(bug.outputs.size(), 2u);
  EXPECT_FALSE(bug.outputs[0].symbolic);
  EXPECT_TRUE(bug.outputs[1].symbolic) << bug.outputs[1].symbolic_how;  // the linear layer itself
}

// The rule for a location of an output proven equal at its symbolic location, decided one by one.
TEST(SymbolicLocation, SettledLocationsFoldAsTheProofSays) {
  using check::detail::fold_settled_location;
  check::LocationResult undecided;  // a timeout one by one: equal, exactly
  undecided.verdict = smt::Verdict::Timeout;
  undecided.reason = "z3: interrupted";
  ASSERT_TRUE(fold_settled_location(undecided, "the same expression", {}));
  EXPECT_EQ(undecided.verdict, smt::Verdict::Equal);
  EXPECT_NE(undecided.reason.find("z3: interrupted"), std::string::npos);
  check::LocationResult tolerance;  // within the tolerance one by one: exactly
  tolerance.verdict = smt::Verdict::Equal;
  tolerance.stage = smt::Stage::Tolerance;
  ASSERT_TRUE(fold_settled_location(tolerance, "x", {}));
  EXPECT_NE(tolerance.stage, smt::Stage::Tolerance);
  check::LocationResult exact;  // already exact: untouched
  exact.verdict = smt::Verdict::Equal;
  exact.stage = smt::Stage::Solver;
  ASSERT_TRUE(fold_settled_location(exact, "x", {}));
  EXPECT_EQ(exact.stage, smt::Stage::Solver);
  EXPECT_TRUE(exact.reason.empty());
  check::LocationResult modulo;  // an output equal modulo an approximation: its undecided locations so too
  modulo.verdict = smt::Verdict::Unknown;
  ASSERT_TRUE(fold_settled_location(modulo, "x", {"Fp32Constants"}));
  EXPECT_EQ(modulo.verdict, smt::Verdict::Equal);
  EXPECT_EQ(modulo.approximations, std::vector<std::string>{"Fp32Constants"});
  check::LocationResult tier;  // the falsification tier's numbers differ: undecided, not a BUG
  tier.verdict = smt::Verdict::Differ;
  tier.confirmed_f32 = true;
  tier.sampled = check::LocationResult::SampledPoint{};
  ASSERT_TRUE(fold_settled_location(tier, "x", {}));
  EXPECT_EQ(tier.verdict, smt::Verdict::Unknown);
  EXPECT_TRUE(tier.numbers_differ);
  EXPECT_FALSE(tier.confirmed_f32);
  check::LocationResult proven_then_tier;  // equal one by one, but the tier's numbers differ: stays undecided
  proven_then_tier.verdict = smt::Verdict::Unknown;
  proven_then_tier.numbers_differ = true;
  ASSERT_TRUE(fold_settled_location(proven_then_tier, "x", {}));
  EXPECT_EQ(proven_then_tier.verdict, smt::Verdict::Unknown);
  check::LocationResult symbolic;  // a symbolic difference contradicts the proof
  symbolic.verdict = smt::Verdict::Differ;
  symbolic.confirmed_f32 = true;
  EXPECT_FALSE(fold_settled_location(symbolic, "x", {}));
}
