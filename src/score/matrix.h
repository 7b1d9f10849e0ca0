// The kill matrix as the scorer sees it: per problem (substrate), its inputs, the correct
// substrate's outcome on each input (for the validity gate) and every mutant's outcome on each
// input. Filled from the mutate results store (load.h) or by hand in tests.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dirigo::score {

enum class Status { NotRun, Ok, Crash, Timeout, Nonfinite };

// One run of a program on an input, compared against the fp64 reference.
// t_eq = max |out - ref| / (1 + |ref|): the run passes allclose(atol = rtol = tol) iff t_eq <= tol.
struct Outcome {
  Status status = Status::NotRun;
  double t_eq = 0;  // NaN = not compared
  double max_abs = 0;
  double t_eq32 = 0;  // the same against the fp32 PyTorch reference (what KernelBench compares with)
  bool nonfinite_mismatch = false;  // NaN/inf outputs where the reference is finite
};

struct Input {
  std::string name;
  std::string distribution;  // kernelbench_randn, uniform01, large, ... (the store's inputs.distribution)
  std::string family;        // kernelbench | hardened | fuzz
  long long seed = 0;        // draw order
};

struct Mutant {
  long long id = 0;
  std::string rule, family;
  std::string verdict;  // `dirigo check` on the mutant: BUG, SUSPECT, CHECKED, VERIFIED, ... ("" = not checked)
  bool equivalent = false;  // proven equal to the substrate: in no denominator
  // A maintainer's harness run on the mutant (table harness_runs): protocol -> accept | reject | error.
  std::map<std::string, std::string> harness;
};

struct Problem {
  std::string name;
  std::string source;  // where the runs come from: cpu | gpu
  std::vector<Input> inputs;
  std::vector<Outcome> substrate;          // [input]
  std::vector<Mutant> mutants;
  std::vector<std::vector<Outcome>> runs;  // [mutant][input]
  // `dirigo check` on the correct substrate (table substrate_check; "" = not checked). A verdict
  // protocol that rejects it (BUG for `dirigo`) says nothing about the problem's mutants: its gate.
  std::string substrate_verdict;
  std::map<std::string, std::string> harness_substrate;  // the harnesses' verdicts on the correct substrate
};

struct Matrix {
  std::vector<Problem> problems;
  std::vector<std::string> harnesses;  // protocol names in harness_runs, sorted
};

const char* status_name(Status s);
Status parse_status(const std::string& s);  // ok|crash|timeout|nonfinite; throws on anything else

// A run kills at tolerance tol when the comparison fails: t_eq > tol or NaN/inf outputs where the
// reference is finite. A crash, a timeout, a missing run or a run without a comparison (t_eq NaN:
// the CPU interpreter stopped at a non-finite intermediate) never kills.
bool fails(const Outcome& o, double tol, bool fp32_reference = false);
// The run was compared and is within tol (what the validity gate asks of the correct substrate).
bool passes(const Outcome& o, double tol, bool fp32_reference = false);
// A crash or timeout on any input quarantines a mutant: it is never scored.
bool quarantined(const Problem& p, size_t mutant);

}  // namespace dirigo::score
