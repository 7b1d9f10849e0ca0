#include "check/check.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <cmath>
#include <cstdio>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "bundle/io.h"
#include "check/lower.h"
#include "check/numeric.h"
#include "check/search.h"
#include "ir/eval.h"
#include "ir/limits.h"
#include "ir/print.h"
#include "ir/summary.h"
#include "program/merge.h"
#include "smt/falsify.h"

namespace dirigo::check {

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Bug: return "BUG";
    case Outcome::Suspect: return "SUSPECT";
    case Outcome::Checked: return "CHECKED";
    case Outcome::Verified: return "VERIFIED";
    case Outcome::Timeout: return "TIMEOUT";
    case Outcome::Unsupported: return "UNSUPPORTED";
  }
  return "?";
}

int exit_code(Outcome o) {
  switch (o) {
    case Outcome::Bug: return 1;
    case Outcome::Suspect: return 2;
    case Outcome::Checked:
    case Outcome::Verified: return 0;
    case Outcome::Timeout: return 3;
    case Outcome::Unsupported: return 4;
  }
  return 70;
}

std::string_view tier_name(Tier t) {
  switch (t) {
    case Tier::Corner: return "corner";
    case Tier::PathCondition: return "path-condition";
    case Tier::Boundary: return "boundary";
    case Tier::Random: return "random";
    case Tier::Sequential: return "sequential";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string index_str(std::span<const int64_t> idx) {
  std::string s;
  for (size_t k = 0; k < idx.size(); ++k) s += (k ? ", " : "") + std::to_string(idx[k]);
  return s;
}

// A shared input as a witness entry without an element: its kind and, for inputs, parameters
// and buffers, the candidate's name; for a trimmed result, the op that made it.
WitnessLeaf shared_leaf(const program::Merged& m, const program::SharedInput& si) {
  WitnessLeaf w;
  w.input = si.name;
  if (si.origin == program::SharedInput::Origin::Trimmed) {
    const program::SsaOp& op = m.ref.ops.at(si.trimmed_op);
    w.kind = "trimmed";
    w.op = int64_t(op.index);
    w.tensor = si.ref.tensor;
    w.shape = si.ref.shape;
    if (const auto* a = op.aten()) {
      w.aten = a->name;
      auto it = std::find(a->outputs.begin(), a->outputs.end(), si.ref.tensor);
      w.output = it == a->outputs.end() ? -1 : int(it - a->outputs.begin());
    }
    return w;
  }
  w.kind = std::string(bundle::input_kind_name(si.kind));
  w.candidate_input = si.name;
  for (const auto& in : m.cand.inputs)
    if (in.view.value == si.cand.value && in.view.tensor == si.cand.tensor) w.candidate_input = in.name;
  return w;
}

// A leaf of a location's expressions (tensor `tensor`, flat element `index`) as a witness entry:
// "in:x" element 37 -> input x at [0, 1, 5] (the shared input's shape); "in:prefix[k].tN" -> a
// trimmed result; anything else is read by one program only.
WitnessLeaf describe_leaf(const ir::Context& ctx, const program::Merged& m, int32_t tensor, int64_t index,
                          double value) {
  std::string name(ctx.tensor_name(tensor));
  if (name.rfind("in:", 0) == 0)
    for (const auto& si : m.inputs)
      if (si.name == name.substr(3)) {
        WitnessLeaf w = shared_leaf(m, si);
        w.index = unravel(si.ref.shape, index);
        w.value = value;
        return w;
      }
  WitnessLeaf w;
  w.kind = "external";
  w.input = name;
  w.program = name.substr(0, name.find(':'));
  w.index = {index};
  w.value = value;
  // "ref:s3@v0": version 0 of a storage only one program reads. When it is one of that
  // program's inputs (e.g. a parameter no candidate parameter matched), name it, so a replay
  // can set it in that program alone.
  int storage = -1, version = -1;
  if (std::sscanf(name.c_str() + w.program.size() + 1, "s%d@v%d", &storage, &version) == 2 && version == 0) {
    bool is_ref = w.program == "ref";
    const program::SsaProgram& prog = is_ref ? m.ref : m.cand;
    for (const auto& in : prog.inputs) {
      if (in.view.value != storage) continue;
      int64_t l = logical_of_storage(in.view, index);
      if (l < 0) continue;
      w.kind = std::string(bundle::input_kind_name(in.kind));
      w.input = in.name;
      w.index = unravel(in.view.shape, l);
      w.program = is_ref ? "reference" : "candidate";
      break;
    }
  }
  return w;
}

// Does the witness choose values for results of the trimmed prefix? (A sampled point draws every
// shared input, the trimmed results among them.)
bool sets_trimmed_result(const LocationResult& l) {
  return (l.sampled && !l.sampled->trimmed.empty()) ||
         std::any_of(l.leaves.begin(), l.leaves.end(), [](const WitnessLeaf& w) { return w.kind == "trimmed"; });
}

std::string leaf_display(const WitnessLeaf& w) { return fmt::format("{}[{}]", w.input, index_str(w.index)); }

bool beyond_tolerance(double a, double b, const smt::Tolerance& tol) {
  if (std::isnan(a) != std::isnan(b)) return true;
  if (std::isnan(a)) return false;
  if (std::isinf(a) || std::isinf(b)) return a != b;
  return std::fabs(a - b) > tol.atol + tol.rtol * std::fabs(a);
}

struct PairHash {
  size_t operator()(const std::pair<int32_t, int64_t>& k) const { return std::hash<int64_t>()(k.second * 1000003 + k.first); }
};

// How far beyond the tolerance the two values are (negative: within it).
double excess(double a, double b, const smt::Tolerance& tol) {
  if (!std::isfinite(a) || !std::isfinite(b)) return beyond_tolerance(a, b, tol) ? 1e300 : -1e300;
  return std::fabs(a - b) - (tol.atol + tol.rtol * std::fabs(a));
}

}  // namespace

// Witness refinement (paper §4.6): the solver's model shows that the values differ, but
// often by less than the tolerance (floats are reals to the solver, and transcendentals
// are uninterpreted). Starting from the model, search the real leaves within
// [-bound, bound] for a point where the difference, evaluated in fp64 (with `also_f32`: in
// IEEE fp32 too, both finite), clears the tolerance: random restarts at shrinking scales, then
// coordinate steps on the best point. Deterministic for a seed. Returns the improved leaf values
// (same order as `leaves`).
std::vector<double> refine_witness(ir::Expr ea, ir::Expr eb, const std::vector<ir::Expr>& leaves,
                                   std::vector<double> start, const smt::Tolerance& tol, uint64_t seed,
                                   double budget_ms, bool also_f32) {
  if (budget_ms <= 0) return start;
  auto t0 = Clock::now();
  std::unordered_map<std::pair<int32_t, int64_t>, size_t, PairHash> pos;
  for (size_t i = 0; i < leaves.size(); ++i) pos[{leaves[i]->tensor(), leaves[i]->index()}] = i;
  auto eval = [&](const std::vector<double>& x) {
    ir::Env e;
    e.elem = [&](int32_t t, int64_t i, ir::Sort s) -> ir::Value {
      auto it = pos.find({t, i});
      double v = it == pos.end() ? 0.0 : x[it->second];
      return s == ir::Sort::Real ? ir::Value::of_real(v) : ir::Value::of_bv(s, uint64_t(int64_t(v)));
    };
    e.var = [](std::string_view, ir::Sort s) { return s == ir::Sort::Real ? ir::Value::of_real(0) : ir::Value::of_bv(s, 0); };
    try {
      ir::Evaluator ev(e, ir::Precision::F64);
      double a = ev.real(ea), b = ev.real(eb);
      if (!std::isfinite(a) || !std::isfinite(b)) return -1e300;  // an overflow is no witness
      if (!also_f32) return excess(a, b, tol);
      ir::Evaluator ev32(e, ir::Precision::F32);
      double a32 = ev32.real(ea), b32 = ev32.real(eb);
      if (!std::isfinite(a32) || !std::isfinite(b32)) return -1e300;
      // fp32 must also stay close to fp64 (against the difference): a softmax's canonical form that
      // underflows in fp32 gave 0.0038 where fp64 gave 1 — a difference, but not the real program's numbers.
      double faithful = std::fabs(a - b) / 2 - (std::fabs(a32 - a) + std::fabs(b32 - b));
      return std::min({excess(a, b, tol), excess(a32, b32, tol), faithful});
    } catch (const std::exception&) {
      return -1e300;
    }
  };
  auto over = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() > budget_ms; };
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(-tol.bound, tol.bound);
  std::vector<double> best = std::move(start);
  double best_s = eval(best);
  // Shrinking scales too: at +-bound a softmax over 81-term convolution sums overflows fp32 (pair 089).
  static constexpr double kScales[] = {1, 0.75, 0.5, 0.25, 0.1, 0.03};
  for (int r = 0; r < 64 && best_s <= 0 && !over(); ++r) {
    std::vector<double> x(leaves.size());
    double scale = kScales[r % 6];
    for (auto& v : x) v = uni(rng) * scale;
    double s2 = eval(x);
    if (s2 > best_s) best_s = s2, best = std::move(x);
  }
  for (double step = tol.bound / 4; step > 1e-3 && best_s <= 0 && !over(); step /= 2)
    for (size_t k = 0; k < best.size() && best_s <= 0 && !over(); ++k)
      for (double d : {step, -step}) {
        std::vector<double> x = best;
        x[k] = std::clamp(x[k] + d, -tol.bound, tol.bound);
        double s2 = eval(x);
        if (s2 > best_s) best_s = s2, best = std::move(x);
      }
  return best;
}

