// Check (paper §3.4, §4.3–4.6): decide, one output location at a time, whether the
// candidate program computes what the reference computes, for every input.
//
//   bundle ─merge─► obligation ─lower─► per-location expressions (back-projection through
//   ATen equations and kernel write sets) ─smt::decide─► Equal / Differ(witness) ─► verdict
//
// The verdict never says BUG without evidence: an Execute safety finding (with thread
// coordinates and PTX lines), or an inequivalence whose witness, evaluated concretely on
// both programs' symbolic values in IEEE fp32, still differs beyond the tolerance. A
// witness that does not survive that is SUSPECT.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "exec/exec.h"
#include "smt/decide.h"

namespace dirigo::check {

// Error: dirigo itself failed (an exception its model does not name); never said of the programs.
enum class Outcome : uint8_t { Bug, Suspect, Checked, Verified, Timeout, Unsupported, Error };
std::string_view outcome_name(Outcome o);  // "BUG", "SUSPECT", ..., "ERROR"
int exit_code(Outcome o);                  // 1 BUG, 2 SUSPECT, 0 CHECKED/VERIFIED, 3 TIMEOUT, 4 UNSUPPORTED, 70 ERROR

struct Options {
  double budget_s = 30;          // wall-clock budget for the whole check (0: none)
  // An absolute end as well, the earlier of the two wins: a nested check (the re-check of a location
  // over program inputs) is given its caller's end, so that it can never outlast the outer budget.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  size_t min_locations = 5;      // fewer than this and no BUG -> TIMEOUT
  size_t max_locations = 0;      // 0 = no limit besides the budget
  bool full = false;             // every output location (VERIFIED when all are equal)
  uint64_t seed = 0;             // seeds the random part of the search order
  bool trim_prefix = true;
  // Check exactly these (output, flat index) locations, in this order, and nothing else (empty: the
  // usual search). Used to re-decide a location without prefix trimming.
  std::vector<std::pair<size_t, int64_t>> only_locations;
  std::optional<smt::Tolerance> tolerance;  // default: the bundle's, else atol = rtol = 1e-2
  smt::DecideOptions decide;     // solver budgets, axioms
  exec::ExecOptions exec;
  bool progress = false;         // progress line on stderr for runs longer than a second
  size_t jobs = 1;               // location workers (threads); the verdict does not depend on it
  bool dedup = true;             // --full: decide queries identical up to leaf renaming once
  // A worker whose ir::Context has grown past this many bytes starts over in a fresh one (its own
  // context, lowerings and Execute records) before its next location: memory stays bounded however
  // many locations a --full check visits. Recycling re-runs Execute, so it should be rare.
  size_t worker_context_bytes = size_t(2) << 30;
  // A location whose sides still differ is tried again with both sides' expanded sums re-rolled into
  // reductions (ir/reroll.h); kept only where that makes them equal (--no-reroll: off).
  bool reroll = true;
  // Each output is first built once at a symbolic location (its coordinates as bounded variables); where
  // both programs give the same expression, every location of it is equal and the search decides only
  // min_locations of them, as a cross-check (--no-symbolic-location: off). The attempt gets at most this
  // share of the budget left.
  bool symbolic_location = true;
  double symbolic_location_share = 0.2;
  // Nodes one location may add to its worker's ir::Context (~100 bytes each with the unique table):
  // a location that would not fit ends as TIMEOUT naming the node budget instead of swapping.
  size_t max_location_nodes = 30'000'000;
  // Building a location stops at this many nodes; it is then evaluated numerically at random points
  // (check/numeric.h), as are later locations of the same output (their size is alike).
  // 8 M: past giant_location_nodes (4 M) a built location was never decided equal anyway (random
  // points only), and locations of 4–8 M nodes still get the built path's fp32 evidence.
  size_t build_nodes = 8'000'000;
  // Before building the first location of an output, the reference program's side is estimated
  // (NumericEvaluator::estimate: one template per SSA value; elements needed plus their
  // multiply-adds); past this many the output is evaluated numerically at once, without the
  // seconds of building build_nodes first (0: never estimate). 64 M: eight times build_nodes, as a
  // sum of K products builds into at least K nodes; the estimate errs low (a value read one element
  // each counts as needed as often as its reader), so a location that builds below the cap is not
  // taken from the built path (pairs 039, 061, 005: 6·10^8–3·10^9 estimated). The estimate also
  // stops, and the output goes numeric, once its templates pass build_nodes / 2 nodes.
  double numeric_estimate = 64e6;
  // A built location past this many nodes (both sides) is decided at random points only; its
  // witness is then a SampledPoint (regenerable from seed and point), not a list of every leaf.
  size_t giant_location_nodes = 4'000'000;
  // ... or when building it took this share of the budget left (1: never; a lower share turned
  // correct pairs whose slow locations were decided equal into TIMEOUT: 007, 046 of the corpus)
  double build_share = 1.0;
  // The falsification tier: the first this-many locations of the search order are evaluated
  // numerically (check/numeric.h) at every input distribution of smt::kDistributionPoint's ladder,
  // in fp64 and IEEE fp32, before any expression is built; a difference beyond the tolerance in both
  // is a BUG at once (evidence "numeric-falsification"), anything else goes on to the proof. 0: off.
  size_t falsify_locations = 4;
  // ... within this share of the budget (all its locations together); past it the tier ends.
  double falsify_share = 0.3;
  // A falsified location is still built, up to this many nodes, and decided: its report then names
  // both symbolic values and every leaf (evidence fp32-evaluation when the proof's witness is
  // confirmed too); past it the tier's numeric BUG stands as it is.
  size_t falsified_build_nodes = 1'000'000;
  // Called as each stage starts ("read", "merge", "execute", "search"; a nested re-check's stages
  // prefixed "search: re-check over program inputs: "), from the thread that runs it: the CLI's hard
  // stop names the stage it ended (cli/hard_stop.h).
  std::function<void(const std::string& stage)> on_stage;
  // false: the caller exits right after the check (the CLI), so the lowering's memo, the order and
  // the expression nodes are left to the OS instead of freed one by one (seconds for 10^6 locations)
  bool release_memory = true;
};

// Why a location was chosen (paper §4.3).
enum class Tier : uint8_t { Corner, PathCondition, Boundary, Random, Sequential };
std::string_view tier_name(Tier t);

struct Location {
  size_t output = 0;             // index into Report::outputs
  int64_t flat = 0;              // row-major index into the output's logical shape
  std::vector<int64_t> index;    // the same as a multi-index
  Tier tier = Tier::Random;
};

struct LeafShown {  // a witness value that matters
  std::string name;  // "x[0, 3, 5, 7]"
  double value = 0;
};

// One input element a location depends on, with its witness value: the `leaves` entries of a
// dirigo-witness file (docs/check.md), enough for a replay to rebuild the input.
struct WitnessLeaf {
  std::string input;            // shared input name (reference's), "prefix[k].tN", or the external tensor
  std::string candidate_input;  // the candidate's name for it (inputs, parameters, buffers)
  std::string kind;             // "input" | "parameter" | "buffer" | "trimmed" | "external"
  std::vector<int64_t> index;   // logical multi-index into the tensor
  double value = 0;
  // kind "trimmed": bundle op index, the tensor it produced, its position in the op's results
  // (-1: written in place), the op's name and the tensor's shape
  int64_t op = -1;
  std::string tensor, aten;
  int output = -1;
  std::vector<int64_t> shape;
  std::string program;          // kind "external": which program reads it
};

// The outcome of replaying a witness on the real programs (python -m dirigo.replay).
struct Replay {
  std::string status;           // "replayed" | "unsupported" | "error"
  std::string device, evidence; // "cpu"/"cuda", "replay-cpu"/"replay-gpu"
  std::string message;
  double reference = 0, candidate = 0, difference = 0, allowed = 0;
  bool exceeds = false;
  double carry_residual = -1;   // max residual of the prefix carry-back (-1: none needed)
  std::string inputs_from;      // run at the programs' own inputs instead of the witness (named so): its
                                // values were results of the trimmed prefix, which no input is known to give
  std::string json;             // the replayer's whole answer
};
Replay parse_replay(const std::string& json);  // malformed -> status "error" naming what was wrong

// The state stage (python -m dirigo.state, docs/check.md "State"): do the two programs, constructed
// the way KernelBench constructs them, hold equal values in their matched parameters and buffers, and
// does a difference reach the outputs?
struct StateFinding {
  std::string verdict;   // "BUG" | "SUSPECT" | "NONE" | "UNKNOWN"; "error": the answer was unreadable
  std::string evidence;  // "state-replay-gpu" | "state-replay-cpu" | "state-proven-location" | ""
  std::string reason;
  std::string json;      // the whole dirigo-state answer
};
StateFinding parse_state(const std::string& json);  // malformed -> verdict "error" naming what was wrong

struct LocationResult {
  Location loc;
  smt::Verdict verdict = smt::Verdict::Unknown;
  smt::Stage stage = smt::Stage::Error;
  std::string reason;            // Unknown/Timeout/unsupported detail
  std::string ref_expr, cand_expr;  // abbreviated symbolic values
  // Differ: both values summarized for people (ir/summary.h): the context they share with □ where
  // they differ (empty: they differ at the top), each side's differing part, and how the parts relate.
  std::string shared_expr, ref_part, cand_part, parts_note;
  uint64_t ref_nodes = 0, cand_nodes = 0;
  std::vector<LeafShown> witness;   // Differ: the leaves of both expressions, at most a few dozen shown
  std::vector<WitnessLeaf> leaves;  // Differ: every tensor-element leaf of both expressions
  // Differ: the expressions' reductions read elements the leaves do not list, which are 0 at the witness
  // (the witness's "others": "zero"; a replay sets every shared input, parameter and buffer to 0 first)
  bool others_zero = false;
  // Differ: inputs whose elements not listed hold `value` instead of 0 (no index; the witness's "fill")
  std::vector<WitnessLeaf> fills;
  double ref_value = 0, cand_value = 0;           // fp64 at the witness
  double ref_value_f32 = 0, cand_value_f32 = 0;   // fp32 at the witness
  bool confirmed_f32 = false;    // the fp32 values differ beyond the tolerance
  bool exceeds_tolerance = false;
  bool deduplicated = false;     // --full: decided by an earlier query identical up to leaf renaming
  // Decided equal, but the falsification tier's numbers (fp64 and fp32 at one of its distributions)
  // differ beyond the tolerance here: left undecided.
  bool numbers_differ = false;
  std::vector<std::string> approximations;  // Equal: the approximation axioms it rests on (empty: exact)
  // Decided by numeric evaluation of a location too large to build (check/numeric.h): the falsify
  // ladder point whose inputs show the difference. Every input is regenerable from it (smt::draw keyed
  // by smt::name_key of "in:<shared input>"), so `leaves` stays empty.
  struct SampledPoint {
    uint64_t seed = 0;
    unsigned point = 0;
    double bound = 10;  // the ladder's first rung; point `point` draws within smt::point_bound(point, bound)
    std::vector<std::string> trimmed;  // shared inputs that are results of the trimmed prefix (drawn too)
    std::vector<std::string> zeroed;   // shared inputs set to 0 at the point (every element), not drawn
  };
  std::optional<SampledPoint> sampled;
  // What backs the difference when it is not "fp32-evaluation" (both symbolic or numeric values in
  // fp32 at the witness): "numeric-falsification" for the falsification tier's.
  std::string evidence;
  double ms = 0;
};

struct OutputInfo {
  std::string ref_name, cand_name;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  // Decided once for every location (Options::symbolic_location): the reference's expression at the
  // symbolic location (abbreviated; its coordinates are loc<output>.<dim>) and both sides' size.
  bool symbolic = false;
  std::string symbolic_expr;
  uint64_t symbolic_nodes = 0;
  int64_t symbolic_only = 0;  // of its locations, those decided only so (not also one by one)
  std::string symbolic_how;   // how it was decided, or why not; "" when not tried
  double symbolic_ms = 0;     // the attempt's time
};

// Locations past this many that do not differ (equal, undecided) are counted, not kept: a fast
// elementwise program decides 10^6 locations in a 20 s budget, and a class of 10^5 undecided
// locations printed its expression 10^5 times; listing each made the report take longer than the check.
inline constexpr size_t kListedLocations = 10000;

struct Report {
  Outcome outcome = Outcome::Unsupported;
  std::string reason;                    // UNSUPPORTED / TIMEOUT detail, or the BUG headline
  std::string evidence;                  // what backs a BUG: "execute-safety", "fp32-evaluation"
  std::vector<OutputInfo> outputs;
  std::vector<exec::Finding> findings;   // Execute safety violations (each is a BUG)
  std::vector<LocationResult> locations; // in the order checked, less those past kListedLocations that do not differ
  size_t locations_omitted = 0;          // locations checked but not listed (equal or undecided)
  std::optional<size_t> first_differ;    // index into locations
  size_t checked = 0, equal = 0;
  // Of those, decided only by their output's symbolic location (OutputInfo::symbolic), not one by one.
  size_t symbolic_locations = 0;
  // How the equal locations were proven: exactly over the reals; within the tolerance for every input
  // element in [-bound, bound]; modulo approximation equivalences (named in `approximations`).
  size_t equal_exact = 0, equal_within_tolerance = 0, equal_modulo_approximation = 0;
  std::vector<std::string> approximations;
  std::vector<std::string> undecided_safety;  // Execute safety checks neither proven nor refuted
  int64_t total_locations = 0;
  size_t prefix_trimmed = 0;
  size_t kernels = 0;
  std::vector<std::string> notes;        // modelling notes (e.g. what prefix trimming stopped at)
  double seconds = 0, lower_seconds = 0, search_seconds = 0;
  // Wall seconds per stage in the order run ("read", "merge", "execute", "search"; the CLI adds
  // "trace", "replay", "state"), for the HTML report.
  std::vector<std::pair<std::string, double>> stage_seconds;
  uint64_t solver_calls = 0;
  size_t deduplicated = 0;               // locations decided by an identical earlier query (--full)
  size_t classes = 0;                    // --full: distinct location queries up to renaming of input elements
  size_t jobs = 1;
  double projected_full_seconds = 0;     // --full ended by the budget: time the rest would take
  smt::Tolerance tolerance;              // the tolerance witnesses were judged by
  std::vector<WitnessLeaf> shared_inputs;  // inputs/parameters/buffers both programs read (name pairs)
  std::optional<Replay> replay;          // the first differing location's witness replayed
  std::optional<StateFinding> state;     // the state stage's answer, when it ran
  std::string stage;                     // "state": the verdict comes from the state stage
  std::optional<Outcome> function_outcome;  // the function check's own verdict, when the state stage changed it
  std::string hard_stop;                 // the stage the CLI's hard stop ended (TIMEOUT; docs/cli.md); "": none
};

// Appends `l` to the report's listed locations, or counts it as omitted (see kListedLocations).
void list_location(Report& r, LocationResult&& l);


// Where the witness's programs come from (dirigo-witness fields; empty: unknown).
struct WitnessSource {
  std::string ref, cand, bundle;
  int64_t init_seed = 42;
  std::optional<int64_t> input_seed;     // unset: KernelBench's first trial seed from init_seed
};
// The dirigo-witness document (docs/check.md) of the first differing location; "" when none.
std::string witness_json(const Report& r, const WitnessSource& src = {});
// The "sampled" object of a location decided by numeric evaluation (report and witness): seed, point,
// the point's bound and sign, and how each element is drawn, enough for a replay to regenerate every input.
std::string sampled_json(const LocationResult::SampledPoint& s);
// The verdict rules for a replay of the first differing location: it reproduces -> BUG with
// evidence replay-gpu/replay-cpu; it ran and does not -> SUSPECT; it could not run -> unchanged
// (fp32 evidence, labelled as such).
void apply_replay(Report& r, Replay replay);
// The verdict rules of the state stage: a state BUG (an output difference observed under each program's
// own state) makes a BUG unless the function check already found one; a state SUSPECT (values differ and
// move the reference's output, not observed on the candidate) makes CHECKED/VERIFIED/TIMEOUT a SUSPECT;
// the rest are notes. The function check's own verdict stays in `function_outcome`.
void apply_state(Report& r, StateFinding state);
// Witness refinement (paper §4.6; refine.cpp): leaf values (same order as `leaves`, within ±tol.bound),
// starting from `start`, where ea and eb differ beyond the tolerance in fp64 — with `also_f32` in IEEE
// fp32 too, with fp32 values close to fp64's — or `start` when none is found within `work` node
// evaluations (each point costs both expressions' DAG sizes, twice with also_f32). The work, not the
// clock, ends it, so the same seed gives the same witness on a busy machine; `deadline` is only the
// outer cap (the check's budget).
constexpr uint64_t kRefineWork = 10'000'000;  // all 64 + 24 x leaves points of a 10^4-node, 40-leaf location
std::vector<double> refine_witness(ir::Expr ea, ir::Expr eb, const std::vector<ir::Expr>& leaves,
                                   std::vector<double> start, const smt::Tolerance& tol, uint64_t seed,
                                   uint64_t work, bool also_f32 = false,
                                   std::chrono::steady_clock::time_point deadline =
                                       std::chrono::steady_clock::time_point::max(),
                                   uint64_t nodes = 0);  // both DAG sizes when the caller knows them (0: counted here)
// The candidate faulted on the GPU (an illegal or misaligned address, a device-side assert) while the
// reference ran on the same inputs: a BUG observed on the real program (evidence crash-gpu, stage
// trace), without a bundle.
Report candidate_crash(const std::string& message);
// The candidate failed where the reference ran (stage trace): evidence "exception" (it raised, also when
// run without the tracer), "timeout" (killed past the trace timeout), "crash" (its process died) or
// "crash-gpu"; `message` names the exception's type, message and the candidate's file:line.
Report candidate_failure(const std::string& message, const std::string& evidence);
// Tracing gave no bundle and nothing is the candidate's fault (the reference failed, the environment lacks
// something, or dirigo cannot trace it): UNSUPPORTED, stage trace, `message` says which.
Report trace_unsupported(const std::string& message);
// The verdict when every location was proven equal: VERIFIED only with every Execute safety check decided,
// else CHECKED with the reason.
std::pair<Outcome, std::string> all_equal_outcome(const Report& r);
// The report of dirigo's own failure (Outcome::Error, exit 70) with `what` in its reason.
Report internal_error(const std::string& what);
// apply_replay and apply_state on a report in its JSON form (to_json's; the Python API and the corpus
// evaluation hold reports that way), so that the verdict rules exist once: each answer is folded when
// not empty, and the fields the rules touch are written back. Malformed report JSON throws.
std::string fold_answers(const std::string& report_json, const std::string& replay_json,
                         const std::string& state_json);

// Checks the reference against the candidate of a bundle. Never throws: anything it cannot
// model is Outcome::Unsupported with a reason naming what was missing; any other exception is
// Outcome::Error ("internal error: ..., please report with the bundle").
Report check_bundle(const bundle::Bundle& b, const Options& opt = {});
// Reads the bundle directory first (errors -> UNSUPPORTED "bundle: ...").
Report check_path(const std::string& bundle_dir, const Options& opt = {});

// What VERIFIED/CHECKED rest on: "exact" (every equal location over the reals for every input),
// "within tolerance for |inputs| <= B" (some only by a tolerance bound over leaves in [-B, B]), or
// "modulo A, B" (some only by approximation axioms); both qualifiers when both apply.
std::string proof_kind(const Report& r);
std::string to_text(const Report& r, bool verbose = false);
// `witness`: witness_json(r) when the caller has it already (a giant location's is ~10^6 leaves to write).
std::string to_json(const Report& r, const std::string* witness = nullptr);

}  // namespace dirigo::check
