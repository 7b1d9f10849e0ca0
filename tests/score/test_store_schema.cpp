// The loader reads a store whose schema comes from mutate::Store itself (not the hand-written
// copy in store_builder.h), so a schema change on the mutate side shows up here.
#include <gtest/gtest.h>

#include <filesystem>

#include "mutate/store.h"
#include "score/load.h"
#include "score/score.h"

using namespace dirigo;

TEST(StoreSchema, MutateStoreLoads) {
  auto path = (std::filesystem::temp_directory_path() / "dirigo_score_mutate_schema.sqlite").string();
  std::filesystem::remove(path);
  {
    mutate::Store store(path);
    if (store.query("SELECT 1 FROM pragma_table_info('runs') WHERE name = 't_eq'").empty())
      GTEST_SKIP() << "mutate::Store has no kill-matrix tables yet";
    store.query("INSERT INTO substrates(id, path, status) VALUES(1, 'examples/substrates/x.py', 'ok')");
    store.query("INSERT INTO mutants(id, substrate_id, ordinal, rule, family, status) VALUES(7, 1, 0, 'plus2minus', "
                "'arithmetic', 'unique')");
    store.query("INSERT INTO inputs(id, substrate_id, name, problem, distribution, seed, family) VALUES(3, 1, "
                "'kernelbench_randn/0', 'x', 'kernelbench_randn', 0, 'kernelbench')");
    store.query("INSERT INTO mutant_class(mutant_id, substrate_id, runnable, verdict, equivalent) VALUES(7, 1, 1, "
                "'BUG', 0)");
    store.query("INSERT INTO runs(substrate_id, mutant_id, input_id, source, status, t_eq, t_eq32, max_abs, "
                "nonfinite_mismatch) VALUES(1, NULL, 3, 'cpu', 'ok', 1e-7, 1e-7, 1e-7, 0)");
    store.query("INSERT INTO runs(substrate_id, mutant_id, input_id, source, status, t_eq, t_eq32, max_abs, "
                "nonfinite_mismatch) VALUES(1, 7, 3, 'cpu', 'ok', 0.25, 0.25, 0.5, 0)");
  }
  score::Matrix m = score::load_matrix(path);
  ASSERT_EQ(m.problems.size(), 1u);
  EXPECT_EQ(m.problems[0].name, "x");
  ASSERT_EQ(m.problems[0].mutants.size(), 1u);
  EXPECT_EQ(m.problems[0].mutants[0].verdict, "BUG");
  EXPECT_DOUBLE_EQ(m.problems[0].runs[0][0].t_eq, 0.25);
  auto s = score::score(m, score::builtin_protocols());
  EXPECT_EQ(s.population.witnessed, 1);
  std::filesystem::remove(path);
}