namespace {


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
  std::vector<std::optional<Slot>> run() {
    t0_ = Clock::now();
    std::vector<std::thread> threads;
    active_ = jobs_;
    for (size_t w = 0; w < jobs_; ++w) threads.emplace_back([this, w] { worker(w); });
    if (opt_.progress) {
      std::unique_lock lock(mu_);
      while (active_ > 0) {
        done_cv_.wait_for(lock, std::chrono::milliseconds(200));
        progress_line();
      }
    }
    for (auto& t : threads) t.join();
    if (opt_.progress && printed_) std::fprintf(stderr, "\r\033[K");
    if (error_) std::rethrow_exception(error_);
    auto filled = std::find_if(slots_.begin(), slots_.end(), [](const auto& s) { return !s; });
    slots_.erase(filled, slots_.end());  // every slot up to the last handed out is filled
    return std::move(slots_);
  }

  uint64_t solver_calls() const { return solver_calls_; }
  size_t deduplicated() const { return dedup_hits_; }
  size_t jobs() const { return jobs_; }

 private:
  // The next location to check and its position in the order, or nothing when the search is over.
  std::optional<std::pair<size_t, Location>> take() {
    std::lock_guard lock(mu_);
    if (stop_ || since(t0_) > opt_.budget_s) return std::nullopt;
    if (opt_.max_locations && handed_ >= opt_.max_locations) return std::nullopt;
    auto loc = order_.next();
    if (!loc) return std::nullopt;
    slots_.emplace_back();
    return std::make_pair(handed_++, *loc);
  }

  void worker(size_t) {
    try {
      std::unique_ptr<ir::Context> own_ctx;
      std::unique_ptr<Lowering> own_ref, own_cand;
      struct ForgetEvaluators {  // the numeric evaluators of a worker's own lowerings end before them
        Search& s;
        const std::unique_ptr<Lowering>&ref, &cand;
        ~ForgetEvaluators() {
          std::lock_guard lock(s.mu_);
          std::erase_if(s.numeric_, [&](const auto& e) {
            return e.first.first && (e.first.first == ref.get() || e.first.first == cand.get());
          });
        }
      } forget{*this, own_ref, own_cand};
      ir::Context* ctx = &ctx_;
      Lowering *ref = &ref_, *cand = &cand_;
      if (jobs_ > 1) {  // the caller's context is the order's: each worker lowers in its own
        own_ctx = std::make_unique<ir::Context>();
        own_ref = std::make_unique<Lowering>(*own_ctx, b_, m_, true, opt_.exec);
        own_cand = std::make_unique<Lowering>(*own_ctx, b_, m_, false, opt_.exec);
        try {
          own_ref->execute_all();
          own_cand->execute_all();
        } catch (const Unsupported&) {  // the caller's lowering ran: only the budget can stop this one
          bool out_of_time = false;
          for (const auto* low : {own_ref.get(), own_cand.get()})
            for (const auto& L : low->launches()) out_of_time = out_of_time || (L.result && L.result->out_of_time);
          if (!out_of_time) throw;
          own_ctx.reset();  // this worker takes no location
        }
        if (own_ctx) ctx = own_ctx.get(), ref = own_ref.get(), cand = own_cand.get();
      }
      if (jobs_ > 1 && !own_ctx) throw StopWorker{};
      auto deadline = budget_end();
      ref->set_deadline(deadline);
      cand->set_deadline(deadline);
      smt::Solver& solver = smt::thread_solver();
      uint64_t calls0 = solver.stats().solver_calls;
      while (auto job = take()) {
        Slot slot = evaluate(*ctx, *ref, *cand, solver, job->second, job->first);
        bool ends = slot.kind != Slot::Kind::Done ||
                    (slot.lr.verdict == smt::Verdict::Differ && slot.lr.confirmed_f32);
        std::lock_guard lock(mu_);
        slots_[job->first] = std::move(slot);
        ++finished_;
        if (ends) stop_ = true;  // nothing after it is handed out; earlier ones still finish
      }
      std::lock_guard lock(mu_);
      solver_calls_ += solver.stats().solver_calls - calls0;
    } catch (const StopWorker&) {
    } catch (...) {
      std::lock_guard lock(mu_);
      if (!error_) error_ = std::current_exception();
      stop_ = true;
    }
    std::lock_guard lock(mu_);
    --active_;
    done_cv_.notify_all();
  }

