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

// One program: x -> linear(W, b) -> native_batch_norm(training) -> out0.
J program(const char* name, const char* role, int64_t M, int64_t K, int64_t N) {
  J p{{"name", name}, {"role", role}, {"storages", J::array()}, {"tensors", J::array()}, {"inputs", J::array()},
      {"outputs", J::array()}, {"ops", J::array()}};
  int n = 0;
  auto tensor = [&](std::vector<int64_t> shape) {
    int64_t numel = 1;
    for (auto s : shape) numel *= s;
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
    std::string id = "t" + std::to_string(n), sid = "s" + std::to_string(n++);
    p["storages"].push_back(J{{"id", sid}, {"nbytes", numel * 4}});
    p["tensors"].push_back(J{{"id", id}, {"storage", sid}, {"offset", 0}, {"shape", shape}, {"strides", strides},
                             {"dtype", "float32"}});
    return id;
  };
  auto T = [](const std::string& id) { return J{{"tensor", id}}; };
  auto x = tensor({M, K}), w = tensor({N, K}), b = tensor({N}), g = tensor({N}), beta = tensor({N});
  auto y = tensor({M, N}), z = tensor({M, N}), mean = tensor({N}), invstd = tensor({N});
  p["inputs"] = J::array({J{{"name", "x"}, {"tensor", x}, {"kind", "input"}},
                          J{{"name", "fc.weight"}, {"tensor", w}, {"kind", "parameter"}},
                          J{{"name", "fc.bias"}, {"tensor", b}, {"kind", "parameter"}},
                          J{{"name", "bn.weight"}, {"tensor", g}, {"kind", "parameter"}},
                          J{{"name", "bn.bias"}, {"tensor", beta}, {"kind", "parameter"}}});
  auto op = [&](const char* aten, std::vector<J> args, std::vector<std::string> outs) {
    p["ops"].push_back(J{{"kind", "aten"}, {"name", aten}, {"overload", "default"}, {"args", args},
                         {"kwargs", J::object()}, {"outputs", outs}, {"mutates", J::array()}});
  };
  op("aten::linear", {T(x), T(w), T(b)}, {y});
  op("aten::native_batch_norm", {T(y), T(g), T(beta), J{{"none", true}}, J{{"none", true}},
                                 J{{"scalar", true}, {"type", "bool"}}, J{{"scalar", 0.1}, {"type", "float"}},
                                 J{{"scalar", 1e-5}, {"type", "float"}}},
     {z, mean, invstd});
  p["outputs"].push_back(J{{"name", "out0"}, {"tensor", z}});
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

}  // namespace

BENCHMARK_MAIN();
