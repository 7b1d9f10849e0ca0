// The decision at one location (class Search, check/search_internal.h): lower both sides, decide
// symbolically (canonical forms, falsification, Z3), numerically for giant locations, or estimate
// a location too large.

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
#include "check/lower.h"
#include "check/numeric.h"
#include "check/search.h"
#include "check/search_internal.h"

#include "ir/reduce.h"
#include "ir/summary.h"
#include "ir/eval.h"
#include "ir/limits.h"
#include "ir/print.h"
#include "ir/reroll.h"
#include "ir/walk.h"
#include "program/merge.h"
#include "smt/falsify.h"

namespace dirigo::check::detail {

namespace {

ir::Expr replace_reductions(ir::Context& ctx, ir::Expr e, const std::unordered_map<ir::Expr, ir::Expr>& repl) {
  std::unordered_map<ir::Expr, ir::Expr> memo;
  std::vector<std::pair<ir::Expr, bool>> st{{e, false}};
  while (!st.empty()) {
    auto [x, done] = st.back();
    st.pop_back();
    if (memo.count(x)) continue;
    if (auto it = repl.find(x); it != repl.end()) { memo.emplace(x, it->second); continue; }
    if (x->nargs == 0 || x->op == ir::Op::Reduce) { memo.emplace(x, x); continue; }
    if (!done) {
      st.emplace_back(x, true);
      for (ir::Expr c : x->args())
        if (!memo.count(c)) st.emplace_back(c, false);
      continue;
    }
    std::vector<ir::Expr> a;
    bool same = true;
    for (ir::Expr c : x->args()) {
      a.push_back(memo.at(c));
      same &= a.back() == c;
    }
    memo.emplace(x, same ? x : ctx.rebuild(x, a));
  }
  return memo.at(e);
}

// Reductions with more points than this stay symbolic when the two sides still differ; smaller ones
// are expanded so that the term-by-term stages (and Z3) see their terms.
constexpr uint64_t kExpandReductionPoints = 1u << 14;
// A sparse point's evaluation enumerates a reduction that no zero read restricts only up to this many
// points (about 0.1 s per 10^6 terms on one core); past it the point is dropped.
constexpr uint64_t kDomainWitnessPoints = 1u << 23;
// A sparse point's evaluations stop after this many ticks of 65,536 nodes (about 0.1 s), and all
// points of a location after kDomainWitnessTotalTicks (about 2 s).
constexpr uint64_t kDomainWitnessTicks = 16, kDomainWitnessTotalTicks = 256;
struct PastWork {};  // a sparse point's evaluation past kDomainWitnessTicks
// Terms of a location's expanded reductions that its decision's random points may evaluate in full
// (about 0.1 µs a term on one core: 0.2 s a point).
constexpr uint64_t kSampledTerms = 1u << 21;
// Past this many, no random points at all: what the stages short of Z3 leave open is decided by the
// numeric path, as a location too large to build is.
constexpr uint64_t kNumericTerms = 4 * kSampledTerms;
// The share of the budget a tier location's one-node trial build may take.
constexpr double kOneNodeTrialShare = 0.02;

// The tensors a reduction's body reads, sorted: bodies that read different tensors are not worth a
// solver call (one side's 32768 inner dot products against the other's one sum of sigmoids over them).
std::vector<int32_t> tensors_read(ir::Expr e) {
  std::vector<int32_t> t;
  for (ir::Expr leaf : ir::leaves(e))
    if (leaf->op == ir::Op::TensorElem || leaf->op == ir::Op::Load) t.push_back(leaf->tensor());
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

}  // namespace

bool size_points_by_terms(smt::DecideOptions& dopt, uint64_t terms) {
  if (terms > kSampledTerms)
    dopt.falsify_points = terms > kNumericTerms
                              ? 0
                              : unsigned(std::clamp<uint64_t>(kSampledTerms * dopt.falsify_points / terms, 1,
                                                              std::max(1u, dopt.falsify_points)));
  return terms > kNumericTerms;
}

// Before the solver: reductions on the two sides over one box whose bodies are equal for a symbolic
// index (one decision with the index a bounded integer and tensor reads uninterpreted functions of it)
// are made one node; equal bodies over different boxes are named (the terms one side lacks); what
// still differs is expanded when small. Returns what was done, for the location's reason.
std::string Search::match_reductions(ir::Context& ctx, smt::Solver& solver, ir::Expr& ea, ir::Expr& eb,
                                     std::vector<ir::Expr>& lone, bool expand) {
  auto ra = ir::top_reductions(ea), rb = ir::top_reductions(eb);
  uint64_t points = ir::expansion_terms(ea) + ir::expansion_terms(eb);
  std::unordered_set<ir::Expr> in_a(ra.begin(), ra.end()), in_b(rb.begin(), rb.end());
  std::unordered_map<ir::Expr, ir::Expr> repl;
  std::vector<std::string> notes;
  unsigned proved = 0, counter = 0, differences = 0;
  smt::DecideOptions bopt = dopt_;
  bopt.timeout_ms = std::min(bopt.timeout_ms, 2000u);
  std::unordered_map<ir::Expr, std::vector<int32_t>> reads;
  auto reads_of = [&](ir::Expr r) -> const std::vector<int32_t>& {
    auto it = reads.find(r);
    if (it == reads.end()) it = reads.emplace(r, tensors_read(r)).first;
    return it->second;
  };
  for (ir::Expr b : rb) {
    if (in_a.count(b) || repl.count(b)) continue;
    if (opt_.budget_s > 0 && Clock::now() >= budget_end()) break;
    for (ir::Expr a : ra) {
      if (in_b.count(a) || a->reduce_op() != b->reduce_op() || a->reduce_rank() != b->reduce_rank()) continue;
      if (auto d = ir::domain_difference(ctx, a, b)) {
        std::string pt, off;
        for (auto c : d->point) pt += (pt.empty() ? "" : ", ") + std::to_string(c);
        if (std::any_of(d->offset.begin(), d->offset.end(), [](int64_t o) { return o != 0; }))
          for (auto c : d->offset) off += (off.empty() ? " at index offset (" : ", ") + std::to_string(c);
        if (++differences > 2) continue;  // the count is reported below
        notes.push_back(fmt::format("the same {}{} over different domains: {} point(s) only in the reference's, {} only "
                                    "in the candidate's (e.g. index ({}) of the {}'s)",
                                    ir::reduce_op_name(a->reduce_op()), off.empty() ? "" : off + ")", d->only_a,
                                    d->only_b, pt, d->in_a ? "reference" : "candidate"));
        if (lone.size() < 4)
          lone.push_back(ir::instantiate(ctx, d->in_a ? a : b, d->point));
        continue;
      }
      if (ir::reduce_box(a) != ir::reduce_box(b) || reads_of(a) != reads_of(b)) continue;
      std::vector<ir::Expr> at;
      for (auto [lo, hi] : ir::reduce_box(a))
        at.push_back(ctx.var(fmt::format("red!{}!{}", seq_reduce_index_++, counter++), ir::Sort::BV64,
                             {uint64_t(lo), uint64_t(hi - 1)}));
      ir::Expr oa = ir::instantiate_at(ctx, a, at), ob = ir::instantiate_at(ctx, b, at);
      smt::Decision d = solver.decide(ctx, oa, ob, bopt);
      if (d.verdict == smt::Verdict::Equal) {
        repl.emplace(b, a);
        ++proved;
        break;
      }
    }
  }
  if (!repl.empty()) eb = replace_reductions(ctx, eb, repl);
  std::string how;
  if (ea == eb) {
    how = fmt::format("reductions: decided symbolically ({} reduction(s), {} terms never expanded", ra.size() + rb.size(),
                      points);
    if (proved) how += fmt::format("; {} pair(s) of bodies proved equal for a symbolic index", proved);
    how += ")";
  } else if (expand && points <= kExpandReductionPoints) {
    ea = ir::expand_reductions(ctx, ea, kExpandReductionPoints);
    eb = ir::expand_reductions(ctx, eb, kExpandReductionPoints);
    how = fmt::format("reductions: expanded ({} terms)", points);
  } else {
    how = fmt::format("reductions: symbolic ({} reduction(s), {} terms)", ra.size() + rb.size(), points);
  }
  for (const auto& n : notes) how += "; " + n;
  if (differences > 2) how += fmt::format("; {} more pair(s) of one body over different domains", differences - 2);
  return how;
}

// Both sides re-rolled: an expanded sum (a kernel's loop, tree or shuffle butterfly; a small
// reference reduction ATen expanded) becomes the Reduce node the other side has, and what differed
// only in how the terms were grouped (two-pass variance under rsqrt) is one node. Tried plainly, then
// with every constant read as the simplest rational within 2^-22 of it (a kernel's 1.0f/768 as
// 1/768: an approximation, named Fp32Constants). Only an Equal is kept.
std::optional<smt::Decision> Search::reroll_decide(ir::Context& ctx, smt::Solver& solver, ir::Expr ea, ir::Expr eb,
                                                   const smt::DecideOptions& dopt, std::string& how, bool snap_too) {
  auto t0 = Clock::now();
  // A location whose originals differ beyond the tolerance at a random point is a difference, not a
  // grouping of terms: no retry (it would only delay the witness). Looked at once something re-rolled.
  std::optional<bool> differs;
  // Originals whose reductions expand past kSampledTerms: a point would cost seconds, so none is tried.
  if (ir::expansion_terms(ea) + ir::expansion_terms(eb) > kSampledTerms) differs = false;
  auto originals_differ = [&] {
    if (!differs) {
      smt::FalsifyOptions fo{.points = std::min(2u, dopt.falsify_points), .seed = dopt.random_seed, .bound = ladder_bound(dopt),
                             .tolerance = dopt.tolerance, .confirm_rtol = dopt.confirm_rtol,
                             .confirm_atol = dopt.confirm_atol, .assumptions = &dopt.assumptions,
                             .key_of = [&ctx](int32_t t) { return smt::name_key(ctx.tensor_name(t)); }};
      smt::Ticker deadline(budget_end());
      if (opt_.budget_s > 0) fo.deadline = &deadline;
      try {
        auto w = smt::falsify(ea, eb, fo);
        differs = w && (w->exceeds_tolerance || !dopt.tolerance);
      } catch (const smt::StageTimeout&) {
        differs = true;  // no time to tell: no retry, the caller's decide answers Timeout
      }
    }
    return *differs;
  };
  for (bool snap : {false, true}) {
    if (snap && !snap_too) break;
    ir::Reroller rr(ctx, {.snap_constants = snap});
    ir::Expr ra = rr(ea), rb = rr(eb);
    const ir::RerollStats& st = rr.stats();
    // the same pair as before (a kernel's summarized loop is a reduction already: its dims or the
    // reference's may only need coalescing)
    if (st.sums == 0 && st.normalized == 0 && (!snap || st.snapped == 0)) continue;
    if (originals_differ()) break;
    how = fmt::format("re-rolled: {} expanded sum(s) of {} terms into reductions", st.sums, st.terms);
    if (st.normalized) how += fmt::format(", {} reduction(s) with dims coalesced", st.normalized);
    if (snap) how += fmt::format(", {} constant(s) read as the rational they round from (fp32)", st.snapped);
    smt::Decision d;
    d.verdict = smt::Verdict::Equal;
    d.stage = smt::Stage::Canonical;
    if (ra != rb && (ir::contains_reduce(ra) || ir::contains_reduce(rb))) {
      std::vector<ir::Expr> lone;  // unused: only an Equal is kept here, a difference is the originals' to find
      std::string m = match_reductions(ctx, solver, ra, rb, lone, false);
      if (ra == rb) how += "; " + m;
    }
    if (ra != rb) {
      // Each retry within what the budget has left now, not what it had when the location began.
      if (opt_.budget_s > 0 && Clock::now() >= budget_end()) break;
      smt::DecideOptions o = within_budget(dopt);
      o.timeout_ms = std::min(o.timeout_ms, 3000u);
      o.falsify_points = 0;  // a difference is the originals' to find
      d = solver.decide(ctx, ra, rb, o);
      if (d.verdict != smt::Verdict::Equal) continue;
      how += fmt::format("; the re-rolled pair decided equal ({})", smt::stage_name(d.stage));
    } else {
      how += "; both sides one node";
    }
    if (snap) d.approximations.insert(d.approximations.begin(), "Fp32Constants");
    d.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return d;
  }
  how.clear();
  return std::nullopt;
}

namespace {
// The real element leaves of e with every reduction replaced by its body at one point (its middle, or
// its first), nested ones too: one product of a GEMM row and the terms beside it.
std::vector<ir::Expr> opened_point_leaves(ir::Context& ctx, ir::Expr e, bool middle) {
  std::unordered_map<ir::Expr, ir::Expr> memo;
  std::function<ir::Expr(ir::Expr)> open = [&](ir::Expr x) -> ir::Expr {
    return ir::rebuild_post_order(ctx, x, memo, [&](ir::Expr r) -> ir::Expr {
      if (r->op != ir::Op::Reduce) return nullptr;
      std::vector<int64_t> at;
      for (auto [lo, hi] : ir::reduce_box(r)) at.push_back(middle ? lo + (hi - lo) / 2 : lo);
      return open(ir::instantiate(ctx, r, at));
    });
  };
  std::vector<ir::Expr> elems;
  for (ir::Expr l : ir::leaves(open(e)))
    if (l->op == ir::Op::TensorElem && l->sort == ir::Sort::Real) elems.push_back(l);
  return elems;
}
}  // namespace

// Whether every tensor the two sides read is a program input, parameter or buffer: a point that sets
// the rest of them to 0 is then one the replay can set too (a trimmed result at 0 need not be one
// any input produces).
bool Search::reads_inputs_only(ir::Context& ctx, ir::Expr ea, ir::Expr eb) const {
  for (auto [t, real] : tensors_read(ea, eb)) {
    std::string kind = describe_leaf(ctx, m_, t, 0, 0).kind;
    if (kind != "input" && kind != "parameter" && kind != "buffer") return false;
  }
  return true;
}

// Each set of elements at v ∈ {±bound, ±1}, every other element 0 — and, with `fills`, also with one
// of the set's tensors (the smallest first: a bias) at -v in every other element, for contexts that
// are not flat at 0 (a sigmoid's or a softmax's other terms). Both sides are evaluated at their
// reductions' nonzero points only (ir::Env::support: a 2·10⁹-term location in microseconds); a try
// that no zero restricts stops after kDomainWitnessTicks, all of them after kDomainWitnessTotalTicks.
// The first point where both differ beyond the tolerance in fp64 and IEEE fp32 is the witness.
std::optional<smt::Witness> Search::sparse_witness(ir::Context& ctx, ir::Expr ea, ir::Expr eb,
                                                   const std::vector<std::vector<ir::Expr>>& tries, bool fills) {
  double bound = tol_.bound;
  auto numel_of = [&](int32_t t) {
    std::string name(ctx.tensor_name(t));
    for (const auto& si : m_.inputs)
      if (name == "in:" + si.name) {
        int64_t n = 1;
        for (int64_t d : si.ref.shape) n *= d;
        return n;
      }
    return std::numeric_limits<int64_t>::max();
  };
  uint64_t total_ticks = 0;
  for (const auto& set : tries) {
    if (set.empty()) continue;
    std::vector<std::pair<int64_t, int32_t>> by_size;
    for (ir::Expr l : set)
      if (std::none_of(by_size.begin(), by_size.end(), [&](auto& p) { return p.second == l->tensor(); }))
        by_size.emplace_back(numel_of(l->tensor()), l->tensor());
    std::sort(by_size.begin(), by_size.end());
    // the set; without one of its tensors (a bias set to v makes a whole channel nonzero, and its
    // statistics no longer small); with one of them at -v in every other element
    struct Variant { std::vector<ir::Expr> elems; int32_t filled = -1; };
    std::vector<Variant> variants{{set, -1}};
    for (auto [numel, t] : by_size) {
      Variant drop;
      for (ir::Expr l : set) if (l->tensor() != t) drop.elems.push_back(l);
      if (!drop.elems.empty()) variants.push_back(std::move(drop));
    }
    if (fills)
      for (auto [numel, t] : by_size) variants.push_back({set, t});
    std::vector<bool> costly(variants.size(), false);  // past its work at one v: at every v (same points)
    for (double v : {bound, -bound, 1.0, -1.0})
      for (size_t vi = 0; vi < variants.size(); ++vi) {
        if (costly[vi]) continue;
        const Variant& var = variants[vi];
        const auto& elems = var.elems;
        const int32_t filled = var.filled;
        if (opt_.budget_s > 0 && Clock::now() >= budget_end()) return std::nullopt;
        smt::Witness w;
        if (filled >= 0) w.fills.emplace_back(filled, -v);
        std::unordered_map<int32_t, std::vector<int64_t>> listed;
        for (ir::Expr l : elems) {
          smt::LeafValue lv;
          lv.tensor = l->tensor();
          lv.index = l->index();
          lv.value = ir::Value::of_real(v);
          w.leaves.push_back(lv);
          listed[l->tensor()].push_back(l->index());
        }
        ir::Env env = w.env();
        set_support(env, std::move(listed), filled >= 0 ? std::vector<int32_t>{filled} : std::vector<int32_t>{});
        env.max_dense_points = kDomainWitnessPoints;
        uint64_t ticks = 0;
        env.tick = [this, &ticks, &total_ticks] {
          if ((opt_.budget_s > 0 && Clock::now() > budget_end()) || ++total_ticks > kDomainWitnessTotalTicks)
            throw OutOfTime("the budget ran out evaluating a sparse point");
          if (++ticks > kDomainWitnessTicks) throw PastWork{};
        };
        try {
          ir::Value a = ir::Evaluator(env, ir::Precision::F64)(ea), b = ir::Evaluator(env, ir::Precision::F64)(eb);
          if (a.undef || b.undef || !std::isfinite(a.real) || !std::isfinite(b.real) ||
              !beyond_tolerance(a.real, b.real, tol_))
            continue;
          ticks = 0;  // as much again for the same points in fp32
          ir::Value a32 = ir::Evaluator(env, ir::Precision::F32)(ea), b32 = ir::Evaluator(env, ir::Precision::F32)(eb);
          if (!std::isfinite(a32.real) || !std::isfinite(b32.real) || !beyond_tolerance(a32.real, b32.real, tol_))
            continue;
          w.a = a;
          w.b = b;
          w.exceeds_tolerance = true;
          return w;
        } catch (const OutOfTime&) {
          return std::nullopt;
        } catch (const PastWork&) {
          costly[vi] = true;
        } catch (const std::exception&) {  // an evaluation error at this input (a leaf of no value, a reduction no
          costly[vi] = true;               // zero restricts): the next
        }
      }
  }
  return std::nullopt;
}

// A sum (max, min) that one side takes over terms the other lacks differs wherever those terms
// dominate: the lone term's element leaves, then (where the location reads program inputs alone) the
// leaves of one opened point of it, at v with the rest 0 (sparse_witness). The verdict rests on both
// original expressions evaluated at that input, never on the domains alone.
std::optional<smt::Witness> Search::domain_witness(ir::Context& ctx, ir::Expr ea, ir::Expr eb,
                                                   const std::vector<ir::Expr>& lone) {
  const bool inputs_only = reads_inputs_only(ctx, ea, eb);
  std::vector<std::vector<ir::Expr>> tries;
  auto add = [&](std::vector<ir::Expr> elems) {
    if (!elems.empty() && std::find(tries.begin(), tries.end(), elems) == tries.end()) tries.push_back(std::move(elems));
  };
  for (ir::Expr term : lone) {
    std::vector<ir::Expr> elems;
    for (ir::Expr l : ir::leaves(term))
      if (l->op == ir::Op::TensorElem && l->sort == ir::Sort::Real) elems.push_back(l);
    add(std::move(elems));
    if (!inputs_only || !ir::contains_reduce(term)) continue;
    try {
      for (bool middle : {true, false}) add(opened_point_leaves(ctx, term, middle));
    } catch (const std::exception&) {  // a node budget: the element leaves alone
    }
  }
  return sparse_witness(ctx, ea, eb, tries, inputs_only);
}

// A location past kNumericTerms that differs at all may differ at a sparse point: the leaves of one
// opened point of either side at v, every other element 0 (or a bias at -v). A changed constant
// (an epsilon, a scale, a dropped term) shows there in microseconds where a random point costs every
// term; where the location reads results of a trimmed prefix, nothing (the re-check over program
// inputs builds it from the inputs and tries again).
std::optional<smt::Witness> Search::opened_point_witness(ir::Context& ctx, ir::Expr ea, ir::Expr eb) {
  if (!reads_inputs_only(ctx, ea, eb)) return std::nullopt;
  std::vector<std::vector<ir::Expr>> tries;
  try {
    for (ir::Expr side : {ea, eb})
      for (bool middle : {true, false}) {
        auto elems = opened_point_leaves(ctx, side, middle);
        if (!elems.empty() && std::find(tries.begin(), tries.end(), elems) == tries.end()) tries.push_back(std::move(elems));
      }
  } catch (const std::exception&) {  // a node budget
  }
  return sparse_witness(ctx, ea, eb, tries, true);
}

Slot Search::evaluate(ir::Context& ctx, Lowering& ref, Lowering& cand, smt::Solver& solver, const Location& loc, size_t seq) {
  Slot slot;
  LocationResult& lr = slot.lr;
  lr.loc = loc;
  auto tl = Clock::now();
  const auto& pair = m_.outputs[loc.output];
  ir::Expr ea = nullptr, eb = nullptr;
  const char* building = "reference";
  // The check's deadline and the location's node budget also bind inside the canonicalizer's loops.
  std::optional<ir::LimitsGuard> limited;  // only while this location is built and decided
  limited.emplace(ctx);
  size_t nodes0 = ctx.node_units();
  // Building may take a share of what is left of the budget; past it (or past build_nodes) the
  // location is evaluated numerically with the rest.
  auto build_end = std::min(budget_end(), tl + std::chrono::duration_cast<Clock::duration>(
                                                   (budget_end() - tl) * opt_.build_share));
  ir::set_limits(ctx, {nodes0 + std::min(opt_.max_location_nodes, opt_.build_nodes), build_end});
  std::string too_large;  // set: decided numerically instead of building
  // Both sides built: an output whose locations expand past kNumericTerms is marked (true when so).
  auto note_giant_terms = [&](ir::Expr ta, ir::Expr tb) {
    if (ir::expansion_terms(ta) + ir::expansion_terms(tb) <= kNumericTerms) return false;
    std::lock_guard lock(mu_);
    giant_term_outputs_.insert(loc.output);
    return true;
  };
  {
    std::lock_guard lock(mu_);
    if (numeric_outputs_.count(loc.output))
      too_large = fmt::format("an earlier location of this output passed {} nodes", opt_.build_nodes);
  }
  if (too_large.empty()) too_large = estimated_too_large(ref, loc);
  if (!too_large.empty() && opt_.numeric_estimate > 0 && reduce_above() >= 0) {
    // Estimated from the expanded templates: with reductions the built location may be small. One
    // short try under a small node cap; if it fits, the output is built after all. (With reductions
    // off the estimate is the built size.)
    bool first;
    {
      std::lock_guard lock(mu_);
      first = reduce_tried_outputs_.insert(loc.output).second;
    }
    if (first) {
      ir::set_limits(ctx, {nodes0 + kReduceTrialNodes, build_end});
      const char* side = "reference";
      try {
        ir::Expr ta = ref.element(pair.ref, loc.flat);
        side = "candidate";
        ir::Expr tb = cand.element(pair.cand, loc.flat);
        if (ta && tb) {
          too_large.clear();
          {
            std::lock_guard lock(mu_);
            numeric_outputs_.erase(loc.output);
          }
          note_giant_terms(ta, tb);
        }
      } catch (const std::exception& x) {  // too large after all (or UNSUPPORTED, ...): the numeric path as estimated
        too_large += fmt::format("; built with reductions, the {} program's location: {}", side, x.what());
      } catch (...) {
      }
      ir::set_limits(ctx, {nodes0 + std::min(opt_.max_location_nodes, opt_.build_nodes), build_end});
    }
  }
  // The falsification tier: a difference found numerically is this location's BUG unless the
  // location builds within Options::falsified_build_nodes and the proof's own witness is confirmed
  // too (its report then names both symbolic values and every leaf).
  std::optional<LocationResult> falsified;
  double falsified_cone = 0;
  // A tier location whose two expressions build small and are one node is equal: no input tells them
  // apart, and the tier's numbers would cost a giant cone's seconds for nothing. (Built under a small
  // cap of nodes and kOneNodeTrialShare of the budget first — a kernel's expressions build slowly —;
  // past either, or on any error, the tier runs as before and the build below reports.)
  bool one_node = false, giant_terms = false;
  {
    // an output whose locations expand past kNumericTerms: the tier's lanes would take seconds a point
    // (and the trial build below may not finish such a location within its share to tell)
    std::lock_guard lock(mu_);
    giant_terms = giant_term_outputs_.count(loc.output) > 0;
  }
  if (too_large.empty() && !giant_terms && falsifies(loc, seq)) {
    auto trial_end = build_end;
    if (opt_.budget_s > 0)
      trial_end = std::min(build_end, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(opt_.budget_s * kOneNodeTrialShare)));
    ir::set_limits(ctx, {ctx.node_units() + std::min({kReduceTrialNodes, opt_.build_nodes, opt_.max_location_nodes}),
                         trial_end});
    try {
      ir::Expr ta = ref.element(pair.ref, loc.flat), tb = cand.element(pair.cand, loc.flat);
      one_node = ta && ta == tb;
      // Reductions expanding past kNumericTerms: the tier's 20 lanes would not finish a point in its
      // share; the numeric decision below evaluates two lanes at a time with the whole budget left.
      giant_terms = ta && tb && note_giant_terms(ta, tb);
    } catch (...) {
    }
    ir::set_limits(ctx, {nodes0 + std::min(opt_.max_location_nodes, opt_.build_nodes), build_end});
  }
  if (too_large.empty() && !one_node && !giant_terms && falsifies(loc, seq)) {
    ir::set_limits(ctx, {ctx.node_units() + opt_.max_location_nodes, budget_end()});
    if (falsify_numerically(ctx, ref, cand, slot, falsified_cone)) {
      falsified = std::move(lr);
      lr = LocationResult{};
      lr.loc = loc;
    }
    nodes0 = ctx.node_units();
    size_t cap = std::min(opt_.max_location_nodes, opt_.build_nodes);
    if (falsified) cap = std::min(cap, opt_.falsified_build_nodes);
    ir::set_limits(ctx, {nodes0 + cap, build_end});
  }
  // The tier's BUG as the location's result (confirmed over program inputs where it set results of
  // the trimmed prefix).
  auto as_falsified = [&]() -> Slot& {
    limited.reset();
    slot = Slot{};
    slot.lr = std::move(*falsified);
    if (opt_.trim_prefix && sets_trimmed_result(slot.lr)) confirm_over_program_inputs(slot.lr);
    slot.lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
    return slot;
  };
  // A falsified location whose reference cone alone is past the cap is not built: the build would only be
  // thrown away there.
  if (falsified && falsified_cone > double(opt_.falsified_build_nodes)) return as_falsified();
  try {
    if (too_large.empty()) {
      ea = ref.element(pair.ref, loc.flat);
      building = "candidate";
      eb = cand.element(pair.cand, loc.flat);
    }
  } catch (const ir::LimitExceeded& x) {
    if (falsified) return as_falsified();
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
    if (falsified) return as_falsified();
    slot.kind = Slot::Kind::Unsupported;
    slot.message = u.what();
    return slot;
  } catch (const OutOfTime&) {  // undecided: the budget ended while expanding this location
    if (falsified) return as_falsified();
    lr.verdict = smt::Verdict::Timeout;
    lr.reason = "the budget ran out while building the location's expressions (back-projection)";
    lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
    return slot;
  }
  // Built small, but its reductions expand to more terms than a falsified location may cost: every
  // decision stage would evaluate them term by term, only to replace the tier's witness.
  if (falsified && too_large.empty() && ir::expansion_terms(ea) + ir::expansion_terms(eb) > opt_.falsified_build_nodes)
    return as_falsified();
  if (!too_large.empty()) {
    ir::set_limits(ctx, {ctx.node_units() + opt_.max_location_nodes, budget_end()});
    numeric_decide(ref, cand, slot, too_large);
    if (lr.confirmed_f32 && opt_.trim_prefix && sets_trimmed_result(lr)) confirm_over_program_inputs(lr);
    lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
    return slot;
  }
  std::string reduce_how;
  std::vector<ir::Expr> lone;  // terms only one side's reduction sums
  if (ea != eb && (ir::contains_reduce(ea) || ir::contains_reduce(eb))) {
    try {
      reduce_how = match_reductions(ctx, solver, ea, eb, lone);
    } catch (const ir::LimitExceeded& x) {
      if (falsified) return as_falsified();
      lr.verdict = smt::Verdict::Timeout;
      lr.reason = fmt::format("matching the location's reductions: {}", x.what());
      return slot;
    }
  } else if (ea == eb && ir::contains_reduce(ea)) {
    reduce_how = "reductions: decided symbolically (the same reduction nodes on both sides)";
  }
  lr.ref_nodes = ir::dag_size(ea);
  lr.cand_nodes = ir::dag_size(eb);
  std::optional<PairKey> key;
  if (opt_.full && opt_.dedup && !falsified) {
    key = renamed_pair_key(ea, eb);
    std::lock_guard lock(mu_);
    classes_.insert(*key);
    if (auto it = ea == eb ? decided_.end() : decided_.find(*key); it != decided_.end()) {
      lr.verdict = it->second.verdict;
      lr.stage = it->second.stage;
      lr.reason = it->second.reason;
      lr.approximations = it->second.approximations;
      lr.deduplicated = true;
      ++dedup_hits_;
      lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
      return slot;
    }
  }
  // The decision never outlasts the check's budget (its own timeout may be longer).
  smt::DecideOptions dopt = dopt_;
  // A random point costs every term the location's reductions expand to: past kSampledTerms terms
  // the decision gets fewer points, none past kNumericTerms (a point would take seconds; the
  // falsification tier has evaluated the first locations at 20 lanes).
  const uint64_t terms = ir::expansion_terms(ea) + ir::expansion_terms(eb);
  size_points_by_terms(dopt, terms);
  double left_ms = opt_.budget_s * 1000 - std::chrono::duration<double, std::milli>(Clock::now() - t0_).count();
  if (opt_.budget_s > 0) {
    if (left_ms < 1) {
      if (falsified) return as_falsified();
      lr.verdict = smt::Verdict::Timeout;
      lr.reason = "the budget ran out before the decision (building the location's expressions took the rest)";
      lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
      return slot;
    }
    dopt.timeout_ms = std::min<unsigned>(dopt.timeout_ms, unsigned(left_ms) + 1);
  }
  smt::Decision d;
  std::optional<unsigned> sampled_point;  // the giant path's ladder point that showed the difference
  std::optional<smt::Witness> by_domain;
  if (!lone.empty() && ea != eb) by_domain = domain_witness(ctx, ea, eb, lone);
  if (!by_domain && ea != eb && terms > kNumericTerms) {
    // Reductions past kNumericTerms terms: the stages short of Z3 decide equality; what they leave
    // open is decided as a location too large to build is, numerically at the ladder's points (a
    // solver's witness would have to be confirmed by evaluating every term one by one).
    smt::DecideOptions quick = within_budget(dopt);
    quick.rlimit = 1;
    quick.use_cache = false;
    // A kernel's loop over one index of a nested reduction (32768 sigmoids of dot products, each
    // summarized) re-rolled is the reference's reduction of reductions: tried first, since the
    // originals' terms would all go through the stages short of Z3.
    std::optional<smt::Decision> rd;
    std::string reroll_how;
    if (opt_.reroll) {
      ir::LimitsGuard restore(ctx);
      try {
        rd = reroll_decide(ctx, solver, ea, eb, dopt, reroll_how, false);
      } catch (const ir::LimitExceeded&) {
      }
    }
    smt::Decision q = rd ? std::move(*rd) : solver.decide(ctx, ea, eb, quick);
    std::optional<smt::Witness> sparse;
    if (q.verdict != smt::Verdict::Equal) sparse = opened_point_witness(ctx, ea, eb);
    if (sparse) {
      d.verdict = smt::Verdict::Differ;
      d.stage = smt::Stage::Sparse;
      d.witness = std::move(sparse);
      d.reason = fmt::format("at a sparse point (one opened point's elements set, every other element 0), its "
                             "reductions expanding to {:.3g} terms ({})", double(terms), reduce_how);
    } else if (q.verdict != smt::Verdict::Equal) {
      ir::set_limits(ctx, {ctx.node_units() + opt_.max_location_nodes, budget_end()});
      std::string why = fmt::format("not proven equal short of the solver, its reductions expanding to {:.3g} terms ({})",
                                    double(terms), reduce_how);
      if (!zeroed_input_witness(ctx, ea, eb, dopt_, kSampledTerms, slot, seq, why)) numeric_decide(ref, cand, slot, why);
      if (lr.confirmed_f32 && opt_.trim_prefix && sets_trimmed_result(lr)) confirm_over_program_inputs(lr);
      lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
      return slot;
    } else {
      d = std::move(q);
      d.reason = reroll_how.empty() ? reduce_how : reroll_how;
    }
  } else if (by_domain) {
    d.verdict = smt::Verdict::Differ;
    d.stage = smt::Stage::Domain;
    d.witness = std::move(by_domain);
    d.reason = reduce_how;
  } else if (lr.ref_nodes + lr.cand_nodes > opt_.giant_location_nodes) {
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
      if (auto w = falsify_at_point(ctx, ea, eb, dopt, p)) {
        d.verdict = smt::Verdict::Differ;
        d.reason.clear();
        d.witness = std::move(*w);
        sampled_point = p;
        break;
      }
    }
  } else {
    std::optional<smt::Decision> rd;
    std::string reroll_how;
    bool decided = false;
    if (opt_.reroll && ea != eb) {
      // within half of what the location may still add, so that a failed try leaves room for the rest
      ir::LimitsGuard restore(ctx);
      const ir::Limits& saved = restore.saved();
      size_t now = ctx.node_units();
      ir::Limits half = saved;
      if (saved.max_nodes != SIZE_MAX && saved.max_nodes > now) half.max_nodes = now + (saved.max_nodes - now) / 2;
      ir::set_limits(ctx, half);
      try {
        rd = reroll_decide(ctx, solver, ea, eb, dopt, reroll_how, false);
        if (!rd) {
          // Exact first: the originals' own stages short of Z3 (rlimit 1) may prove them equal; only
          // where they do not are the constants read as the rationals they round from.
          smt::DecideOptions quick = within_budget(dopt);
          quick.rlimit = 1;
          quick.use_cache = false;
          smt::Decision q = solver.decide(ctx, ea, eb, quick);
          if (q.verdict == smt::Verdict::Equal || q.verdict == smt::Verdict::Differ) d = std::move(q), decided = true;
          else rd = reroll_decide(ctx, solver, ea, eb, dopt, reroll_how, true);
        }
      } catch (const ir::LimitExceeded&) {  // too large to re-roll here: the originals as they are
        rd.reset();
      }
    }
    if (rd) {
      d = std::move(*rd);
      reduce_how = reduce_how.empty() ? reroll_how : reduce_how + "; " + reroll_how;
    } else if (!decided) {
      d = solver.decide(ctx, ea, eb, within_budget(dopt));
    }
  }
  limited.reset();
  lr.verdict = d.verdict;
  lr.stage = d.stage;
  lr.reason = d.reason;
  // How reductions were handled, on the locations whose reason says why they are as they are (a
  // difference's reason is the witness's story, told elsewhere).
  if (!reduce_how.empty() && d.verdict != smt::Verdict::Differ)
    lr.reason = lr.reason.empty() ? reduce_how : lr.reason + " (" + reduce_how + ")";
  if (d.verdict == smt::Verdict::Equal) lr.approximations = d.approximations;
  if (key && d.verdict != smt::Verdict::Differ) {
    std::lock_guard lock(mu_);
    decided_.try_emplace(*key, Decided{d.verdict, d.stage, d.reason, lr.approximations});
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
  // Equal, yet the tier's numbers differ: the tolerance stage proves closeness only for inputs within
  // ±bound (the tier's large values lie outside), anything else would be a fault of one of the two.
  // Neither is reported: the location stays undecided, naming both.
  if (falsified && lr.verdict == smt::Verdict::Equal) {
    lr.verdict = smt::Verdict::Unknown;
    lr.numbers_differ = true;
    lr.reason = fmt::format("decided equal ({}, inputs within ±{}), but the falsification tier's numbers differ "
                            "beyond the tolerance ({}): left undecided",
                            smt::stage_name(lr.stage), tol_.bound, falsified->reason);
  } else if (falsified && !(lr.verdict == smt::Verdict::Differ && lr.confirmed_f32)) {
    return as_falsified();
  }
  lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
  return slot;
}

std::optional<smt::Witness> Search::falsify_at_point(ir::Context& ctx, ir::Expr a, ir::Expr b,
                                                     const smt::DecideOptions& dopt, unsigned p) {
  smt::FalsifyOptions fo{.points = 1, .first_point = p, .seed = dopt.random_seed, .bound = ladder_bound(dopt),
                         .tolerance = dopt.tolerance, .confirm_rtol = dopt.confirm_rtol,
                         .confirm_atol = dopt.confirm_atol, .assumptions = &dopt.assumptions,
                         .key_of = [&ctx](int32_t t) { return smt::name_key(ctx.tensor_name(t)); }};
  auto w = smt::falsify(a, b, fo);
  if (w && !w->exceeds_tolerance && dopt.tolerance) w.reset();
  return w;
}

// A location too large to build, decided at the falsify ladder's points by evaluating both programs
// numerically (check/numeric.h): a point beyond the tolerance is a Sampling witness regenerable
// from (seed, point); none leaves the location undecided. Evaluators live as long as the search, so
// that neighbouring locations reuse the statistics they share.
void Search::numeric_decide(Lowering& ref, Lowering& cand, Slot& slot, const std::string& why) {
  LocationResult& lr = slot.lr;
  const auto& pair = m_.outputs[lr.loc.output];
  unsigned npoints = numeric_points();
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
    unsigned point = numeric_point(*hit);
    lr.sampled = LocationResult::SampledPoint{dopt_.random_seed, point, bound, {}, {}};
    for (const auto& si : m_.inputs)
      if (si.origin == program::SharedInput::Origin::Trimmed) lr.sampled->trimmed.push_back(si.name);
    lr.reason = fmt::format("{}: evaluated numerically at random point {} of seed {} ({} inputs, scale {})", why,
                            point, dopt_.random_seed, smt::distribution_name(smt::point_distribution(point)),
                            smt::point_bound(point, bound));
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
NumericEvaluator& Search::numeric_evaluator(Lowering& low, unsigned first) {
  std::lock_guard lock(mu_);
  auto& e = numeric_[{&low, first}];
  if (!e) {
    NumericOptions o;
    o.seed = dopt_.random_seed;
    o.points = {numeric_point(first), numeric_point(first)};
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

unsigned Search::numeric_point(unsigned i) const {
  unsigned uniform = std::max(1u, dopt_.falsify_points);
  return i < uniform ? i : smt::kDistributionPoint + (i - uniform);
}

unsigned Search::numeric_points() const { return 2 * smt::kDistributions + std::max(1u, dopt_.falsify_points); }

// Non-empty (the reason) when the first location of an output is estimated far past the build cap
// (Options::numeric_estimate): the output is then evaluated numerically without building. The
// estimate's templates are built by the evaluator of the first point, which goes on from them.
std::string Search::estimated_too_large(Lowering& ref, const Location& loc) {
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

// Both values as people read them (ir/summary.h), leaves named as the witness names them.
void Search::summarize_values(const ir::Context& ctx, ir::Expr ea, ir::Expr eb, LocationResult& lr) const {
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

}  // namespace dirigo::check::detail
