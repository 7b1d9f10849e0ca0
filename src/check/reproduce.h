// Does dirigo's model of a program compute what the device computed? For a bundle traced with data,
// evaluates each program's model (ATen equations, Execute write sets, cuBLAS semantics — the exact
// expressions `dirigo check` compares) at the recorded inputs and compares the result with the
// recorded outputs, location by location. A mismatch means the model is wrong for this program (a
// semantic gap in dirigo, or a kernel whose result is not a function of its inputs, such as a race),
// so no inequivalence found on that program can be trusted without a replay.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "exec/exec.h"

namespace dirigo::check {

struct ReproduceOptions {
  size_t max_locations = 256;  // per output: all when it has fewer, else corners + a seeded sample
  uint64_t seed = 1;
  double atol = 1e-3, rtol = 1e-3;  // |model - recorded| <= atol + rtol·|recorded| (model: exact reals)
  double budget_s = 60;
  exec::ExecOptions exec;
};

struct OutputReproduction {
  std::string program;  // "reference" / "candidate"
  std::string output;
  std::vector<int64_t> shape;
  size_t compared = 0, mismatched = 0, undefined = 0;  // undefined: the model's value depends on ⊥
  double max_abs_error = 0;
  // the worst location (largest error relative to the allowed one)
  std::vector<int64_t> worst_index;
  double worst_model = 0, worst_recorded = 0;
  std::string skipped;  // why this output was not compared ("" when it was)
};

struct Reproduction {
  std::vector<OutputReproduction> outputs;
  std::vector<std::string> notes;  // Execute findings, inputs without data, ...
  std::optional<std::string> unsupported;
  double seconds = 0;
  bool reproduced() const;  // something was compared and nothing mismatched
};

Reproduction reproduce(const std::filesystem::path& bundle_dir, const ReproduceOptions& opt = {});
std::string to_text(const Reproduction& r);
std::string to_json(const Reproduction& r);

}  // namespace dirigo::check
