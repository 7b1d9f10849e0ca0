// Deciding whether two ir expressions are equal for all values of their leaves.
//
// Pipeline (cheapest first; see docs/smt.md):
//   1. a == b after canonical construction (hash-consing)      -> Equal, no solver
//   2. axioms: both sides normalized into one function vocabulary -> Equal if pointer-equal
//   3. cut points (ir::cut_shared) remove shared sub-terms; for reals the
//      query is the canonical difference qa - qb, whose shared terms cancel
//   4. result cache (structural hash of the cut query)
//   5. Z3 on the small query, fresh solver, rlimit + wall-clock timeout, fixed seed
//   6. a sat model becomes a witness over the ORIGINAL leaves and is confirmed
//      by evaluating both original expressions in fp64; a witness that does
//      not evaluate differently is refined (function sample points, cut
//      definitions) or reported Unknown — Differ always carries a real witness.
//
// One Solver (and so one z3::context) per worker thread; never share one
// across threads. A ResultCache may be shared between Solvers.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/eval.h"
#include "ir/expr.h"
#include "smt/axioms.h"

namespace dirigo::smt {

enum class Verdict : uint8_t { Equal, Differ, Unknown, Timeout };
std::string_view verdict_name(Verdict v);

// Where the decision was made.
// Tolerance: not equal over the reals, but |a - b| <= atol for every real leaf in [-bound, bound]
// (smt/tolerance.h): a rounding-only difference such as x/6 vs x*0.16666667f.
// Sampling: random-point falsification (smt/falsify.h) found a witness before Z3 was asked.
// Domain: two reductions of one body over different domains (check's match_reductions); the witness
// sets the terms only one side sums.
enum class Stage : uint8_t { Canonical, Axioms, CutPoints, Cache, Solver, Tolerance, Sampling, Error, Domain, Sparse };
std::string_view stage_name(Stage s);

// A value for one leaf of the original expressions.
struct LeafValue {
  enum class Kind : uint8_t { Elem, Var } kind = Kind::Elem;
  int32_t tensor = -1;  // Elem
  int64_t index = 0;    // Elem: flat element index
  std::string name;     // Var
  ir::Value value;
};

struct Witness {
  // Every Var of both sides, every tensor element the solver query contained,
  // and the elements symbolic loads read. Tensor elements not listed are 0.
  std::vector<LeafValue> leaves;
  // Tensors whose real elements not listed hold this value instead of 0 (a domain witness's bias
  // at -v, where a sigmoid or a softmax of the rest is then flat).
  std::vector<std::pair<int32_t, double>> fills;
  ir::Value a, b;                 // both original expressions evaluated (fp64) at the witness
  bool exceeds_tolerance = false; // |a-b| > atol + rtol*|a| (a: the reference) (when a tolerance was asked for)
  bool depends_on_undef = false;  // exactly one side depends on an Undef leaf
  // Environment for ir::Evaluator: the listed values, the fills, 0 for any other leaf.
  ir::Env env() const;
  std::string to_string(const ir::Context& ctx) const;
};

struct Tolerance {
  double atol = 1e-2, rtol = 1e-2;  // KernelBench's defaults; everywhere |ref - cand| <= atol + rtol*|ref|
  double bound = 10;                // every real leaf in [-bound, bound]
};

struct DecideOptions {
  AxiomOptions axioms;
  bool cut_points = true;
  unsigned timeout_ms = 10000;       // wall clock for the whole decision
  unsigned rlimit = 5'000'000;       // per check (deterministic budget, ~1 s of Z3 CPU on the build box); 0 = none
  unsigned random_seed = 42;
  unsigned max_refinements = 8;      // rounds of spurious-witness refinement
  uint64_t max_uncut_nodes = 200000; // re-add cut definitions after a spurious witness only below this size
  std::optional<Tolerance> tolerance;
  // With a tolerance: a pair whose difference is provably <= atol for all real leaves in
  // [-bound, bound] (smt/tolerance.h) is Equal at Stage::Tolerance before Z3 is asked.
  bool within_tolerance = true;
  // Evaluate both sides at this many pseudo-random points (seeded by random_seed) before Z3: a
  // point beyond tolerance (or beyond fp64 noise without one) is a Differ witness at Stage::Sampling.
  unsigned falsify_points = 8;  // ask for a witness beyond tolerance first, plain query as fallback
  // A witness must differ by more than fp64 noise to be confirmed.
  double confirm_rtol = 1e-9, confirm_atol = 1e-12;
  bool use_cache = true;
  // Decide a == b only where every assumption (a Bool expression of the same
  // Context) holds; a witness must satisfy them (checked by evaluation).
  std::vector<ir::Expr> assumptions;
  uint64_t max_query_nodes = 1'000'000;  // larger cut queries are Unknown instead of a Z3 marathon
  // Extra Z3 solver parameters (name, value), applied to every check.
  std::vector<std::pair<std::string, unsigned>> solver_params;
};

struct Decision {
  Verdict verdict = Verdict::Unknown;
  std::optional<Witness> witness;  // set iff verdict == Differ
  std::string reason;              // Unknown / Timeout: why
  Stage stage = Stage::Error;
  bool solver_called = false;
  unsigned solver_checks = 0;
  size_t cuts = 0;                 // shared sub-terms replaced by variables
  uint64_t query_nodes = 0;        // size of what reached Z3 (or would have)
  double difference_bound = -1;    // Stage::Tolerance: the proven bound on |a - b| (-1: not computed)
  // Equal: the approximation equivalences (axiom names) the normalized forms rested on; empty when exact.
  std::vector<std::string> approximations;
  double ms = 0;                   // wall time of the decision
};

// Outcome of a plain satisfiability question (write inversion, path coverage).
struct SatResult {
  enum class Status : uint8_t { Sat, Unsat, Unknown, Timeout } status = Status::Unknown;
  std::vector<LeafValue> model;  // Sat: the condition's Vars and the elements it reads (others 0); confirmed by evaluation
  std::string reason;
  ir::Env env() const;
};

struct SolverStats {
  uint64_t decisions = 0;
  uint64_t equal_canonical = 0, equal_axioms = 0, equal_cut = 0, equal_tolerance = 0;
  uint64_t differ_sampled = 0;  // witnesses found by random points, without Z3
  uint64_t solver_calls = 0;   // decisions that reached Z3
  uint64_t solver_checks = 0;  // z3 check() calls
  uint64_t sat = 0, unsat = 0, unknown = 0, timeouts = 0;
  uint64_t spurious = 0, refinements = 0, exceptions = 0;
  uint64_t cache_hits = 0, cache_misses = 0;
  double solver_ms = 0;
};

// Results keyed by the structural hash of the cut query (context independent),
// so workers can share it. Equal is stored as is; Differ stores the witness
// leaves, which are re-confirmed by evaluation on every hit.
class ResultCache {
 public:
  // At capacity the cache is emptied (cheap, and keeps a long run's memory bounded).
  explicit ResultCache(size_t capacity = size_t{1} << 20) : capacity_(capacity) {}
  struct Key {
    uint64_t ha, hb, sa, sb, opts;
    bool operator==(const Key&) const = default;
  };
  struct Entry {
    Verdict verdict;
    std::vector<LeafValue> witness;
  };
  std::optional<Entry> lookup(const Key& k, const Key* alt = nullptr);  // alt: tried when k misses
  void store(const Key& k, Entry e);
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  uint64_t flushes() const { return flushes_; }
  size_t size() const;
  void clear();

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  mutable std::mutex mu_;
  std::unordered_map<Key, Entry, KeyHash> map_;
  size_t capacity_;
  std::atomic<uint64_t> hits_{0}, misses_{0}, flushes_{0};
};

class Solver {
 public:
  explicit Solver(std::shared_ptr<ResultCache> cache = nullptr);
  ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  Decision decide(ir::Context& ctx, ir::Expr a, ir::Expr b, const DecideOptions& opt = {});
  // Find values for the leaves of a Bool expression making it true.
  SatResult solve(ir::Context& ctx, ir::Expr cond, const DecideOptions& opt = {});

  const SolverStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  ResultCache& cache() { return *cache_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<ResultCache> cache_;
  SolverStats stats_;
};

// The calling thread's own Solver (created on first use).
Solver& thread_solver();

// Checks left running because Z3 did not return within 400 ms of being interrupted at their
// deadline (their threads still run, with contexts of their own). A process that had one must end
// with _exit once its answer is out: exit's static destructors (Z3's among them) would run under them.
size_t abandoned_checks();
inline Decision decide(ir::Context& ctx, ir::Expr a, ir::Expr b, const DecideOptions& opt = {}) {
  return thread_solver().decide(ctx, a, b, opt);
}

// Whether two values differ beyond fp64 noise (NaN == NaN; bit-exact for BV/Bool).
bool values_differ(const ir::Value& x, const ir::Value& y, double rtol, double atol);

}  // namespace dirigo::smt
