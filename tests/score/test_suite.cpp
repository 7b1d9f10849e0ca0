// Greedy set cover, the seeded split and suite scoring on hand-built matrices.
#include <gtest/gtest.h>

#include "score/load.h"
#include "score/score.h"
#include "score/suite.h"
#include "store_builder.h"

using namespace dirigo::score;
using dirigo::score::testing::StoreBuilder;

TEST(Greedy, PicksLargestGainFirst) {
  // c1 covers 4 new, then c0 covers {0,1}: everything.
  std::vector<std::vector<size_t>> covers{{0, 1, 2}, {2, 3, 4, 5}, {0, 5}, {1}};
  std::vector<bool> all(6, true);
  EXPECT_EQ(greedy_cover(covers, all, 5), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(greedy_cover(covers, all, 1), (std::vector<size_t>{1}));
}

TEST(Greedy, IsGreedyNotOptimal) {
  // Optimum is {A, B}; greedy takes C (4 elements) first and then needs both A and B (tie: A, lower index).
  std::vector<std::vector<size_t>> covers{{0, 1, 2}, {3, 4, 5}, {0, 1, 3, 4}};
  EXPECT_EQ(greedy_cover(covers, std::vector<bool>(6, true), 5), (std::vector<size_t>{2, 0, 1}));
}

TEST(Greedy, TiesGoToLowerIndexAndZeroGainStops) {
  std::vector<std::vector<size_t>> covers{{0}, {1}, {0, 1}, {}};
  EXPECT_EQ(greedy_cover({{0}, {1}}, std::vector<bool>(2, true), 5), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(greedy_cover(covers, std::vector<bool>(2, true), 5), (std::vector<size_t>{2}));
}

TEST(Greedy, CountsOnlyTheUniverse) {
  // Universe {0,1,2}: c1 gains only {2}, so c0 (gains 3) goes first and nothing is left.
  std::vector<std::vector<size_t>> covers{{0, 1, 2}, {2, 3, 4, 5}};
  std::vector<bool> u{true, true, true, false, false, false};
  EXPECT_EQ(greedy_cover(covers, u, 5), (std::vector<size_t>{0}));
}

TEST(Split, HalfDeterministicAndSeeded) {
  for (size_t n : {0, 1, 2, 7, 20}) {
    auto s = dev_split(n, 0, name_salt("p"));
    EXPECT_EQ(std::count(s.begin(), s.end(), true), static_cast<long>(n / 2)) << n;
    EXPECT_EQ(s, dev_split(n, 0, name_salt("p")));
  }
  EXPECT_NE(dev_split(20, 0, name_salt("p")), dev_split(20, 1, name_salt("p")));
  EXPECT_NE(dev_split(20, 0, name_salt("p")), dev_split(20, 0, name_salt("q")));
}

namespace {

// One problem: inputs randn 0..4 (indices 0..4) and hardened a, b (indices 5, 6); the substrate
// passes everything. kill[m] = the inputs on which mutant m has error 0.5.
std::string build(StoreBuilder& b, const std::vector<std::vector<int>>& kill, double substrate_on_a = 0.0) {
  long long sid = b.substrate("p.py");
  std::vector<long long> in;
  for (int s = 0; s < 5; ++s) in.push_back(b.input(sid, "p", "kernelbench_randn", s));
  in.push_back(b.input(sid, "p", "large", 0, "hardened"));
  in.push_back(b.input(sid, "p", "tiny", 0, "hardened"));
  for (size_t i = 0; i < in.size(); ++i) b.run(sid, -1, in[i], i == 5 ? substrate_on_a : 0.0);
  for (const auto& ks : kill) {
    long long m = b.mutant(sid, "boundary");
    for (size_t i = 0; i < in.size(); ++i)
      b.run(sid, m, in[i], std::find(ks.begin(), ks.end(), static_cast<int>(i)) != ks.end() ? 0.5 : 0.0);
  }
  return b.path();
}

SuiteReport run_suite(const std::string& path, SuiteOptions o = {}) {
  Matrix m = load_matrix(path);
  auto protocols = builtin_protocols();
  auto w = witness_sets(m, witness_tolerances(protocols));
  return synthesize(m, w, select_protocols(protocols, "kernelbench_v0")[0], o);
}

}  // namespace

// m0 by randn 0; m1 by a; m2 by b; m3 by a and b. Greedy: a (2, tie with b, lower index), then
// randn 0 (1, tie with b, lower index), then b. Detection 2/4, 3/4, 4/4, 4/4, 4/4; v0 kills m0: 1/4.
TEST(Suite, FullPoolByBudget) {
  StoreBuilder b("suitefull");
  SuiteReport r = run_suite(build(b, {{0}, {5}, {6}, {5, 6}}));
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].suite, (std::vector<std::string>{"large/0", "kernelbench_randn/0", "tiny/0"}));
  EXPECT_EQ(r.problems[0].killed_full, (std::vector<int>{2, 3, 4, 4, 4}));
  EXPECT_DOUBLE_EQ(r.detection_full[0], 0.5);
  EXPECT_DOUBLE_EQ(r.detection_full[2], 1.0);
  EXPECT_DOUBLE_EQ(r.baseline_full, 0.25);
  EXPECT_EQ(r.witnessed, 4);
  EXPECT_EQ(r.held_out, 2);
  EXPECT_DOUBLE_EQ(r.median_full_cover, 3);
}

