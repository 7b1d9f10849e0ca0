// Issue #5's location, decided the check's way for giant locations: numeric evaluation (check/numeric.h)
// of one output element of training-mode batch norm over a Linear (x[M,K] @ W[N,K]^T + b), at two
// random points, from a bundle built in memory. The counterpart of bench_ir's BM_BatchNormOverGemm,
// which builds the same location's expression (16.8 M nodes at M = 1024, K = 8192).
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include "bundle/io.h"
#include "check/lower.h"
#include "check/numeric.h"
#include "program/merge.h"

using namespace dirigo;
using J = nlohmann::ordered_json;

namespace {

J empty_program(const char* name, const char* role) {
  return J{{"name", name}, {"role", role}, {"storages", J::array()}, {"tensors", J::array()}, {"inputs", J::array()},
           {"outputs", J::array()}, {"ops", J::array()}};
}

// Adds a contiguous float32 tensor (with its own storage) to a program; returns its id.
struct Tensors {
  J& p;
  int n = 0;
  std::string operator()(const std::vector<int64_t>& shape) {
    int64_t numel = 1;
    for (auto s : shape) numel *= s;
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
    std::string id = "t" + std::to_string(n), sid = "s" + std::to_string(n++);
    p["storages"].push_back(J{{"id", sid}, {"nbytes", numel * 4}});
    p["tensors"].push_back(J{{"id", id}, {"storage", sid}, {"offset", 0}, {"shape", shape}, {"strides", strides},
                             {"dtype", "float32"}});
    return id;
  }
};

void add_op(J& p, const char* aten, std::vector<J> args, std::vector<std::string> outs) {
  p["ops"].push_back(J{{"kind", "aten"}, {"name", aten}, {"overload", "default"}, {"args", args},
                       {"kwargs", J::object()}, {"outputs", outs}, {"mutates", J::array()}});
}

// Training-mode batch norm of y (weight g, bias beta) into z, the program's output out0.
void batch_norm_output(J& p, const std::string& y, const std::string& g, const std::string& beta, const std::string& z,
                       const std::string& mean, const std::string& invstd) {
  auto T = [](const std::string& id) { return J{{"tensor", id}}; };
  add_op(p, "aten::native_batch_norm",
         {T(y), T(g), T(beta), J{{"none", true}}, J{{"none", true}}, J{{"scalar", true}, {"type", "bool"}},
          J{{"scalar", 0.1}, {"type", "float"}}, J{{"scalar", 1e-5}, {"type", "float"}}},
         {z, mean, invstd});
  p["outputs"].push_back(J{{"name", "out0"}, {"tensor", z}});
}

// One program: x -> linear(W, b) -> native_batch_norm(training) -> out0.
J program(const char* name, const char* role, int64_t M, int64_t K, int64_t N) {
  J p = empty_program(name, role);
  Tensors tensor{p};
  auto T = [](const std::string& id) { return J{{"tensor", id}}; };
  auto x = tensor({M, K}), w = tensor({N, K}), b = tensor({N}), g = tensor({N}), beta = tensor({N});
  auto y = tensor({M, N}), z = tensor({M, N}), mean = tensor({N}), invstd = tensor({N});
  p["inputs"] = J::array({J{{"name", "x"}, {"tensor", x}, {"kind", "input"}},
                          J{{"name", "fc.weight"}, {"tensor", w}, {"kind", "parameter"}},
                          J{{"name", "fc.bias"}, {"tensor", b}, {"kind", "parameter"}},
                          J{{"name", "bn.weight"}, {"tensor", g}, {"kind", "parameter"}},
                          J{{"name", "bn.bias"}, {"tensor", beta}, {"kind", "parameter"}}});
  auto op = [&](const char* aten, std::vector<J> args, std::vector<std::string> outs) { add_op(p, aten, args, outs); };
  op("aten::linear", {T(x), T(w), T(b)}, {y});
  batch_norm_output(p, y, g, beta, z, mean, invstd);
  return p;
}

void BM_NumericBatchNormOverGemm(benchmark::State& state) {
  const int64_t M = state.range(0), K = state.range(1), N = 4;
  J m{{"format", "dirigo-bundle"}, {"version", 1}, {"modules", J::array({J{{"id", "m0"}, {"path", "ptx/m0.ptx"}}})},
      {"programs", J::array({program("ref", "reference", M, K, N), program("new", "candidate", M, K, N)})}};
  bundle::Bundle b = bundle::parse_manifest(m.dump());
  program::Merged merged = program::merge(b, {false, false});
  uint64_t elements = 0, template_nodes = 0;
  double value = 0;
  for (auto _ : state) {
    ir::Context ctx;
    check::Lowering low(ctx, b, merged, true, {});
    check::NumericEvaluator ev(low, {.seed = 1, .points = {0, 1}});
    value = ev.element(merged.outputs[0].ref, 0)[0];
    benchmark::DoNotOptimize(value);
    elements = ev.stats().elements;
    template_nodes = ev.stats().template_nodes;
  }
  state.counters["elements"] = double(elements);
  state.counters["template_nodes"] = double(template_nodes);
  state.counters["products"] = double(M * K);
}
BENCHMARK(BM_NumericBatchNormOverGemm)->Args({64, 512})->Args({1024, 8192})->Unit(benchmark::kMillisecond)->Iterations(1);

// One program: x[N,C,D,H,W] -> conv_transpose3d(W[C,OC,k,k,k], bias, stride 1) -> batch norm
// (training) -> out0: pair 039's shape (problem 77), smaller. Its first location needs every
// convolution element of channel 0.
J conv_program(const char* name, const char* role, int64_t N, int64_t C, int64_t D, int64_t H, int64_t k) {
  J p = empty_program(name, role);
  Tensors tensor{p};
  auto T = [](const std::string& id) { return J{{"tensor", id}}; };
  auto ints = [](std::vector<int64_t> xs) {
    J l = J::array();
    for (auto x : xs) l.push_back(J{{"scalar", x}, {"type", "int"}});
    return J{{"list", l}};
  };
  const int64_t OC = 2, OD = D + k - 1, OH = H + k - 1;
  auto x = tensor({N, C, D, H, H}), w = tensor({C, OC, k, k, k}), b = tensor({OC}), g = tensor({OC}),
       beta = tensor({OC});
  auto y = tensor({N, OC, OD, OH, OH}), z = tensor({N, OC, OD, OH, OH}), mean = tensor({OC}), invstd = tensor({OC});
  p["inputs"] = J::array({J{{"name", "x"}, {"tensor", x}, {"kind", "input"}},
                          J{{"name", "up.weight"}, {"tensor", w}, {"kind", "parameter"}},
                          J{{"name", "up.bias"}, {"tensor", b}, {"kind", "parameter"}},
                          J{{"name", "bn.weight"}, {"tensor", g}, {"kind", "parameter"}},
                          J{{"name", "bn.bias"}, {"tensor", beta}, {"kind", "parameter"}}});
  auto op = [&](const char* aten, std::vector<J> args, std::vector<std::string> outs) { add_op(p, aten, args, outs); };
  op("aten::convolution", {T(x), T(w), T(b), ints({1, 1, 1}), ints({0, 0, 0}), ints({1, 1, 1}),
                           J{{"scalar", true}, {"type", "bool"}}, ints({0, 0, 0}), J{{"scalar", 1}, {"type", "int"}}},
     {y});
  batch_norm_output(p, y, g, beta, z, mean, invstd);
  return p;
}

// Both programs of the transposed-convolution + batch-norm pair, merged.
std::pair<bundle::Bundle, program::Merged> conv_bundle(int64_t N, int64_t C, int64_t D, int64_t H, int64_t k) {
  J m{{"format", "dirigo-bundle"}, {"version", 1}, {"modules", J::array({J{{"id", "m0"}, {"path", "ptx/m0.ptx"}}})},
      {"programs", J::array({conv_program("ref", "reference", N, C, D, H, k),
                             conv_program("new", "candidate", N, C, D, H, k)})}};
  bundle::Bundle b = bundle::parse_manifest(m.dump());
  program::Merged merged = program::merge(b, {false, false});
  return {std::move(b), std::move(merged)};
}

// The reference program's evaluator at point 0, fp64 and fp32 lanes (what check.cpp makes per point).
struct ConvRig {
  ir::Context ctx;
  check::Lowering low;
  check::NumericEvaluator ev;
  ConvRig(const bundle::Bundle& b, const program::Merged& m)
      : low(ctx, b, m, true, {}), ev(low, {.seed = 1, .points = {0, 0}, .precisions = {ir::Precision::F64, ir::Precision::F32}}) {}
};

// The check's way: one point in fp64 and fp32 together (check.cpp's numeric_decide).
void BM_NumericBatchNormOverConvTranspose3d(benchmark::State& state) {
  const int64_t N = state.range(0), C = state.range(1), D = state.range(2), H = state.range(3), k = 5;
  auto [b, merged] = conv_bundle(N, C, D, H, k);
  check::NumericEvaluator::Stats st;
  for (auto _ : state) {
    ConvRig rig(b, merged);
    check::NumericEvaluator& ev = rig.ev;
    benchmark::DoNotOptimize(ev.element(merged.outputs[0].ref, 0)[0]);
    st = ev.stats();
  }
  state.counters["elements"] = double(st.elements);
  state.counters["template_nodes"] = double(st.template_nodes);
  state.counters["products"] = double(st.products);
}
BENCHMARK(BM_NumericBatchNormOverConvTranspose3d)->Args({2, 16, 4, 8})->Args({4, 64, 8, 16})->Args({4, 64, 8, 32})
    ->Unit(benchmark::kMillisecond)->Iterations(1);

// What the check pays before building the first location of an output: the size estimate (one
// template per SSA value, in the evaluator's scratch context; check.cpp's estimated_too_large).
void BM_NumericEstimateConvTranspose3d(benchmark::State& state) {
  const int64_t N = state.range(0), C = state.range(1), D = state.range(2), H = state.range(3), k = 5;
  auto [b, merged] = conv_bundle(N, C, D, H, k);
  check::NumericEvaluator::Size size;
  for (auto _ : state) {
    ConvRig rig(b, merged);
    check::NumericEvaluator& ev = rig.ev;
    size = ev.estimate(merged.outputs[0].ref, 0);
  }
  state.counters["elements"] = size.elements;
  state.counters["products"] = size.products;
}
BENCHMARK(BM_NumericEstimateConvTranspose3d)->Args({4, 64, 8, 32})->Args({16, 64, 16, 32})
    ->Unit(benchmark::kMillisecond)->Iterations(1);

// Many random points at once as vector lanes (the falsification tier's way): `lanes` points in fp64,
// then (with f32 = 1) the same points in IEEE fp32. f64_mac_per_s: multiply-adds of sums of products
// times fp64 lanes per CPU second (the target: 10^9 per core); lane_mac_per_s: all lanes.
check::NumericOptions lane_options(int64_t lanes, bool f32) {
  check::NumericOptions o{.seed = 1};
  o.points.clear();
  for (int k = 0; k < (f32 ? 2 : 1); ++k)
    for (int64_t p = 0; p < lanes; ++p) {
      o.points.push_back(unsigned(1024 + p));
      o.precisions.push_back(k ? ir::Precision::F32 : ir::Precision::F64);
    }
  return o;
}

void lane_counters(benchmark::State& state, const check::NumericEvaluator::Stats& st, int64_t lanes, bool f32) {
  state.counters["elements"] = double(st.elements);
  state.counters["products"] = double(st.products);
  state.counters["f64_mac_per_s"] = benchmark::Counter(double(st.products) * double(lanes), benchmark::Counter::kIsRate);
  state.counters["lane_mac_per_s"] =
      benchmark::Counter(double(st.products) * double(lanes * (f32 ? 2 : 1)), benchmark::Counter::kIsRate);
}

// GEMM cone: out0[0] of training batch norm over x[M,K] @ W^T needs column 0 of the product: M
// dot products of K terms.
void BM_NumericLanesGemm(benchmark::State& state) {
  const int64_t M = state.range(0), K = state.range(1), lanes = state.range(2), N = 4;
  const bool f32 = state.range(3);
  J m{{"format", "dirigo-bundle"}, {"version", 1}, {"modules", J::array({J{{"id", "m0"}, {"path", "ptx/m0.ptx"}}})},
      {"programs", J::array({program("ref", "reference", M, K, N), program("new", "candidate", M, K, N)})}};
  bundle::Bundle b = bundle::parse_manifest(m.dump());
  program::Merged merged = program::merge(b, {false, false});
  check::NumericEvaluator::Stats st;
  for (auto _ : state) {
    ir::Context ctx;
    check::Lowering low(ctx, b, merged, true, {});
    check::NumericEvaluator ev(low, lane_options(lanes, f32));
    benchmark::DoNotOptimize(ev.element(merged.outputs[0].ref, 0)[0]);
    st = ev.stats();
  }
  lane_counters(state, st, lanes, f32);
}
BENCHMARK(BM_NumericLanesGemm)->Args({512, 4096, 1, 0})->Args({512, 4096, 8, 0})->Args({512, 4096, 16, 0})
    ->Args({512, 4096, 10, 1})->Unit(benchmark::kMillisecond)->Iterations(1);

// Convolution cone: the first location of training batch norm over a transposed 3-D convolution.
void BM_NumericLanesConvTranspose3d(benchmark::State& state) {
  const int64_t lanes = state.range(0), k = 5;
  const bool f32 = state.range(1);
  auto [b, merged] = conv_bundle(4, 64, 8, 16, k);
  check::NumericEvaluator::Stats st;
  for (auto _ : state) {
    ir::Context ctx;
    check::Lowering low(ctx, b, merged, true, {});
    check::NumericEvaluator ev(low, lane_options(lanes, f32));
    benchmark::DoNotOptimize(ev.element(merged.outputs[0].ref, 0)[0]);
    st = ev.stats();
  }
  lane_counters(state, st, lanes, f32);
}
BENCHMARK(BM_NumericLanesConvTranspose3d)->Args({1, 0})->Args({8, 0})->Args({16, 0})->Args({10, 1})
    ->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
