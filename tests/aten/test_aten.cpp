// Structural checks of the per-element equations (the numeric agreement with
// PyTorch is tested in tests/python/test_aten_*.py).
#include <gtest/gtest.h>

#include <limits>

#include "aten/aten.h"
#include "ir/eval.h"

namespace dirigo::aten {
namespace {

using ir::Expr;
using ir::Op;

// A Context with tensors 0..9 registered (ids are dense, in creation order).
struct Ctx : ir::Context {
  Ctx() {
    for (int i = 0; i < 10; ++i) tensor("t" + std::to_string(i));
  }
};

TensorRef ref(int32_t id, std::vector<int64_t> shape, std::vector<int64_t> strides = {}, int64_t offset = 0,
              DType d = DType::Float32) {
  TensorRef t;
  t.tensor_id = id;
  t.shape = std::move(shape);
  t.strides = std::move(strides);
  t.offset = offset;
  t.dtype = d;
  return t;
}

OpCall call(std::string name, std::vector<Arg> args, std::vector<TensorRef> outs,
            std::vector<std::pair<std::string, Arg>> kwargs = {}) {
  OpCall c;
  c.name = std::move(name);
  c.args = std::move(args);
  c.outputs = std::move(outs);
  c.kwargs = std::move(kwargs);
  return c;
}

Expr at(ir::Context& cx, const OpCall& c, std::vector<int64_t> idx, int out = 0) { return element(cx, c, out, idx); }

// Number of product terms (Mul nodes) among the operands of a sum.
size_t products(Expr e) {
  if (e->op != Op::Add) return e->op == Op::Mul ? 1 : 0;
  size_t n = 0;
  for (Expr a : e->args()) n += a->op == Op::Mul;
  return n;
}

TEST(AtenNames, Canonical) {
  EXPECT_EQ(canonical_name("aten::add", "Tensor"), "add.Tensor");
  EXPECT_EQ(canonical_name("aten.add.Tensor"), "add.Tensor");
  EXPECT_EQ(canonical_name("aten.relu.default"), "relu");
  EXPECT_EQ(canonical_name("aten::convolution", "default"), "convolution");
  EXPECT_EQ(canonical_name("relu_"), "relu_");
  EXPECT_TRUE(is_supported("aten::relu_"));  // in-place form shares the functional semantics
  EXPECT_TRUE(is_supported("aten.convolution.default"));
  EXPECT_FALSE(is_supported("aten::frobnicate"));
  EXPECT_GT(supported_ops().size(), 300u);
}

TEST(AtenElementwise, ReluIsMaxWithZero) {
  Ctx cx;
  auto c = call("aten::relu", {Arg::of(ref(0, {2, 3}))}, {ref(9, {2, 3})});
  EXPECT_EQ(at(cx, c, {1, 2}), cx.max(cx.elem(0, 5), cx.real_const(0)));
}

TEST(AtenElementwise, AddWithAlphaAndBroadcast) {
  Ctx cx;
  // x: [3,1] stored transposed-ish with stride 7 at offset 2; y: [4]
  auto c = call("aten::add.Tensor", {Arg::of(ref(0, {3, 1}, {7, 1}, 2)), Arg::of(ref(1, {4}))}, {ref(9, {3, 4})},
                {{"alpha", Arg::of_real(2.0)}});
  Expr e = at(cx, c, {2, 3});
  EXPECT_EQ(e, cx.add(cx.elem(0, 2 + 14), cx.mul(cx.real_const(2), cx.elem(1, 3))));
}

TEST(AtenElementwise, IntegerAddIsBitvector) {
  Ctx cx;
  auto c = call("aten::add.Tensor", {Arg::of(ref(0, {2}, {}, 0, DType::Int64)), Arg::of(ref(1, {2}, {}, 0, DType::Int64))},
                {ref(9, {2}, {}, 0, DType::Int64)});
  Expr e = at(cx, c, {1});
  EXPECT_EQ(e->sort, ir::Sort::BV64);
  EXPECT_EQ(e, cx.bv_add(cx.elem(0, 1, ir::Sort::BV64), cx.elem(1, 1, ir::Sort::BV64)));
}

TEST(AtenElementwise, ComparisonStoresABoolByte) {
  Ctx cx;
  auto c = call("aten::gt.Scalar", {Arg::of(ref(0, {2})), Arg::of_real(0.5)}, {ref(9, {2}, {}, 0, DType::Bool)});
  Expr e = at(cx, c, {0});
  EXPECT_EQ(e->sort, ir::Sort::BV8);
  EXPECT_EQ(e->op, Op::Ite);
}

TEST(AtenActivation, NamedFunctionsForStandardParameters) {
  Ctx cx;
  auto gelu = call("aten::gelu", {Arg::of(ref(0, {4}))}, {ref(9, {4})});
  Expr e = at(cx, gelu, {3});
  ASSERT_EQ(e->op, Op::Call);
  EXPECT_EQ(e->fn(), ir::Fn::GeluErf);
  gelu.kwargs.emplace_back("approximate", Arg::of_string("tanh"));
  EXPECT_EQ(at(cx, gelu, {3})->fn(), ir::Fn::GeluTanh);
  auto sig = call("aten::sigmoid", {Arg::of(ref(0, {4}))}, {ref(9, {4})});
  EXPECT_EQ(at(cx, sig, {0}), cx.call(ir::Fn::Sigmoid, cx.elem(0, 0)));
}

// conv2d: input [1,2,5,5], weight [3,2,3,3], padding 1, bias
OpCall conv2d(std::vector<int64_t> stride, bool with_bias) {
  return call("aten::convolution",
              {Arg::of(ref(0, {1, 2, 5, 5})), Arg::of(ref(1, {3, 2, 3, 3})), with_bias ? Arg::of(ref(2, {3})) : Arg::none(),
               Arg::of_ints(stride), Arg::of_ints({1, 1}), Arg::of_ints({1, 1}), Arg::of_bool(false), Arg::of_ints({0, 0}),
               Arg::of_int(1)},
              {ref(9, {1, 3, 5, 5})});
}

TEST(AtenConv, CornerHasOnlyInRangeTaps) {
  Ctx cx;
  Expr corner = at(cx, conv2d({1, 1}, true), {0, 1, 0, 0});
  ASSERT_EQ(corner->op, Op::Add);
  EXPECT_EQ(products(corner), 2u * 4u);  // 2 channels x 2x2 taps inside the input
  EXPECT_EQ(corner->nargs, 2u * 4u + 1u);  // + bias
  Expr interior = at(cx, conv2d({1, 1}, false), {0, 1, 2, 2});
  EXPECT_EQ(products(interior), 2u * 9u);
  EXPECT_EQ(interior->nargs, 2u * 9u);
}

TEST(AtenConv, GroupsReadOnlyTheirChannels) {
  Ctx cx;
  // groups=2: input [1,4,3,3], weight [2,2,1,1]; output channel 1 reads input channels 2,3
  auto c = call("aten::convolution",
                {Arg::of(ref(0, {1, 4, 3, 3})), Arg::of(ref(1, {2, 2, 1, 1})), Arg::none(), Arg::of_ints({1, 1}),
                 Arg::of_ints({0, 0}), Arg::of_ints({1, 1}), Arg::of_bool(false), Arg::of_ints({0, 0}), Arg::of_int(2)},
                {ref(9, {1, 2, 3, 3})});
  Expr e = at(cx, c, {0, 1, 1, 1});
  Expr want = cx.add(cx.mul(cx.elem(0, 2 * 9 + 4), cx.elem(1, 2)), cx.mul(cx.elem(0, 3 * 9 + 4), cx.elem(1, 3)));
  EXPECT_EQ(e, want);
}

TEST(AtenConv, TransposedStrideSkipsNonIntegerTaps) {
  Ctx cx;
  // 1-D transposed: input [1,1,4], weight [1,1,3], stride 2: output o gets taps k with (o - k) even
  auto c = call("aten::convolution",
                {Arg::of(ref(0, {1, 1, 4})), Arg::of(ref(1, {1, 1, 3})), Arg::none(), Arg::of_ints({2}), Arg::of_ints({0}),
                 Arg::of_ints({1}), Arg::of_bool(true), Arg::of_ints({0}), Arg::of_int(1)},
                {ref(9, {1, 1, 9})});
  EXPECT_EQ(products(at(cx, c, {0, 0, 4})), 2u);  // k=0 (i=2), k=2 (i=1)
  EXPECT_EQ(at(cx, c, {0, 0, 3}), cx.mul(cx.elem(0, 1), cx.elem(1, 1)));  // only k=1
}

TEST(AtenConv, EvaluatesToHandComputedValue) {
  Ctx cx;
  auto c = call("aten::conv1d", {Arg::of(ref(0, {1, 1, 3})), Arg::of(ref(1, {1, 1, 2})), Arg::of(ref(2, {1}))},
                {ref(9, {1, 1, 2})});
  ir::Env env;
  env.elem = [](int32_t t, int64_t i, ir::Sort) {
    static const double x[] = {1, 2, 3}, w[] = {10, 100}, b[] = {0.5};
    return ir::Value::of_real(t == 0 ? x[i] : t == 1 ? w[i] : b[i]);
  };
  ir::Evaluator ev(env);
  EXPECT_DOUBLE_EQ(ev.real(at(cx, c, {0, 0, 1})), 2 * 10 + 3 * 100 + 0.5);
}

// The flat (x, w) index pairs of a 2-d convolution's terms, enumerated naively in the order the
// terms are summed: input channel of the group, then kernel taps row-major; taps outside skipped.
std::vector<std::pair<int64_t, int64_t>> naive_conv_terms(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws,
                                                          bool transposed, int64_t stride, int64_t pad,
                                                          int64_t groups, const std::vector<int64_t>& o, int64_t oc_total) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t C = xs[1], H = xs[2], W = xs[3], kh = ws[2], kw = ws[3];
  int64_t cin_g = C / groups, cout_g = transposed ? ws[1] : oc_total / groups, g = o[1] / cout_g;
  for (int64_t c = g * cin_g; c < (g + 1) * cin_g; ++c)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        int64_t y, x;
        if (transposed) {
          int64_t ny = o[2] + pad - i, nx = o[3] + pad - j;
          if (ny < 0 || nx < 0 || ny % stride || nx % stride) continue;
          y = ny / stride, x = nx / stride;
        } else {
          y = o[2] * stride - pad + i, x = o[3] * stride - pad + j;
        }
        if (y < 0 || x < 0 || y >= H || x >= W) continue;
        int64_t xi = ((o[0] * C + c) * H + y) * W + x;
        int64_t wi = transposed ? ((c * ws[1] + o[1] % cout_g) * kh + i) * kw + j
                                : ((o[1] * ws[1] + (c - g * cin_g)) * kh + i) * kw + j;
        out.emplace_back(xi, wi);
      }
  return out;
}