  // Progress on stderr for runs longer than a second: rate, and an ETA where the end is known.
  void progress_line() {
    double elapsed = since(t0_);
    if (elapsed < 1.0) return;
    double rate = finished_ / std::max(elapsed, 1e-9);
    int64_t total = opt_.full ? report_.total_locations
                              : (opt_.max_locations ? int64_t(std::min<size_t>(opt_.max_locations, report_.total_locations))
                                                    : report_.total_locations);
    double eta = rate > 0 ? double(total - int64_t(finished_)) / rate : 0;
    double left = opt_.budget_s - elapsed;
    std::string tail = eta <= left ? fmt::format("ETA {:.0f} s", eta)
                                   : fmt::format("budget ends in {:.0f} s (all would take {:.0f} s more)", left, eta);
    std::fprintf(stderr, "\r\033[Kdirigo check: %zu/%lld locations, %.1f/s, %s%s", finished_, (long long)total, rate,
                 tail.c_str(), dedup_hits_ ? fmt::format(", {} deduplicated", dedup_hits_.load()).c_str() : "");
    printed_ = true;
  }

  Slot evaluate(ir::Context& ctx, Lowering& ref, Lowering& cand, smt::Solver& solver, const Location& loc, size_t seq) {
    Slot slot;
    LocationResult& lr = slot.lr;
    lr.loc = loc;
    auto tl = Clock::now();
    const auto& pair = m_.outputs[loc.output];
    ir::Expr ea = nullptr, eb = nullptr;
    const char* building = "reference";
    // The check's deadline and the location's node budget also bind inside the canonicalizer's loops.
    struct LimitGuard {  // only while this location is built and decided
      ir::Context& ctx;
      ir::Limits saved = ir::limits(ctx);
      ~LimitGuard() { ir::set_limits(ctx, saved); }
    };
    std::optional<LimitGuard> limited;
    limited.emplace(ctx);
    size_t nodes0 = ctx.node_units();
    // Building may take a share of what is left of the budget; past it (or past build_nodes) the
    // location is evaluated numerically with the rest.
    auto build_end = std::min(budget_end(), tl + std::chrono::duration_cast<Clock::duration>(
                                                     (budget_end() - tl) * opt_.build_share));
    ir::set_limits(ctx, {nodes0 + std::min(opt_.max_location_nodes, opt_.build_nodes), build_end});
    std::string too_large;  // set: decided numerically instead of building
    {
      std::lock_guard lock(mu_);
      if (numeric_outputs_.count(loc.output))
        too_large = fmt::format("an earlier location of this output passed {} nodes", opt_.build_nodes);
    }
    if (too_large.empty()) too_large = estimated_too_large(ref, loc);
    try {
      if (too_large.empty()) {
        ea = ref.element(pair.ref, loc.flat);
        building = "candidate";
        eb = cand.element(pair.cand, loc.flat);
      }
    } catch (const ir::LimitExceeded& x) {
      bool too_many = ctx.node_units() >= nodes0 + opt_.build_nodes;
      if ((!too_many && ctx.node_units() >= nodes0 + opt_.max_location_nodes) || Clock::now() >= budget_end()) {
        lr.verdict = smt::Verdict::Timeout;
        lr.reason = fmt::format("building the {} program's expression for this location: {}", building, x.what());
        return slot;
      }
      too_large = too_many ? fmt::format("building the {} program's expression passed {} nodes", building,
                                         opt_.build_nodes)
                           : fmt::format("building the {} program's expression took {:.0f}% of the budget left "
                                         "({} nodes by then)", building, opt_.build_share * 100,
                                         ctx.node_units() - nodes0);
      if (too_many) {  // the size is the output's; a slow build may be this location's alone
        std::lock_guard lock(mu_);
        numeric_outputs_.insert(loc.output);
      }
    } catch (const WriteRace& w) {
      slot.kind = Slot::Kind::Race;
      slot.message = w.what();
      return slot;
    } catch (const Unsupported& u) {
      slot.kind = Slot::Kind::Unsupported;
      slot.message = u.what();
      return slot;
    } catch (const OutOfTime&) {  // undecided: the budget ended while expanding this location
      lr.verdict = smt::Verdict::Timeout;
      lr.reason = "the budget ran out while building the location's expressions (back-projection)";
      lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
      return slot;
    }
    if (!too_large.empty()) {
      ir::set_limits(ctx, {ctx.node_units() + opt_.max_location_nodes, budget_end()});
      numeric_decide(ref, cand, slot, too_large);
      if (lr.confirmed_f32 && opt_.trim_prefix && sets_trimmed_result(lr)) confirm_over_program_inputs(lr);
      lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
      return slot;
    }
    lr.ref_nodes = ir::dag_size(ea);
    lr.cand_nodes = ir::dag_size(eb);
    std::optional<PairKey> key;
    if (opt_.full && opt_.dedup && ea != eb) {
      key = renamed_pair_key(ea, eb);
      std::lock_guard lock(mu_);
      if (auto it = decided_.find(*key); it != decided_.end()) {
        lr.verdict = it->second.verdict;
        lr.stage = it->second.stage;
        lr.reason = it->second.reason;
        lr.deduplicated = true;
        ++dedup_hits_;
        lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
        return slot;
      }
    }
    // The decision never outlasts the check's budget (its own timeout may be longer).
    smt::DecideOptions dopt = dopt_;
    double left_ms = opt_.budget_s * 1000 - std::chrono::duration<double, std::milli>(Clock::now() - t0_).count();
    if (opt_.budget_s > 0) {
      if (left_ms < 1) {
        lr.verdict = smt::Verdict::Timeout;
        lr.reason = "the budget ran out before the decision (building the location's expressions took the rest)";
        lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
        return slot;
      }
      dopt.timeout_ms = std::min<unsigned>(dopt.timeout_ms, unsigned(left_ms) + 1);
    }
    smt::Decision d;
    std::optional<unsigned> sampled_point;  // the giant path's ladder point that showed the difference
    if (lr.ref_nodes + lr.cand_nodes > opt_.giant_location_nodes) {
      // Normalizing, bounding or sending tens of millions of nodes to Z3 does not finish within a
      // budget; random points do (a linear evaluation each). A difference found there is the usual
      // sampling witness (fp32 evaluation below); none found leaves the location undecided.
      d.verdict = smt::Verdict::Unknown;
      d.stage = smt::Stage::Sampling;
      d.reason = fmt::format("expressions of {} + {} nodes: only random-point falsification is tried, and "
                             "{} points showed no difference beyond the tolerance",
                             lr.ref_nodes, lr.cand_nodes, dopt.falsify_points);
      // One point per call, so that the check's deadline is looked at between points (an evaluation
      // of the location takes seconds); the same ladder of bounds and signs as decide's own stage.
      auto deadline = budget_end();
      for (unsigned p = 0; p < dopt.falsify_points; ++p) {
        if (Clock::now() > deadline) {
          d.verdict = smt::Verdict::Timeout;
          d.reason = fmt::format("random-point falsification of a {}-node location ran past the budget after {} "
                                 "point(s)", lr.ref_nodes + lr.cand_nodes, p);
          break;
        }
        smt::FalsifyOptions fo{.points = 1, .first_point = p, .seed = dopt.random_seed,
                               .bound = ladder_bound(dopt),
                               .tolerance = dopt.tolerance, .confirm_rtol = dopt.confirm_rtol,
                               .confirm_atol = dopt.confirm_atol, .assumptions = &dopt.assumptions,
                               .key_of = [&ctx](int32_t t) { return smt::name_key(ctx.tensor_name(t)); }};
        if (auto w = smt::falsify(ea, eb, fo); w && (w->exceeds_tolerance || !dopt.tolerance)) {
          d.verdict = smt::Verdict::Differ;
          d.reason.clear();
          d.witness = std::move(*w);
          sampled_point = p;
          break;
        }
      }
    } else {
      d = solver.decide(ctx, ea, eb, dopt);
    }
    limited.reset();
    lr.verdict = d.verdict;
    lr.stage = d.stage;
    lr.reason = d.reason;
    if (key && d.verdict != smt::Verdict::Differ) {
      std::lock_guard lock(mu_);
      decided_.try_emplace(*key, Decided{d.verdict, d.stage, d.reason});
    }
    if (d.verdict != smt::Verdict::Equal) {  // a difference or what stayed undecided (10^6 equal locations are not)
      ir::PrintOptions popt{.max_nodes = 40};
      lr.ref_expr = ir::to_string(ctx, ea, popt);
      lr.cand_expr = ir::to_string(ctx, eb, popt);
    }
    if (d.verdict == smt::Verdict::Differ) summarize_values(ctx, ea, eb, lr);
    if (d.verdict == smt::Verdict::Differ && d.witness) witness_values(ctx, ea, eb, *d.witness, lr, seq);
    if (sampled_point && d.witness &&
        std::none_of(d.witness->leaves.begin(), d.witness->leaves.end(),
                     [](const smt::LeafValue& l) { return l.kind == smt::LeafValue::Kind::Var; }))
      as_sampled_point(lr, *sampled_point, ladder_bound(dopt));
    if (lr.confirmed_f32 && opt_.trim_prefix && sets_trimmed_result(lr)) confirm_over_program_inputs(lr);
    lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
    return slot;
  }

