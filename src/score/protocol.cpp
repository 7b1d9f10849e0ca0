#include "score/protocol.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dirigo::score {
namespace {

// Built-in protocols, kept as data and read by the same parser as --protocols files.
constexpr const char* kBuiltin = R"json([
  {"name": "kernelbench_v0", "description": "KernelBench check: 5 randn inputs, atol = rtol = 1e-2",
   "tol": 1e-2, "inputs": [{"distribution": "kernelbench_randn", "draws": 5}]},
  {"name": "kernelbench_fp32", "description": "KernelBench's current fp32 check: 5 randn inputs, 1e-4",
   "tol": 1e-4, "inputs": [{"distribution": "kernelbench_randn", "draws": 5}]},
  {"name": "hardened_inputs", "description": "the 5 randn inputs plus every hardened distribution, 1e-2",
   "tol": 1e-2, "inputs": [{"distribution": "kernelbench_randn", "draws": 5}, {"family": "hardened"}]},
  {"name": "hardened", "description": "the 5 randn inputs plus every hardened distribution, 1e-4",
   "tol": 1e-4, "inputs": [{"distribution": "kernelbench_randn", "draws": 5}, {"family": "hardened"}]},
  {"name": "fuzz", "description": "every fuzz draw, 1e-2", "tol": 1e-2, "inputs": [{"family": "fuzz"}]},
  {"name": "kernelbench_verified", "description": "KernelBench-Verified's hidden inputs: four distributions (randn at unseen seeds, uniform01, positive, large) against the fp32 reference, atol = rtol = 1e-3",
   "tol": 1e-3, "reference": "fp32", "inputs": [{"distribution": "randn"}, {"distribution": "uniform01"},
                                                {"distribution": "positive"}, {"distribution": "large"}]},
  {"name": "dirigo", "description": "dirigo check on the mutant: a kill iff BUG", "verdicts": ["BUG"]},
  {"name": "dirigo_suspect", "description": "dirigo check: a kill iff BUG or SUSPECT", "verdicts": ["BUG", "SUSPECT"]}
])json";

double tolerance_of(const nlohmann::json& j, const std::string& name) {
  bool has_tol = j.contains("tol"), has_a = j.contains("atol"), has_r = j.contains("rtol");
  if (has_tol && (has_a || has_r)) throw std::runtime_error("protocol " + name + ": give tol or atol/rtol, not both");
  double tol;
  if (has_tol) {
    tol = j.at("tol").get<double>();
  } else if (has_a || has_r) {
    if (!(has_a && has_r)) throw std::runtime_error("protocol " + name + ": atol and rtol come together");
    double a = j.at("atol").get<double>(), r = j.at("rtol").get<double>();
    // The store keeps t_eq = max|out-ref|/(1+|ref|), which decides allclose only when atol = rtol.
    if (a != r) throw std::runtime_error("protocol " + name + ": atol != rtol cannot be decided from t_eq");
    tol = a;
  } else {
    throw std::runtime_error("protocol " + name + ": no tolerance (tol, or atol = rtol)");
  }
  if (!(tol >= 0) || !std::isfinite(tol)) throw std::runtime_error("protocol " + name + ": tolerance must be >= 0");
  return tol;
}

void check_keys(const nlohmann::json& j, const std::set<std::string>& allowed, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error(where + ": expected a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!allowed.count(it.key())) throw std::runtime_error(where + ": unknown key '" + it.key() + "'");
}

Protocol parse_one(const nlohmann::json& j) {
  check_keys(j, {"name", "description", "verdicts", "inputs", "tol", "atol", "rtol", "gate", "reference"}, "protocol");
  if (!j.contains("name") || !j.at("name").is_string() || j.at("name").get<std::string>().empty())
    throw std::runtime_error("protocol without a name");
  Protocol p;
  p.name = j.at("name").get<std::string>();
  p.description = j.value("description", "");
  p.gate = j.value("gate", true);
  if (j.contains("verdicts")) {
    if (j.contains("inputs") || j.contains("tol") || j.contains("atol") || j.contains("rtol") || j.contains("reference"))
      throw std::runtime_error("protocol " + p.name + ": a verdict protocol takes no inputs, tolerance or reference");
    p.dirigo = true;
    p.verdicts = j.at("verdicts").get<std::vector<std::string>>();
    if (p.verdicts.empty()) throw std::runtime_error("protocol " + p.name + ": empty \"verdicts\"");
    return p;
  }
  if (!j.contains("inputs") || !j.at("inputs").is_array() || j.at("inputs").empty())
    throw std::runtime_error("protocol " + p.name + ": needs a non-empty \"inputs\" array or \"verdicts\"");
  p.tol = tolerance_of(j, p.name);
  std::string ref = j.value("reference", "fp64");
  if (ref != "fp64" && ref != "fp32") throw std::runtime_error("protocol " + p.name + ": reference must be fp64 or fp32");
  p.fp32_reference = ref == "fp32";
  for (const auto& s : j.at("inputs")) {
    check_keys(s, {"distribution", "family", "draws"}, "protocol " + p.name + " input");
    InputSelector sel;
    sel.distribution = s.value("distribution", "");
    sel.family = s.value("family", "");
    sel.draws = s.value("draws", 0);
    if ((sel.distribution.empty() && sel.family.empty()) || sel.draws < 0)
      throw std::runtime_error("protocol " + p.name + ": an input selector needs a distribution or a family, draws >= 0");
    p.inputs.push_back(sel);
  }
  return p;
}

}  // namespace

