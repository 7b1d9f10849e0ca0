// Protocol scores over the kill matrix. Denominator: witnessed mutants, i.e. mutants that are not
// quarantined (no crash or timeout on any input) and that some input of the pool kills at some
// witness tolerance t on which the correct substrate passes at t (the validity gate). The witness
// tolerances default to those of the scored input protocols. A protocol misses a witnessed mutant
// when none of its admitted inputs kills it (or, for `dirigo`, when the verdict is not BUG).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "score/matrix.h"
#include "score/protocol.h"

namespace dirigo::score {

// Over the witnessed mutants the protocol ran in full on; `unrun` = those it did not (not in
// `witnessed`: counting a partial run's detections but not its misses would bias the rate low).
struct Tally {
  int witnessed = 0, missed = 0, unrun = 0;
  double miss_rate() const { return witnessed ? static_cast<double>(missed) / witnessed : 0.0; }
};

struct ProtocolScore {
  Protocol protocol;
  Tally total;
  Tally checked;  // verdict protocols: over the witnessed mutants that `dirigo check` ran on (verdict not NULL)
  std::map<std::string, Tally> by_family, by_problem;
  int inputs_selected = 0;     // over every problem, before the gate
  int inputs_rejecting = 0;    // of those, inputs on which the correct substrate fails (false rejections)
  int inputs_uncompared = 0;   // ... on which the substrate has no comparison (not run, crash, stopped at NaN)
  int problems_rejecting = 0;  // problems where it rejects the correct substrate on some input
  int problems_without_inputs = 0;  // problems where nothing is left to run after the gate
  int substrates_checked = 0;  // verdict protocols: problems whose substrate has a `dirigo check` verdict
  // Store ids of the witnessed mutants it misses, in problem then ordinal order: which protocols
  // miss the same mutants (the report's miss patterns) is only visible per mutant.
  std::vector<long long> missed_mutants;
  std::vector<long long> unrun_mutants;  // witnessed, not run in full: neither missed nor detected
};

// Every mutant lands in exactly one bucket, checked in this order.
struct Population {
  int mutants = 0, equivalent = 0, not_run = 0, quarantined = 0, unwitnessed = 0, witnessed = 0;
  // Unwitnessed mutants with a `nonfinite` run (the CPU interpreter stopped at a NaN/inf
  // intermediate, so no comparison) on an input where the substrate compares fine: likely kills on
  // a GPU, not witnesses here.
  int unwitnessed_nonfinite = 0;
};
enum class Bucket { Equivalent, NotRun, Quarantined, Unwitnessed, Witnessed };
Bucket classify(const Problem& p, size_t mutant, const std::vector<double>& witness_tols);

struct Scores {
  std::vector<double> witness_tols;
  std::vector<std::string> families;  // every family seen, in the canonical order then alphabetical
  std::vector<std::string> problems;
  Population population;
  std::map<std::string, Population> population_by_family, population_by_problem;
  std::vector<ProtocolScore> protocols;
  std::vector<long long> witnessed_mutants;  // store ids, in the order of every missed_mutants list
  std::map<std::string, int> verdicts_witnessed;    // dirigo verdict counts over witnessed mutants
  std::map<std::string, int> verdicts_unwitnessed;  // ... over unwitnessed (not quarantined) ones
};

// The distinct tolerances of the input protocols (sorted). Witnesses compare with the fp64 reference.
std::vector<double> witness_tolerances(const std::vector<Protocol>& protocols);
bool witnessed(const Problem& p, size_t mutant, const std::vector<double>& witness_tols);
// Per problem, per mutant: 1 witnessed, 0 not (quarantined, not run, no witness).
std::vector<std::vector<bool>> witness_sets(const Matrix& m, const std::vector<double>& witness_tols);

// `progress` (may be empty) is called after each problem with (done, total).
Scores score(const Matrix& m, const std::vector<Protocol>& protocols, std::vector<double> witness_tols = {},
             const std::function<void(size_t, size_t)>& progress = {});

}  // namespace dirigo::score
