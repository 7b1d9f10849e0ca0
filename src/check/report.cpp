// Human and JSON renderings of a check Report, and the verdict rules applied to a report held as JSON.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "bundle/print.h"
#include "check/check.h"
#include "check/present.h"

namespace dirigo::check {

namespace {
std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> t;
  for (size_t i = 0; i < s.size();) {
    auto word = [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '.'; };
    size_t j = i + 1;
    if (word(static_cast<unsigned char>(s[i]))) {
      while (j < s.size() && word(static_cast<unsigned char>(s[j]))) ++j;
    } else {
      while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;  // one UTF-8 code point
    }
    t.push_back(s.substr(i, j - i));
    i = j;
  }
  return t;
}
}  // namespace

std::pair<std::string, std::string> mark_differences(const std::string& a, const std::string& b, std::string_view open,
                                                     std::string_view close, std::string (*escape)(std::string_view)) {
  auto ta = tokens(a), tb = tokens(b);
  auto esc = [&](const std::string& x) { return escape ? escape(x) : x; };
  if (ta.size() * tb.size() > 4'000'000) return {esc(a), esc(b)};  // too long to compare: unmarked
  // lcs[i][j]: of ta[i..] and tb[j..]
  std::vector<std::vector<uint32_t>> lcs(ta.size() + 1, std::vector<uint32_t>(tb.size() + 1, 0));
  for (size_t i = ta.size(); i-- > 0;)
    for (size_t j = tb.size(); j-- > 0;)
      lcs[i][j] = ta[i] == tb[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::vector<bool> ka(ta.size(), false), kb(tb.size(), false);  // kept: in the common subsequence
  for (size_t i = 0, j = 0; i < ta.size() && j < tb.size();) {
    if (ta[i] == tb[j]) ka[i++] = kb[j++] = true;
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) ++i;
    else ++j;
  }
  auto render = [&](const std::vector<std::string>& t, const std::vector<bool>& kept) {
    std::string out;
    for (size_t i = 0; i < t.size(); ++i) {
      if (!kept[i] && (i == 0 || kept[i - 1])) out += open;
      out += esc(t[i]);
      if (!kept[i] && (i + 1 == t.size() || kept[i + 1])) out += close;
    }
    return out;
  };
  return {render(ta, ka), render(tb, kb)};
}

