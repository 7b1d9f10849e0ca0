// Parallel location workers (--jobs) and --full deduplication of identical queries.
// Fixture bundles in tests/check/data are CPU traces of our golden pairs (tests/golden/torch).
#include <gtest/gtest.h>

#include "check/check.h"
#include "check/search.h"
#include "ir/expr.h"

using namespace dirigo;

namespace {
std::string data(const char* name) { return std::string(DIRIGO_SOURCE_DIR) + "/tests/check/data/" + name; }
std::string example(const char* name) { return std::string(DIRIGO_SOURCE_DIR) + "/examples/running_example/" + name; }

check::Report run(const std::string& bundle, size_t jobs, bool full = false, size_t max_locations = 0, uint64_t seed = 0) {
  check::Options opt;
  opt.budget_s = 120;
  opt.jobs = jobs;
  opt.full = full;
  opt.max_locations = max_locations;
  opt.seed = seed;
  opt.symbolic_location = false;  // these tests are about the location search itself
  return check::check_path(bundle, opt);
}
}  // namespace

TEST(Jobs, SameVerdictAndLocationForAnyNumberOfWorkers) {
  for (const std::string& b : {example("bundle-buggy"), data("sum_wrong_dim")}) {
    auto one = run(b, 1), two = run(b, 2), three = run(b, 3);
    ASSERT_EQ(one.outcome, check::Outcome::Bug) << b << ": " << one.reason;
    for (const auto* r : {&two, &three}) {
      EXPECT_EQ(r->outcome, one.outcome) << b;
      ASSERT_TRUE(r->first_differ && one.first_differ);
      EXPECT_EQ(*r->first_differ, *one.first_differ) << b;  // same position in the search order
      EXPECT_EQ(r->locations[*r->first_differ].loc.flat, one.locations[*one.first_differ].loc.flat);
      EXPECT_EQ(r->checked, one.checked);
      EXPECT_EQ(r->evidence, one.evidence);
    }
    EXPECT_EQ(two.jobs, 2u);
  }
}

TEST(Jobs, LocationsInSearchOrderForAnySeedAndWorkers) {
  for (uint64_t seed : {0u, 7u}) {
    auto one = run(example("bundle-fixed"), 1, false, 20, seed), four = run(example("bundle-fixed"), 4, false, 20, seed);
    ASSERT_EQ(one.locations.size(), four.locations.size());
    for (size_t i = 0; i < one.locations.size(); ++i) {
      EXPECT_EQ(one.locations[i].loc.flat, four.locations[i].loc.flat);
      EXPECT_EQ(one.locations[i].verdict, four.locations[i].verdict);
    }
    EXPECT_EQ(one.outcome, four.outcome);
  }
}

TEST(Recycle, WorkersStartingOverInFreshContextsGiveTheSameResults) {
  // A context cap of one byte: every worker starts over after each location. Verdicts, the locations'
  // order and their decisions, the classes and deduplication (keyed by structure, not by node) stay the
  // same. (With two workers how many are deduplicated depends on which decides a class first.)
  for (size_t jobs : {1u, 2u}) {
    for (const std::string& b : {example("bundle-fixed"), data("tanh_via_sigmoid"), example("bundle-buggy")}) {
      check::Options opt;
      opt.budget_s = 120;
      opt.jobs = jobs;
      opt.full = true;
      opt.max_locations = 48;  // each fresh context executes the kernels again
      auto kept = check::check_path(b, opt);
      opt.worker_context_bytes = 1;
      auto fresh = check::check_path(b, opt);
      EXPECT_EQ(fresh.outcome, kept.outcome) << b << " jobs " << jobs << ": " << fresh.reason;
      EXPECT_EQ(fresh.checked, kept.checked) << b;
      EXPECT_EQ(fresh.equal, kept.equal) << b;
      if (jobs == 1) EXPECT_EQ(fresh.deduplicated, kept.deduplicated) << b;
      EXPECT_EQ(fresh.classes, kept.classes) << b;
      ASSERT_EQ(fresh.locations.size(), kept.locations.size()) << b;
      for (size_t i = 0; i < kept.locations.size(); ++i) {
        EXPECT_EQ(fresh.locations[i].loc.flat, kept.locations[i].loc.flat) << b;
        EXPECT_EQ(fresh.locations[i].verdict, kept.locations[i].verdict) << b;
      }
    }
  }
}