// With OpCall::sum_of_products set, a convolution hands its terms over as runs over the input
// channels of its valid taps (aten::Products::runs), the bias as the added term: expanded in order
// they are exactly the naive enumeration, and the element is the callback's value alone.
TEST(AtenConv, ProductsRunsAreTheTermsInOrder) {
  struct Case {
    bool transposed;
    int64_t stride, pad, groups;
    std::vector<int64_t> xs, ws, os;
  };
  for (const Case& k : {Case{false, 2, 1, 2, {2, 4, 5, 5}, {6, 2, 3, 3}, {2, 6, 3, 3}},
                        Case{true, 2, 1, 2, {2, 4, 3, 3}, {4, 3, 3, 3}, {2, 6, 5, 5}}}) {
    Ctx cx;
    auto c = call("aten::convolution",
                  {Arg::of(ref(0, k.xs)), Arg::of(ref(1, k.ws)), Arg::of(ref(2, {k.os[1]})), Arg::of_ints({k.stride, k.stride}),
                   Arg::of_ints({k.pad, k.pad}), Arg::of_ints({1, 1}), Arg::of_bool(k.transposed), Arg::of_ints({0, 0}),
                   Arg::of_int(k.groups)},
                  {ref(9, k.os)});
    Products seen;
    Expr marker = cx.elem(5, 0);
    c.sum_of_products = [&](const Products& p) {
      seen = p;
      return marker;
    };
    size_t elements = 0;
    for (int64_t n = 0; n < k.os[0]; ++n)
      for (int64_t oc = 0; oc < k.os[1]; ++oc)
        for (int64_t y = 0; y < k.os[2]; ++y)
          for (int64_t x = 0; x < k.os[3]; ++x) {
            std::vector<int64_t> o{n, oc, y, x};
            auto want = naive_conv_terms(k.xs, k.ws, k.transposed, k.stride, k.pad, k.groups, o, k.os[1]);
            seen = Products{};
            Expr e = at(cx, c, o);
            if (want.empty()) {  // no tap inside: the bias alone
              EXPECT_EQ(e, cx.elem(2, oc));
              continue;
            }
            ASSERT_EQ(e, marker);
            ASSERT_GT(seen.runs, 0);
            ASSERT_EQ(seen.a_list.size(), seen.b_list.size());
            EXPECT_EQ(seen.count, seen.runs * int64_t(seen.a_list.size()));
            EXPECT_EQ(seen.a_tensor, 0);
            EXPECT_EQ(seen.b_tensor, 1);
            EXPECT_EQ(seen.c_tensor, 2);
            EXPECT_EQ(seen.c_index, oc);
            std::vector<std::pair<int64_t, int64_t>> got;
            for (int64_t r = 0; r < seen.runs; ++r)
              for (size_t t = 0; t < seen.a_list.size(); ++t)
                got.emplace_back(seen.a_first + r * seen.a_step + seen.a_list[t], seen.b_first + r * seen.b_step + seen.b_list[t]);
            EXPECT_EQ(got, want) << "output " << n << "," << oc << "," << y << "," << x;
            ++elements;
          }
    EXPECT_GT(elements, 0u);
  }
}