// Two mutants, each killed by its own input: whichever lands in the dev half, the suite chosen on
// it never kills the held-out one (0% at every budget), though the full pool reaches 100% at b=2.
TEST(Suite, HeldOutMutantsAreNotSeenBySelection) {
  StoreBuilder b("suiteheld");
  SuiteReport r = run_suite(build(b, {{5}, {6}}));
  EXPECT_EQ(r.problems[0].dev, 1);
  EXPECT_EQ(r.problems[0].held_out, 1);
  EXPECT_EQ(r.problems[0].dev_suite.size(), 1u);
  EXPECT_EQ(r.problems[0].killed_held_out, (std::vector<int>{0, 0, 0, 0, 0}));
  EXPECT_EQ(r.problems[0].killed_full, (std::vector<int>{1, 2, 2, 2, 2}));
}

// Both mutants killed by the same input: the dev half's suite carries over (100% held out at b=1).
TEST(Suite, SharedKillerTransfers) {
  StoreBuilder b("suiteshared");
  SuiteReport r = run_suite(build(b, {{3}, {3}}));
  EXPECT_EQ(r.problems[0].killed_held_out[0], 1);
  EXPECT_DOUBLE_EQ(r.detection_held_out[0], 1.0);
  EXPECT_DOUBLE_EQ(r.baseline_held_out, 1.0);
}

// The suite obeys the gate at its own tolerance: input a (substrate error 5e-3) may be picked at
// 1e-2 but not at 1e-4, where the mutant it kills becomes uncoverable.
TEST(Suite, CandidatesPassTheGateAtTheSuiteTolerance) {
  StoreBuilder b("suitegate");
  std::string path = build(b, {{5}}, 5e-3);
  EXPECT_EQ(run_suite(path).problems[0].suite, std::vector<std::string>{"large/0"});
  SuiteOptions tight;
  tight.tol = 1e-4;
  SuiteReport r = run_suite(path, tight);
  EXPECT_EQ(r.problems[0].witnessed, 1);
  EXPECT_EQ(r.problems[0].coverable, 0);
  EXPECT_TRUE(r.problems[0].suite.empty());
  EXPECT_DOUBLE_EQ(r.detection_full[4], 0.0);
}

TEST(Suite, BudgetRangeChecked) {
  StoreBuilder b("suitebudget");
  std::string path = build(b, {{0}});
  SuiteOptions o;
  o.min_budget = 3;
  o.max_budget = 2;
  EXPECT_THROW(run_suite(path, o), std::runtime_error);
  o.min_budget = 2;
  o.max_budget = 3;
  EXPECT_EQ(run_suite(path, o).detection_full.size(), 2u);
}
