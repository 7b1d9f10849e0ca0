// Internals of check_bundle shared by its sources (not part of the public API): the location search
// (class Search: scheduling in search_pool.cpp, the per-location decision in decide.cpp, witness
// refinement in refine.cpp) and the helpers they share. The search order is check/search.h; folding
// the search's slots into the verdict is check.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "check/check.h"
#include "check/lower.h"
#include "check/numeric.h"
#include "check/search.h"
#include "ir/eval.h"
#include "program/merge.h"
#include "smt/falsify.h"

namespace dirigo::check::detail {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Witness entries (refine.cpp).
WitnessLeaf shared_leaf(const program::Merged& m, const program::SharedInput& si);
WitnessLeaf describe_leaf(const ir::Context& ctx, const program::Merged& m, int32_t tensor, int64_t index,
                          double value);
bool sets_trimmed_result(const LocationResult& l);
std::string leaf_display(const WitnessLeaf& w);
bool beyond_tolerance(double a, double b, const smt::Tolerance& tol);
// env.support (ir/eval.h) from the elements a point lists per tensor: every other real element is 0,
// except in the `filled` tensors (no promise there).
void set_support(ir::Env& env, std::unordered_map<int32_t, std::vector<int64_t>> listed, std::vector<int32_t> filled);
// The tensors both expressions read (elements and symbolic-index loads): tensor -> whether every
// read is real-valued (zeroed_witness.cpp).
std::unordered_map<int32_t, bool> tensors_read(ir::Expr ea, ir::Expr eb);

// An output decided once for every location (the outer quantifier of the paper's equivalence, #18
// item 6): each side's element built with the location's coordinates as bounded variables
// (Lowering::element_symbolic), then decided as a location is, short of the per-location witness.
struct SymbolicOutput {
  bool equal = false;                      // every location equal (exactly, or modulo `approximations`)
  std::vector<std::string> approximations;  // the approximation axioms equality rests on (empty: exact)
  uint64_t nodes = 0;                      // tree size of both sides
  std::string expr;                        // the reference's, abbreviated, for the report
  std::string how;                         // how it was decided (equal) or why not
  double ms = 0;
};

// A decision's random points cut to what the terms its reductions expand to allow (each point evaluates
// them all): fewer past kSampledTerms, none past kNumericTerms, and then true (decide.cpp).
bool size_points_by_terms(smt::DecideOptions& dopt, uint64_t terms);

// A location of an output proven equal at its symbolic location, as decided one by one, made what the
// verdict counts (check.cpp): undecided (or equal within the tolerance, modulo another approximation)
// becomes equal as the proof says (exactly, or modulo its `approximations`); a difference found by evaluating in floating point (the falsification tier, random
// points: `numbers_differ` or `sampled`) undecided, as at a location proven equal whose tier's numbers
// differ (overflow or cancellation can be real; it blocks VERIFIED). false: a symbolic difference, which
// the proof contradicts (one of the two paths models an operator wrongly).
bool fold_settled_location(LocationResult& lr, const std::string& how, const std::vector<std::string>& approximations);

// The outcome of one location, in search order.
struct Slot {
  enum class Kind : uint8_t { Done, Race, Unsupported } kind = Kind::Done;
  LocationResult lr;
  std::string message;  // Race / Unsupported
};

// The location search: `jobs` workers take locations from one deterministic order; each has its
// own ir::Context, lowerings and (thread-local) Z3 solver, except a single worker, which uses the
// caller's. Results go into slots by position in the order, so the verdict does not depend on
// the number of workers: after a location that ends the search (BUG, race, UNSUPPORTED) no
// later location is handed out, and every earlier one is finished.
class Search {
 public:
  Search(const bundle::Bundle& b, const program::Merged& m, const Options& opt, const smt::Tolerance& tol,
         const smt::DecideOptions& dopt, const Report& r, LocationOrder& order, ir::Context& ctx, Lowering& ref,
         Lowering& cand)
      : b_(b), m_(m), opt_(opt), tol_(tol), dopt_(dopt), report_(r), order_(order), ctx_(ctx), ref_(ref),
        cand_(cand), jobs_(std::max<size_t>(1, opt.jobs)) {}

  // The slots in search order, up to the last one handed out (moved out, not copied: 10^6 of them).
  // A deque: it grows without moving its elements, and the slots (millions) grow under the
  // hand-out lock, which no deadline check interrupts.
  std::deque<std::optional<Slot>> run();

