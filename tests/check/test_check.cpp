// End-to-end checks on the bundled examples (bundles of our own programs, committed) and on
// broken input. Expected verdicts: see examples/running_example/{buggy,fixed}.py.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "check/check.h"
#include "check/lower.h"

#include <nlohmann/json.hpp>

using namespace dirigo;

namespace {
std::string example(const char* name) { return std::string(DIRIGO_SOURCE_DIR) + "/examples/running_example/" + name; }
}  // namespace

TEST(Check, RunningExampleBuggyIsBugWithConfirmedWitness) {
  check::Options opt;
  opt.budget_s = 60;
  auto r = check::check_path(example("bundle-buggy"), opt);
  ASSERT_EQ(r.outcome, check::Outcome::Bug) << r.reason;
  EXPECT_EQ(r.evidence, "fp32-evaluation");
  ASSERT_TRUE(r.first_differ.has_value());
  const auto& l = r.locations[*r.first_differ];
  EXPECT_TRUE(l.confirmed_f32);
  EXPECT_GT(std::abs(l.ref_value_f32 - l.cand_value_f32), 1e-2 + 1e-2 * std::abs(l.ref_value_f32));
  EXPECT_FALSE(l.witness.empty());
  EXPECT_EQ(check::exit_code(r.outcome), 1);
}

TEST(Check, RunningExampleFixedIsVerifiedWithoutSolver) {
  check::Options opt;
  opt.full = true;
  opt.budget_s = 300;
  auto r = check::check_path(example("bundle-fixed"), opt);
  ASSERT_EQ(r.outcome, check::Outcome::Verified) << r.reason;
  EXPECT_EQ(int64_t(r.equal), r.total_locations);
  EXPECT_EQ(r.total_locations, 4 * 64);
  EXPECT_EQ(r.solver_calls, 0u);  // canonical forms decide every location
}

// A location whose expression would exceed the node budget ends as an undecided (timeout)
// location naming the budget, never as a verdict or a crash.
TEST(Check, NodeBudgetEndsLocationAsTimeoutNamingIt) {
  check::Options opt;
  opt.budget_s = 60;
  opt.max_locations = 3;
  opt.max_location_nodes = 3;
  opt.falsify_locations = 0;  // the building path's budget (the tier evaluates without building: a BUG)
  auto r = check::check_path(example("bundle-buggy"), opt);
  EXPECT_EQ(r.outcome, check::Outcome::Timeout) << r.reason;
  ASSERT_FALSE(r.locations.empty());
  for (const auto& l : r.locations) {
    EXPECT_EQ(l.verdict, smt::Verdict::Timeout);
    EXPECT_NE(l.reason.find("node budget"), std::string::npos) << l.reason;
    EXPECT_NE(l.reason.find("reference program"), std::string::npos) << l.reason;
  }
}

TEST(Check, SameSeedSameOrder) {
  check::Options opt;
  opt.max_locations = 12;
  opt.seed = 7;
  opt.symbolic_location = false;  // the order of the location search (the whole output is equal at once otherwise)
  auto a = check::check_path(example("bundle-fixed"), opt);
  auto b = check::check_path(example("bundle-fixed"), opt);
  ASSERT_EQ(a.locations.size(), b.locations.size());
  for (size_t i = 0; i < a.locations.size(); ++i) EXPECT_EQ(a.locations[i].loc.flat, b.locations[i].loc.flat);
  EXPECT_EQ(a.outcome, check::Outcome::Checked);
}

// The budget bounds the whole check: with (almost) none, whatever stage runs first stops, and the
// verdict is TIMEOUT naming where the time ran out — never UNSUPPORTED, never a verdict without
// evidence.
TEST(Check, NoBudgetIsTimeoutNamingTheStage) {
  for (const char* bundle : {"bundle-buggy", "bundle-fixed"}) {
    check::Options opt;
    opt.budget_s = 1e-6;
    auto r = check::check_path(example(bundle), opt);
    EXPECT_EQ(r.outcome, check::Outcome::Timeout) << bundle << ": " << r.reason;
    EXPECT_NE(r.reason.find("the budget ran out"), std::string::npos) << r.reason;
    EXPECT_EQ(r.reason.find("UNSUPPORTED"), std::string::npos) << r.reason;
  }
}

// A caller's absolute end binds as a budget would (the nested re-check over program inputs gets its
// caller's end this way): past it, a check asked for an hour still stops at once, as TIMEOUT.
TEST(Check, CallersDeadlineBindsOverALongerBudget) {
  for (const char* bundle : {"bundle-buggy", "bundle-fixed"}) {
    check::Options opt;
    opt.budget_s = 3600;
    opt.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    auto t0 = std::chrono::steady_clock::now();
    auto r = check::check_path(example(bundle), opt);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.outcome, check::Outcome::Timeout) << bundle << ": " << r.reason;
    EXPECT_NE(r.reason.find("the budget ran out"), std::string::npos) << r.reason;
    EXPECT_LT(s, 10) << bundle;
  }
}

TEST(Check, MissingBundleIsUnsupportedNotACrash) {
  auto r = check::check_path("/nonexistent/bundle");
  EXPECT_EQ(r.outcome, check::Outcome::Unsupported);
  EXPECT_NE(r.reason.find("UNSUPPORTED: bundle"), std::string::npos);
}

