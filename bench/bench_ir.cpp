// Canonicalization speed of the ir module: building the same large expression
// in two different shapes and getting the same node.
//   cmake --build build-ir --target bench_ir && ./build-ir/bench/bench_ir
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <stdexcept>

#include "ir/eval.h"
#include "ir/expr.h"

using namespace dirigo::ir;

namespace {

// Combine xs pairwise in a random binary tree shape.
template <class Op>
Expr random_tree(std::mt19937_64& rng, std::vector<Expr> xs, Op op) {
  while (xs.size() > 1) {
    std::vector<Expr> next;
    std::shuffle(xs.begin(), xs.end(), rng);
    for (size_t i = 0; i + 1 < xs.size(); i += 2) next.push_back(op(xs[i], xs[i + 1]));
    if (xs.size() % 2) next.push_back(xs.back());
    xs.swap(next);
  }
  return xs[0];
}

// Sum over i,j < 100 of x_i * w_j: once as one n-ary add of products x*w, once as a
// random tree of binary adds of products w*x over another permutation.
void BM_SumOfProducts10k(benchmark::State& state) {
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    Context c;
    int32_t X = c.tensor("X"), W = c.tensor("W");
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; i < 100; ++i)
      for (int j = 0; j < 100; ++j) pairs.emplace_back(i, j);
    std::shuffle(pairs.begin(), pairs.end(), rng);
    std::vector<Expr> t1;
    for (auto [i, j] : pairs) t1.push_back(c.mul(c.elem(X, i), c.elem(W, j)));
    Expr a = c.add(t1);
    std::shuffle(pairs.begin(), pairs.end(), rng);
    std::vector<Expr> t2;
    for (auto [i, j] : pairs) t2.push_back(c.mul(c.elem(W, j), c.elem(X, i)));
    Expr b = random_tree(rng, t2, [&](Expr p, Expr q) { return c.add(p, q); });
    if (a != b) throw std::logic_error("sums differ");
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_SumOfProducts10k)->Unit(benchmark::kMillisecond);

// The same sum as one left-to-right chain of binary adds (the shape a naive
// reduction loop produces): each step re-creates an n-ary node, O(n^2) total.
void BM_SumLeftFold(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Context c;
    int32_t X = c.tensor("X");
    Expr s = c.real_const(0);
    for (int i = 0; i < n; ++i) s = c.add(s, c.elem(X, i));
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_SumLeftFold)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// 256 terms, each a 128-way min, built as an n-ary min vs. a random tree of binary
// mins (and of ite(a<b, a, b) selects) over a shuffled order; summed in two orders.
void BM_SumOfMins256x128(benchmark::State& state) {
  std::mt19937_64 rng(2);
  for (auto _ : state) {
    Context c;
    int32_t X = c.tensor("Xm");
    std::vector<Expr> s1, s2;
    for (int t = 0; t < 256; ++t) {
      std::vector<Expr> xs;
      for (int k = 0; k < 128; ++k) xs.push_back(c.elem(X, t * 128 + k));
      s1.push_back(c.min(xs));
      std::shuffle(xs.begin(), xs.end(), rng);
      s2.push_back(random_tree(rng, xs, [&](Expr p, Expr q) {
        return (p->id ^ q->id) & 1 ? c.min(p, q) : c.ite(c.lt(p, q), p, q);
      }));
    }
    Expr a = c.add(s1);
    Expr b = random_tree(rng, s2, [&](Expr p, Expr q) { return c.add(p, q); });
    if (a != b) throw std::logic_error("sums of mins differ");
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_SumOfMins256x128)->Unit(benchmark::kMillisecond);

// A chain of depth n that does not collapse: e = 2*tanh(e) + 1.
void BM_DeepChain(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Context c;
    Expr e = c.var("x", Sort::Real);
    for (int i = 0; i < n; ++i) e = c.add(c.mul(c.real_const(2), c.call(Fn::Tanh, e)), c.real_const(1));
    benchmark::DoNotOptimize(e);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_DeepChain)->Arg(100000)->Unit(benchmark::kMillisecond);

// Affine thread-index arithmetic as PTX computes it: 32-bit mad, sign extension, scaling.
void BM_AffineAddresses(benchmark::State& state) {
  for (auto _ : state) {
    Context c;
    Expr tid = c.var("tid.x", Sort::BV32, {0, 255}), ctaid = c.var("ctaid.x", Sort::BV32, {0, 65535});
    Expr base = c.var("base", Sort::BV64);
    for (int k = 0; k < 10000; ++k) {
      Expr idx = c.bv_add(c.bv_mul(ctaid, c.bv_const(Sort::BV32, 256)), c.bv_add(tid, c.bv_const(Sort::BV32, k)));
      Expr addr = c.bv_add(c.bv_shl(c.sext(idx, Sort::BV64), c.bv_const(Sort::BV64, 2)), base);
      benchmark::DoNotOptimize(addr);
    }
  }
  state.SetItemsProcessed(state.iterations() * 10000);
}
BENCHMARK(BM_AffineAddresses)->Unit(benchmark::kMillisecond);

}  // namespace

