// Decision cost at today's KernelBench sizes (see docs/perf.md "## smt / decision").
//
//  * SumOfProducts: sum of 10,000 products X[i]*W[j], built twice with different
//    association (row-major nested sums vs a balanced binary tree over the
//    column-major order, operands swapped). Equal must close WITHOUT Z3.
//  * SumOfMins: the paper's running example, sum over 256 rows of min over
//    128 channels, built as flat n-ary ops vs balanced binary trees in
//    reverse order. Equal must close WITHOUT Z3.
//  * "Changed": one term differs (a product reads W[j+1]; one row's min misses
//    its last channel). Must come back Differ with a confirmed witness.
//
// Each is measured as build+decide (a fresh Context per iteration) and as
// decide alone (expressions built once, result cache off); the changed pairs
// also with a tolerance witness asked for first, as check does.
#include <functional>
#include <stdexcept>
#include <vector>

#include <benchmark/benchmark.h>

#include "ir/expr.h"
#include "smt/decide.h"

using namespace dirigo;
using ir::Expr;

namespace {

constexpr int kRows = 100, kCols = 100;            // 10,000 products
constexpr int kChannels = 128, kMinRows = 256;     // 256-term sum of 128-way mins

// Balanced binary tree of a binary constructor over xs.
Expr tree(std::vector<Expr> xs, const std::function<Expr(Expr, Expr)>& op) {
  while (xs.size() > 1) {
    std::vector<Expr> next;
    for (size_t i = 0; i + 1 < xs.size(); i += 2) next.push_back(op(xs[i], xs[i + 1]));
    if (xs.size() % 2) next.push_back(xs.back());
    xs.swap(next);
  }
  return xs[0];
}

struct Pair {
  Expr a, b;
};

Pair sum_of_products(ir::Context& ctx, bool changed) {
  int32_t X = ctx.tensor("X"), W = ctx.tensor("W");
  std::vector<Expr> rows;
  for (int i = 0; i < kRows; ++i) {
    std::vector<Expr> ps;
    for (int j = 0; j < kCols; ++j) ps.push_back(ctx.mul(ctx.elem(X, i), ctx.elem(W, j)));
    rows.push_back(ctx.add(ps));
  }
  Expr a = ctx.add(rows);
  std::vector<Expr> ps;
  for (int j = kCols - 1; j >= 0; --j)
    for (int i = 0; i < kRows; ++i) {
      int jj = changed && i == 37 && j == 59 ? 60 : j;  // the one changed term
      ps.push_back(ctx.mul(ctx.elem(W, jj), ctx.elem(X, i)));
    }
  Expr b = tree(ps, [&](Expr p, Expr q) { return ctx.add(p, q); });
  return {a, b};
}

Pair sum_of_mins(ir::Context& ctx, bool changed) {
  int32_t M = ctx.tensor("M");
  auto m = [&](int c, int h) { return ctx.elem(M, static_cast<int64_t>(c) * kMinRows + h); };
  std::vector<Expr> rows;
  for (int h = 0; h < kMinRows; ++h) {
    std::vector<Expr> cs;
    for (int c = 0; c < kChannels; ++c) cs.push_back(m(c, h));
    rows.push_back(ctx.min(cs));
  }
  Expr a = ctx.add(rows);
  std::vector<Expr> rows_b;
  for (int h = kMinRows - 1; h >= 0; --h) {
    std::vector<Expr> cs;
    int channels = changed && h == 100 ? kChannels - 1 : kChannels;  // the loop-bound bug
    for (int c = channels - 1; c >= 0; --c) cs.push_back(m(c, h));
    rows_b.push_back(tree(cs, [&](Expr p, Expr q) { return ctx.min(p, q); }));
  }
  Expr b = tree(rows_b, [&](Expr p, Expr q) { return ctx.add(p, q); });
  return {a, b};
}

using Builder = Pair (*)(ir::Context&, bool);

// Checks the decision; on a wrong verdict the benchmark reports an error.
bool check(benchmark::State& state, const smt::Decision& d, bool changed, const smt::Solver& solver) {
  if (!changed) {
    if (d.verdict != smt::Verdict::Equal) { state.SkipWithError("expected Equal"); return false; }
    if (solver.stats().solver_calls != 0) { state.SkipWithError("Equal needed Z3"); return false; }
  } else if (d.verdict != smt::Verdict::Differ || !d.witness) {
    state.SkipWithError(("expected Differ, got " + std::string(smt::verdict_name(d.verdict)) + " " + d.reason).c_str());
    return false;
  }
  return true;
}

void build_and_decide(benchmark::State& state, Builder build, bool changed) {
  smt::DecideOptions opt;
  opt.use_cache = false;
  smt::Solver solver;
  for (auto _ : state) {
    ir::Context ctx;
    Pair p = build(ctx, changed);
    smt::Decision d = solver.decide(ctx, p.a, p.b, opt);
    if (!check(state, d, changed, solver)) return;
    state.counters["nodes"] = static_cast<double>(ctx.num_nodes());
    state.counters["z3_checks"] = d.solver_checks;
    state.counters["cuts"] = static_cast<double>(d.cuts);
    state.counters["query_nodes"] = static_cast<double>(d.query_nodes);
  }
}

void decide_only(benchmark::State& state, Builder build, bool changed, bool tolerance = false) {
  smt::DecideOptions opt;
  opt.use_cache = false;
  if (tolerance) opt.tolerance = smt::Tolerance{};  // as check asks: a witness beyond atol/rtol first
  smt::Solver solver;
  ir::Context ctx;
  Pair p = build(ctx, changed);
  for (auto _ : state) {
    smt::Decision d = solver.decide(ctx, p.a, p.b, opt);
    if (!check(state, d, changed, solver)) return;
    state.counters["z3_checks"] = d.solver_checks;
  }
}

}  // namespace

BENCHMARK_CAPTURE(build_and_decide, sum_of_products_equal, sum_of_products, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decide_only, sum_of_products_equal, sum_of_products, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(build_and_decide, sum_of_products_changed, sum_of_products, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decide_only, sum_of_products_changed, sum_of_products, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(build_and_decide, sum_of_mins_equal, sum_of_mins, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decide_only, sum_of_mins_equal, sum_of_mins, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(build_and_decide, sum_of_mins_changed, sum_of_mins, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decide_only, sum_of_mins_changed, sum_of_mins, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decide_only, sum_of_products_changed_tolerance, sum_of_products, true, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decide_only, sum_of_mins_changed_tolerance, sum_of_mins, true, true)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
