#include "check/check.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "bundle/io.h"
#include "check/lower.h"
#include "check/search.h"
#include "ir/eval.h"
#include "ir/print.h"
#include "program/merge.h"

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

// "in:x" element 37 -> "x[0, 1, 5]" using the shared input's shape.
std::string leaf_name(const ir::Context& ctx, const program::Merged& m, int32_t tensor, int64_t index) {
  std::string name(ctx.tensor_name(tensor));
  if (name.rfind("in:", 0) == 0) {
    std::string in = name.substr(3);
    for (const auto& si : m.inputs)
      if (si.name == in) return fmt::format("{}[{}]", in, index_str(unravel(si.ref.shape, index)));
    return fmt::format("{}[{}]", in, index);
  }
  return fmt::format("{}[{}]", name, index);
}

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

// Witness refinement (paper §4.6): the solver's model shows that the values differ, but
// often by less than the tolerance (floats are reals to the solver, and transcendentals
// are uninterpreted). Starting from the model, search the real leaves within
// [-bound, bound] for a point where the difference, evaluated in fp64, clears the
// tolerance: random restarts, then coordinate steps on the best point. Deterministic for a
// seed. Returns the improved leaf values (same order as `leaves`).
std::vector<double> refine_witness(ir::Expr ea, ir::Expr eb, const std::vector<ir::Expr>& leaves,
                                   std::vector<double> start, const smt::Tolerance& tol, uint64_t seed,
                                   double budget_ms) {
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
      return excess(ev.real(ea), ev.real(eb), tol);
    } catch (const std::exception&) {
      return -1e300;
    }
  };
  auto over = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() > budget_ms; };
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(-tol.bound, tol.bound);
  std::vector<double> best = std::move(start);
  double best_s = eval(best);
  for (int r = 0; r < 64 && best_s <= 0 && !over(); ++r) {
    std::vector<double> x(leaves.size());
    double scale = (r % 4 + 1) / 4.0;
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

}  // namespace