  // Decides each output at a symbolic location within `end` (symbolic_location.cpp); those proven equal
  // get only `spot` of their locations handed out, the first of the usual order (a cross-check of the
  // two paths).
  std::vector<SymbolicOutput> settle_symbolically(Clock::time_point end, size_t spot);

  uint64_t solver_calls() const { return solver_calls_; }
  size_t deduplicated() const { return dedup_hits_; }
  size_t classes() const { return classes_.size(); }  // --full: distinct queries up to leaf renaming
  size_t jobs() const { return jobs_; }

 private:
  // scheduling: handing out locations, the workers, the progress line (search_pool.cpp)
  std::optional<std::pair<size_t, Location>> take();
  void worker(size_t);
  void progress_line();
  Clock::time_point budget_end() const;
  // o with its timeout cut to what the budget has left now (at least 1 ms: 0 would mean none)
  smt::DecideOptions within_budget(smt::DecideOptions o) const;
  struct StopWorker {};  // a worker whose own Execute ran out of time: it takes no location

  // the decision at one location: symbolic, numeric, estimated too large (decide.cpp)
  Slot evaluate(ir::Context& ctx, Lowering& ref, Lowering& cand, smt::Solver& solver, const Location& loc, size_t seq);
  void numeric_decide(Lowering& ref, Lowering& cand, Slot& slot, const std::string& why);
  // Reductions too large for a random point: the point with one shared input zeroed, where they may
  // vanish (zeroed_witness.cpp); true when that shows a difference and slot.lr holds it
  bool zeroed_input_witness(ir::Context& ctx, ir::Expr ea, ir::Expr eb, const smt::DecideOptions& dopt,
                            uint64_t max_terms, Slot& slot, size_t seq, const std::string& why);

  NumericEvaluator& numeric_evaluator(Lowering& low, unsigned first);
  // The numeric path's ladder: the falsify ladder's uniform points (cheap draws: a giant location's
  // inputs are drawn once per use when they do not fit the draw cache), then the falsification tier's
  // distribution points.
  unsigned numeric_point(unsigned i) const;
  unsigned numeric_points() const;

  // the falsification tier: a location evaluated numerically at every distribution before it is
  // built; true when it is a BUG (both precisions beyond the tolerance) and `slot` holds it
  // (numeric_falsify.cpp)
  bool falsifies(const Location& loc, size_t seq) const;

  // ref_cone: what the reference evaluation newly reached, in nodes it would take at least once built
  bool falsify_numerically(ir::Context& ctx, Lowering& ref, Lowering& cand, Slot& slot, double& ref_cone);
  NumericEvaluator* falsify_evaluator(Lowering& low, unsigned round);
  std::string estimated_too_large(Lowering& ref, const Location& loc);

  // The first rung of the random points' ladder (falsify's and the numeric path's alike).
  static double ladder_bound(const smt::DecideOptions& dopt) { return dopt.tolerance ? dopt.tolerance->bound : 10.0; }
  // Ladder point p alone, its draws keyed by the tensors' names (regenerable from seed and point): the
  // witness when a and b differ there beyond the tolerance (decide.cpp)
  static std::optional<smt::Witness> falsify_at_point(ir::Context& ctx, ir::Expr a, ir::Expr b,
                                                      const smt::DecideOptions& dopt, unsigned p);

  // witnesses: sampled points, refined values, the re-check over program inputs (refine.cpp)
  void as_sampled_point(LocationResult& lr, unsigned point, double bound);
  void summarize_values(const ir::Context& ctx, ir::Expr ea, ir::Expr eb, LocationResult& lr) const;
  void witness_values(ir::Context& ctx, ir::Expr ea, ir::Expr eb, const smt::Witness& w, LocationResult& lr, size_t seq);
  void evaluate_witness(ir::Context& ctx, ir::Expr ea, ir::Expr eb, const smt::Witness& w, const ir::Env& wenv,
                        const std::vector<ir::Expr>& leaves, const std::vector<double>& values, LocationResult& lr);
  void confirm_over_program_inputs(LocationResult& lr);

  struct Decided {
    smt::Verdict verdict;
    smt::Stage stage;
    std::string reason;
    std::vector<std::string> approximations;
  };

