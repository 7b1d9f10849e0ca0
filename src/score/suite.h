// Suite synthesis: per problem, greedy set cover over the kill matrix picks inputs (valid at the
// suite's tolerance) that kill the most not-yet-killed witnessed mutants; the budget-b suite is
// the first b picks. Scored on the full pool (selected and scored on every witnessed mutant) and
// held out (a seeded 50% split of each problem's witnessed mutants: selected on the dev half,
// scored on the other), next to a baseline protocol scored on the same mutants.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "score/matrix.h"
#include "score/protocol.h"

namespace dirigo::score {

// covers[c] = the elements candidate c covers. Picks, in order, the candidate covering most
// elements of `universe` not yet covered (ties: the lower index), until `budget` picks or no gain.
std::vector<size_t> greedy_cover(const std::vector<std::vector<size_t>>& covers, const std::vector<bool>& universe,
                                 size_t budget);

// Exactly n/2 (rounded down) of n elements are true (the dev half), chosen by a Fisher-Yates
// shuffle under mt19937_64 seeded with seed ^ salt: the same split on every platform.
std::vector<bool> dev_split(size_t n, uint64_t seed, uint64_t salt);
uint64_t name_salt(const std::string& name);  // FNV-1a, so a problem's split does not depend on its position

struct SuiteOptions {
  double tol = 1e-2;  // the suite's check: allclose atol = rtol = tol against fp64
  int min_budget = 1, max_budget = 5;
  uint64_t seed = 0;
};

struct ProblemSuite {
  std::string problem;
  std::vector<std::string> suite;  // greedy order over all witnessed mutants, until nothing more is gained
  int witnessed = 0, coverable = 0;  // coverable: killed by some input valid at tol
  std::vector<int> killed_full;      // [budget - min_budget]
  int dev = 0, held_out = 0;
  std::vector<std::string> dev_suite;
  std::vector<int> killed_held_out;  // [budget - min_budget]
  int baseline_full = 0, baseline_held_out = 0;  // mutants the baseline protocol kills
};

struct SuiteReport {
  SuiteOptions options;
  std::string baseline;  // protocol name
  std::vector<ProblemSuite> problems;
  // Pooled over problems, per budget: detection = killed / witnessed (resp. / held-out).
  std::vector<double> detection_full, detection_held_out;
  double baseline_full = 0, baseline_held_out = 0;
  int witnessed = 0, held_out = 0;
  double median_full_cover = 0;  // greedy suite size that reaches every coverable mutant, over problems with any
  int max_full_cover = 0;
};

SuiteReport synthesize(const Matrix& m, const std::vector<std::vector<bool>>& witnessed, const Protocol& baseline,
                       const SuiteOptions& options, const std::function<void(size_t, size_t)>& progress = {});

}  // namespace dirigo::score