namespace {
std::string evidence_sentence(const Report& r) {
  if (r.evidence == "fp32-evaluation")
    return "fp32-evaluation (both symbolic values evaluated in IEEE fp32 at the witness; no replay on the real programs)";
  if (r.evidence == "numeric-falsification")
    return "numeric-falsification (both programs evaluated numerically, in fp64 and in IEEE fp32, at inputs drawn from "
           "one of the falsification tier's distributions, before any expression was built; no replay on the real "
           "programs)";
  if (r.evidence == "replay-gpu") return "replay-gpu (both real programs run on a GPU at the witness)";
  if (r.evidence == "replay-cpu") return "replay-cpu (both real programs run on the CPU at the witness)";
  if (r.evidence == "state-replay-gpu" || r.evidence == "state-replay-cpu")
    return r.evidence + " (both real programs, each with its own parameters as constructed, run on KernelBench's trial inputs)";
  if (r.evidence == "state-proven-location")
    return "state-proven-location (the reference run in fp32 on the CPU with its own parameters and with the "
           "candidate's, at a location proven equal as functions)";
  if (r.evidence == "observed-gpu" || r.evidence == "observed-cpu")
    return r.evidence + " (both real programs, as KernelBench builds them, run on its trial inputs: what its own "
                        "check sees)";
  if (r.evidence == "crash-gpu") return "crash-gpu (the candidate program faulted on a GPU; the reference ran)";
  if (r.evidence == "launch-config")
    return "launch-config (the recorded launch exceeds CUDA's limits, so the kernel never ran)";
  if (r.evidence == "exception")
    return "exception (the candidate raised, traced and again run plainly without the tracer; the reference ran)";
  if (r.evidence == "timeout") return "timeout (the candidate was killed past the trace timeout; the reference finished)";
  if (r.evidence == "crash") return "crash (the candidate's process died; the reference ran)";
  if (r.evidence == "call-history")
    return "call-history (both real programs run in one process in several call orders: the candidate's result "
           "on one input depends on what ran before it, or it changed its inputs)";
  if (r.evidence.empty()) return "none beyond the solver's model";
  return r.evidence;
}
// The differing parameter pairs of the state stage: values, samples, likely cause.
std::string state_text(const Report& r) {
  std::string s;
  if (r.function_outcome)
    s += fmt::format("  the function check alone: {}\n", outcome_name(*r.function_outcome));
  std::string evidence = r.stage == "state" || r.stage == "observe"
                             ? fmt::format("  evidence: {}\n", evidence_sentence(r)) : "";
  auto j = nlohmann::json::parse(r.state->json, nullptr, false);
  if (j.is_discarded() || !j.contains("pairs")) return s + evidence;
  auto num = [](const nlohmann::json& v) { return v.is_number() ? fmt::format("{:.6g}", v.get<double>()) : v.dump(); };
  for (const auto& p : j["pairs"]) {
    if (p.value("equal", true)) continue;
    s += fmt::format("  state differs: {} ~ {} (shape {}): max |diff| {}, {} element(s) differ\n",
                     p.value("reference", "?"), p.value("candidate", "?"), p.value("shape", nlohmann::json::array()).dump(),
                     num(p.value("max_abs_diff", nlohmann::json())), p.value("elements_differing", 0));
    s += fmt::format("    samples: reference {}, candidate {}\n",
                     p["reference_stats"].value("samples", nlohmann::json::array()).dump(),
                     p["candidate_stats"].value("samples", nlohmann::json::array()).dump());
    if (p.contains("likely_cause")) s += "    likely cause: " + p["likely_cause"].get<std::string>() + "\n";
  }
  return s + evidence;
}

// The two symbolic values: the shared context once, with □ where they differ, then each side's part.
std::string values_text(const LocationResult& l) {
  if (l.ref_part.empty()) return fmt::format("  reference = {}\n  candidate = {}\n", l.ref_expr, l.cand_expr);
  std::string s;
  auto [ref, cand] = mark_differences(l.ref_part, l.cand_part, "«", "»");
  if (!l.shared_expr.empty()) {
    s += fmt::format("  both        = {}\n", l.shared_expr);
    s += fmt::format("  reference □ = {}\n", ref);
    s += fmt::format("  candidate □ = {}\n", cand);
  } else {
    s += fmt::format("  reference = {}\n  candidate = {}\n", ref, cand);
  }
  if (!l.parts_note.empty()) s += fmt::format("  they differ in: {}\n", l.parts_note);
  return s;
}

// The witness by input: its role, how many of its elements matter, its largest values.
std::string witness_text(const LocationResult& l) {
  if (l.leaves.empty()) {  // a sampled point: every input regenerable from (seed, point)
    std::string s = "  witness:\n";
    if (l.sampled) {
      bool zeroed = !l.sampled->zeroed.empty();
      s = fmt::format("  witness: random point {} of seed {}{} (every {}input drawn; --witness-out regenerates "
                      "them); the largest values:\n", l.sampled->point, l.sampled->seed,
                      zeroed ? fmt::format(" with {} 0 everywhere", fmt::join(l.sampled->zeroed, ", ")) : "",
                      zeroed ? "other " : "");
    }
    std::vector<std::pair<std::string, std::vector<std::string>>> by_input;
    for (const auto& w : l.witness) {
      auto cut = w.name.find('[');
      std::string name = w.name.substr(0, cut), index = cut == std::string::npos ? "" : w.name.substr(cut);
      auto it = std::find_if(by_input.begin(), by_input.end(), [&](auto& e) { return e.first == name; });
      if (it == by_input.end()) it = by_input.insert(by_input.end(), {name, {}});
      it->second.push_back(fmt::format("{} = {:.6g}", index, w.value));
    }
    for (size_t k = 0; k < by_input.size() && k < 6; ++k) {
      auto& vs = by_input[k].second;
      if (vs.size() > 3) vs.resize(3), vs.push_back("…");
      s += fmt::format("    {}: {}\n", by_input[k].first, fmt::join(vs, ", "));
    }
    return s;
  }
  struct Input {
    std::string name, role;
    std::vector<const WitnessLeaf*> leaves;  // nonzero ones, largest first
    size_t total = 0;
    double peak = 0;
  };
  std::vector<Input> inputs;
  std::map<std::string, size_t> at;
  for (const auto& w : l.leaves) {
    auto [it, fresh] = at.try_emplace(w.input, inputs.size());
    if (fresh) {
      std::string role = w.kind;
      if (w.kind == "trimmed") role = fmt::format("result of {} in the shared prefix", w.aten.empty() ? "an op" : w.aten);
      else if (w.kind == "external") role = "read by the " + (w.program.empty() ? std::string("one") : w.program) + " program only";
      inputs.push_back({w.input, role, {}, 0, 0});
    }
    Input& in = inputs[it->second];
    ++in.total;
    if (w.value != 0) in.leaves.push_back(&w);
  }
  for (auto& in : inputs) {
    std::stable_sort(in.leaves.begin(), in.leaves.end(),
                     [](auto* a, auto* b) { return std::fabs(a->value) > std::fabs(b->value); });
    in.peak = in.leaves.empty() ? 0 : std::fabs(in.leaves[0]->value);
  }
  std::stable_sort(inputs.begin(), inputs.end(), [](const Input& a, const Input& b) { return a.peak > b.peak; });
  std::string others = "every other element 0";
  for (const WitnessLeaf& f : l.fills) others += fmt::format(", of {} {:.6g}", f.input, f.value);
  std::string s = fmt::format("  witness: {} input element(s) matter, in {} input(s); {}\n", l.leaves.size(),
                              inputs.size(), others);
  constexpr size_t kInputs = 6, kValues = 3;
  for (size_t k = 0; k < inputs.size() && k < kInputs; ++k) {
    const Input& in = inputs[k];
    std::vector<std::string> vs;
    for (size_t v = 0; v < in.leaves.size() && v < kValues; ++v)
      vs.push_back(fmt::format("[{}] = {:.6g}", bundle::join_ints(in.leaves[v]->index), in.leaves[v]->value));
    if (in.leaves.size() > kValues) vs.push_back("…");
    s += fmt::format("    {} ({}, {} element{}): {}\n", in.name, in.role, in.total, in.total == 1 ? "" : "s",
                     vs.empty() ? std::string("all 0") : fmt::format("{}", fmt::join(vs, ", ")));
  }
  if (inputs.size() > kInputs) s += fmt::format("    … and {} more input(s) (--json or --witness-out lists them all)\n", inputs.size() - kInputs);
  return s;
}
}  // namespace

