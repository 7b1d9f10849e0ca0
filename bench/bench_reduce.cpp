// Per-location cost of deciding pure-ATen pairs as the reduction extent grows 10^2 -> 10^8: both
// sides' per-element equations built (aten) and decided (smt::Solver), in a fresh Context each time.
//   GEMM:  linear(x, W, b)[i, j] vs addmm(b, x, W^T)[i, j]   (K = the extent)
//   Norm:  native_batch_norm's saved mean of x [2, 4, M/4, 2] vs mean(x, dims [0, 2, 3])  (N*H*W = M, the extent)
// Second argument: 1 = reductions as Reduce nodes (OpCall::reduce_above = 1024), 0 = term by term
// (reduce_above = -1, the form before). No tensor data is touched: equations only need shapes.
#include <benchmark/benchmark.h>

#include <map>
#include <vector>

#include "aten/aten.h"
#include "ir/eval.h"
#include "ir/limits.h"
#include "smt/decide.h"

namespace {

using namespace dirigo;
using aten::Arg;
using aten::TensorRef;

TensorRef ref(int32_t id, std::vector<int64_t> shape, std::vector<int64_t> strides = {}) {
  TensorRef t;
  t.tensor_id = id;
  t.shape = std::move(shape);
  t.strides = std::move(strides);
  return t;
}

void decide_pair(benchmark::State& state, aten::OpCall a, aten::OpCall b, std::vector<int64_t> la,
                 std::vector<int64_t> lb, int out_a = 0, int out_b = 0) {
  bool symbolic = state.range(1) != 0;
  a.reduce_above = b.reduce_above = symbolic ? 1024 : -1;
  size_t nodes = 0;
  bool equal = false;
  for (auto _ : state) {
    ir::Context cx;
    for (int i = 0; i < 13; ++i) cx.tensor("t" + std::to_string(i));  // the ids the calls name
    ir::set_limits(cx, {40'000'000, std::chrono::steady_clock::now() + std::chrono::seconds(60)});
    ir::Expr ea = aten::element(cx, a, out_a, la);
    ir::Expr eb = aten::element(cx, b, out_b, lb);
    smt::Solver solver;
    smt::DecideOptions opt;
    opt.timeout_ms = 60000;
    smt::Decision d = solver.decide(cx, ea, eb, opt);
    equal = d.verdict == smt::Verdict::Equal;
    nodes = cx.num_nodes();
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["equal"] = equal;
}

void BM_GemmLinearVsAddmm(benchmark::State& s) {
  int64_t K = s.range(0);
  // x [4, K], W [8, K], b [8]; W^T is W's storage seen with swapped strides
  aten::OpCall lin{"aten::linear", "", {Arg::of(ref(0, {4, K})), Arg::of(ref(1, {8, K})), Arg::of(ref(2, {8}))}, {}, {ref(9, {4, 8})}};
  aten::OpCall mm{"aten::addmm", "",
                  {Arg::of(ref(2, {8})), Arg::of(ref(0, {4, K})), Arg::of(ref(1, {K, 8}, {1, K}))}, {}, {ref(10, {4, 8})}};
  decide_pair(s, lin, mm, {3, 5}, {3, 5});
}

void BM_NormMeanVsBatchNorm(benchmark::State& s) {
  int64_t M = s.range(0);  // N*H*W with N = 2, W = 2
  std::vector<int64_t> shape{2, 4, M / 4, 2};
  aten::OpCall bn{"aten::native_batch_norm", "",
                  {Arg::of(ref(0, shape)), Arg::none(), Arg::none(), Arg::none(), Arg::none(), Arg::of_bool(true),
                   Arg::of_real(0.1), Arg::of_real(1e-5)},
                  {},
                  {ref(9, shape), ref(10, {4}), ref(11, {4})}};
  aten::OpCall mean{"aten::mean", "dim", {Arg::of(ref(0, shape)), Arg::of_ints({0, 2, 3})}, {}, {ref(12, {4})}};
  decide_pair(s, bn, mean, {2}, {2}, 1, 0);
}

// A GEMM row under a max and a row sum, Σ_{j<N} max(Σ_{k<N} x[k]·W[N·j + k], b[j]) (N² products), evaluated
// in fp64 at a sparse point (x[5], W[N(N-1) + 5], b[N-1] set, every other element 0: ir::Env::support)
// and, second argument 0, at every point (the same values). products/s counts the location's products.
void BM_SparsePointGemmRow(benchmark::State& s) {
  int64_t N = s.range(0);
  bool sparse = s.range(1) != 0;
  ir::Context c;
  int32_t X = c.tensor("x"), W = c.tensor("w"), B = c.tensor("b");
  ir::Expr j = c.var("j", ir::Sort::BV64), k = c.var("k", ir::Sort::BV64);
  auto bv = [&](int64_t v) { return c.bv_const(ir::Sort::BV64, uint64_t(v)); };
  auto sum = [&](ir::Expr v, int64_t n, ir::Expr body) {
    ir::Expr vs[] = {v};
    std::pair<int64_t, int64_t> box[] = {{0, n}};
    return c.reduce(ir::ReduceOp::Sum, vs, box, body);
  };
  ir::Expr row = sum(k, N, c.mul(c.load(X, k), c.load(W, c.bv_add(c.bv_mul(bv(N), j), k))));
  ir::Expr e = sum(j, N, c.max(row, c.load(B, j)));
  std::map<std::pair<int32_t, int64_t>, double> set{{{X, 5}, 10}, {{W, N * (N - 1) + 5}, 10}, {{B, N - 1}, 10}};
  std::map<int32_t, std::vector<int64_t>> support;
  for (auto& [key, v] : set) support[key.first].push_back(key.second);
  ir::Env env;
  env.elem = [&](int32_t t, int64_t i, ir::Sort) {
    auto it = set.find({t, i});
    return ir::Value::of_real(it == set.end() ? 0.0 : it->second);
  };
  if (sparse)
    env.support = [&](int32_t t) -> const std::vector<int64_t>* { return &support.at(t); };
  double v = 0;
  for (auto _ : s) v = ir::Evaluator(env)(e).real;
  s.counters["value"] = v;
  s.counters["products/s"] = benchmark::Counter(double(N) * double(N), benchmark::Counter::kIsIterationInvariantRate);
}

void extents(benchmark::internal::Benchmark* b) {
  for (int64_t k = 100; k <= 100'000'000; k *= 10) b->Args({k, 1});
  for (int64_t k = 100; k <= 1'000'000; k *= 10) b->Args({k, 0});  // term by term: 10^7 passes a minute
}

BENCHMARK(BM_GemmLinearVsAddmm)->Apply(extents)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_NormMeanVsBatchNorm)->Apply(extents)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_SparsePointGemmRow)
    ->ArgsProduct({{1 << 7, 1 << 9, 1 << 11, 1 << 13, 1 << 15}, {1}})
    ->ArgsProduct({{1 << 7, 1 << 9, 1 << 11}, {0}})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