TEST(AtenLinalg, MmIsOneNarySum) {
  Ctx cx;
  auto c = call("aten::mm", {Arg::of(ref(0, {2, 7})), Arg::of(ref(1, {7, 3}))}, {ref(9, {2, 3})});
  Expr e = at(cx, c, {1, 2});
  ASSERT_EQ(e->op, Op::Add);
  EXPECT_EQ(e->nargs, 7u);
  EXPECT_EQ(products(e), 7u);
}

TEST(AtenReduce, AmaxIsNaryMaxAndArgmaxIsBv64) {
  Ctx cx;
  auto x = Arg::of(ref(0, {3, 5}));
  auto amax = call("aten::amax", {x, Arg::of_ints({1})}, {ref(9, {3})});
  Expr e = at(cx, amax, {2});
  ASSERT_EQ(e->op, Op::Max);
  EXPECT_EQ(e->nargs, 5u);
  auto argmax = call("aten::argmax", {x, Arg::of_int(1)}, {ref(9, {3}, {}, 0, DType::Int64)});
  EXPECT_EQ(at(cx, argmax, {0})->sort, ir::Sort::BV64);
}

TEST(AtenReduce, SoftmaxReadsTheWholeRow) {
  Ctx cx;
  auto c = call("aten::_softmax", {Arg::of(ref(0, {2, 6})), Arg::of_int(-1), Arg::of_bool(false)}, {ref(9, {2, 6})});
  Expr e = at(cx, c, {1, 4});
  auto lv = ir::leaves(e);
  EXPECT_EQ(lv.size(), 6u);
  EXPECT_TRUE(ir::contains_op(e, Op::Call));
}

