// `dirigo score --store DB [--json] [--protocols FILE] [--only P,...] [--source auto|cpu|gpu]
// [--witness-tol T,...] [--protocol HARNESS ...] [-q]`: scores every protocol on the kill matrix in
// the mutate results store — miss rate over witnessed mutants by family and by problem
// (docs/mutation.md). `--protocol [NAME=]module:function | [NAME=]cmd:COMMAND` first runs that harness
// on every mutant of the store's bundle substrates (python -m dirigo.harness, verdicts into
// harness_runs); every harness in the store is scored next to the built-in protocols.
// Exit: 0 ok, 2 bad store, protocol file or harness, 64 usage.
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/shared_options.h"
#include "cli/python_child.h"
#include "score/options.h"
#include "score/progress.h"
#include "score/report.h"
#include "score/score.h"

namespace dirigo::cli {
namespace {

struct ScoreOptions {
  score::MatrixSource src;
  std::vector<double> witness_tols;
  std::vector<std::string> harnesses;  // --protocol specs to run first
  std::string work = ".cache/mutation", harness_device = "cpu";
  int harness_limit = 0;
  bool json = false, quiet = false;
};
DIRIGO_CLI_MEMBERS(ScoreOptions, src, witness_tols, harnesses, work, harness_device, harness_limit, json, quiet)

int run_score(ScoreOptions o) {
  o.src.progress = !o.quiet && !o.json;
  for (const auto& spec : o.harnesses) {
    std::vector<std::string> args = {"run", o.src.store, o.work, spec, "--device", o.harness_device};
    if (o.harness_limit > 0) args.insert(args.end(), {"--limit", std::to_string(o.harness_limit)});
    if (int rc = run_python("dirigo.harness", args); rc != 0) {
      std::cerr << "dirigo score: harness " << spec << " could not be run (exit " << rc << ")\n";
      return 2;
    }
  }
  return reporting_errors("score", 2, [&] {
    auto matrix = score::matrix_for(o.src);
    auto protocols = score::protocols_for(o.src, matrix.harnesses);
    score::ProgressLine line("scoring problems", o.src.progress);
    auto s = score::score(matrix, protocols, o.witness_tols, line.callback());
    if (o.json) return print_json(score::to_json(s));
    std::cout << "Mutants (witness tolerances:";
    for (double t : s.witness_tols) std::cout << " " << t;
    std::cout << ")\n\n" << score::population_table(s) << "\nMiss rate by family (missed/witnessed)\n\n"
              << score::family_table(s) << "\n" << score::verdict_lines(s) << "\nMiss rate by problem\n\n"
              << score::problem_table(s);
    return 0;
  });
}

Register register_score(options_command<ScoreOptions>(
    "score", "Score protocols on the kill matrix: miss rate by family and problem (docs/mutation.md)", run_score));

}  // namespace
}  // namespace dirigo::cli