bool InputSelector::matches(const Input& input) const {
  if (!family.empty() && input.family != family) return false;
  if (distribution.empty()) return true;
  if (distribution.back() == '*')
    return input.distribution.compare(0, distribution.size() - 1, distribution, 0, distribution.size() - 1) == 0;
  return input.distribution == distribution;
}

const char* builtin_protocols_json() { return kBuiltin; }

std::vector<Protocol> builtin_protocols() { return parse_protocols(kBuiltin); }

std::vector<Protocol> parse_protocols(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("protocols: not JSON: ") + e.what());
  }
  if (!j.is_array()) throw std::runtime_error("protocols: expected a JSON array of protocols");
  std::vector<Protocol> out;
  std::set<std::string> names;
  for (const auto& e : j) {
    try {
      out.push_back(parse_one(e));
    } catch (const nlohmann::json::exception& ex) {
      throw std::runtime_error(std::string("protocol: wrong type: ") + ex.what());
    }
    if (!names.insert(out.back().name).second) throw std::runtime_error("protocol " + out.back().name + " given twice");
  }
  return out;
}

std::vector<Protocol> select_protocols(const std::vector<Protocol>& all, const std::string& names) {
  if (names.empty()) return all;
  std::vector<Protocol> out;
  size_t b = 0;
  while (b <= names.size()) {
    size_t e = std::min(names.find(',', b), names.size());
    std::string n = names.substr(b, e - b);
    b = e + 1;
    if (n.empty()) continue;
    auto it = std::find_if(all.begin(), all.end(), [&](const Protocol& p) { return p.name == n; });
    if (it == all.end()) throw std::runtime_error("unknown protocol '" + n + "'");
    out.push_back(*it);
  }
  return out;
}

std::vector<size_t> selected_inputs(const Protocol& p, const Problem& problem) {
  std::set<size_t> chosen;  // an input matched by two selectors counts once
  for (const auto& sel : p.inputs) {
    std::vector<size_t> matching;
    for (size_t i = 0; i < problem.inputs.size(); ++i)
      if (sel.matches(problem.inputs[i])) matching.push_back(i);
    std::stable_sort(matching.begin(), matching.end(),
                     [&](size_t a, size_t b) { return problem.inputs[a].seed < problem.inputs[b].seed; });
    if (sel.draws > 0 && matching.size() > static_cast<size_t>(sel.draws)) matching.resize(sel.draws);
    chosen.insert(matching.begin(), matching.end());
  }
  return {chosen.begin(), chosen.end()};
}

bool valid_input(const Problem& problem, size_t input, double tol, bool fp32_reference) {
  return passes(problem.substrate.at(input), tol, fp32_reference);
}

bool fails(const Protocol& p, const Outcome& o) { return score::fails(o, p.tol, p.fp32_reference); }

std::vector<size_t> admitted_inputs(const Protocol& p, const Problem& problem) {
  std::vector<size_t> out;
  for (size_t i : selected_inputs(p, problem))
    if (!p.gate || valid_input(problem, i, p.tol, p.fp32_reference)) out.push_back(i);
  return out;
}

Protocol harness_protocol(const std::string& name) {
  Protocol p;
  p.name = name;
  p.description = "harness " + name + " run on every mutant: a kill iff it rejects the mutant";
  p.dirigo = true;
  p.harness = name;
  p.verdicts = {"reject"};
  return p;
}

const std::string& verdict_of(const Protocol& p, const Problem& problem, size_t m) {
  static const std::string none;
  if (p.harness.empty()) return problem.mutants.at(m).verdict;
  const auto& h = problem.mutants.at(m).harness;
  auto it = h.find(p.harness);
  return it == h.end() ? none : it->second;
}

bool rejects_substrate(const Protocol& p, const Problem& problem) {
  if (!p.dirigo) return false;
  if (!p.harness.empty()) {  // a harness counts only where it accepts the correct program
    auto it = problem.harness_substrate.find(p.harness);
    return it == problem.harness_substrate.end() || it->second != "accept";
  }
  return std::find(p.verdicts.begin(), p.verdicts.end(), problem.substrate_verdict) != p.verdicts.end();
}

bool detects(const Protocol& p, const Problem& problem, size_t m, const std::vector<size_t>& admitted) {
  if (p.dirigo) {
    if (rejects_substrate(p, problem)) return false;  // the gate: it rejects the correct program too
    const std::string& v = verdict_of(p, problem, m);
    return std::find(p.verdicts.begin(), p.verdicts.end(), v) != p.verdicts.end();
  }
  for (size_t i : admitted)
    if (fails(p, problem.runs.at(m).at(i))) return true;
  return false;
}

bool complete(const Protocol& p, const Problem& problem, size_t m, const std::vector<size_t>& selected) {
  if (p.dirigo) return true;
  for (size_t i : selected)
    if (problem.substrate.at(i).status == Status::NotRun || problem.runs.at(m).at(i).status == Status::NotRun)
      return false;
  return true;
}

bool detects(const Protocol& p, const Problem& problem, size_t m) {
  return detects(p, problem, m, p.dirigo ? std::vector<size_t>{} : admitted_inputs(p, problem));
}

}  // namespace dirigo::score