std::string proof_kind(const Report& r) {
  std::string s;
  if (r.equal_within_tolerance)
    s = fmt::format("within tolerance for |inputs| <= {:g}", r.tolerance.bound);
  if (r.equal_modulo_approximation)
    s += fmt::format("{}modulo {}", s.empty() ? "" : ", ", fmt::join(r.approximations, ", "));
  return s.empty() ? "exact" : s;
}

namespace {
// "all 256 locations proven equal for every input", or how the inexact ones were decided.
std::string equal_sentence(const Report& r, const std::string& count) {
  if (!r.equal_within_tolerance && !r.equal_modulo_approximation)
    return fmt::format("{} locations proven equal for every input", count);
  std::string s = fmt::format("{} locations equal: {} exactly", count, r.equal_exact);
  if (r.equal_within_tolerance)
    s += fmt::format(", {} within atol {:g} for every input element in [-{:g}, {:g}]", r.equal_within_tolerance,
                     r.tolerance.atol, r.tolerance.bound, r.tolerance.bound);
  if (r.equal_modulo_approximation)
    s += fmt::format(", {} modulo {}", r.equal_modulo_approximation, fmt::join(r.approximations, ", "));
  return s;
}
}  // namespace

std::string to_text(const Report& r, bool verbose) {
  std::string s = fmt::format("{}", outcome_name(r.outcome));
  switch (r.outcome) {
    case Outcome::Checked:
      s += ": " + equal_sentence(r, fmt::format("{} of {}", r.equal, r.total_locations));
      break;
    case Outcome::Verified:
      if (proof_kind(r) != "exact") s += " " + proof_kind(r);
      s += ": " + equal_sentence(r, fmt::format("all {}", r.total_locations));
      break;
    default: break;
  }
  if (!r.reason.empty()) s += (r.outcome == Outcome::Checked ? " (" + r.reason + ")" : "\n  " + r.reason);
  s += "\n";
  for (const auto& f : r.findings) {
    s += fmt::format("  {} in kernel {} at PTX line {}{}", f.kind, f.kernel, f.where.ptx_line,
                     f.where.source.empty() ? "" : " (" + f.where.source + ")");
    if (f.thread) s += fmt::format(", thread {}", f.thread->str());
    if (f.other.ptx_line) s += fmt::format("; conflicting access at PTX line {}", f.other.ptx_line);
    if (f.other_thread) s += fmt::format(" by thread {}", f.other_thread->str());
    s += "\n    " + f.message + "\n";
  }
  if (r.state && (r.state->verdict == "BUG" || r.state->verdict == "SUSPECT")) s += state_text(r);
  if (r.first_differ && r.stage != "state" && r.stage != "observe") {
    const auto& l = r.locations[*r.first_differ];
    const auto& out = r.outputs[l.loc.output];
    s += fmt::format("  location  {}[{}]  (found by {} search, {} of {} checked)\n", out.ref_name, bundle::join_ints(l.loc.index),
                     tier_name(l.loc.tier), *r.first_differ + 1, r.checked);
    s += values_text(l);
    s += witness_text(l);
    s += fmt::format("  at the witness: reference {} vs candidate {} (fp64), {} vs {} (fp32)\n", l.ref_value, l.cand_value,
                     l.ref_value_f32, l.cand_value_f32);
    if (r.replay && r.replay->status == "replayed") {
      const Replay& p = *r.replay;
      s += fmt::format("  replayed on the {}: reference {} vs candidate {}, difference {:.6g} ({} allowed {:.6g}){}\n",
                       p.device == "cuda" ? "GPU" : "CPU", p.reference, p.candidate, p.difference,
                       p.exceeds ? "beyond the" : "within the", p.allowed,
                       p.carry_residual >= 0 ? fmt::format("; witness carried back through the trimmed prefix "
                                                           "(max residual {:.3g})", p.carry_residual)
                                             : "");
    }
    s += fmt::format("  evidence: {}\n", evidence_sentence(r));
  }
  if (r.stage == "trace" || r.evidence == "launch-config") s += fmt::format("  evidence: {}\n", evidence_sentence(r));
  for (const auto& n : r.notes) s += "  note: " + n + "\n";
  s += fmt::format("  {} kernel launch(es) executed, {} prefix op(s) trimmed, {} location(s) checked{}, {} solver call(s), "
                   "{:.2f} s{}\n",
                   r.kernels, r.prefix_trimmed, r.checked,
                   // deduplication happens only where classes are counted (--full)
                   r.classes ? fmt::format(" in {} class(es) up to renaming of input elements{}", r.classes,
                                           r.deduplicated ? fmt::format(", {} decided by an earlier one of their class",
                                                                        r.deduplicated)
                                                          : "")
                             : "",
                   r.solver_calls, r.seconds, r.jobs > 1 ? fmt::format(" ({} workers)", r.jobs) : "");
  for (const auto& o : r.outputs)
    if (o.symbolic)
      s += fmt::format("  {}: all {} locations decided at once at a symbolic location ({}), {} of them also one by "
                       "one; the reference gives {}\n",
                       o.ref_name, o.numel, o.symbolic_how, o.numel - o.symbolic_only, o.symbolic_expr);
  if (r.projected_full_seconds > 0)
    s += fmt::format("  the remaining locations would take about {:.0f} s more\n", r.projected_full_seconds);
  if (verbose)
    for (const auto& l : r.locations) {
      s += fmt::format("    [{}] {} {} {:.2f} ms\n", bundle::join_ints(l.loc.index), tier_name(l.loc.tier),
                       smt::verdict_name(l.verdict), l.ms);
      if (l.verdict != smt::Verdict::Differ && !l.ref_expr.empty())  // undecided: both sides, abbreviated
        s += fmt::format("      {}\n      reference = {}\n      candidate = {}\n", l.reason, l.ref_expr, l.cand_expr);
    }
  return s;
}