  // A location too large to build, decided at the falsify ladder's points by evaluating both programs
  // numerically (check/numeric.h): a point beyond the tolerance is a Sampling witness regenerable
  // from (seed, point); none leaves the location undecided. Evaluators live as long as the search, so
  // that neighbouring locations reuse the statistics they share.
  void numeric_decide(Lowering& ref, Lowering& cand, Slot& slot, const std::string& why) {
    LocationResult& lr = slot.lr;
    const auto& pair = m_.outputs[lr.loc.output];
    unsigned npoints = std::max(1u, dopt_.falsify_points);
    double bound = ladder_bound(dopt_);
    // One point at a time, in fp64 and in IEEE fp32 together: the difference usually shows at the
    // first point, and its fp32 evidence then comes from the same walk of the templates (a separate
    // fp32 pass cost as much again: every template and sum of products a second time).
    lr.stage = smt::Stage::Sampling;
    lr.ref_expr = lr.cand_expr = "(not built: evaluated numerically)";
    const char* side = "reference";
    NumericEvaluator* running = nullptr;  // the f64 evaluator at work: its progress when the budget ends
    try {
      std::optional<unsigned> hit;
      std::vector<double> a, b;  // at the point: fp64, fp32
      for (unsigned first = 0; first < npoints && !hit; ++first) {
        side = "reference";
        running = &numeric_evaluator(ref, first);
        a = running->element(pair.ref, lr.loc.flat);
        side = "candidate";
        running = &numeric_evaluator(cand, first);
        b = running->element(pair.cand, lr.loc.flat);
        running = nullptr;
        // As falsify judges a point: both values finite and apart beyond the tolerance (a NaN at a
        // point whose variance went negative is no evidence).
        if (std::isfinite(a[0]) && std::isfinite(b[0]) && beyond_tolerance(a[0], b[0], tol_)) hit = first;
      }
      if (!hit) {
        lr.verdict = smt::Verdict::Unknown;
        lr.reason = fmt::format("{}: evaluated numerically at {} random points, none differs beyond the tolerance",
                                why, npoints);
        return;
      }
      lr.verdict = smt::Verdict::Differ;
      lr.ref_value = a[0];
      lr.cand_value = b[0];
      lr.exceeds_tolerance = true;
      lr.sampled = LocationResult::SampledPoint{dopt_.random_seed, *hit, bound, {}};
      for (const auto& si : m_.inputs)
        if (si.origin == program::SharedInput::Origin::Trimmed) lr.sampled->trimmed.push_back(si.name);
      lr.reason = fmt::format("{}: evaluated numerically at random point {} of seed {}", why, *hit, dopt_.random_seed);
      double fa = a[1], fb = b[1];
      lr.ref_value_f32 = fa;
      lr.cand_value_f32 = fb;
      lr.confirmed_f32 = std::isfinite(fa) && std::isfinite(fb) && beyond_tolerance(fa, fb, tol_);
    } catch (const WriteRace& w) {
      slot.kind = Slot::Kind::Race;
      slot.message = w.what();
    } catch (const Unsupported& u) {  // the numeric path only: the location stays undecided
      lr.verdict = smt::Verdict::Unknown;
      lr.reason = fmt::format("{}; evaluating the {} program numerically: {}", why, side, u.what());
    } catch (const OutOfTime&) {  // (the fp32 evidence comes with the fp64 values: nothing runs after a hit)
      lr.verdict = smt::Verdict::Timeout;
      lr.reason = fmt::format("{}; the budget ran out evaluating the {} program numerically", why, side);
      if (running) {
        const auto& st = running->stats();
        lr.reason += fmt::format(" ({} elements, {:.3g} multiply-adds per point by then)", st.elements,
                                 double(st.products));
      }
    } catch (const ir::LimitExceeded& x) {  // the location's node budget or the deadline in the worker's context
      lr.verdict = smt::Verdict::Timeout;
      lr.reason = fmt::format("{}; evaluating the {} program numerically: {}", why, side, x.what());
    } catch (const std::runtime_error& x) {  // e.g. exec's "launch too large to enumerate": undecided
      lr.verdict = smt::Verdict::Unknown;
      lr.reason = fmt::format("{}; evaluating the {} program numerically: {}", why, side, x.what());
    }
  }