TEST(AtenNorm, TrainingBatchNormDependsOnTheWholeChannel) {
  Ctx cx;
  auto c = call("aten::native_batch_norm",
                {Arg::of(ref(0, {2, 3, 2})), Arg::of(ref(1, {3})), Arg::of(ref(2, {3})), Arg::none(), Arg::none(),
                 Arg::of_bool(true), Arg::of_real(0.1), Arg::of_real(1e-5)},
                {ref(9, {2, 3, 2}), ref(8, {3}), ref(7, {3})});
  EXPECT_EQ(ir::leaves(at(cx, c, {1, 2, 1})).size(), 4u + 2u);  // 2x2 channel elements + weight + bias
  EXPECT_EQ(ir::leaves(at(cx, c, {1}, 1)).size(), 4u);         // saved mean
}

// ~mask on a bool tensor is logical not; on an integer tensor a bitvector not of its width.
TEST(AtenElementwise, BitwiseNotOnBoolAndInt) {
  Ctx cx;
  ir::Env env;
  env.elem = [](int32_t t, int64_t, ir::Sort s) {
    if (s == ir::Sort::Bool) return ir::Value::of_bool(true);
    return t == 0 ? ir::Value::of_bv(s, 1) : ir::Value::of_bv(s, 5);  // a true byte / the int32 5
  };
  ir::Evaluator ev(env);
  auto b = call("aten::bitwise_not", {Arg::of(ref(0, {3}, {}, 0, DType::Bool))}, {ref(9, {3}, {}, 0, DType::Bool)});
  EXPECT_EQ(ev(at(cx, b, {2})).bits, 0u);  // ~true = false
  auto i = call("aten::bitwise_not", {Arg::of(ref(1, {3}, {}, 0, DType::Int32))}, {ref(8, {3}, {}, 0, DType::Int32)});
  EXPECT_EQ(ev(at(cx, i, {2})).bits, 0xFFFFFFFAu);  // ~5 = -6 in 32 bits
  auto f = call("aten::bitwise_not", {Arg::of(ref(2, {3}))}, {ref(7, {3})});
  EXPECT_THROW(at(cx, f, {0}), std::invalid_argument);
}

