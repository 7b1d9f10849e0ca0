// `dirigo suite --store DB [--budget 1..5] [--tol 1e-2] [--seed 0] [--baseline kernelbench_v0]
// [--json] [-q]`: per problem, greedy set cover over the kill matrix picks the inputs that kill
// the most witnessed mutants; prints detection versus budget on the full pool and on held-out
// mutants (seeded 50% split), next to the baseline protocol (docs/mutation.md).
// Exit: 0 ok, 2 bad store or protocol file, 64 usage.
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/shared_options.h"
#include "score/options.h"
#include "score/progress.h"
#include "score/report.h"
#include "score/score.h"
#include "score/suite.h"

namespace dirigo::cli {
namespace {

struct SuiteCliOptions {
  score::MatrixSource src;
  std::string budget = "1..5", baseline = "kernelbench_v0";
  double tol = 1e-2;
  uint64_t seed = 0;
  bool json = false, quiet = false;
};
DIRIGO_CLI_MEMBERS(SuiteCliOptions, src, budget, tol, seed, baseline, json, quiet)

int run_suite(SuiteCliOptions o) {
  o.src.progress = !o.quiet && !o.json;
  score::SuiteOptions so;
  try {
    std::tie(so.min_budget, so.max_budget) = score::parse_budget(o.budget);
  } catch (const std::exception& e) {
    std::cerr << "dirigo suite: " << e.what() << "\n";
    return 64;
  }
  return reporting_errors("suite", 2, [&] {
    so.tol = o.tol;
    so.seed = o.seed;
    auto matrix = score::matrix_for(o.src);
    auto protocols = score::protocols_for(o.src, matrix.harnesses);
    auto baseline = score::select_protocols(protocols, o.baseline).at(0);
    // Same denominator as `dirigo score` with the same protocols.
    auto witnessed = score::witness_sets(matrix, score::witness_tolerances(protocols));
    score::ProgressLine line("synthesizing suites", o.src.progress);
    auto r = score::synthesize(matrix, witnessed, baseline, so, line.callback());
    if (o.json) return print_json(score::to_json(r));
    std::cout << "Detection by greedy suites of b inputs (tol " << so.tol << ", split seed " << so.seed << ")\n\n"
              << score::suite_table(r) << "\nGreedy full-coverage suite size: median " << r.median_full_cover
              << ", max " << r.max_full_cover << "\n\n" << score::suite_problem_table(r);
    return 0;
  });
}

Register register_suite(options_command<SuiteCliOptions>(
    "suite", "Synthesize minimal input suites by greedy set cover over the kill matrix (docs/mutation.md)", run_suite));

}  // namespace
}  // namespace dirigo::cli
