// Reads the kill matrix from the mutate results store (SQLite; the contract is docs/mutation.md
// "Kill-matrix store"): substrates with inputs are problems; `unique` mutants are the rows (with
// mutant_class: dirigo verdict, equivalence); runs fill the cells. The store is opened read-only.
#pragma once

#include <functional>
#include <string>

#include "score/matrix.h"

namespace dirigo::score {

struct LoadOptions {
  // Which runs to use per problem: "auto" = gpu when the substrate has gpu runs, else cpu.
  std::string source = "auto";
  // Called now and then with (runs read, runs in the store).
  std::function<void(long long, long long)> progress;
};

// Throws std::runtime_error naming the store and what is missing or malformed.
Matrix load_matrix(const std::string& db_path, const LoadOptions& options = {});

}  // namespace dirigo::score