// The reals have no infinities: masked_fill(mask, -inf) is UNSUPPORTED, never a wrong finite value.
TEST(AtenErrors, NonFiniteConstantIsUnsupported) {
  Ctx cx;
  auto c = call("aten::masked_fill", {Arg::of(ref(0, {2})), Arg::of(ref(1, {2}, {}, 0, DType::Bool)),
                                      Arg::of_real(-std::numeric_limits<double>::infinity())},
                {ref(9, {2})});
  c.overload = "Scalar";
  try {
    at(cx, c, {0});
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& u) {
    EXPECT_NE(std::string(u.what()).find("non-finite constant -inf"), std::string::npos) << u.what();
  }
}

// Training mode writes running_mean/running_var in place: outputs 3 and 4 (after the three returns)
// are (1 - momentum)·old + momentum·batch statistic, the variance unbiased.
TEST(AtenNorm, TrainingBatchNormUpdatesRunningStatistics) {
  Ctx cx;
  auto args = [](bool training) {
    return std::vector<Arg>{Arg::of(ref(0, {2, 3, 2})), Arg::none(), Arg::none(), Arg::of(ref(1, {3})),
                            Arg::of(ref(2, {3})), Arg::of_bool(training), Arg::of_real(0.25), Arg::of_real(1e-5)};
  };
  std::vector<TensorRef> outs = {ref(9, {2, 3, 2}), ref(8, {3}), ref(7, {3}), ref(1, {3}), ref(2, {3})};
  WrittenArguments w = written_arguments("aten::native_batch_norm");
  EXPECT_EQ(w.returns, 3);
  EXPECT_EQ(w.names, (std::vector<std::string>{"running_mean", "running_var"}));
  auto c = call("aten::native_batch_norm", args(true), outs);
  // channel 1 holds x[0,1,0], x[0,1,1], x[1,1,0], x[1,1,1] = t0 elements 2, 3, 8, 9
  ir::Env env;
  env.elem = [](int32_t t, int64_t i, ir::Sort) {
    static const double x[] = {0, 0, 1, 2, 0, 0, 0, 0, 3, 6, 0, 0}, rm[] = {0, 10, 0}, rv[] = {0, 4, 0};
    return ir::Value::of_real(t == 0 ? x[i] : t == 1 ? rm[i] : rv[i]);
  };
  ir::Evaluator ev(env);
  EXPECT_DOUBLE_EQ(ev.real(at(cx, c, {1}, 3)), 0.75 * 10 + 0.25 * 3);  // mean of 1, 2, 3, 6 = 3
  // biased var = 50/4 - 9 = 3.5, unbiased = 3.5 * 4/3
  EXPECT_DOUBLE_EQ(ev.real(at(cx, c, {1}, 4)), 0.75 * 4 + 0.25 * (3.5 * 4 / 3));
  auto e = call("aten::native_batch_norm", args(false), outs);
  EXPECT_EQ(at(cx, e, {1}, 3), cx.elem(1, 1));  // eval mode writes nothing: the old value
  EXPECT_TRUE(written_arguments("aten::relu").names.empty());
}

// out= overloads resolve to the functional overload of the same parameter types; `out` is never read.
TEST(AtenNames, OutOverloadsShareTheFunctionalSemantics) {
  EXPECT_EQ(resolved_name("aten::add", "out"), "add.Tensor");
  EXPECT_EQ(resolved_name("aten::sum", "IntList_out"), "sum.dim_IntList");
  EXPECT_EQ(resolved_name("aten::mm", "out"), "mm");
  EXPECT_EQ(resolved_name("aten::max", "dim_max"), "max.dim");
  EXPECT_EQ(resolved_name("aten::relu_"), "relu");
  EXPECT_EQ(resolved_name("aten::frobnicate", "out"), "");
  Ctx cx;
  auto c = call("aten::add", {Arg::of(ref(0, {2, 3})), Arg::of(ref(1, {2, 3}))}, {ref(9, {2, 3})},
                {{"alpha", Arg::of_int(1)}, {"out", Arg::of(ref(9, {2, 3}))}});
  c.overload = "out";
  EXPECT_EQ(at(cx, c, {1, 2}), cx.add(cx.elem(0, 5), cx.elem(1, 5)));
}