namespace {
// The verdict's fields: what the verdict rules (apply_replay, apply_state) change.
void put_verdict(nlohmann::json& j, const Report& r) {
  using nlohmann::json;
  j["outcome"] = std::string(outcome_name(r.outcome));
  j["exit_code"] = exit_code(r.outcome);
  j["reason"] = r.reason;
  j["evidence"] = r.evidence;
  j["notes"] = r.notes;
  if (r.replay) {
    json p = json::parse(r.replay->json, nullptr, false);
    j["replay"] = p.is_discarded() ? json{{"status", r.replay->status}, {"message", r.replay->message}} : p;
  }
  if (!r.stage.empty()) j["stage"] = r.stage;
  if (!r.hard_stop.empty()) j["hard_stop"] = r.hard_stop;
  if (r.function_outcome) j["function_outcome"] = std::string(outcome_name(*r.function_outcome));
  if (r.state) {
    json p = json::parse(r.state->json, nullptr, false);
    j["state"] = p.is_discarded() ? json{{"verdict", r.state->verdict}, {"reason", r.state->reason}} : p;
  }
}

}  // namespace

std::string to_json(const Report& r, const std::string* witness) {
  using nlohmann::json;
  json j;
  put_verdict(j, r);
  j["checked"] = r.checked;
  j["equal"] = r.equal;
  j["equal_by"] = {{"exact", r.equal_exact}, {"within_tolerance", r.equal_within_tolerance},
                   {"modulo_approximation", r.equal_modulo_approximation}};
  j["approximations"] = r.approximations;
  j["proof"] = proof_kind(r);
  j["undecided_safety"] = r.undecided_safety;
  j["total_locations"] = r.total_locations;
  j["kernels"] = r.kernels;
  j["prefix_trimmed"] = r.prefix_trimmed;
  j["seconds"] = r.seconds;
  j["lower_seconds"] = r.lower_seconds;
  j["search_seconds"] = r.search_seconds;
  json stages = json::array();
  for (const auto& [name, sec] : r.stage_seconds) stages.push_back({{"stage", name}, {"seconds", sec}});
  j["stage_seconds"] = stages;
  j["solver_calls"] = r.solver_calls;
  j["deduplicated"] = r.deduplicated;
  j["classes"] = r.classes;
  j["symbolic_locations"] = r.symbolic_locations;
  j["jobs"] = r.jobs;
  if (r.projected_full_seconds > 0) j["projected_full_seconds"] = r.projected_full_seconds;
  json outs = json::array();
  for (const auto& o : r.outputs) {
    json x = {{"reference", o.ref_name}, {"candidate", o.cand_name}, {"shape", o.shape}};
    if (!o.symbolic_how.empty())
      x["symbolic_location"] = {{"equal", o.symbolic}, {"how", o.symbolic_how}, {"expression", o.symbolic_expr},
                                {"nodes", o.symbolic_nodes}, {"locations_only_so", o.symbolic_only},
                                {"ms", o.symbolic_ms}};
    outs.push_back(std::move(x));
  }
  j["outputs"] = outs;
  json fs = json::array();
  for (const auto& f : r.findings) {
    json x = {{"kind", f.kind}, {"kernel", f.kernel}, {"ptx_line", f.where.ptx_line}, {"source", f.where.source},
              {"message", f.message}};
    if (f.thread) x["thread"] = f.thread->str();
    if (f.other.ptx_line) x["other_ptx_line"] = f.other.ptx_line;
    if (f.other_thread) x["other_thread"] = f.other_thread->str();
    fs.push_back(x);
  }
  j["findings"] = fs;
  json locs = json::array();
  for (const auto& l : r.locations) {
    json x = {{"output", l.loc.output}, {"index", l.loc.index}, {"tier", std::string(tier_name(l.loc.tier))},
              {"verdict", std::string(smt::verdict_name(l.verdict))}, {"stage", std::string(smt::stage_name(l.stage))},
              {"ms", l.ms}, {"ref_nodes", l.ref_nodes}, {"cand_nodes", l.cand_nodes}};
    if (l.deduplicated) x["deduplicated"] = true;
    if (l.numbers_differ) x["numbers_differ"] = true;
    if (!l.reason.empty()) x["reason"] = l.reason;
    if (!l.ref_expr.empty()) {  // a difference, or what stayed undecided
      x["reference"] = l.ref_expr;
      x["candidate"] = l.cand_expr;
    }
    if (!l.ref_part.empty())  // the values for people: see values_text
      x["summary"] = {{"shared", l.shared_expr}, {"reference", l.ref_part}, {"candidate", l.cand_part},
                      {"note", l.parts_note}};
    if (l.verdict == smt::Verdict::Differ) {
      json w = json::object();
      for (const auto& v : l.witness) w[v.name] = v.value;
      x["witness"] = w;
      x["values_f64"] = {l.ref_value, l.cand_value};
      x["values_f32"] = {l.ref_value_f32, l.cand_value_f32};
      x["confirmed_f32"] = l.confirmed_f32;
      if (l.sampled) x["sampled"] = json::parse(sampled_json(*l.sampled));
    }
    locs.push_back(x);
  }
  j["locations"] = locs;
  if (r.locations_omitted) j["locations_omitted"] = r.locations_omitted;  // equal locations not listed
  j["tolerance"] = {{"atol", r.tolerance.atol}, {"rtol", r.tolerance.rtol}, {"bound", r.tolerance.bound}};
  if (!r.first_differ) return j.dump(2);
  // The witness goes in as witness_json wrote it: parsing ~10^6 leaves into json objects and writing
  // them again costs more than the check's grace leaves for the report.
  constexpr const char* kSlot = "@dirigo-report-witness@";
  j["first_differ"] = *r.first_differ;
  j["witness"] = kSlot;
  std::string doc = j.dump(2);
  std::string slot = json(kSlot).dump();
  doc.replace(doc.find(slot), slot.size(), witness ? *witness : witness_json(r));
  return doc;
}

