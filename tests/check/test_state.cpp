// The state stage's answer (python -m dirigo.state) and its verdict rules (docs/check.md "State").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "check/check.h"

using namespace dirigo;
using nlohmann::json;

namespace {
check::StateFinding answer(const std::string& verdict, const std::string& evidence = "") {
  json pairs = json::array({json{{"reference", "linear.weight"}, {"candidate", "weight"}, {"equal", false},
                                 {"shape", {16, 32}}, {"max_abs_diff", 2.9}, {"elements_differing", 512},
                                 {"reference_stats", {{"samples", {0.1, 0.2}}}},
                                 {"candidate_stats", {{"samples", {1.9, -2.1}}}},
                                 {"likely_cause", "the candidate draws its values from torch.randn"}}});
  return check::parse_state(json{{"format", "dirigo-state"}, {"version", 1}, {"verdict", verdict},
                                 {"evidence", evidence}, {"reason", "weights differ"}, {"pairs", pairs},
                                 {"differing", json::array({json::array({"linear.weight", "weight"})})}}
                                .dump());
}
check::Report report(check::Outcome o) {
  check::Report r;
  r.outcome = o;
  r.reason = "function verdict";
  return r;
}
}  // namespace

TEST(State, BugOverridesCheckedKeepingTheFunctionVerdict) {
  auto r = report(check::Outcome::Checked);
  check::apply_state(r, answer("BUG", "state-replay-gpu"));
  EXPECT_EQ(r.outcome, check::Outcome::Bug);
  EXPECT_EQ(r.stage, "state");
  EXPECT_EQ(r.evidence, "state-replay-gpu");
  ASSERT_TRUE(r.function_outcome);
  EXPECT_EQ(*r.function_outcome, check::Outcome::Checked);
  json j = json::parse(check::to_json(r));
  EXPECT_EQ(j["stage"], "state");
  EXPECT_EQ(j["function_outcome"], "CHECKED");
  EXPECT_EQ(j["state"]["differing"][0][1], "weight");
  std::string text = check::to_text(r);
  EXPECT_NE(text.find("state differs: linear.weight ~ weight"), std::string::npos) << text;
  EXPECT_NE(text.find("torch.randn"), std::string::npos) << text;
  EXPECT_NE(text.find("the function check alone: CHECKED"), std::string::npos) << text;
}

TEST(State, FunctionBugIsKeptAndTheStateAttached) {
  auto r = report(check::Outcome::Bug);
  r.evidence = "replay-gpu";
  check::apply_state(r, answer("BUG", "state-replay-gpu"));
  EXPECT_EQ(r.outcome, check::Outcome::Bug);
  EXPECT_EQ(r.evidence, "replay-gpu");
  EXPECT_TRUE(r.stage.empty());
  EXPECT_TRUE(r.state);
}

TEST(State, SuspectOverridesTimeoutButNotUnsupported) {
  auto r = report(check::Outcome::Timeout);
  check::apply_state(r, answer("SUSPECT"));
  EXPECT_EQ(r.outcome, check::Outcome::Suspect);
  EXPECT_EQ(check::exit_code(r.outcome), 2);
  auto u = report(check::Outcome::Unsupported);
  check::apply_state(u, answer("SUSPECT"));
  EXPECT_EQ(u.outcome, check::Outcome::Unsupported);
  EXPECT_FALSE(u.notes.empty());
}

TEST(State, NoneIsANoteOnly) {
  auto r = report(check::Outcome::Checked);
  check::apply_state(r, answer("NONE"));
  EXPECT_EQ(r.outcome, check::Outcome::Checked);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], "state: weights differ");
}

TEST(State, BugWithoutEvidenceOrMalformedAnswerIsAnError) {
  auto s = answer("BUG");  // no evidence: never a BUG
  EXPECT_EQ(s.verdict, "error");
  EXPECT_NE(s.reason.find("without evidence"), std::string::npos);
  auto r = report(check::Outcome::Checked);
  check::apply_state(r, check::parse_state("{not json"));
  EXPECT_EQ(r.outcome, check::Outcome::Checked);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("malformed state answer"), std::string::npos);
}