TEST(Dedup, ElementwiseProgramDecidesOneQueryForAllLocations) {
  // (2*sigmoid(2x)-1)*3 vs tanh(x)*3 on a 4x4 input: 16 locations, identical up to renaming x[i].
  auto r = run(data("tanh_via_sigmoid"), 1, true);
  ASSERT_EQ(r.outcome, check::Outcome::Verified) << r.reason;
  EXPECT_EQ(r.total_locations, 16);
  EXPECT_EQ(r.deduplicated, 15u);
  EXPECT_EQ(r.classes, 1u);
  size_t marked = 0;
  for (const auto& l : r.locations) marked += l.deduplicated;
  EXPECT_EQ(marked, 15u);
  EXPECT_FALSE(r.locations.front().deduplicated);  // the first one is decided
}

TEST(Dedup, OffWithoutFull) {
  auto r = run(data("tanh_via_sigmoid"), 1, false);
  EXPECT_EQ(r.deduplicated, 0u);
  EXPECT_EQ(r.classes, 0u);  // counted only where every location is visited
}

TEST(Dedup, DifferingQueriesAreNeverReused) {
  // sum over dim 1 vs dim 0: every location differs; dedup never answers a Differ query.
  auto r = run(data("sum_wrong_dim"), 1, true);
  EXPECT_EQ(r.outcome, check::Outcome::Bug);
  EXPECT_EQ(r.deduplicated, 0u);
}

TEST(Dedup, KeyIsInvariantUnderRenamingOnly) {
  ir::Context ctx;
  int32_t x = ctx.tensor("in:x"), y = ctx.tensor("in:y");
  ir::Expr x0 = ctx.elem(x, 0), x1 = ctx.elem(x, 1), y5 = ctx.elem(y, 5), one = ctx.real_const(1);
  using check::renamed_pair_key;
  // a renaming of leaves (also across tensors) keeps the key
  EXPECT_EQ(renamed_pair_key(ctx.add(x0, one), x1), renamed_pair_key(ctx.add(y5, one), x0));
  EXPECT_EQ(renamed_pair_key(ctx.mul(x0, x0), x0), renamed_pair_key(ctx.mul(x1, x1), x1));
  // not a renaming: one leaf used twice vs two leaves; a different constant; sides swapped
  EXPECT_NE(renamed_pair_key(ctx.add(x0, one), x0), renamed_pair_key(ctx.add(x0, one), x1));
  EXPECT_NE(renamed_pair_key(ctx.add(x0, one), x0), renamed_pair_key(ctx.add(x0, ctx.real_const(2)), x0));
  EXPECT_NE(renamed_pair_key(ctx.add(x0, one), x0), renamed_pair_key(x0, ctx.add(x0, one)));
}

TEST(Full, BudgetEndsWithAProjectionForTheRest) {
  check::Options opt;
  opt.full = true;
  // 256 locations of a few ms each: 0.3 s ends the search partway even on a fast machine, and
  // leaves time for the first location on a loaded one (0.02 s did not: the budget now also bounds
  // building a location's expression)
  opt.budget_s = 0.3;
  opt.min_locations = 1;
  opt.symbolic_location = false;  // location by location (the whole output is equal at once otherwise)
  auto r = check::check_path(example("bundle-fixed"), opt);
  ASSERT_LT(int64_t(r.checked), r.total_locations) << "the whole output fit in the budget";
  EXPECT_EQ(r.outcome, check::Outcome::Checked) << r.reason;
  EXPECT_GT(r.projected_full_seconds, 0);
  EXPECT_NE(check::to_text(r).find("would take about"), std::string::npos);
}