  const bundle::Bundle& b_;
  const program::Merged& m_;
  const Options& opt_;
  const smt::Tolerance& tol_;
  const smt::DecideOptions& dopt_;
  const Report& report_;
  LocationOrder& order_;
  ir::Context& ctx_;
  Lowering &ref_, &cand_;
  size_t jobs_;
  Clock::time_point t0_;
  std::mutex mu_;
  std::mutex recheck_mu_;
  std::condition_variable done_cv_;
  std::deque<std::optional<Slot>> slots_;
  size_t handed_ = 0, finished_ = 0, active_ = 0;
  std::vector<bool> settled_;              // by output (empty: none)
  std::vector<size_t> handed_of_output_;   // locations handed out, by output (with settled_)
  size_t spot_ = 0;
  bool stop_ = false, printed_ = false;
  std::exception_ptr error_;
  uint64_t solver_calls_ = 0;
  std::atomic<size_t> dedup_hits_{0};
  std::unordered_map<PairKey, Decided, PairKeyHash> decided_;
  std::unordered_set<PairKey, PairKeyHash> classes_;
  std::unordered_set<size_t> numeric_outputs_;  // outputs whose locations are evaluated numerically
  std::unordered_set<size_t> estimated_outputs_;  // outputs whose first location was estimated
  std::unordered_set<size_t> reduce_tried_outputs_;  // outputs estimated too large and built once under a small cap
  std::unordered_set<size_t> giant_term_outputs_;    // outputs whose built locations expand past kNumericTerms
  static constexpr size_t kReduceTrialNodes = 1'000'000;
  // The solver's slice (each call) at a symbolic location whose value solved a kernel's writing thread
  // (symbolic_location.cpp).
  static constexpr unsigned kSolvedThreadSolverMs = 500;
  std::atomic<uint64_t> seq_reduce_index_{0};  // names of symbolic reduction indices (decide.cpp)
  // `lone`: per pair of reductions summing one body over different domains, the body at a point only
  // one side has (closed), for domain_witness. expand: what still differs afterwards is expanded when
  // small (the term-by-term stages' form)
  std::string match_reductions(ir::Context& ctx, smt::Solver& solver, ir::Expr& ea, ir::Expr& eb,
                               std::vector<ir::Expr>& lone, bool expand = true);
  // Both sides re-rolled (ir/reroll.h): a Decision when that makes them equal (nullopt: go on with
  // the originals); `how` says what decided it. snap_too: also with constants snapped (Fp32Constants).
  std::optional<smt::Decision> reroll_decide(ir::Context& ctx, smt::Solver& solver, ir::Expr ea, ir::Expr eb,
                                             const smt::DecideOptions& dopt, std::string& how, bool snap_too);
  // A witness from the terms one side lacks: the leaves of a `lone` term, or of one point of it, set
  // (everything else 0), kept only when both sides, evaluated in fp64 and IEEE fp32, differ beyond the
  // tolerance.
  std::optional<smt::Witness> domain_witness(ir::Context& ctx, ir::Expr ea, ir::Expr eb, const std::vector<ir::Expr>& lone);
  // A location past kNumericTerms at a sparse point: one opened point's elements set, the rest 0.
  std::optional<smt::Witness> opened_point_witness(ir::Context& ctx, ir::Expr ea, ir::Expr eb);
  // Sets of elements at v (the rest 0, or with `fills` one tensor at -v), evaluated at the reductions'
  // nonzero points only: the first point where both sides differ beyond the tolerance.
  std::optional<smt::Witness> sparse_witness(ir::Context& ctx, ir::Expr ea, ir::Expr eb,
                                             const std::vector<std::vector<ir::Expr>>& tries, bool fills);
  bool reads_inputs_only(ir::Context& ctx, ir::Expr ea, ir::Expr eb) const;
  std::map<std::pair<const Lowering*, unsigned>, std::unique_ptr<NumericEvaluator>> numeric_;  // by first point
  std::map<unsigned, std::shared_ptr<ProductsCache>> numeric_products_;  // by first point, both programs'
  // the falsification tier's evaluators (its distribution points, fp64 and fp32 lanes), by lowering and round
  std::map<std::pair<const Lowering*, unsigned>, std::unique_ptr<NumericEvaluator>> falsify_;  // by round
  std::map<unsigned, std::shared_ptr<ProductsCache>> falsify_products_;
  std::atomic<bool> falsify_over_{false};  // its share of the budget is spent
};

}  // namespace dirigo::check::detail