// Issue #5's location: training-mode batch norm over a GEMM's output. One output element is
// (y[n] - mean) * rsqrt(var + eps) with y[r] = b + sum_k x[r,k] * w[k] for every row r < M, mean =
// sum(y)/M, var = sum(y^2)/M - mean^2: M*K products (Arg(1024)->Arg(8192): 8.4 M products, the
// KernelBench shape). Counters: nodes and arena bytes of the Context.
void BM_BatchNormOverGemm(benchmark::State& state) {
  const int64_t M = state.range(0), K = state.range(1);
  size_t nodes = 0, bytes = 0;
  for (auto _ : state) {
    Context c;
    int32_t X = c.tensor("bng:x"), W = c.tensor("bng:w"), B = c.tensor("bng:b");
    std::vector<Expr> rows, squares, terms(size_t(K) + 1);
    for (int64_t r = 0; r < M; ++r) {
      terms[0] = c.elem(B, 0);
      for (int64_t k = 0; k < K; ++k) terms[size_t(k) + 1] = c.mul(c.elem(X, r * K + k), c.elem(W, k));
      rows.push_back(c.add(terms));
      squares.push_back(c.mul(rows.back(), rows.back()));
    }
    Expr inv_m = c.real_const(mpq_class(1, M));
    Expr mean = c.mul(inv_m, c.add(rows));
    Expr var = c.sub(c.mul(inv_m, c.add(squares)), c.mul(mean, mean));
    Expr out = c.mul(c.sub(rows[0], mean), c.call(Fn::Rsqrt, c.add(var, c.real_const(mpq_class(1, 100000)))));
    benchmark::DoNotOptimize(out);
    nodes = c.num_nodes();
    bytes = c.bytes_used();
  }
  state.counters["nodes"] = double(nodes);
  state.counters["arena_MB"] = double(bytes) / (1 << 20);
}
BENCHMARK(BM_BatchNormOverGemm)->Args({64, 512})->Args({1024, 8192})->Unit(benchmark::kMillisecond)->Iterations(1);

// Evaluating a reduction over reductions, Σ_{j<n} sigmoid(b_j + Σ_{k<n} W[j, k] x[k]) (a row sum of a
// linear layer's sigmoids), in fp64 and in fp32 (second argument 1): the body's tape at every point.
// Counter per_term: seconds of wall time per inner term (n^2 of them), printed with an SI prefix.
void BM_EvaluateNestedReduction(benchmark::State& state) {
  const int64_t n = state.range(0);
  Context c;
  int32_t W = c.tensor("W"), X = c.tensor("x"), B = c.tensor("b");
  Expr j = c.var("j", Sort::BV64, {0, uint64_t(n - 1)}), k = c.var("k", Sort::BV64, {0, uint64_t(n - 1)});
  Expr prod = c.mul(c.load(W, c.bv_add(k, c.bv_mul(c.bv_const(Sort::BV64, uint64_t(n)), j))), c.load(X, k));
  std::pair<int64_t, int64_t> box[] = {{0, n}};
  Expr ks[] = {k}, js[] = {j};
  Expr inner = c.reduce(ReduceOp::Sum, ks, box, prod);
  Expr outer = c.reduce(ReduceOp::Sum, js, box, c.call(Fn::Sigmoid, c.add(c.load(B, j), inner)));
  Env env;
  env.elem = [](int32_t t, int64_t i, Sort) { return Value::of_real(double((i * 7 + t) % 13) * 0.01); };
  Precision p = state.range(1) ? Precision::F32 : Precision::F64;
  for (auto _ : state) benchmark::DoNotOptimize(Evaluator(env, p)(outer));
  state.counters["per_term"] =
      benchmark::Counter(double(n * n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_EvaluateNestedReduction)->Args({2048, 0})->Args({2048, 1})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