// The two-pass variance sum((x_i - mean)^2) would be O(M^2) nodes after canonicalization
// (each x_i - mean is a flat M+1-term sum); the equations must stay linear in M.
TEST(AtenNorm, StatisticsStayLinearInTheReducedSize) {
  Ctx cx;
  const uint64_t M = 64 * 64;
  auto bn = call("aten::native_batch_norm",
                 {Arg::of(ref(0, {64, 2, 8, 8})), Arg::none(), Arg::none(), Arg::none(), Arg::none(), Arg::of_bool(true),
                  Arg::of_real(0.1), Arg::of_real(1e-5)},
                 {ref(9, {64, 2, 8, 8}), ref(8, {2}), ref(7, {2})});
  EXPECT_LT(ir::dag_size(at(cx, bn, {3, 1, 4, 4})), 8 * M);
  auto ln = call("aten::native_layer_norm", {Arg::of(ref(0, {2, 4096})), Arg::of_ints({4096}), Arg::none(), Arg::none(),
                                              Arg::of_real(1e-5)},
                 {ref(9, {2, 4096}), ref(8, {2, 1}), ref(7, {2, 1})});
  EXPECT_LT(ir::dag_size(at(cx, ln, {1, 7})), 8 * M);
  auto var = call("aten::var.correction", {Arg::of(ref(0, {2, 4096})), Arg::of_ints({1})}, {ref(9, {2})});
  EXPECT_LT(ir::dag_size(at(cx, var, {1})), 8 * M);
}

// A StatsMemo makes every element of a channel/group/row reuse one built statistic: the same nodes
// as without it (hash-consing), one entry per reduced set, distinct entries for distinct inputs.
TEST(AtenNorm, StatsMemoBuildsEachStatisticOnce) {
  Ctx cx;
  StatsMemo memo;
  auto bn = [&](int32_t x, StatsMemo* m) {
    auto c = call("aten::native_batch_norm",
                  {Arg::of(ref(x, {2, 3, 2})), Arg::none(), Arg::none(), Arg::none(), Arg::none(), Arg::of_bool(true),
                   Arg::of_real(0.1), Arg::of_real(1e-5)},
                  {ref(9, {2, 3, 2}), ref(8, {3}), ref(7, {3})});
    c.stats_memo = m;
    return c;
  };
  auto with = bn(0, &memo), without = bn(0, nullptr);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t ch = 0; ch < 3; ++ch)
      for (int64_t w = 0; w < 2; ++w) EXPECT_EQ(at(cx, with, {n, ch, w}), at(cx, without, {n, ch, w}));
  EXPECT_EQ(at(cx, with, {2}, 1), at(cx, without, {2}, 1));  // saved mean: the same entry
  EXPECT_EQ(memo.entries.size(), 3u);                        // one per channel
  auto other = bn(1, &memo);                                 // another input: its own statistics
  EXPECT_NE(at(cx, other, {0, 0, 0}), at(cx, with, {0, 0, 0}));
  EXPECT_EQ(memo.entries.size(), 4u);
  auto gn = call("aten::native_group_norm", {Arg::of(ref(0, {2, 4, 3})), Arg::none(), Arg::none(), Arg::of_int(2),
                                              Arg::of_int(4), Arg::of_int(3), Arg::of_int(2), Arg::of_real(1e-5)},
                 {ref(9, {2, 4, 3}), ref(8, {2, 2}), ref(7, {2, 2})});
  auto gn_plain = gn;
  gn.stats_memo = &memo;
  for (int64_t ch = 0; ch < 4; ++ch) EXPECT_EQ(at(cx, gn, {1, ch, 2}), at(cx, gn_plain, {1, ch, 2}));
  EXPECT_EQ(memo.entries.size(), 6u);  // sample 1's two groups
  auto ln = call("aten::native_layer_norm", {Arg::of(ref(0, {2, 5})), Arg::of_ints({5}), Arg::none(), Arg::none(),
                                              Arg::of_real(1e-5)},
                 {ref(9, {2, 5}), ref(8, {2, 1}), ref(7, {2, 1})});
  auto ln_plain = ln;
  ln.stats_memo = &memo;
  for (int64_t r = 0; r < 2; ++r) EXPECT_EQ(at(cx, ln, {r, 3}), at(cx, ln_plain, {r, 3}));
  EXPECT_EQ(memo.entries.size(), 8u);  // one per row
}

