// The state stage's answer (python -m dirigo.state) and its verdict rules (docs/check.md "State").
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "check/check.h"

namespace dirigo::check {

StateFinding parse_state(const std::string& text) {
  StateFinding s;
  s.json = text;
  try {
    auto j = nlohmann::json::parse(text);
    if (j.value("format", "") != "dirigo-state") throw std::runtime_error("not a dirigo-state answer");
    s.verdict = j.at("verdict").get<std::string>();
    if (s.verdict != "BUG" && s.verdict != "SUSPECT" && s.verdict != "NONE" && s.verdict != "UNKNOWN")
      throw std::runtime_error("unknown verdict " + s.verdict);
    s.evidence = j.value("evidence", "");
    s.reason = j.value("reason", "");
    if (s.verdict == "BUG" && s.evidence.empty()) throw std::runtime_error("a BUG without evidence");
  } catch (const std::exception& e) {
    s.verdict = "error";
    s.evidence.clear();
    s.reason = fmt::format("malformed state answer ({}): {}", e.what(), text.substr(0, 200));
  }
  return s;
}

void apply_state(Report& r, StateFinding s) {
  // A BUG observed on the real programs with equal state (python -m dirigo.state --observe) is the
  // observation stage's, not a state difference.
  std::string stage = s.evidence.rfind("observed-", 0) == 0 ? "observe" : "state";
  auto take = [&](Outcome o, std::string evidence) {
    r.function_outcome = r.outcome;
    r.outcome = o;
    r.evidence = std::move(evidence);
    r.stage = stage;
    r.reason = stage + ": " + s.reason;
  };
  bool function_bug = r.outcome == Outcome::Bug;
  if (s.verdict == "BUG" && !function_bug) {
    take(Outcome::Bug, s.evidence);
  } else if (s.verdict == "SUSPECT" && (r.outcome == Outcome::Checked || r.outcome == Outcome::Verified ||
                                        r.outcome == Outcome::Timeout || r.outcome == Outcome::Suspect)) {
    if (r.outcome != Outcome::Suspect) take(Outcome::Suspect, "");
    else r.notes.push_back("state: " + s.reason);
  } else if (s.verdict == "error" || s.verdict == "UNKNOWN") {
    r.notes.push_back("state not compared: " + s.reason);
  } else if (!s.reason.empty()) {
    r.notes.push_back(stage + ": " + s.reason);
  }
  r.state = std::move(s);
}

}  // namespace dirigo::check
