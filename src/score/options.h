// What `dirigo score` and `dirigo suite` share: where the matrix comes from and which protocols apply.
#pragma once

#include <string>
#include <vector>

#include "score/matrix.h"
#include "score/protocol.h"

namespace dirigo::score {

struct MatrixSource {
  std::string store;           // SQLite results store
  std::string source = "auto"; // cpu | gpu | auto
  std::string protocols_file;  // JSON array replacing the built-in protocols
  std::string only;            // comma list of protocol names to keep
  bool progress = true;
};

// The built-in (or --protocols) protocols plus one verdict protocol per harness name (those of the
// store's harness_runs), filtered by s.only; throws std::runtime_error.
std::vector<Protocol> protocols_for(const MatrixSource& s, const std::vector<std::string>& harnesses = {});
Matrix matrix_for(const MatrixSource& s);                    // with a progress line when asked

// "3" -> {3, 3}; "1..5" -> {1, 5}; throws on anything else.
std::pair<int, int> parse_budget(const std::string& text);

}  // namespace dirigo::score