Report candidate_crash(const std::string& message) { return candidate_failure(message, "crash-gpu"); }

Report candidate_failure(const std::string& message, const std::string& evidence) {
  Report r;
  r.outcome = Outcome::Bug;
  r.stage = "trace";
  r.evidence = evidence;
  if (evidence == "crash-gpu") {
    r.reason = "the candidate crashed on the GPU while being traced, where the reference ran: " + message;
    r.notes.push_back("no bundle: run compute-sanitizer on the candidate, or `dirigo execute` on its PTX, for the "
                      "faulting access");
  } else {
    r.reason = "the candidate failed where the reference ran: " + message;
  }
  return r;
}

Report trace_unsupported(const std::string& message) {
  Report r;
  r.outcome = Outcome::Unsupported;
  r.stage = "trace";
  r.reason = message;
  return r;
}

namespace {
Outcome outcome_of(const std::string& name) {
  for (Outcome o : {Outcome::Bug, Outcome::Suspect, Outcome::Checked, Outcome::Verified, Outcome::Timeout,
                    Outcome::Unsupported, Outcome::Error})
    if (outcome_name(o) == name) return o;
  throw std::runtime_error("report: unknown outcome '" + name + "'");
}
}  // namespace

std::string fold_answers(const std::string& report_json, const std::string& replay_json,
                         const std::string& state_json) {
  using nlohmann::json;
  json j = json::parse(report_json);
  // What the rules read: the verdict's fields, whether Execute found anything, and the first differing
  // location's output and index (a replay's reason names it).
  Report r;
  r.outcome = outcome_of(j.at("outcome").get<std::string>());
  r.reason = j.value("reason", "");
  r.evidence = j.value("evidence", "");
  r.stage = j.value("stage", "");
  if (j.contains("function_outcome")) r.function_outcome = outcome_of(j["function_outcome"].get<std::string>());
  if (j.contains("notes")) r.notes = j["notes"].get<std::vector<std::string>>();
  if (j.contains("findings")) r.findings.resize(j["findings"].size());
  if (j.contains("first_differ") && j.contains("locations") && j.contains("outputs")) {
    size_t fd = j["first_differ"].get<size_t>();
    const json& loc = j["locations"].at(fd);
    r.first_differ = fd;
    r.locations.resize(fd + 1);
    r.locations[fd].loc.output = loc.at("output").get<size_t>();
    r.locations[fd].loc.index = loc.at("index").get<std::vector<int64_t>>();
    for (const json& o : j["outputs"]) r.outputs.emplace_back().ref_name = o.at("reference").get<std::string>();
  }
  if (j.contains("replay")) r.replay = parse_replay(j["replay"].dump());
  if (j.contains("state")) r.state = parse_state(j["state"].dump());
  if (!replay_json.empty()) apply_replay(r, parse_replay(replay_json));
  if (!state_json.empty()) apply_state(r, parse_state(state_json));
  put_verdict(j, r);
  return j.dump(2);
}

}  // namespace dirigo::check
