// Witness documents (dirigo-witness, docs/check.md) and the verdict rules for their replay.
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "check/check.h"

#include "smt/falsify.h"

namespace dirigo::check {

namespace {
using nlohmann::json;

json number(double v) {  // JSON has no NaN/Infinity: the bundle format's spelling
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double read_number(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    auto s = j.get<std::string>();
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  throw std::runtime_error("not a number: " + j.dump());
}

json leaf_json(const WitnessLeaf& w, bool with_value) {
  json x = {{"input", w.input}, {"kind", w.kind}};
  if (!w.candidate_input.empty()) x["candidate_input"] = w.candidate_input;
  if (with_value) {
    x["index"] = w.index;
    x["value"] = number(w.value);
  }
  if (w.kind == "trimmed") {
    x["op"] = w.op;
    x["tensor"] = w.tensor;
    x["output"] = w.output;
    x["shape"] = w.shape;
    if (!w.aten.empty()) x["aten"] = w.aten;
  }
  if (!w.program.empty()) x["program"] = w.program;
  return x;
}
}  // namespace

std::string sampled_json(const LocationResult::SampledPoint& s) {
  json j = {{"seed", s.seed},
            {"point", s.point},
            {"bound", smt::point_bound(s.point, s.bound)},
            {"nonnegative", smt::point_nonnegative(s.point)},
            {"distribution", smt::distribution_name(smt::point_distribution(s.point))},
            {"ladder_bound", s.bound},
            {"trimmed", s.trimmed},  // drawn for the prefix's results: no input assignment is known to give them
            {"draw", "element i of shared input NAME: u = splitmix64(splitmix64(seed * 1000003 + point) ^ "
                     "splitmix64(fnv1a64('in:' + NAME) % 2^24 << 40 ^ i)) >> 11 (53 bits); value = u * 2^-53 * bound, "
                     "or (2 * u * 2^-53 - 1) * bound when not nonnegative; distribution normal: with u2 = "
                     "splitmix64(h ^ 0x5851f42d4c957f2d) >> 11 for h the hash u is taken from, value = "
                     "sqrt(-2 log(1 - u * 2^-53)) * cos(2 pi u2 * 2^-53) * bound, its absolute value when "
                     "nonnegative"}};
  return j.dump();
}

std::string witness_json(const Report& r, const WitnessSource& src) {
  if (!r.first_differ) return "";
  const LocationResult& l = r.locations.at(*r.first_differ);
  const OutputInfo& out = r.outputs.at(l.loc.output);
  auto opt_str = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  json j = {{"format", "dirigo-witness"},
            {"version", 1},
            {"ref", opt_str(src.ref)},
            {"new", opt_str(src.cand)},
            {"bundle", opt_str(src.bundle)},
            {"init_seed", src.init_seed},
            {"input_seed", src.input_seed ? json(*src.input_seed) : json(nullptr)},
            {"tolerance", {{"atol", r.tolerance.atol}, {"rtol", r.tolerance.rtol}, {"bound", r.tolerance.bound}}},
            {"output", {{"index", l.loc.output}, {"reference", out.ref_name}, {"candidate", out.cand_name}, {"shape", out.shape}}},
            {"location", l.loc.index},
            {"flat", l.loc.flat},
            {"symbolic", {{"reference", number(l.ref_value_f32)}, {"candidate", number(l.cand_value_f32)},
                          {"reference_f64", number(l.ref_value)}, {"candidate_f64", number(l.cand_value)},
                          {"reference_expr", l.ref_expr}, {"candidate_expr", l.cand_expr}}},
            {"leaves_complete", !l.sampled}};
  if (l.sampled) j["sampled"] = json::parse(sampled_json(*l.sampled));  // every input regenerable, no leaf list
  json inputs = json::array();
  for (const auto& w : r.shared_inputs) inputs.push_back(leaf_json(w, false));
  j["inputs"] = std::move(inputs);
  // The leaves are written as text, one per line, not as json objects: a giant location has ~10^6 of
  // them, whose objects took longer than the check's grace (dev pair 319: hard stop in 'report').
  constexpr const char* kSlot = "@dirigo-witness-leaves@";
  j["leaves"] = kSlot;
  std::string doc = j.dump(1);
  fmt::memory_buffer text;
  auto to = std::back_inserter(text);
  std::unordered_map<std::string, std::string> quoted;  // names, quoted once (10^6 leaves, a few names)
  auto q = [&](const std::string& name) -> const std::string& {
    auto [it, fresh] = quoted.try_emplace(name);
    if (fresh) it->second = json(name).dump();
    return it->second;
  };
  fmt::format_to(to, "[");
  for (size_t k = 0; k < l.leaves.size(); ++k) {
    const WitnessLeaf& w = l.leaves[k];
    fmt::format_to(to, "{}{{", k ? ",\n  " : "\n  ");
    if (!w.candidate_input.empty()) fmt::format_to(to, R"("candidate_input":{},)", q(w.candidate_input));
    fmt::format_to(to, R"("index":[{}],"input":{},"kind":{},)", fmt::join(w.index, ","), q(w.input), q(w.kind));
    if (w.kind == "trimmed") {  // as leaf_json writes them
      fmt::format_to(to, R"("op":{},"tensor":{},"output":{},"shape":[{}],)", w.op, q(w.tensor), w.output,
                     fmt::join(w.shape, ","));
      if (!w.aten.empty()) fmt::format_to(to, R"("aten":{},)", q(w.aten));
    }
    if (!w.program.empty()) fmt::format_to(to, R"("program":{},)", q(w.program));
    if (std::isfinite(w.value)) fmt::format_to(to, R"("value":{}}})", w.value);
    else fmt::format_to(to, R"("value":{}}})", number(w.value).dump());
  }
  fmt::format_to(to, "{}", l.leaves.empty() ? "]" : "\n ]");
  doc.replace(doc.find(json(kSlot).dump()), json(kSlot).dump().size(), std::string_view(text.data(), text.size()));
  return doc;
}

Replay parse_replay(const std::string& text) {
  Replay rp;
  rp.json = text;
  try {
    json j = json::parse(text);
    if (j.value("format", "") != "dirigo-replay") throw std::runtime_error("not a dirigo-replay answer");
    rp.status = j.at("status").get<std::string>();
    rp.device = j.value("device", "");
    rp.message = j.value("message", "");
    if (rp.status == "replayed") {
      rp.evidence = j.at("evidence").get<std::string>();
      rp.reference = read_number(j.at("reference"));
      rp.candidate = read_number(j.at("candidate"));
      rp.difference = read_number(j.at("difference"));
      rp.allowed = read_number(j.at("allowed"));
      rp.exceeds = j.at("exceeds").get<bool>();
      if (j.contains("carried_back") && j["carried_back"].is_object())
        rp.carry_residual = read_number(j["carried_back"].at("max_residual"));
    }
  } catch (const std::exception& e) {
    rp.status = "error";
    rp.message = fmt::format("malformed replay answer ({}): {}", e.what(), text.substr(0, 200));
  }
  return rp;
}

void apply_replay(Report& r, Replay rp) {
  if (!r.first_differ || (r.outcome != Outcome::Bug && r.outcome != Outcome::Suspect) || !r.findings.empty()) return;
  const LocationResult& l = r.locations.at(*r.first_differ);
  std::string where = fmt::format("{}[{}]", r.outputs.at(l.loc.output).ref_name, fmt::join(l.loc.index, ", "));
  if (rp.status == "replayed") {
    if (rp.exceeds) {
      r.outcome = Outcome::Bug;
      r.evidence = rp.evidence;
      r.reason = fmt::format("{} differs: the real programs give reference {} vs candidate {} at the witness "
                             "(difference {:.6g} > allowed {:.6g})", where, rp.reference, rp.candidate,
                             rp.difference, rp.allowed);
    } else {
      r.outcome = Outcome::Suspect;
      r.evidence.clear();
      r.reason = fmt::format("{}: the symbolic values differ, but replaying the witness on the real programs "
                             "gives reference {} vs candidate {} (difference {:.6g} within allowed {:.6g})",
                             where, rp.reference, rp.candidate, rp.difference, rp.allowed);
    }
  } else if (r.outcome == Outcome::Bug) {
    r.notes.push_back("replay impossible (" + rp.status + "): " + rp.message + "; evidence is the fp32 evaluation");
  } else {
    r.notes.push_back("replay impossible (" + rp.status + "): " + rp.message);
  }
  r.replay = std::move(rp);
}

}  // namespace dirigo::check