TEST(AtenPool, MaxPoolInteriorAndPaddedCorner) {
  Ctx cx;
  auto c = call("aten::max_pool2d_with_indices",
                {Arg::of(ref(0, {1, 1, 6, 6})), Arg::of_ints({3, 3}), Arg::of_ints({1, 1}), Arg::of_ints({1, 1})},
                {ref(9, {1, 1, 6, 6}), ref(8, {1, 1, 6, 6}, {}, 0, DType::Int64)});
  EXPECT_EQ(at(cx, c, {0, 0, 2, 2})->nargs, 9u);
  EXPECT_EQ(at(cx, c, {0, 0, 0, 0})->nargs, 4u);
  EXPECT_EQ(at(cx, c, {0, 0, 0, 0}, 1)->sort, ir::Sort::BV64);
}

TEST(AtenView, PermuteMapsIndicesThroughStrides) {
  Ctx cx;
  auto c = call("aten::permute", {Arg::of(ref(0, {2, 3, 4})), Arg::of_ints({2, 0, 1})}, {ref(9, {4, 2, 3})});
  EXPECT_EQ(at(cx, c, {3, 1, 2}), cx.elem(0, 1 * 12 + 2 * 4 + 3));
}

TEST(AtenView, CastToIntRoundsTowardZero) {
  Ctx cx;
  auto c = call("aten::_to_copy", {Arg::of(ref(0, {2}))}, {ref(9, {2}, {}, 0, DType::Int64)},
                {{"dtype", Arg::of_dtype(DType::Int64)}});
  Expr e = at(cx, c, {1});
  ASSERT_EQ(e->op, Op::RealToBv);
  EXPECT_EQ(e->round_mode(), ir::RoundMode::Zero);
}

TEST(AtenLoss, ClassTargetIsALoad) {
  Ctx cx;
  auto c = call("aten::nll_loss_forward",
                {Arg::of(ref(0, {3, 5})), Arg::of(ref(1, {3}, {}, 0, DType::Int64)), Arg::none(), Arg::of_int(0),
                 Arg::of_int(-100)},
                {ref(9, {3}), ref(8, {})});
  EXPECT_TRUE(ir::contains_op(at(cx, c, {1}), Op::Load));
}

TEST(AtenErrors, UnsupportedNamesTheOpAndReason) {
  Ctx cx;
  auto drop = call("aten::dropout", {Arg::of(ref(0, {4})), Arg::of_real(0.5), Arg::of_bool(true)}, {ref(9, {4})});
  try {
    at(cx, drop, {0});
    FAIL() << "dropout in training mode must be unsupported";
  } catch (const Unsupported& u) {
    EXPECT_STREQ(u.what(), "UNSUPPORTED: aten op dropout (nondeterministic: dropout with p>0 in training mode)");
  }
  drop.args[2] = Arg::of_bool(false);
  EXPECT_EQ(at(cx, drop, {2}), cx.elem(0, 2));  // eval mode: identity
  auto unknown = call("aten::frobnicate", {Arg::of(ref(0, {4}))}, {ref(9, {4})});
  EXPECT_THROW(at(cx, unknown, {0}), Unsupported);
}

TEST(AtenErrors, MalformedCallsThrowInvalidArgument) {
  Ctx cx;
  auto relu = call("aten::relu", {Arg::of(ref(0, {4}))}, {ref(9, {4})});
  EXPECT_THROW(at(cx, relu, {4}), std::invalid_argument);     // location out of range
  EXPECT_THROW(at(cx, relu, {0, 0}), std::invalid_argument);  // wrong rank
  EXPECT_THROW(element(cx, relu, 1, std::vector<int64_t>{0}), std::invalid_argument);  // no output 1
  auto mm = call("aten::mm", {Arg::of_real(1.0), Arg::of(ref(0, {2, 2}))}, {ref(9, {2, 2})});
  EXPECT_THROW(at(cx, mm, {0, 0}), std::invalid_argument);
  EXPECT_THROW(parse_dtype("float13"), std::invalid_argument);
}

}  // namespace
}  // namespace dirigo::aten
