// The search's falsification tier (class Search, check/search_internal.h): the first locations of
// the order evaluated numerically (check/numeric.h) at every input distribution of the ladder from
// smt::kDistributionPoint (KernelBench's N(0, 1), U[-1, 1], N(0, 10^2), N(0, 0.01^2), U[-1000, 1000],
// each signed and non-negative), fp64 and IEEE fp32 lanes in one walk, before any expression is
// built. A program wrong at most of its outputs is a BUG here at the cost of one location's cone;
// a location that shows nothing, or that the numeric path cannot evaluate, goes on to the proof.

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "check/numeric.h"
#include "check/search_internal.h"
#include "ir/limits.h"
#include "smt/falsify.h"

namespace dirigo::check::detail {

namespace {
constexpr unsigned kTierPoints = 2 * smt::kDistributions;
}

// The first falsify_locations of the order, while the tier's share of the budget lasts (the order's
// position, not a count of locations seen: the same locations for any number of workers).
bool Search::falsifies(const Location&, size_t seq) const {
  return seq < opt_.falsify_locations && !falsify_over_.load();
}

// Two rounds: KernelBench's own N(0, 1) (signed and non-negative) first, alone, since a big cone's
// cost grows with the lanes; then every other distribution. Each round's points in fp64, then the
// same points in fp32: lanes of one precision side by side are summed together as vector lanes
// (numeric.cpp's lane groups).
NumericEvaluator* Search::falsify_evaluator(Lowering& low, unsigned round) {
  std::lock_guard lock(mu_);
  auto& e = falsify_[{&low, round}];
  if (!e) {
    NumericOptions o;
    o.seed = dopt_.random_seed;
    o.points.clear();
    for (ir::Precision pr : {ir::Precision::F64, ir::Precision::F32})
      for (unsigned p = round ? 2 : 0; p < (round ? kTierPoints : 2); ++p) {
        o.points.push_back(smt::kDistributionPoint + p);
        o.precisions.push_back(pr);
      }
    o.bound = ladder_bound(dopt_);
    double share = opt_.budget_s > 0 ? opt_.budget_s * opt_.falsify_share : 1e9;
    o.deadline = std::min(budget_end(), t0_ + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(share)));
    auto& products = falsify_products_[round];
    if (!products) products = make_products_cache();
    o.products_cache = products;
    e = std::make_unique<NumericEvaluator>(low, o);
  }
  return e.get();
}

bool Search::falsify_numerically(ir::Context&, Lowering& ref, Lowering& cand, Slot& slot, double& ref_cone) {
  LocationResult& lr = slot.lr;
  const auto& pair = m_.outputs[lr.loc.output];
  auto apart = [&](double x, double y) { return std::isfinite(x) && std::isfinite(y) && beyond_tolerance(x, y, tol_); };
  for (unsigned round = 0; round < 2; ++round) {
    std::vector<double> a, b;  // lanes: the round's point k in fp64 at k, in fp32 at n + k
    try {
      NumericEvaluator* ev = falsify_evaluator(ref, round);
      NumericEvaluator::Stats s0 = ev->stats();
      a = ev->element(pair.ref, lr.loc.flat);
      // What this location's reference evaluation newly reached, as nodes once built: an element is at
      // least a node, a multiply-add (counted per lane) a product and an addend.
      const NumericEvaluator::Stats& s1 = ev->stats();
      ref_cone = double(s1.elements - s0.elements) +
                 2.0 * double(s1.products - s0.products) / double(std::max<size_t>(1, a.size()));
      b = falsify_evaluator(cand, round)->element(pair.cand, lr.loc.flat);
    } catch (const OutOfTime&) {  // the tier's share is spent: later locations go straight to the proof
      falsify_over_ = true;
      return false;
    } catch (const ir::LimitExceeded&) {
      falsify_over_ = true;
      return false;
    } catch (const std::exception&) {  // Unsupported, a race, exec's limits: the proof decides
      return false;
    }
    unsigned first = round ? 2 : 0, n = unsigned(a.size() / 2);
    for (unsigned k = 0; k < n; ++k) {
      if (!apart(a[k], b[k]) || !apart(a[n + k], b[n + k])) continue;
      unsigned point = smt::kDistributionPoint + first + k;
      double bound = ladder_bound(dopt_);
      lr.verdict = smt::Verdict::Differ;
      lr.stage = smt::Stage::Sampling;
      lr.evidence = "numeric-falsification";
      lr.ref_expr = lr.cand_expr = "(not built: falsified numerically before the proof)";
      lr.ref_value = a[k];
      lr.cand_value = b[k];
      lr.ref_value_f32 = a[n + k];
      lr.cand_value_f32 = b[n + k];
      lr.exceeds_tolerance = lr.confirmed_f32 = true;
      lr.sampled = LocationResult::SampledPoint{dopt_.random_seed, point, bound, {}, {}};
      for (const auto& si : m_.inputs)
        if (si.origin == program::SharedInput::Origin::Trimmed) lr.sampled->trimmed.push_back(si.name);
      lr.reason = fmt::format("falsified before the proof: both programs evaluated numerically at point {} of seed {} "
                              "({}{} inputs, scale {})",
                              point, dopt_.random_seed, smt::point_nonnegative(point) ? "non-negative " : "",
                              smt::distribution_name(smt::point_distribution(point)), smt::point_bound(point, bound));
      return true;
    }
  }
  return false;
}

}  // namespace dirigo::check::detail
