// Outputs decided once for all their locations (the outer quantifier of the paper's equivalence):
// Search::settle_symbolically, see search_internal.h.
#include <fmt/format.h>

#include "check/search_internal.h"
#include "ir/limits.h"
#include "ir/print.h"
#include "ir/reduce.h"

namespace dirigo::check::detail {

std::vector<SymbolicOutput> Search::settle_symbolically(Clock::time_point end, size_t spot) {
  std::vector<SymbolicOutput> out(m_.outputs.size());
  t0_ = Clock::now();  // budget_end() for the re-roller (run() starts the search's own clock)
  auto ref_end = ref_.deadline(), cand_end = cand_.deadline();
  ref_.set_deadline(std::min(ref_end, end));
  cand_.set_deadline(std::min(cand_end, end));
  ir::LimitsGuard restore(ctx_);
  ir::set_limits(ctx_, {ctx_.node_units() + opt_.max_location_nodes, end});
  smt::Solver& solver = smt::thread_solver();
  uint64_t calls0 = solver.stats().solver_calls;
  for (size_t o = 0; o < m_.outputs.size(); ++o) {
    const auto& mo = m_.outputs[o];
    SymbolicOutput& so = out[o];
    auto t0 = Clock::now();
    if (mo.ref.shape != mo.cand.shape) {
      so.how = "the two outputs' shapes differ";
      continue;
    }
    // One variable per dimension, bounded by its extent (dims of one element are 0): the expressions
    // hold for every value within the bounds, so one pair stands for every location.
    std::vector<ir::Expr> coords;
    for (size_t k = 0; k < mo.cand.shape.size(); ++k) {
      int64_t n = mo.cand.shape[k];
      coords.push_back(n == 1 ? ctx_.bv_const(ir::Sort::BV64, 0)
                              : ctx_.var(fmt::format("loc{}.{}", o, k), ir::Sort::BV64,
                                         ir::Bounds{0, uint64_t(std::max<int64_t>(n, 1) - 1)}));
    }
    try {
      std::string why;
      const size_t solved0 = ref_.threads_solved() + cand_.threads_solved();
      ir::Expr ea = ref_.element_symbolic(mo.ref, coords, &why);
      ir::Expr eb = ea ? cand_.element_symbolic(mo.cand, coords, &why) : nullptr;
      // a kernel's value with its thread solved from the location: what canonical forms and re-rolling
      // do not settle there (a warp's xor-lane butterfly, stores at several offsets as an ite chain) the
      // solver rarely decides either, so it gets a short slice, not the share
      const bool solved_threads = ref_.threads_solved() + cand_.threads_solved() > solved0;
      if (!ea || !eb) {
        so.how = fmt::format("the {} program's element has no symbolic form: it reads {}", ea ? "candidate" : "reference",
                             why.empty() ? "something without one" : why);
      } else {
        so.nodes = ir::dag_size(ea) + ir::dag_size(eb);
        so.expr = ir::to_string(ctx_, ea, ir::PrintOptions{.max_nodes = 40});
        std::string how = "the same expression";
        if (ea != eb && (ir::contains_reduce(ea) || ir::contains_reduce(eb))) {
          std::vector<ir::Expr> lone;  // a witness needs a location: the search finds it
          how = match_reductions(ctx_, solver, ea, eb, lone, false);
        }
        if (ea == eb) {
          so.equal = true;
        } else {
          smt::DecideOptions dopt = dopt_;
          auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
          dopt.timeout_ms = std::min<unsigned>(dopt.timeout_ms, unsigned(std::max<int64_t>(1, left)));
          if (solved_threads) dopt.timeout_ms = std::min(dopt.timeout_ms, kSolvedThreadSolverMs);
          // as at a location: random points sized by the terms, and past kNumericTerms the stages short of Z3
          if (size_points_by_terms(dopt, ir::expansion_terms(ea) + ir::expansion_terms(eb))) {
            dopt.rlimit = 1;
            dopt.use_cache = false;
          }
          // Equal for every input, exactly or modulo named approximations (as a location may be); within
          // the tolerance is said location by location
          auto proven = [](const smt::Decision& x) {
            return x.verdict == smt::Verdict::Equal && x.stage != smt::Stage::Tolerance && x.stage != smt::Stage::Sampling;
          };
          // as at a location: both sides re-rolled, then with fp32 constants; first where a side holds a
          // reduction (a kernel's unrolled tree against the reference's Reduce: the solver would only
          // spend the share on the expanded terms)
          std::string rerolled;
          std::optional<smt::Decision> rd;
          const bool reductions = ir::contains_reduce(ea) || ir::contains_reduce(eb);
          // (with a solved thread: one re-rolling pass, the fp32-constant pass being for ATen's constants)
          if (opt_.reroll && reductions) rd = reroll_decide(ctx_, solver, ea, eb, dopt, rerolled, !solved_threads);
          smt::Decision d = rd && proven(*rd) ? std::move(*rd) : solver.decide(ctx_, ea, eb, dopt);
          if (!proven(d) && opt_.reroll && !reductions)
            if (auto rd2 = reroll_decide(ctx_, solver, ea, eb, dopt, rerolled, true)) d = std::move(*rd2);
          so.equal = proven(d);
          if (so.equal) so.approximations = d.approximations;
          how = so.equal ? fmt::format("{} (stage {}){}", how, smt::stage_name(d.stage),
                                       rerolled.empty() ? "" : "; " + rerolled)
                         : fmt::format("not proven equal there ({}, stage {}): decided location by location",
                                       smt::verdict_name(d.verdict), smt::stage_name(d.stage));
        }
        so.how = std::move(how);
      }
    } catch (const OutOfTime&) {
      so.how = "building it ran past its share of the budget";
    } catch (const ir::LimitExceeded& x) {
      so.how = fmt::format("deciding it ran past its share of the budget or nodes ({})", x.what());
    } catch (const Unsupported& u) {  // the search names what is missing, location by location
      so.how = u.what();
    }
    so.ms = since(t0) * 1e3;
  }
  ref_.set_deadline(ref_end);
  cand_.set_deadline(cand_end);
  {
    std::lock_guard lock(mu_);
    solver_calls_ += solver.stats().solver_calls - calls0;
  }
  if (std::any_of(out.begin(), out.end(), [](const SymbolicOutput& s) { return s.equal; })) {
    settled_.assign(out.size(), false);
    for (size_t o = 0; o < out.size(); ++o) settled_[o] = out[o].equal;
    handed_of_output_.assign(out.size(), 0);
    spot_ = spot;
  }
  return out;
}

bool fold_settled_location(LocationResult& lr, const std::string& how, const std::vector<std::string>& approximations) {
  if (lr.numbers_differ || lr.sampled) {
    lr.verdict = smt::Verdict::Unknown;
    lr.numbers_differ = true;
    lr.confirmed_f32 = false;
    lr.reason = fmt::format("equal for every location at the output's symbolic location ({}), but evaluated in "
                            "floating point here the two differ beyond the tolerance: left undecided",
                            how);
    return true;
  }
  if (lr.verdict == smt::Verdict::Differ) return false;
  bool as_proven = lr.verdict == smt::Verdict::Equal && lr.stage != smt::Stage::Tolerance &&
                   (lr.approximations.empty() || lr.approximations == approximations);
  if (!as_proven) {
    lr.reason = fmt::format("decided at the output's symbolic location{}",
                            lr.reason.empty() ? "" : " (one by one: " + lr.reason + ")");
    lr.verdict = smt::Verdict::Equal;
    lr.stage = smt::Stage::Canonical;
    lr.approximations = approximations;
  }
  return true;
}

}  // namespace dirigo::check::detail