  // The evaluator of `low`'s program at ladder point `first` (fp64 and fp32 lanes), made on first use.
  NumericEvaluator& numeric_evaluator(Lowering& low, unsigned first) {
    std::lock_guard lock(mu_);
    auto& e = numeric_[{&low, first}];
    if (!e) {
      NumericOptions o;
      o.seed = dopt_.random_seed;
      o.points = {first, first};
      o.precisions = {ir::Precision::F64, ir::Precision::F32};
      o.bound = ladder_bound(dopt_);
      o.deadline = budget_end();
      auto& shared = numeric_products_[first];
      if (!shared) shared = make_products_cache();
      o.products_cache = shared;
      e = std::make_unique<NumericEvaluator>(low, o);
    }
    return *e;
  }

  // Non-empty (the reason) when the first location of an output is estimated far past the build cap
  // (Options::numeric_estimate): the output is then evaluated numerically without building. The
  // estimate's templates are built by the evaluator of the first point, which goes on from them.
  std::string estimated_too_large(Lowering& ref, const Location& loc) {
    if (opt_.numeric_estimate <= 0) return {};
    {
      std::lock_guard lock(mu_);
      if (!estimated_outputs_.insert(loc.output).second) return {};
    }
    NumericEvaluator::Size size;
    try {
      size = numeric_evaluator(ref, 0).estimate(m_.outputs[loc.output].ref, loc.flat, opt_.build_nodes / 2);
    } catch (const std::exception&) {  // no estimate (UNSUPPORTED in a template, ...): build as before
      return {};
    }
    if (!size.stopped && size.elements + size.products <= opt_.numeric_estimate) return {};
    {
      std::lock_guard lock(mu_);
      numeric_outputs_.insert(loc.output);
    }
    if (size.stopped)
      return fmt::format("the reference program's templates for this location passed {} nodes (half the build cap) "
                         "after {} values",
                         size.template_nodes, size.values);
    return fmt::format("the reference program's location needs about {:.3g} multiply-adds over {:.3g} elements "
                       "(estimated from {} values' templates)",
                       size.products, size.elements, size.values);
  }

  // The first rung of the random points' ladder (falsify's and the numeric path's alike).
  static double ladder_bound(const smt::DecideOptions& dopt) { return dopt.tolerance ? dopt.tolerance->bound : 10.0; }

  // A giant location's witness lists 10^6–10^7 leaves (pair 097's was 554 MB). Its values are
  // smt::draw's at (seed, point), keyed by the shared inputs' names, so the witness is that point:
  // dirigo.replay regenerates every input from it. Only when every leaf is a shared input (a
  // cut variable or an external tensor has no regenerable draw) and the values are falsify's own.
  void as_sampled_point(LocationResult& lr, unsigned point, double bound) {
    std::vector<std::string> trimmed;
    for (const WitnessLeaf& w : lr.leaves) {
      if (w.kind != "input" && w.kind != "parameter" && w.kind != "buffer" && w.kind != "trimmed") return;
      if (w.kind == "trimmed" && std::find(trimmed.begin(), trimmed.end(), w.input) == trimmed.end())
        trimmed.push_back(w.input);
    }
    lr.sampled = LocationResult::SampledPoint{dopt_.random_seed, point, bound, std::move(trimmed)};
    lr.leaves.clear();
    lr.leaves.shrink_to_fit();
  }

  // Both values as people read them (ir/summary.h), leaves named as the witness names them.
  void summarize_values(const ir::Context& ctx, ir::Expr ea, ir::Expr eb, LocationResult& lr) const {
    ir::SummaryOptions so;
    so.leaf = [&](int32_t t, int64_t i) -> std::optional<ir::LeafName> {
      WitnessLeaf w = describe_leaf(ctx, m_, t, i, 0);
      return ir::LeafName{w.input, w.index};
    };
    ir::PairSummary ps = ir::summarize_pair(ctx, ea, eb, so);
    lr.shared_expr = std::move(ps.shared);
    lr.ref_part = std::move(ps.ref);
    lr.cand_part = std::move(ps.cand);
    lr.parts_note = std::move(ps.note);
  }

  // The witness's leaves, refined beyond tolerance when the solver's values are not, and both
  // symbolic values evaluated at it in fp64 and IEEE fp32 (the evidence without a replay).
  void witness_values(ir::Context& ctx, ir::Expr ea, ir::Expr eb, const smt::Witness& w, LocationResult& lr, size_t seq) {
    lr.exceeds_tolerance = w.exceeds_tolerance;
    std::vector<ir::Expr> leaves;  // the real tensor-element leaves of both sides
    {
      std::unordered_set<ir::Expr> seen;
      for (ir::Expr root : {ea, eb})
        for (ir::Expr l : ir::leaves(root))
          if (l->op == ir::Op::TensorElem && seen.insert(l).second) leaves.push_back(l);
    }
    ir::Env wenv = w.env();  // the solver's model
    std::vector<double> values;
    for (ir::Expr l : leaves) {
      ir::Value v = wenv.elem(l->tensor(), l->index(), l->sort);
      values.push_back(l->sort == ir::Sort::Real ? v.real : double(int64_t(v.bits)));
    }
    // at most 200 ms, and never past the budget
    auto refine_ms = [&] {
      double left_ms = opt_.budget_s * 1000 - std::chrono::duration<double, std::milli>(Clock::now() - t0_).count();
      return opt_.budget_s > 0 ? std::clamp(left_ms, 0.0, 200.0) : 200.0;
    };
    if (!w.exceeds_tolerance) values = refine_witness(ea, eb, leaves, values, tol_, opt_.seed + seq + 1, refine_ms());
    std::string reason = lr.reason;
    bool giant = lr.ref_nodes + lr.cand_nodes > opt_.giant_location_nodes;
    evaluate_witness(ctx, ea, eb, w, wenv, leaves, values, lr);
    // Beyond tolerance in fp64 only (an fp32 overflow or underflow at large inputs): look for a point
    // that shows it in both precisions, so that the evidence without a replay holds in fp32 too.
    // (Not for giant locations: one evaluation of both sides there takes seconds, and refinement
    // evaluates its start before it looks at the clock — pair 097 ran 40 s past a 20 s budget.)
    if (lr.exceeds_tolerance && !lr.confirmed_f32 && !w.depends_on_undef && refine_ms() > 0 && !giant) {
      auto again = refine_witness(ea, eb, leaves, values, tol_, opt_.seed + seq + 1, refine_ms(), true);
      if (again != values) {
        lr.leaves.clear();
        lr.witness.clear();
        lr.reason = reason;
        evaluate_witness(ctx, ea, eb, w, wenv, leaves, again, lr);
      }
    }
  }

