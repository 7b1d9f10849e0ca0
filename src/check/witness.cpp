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

// Names quoted as JSON strings once each: a witness has up to ~10^6 leaves over a few tensors.
class Quoted {
 public:
  const std::string& operator()(const std::string& name) {
    auto [it, fresh] = quoted_.try_emplace(name);
    if (fresh) it->second = json(name).dump();
    return it->second;
  }

 private:
  std::unordered_map<std::string, std::string> quoted_;
};

// One leaf as a JSON object, written as text: building json objects for 10^6 leaves costs more than
// the check's grace leaves for the report.
void write_leaf(fmt::memory_buffer& out, const WitnessLeaf& w, bool with_value, Quoted& q) {
  auto to = std::back_inserter(out);
  fmt::format_to(to, "{{");
  if (!w.candidate_input.empty()) fmt::format_to(to, R"("candidate_input":{},)", q(w.candidate_input));
  if (with_value) fmt::format_to(to, R"("index":[{}],)", fmt::join(w.index, ","));
  fmt::format_to(to, R"("input":{},"kind":{})", q(w.input), q(w.kind));
  if (w.kind == "trimmed") {
    fmt::format_to(to, R"(,"op":{},"tensor":{},"output":{},"shape":[{}])", w.op, q(w.tensor), w.output,
                   fmt::join(w.shape, ","));
    if (!w.aten.empty()) fmt::format_to(to, R"(,"aten":{})", q(w.aten));
  }
  if (!w.program.empty()) fmt::format_to(to, R"(,"program":{})", q(w.program));
  if (with_value) {
    if (std::isfinite(w.value)) fmt::format_to(to, R"(,"value":{})", w.value);
    else fmt::format_to(to, R"(,"value":{})", number(w.value).dump());
  }
  fmt::format_to(to, "}}");
}

// A JSON array of leaves, one per line.
std::string leaves_text(const std::vector<WitnessLeaf>& leaves, bool with_value) {
  fmt::memory_buffer out;
  Quoted q;
  out.push_back('[');
  for (size_t k = 0; k < leaves.size(); ++k) {
    fmt::format_to(std::back_inserter(out), "{}", k ? ",\n  " : "\n  ");
    write_leaf(out, leaves[k], with_value, q);
  }
  fmt::format_to(std::back_inserter(out), "{}", leaves.empty() ? "]" : "\n ]");
  return fmt::to_string(out);
}

// `doc` with the JSON string `slot` (a placeholder put in its place) replaced by `text`.
void splice(std::string& doc, const char* slot, std::string_view text) {
  std::string quoted = json(slot).dump();
  doc.replace(doc.find(quoted), quoted.size(), text);
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
            {"zeroed", s.zeroed},    // 0 in every element instead of drawn
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
  else if (l.others_zero || !l.fills.empty()) j["others"] = "zero";
  if (!l.sampled && !l.fills.empty()) {
    json fills = json::array();
    for (const WitnessLeaf& f : l.fills)
      fills.push_back({{"kind", f.kind}, {"input", f.input}, {"program", f.program}, {"value", f.value}});
    j["fill"] = fills;
  }
  constexpr const char* kLeaves = "@dirigo-witness-leaves@";
  constexpr const char* kInputs = "@dirigo-witness-inputs@";
  j["leaves"] = kLeaves;
  j["inputs"] = kInputs;
  std::string doc = j.dump(1);
  splice(doc, kLeaves, leaves_text(l.leaves, true));
  splice(doc, kInputs, leaves_text(r.shared_inputs, false));
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
      rp.inputs_from = j.value("inputs_from", "");
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
    std::string at = rp.inputs_from.empty() ? "the witness" : rp.inputs_from;
    if (rp.exceeds) {
      r.outcome = Outcome::Bug;
      r.evidence = rp.evidence;
      r.reason = fmt::format("{} differs: the real programs give reference {} vs candidate {} at {} "
                             "(difference {:.6g} > allowed {:.6g})", where, rp.reference, rp.candidate, at,
                             rp.difference, rp.allowed);
    } else {
      r.outcome = Outcome::Suspect;
      r.evidence.clear();
      r.reason = fmt::format("{}: the symbolic values differ, but the real programs give reference {} vs candidate "
                             "{} at {} (difference {:.6g} within allowed {:.6g})",
                             where, rp.reference, rp.candidate, at, rp.difference, rp.allowed);
    }
  } else if (r.outcome == Outcome::Bug) {
    r.notes.push_back("replay impossible (" + rp.status + "): " + rp.message + "; evidence is the fp32 evaluation");
  } else {
    r.notes.push_back("replay impossible (" + rp.status + "): " + rp.message);
  }
  r.replay = std::move(rp);
}

}  // namespace dirigo::check