// An output difference observed on the real programs with equal state (python -m dirigo.state --observe)
// is the observation stage's BUG, not a state difference.
TEST(State, ObservedDifferenceIsTheObserveStage) {
  auto r = report(check::Outcome::Timeout);
  check::apply_state(r, check::parse_state(json{{"format", "dirigo-state"}, {"version", 1}, {"verdict", "BUG"},
                                                {"evidence", "observed-gpu"}, {"reason", "0.5 vs 0.9 at output 0[3]"},
                                                {"differing", json::array()}}
                                               .dump()));
  EXPECT_EQ(r.outcome, check::Outcome::Bug);
  EXPECT_EQ(r.stage, "observe");
  EXPECT_EQ(r.evidence, "observed-gpu");
  EXPECT_EQ(r.reason.rfind("observe: ", 0), 0u) << r.reason;
  ASSERT_TRUE(r.function_outcome);
  EXPECT_EQ(*r.function_outcome, check::Outcome::Timeout);
}

TEST(State, ObservedBugReportNamesItsEvidenceAndTheFunctionVerdict) {
  auto r = report(check::Outcome::Checked);
  check::apply_state(r, check::parse_state(json{{"format", "dirigo-state"}, {"version", 1}, {"verdict", "BUG"},
                                                {"evidence", "observed-cpu"}, {"reason", "1 vs 2 at output 0[0]"}}
                                               .dump()));
  std::string text = check::to_text(r);
  EXPECT_NE(text.find("observe: 1 vs 2 at output 0[0]"), std::string::npos) << text;
  EXPECT_NE(text.find("the function check alone: CHECKED"), std::string::npos) << text;
  EXPECT_NE(text.find("evidence: observed-cpu (both real programs"), std::string::npos) << text;
}

// fold_answers: the same rules on a report held as JSON (the Python API's and corpus-eval's reports).
TEST(Fold, ReplayThatReproducesMakesTheJsonReportABugNamingTheLocation) {
  json rep = {{"outcome", "SUSPECT"}, {"reason", "fp32 shows nothing"}, {"evidence", ""}, {"checked", 7},
              {"notes", json::array()}, {"findings", json::array()}, {"first_differ", 1},
              {"locations", json::array({json{{"output", 0}, {"index", {0, 0}}}, json{{"output", 0}, {"index", {1, 2}}}})},
              {"outputs", json::array({json{{"reference", "out0"}, {"candidate", "out0"}}})}};
  json replay = {{"format", "dirigo-replay"}, {"status", "replayed"}, {"evidence", "replay-cpu"}, {"reference", 1.0},
                 {"candidate", 2.5}, {"difference", 1.5}, {"allowed", 0.02}, {"exceeds", true}};
  json out = json::parse(check::fold_answers(rep.dump(), replay.dump(), ""));
  EXPECT_EQ(out["outcome"], "BUG");
  EXPECT_EQ(out["exit_code"], 1);
  EXPECT_EQ(out["evidence"], "replay-cpu");
  EXPECT_EQ(out["reason"].get<std::string>().rfind("out0[1, 2] differs: the real programs give reference 1", 0), 0u)
      << out["reason"];
  EXPECT_EQ(out["replay"]["status"], "replayed");
  EXPECT_EQ(out["checked"], 7);  // what the rules do not touch stays
  // Execute findings: the replay changes nothing (the BUG is Execute's)
  rep["outcome"] = "BUG";
  rep["findings"] = json::array({json{{"kind", "shared-race"}}});
  out = json::parse(check::fold_answers(rep.dump(), replay.dump(), ""));
  EXPECT_EQ(out["evidence"], "");
}

TEST(Fold, StateAnswerOnAJsonReportIsApplyState) {
  json rep = {{"outcome", "CHECKED"}, {"reason", "function verdict"}, {"evidence", ""}, {"notes", json::array()}};
  check::Report r = report(check::Outcome::Checked);
  check::apply_state(r, answer("BUG", "state-replay-cpu"));
  json out = json::parse(check::fold_answers(rep.dump(), "", answer("BUG", "state-replay-cpu").json));
  json expect = json::parse(check::to_json(r));
  for (const char* k : {"outcome", "evidence", "stage", "function_outcome", "reason", "notes", "state"})
    EXPECT_EQ(out[k], expect[k]) << k;
  EXPECT_THROW(check::fold_answers("{\"outcome\": \"MAYBE\"}", "", ""), std::runtime_error);
  EXPECT_THROW(check::fold_answers("not json", "", ""), std::exception);
}

TEST(Fold, CrashedCandidateIsABugOfTheTraceStage) {
  json out = json::parse(check::to_json(check::candidate_crash("illegal memory access in forward")));
  EXPECT_EQ(out["outcome"], "BUG");
  EXPECT_EQ(out["stage"], "trace");
  EXPECT_EQ(out["evidence"], "crash-gpu");
  EXPECT_NE(out["reason"].get<std::string>().find("illegal memory access"), std::string::npos);
}
