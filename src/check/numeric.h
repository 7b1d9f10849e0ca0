// Numeric evaluation of one output location at random points, without building its expression.
//
// A batch, group or layer statistic over a whole GEMM or convolution output back-projects to
// 10^7 nodes: hash-consing them costs more than the check's budget. Its numbers do not: each
// element of each SSA value the location depends on is evaluated once per point, from its own
// small template (Lowering::element_template: the aten equation, inverted kernel write, copy or
// library equation with its operands as leaves), memoized per (value, element). Leaves are drawn
// as smt::falsify draws them (smt::draw, keyed by smt::name_key of the tensor name), so that a
// point is regenerable from (seed, point) alone. A difference found this way is a sampling
// witness; no difference leaves the location undecided (never equal).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "check/lower.h"
#include "ir/eval.h"

namespace dirigo::check {

struct ProductsCache;  // sums of products over shared inputs, shared by evaluators (numeric.cpp)
std::shared_ptr<ProductsCache> make_products_cache();

struct NumericOptions {
  uint64_t seed = 1;
  std::vector<unsigned> points{0};  // falsify ladder points, evaluated together (one template walk each)
  double bound = 10;                // the ladder's first rung (smt::point_bound)
  ir::Precision precision = ir::Precision::F64;
  // Per point, when set (same length as points): a point may be evaluated in both precisions at once
  // ({0, 0} with {F64, F32}), sharing every template walk between its fp64 value and its fp32 evidence.
  std::vector<ir::Precision> precisions;
  // Templates live in a scratch Context, thrown away past this many nodes (with its evaluators'
  // memos): memory stays bounded while a statistic's shared sub-terms are reused between elements.
  size_t scratch_nodes = 10'000'000;
  // Sums of products over shared inputs only are the same numbers in both programs (x @ W^T of the
  // reference's addmm and of the candidate's cuBLAS call): evaluators given one cache compute them once.
  std::shared_ptr<ProductsCache> products_cache;
  // How a sum of products over drawn shared inputs is summed: Tight (a tight loop over the draws; a
  // convolution's from runs-innermost draws where its blocks allow), Logical (a tight loop, the
  // logical layout always) or Generic (term by term, as for computed operands). The same numbers in
  // fp32 (index order, every operation rounded); in fp64 up to reassociation. Tests compare them.
  enum class ProductsPath : uint8_t { Tight, Logical, Generic };
  ProductsPath products_path = ProductsPath::Tight;
  // Kernel-written elements and the shared-memory cells they read evaluated under their writers'
  // threads (check/kernel_numeric.h); false: from their templates (the record values specialized and
  // resolved per element, imported), kept for cross-checks.
  bool kernel_threads = true;
  // With kernel_threads: record values from compiled tapes (false: by ir::Evaluator; cross-checks).
  bool kernel_tape = true;
  // Past it, element() throws OutOfTime (the lowering's own deadline binds its part).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

class NumericEvaluator {
 public:
  NumericEvaluator(Lowering& lowering, NumericOptions opt);
  ~NumericEvaluator();

  // The value of `view` (of the lowering's program) at a logical index, one per point: reals as
  // doubles, integers as their unsigned value, NaN where the value is undefined. Throws what the
  // lowering throws (Unsupported, OutOfTime, WriteRace), and Unsupported for what has no numeric
  // value here (an index read from tensor data, an element that reads its own old contents).
  std::vector<double> element(const program::View& view, int64_t logical);

  // A cheap estimate of what the location's value depends on, from one template per SSA value (the
  // value's first element met): how many elements of each value are needed (a template's distinct
  // operand leaves of a value, at least as many as the reading value needs when it reads one each
  // — an elementwise op —, at most the value's size) and each element's multiply-adds. Values a
  // kernel writes count as one element each, their templates are not built (exec's symbolic
  // execution of one element costs what building does). check.cpp evaluates a location whose
  // reference estimate is far past the build cap numerically at once, without building 8 M nodes
  // first. Templates are built in the evaluator's scratch context: the evaluation that follows
  // reuses their statistics. Stops once the templates built add more than stop_nodes nodes (a
  // statistic over 10^6 elements is a template of millions: the location is at least that large,
  // and building the rest of the estimate would cost seconds). Throws what element_template throws.
  struct Size {
    double elements = 0;        // (value, element) pairs
    double products = 0;        // multiply-adds of sums of products over them
    size_t values = 0;          // SSA values reached
    size_t template_nodes = 0;  // nodes their templates added to the scratch context
    bool stopped = false;       // past stop_nodes: elements and products are those counted by then
  };
  Size estimate(const program::View& view, int64_t logical, size_t stop_nodes = SIZE_MAX);

  struct Stats {
    uint64_t elements = 0;        // (value, element) pairs evaluated
    uint64_t template_nodes = 0;  // nodes the templates added to scratch contexts
    uint64_t recycles = 0;        // scratch contexts thrown away
    uint64_t products = 0;        // multiply-adds of sums of products (each for every point)
    uint64_t tight = 0;           // of those: summed by a tight loop over draws (the rest term by term)
    uint64_t runs_innermost = 0;  // of those: from runs-innermost draws (convolutions, see numeric.cpp)
    uint64_t draws = 0;           // shared-input elements drawn into a draw cache or for one tight sum
    uint64_t kernel_elements = 0; // of elements: kernel-written ones evaluated under their writers' threads
    uint64_t kernel_writers = 0;  // (record, thread) values evaluated for them, shared stores included
    uint64_t kernel_cells = 0;    // shared-memory cells evaluated for them
  };
  const Stats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dirigo::check