  // Both symbolic values at the witness `values` (of `leaves`) in fp64 and IEEE fp32, and the leaves
  // that matter, into lr.
  void evaluate_witness(ir::Context& ctx, ir::Expr ea, ir::Expr eb, const smt::Witness& w, const ir::Env& wenv,
                        const std::vector<ir::Expr>& leaves, const std::vector<double>& values, LocationResult& lr) {
    std::unordered_map<std::pair<int32_t, int64_t>, double, PairHash> at;
    for (size_t k = 0; k < leaves.size(); ++k) at[{leaves[k]->tensor(), leaves[k]->index()}] = values[k];
    ir::Env env;
    env.elem = [&](int32_t t, int64_t i, ir::Sort s) {
      auto it = at.find({t, i});
      double v = it == at.end() ? 0.0 : it->second;
      return s == ir::Sort::Real ? ir::Value::of_real(v) : ir::Value::of_bv(s, uint64_t(int64_t(v)));
    };
    env.var = wenv.var;
    // A giant location's four evaluations take seconds (pair 097 ran 3.5 s past a 20 s budget): past
    // the budget the witness stays unconfirmed ("fp32 evaluation failed: ...").
    if (opt_.budget_s > 0)
      env.tick = [this] {
        if (Clock::now() > budget_end()) throw OutOfTime("the budget ran out evaluating the witness in fp32");
      };
    for (size_t k = 0; k < leaves.size(); ++k)
      lr.leaves.push_back(describe_leaf(ctx, m_, leaves[k]->tensor(), leaves[k]->index(), values[k]));
    // Show the leaves that matter most: largest magnitude first.
    std::vector<size_t> order(leaves.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return std::fabs(values[x]) > std::fabs(values[y]); });
    for (size_t k : order) {
      if (lr.witness.size() >= 24 || values[k] == 0) break;
      lr.witness.push_back({leaf_display(lr.leaves[k]), values[k]});
    }
    try {
      // One evaluator at a time: each memo is as large as its expression (tens of millions of nodes
      // for a batch statistic over a GEMM), so four live at once would hold four such tables.
      auto value = [&](ir::Expr e, ir::Precision p) { return ir::Evaluator(env, p)(e); };
      lr.ref_value = value(ea, ir::Precision::F64).real;
      lr.cand_value = value(eb, ir::Precision::F64).real;
      ir::Value va = value(ea, ir::Precision::F32), vb = value(eb, ir::Precision::F32);
      lr.ref_value_f32 = va.sort == ir::Sort::Real ? va.real : double(va.bits);
      lr.cand_value_f32 = vb.sort == ir::Sort::Real ? vb.real : double(vb.bits);
      // An infinity or NaN is no evidence: the symbolic value is evaluated in its canonical form (a
      // logsumexp as log(sum(exp(x)))), which overflows where the real program (max-shifted) does not.
      bool finite = std::isfinite(lr.ref_value_f32) && std::isfinite(lr.cand_value_f32);
      lr.confirmed_f32 = !va.undef && !vb.undef && finite && beyond_tolerance(lr.ref_value_f32, lr.cand_value_f32, tol_);
      lr.exceeds_tolerance = beyond_tolerance(lr.ref_value, lr.cand_value, tol_);
      if (w.depends_on_undef) lr.reason = "one side depends on an undefined value";
      else if (!finite) lr.reason = "the fp32 evaluation at the witness is not finite (an overflow of the symbolic form is "
                                    "no evidence of what the real program computes)";
    } catch (const std::exception& e) {
      lr.reason = std::string("fp32 evaluation failed: ") + e.what();
    }
  }

  // A witness that chose values for results of the trimmed prefix shows a difference of the trimmed
  // programs, and those values may be out of the prefix's reach (a GELU result of -9). The location
  // is decided again over program inputs (prefix trimming off, this location only): only a
  // difference found there is evidence about the real programs (a replay may still carry the first
  // witness back to the inputs: the location is then SUSPECT, not BUG).
  void confirm_over_program_inputs(LocationResult& lr) {
    Options u = opt_;
    u.trim_prefix = false;
    u.only_locations = {{lr.loc.output, lr.loc.flat}};
    u.min_locations = 1;
    u.full = false;
    u.progress = false;
    u.jobs = 1;
    u.release_memory = true;  // one re-check per such location, in this process: its tables must go
    // One location, and BUG vs SUSPECT hangs on it: more random points than a search spends on each
    // location (the ladder's [-1, 1] points are 1 in 8, and a bug like a wrong GELU constant shows only
    // where the prefix's result is O(1): examples/execute_bugs/gelu_constant)
    u.decide.falsify_points = std::max(u.decide.falsify_points, 64u);
    if (opt_.budget_s > 0) u.budget_s = opt_.budget_s - since(t0_);
    Report ur;
    if (opt_.budget_s <= 0 || u.budget_s > 0.01) {
      std::lock_guard one_at_a_time(recheck_mu_);  // each re-check lowers both programs again
      ur = check_bundle(b_, u);
    }
    const LocationResult* again = ur.first_differ ? &ur.locations[*ur.first_differ] : nullptr;
    if (ur.outcome == Outcome::Bug && again && again->confirmed_f32 && again->loc.flat == lr.loc.flat) {
      Location loc = lr.loc;
      lr = *again;
      lr.loc = loc;
      lr.reason = "the first witness set results of the trimmed prefix; this one, over program inputs, was found "
                  "with prefix trimming off at this location";
      return;
    }
    lr.confirmed_f32 = false;
    const LocationResult* first = ur.locations.empty() ? nullptr : &ur.locations.front();
    if (first && first->verdict == smt::Verdict::Equal) {
      lr.verdict = smt::Verdict::Equal;
      lr.stage = first->stage;
      lr.reason = "equal over program inputs (decided with prefix trimming off): the difference shown over the "
                  "trimmed prefix's results is out of that prefix's reach";
      lr.witness.clear();
      lr.leaves.clear();
      lr.ref_expr.clear();
      lr.cand_expr.clear();
      return;
    }
    lr.reason = fmt::format("the witness sets results of the trimmed prefix, which no program input is known to "
                            "produce; over program inputs: {}",
                            first ? fmt::format("{}{}", smt::verdict_name(first->verdict),
                                                first->reason.empty() ? "" : " (" + first->reason + ")")
                                  : (ur.reason.empty() ? std::string("no time left") : ur.reason));
  }

  struct StopWorker {};  // a worker whose own Execute ran out of time: it takes no location

  Clock::time_point budget_end() const {
    return t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt_.budget_s));
  }

  struct Decided {
    smt::Verdict verdict;
    smt::Stage stage;
    std::string reason;
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
  std::vector<std::optional<Slot>> slots_;
  size_t handed_ = 0, finished_ = 0, active_ = 0;
  bool stop_ = false, printed_ = false;
  std::exception_ptr error_;
  uint64_t solver_calls_ = 0;
  std::atomic<size_t> dedup_hits_{0};
  std::unordered_map<PairKey, Decided, PairKeyHash> decided_;
  std::unordered_set<size_t> numeric_outputs_;  // outputs whose locations are evaluated numerically
  std::unordered_set<size_t> estimated_outputs_;  // outputs whose first location was estimated
  std::map<std::pair<const Lowering*, unsigned>, std::unique_ptr<NumericEvaluator>> numeric_;  // by first point
  std::map<unsigned, std::shared_ptr<ProductsCache>> numeric_products_;  // by first point, both programs'
};

