// Witnesses of a differing location: leaves described as program inputs, values refined beyond the
// tolerance (refine_witness, paper §4.6), both sides evaluated at the witness in fp64 and fp32, and
// the re-check over program inputs of a witness that sets results of the trimmed prefix.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "bundle/io.h"
#include "bundle/print.h"
#include "check/lower.h"
#include "check/numeric.h"
#include "check/search.h"
#include "check/search_internal.h"
#include "ir/reduce.h"
#include "ir/eval.h"
#include "ir/limits.h"
#include "ir/print.h"
#include "program/merge.h"
#include "smt/falsify.h"

namespace dirigo::check {

namespace {

using detail::Clock;
using detail::beyond_tolerance;

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
                                   uint64_t work, bool also_f32, Clock::time_point deadline, uint64_t nodes) {
  if (work == 0) return start;
  if (nodes == 0) nodes = ir::dag_size(ea) + ir::dag_size(eb);
  const uint64_t per_point = nodes * (also_f32 ? 2 : 1) + 1;
  uint64_t spent = 0;
  std::unordered_map<std::pair<int32_t, int64_t>, size_t, PairHash> pos;
  for (size_t i = 0; i < leaves.size(); ++i) pos[{leaves[i]->tensor(), leaves[i]->index()}] = i;
  auto eval = [&](const std::vector<double>& x) {
    spent += per_point;
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
  auto over = [&] { return spent >= work || (deadline != Clock::time_point::max() && Clock::now() > deadline); };
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(-tol.bound, tol.bound);
  std::vector<double> best = std::move(start);
  double best_s = eval(best);
  // Shrinking scales too: at +-bound a softmax over 81-term convolution sums overflows fp32.
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

}  // namespace dirigo::check

namespace dirigo::check::detail {


bool beyond_tolerance(double a, double b, const smt::Tolerance& tol) {
  if (std::isnan(a) != std::isnan(b)) return true;
  if (std::isnan(a)) return false;
  if (std::isinf(a) || std::isinf(b)) return a != b;
  return std::fabs(a - b) > tol.atol + tol.rtol * std::fabs(a);
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

void set_support(ir::Env& env, std::unordered_map<int32_t, std::vector<int64_t>> listed, std::vector<int32_t> filled) {
  for (auto& [t, idx] : listed) std::sort(idx.begin(), idx.end());
  auto support = std::make_shared<const std::unordered_map<int32_t, std::vector<int64_t>>>(std::move(listed));
  env.support = [support, filled = std::move(filled)](int32_t t) -> const std::vector<int64_t>* {
    static const std::vector<int64_t> none;
    if (std::find(filled.begin(), filled.end(), t) != filled.end()) return nullptr;
    auto it = support->find(t);
    return it == support->end() ? &none : &it->second;
  };
}

// Does the witness choose values for results of the trimmed prefix? (A sampled point draws every
// shared input, the trimmed results among them.)
bool sets_trimmed_result(const LocationResult& l) {
  return (l.sampled && !l.sampled->trimmed.empty()) ||
         std::any_of(l.leaves.begin(), l.leaves.end(), [](const WitnessLeaf& w) { return w.kind == "trimmed"; });
}

std::string leaf_display(const WitnessLeaf& w) { return fmt::format("{}[{}]", w.input, bundle::join_ints(w.index)); }

// A giant location's witness lists 10^6–10^7 leaves (hundreds of MB as JSON). Its values are
// smt::draw's at (seed, point), keyed by the shared inputs' names, so the witness is that point:
// dirigo.replay regenerates every input from it. Only when every leaf is a shared input (a
// cut variable or an external tensor has no regenerable draw) and the values are falsify's own.
void Search::as_sampled_point(LocationResult& lr, unsigned point, double bound) {
  std::vector<std::string> trimmed;
  for (const WitnessLeaf& w : lr.leaves) {
    if (w.kind != "input" && w.kind != "parameter" && w.kind != "buffer" && w.kind != "trimmed") return;
    if (w.kind == "trimmed" && std::find(trimmed.begin(), trimmed.end(), w.input) == trimmed.end())
      trimmed.push_back(w.input);
  }
  lr.sampled = LocationResult::SampledPoint{dopt_.random_seed, point, bound, std::move(trimmed), {}};
  lr.leaves.clear();
  lr.leaves.shrink_to_fit();
}

// The witness's leaves, refined beyond tolerance when the solver's values are not, and both
// symbolic values evaluated at it in fp64 and IEEE fp32 (the evidence without a replay).
void Search::witness_values(ir::Context& ctx, ir::Expr ea, ir::Expr eb, const smt::Witness& w, LocationResult& lr, size_t seq) {
  lr.exceeds_tolerance = w.exceeds_tolerance;
  std::vector<ir::Expr> leaves;  // the real tensor-element leaves of both sides
  {
    std::unordered_set<ir::Expr> seen;
    for (ir::Expr root : {ea, eb})
      for (ir::Expr l : ir::leaves(root))
        if (l->op == ir::Op::TensorElem && seen.insert(l).second) leaves.push_back(l);
    // Elements only a reduction's body reads at some point (not leaves of the roots): the witness's own.
    for (const smt::LeafValue& lv : w.leaves)
      if (lv.kind == smt::LeafValue::Kind::Elem)
        if (ir::Expr l = ctx.elem(lv.tensor, lv.index, lv.value.sort); seen.insert(l).second) leaves.push_back(l);
  }
  ir::Env wenv = w.env();  // the solver's model
  // Elements read through a reduction's index and not listed are 0 at this point (the model's
  // default): the replay sets them so too.
  lr.others_zero = false;
  for (ir::Expr root : {ea, eb})
    for (ir::Expr r : ir::top_reductions(root)) lr.others_zero = lr.others_zero || r->has_data();
  lr.fills.clear();
  for (auto [t, v] : w.fills) {
    lr.fills.push_back(describe_leaf(ctx, m_, t, 0, v));
    lr.fills.back().index.clear();
  }
  std::vector<double> values;
  for (ir::Expr l : leaves) {
    ir::Value v = wenv.elem(l->tensor(), l->index(), l->sort);
    values.push_back(l->sort == ir::Sort::Real ? v.real : double(int64_t(v.bits)));
  }
  // a fixed amount of work (the verdict must not depend on the machine's load), within the budget
  auto refine_work = [&]() -> uint64_t { return opt_.budget_s > 0 && Clock::now() >= budget_end() ? 0 : kRefineWork; };
  auto end = opt_.budget_s > 0 ? budget_end() : Clock::time_point::max();
  if (!w.exceeds_tolerance)
    values = refine_witness(ea, eb, leaves, values, tol_, opt_.seed + seq + 1, refine_work(), false, end,
                            lr.ref_nodes + lr.cand_nodes);
  std::string reason = lr.reason;
  bool giant = lr.ref_nodes + lr.cand_nodes > opt_.giant_location_nodes;
  evaluate_witness(ctx, ea, eb, w, wenv, leaves, values, lr);
  // Beyond tolerance in fp64 only (an fp32 overflow or underflow at large inputs): look for a point
  // that shows it in both precisions, so that the evidence without a replay holds in fp32 too.
  // (Not for giant locations: one evaluation of both sides there takes seconds, and refinement
  // evaluates its start before it looks at the clock, so it would overrun the budget by far.)
  if (lr.exceeds_tolerance && !lr.confirmed_f32 && !w.depends_on_undef && refine_work() > 0 && !giant) {
    auto again = refine_witness(ea, eb, leaves, values, tol_, opt_.seed + seq + 1, refine_work(), true, end,
                                lr.ref_nodes + lr.cand_nodes);
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
void Search::evaluate_witness(ir::Context& ctx, ir::Expr ea, ir::Expr eb, const smt::Witness& w, const ir::Env& wenv, const std::vector<ir::Expr>& leaves, const std::vector<double>& values, LocationResult& lr) {
  std::unordered_map<std::pair<int32_t, int64_t>, double, PairHash> at;
  for (size_t k = 0; k < leaves.size(); ++k) at[{leaves[k]->tensor(), leaves[k]->index()}] = values[k];
  std::unordered_map<int32_t, double> filled(w.fills.begin(), w.fills.end());
  ir::Env env;
  env.elem = [&](int32_t t, int64_t i, ir::Sort s) {
    auto it = at.find({t, i});
    auto f = s == ir::Sort::Real ? filled.find(t) : filled.end();
    double v = it != at.end() ? it->second : f != filled.end() ? f->second : 0.0;
    return s == ir::Sort::Real ? ir::Value::of_real(v) : ir::Value::of_bv(s, uint64_t(int64_t(v)));
  };
  env.var = wenv.var;
  // Every element not listed is 0: reductions are evaluated where their bodies can be nonzero only
  // (exact; a domain witness's 2·10⁹-term location in microseconds). Not with a non-finite value,
  // whose products with the zeros would not vanish.
  std::unordered_map<int32_t, std::vector<int64_t>> listed;
  bool finite = true;
  for (const auto& [key, v] : at) {
    listed[key.first].push_back(key.second);
    finite = finite && std::isfinite(v);
  }
  std::vector<int32_t> filled_tensors;
  for (auto [t, v] : w.fills) filled_tensors.push_back(t);
  if (finite) set_support(env, std::move(listed), std::move(filled_tensors));
  // A giant location's four evaluations take seconds, enough to overrun the budget: past
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
void Search::confirm_over_program_inputs(LocationResult& lr) {
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
  if (opt_.budget_s > 0) {
    u.budget_s = opt_.budget_s - since(t0_);
    u.deadline = budget_end();  // the re-check's every stage (Execute, build, Z3) ends with this check
  }
  if (opt_.on_stage)
    u.on_stage = [outer = opt_.on_stage](const std::string& s) { outer("search: re-check over program inputs: " + s); };
  Report ur;
  if (opt_.budget_s <= 0 || u.budget_s > 0.01) {
    std::lock_guard one_at_a_time(recheck_mu_);  // each re-check lowers both programs again
    ur = check_bundle(b_, u);
    if (opt_.on_stage) opt_.on_stage("search");
  }
  const LocationResult* again = ur.first_differ ? &ur.locations[*ur.first_differ] : nullptr;
  if (ur.outcome == Outcome::Bug && again && again->confirmed_f32 && again->loc.flat == lr.loc.flat) {
    Location loc = lr.loc;
    std::string first = fmt::format("{}: {}", smt::stage_name(lr.stage), lr.reason);
    lr = *again;
    lr.loc = loc;
    lr.reason = fmt::format("the first witness ({}) set results of the trimmed prefix; this one ({}), over program "
                            "inputs, was found with prefix trimming off at this location",
                            first, smt::stage_name(lr.stage));
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
  std::string over = first ? fmt::format("{}{}", smt::verdict_name(first->verdict),
                                         first->reason.empty() ? "" : " (" + first->reason + ")")
                           : (ur.reason.empty() ? std::string("no time left") : ur.reason);
  if (ur.outcome == Outcome::Suspect && !ur.reason.empty()) over = ur.reason;  // why that check could not back it
  lr.reason = fmt::format("the witness sets results of the trimmed prefix, which no program input is known to "
                          "produce; over program inputs: {}", over);
}

}  // namespace dirigo::check::detail
