// Merge (paper §3.2): two traced programs -> one equivalence obligation.
//
// Both programs go to SSA; their inputs are matched (the bundle's "match"
// section, else forward inputs by position and parameters/buffers by name, then
// by order), as are their outputs; shapes and dtypes of every pair must agree.
// Prefix trimming (on by default) removes the longest common prefix of pure
// ATen ops that both programs run identically on matched operands: the outputs
// of those ops become shared fresh inputs, so Execute never expands them. The
// trimmed ops are kept (witness refinement carries a witness back through them).
// Suffix trimming (off by default; sound only for injective ops) removes a
// common suffix and compares the trimmed ops' operands instead of the outputs.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/bundle.h"
#include "program/ssa.h"

namespace dirigo::program {

class MergeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MergeOptions {
  bool trim_prefix = true;
  bool trim_suffix = false;
};

// A fresh input of the merged obligation: one value both programs share.
struct SharedInput {
  enum class Origin { Input, Trimmed };
  std::string name;          // ref's input name, or "prefix[k].<output tensor>" for trimmed results
  Origin origin = Origin::Input;
  bundle::InputKind kind = bundle::InputKind::Input;  // for Origin::Input
  size_t trimmed_op = 0;     // for Origin::Trimmed: index into the prefix (== SSA op index in both)
  View ref, cand;            // the same tensor in each program
};

// An input only one program has: an independent free variable.
struct UnmatchedInput {
  bool in_ref;
  std::string name;
  View view;
};

struct OutputPair {
  std::string ref_name, cand_name;  // program output names, or "suffix[k].<path>" after suffix trimming
  View ref, cand;
  bool identical = false;  // both are the same shared value (e.g. everything was trimmed): equal by construction
};

struct Merged {
  SsaProgram ref, cand;
  size_t prefix = 0;       // ops [0, prefix) of both programs were trimmed, pairwise identical
  size_t ref_suffix = 0;   // last ref_suffix ops of ref trimmed (suffix trimming)
  size_t cand_suffix = 0;  // ... and of cand (equal to ref_suffix: trimmed pairwise)
  std::vector<SharedInput> inputs;
  std::vector<UnmatchedInput> unmatched;
  // Matched inputs whose recorded values (sha256) differ: typically parameters each program
  // initializes its own way. The check compares the functions on equal inputs; a harness that runs
  // each program with its own parameters (KernelBench) sees different outputs anyway.
  std::vector<std::pair<std::string, std::string>> differing_values;  // (ref name, candidate name)
  std::vector<OutputPair> outputs;
  std::string prefix_stop;  // why prefix trimming stopped ("" when it was off)

  // The ops Execute must run, after trimming.
  std::span<const SsaOp> ref_ops() const;
  std::span<const SsaOp> cand_ops() const;
  // The trimmed prefix (identical in both programs), for witness refinement.
  std::span<const SsaOp> prefix_ops_ref() const { return {ref.ops.data(), prefix}; }
  std::span<const SsaOp> prefix_ops_cand() const { return {cand.ops.data(), prefix}; }
  // The shared input a value is, or -1 (indexes `inputs`).
  int shared_input_of_ref(ValueId v) const;
  int shared_input_of_cand(ValueId v) const;
};

// The bundle's reference and candidate: the programs with role "reference" and
// "candidate" (exactly one each), else the first two programs. Throws MergeError.
Merged merge(const bundle::Bundle& b, const MergeOptions& opts = {});
Merged merge(const bundle::Bundle& b, std::string_view ref_name, std::string_view cand_name,
             const MergeOptions& opts = {});

// ATen ops that are never trimmed: their results are random or uninitialized,
// so two runs of them are not "the same value" (aten::empty, aten::rand, ...).
bool is_nondeterministic_aten(std::string_view name);

std::string describe(const Merged& m);

}  // namespace dirigo::program
