// check_bundle: merge the two programs, execute their kernels, search the output locations and fold
// the slots of the search into the verdict (docs/check.md); the outcome names and exit codes.
#include "check/check.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "aten/aten.h"
#include "blas/blas.h"
#include "bundle/io.h"
#include "bundle/print.h"
#include "check/launch_limits.h"
#include "check/lower.h"
#include "check/numeric.h"
#include "check/search.h"
#include "check/search_internal.h"
#include "ir/eval.h"
#include "ir/limits.h"
#include "ir/print.h"
#include "program/merge.h"
#include "ptx/ast.h"
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
    case Outcome::Error: return "ERROR";
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
    case Outcome::Error: return 70;
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

// Which stage the budget ran out in: the last location that timed out, else the stages before the
// search when it got no time at all.
std::string where_time_ran_out(const Report& r, double before_search_s) {
  for (size_t k = r.locations.size(); k-- > 0;) {
    const LocationResult& l = r.locations[k];
    if (l.verdict != smt::Verdict::Timeout) continue;
    return fmt::format("; at {}[{}]: {}", r.outputs[l.loc.output].ref_name, bundle::join_ints(l.loc.index),
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

// The prefix of an UNSUPPORTED reason for an exception that names a limit of dirigo's model; null for
// any other exception (an internal error).
const char* modelled_limit(const std::exception& e) {
  if (dynamic_cast<const aten::Unsupported*>(&e)) return "aten: ";
  if (dynamic_cast<const blas::Unsupported*>(&e)) return "library call: ";
  if (dynamic_cast<const ptx::ParseError*>(&e)) return "PTX: ";
  if (dynamic_cast<const bundle::BundleError*>(&e)) return "bundle: ";
  if (dynamic_cast<const ir::LimitExceeded*>(&e)) return "";
  return nullptr;
}

// The inputs whose values a program reads on the host (aten::_local_scalar_dense: `.item()`, a
// tensor used as a Python number), through the ops that computed the read tensor. The trace keeps
// what the host did with the value then (a kernel's scalar argument, a branch taken) as constants,
// so a witness that changes such an input runs a different program than the trace shows.
std::set<std::string> host_read_inputs(const bundle::Program& p) {
  std::set<std::string> read;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const auto* item = std::get_if<bundle::AtenOp>(&p.ops[i]);
    if (!item || (item->name != "aten::_local_scalar_dense" && item->name != "aten::item")) continue;
    std::set<std::string> from;
    for (const auto& a : item->args)
      if (const auto* t = std::get_if<bundle::TensorRef>(&a.value)) from.insert(t->tensor);
    for (size_t j = i; j-- > 0;) {
      const auto* op = std::get_if<bundle::AtenOp>(&p.ops[j]);
      if (!op) continue;
      bool feeds = false;
      for (const auto& o : op->outputs) feeds = feeds || from.count(o);
      for (const auto& o : op->mutates) feeds = feeds || from.count(o);
      if (!feeds) continue;
      for (const auto& a : op->args)
        if (const auto* t = std::get_if<bundle::TensorRef>(&a.value)) from.insert(t->tensor);
    }
    for (const auto& in : p.inputs)
      if (from.count(in.tensor) && !in.constant) read.insert(in.name);
  }
  return read;
}

}  // namespace

using namespace detail;

Report check_bundle(const bundle::Bundle& b, const Options& user_opt) {
  Options opt = user_opt;
  if (opt.deadline) {  // the caller's end binds as a budget from now (a past end leaves a token budget)
    double left = std::chrono::duration<double>(*opt.deadline - Clock::now()).count();
    opt.budget_s = std::max(1e-9, opt.budget_s > 0 ? std::min(opt.budget_s, left) : left);
  }
  // Execute's own time limit never outlasts the check's budget
  if (double budget_ms = opt.budget_s * 1000; budget_ms > 0 && (opt.exec.max_ms == 0 || opt.exec.max_ms > budget_ms))
    opt.exec.max_ms = budget_ms;
  if (opt.budget_s > 0)  // shared by every launch of both programs
    opt.exec.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.budget_s));
  Report r;
  auto t0 = Clock::now();
  // Always `return finish(...)`: the report moves out (a giant location's witness holds ~10^6 leaves).
  auto finish = [&](Outcome o, std::string reason) {
    r.outcome = o;
    if (!reason.empty()) r.reason = std::move(reason);
    r.seconds = since(t0);
    return std::move(r);
  };
  try {
    // Fault injection for the tests of the internal-error path (exit 70): nothing else reaches it on purpose.
    if (const char* f = std::getenv("DIRIGO_INJECT_FAULT"); f && std::string_view(f) == "check")
      throw std::logic_error("fault injected by DIRIGO_INJECT_FAULT=check");
    for (const auto& p : b.programs) {  // a launch that cannot run: its outputs are whatever memory held
      if (p.role == bundle::Role::Other) continue;
      if (auto why = impossible_launch(p)) {
        if (p.role == bundle::Role::Reference)
          return finish(Outcome::Unsupported, "UNSUPPORTED: the reference makes a launch no GPU runs: " + *why);
        r.evidence = "launch-config";
        return finish(Outcome::Bug, "the candidate makes a launch no GPU runs: " + *why);
      }
    }
    if (opt.on_stage) opt.on_stage("merge");
    program::Merged m = program::merge(b, {opt.trim_prefix, false});
    std::set<std::string> ref_host, cand_host;
    for (const auto& p : b.programs) {
      if (p.role == bundle::Role::Reference) ref_host = host_read_inputs(p);
      if (p.role == bundle::Role::Candidate) cand_host = host_read_inputs(p);
    }
    // (the input's name, which program) when the location's witness sets an input a program reads on the host
    auto host_read_witness = [&](const LocationResult& l) -> std::optional<std::pair<std::string, std::string>> {
      for (const auto& leaf : l.leaves) {
        if (ref_host.count(leaf.input)) return std::make_pair(leaf.input, std::string("reference"));
        if (cand_host.count(leaf.candidate_input)) return std::make_pair(leaf.candidate_input, std::string("candidate"));
      }
      if (l.sampled) {  // a sampled point draws every shared input
        if (!ref_host.empty()) return std::make_pair(*ref_host.begin(), std::string("reference"));
        if (!cand_host.empty()) return std::make_pair(*cand_host.begin(), std::string("candidate"));
      }
      return std::nullopt;
    };
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
    if (opt.on_stage) opt.on_stage("execute");
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
        for (const auto& u : L.result->undecided) {
          r.notes.push_back("undecided safety check: " + u);
          r.undecided_safety.push_back(u);
        }
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

    if (opt.on_stage) opt.on_stage("search");
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
    std::vector<bool> settled(m.outputs.size(), false);
    std::vector<std::vector<std::string>> settled_approximations(m.outputs.size());
    if (opt.symbolic_location && opt.only_locations.empty()) {
      auto end = opt.budget_s > 0 ? Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                                        search_opt.budget_s * opt.symbolic_location_share))
                                  : Clock::time_point::max();
      auto decided = search.settle_symbolically(end, std::max<size_t>(1, opt.min_locations));
      for (size_t o = 0; o < decided.size(); ++o) {
        OutputInfo& info = r.outputs[o];
        settled[o] = info.symbolic = decided[o].equal;
        info.symbolic_expr = std::move(decided[o].expr);
        info.symbolic_nodes = decided[o].nodes;
        info.symbolic_how = std::move(decided[o].how);
        info.symbolic_ms = decided[o].ms;
        settled_approximations[o] = std::move(decided[o].approximations);
      }
      if (opt.budget_s > 0) search_opt.budget_s = std::max(1e-9, opt.budget_s - since(t0));
    }
    auto search0 = Clock::now();
    std::deque<std::optional<Slot>> slots = search.run();
    r.search_seconds = since(search0);
    r.stage_seconds.emplace_back("search", r.search_seconds);
    r.solver_calls = search.solver_calls();
    r.deduplicated = search.deduplicated();
    r.classes = search.classes();
    r.jobs = search.jobs();
    // Verdict from the slots in search order: the same for any number of workers.
    std::vector<size_t> spot(settled.size(), 0);  // by settled output: its locations decided one by one
    auto finish_error = [&](const std::string& what) {
      Report err = internal_error(what);
      err.notes = std::move(r.notes);
      err.seconds = since(t0);
      return err;
    };
    for (auto& held : slots) {
      Slot& slot = *held;
      if (slot.kind == Slot::Kind::Race) {
        r.evidence = "execute-safety";
        r.locations.push_back(std::move(slot.lr));
        return finish(Outcome::Bug, "global write-write race: " + slot.message);
      }
      if (slot.kind == Slot::Kind::Unsupported) return finish(Outcome::Unsupported, slot.message);
      ++r.checked;
      if (size_t o = slot.lr.loc.output; settled[o]) {
        ++spot[o];
        if (!fold_settled_location(slot.lr, r.outputs[o].symbolic_how, settled_approximations[o]))
          // a symbolic difference: the per-location path and the symbolic one disagree, so one of them
          // models an operator wrongly
          return finish_error(fmt::format("{}[{}]: the location's expressions differ although the output was "
                                          "proven equal at a symbolic location ({})",
                                          r.outputs[o].ref_name, bundle::join_ints(slot.lr.loc.index),
                                          r.outputs[o].symbolic_how));
      }
      if (slot.lr.verdict == smt::Verdict::Equal) {
        if (slot.lr.stage == smt::Stage::Tolerance) ++r.equal_within_tolerance;
        else if (!slot.lr.approximations.empty()) ++r.equal_modulo_approximation;
        else ++r.equal_exact;
        for (const auto& a : slot.lr.approximations)
          if (std::find(r.approximations.begin(), r.approximations.end(), a) == r.approximations.end())
            r.approximations.push_back(a);
        ++r.equal;
        list_location(r, std::move(slot.lr));
        continue;
      }
      if (slot.lr.verdict != smt::Verdict::Differ) {
        list_location(r, std::move(slot.lr));
        continue;
      }
      r.locations.push_back(std::move(slot.lr));
      const LocationResult& last = r.locations.back();
      if (!r.first_differ || last.confirmed_f32) r.first_differ = r.locations.size() - 1;
      if (last.confirmed_f32) {
        const auto& out = r.outputs[last.loc.output];
        if (auto host = host_read_witness(last)) {
          return finish(Outcome::Suspect,
                        fmt::format("{}[{}]: the symbolic values differ (reference {} vs candidate {} at the witness), "
                                    "but the witness changes {}, which the {} reads on the host (.item()): the trace "
                                    "holds what the host did with the value it read then, so only a replay on the "
                                    "real programs can show the difference",
                                    out.ref_name, bundle::join_ints(last.loc.index), last.ref_value_f32,
                                    last.cand_value_f32, host->first, host->second));
        }
        r.evidence = last.evidence.empty() ? "fp32-evaluation" : last.evidence;
        return finish(Outcome::Bug, fmt::format("{}[{}] differs: reference {} vs candidate {} at the witness",
                                                out.ref_name, bundle::join_ints(last.loc.index), last.ref_value_f32,
                                                last.cand_value_f32));
      }
    }
    if (r.first_differ) {
      const auto& l = r.locations[*r.first_differ];
      return finish(Outcome::Suspect,
                    fmt::format("{}[{}]: the symbolic values differ, but {}", r.outputs[l.loc.output].ref_name,
                                bundle::join_ints(l.loc.index),
                                l.reason.empty() ? "the witness does not show the difference beyond tolerance when "
                                                   "evaluated in fp32"
                                                 : l.reason));
    }
    double rate = r.checked / std::max(r.search_seconds, 1e-9);  // locations decided one by one
    for (size_t o = 0; o < settled.size(); ++o)
      if (settled[o]) {
        size_t rest = size_t(r.outputs[o].numel) - spot[o];
        r.checked += rest, r.equal += rest, r.symbolic_locations += rest;
        (settled_approximations[o].empty() ? r.equal_exact : r.equal_modulo_approximation) += rest;
        for (const auto& a : settled_approximations[o])
          if (std::find(r.approximations.begin(), r.approximations.end(), a) == r.approximations.end())
            r.approximations.push_back(a);
        r.outputs[o].symbolic_only = int64_t(rest);
      }
    size_t undecided = r.checked - r.equal;
    if (opt.full && r.checked > 0 && int64_t(r.checked) < r.total_locations && r.search_seconds >= search_opt.budget_s)
      r.projected_full_seconds = double(r.total_locations - int64_t(r.checked)) / rate;
    // every location proven equal is VERIFIED however few there are; otherwise at least
    // min_locations must be decided before anything but BUG is said
    if (int64_t(r.equal) == r.total_locations) {
      auto [o, why] = all_equal_outcome(r);
      return finish(o, why);
    }
    if (r.checked < opt.min_locations || (undecided && r.equal < opt.min_locations))
      return finish(Outcome::Timeout, fmt::format("{} locations decided equal, {} undecided within {:.1f} s (at least {} needed){}",
                                                  r.equal, undecided, opt.budget_s, opt.min_locations,
                                                  where_time_ran_out(r, before_search_s)));
    return finish(Outcome::Checked, undecided ? fmt::format("{} locations undecided", undecided) : "");
  } catch (const program::MergeError& e) {
    return finish(Outcome::Unsupported, std::string("UNSUPPORTED: merge: ") + e.what());
  } catch (const Unsupported& u) {
    return finish(Outcome::Unsupported, u.what());
  } catch (const exec::TimeLimit& t) {
    return finish(Outcome::Timeout, t.what());
  } catch (const std::exception& e) {
    // What the model names (an op or PTX it lacks, a bundle it cannot read, a size past its limits) is
    // UNSUPPORTED; any other exception is dirigo failing, not a property of the programs.
    if (const char* why = modelled_limit(e)) return finish(Outcome::Unsupported, fmt::format("UNSUPPORTED: {}{}", why, e.what()));
    Report err = internal_error(e.what());
    err.notes = std::move(r.notes);
    err.seconds = since(t0);
    return err;
  } catch (...) {
    return internal_error("an exception that is not a std::exception");
  }
}

void list_location(Report& r, LocationResult&& l) {
  if (l.verdict != smt::Verdict::Differ && r.locations.size() >= kListedLocations) ++r.locations_omitted;
  else r.locations.push_back(std::move(l));
}

std::pair<Outcome, std::string> all_equal_outcome(const Report& r) {
  // an undecided safety check (a possible race or out-of-bounds access) could change what is written
  if (r.undecided_safety.empty()) return {Outcome::Verified, ""};
  return {Outcome::Checked, fmt::format("every location equal, but {} Execute safety check(s) undecided (first: {}): "
                                        "not VERIFIED",
                                        r.undecided_safety.size(), r.undecided_safety.front())};
}

Report internal_error(const std::string& what) {
  Report r;
  r.outcome = Outcome::Error;
  r.reason = fmt::format("internal error: {}, please report with the bundle", what);
  return r;
}

Report check_path(const std::string& dir, const Options& opt) {
  try {
    auto t0 = Clock::now();
    if (opt.on_stage) opt.on_stage("read");
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
