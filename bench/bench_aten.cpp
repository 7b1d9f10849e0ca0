// Cost of building one per-element ATen equation at KernelBench-sized shapes
// (fresh Context per iteration, so nothing is shared between iterations).
#include <benchmark/benchmark.h>

#include "aten/aten.h"

namespace {

using namespace dirigo;
using aten::Arg;
using aten::TensorRef;

TensorRef ref(int32_t id, std::vector<int64_t> shape) {
  TensorRef t;
  t.tensor_id = id;
  t.shape = std::move(shape);
  return t;
}

void run(benchmark::State& state, const aten::OpCall& call, std::vector<int64_t> loc, int out = 0) {
  size_t nodes = 0;
  for (auto _ : state) {
    ir::Context cx;
    for (int i = 0; i < 4; ++i) cx.tensor("t" + std::to_string(i));
    ir::Expr e = aten::element(cx, call, out, loc);
    benchmark::DoNotOptimize(e);
    nodes = cx.num_nodes();
  }
  state.counters["nodes"] = static_cast<double>(nodes);
}

// level-2 style conv: x [128, 64, 32, 32], w [128, 64, 3, 3], padding 1
void BM_Conv2d_64x3x3(benchmark::State& s) {
  aten::OpCall c{"aten::convolution", "",
                 {Arg::of(ref(0, {128, 64, 32, 32})), Arg::of(ref(1, {128, 64, 3, 3})), Arg::of(ref(2, {128})),
                  Arg::of_ints({1, 1}), Arg::of_ints({1, 1}), Arg::of_ints({1, 1}), Arg::of_bool(false),
                  Arg::of_ints({0, 0}), Arg::of_int(1)},
                 {},
                 {ref(9, {128, 128, 32, 32})}};
  run(s, c, {5, 7, 16, 16});
}
BENCHMARK(BM_Conv2d_64x3x3)->Unit(benchmark::kMicrosecond);

// transposed 3-D conv as in level-2 task 36's family: x [16, 32, 16, 32, 32], w [32, 64, 3, 3, 3], stride 2
void BM_ConvTranspose3d(benchmark::State& s) {
  aten::OpCall c{"aten::convolution", "",
                 {Arg::of(ref(0, {16, 32, 16, 32, 32})), Arg::of(ref(1, {32, 64, 3, 3, 3})), Arg::of(ref(2, {64})),
                  Arg::of_ints({2, 2, 2}), Arg::of_ints({1, 1, 1}), Arg::of_ints({1, 1, 1}), Arg::of_bool(true),
                  Arg::of_ints({1, 1, 1}), Arg::of_int(1)},
                 {},
                 {ref(9, {16, 64, 32, 64, 64})}};
  run(s, c, {3, 5, 9, 10, 11});
}
BENCHMARK(BM_ConvTranspose3d)->Unit(benchmark::kMicrosecond);

// training batch norm over x [128, 16, 32, 32]: statistics over 131072 elements
void BM_BatchNormTraining(benchmark::State& s) {
  aten::OpCall c{"aten::native_batch_norm", "",
                 {Arg::of(ref(0, {128, 16, 32, 32})), Arg::of(ref(1, {16})), Arg::of(ref(2, {16})), Arg::none(),
                  Arg::none(), Arg::of_bool(true), Arg::of_real(0.1), Arg::of_real(1e-5)},
                 {},
                 {ref(9, {128, 16, 32, 32}), ref(8, {16}), ref(7, {16})}};
  run(s, c, {5, 3, 7, 9});
}
BENCHMARK(BM_BatchNormTraining)->Unit(benchmark::kMillisecond);

// softmax over a row of 16384
void BM_Softmax16k(benchmark::State& s) {
  aten::OpCall c{"aten::_softmax", "", {Arg::of(ref(0, {16, 16384})), Arg::of_int(1), Arg::of_bool(false)}, {},
                 {ref(9, {16, 16384})}};
  run(s, c, {3, 100});
}
BENCHMARK(BM_Softmax16k)->Unit(benchmark::kMicrosecond);

// addmm with K = 4096
void BM_Addmm4096(benchmark::State& s) {
  aten::OpCall c{"aten::addmm", "", {Arg::of(ref(2, {1024})), Arg::of(ref(0, {128, 4096})), Arg::of(ref(1, {4096, 1024}))},
                 {}, {ref(9, {128, 1024})}};
  run(s, c, {17, 33});
}
BENCHMARK(BM_Addmm4096)->Unit(benchmark::kMicrosecond);

// max_pool3d k=3 s=2 on [16, 32, 16, 32, 32] (value and index)
void BM_MaxPool3dWithIndices(benchmark::State& s) {
  aten::OpCall c{"aten::max_pool3d_with_indices", "",
                 {Arg::of(ref(0, {16, 32, 16, 32, 32})), Arg::of_ints({3, 3, 3}), Arg::of_ints({2, 2, 2})}, {},
                 {ref(9, {16, 32, 7, 15, 15}), ref(8, {16, 32, 7, 15, 15})}};
  run(s, c, {1, 2, 3, 4, 5}, static_cast<int>(s.range(0)));
}
BENCHMARK(BM_MaxPool3dWithIndices)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