TEST(Check, CorruptPtxIsUnsupportedNamingTheModule) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "dirigo_test_corrupt_ptx";
  fs::remove_all(dir);
  fs::copy(example("bundle-buggy"), dir, fs::copy_options::recursive);
  {
    std::ofstream(dir / "ptx" / "m0.ptx") << ".version 8.0\n.target sm_90\n.visible .entry k( {{{ garbage\n";
  }
  // The manifest pins the PTX's sha256, so the reader rejects the swapped file by name.
  auto r = check::check_path(dir.string());
  EXPECT_EQ(r.outcome, check::Outcome::Unsupported);
  EXPECT_NE(r.reason.find("m0"), std::string::npos) << r.reason;
  fs::remove_all(dir);
}

TEST(Lower, LogicalStorageIndexRoundTrip) {
  program::View v;
  v.offset = 5;
  v.shape = {3, 4};
  v.strides = {1, 3};  // a transposed view
  for (int64_t l = 0; l < 12; ++l) EXPECT_EQ(check::logical_of_storage(v, check::storage_of_logical(v, l)), l);
  EXPECT_EQ(check::logical_of_storage(v, 4), -1);   // before the view
  EXPECT_EQ(check::logical_of_storage(v, 17), -1);  // after it
}

// Equal locations past kListedLocations are counted (locations_omitted), not kept; the report says so.
TEST(Report, OmittedEqualLocationsAreCounted) {
  check::Report r;
  r.outcome = check::Outcome::Suspect;
  r.outputs.push_back({"out0", "out0", {30000}, 30000});
  for (int64_t i = 0; i < 3; ++i) {
    check::LocationResult l;
    l.loc.flat = i;
    l.loc.index = {i};
    l.verdict = i == 2 ? smt::Verdict::Differ : smt::Verdict::Equal;
    r.locations.push_back(l);
  }
  r.first_differ = 2;
  r.locations_omitted = 24000;
  auto j = nlohmann::json::parse(check::to_json(r));
  EXPECT_EQ(j["locations"].size(), 3u);
  EXPECT_EQ(j["locations_omitted"], 24000);
  EXPECT_EQ(j["locations"][j["first_differ"].get<size_t>()]["verdict"], "differ");
  check::Report none;
  EXPECT_FALSE(nlohmann::json::parse(check::to_json(none)).contains("locations_omitted"));
}

// Any exception the model does not name is dirigo's own failure: ERROR (exit 70), never UNSUPPORTED.
TEST(Check, InternalErrorIsErrorExit70) {
  setenv("DIRIGO_INJECT_FAULT", "check", 1);
  auto r = check::check_path(example("bundle-fixed"));
  unsetenv("DIRIGO_INJECT_FAULT");
  EXPECT_EQ(r.outcome, check::Outcome::Error);
  EXPECT_EQ(check::exit_code(r.outcome), 70);
  EXPECT_EQ(check::outcome_name(r.outcome), "ERROR");
  EXPECT_NE(r.reason.find("internal error: fault injected"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("please report with the bundle"), std::string::npos) << r.reason;
  auto j = nlohmann::json::parse(check::to_json(r));
  EXPECT_EQ(j["exit_code"], 70);
  EXPECT_EQ(j["outcome"], "ERROR");
}

// Every location equal is VERIFIED only when Execute decided every safety check.
TEST(Check, UndecidedSafetyCheckBlocksVerified) {
  check::Report r;
  EXPECT_EQ(check::all_equal_outcome(r).first, check::Outcome::Verified);
  r.undecided_safety = {"out-of-bounds read in k at PTX line 12: ... (too many threads to decide)"};
  auto [o, why] = check::all_equal_outcome(r);
  EXPECT_EQ(o, check::Outcome::Checked);
  EXPECT_NE(why.find("1 Execute safety check(s) undecided"), std::string::npos) << why;
  EXPECT_NE(why.find("not VERIFIED"), std::string::npos) << why;
}

// What an equality rests on is said: exact, a tolerance bound over a box, approximation axioms.
TEST(Check, ProofKindNamesToleranceAndApproximations) {
  check::Report r;
  r.equal_exact = 3;
  EXPECT_EQ(check::proof_kind(r), "exact");
  r.equal_within_tolerance = 1;
  EXPECT_EQ(check::proof_kind(r), "within tolerance for |inputs| <= 10");
  r.equal_modulo_approximation = 2;
  r.approximations = {"GeluErfForm", "SnapConstants"};
  EXPECT_EQ(check::proof_kind(r), "within tolerance for |inputs| <= 10, modulo GeluErfForm, SnapConstants");
  r.outcome = check::Outcome::Verified;
  r.total_locations = 6;
  r.equal = 6;
  EXPECT_EQ(check::to_text(r).rfind("VERIFIED within tolerance for |inputs| <= 10, modulo GeluErfForm, SnapConstants: "
                                    "all 6 locations equal: 3 exactly, 1 within atol 0.01",
                                    0),
            0u)
      << check::to_text(r);
}

// Past kListedLocations, undecided locations are counted like equal ones; a difference is always listed.
TEST(Report, ListedLocationsStopAtTheCapExceptDifferences) {
  check::Report r;
  for (size_t i = 0; i < check::kListedLocations + 5; ++i) {
    check::LocationResult l;
    l.verdict = i % 2 ? smt::Verdict::Equal : smt::Verdict::Unknown;
    check::list_location(r, std::move(l));
  }
  EXPECT_EQ(r.locations.size(), check::kListedLocations);
  EXPECT_EQ(r.locations_omitted, 5u);
  check::LocationResult d;
  d.verdict = smt::Verdict::Differ;
  check::list_location(r, std::move(d));
  EXPECT_EQ(r.locations.size(), check::kListedLocations + 1);
  EXPECT_EQ(r.locations_omitted, 5u);
}
