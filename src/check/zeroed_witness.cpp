// A witness for a location whose reductions are too large to evaluate at a random point: the same
// point with one shared input set to 0 everywhere (class Search, check/search_internal.h).
//
// Every term that multiplies a zero input vanishes, and the canonicalizer folds what is left:
// Σ_k W[j,k]·x[k] + b[j] is b[j] at x = 0, so a GEMM row of 2·10⁹ terms under a max-pool and a sum
// becomes a sum of 32768 biases. Substitution commutes with evaluation and the rewrite rules are
// sound, so a difference of the two zeroed expressions at a point is a difference of the originals at
// that point with the input zeroed: a sampled witness like the numeric path's, plus the zeroed input.

#include <algorithm>
#include <chrono>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "check/search_internal.h"
#include "ir/print.h"
#include "ir/reduce.h"
#include "ir/walk.h"
#include "program/merge.h"

namespace dirigo::check::detail {

namespace {

ir::Expr zeroed(ir::Context& ctx, ir::Expr e, int32_t tensor, std::unordered_map<ir::Expr, ir::Expr>& memo) {
  return ir::rebuild_post_order(ctx, e, memo, [&](ir::Expr x) -> ir::Expr {
    bool read = (x->op == ir::Op::TensorElem || x->op == ir::Op::Load) && x->tensor() == tensor;
    return read ? ctx.real_const(0) : nullptr;
  });
}

}  // namespace

std::unordered_map<int32_t, bool> tensors_read(ir::Expr ea, ir::Expr eb) {
  std::unordered_map<int32_t, bool> real_only;  // tensor -> every read is Real
  std::unordered_set<ir::Expr> seen;
  for (ir::Expr root : {ea, eb})
    ir::post_order(root, [&](ir::Expr x) { return seen.count(x) > 0; }, [&](ir::Expr x) {
      seen.insert(x);
      if (x->op == ir::Op::TensorElem || x->op == ir::Op::Load) {
        auto [it, fresh] = real_only.try_emplace(x->tensor(), true);
        it->second = it->second && x->sort == ir::Sort::Real;
      }
    });
  return real_only;
}

bool Search::zeroed_input_witness(ir::Context& ctx, ir::Expr ea, ir::Expr eb, const smt::DecideOptions& dopt,
                                  uint64_t max_terms, Slot& slot, size_t seq, const std::string& why) {
  LocationResult& lr = slot.lr;
  const uint64_t terms = ir::expansion_terms(ea) + ir::expansion_terms(eb);
  // program inputs, parameters and buffers only (a trimmed result set to 0 is no input either), the
  // largest first: they are what the reductions run over
  std::vector<std::tuple<int64_t, int32_t, std::string>> order;  // (-numel, tensor, shared input name)
  for (auto [t, real] : tensors_read(ea, eb)) {
    std::string name(ctx.tensor_name(t));
    if (!real || name.rfind("in:", 0) != 0) continue;
    for (const auto& si : m_.inputs)
      if (si.origin == program::SharedInput::Origin::Input && si.name == name.substr(3)) {
        int64_t n = 1;
        for (int64_t d : si.ref.shape) n *= d;
        order.emplace_back(-n, t, si.name);
      }
  }
  std::sort(order.begin(), order.end());
  constexpr size_t kTries = 3;
  for (size_t i = 0; i < order.size() && i < kTries; ++i) {
    if (Clock::now() > budget_end()) return false;
    const auto& [minus_numel, t, name] = order[i];
    std::unordered_map<ir::Expr, ir::Expr> memo;
    ir::Expr za = zeroed(ctx, ea, t, memo), zb = zeroed(ctx, eb, t, memo);
    const uint64_t left = ir::expansion_terms(za) + ir::expansion_terms(zb);
    if (za == zb || left > max_terms) continue;  // equal there (no evidence either way), or still too large
    for (unsigned p = 0; p < dopt.falsify_points; ++p) {
      if (Clock::now() > budget_end()) return false;
      auto w = falsify_at_point(ctx, za, zb, dopt, p);
      if (!w) continue;
      if (std::any_of(w->leaves.begin(), w->leaves.end(),
                      [](const smt::LeafValue& l) { return l.kind == smt::LeafValue::Kind::Var; }))
        return false;  // a free variable is no regenerable point
      LocationResult found = lr;
      found.verdict = smt::Verdict::Differ;
      found.stage = smt::Stage::Sampling;
      found.reason = fmt::format("{}: at random point {} of seed {} with {} set to 0 everywhere, where the location's "
                                 "reductions over it vanish ({:.3g} terms instead of {:.3g})",
                              why, p, dopt.random_seed, name, double(left), double(terms));
      ir::PrintOptions popt{.max_nodes = 40};
      found.ref_expr = ir::to_string(ctx, ea, popt);
      found.cand_expr = ir::to_string(ctx, eb, popt);
      summarize_values(ctx, za, zb, found);
      witness_values(ctx, za, zb, *w, found, seq);
      as_sampled_point(found, p, ladder_bound(dopt));
      if (!found.sampled) return false;  // a leaf no replay can set: not a point
      found.sampled->zeroed = {name};
      lr = std::move(found);
      return true;
    }
  }
  return false;
}

}  // namespace dirigo::check::detail