// Which stage the budget ran out in: the last location that timed out, else the stages before the
// search when it got no time at all.
std::string where_time_ran_out(const Report& r, double before_search_s) {
  for (size_t k = r.locations.size(); k-- > 0;) {
    const LocationResult& l = r.locations[k];
    if (l.verdict != smt::Verdict::Timeout) continue;
    return fmt::format("; at {}[{}]: {}", r.outputs[l.loc.output].ref_name, index_str(l.loc.index),
                       l.reason.empty() ? "timeout" : l.reason);
  }
  if (r.locations.empty())
    return fmt::format("; the budget ran out before the location search (merge, Execute and choosing locations took "
                       "{:.1f} s{})",
                       before_search_s, r.notes.empty() || r.notes.back().find("budget ran out") == std::string::npos
                                            ? ""
                                            : ", then " + r.notes.back());
  return "";
}

// Owns an object, or, when `leak`, lets it go unfreed (the process is about to exit).
template <class T>
struct Kept {
  std::unique_ptr<T> p;
  bool leak;
  Kept(std::unique_ptr<T> q, bool l) : p(std::move(q)), leak(l) {}
  ~Kept() {
    if (leak) (void)p.release();
  }
};

}  // namespace

Report check_bundle(const bundle::Bundle& b, const Options& user_opt) {
  Options opt = user_opt;  // Execute's own time limit never outlasts the check's budget
  if (double budget_ms = opt.budget_s * 1000; budget_ms > 0 && (opt.exec.max_ms == 0 || opt.exec.max_ms > budget_ms))
    opt.exec.max_ms = budget_ms;
  if (opt.budget_s > 0)  // shared by every launch of both programs
    opt.exec.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.budget_s));
  Report r;
  auto t0 = Clock::now();
  auto finish = [&](Outcome o, std::string reason) {
    r.outcome = o;
    if (!reason.empty()) r.reason = std::move(reason);
    r.seconds = since(t0);
    return r;
  };
  try {
    program::Merged m = program::merge(b, {opt.trim_prefix, false});
    r.stage_seconds.emplace_back("merge", since(t0));
    r.prefix_trimmed = m.prefix;
    if (!m.prefix_stop.empty()) r.notes.push_back("prefix trimming stopped: " + m.prefix_stop);
    if (!m.unmatched.empty())
      for (const auto& u : m.unmatched)
        r.notes.push_back(fmt::format("input {} of {} has no counterpart", u.name, u.in_ref ? "the reference" : "the candidate"));
    for (const auto& [rn, cn] : m.differing_values)
      r.notes.push_back(fmt::format("input {} (candidate: {}) was traced with different values in the two programs (each "
                                    "initializes its own): dirigo compares both on equal values; a harness that runs "
                                    "each with its own (KernelBench) sees different outputs even where the functions agree",
                                    rn, cn));
    for (const auto& si : m.inputs) {
      if (si.origin != program::SharedInput::Origin::Input) continue;
      r.shared_inputs.push_back(shared_leaf(m, si));
    }
    for (const auto& o : m.outputs) {
      OutputInfo info{o.ref_name, o.cand_name, o.cand.shape, 1};
      for (int64_t d : o.cand.shape) info.numel *= d;
      r.total_locations += info.numel;
      r.outputs.push_back(std::move(info));
    }

    // The big tables (10^6 memoized elements, the order's permutation, the nodes) are left to the
    // OS when the caller exits right after (Options::release_memory): freeing them took seconds.
    Kept<ir::Context> ctx_held(std::make_unique<ir::Context>(), !opt.release_memory);
    ir::Context& ctx = *ctx_held.p;
    Kept<Lowering> ref_held(std::make_unique<Lowering>(ctx, b, m, true, opt.exec), !opt.release_memory);
    Kept<Lowering> cand_held(std::make_unique<Lowering>(ctx, b, m, false, opt.exec), !opt.release_memory);
    Lowering &ref = *ref_held.p, &cand = *cand_held.p;
    std::optional<std::string> stopped;  // why Execute could not finish every launch
    bool out_of_time = false;
    try {
      ref.execute_all();
      cand.execute_all();
    } catch (const Unsupported& u) {
      // Execute stopping at its time limit is the budget running out, not a missing feature.
      for (const auto* low : {&ref, &cand})
        for (const auto& L : low->launches()) out_of_time = out_of_time || (L.result && L.result->out_of_time);
      stopped = u.what();
    }
    r.kernels = ref.launches().size() + cand.launches().size();
    for (const auto* low : {&ref, &cand}) {
      for (auto& f : low->findings()) r.findings.push_back(f);
      for (const auto& L : low->launches())  // safety checks Execute could neither prove nor refute
        for (const auto& u : L.result->undecided) r.notes.push_back("undecided safety check: " + u);
    }
    r.lower_seconds = since(t0);
    r.stage_seconds.emplace_back("execute", r.lower_seconds - r.stage_seconds.back().second);
    // a violation found before Execute stopped is still a violation, with its threads as evidence
    if (!r.findings.empty()) {
      if (stopped) r.notes.push_back("Execute then stopped: " + *stopped);
      r.evidence = "execute-safety";
      const auto& f = r.findings.front();
      return finish(Outcome::Bug, fmt::format("{} in kernel {} (PTX line {}{}): {}", f.kind, f.kernel, f.where.ptx_line,
                                              f.where.source.empty() ? "" : ", " + f.where.source, f.message));
    }
    if (stopped && out_of_time)  // "UNSUPPORTED: kernel K: time limit ... reached at PTX line N ..."
      return finish(Outcome::Timeout, "the budget ran out in Execute (symbolic execution of the kernels): " +
                                          (stopped->rfind("UNSUPPORTED: ", 0) == 0 ? stopped->substr(13) : *stopped));
    if (stopped) return finish(Outcome::Unsupported, *stopped);

    smt::Tolerance tol;
    if (opt.tolerance) tol = *opt.tolerance;
    else if (b.tolerance) tol = {b.tolerance->atol, b.tolerance->rtol, tol.bound};
    r.tolerance = tol;
    smt::DecideOptions dopt = opt.decide;
    dopt.tolerance = tol;

    Kept<LocationOrder> order_held(std::make_unique<LocationOrder>(ctx, m.outputs, cand, opt.seed, opt.full,
                                                                   opt.exec.deadline.value_or(Clock::time_point::max()),
                                                                   opt.only_locations),
                                   !opt.release_memory);
    LocationOrder& order = *order_held.p;
    if (!order.stopped().empty()) r.notes.push_back(order.stopped());
    // The budget covers the whole check: the search gets what merge and Execute left of it.
    Options search_opt = opt;
    if (opt.budget_s > 0) search_opt.budget_s = std::max(1e-9, opt.budget_s - since(t0));
    double before_search_s = since(t0);
    Search search(b, m, search_opt, tol, dopt, r, order, ctx, ref, cand);
    auto search0 = Clock::now();
    std::vector<std::optional<Slot>> slots = search.run();
    r.search_seconds = since(search0);
    r.stage_seconds.emplace_back("search", r.search_seconds);
    r.solver_calls = search.solver_calls();
    r.deduplicated = search.deduplicated();
    r.jobs = search.jobs();
    // Verdict from the slots in search order: the same for any number of workers.
    for (auto& held : slots) {
      Slot& slot = *held;
      if (slot.kind == Slot::Kind::Race) {
        r.evidence = "execute-safety";
        r.locations.push_back(std::move(slot.lr));
        return finish(Outcome::Bug, "global write-write race: " + slot.message);
      }
      if (slot.kind == Slot::Kind::Unsupported) return finish(Outcome::Unsupported, slot.message);
      ++r.checked;
      if (slot.lr.verdict == smt::Verdict::Equal) {
        // a fast program decides 10^6 locations in a budget: count equal ones past kListedEqual
        if (++r.equal > kListedEqual) ++r.locations_omitted;
        else r.locations.push_back(std::move(slot.lr));
        continue;
      }
      r.locations.push_back(std::move(slot.lr));
      const LocationResult& last = r.locations.back();
      if (last.verdict != smt::Verdict::Differ) continue;
      if (!r.first_differ || last.confirmed_f32) r.first_differ = r.locations.size() - 1;
      if (last.confirmed_f32) {
        r.evidence = "fp32-evaluation";
        const auto& out = r.outputs[last.loc.output];
        return finish(Outcome::Bug, fmt::format("{}[{}] differs: reference {} vs candidate {} at the witness",
                                                out.ref_name, index_str(last.loc.index), last.ref_value_f32,
                                                last.cand_value_f32));
      }
    }
    if (r.first_differ) {
      const auto& l = r.locations[*r.first_differ];
      return finish(Outcome::Suspect,
                    fmt::format("{}[{}]: the symbolic values differ, but {}", r.outputs[l.loc.output].ref_name,
                                index_str(l.loc.index),
                                l.reason.empty() ? "the witness does not show the difference beyond tolerance when "
                                                   "evaluated in fp32"
                                                 : l.reason));
    }
    size_t undecided = r.checked - r.equal;
    if (opt.full && r.checked > 0 && int64_t(r.checked) < r.total_locations && r.search_seconds >= search_opt.budget_s) {
      double rate = r.checked / std::max(r.search_seconds, 1e-9);
      r.projected_full_seconds = double(r.total_locations - int64_t(r.checked)) / rate;
    }
    // every location proven equal is VERIFIED however few there are; otherwise at least
    // min_locations must be decided before anything but BUG is said
    if (int64_t(r.equal) == r.total_locations) return finish(Outcome::Verified, "");
    if (r.checked < opt.min_locations || (undecided && r.equal < opt.min_locations))
      return finish(Outcome::Timeout, fmt::format("{} locations decided equal, {} undecided within {:.1f} s (at least {} needed){}",
                                                  r.equal, undecided, opt.budget_s, opt.min_locations,
                                                  where_time_ran_out(r, before_search_s)));
    return finish(Outcome::Checked, undecided ? fmt::format("{} locations undecided", undecided) : "");
  } catch (const program::MergeError& e) {
    return finish(Outcome::Unsupported, std::string("UNSUPPORTED: merge: ") + e.what());
  } catch (const Unsupported& u) {
    return finish(Outcome::Unsupported, u.what());
  } catch (const std::exception& e) {
    return finish(Outcome::Unsupported, std::string("UNSUPPORTED: ") + e.what());
  }
}

Report check_path(const std::string& dir, const Options& opt) {
  try {
    auto t0 = Clock::now();
    bundle::Bundle b = bundle::read_bundle(dir);
    double read_s = since(t0);
    Report r = check_bundle(b, opt);
    r.stage_seconds.insert(r.stage_seconds.begin(), {"read", read_s});
    return r;
  } catch (const std::exception& e) {
    Report r;
    r.outcome = Outcome::Unsupported;
    r.reason = std::string("UNSUPPORTED: bundle: ") + e.what();
    return r;
  }
}

}  // namespace dirigo::check