Report check_bundle(const bundle::Bundle& b, const Options& opt) {
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
    r.prefix_trimmed = m.prefix;
    if (!m.prefix_stop.empty()) r.notes.push_back("prefix trimming stopped: " + m.prefix_stop);
    if (!m.unmatched.empty())
      for (const auto& u : m.unmatched)
        r.notes.push_back(fmt::format("input {} of {} has no counterpart", u.name, u.in_ref ? "the reference" : "the candidate"));
    for (const auto& o : m.outputs) {
      OutputInfo info{o.ref_name, o.cand_name, o.cand.shape, 1};
      for (int64_t d : o.cand.shape) info.numel *= d;
      r.total_locations += info.numel;
      r.outputs.push_back(std::move(info));
    }

    ir::Context ctx;
    Lowering ref(ctx, b, m, true, opt.exec), cand(ctx, b, m, false, opt.exec);
    try {
      ref.execute_all();
      cand.execute_all();
    } catch (const Unsupported& u) {
      return finish(Outcome::Unsupported, u.what());
    }
    r.kernels = ref.launches().size() + cand.launches().size();
    for (const auto* low : {&ref, &cand})
      for (auto& f : low->findings()) r.findings.push_back(f);
    r.lower_seconds = since(t0);
    if (!r.findings.empty()) {
      r.evidence = "execute-safety";
      const auto& f = r.findings.front();
      return finish(Outcome::Bug, fmt::format("{} in kernel {} (PTX line {}{}): {}", f.kind, f.kernel, f.where.ptx_line,
                                              f.where.source.empty() ? "" : ", " + f.where.source, f.message));
    }

    smt::Tolerance tol;
    if (opt.tolerance) tol = *opt.tolerance;
    else if (b.tolerance) tol = {b.tolerance->atol, b.tolerance->rtol, tol.bound};
    smt::DecideOptions dopt = opt.decide;
    dopt.tolerance = tol;

    LocationOrder order(ctx, m.outputs, cand, opt.seed, opt.full);
    auto search0 = Clock::now();
    smt::Solver& solver = smt::thread_solver();
    uint64_t calls0 = solver.stats().solver_calls;
    double last_progress = 0;
    while (auto loc = order.next()) {
      double elapsed = since(search0);
      if (elapsed > opt.budget_s) break;
      if (opt.max_locations && r.checked >= opt.max_locations) break;
      if (opt.progress && elapsed - last_progress > 1.0) {
        last_progress = elapsed;
        double rate = r.checked / std::max(elapsed, 1e-9);
        double eta = opt.full && rate > 0 ? double(r.total_locations - int64_t(r.checked)) / rate : 0;
        std::fprintf(stderr, "\rdirigo check: %zu/%lld locations, %.1f s%s", r.checked, (long long)r.total_locations,
                     elapsed, opt.full ? fmt::format(", ETA {:.0f} s", eta).c_str() : "");
      }
      LocationResult lr;
      lr.loc = *loc;
      auto tl = Clock::now();
      const auto& pair = m.outputs[loc->output];
      ir::Expr ea, eb;
      try {
        ea = ref.element(pair.ref, loc->flat);
        eb = cand.element(pair.cand, loc->flat);
      } catch (const WriteRace& w) {
        r.evidence = "execute-safety";
        r.locations.push_back(std::move(lr));
        return finish(Outcome::Bug, std::string("global write-write race: ") + w.what());
      } catch (const Unsupported& u) {
        return finish(Outcome::Unsupported, u.what());
      }
      lr.ref_nodes = ir::dag_size(ea);
      lr.cand_nodes = ir::dag_size(eb);
      ir::PrintOptions popt{.max_nodes = 40};
      lr.ref_expr = ir::to_string(ctx, ea, popt);
      lr.cand_expr = ir::to_string(ctx, eb, popt);
      smt::Decision d = solver.decide(ctx, ea, eb, dopt);
      lr.verdict = d.verdict;
      lr.stage = d.stage;
      lr.reason = d.reason;
      ++r.checked;
      if (d.verdict == smt::Verdict::Equal) ++r.equal;
      if (d.verdict == smt::Verdict::Differ && d.witness) {
        const smt::Witness& w = *d.witness;
        lr.exceeds_tolerance = w.exceeds_tolerance;
        // The real tensor-element leaves of both sides, starting at the solver's values.
        std::vector<ir::Expr> leaves;
        {
          std::unordered_set<ir::Expr> seen;
          for (ir::Expr root : {ea, eb})
            for (ir::Expr l : ir::leaves(root))
              if (l->op == ir::Op::TensorElem && seen.insert(l).second) leaves.push_back(l);
        }
        ir::Env wenv = w.env();
        std::vector<double> values;
        for (ir::Expr l : leaves) {
          ir::Value v = wenv.elem(l->tensor(), l->index(), l->sort);
          values.push_back(l->sort == ir::Sort::Real ? v.real : double(int64_t(v.bits)));
        }
        if (!w.exceeds_tolerance) values = refine_witness(ea, eb, leaves, values, tol, opt.seed + r.checked, 200);
        std::unordered_map<std::pair<int32_t, int64_t>, double, PairHash> at;
        for (size_t k = 0; k < leaves.size(); ++k) at[{leaves[k]->tensor(), leaves[k]->index()}] = values[k];
        ir::Env env;
        env.elem = [&](int32_t t, int64_t i, ir::Sort s) {
          auto it = at.find({t, i});
          double v = it == at.end() ? 0.0 : it->second;
          return s == ir::Sort::Real ? ir::Value::of_real(v) : ir::Value::of_bv(s, uint64_t(int64_t(v)));
        };
        env.var = wenv.var;
        // Show the leaves that matter most: largest magnitude first.
        std::vector<size_t> order(leaves.size());
        for (size_t k = 0; k < order.size(); ++k) order[k] = k;
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return std::fabs(values[x]) > std::fabs(values[y]); });
        for (size_t k : order) {
          if (lr.witness.size() >= 24 || values[k] == 0) break;
          lr.witness.push_back({leaf_name(ctx, m, leaves[k]->tensor(), leaves[k]->index()), values[k]});
        }
        // Evidence without a GPU: both symbolic values evaluated in IEEE fp32 at the witness.
        try {
          ir::Evaluator da(env, ir::Precision::F64), db(env, ir::Precision::F64);
          lr.ref_value = da.real(ea);
          lr.cand_value = db.real(eb);
          ir::Evaluator fa(env, ir::Precision::F32), fb(env, ir::Precision::F32);
          ir::Value va = fa(ea), vb = fb(eb);
          lr.ref_value_f32 = va.sort == ir::Sort::Real ? va.real : double(va.bits);
          lr.cand_value_f32 = vb.sort == ir::Sort::Real ? vb.real : double(vb.bits);
          lr.confirmed_f32 = !va.undef && !vb.undef && beyond_tolerance(lr.ref_value_f32, lr.cand_value_f32, tol);
          lr.exceeds_tolerance = beyond_tolerance(lr.ref_value, lr.cand_value, tol);
          if (w.depends_on_undef) lr.reason = "one side depends on an undefined value";
        } catch (const std::exception& e) {
          lr.reason = std::string("fp32 evaluation failed: ") + e.what();
        }
      }
      lr.ms = std::chrono::duration<double, std::milli>(Clock::now() - tl).count();
      r.locations.push_back(std::move(lr));
      const LocationResult& last = r.locations.back();
      if (last.verdict == smt::Verdict::Differ && !r.first_differ) r.first_differ = r.locations.size() - 1;
      if (last.verdict == smt::Verdict::Differ && last.confirmed_f32) {
        r.first_differ = r.locations.size() - 1;
        r.evidence = "fp32-evaluation";
        r.search_seconds = since(search0);
        r.solver_calls = solver.stats().solver_calls - calls0;
        if (opt.progress) std::fprintf(stderr, "\r\033[K");
        const auto& out = r.outputs[last.loc.output];
        return finish(Outcome::Bug, fmt::format("{}[{}] differs: reference {} vs candidate {} at the witness",
                                                out.ref_name, index_str(last.loc.index), last.ref_value_f32,
                                                last.cand_value_f32));
      }
    }
    if (opt.progress) std::fprintf(stderr, "\r\033[K");
    r.search_seconds = since(search0);
    r.solver_calls = solver.stats().solver_calls - calls0;
    if (r.first_differ) {
      const auto& l = r.locations[*r.first_differ];
      return finish(Outcome::Suspect,
                    fmt::format("{}[{}]: the symbolic values differ, but the witness does not show the difference "
                                "beyond tolerance when evaluated in fp32",
                                r.outputs[l.loc.output].ref_name, index_str(l.loc.index)));
    }
    size_t undecided = r.checked - r.equal;
    if (r.checked < opt.min_locations || (undecided && r.equal < opt.min_locations))
      return finish(Outcome::Timeout, fmt::format("{} locations decided equal, {} undecided within {:.1f} s (at least {} needed)",
                                                  r.equal, undecided, opt.budget_s, opt.min_locations));
    if (int64_t(r.equal) == r.total_locations) return finish(Outcome::Verified, "");
    if (opt.full) {
      double rate = r.checked / std::max(r.search_seconds, 1e-9);
      r.projected_full_seconds = double(r.total_locations - int64_t(r.checked)) / rate;
    }
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
    bundle::Bundle b = bundle::read_bundle(dir);
    return check_bundle(b, opt);
  } catch (const std::exception& e) {
    Report r;
    r.outcome = Outcome::Unsupported;
    r.reason = std::string("UNSUPPORTED: bundle: ") + e.what();
    return r;
  }
}

}  // namespace dirigo::check
