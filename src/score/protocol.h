// Protocols as data: which inputs a check runs (distributions and how many draws of each), its
// tolerance (atol = rtol = tol, the only pair the store's t_eq decides) and whether the validity
// gate applies; or `dirigo check` itself (a kill iff its verdict on the mutant is BUG).
// JSON form (an array of these):
//   {"name": "kernelbench_v0", "description": "...", "tol": 1e-2, "gate": true,
//    "inputs": [{"distribution": "kernelbench_randn", "draws": 5}]}
//   {"name": "dirigo", "verdicts": ["BUG"]}
// "atol"/"rtol" may replace "tol" when equal. An input selector names a "distribution" (may end in
// '*', a prefix) and/or an input "family" (kernelbench | hardened | fuzz); "draws" 0 or absent =
// every draw. "reference": "fp64" (default, t_eq) or "fp32" (t_eq32, KernelBench's own reference).
// Unknown keys are errors (a typo must not silently widen a protocol).
#pragma once

#include <string>
#include <vector>

#include "score/matrix.h"

namespace dirigo::score {

struct InputSelector {
  std::string distribution;  // exact name, or a prefix ending in '*'; "" = any
  std::string family;        // input family; "" = any
  int draws = 0;             // the first `draws` by seed; 0 = all
  bool matches(const Input& input) const;
};

struct Protocol {
  std::string name, description;
  bool dirigo = false;        // kill iff `dirigo check` gave one of `verdicts`
  // A harness run on every mutant (dirigo score --protocol, table harness_runs): a verdict protocol
  // whose verdicts are the harness's (kill iff "reject"; gate: it accepts the correct substrate).
  std::string harness;
  std::vector<std::string> verdicts;
  std::vector<InputSelector> inputs;
  double tol = 1e-2;          // atol = rtol
  bool fp32_reference = false;  // compare t_eq32 instead of t_eq
  bool gate = true;           // admit only inputs the correct substrate passes at tol
};

std::vector<Protocol> builtin_protocols();
const char* builtin_protocols_json();
std::vector<Protocol> parse_protocols(const std::string& json_text);  // throws std::runtime_error naming the fault
// Picks `names` (comma list) out of `all`, in the given order; throws on an unknown name.
std::vector<Protocol> select_protocols(const std::vector<Protocol>& all, const std::string& names);
// The verdict protocol of a harness named `name` in the store.
Protocol harness_protocol(const std::string& name);
// The verdict a verdict protocol reads for mutant m ("" = none).
const std::string& verdict_of(const Protocol& p, const Problem& problem, size_t m);

// A verdict protocol's gate: true when `dirigo check` on the correct substrate already gives one of
// the protocol's rejecting verdicts (then no mutant of the problem counts as detected).
bool rejects_substrate(const Protocol& p, const Problem& problem);

// The protocol's inputs on a problem in draw order, before the gate.
std::vector<size_t> selected_inputs(const Protocol& p, const Problem& problem);
// The validity gate: the correct substrate ran on the input and passes at tol.
bool valid_input(const Problem& problem, size_t input, double tol, bool fp32_reference = false);
bool fails(const Protocol& p, const Outcome& o);
// Selected inputs that count (after the gate when the protocol has one).
std::vector<size_t> admitted_inputs(const Protocol& p, const Problem& problem);
// The input protocol ran in full on mutant m: the substrate and the mutant both ran on every selected
// input (a matrix cut short by a deadline leaves cells NotRun). On an incomplete run the protocol has
// no answer: neither a detection nor a miss. Verdict protocols are always complete (a missing verdict
// is a miss in the main column, apart in `checked`).
bool complete(const Protocol& p, const Problem& problem, size_t mutant, const std::vector<size_t>& selected);
// Does the protocol reject mutant m? (Quarantine is the caller's business.)
bool detects(const Protocol& p, const Problem& problem, size_t mutant);
bool detects(const Protocol& p, const Problem& problem, size_t mutant, const std::vector<size_t>& admitted);

}  // namespace dirigo::score
