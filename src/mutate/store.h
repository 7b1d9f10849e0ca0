// The results store: SQLite. Tables
//   rules(name, family, description, scope)
//   substrates(id, path, sha256, kind, units, status, message, image_hash, compile_ms)
//   mutants(id, substrate_id, ordinal, rule, family, unit, line, col, status, duplicate_of,
//           ptx_hash, image_hash, source_sha256, compile_ms, compile_cpu_ms, cached, message,
//           source_path, ptx_path)
// and, for the kill-matrix stage that replays mutants on inputs (filled later):
//   inputs(id, substrate_id, name, generator, spec_json, valid)      -- valid: passes the original
//   protocols(name, description)                                     -- official, hardened, fuzz, dirigo
//   runs(id, mutant_id, input_id, protocol, outcome, max_abs_err, max_rel_err, ms, detail)
//   kills(mutant_id, input_id, protocol, killed, witness)            -- the kill matrix
// and the view family_summary(substrate_id, family, generated, non_compiling, dup_original,
// duplicate, unique). Re-running a substrate replaces its mutants.
#pragma once

#include <string>
#include <vector>

#include "mutate/pipeline.h"

struct sqlite3;

namespace dirigo::mutate {

class Store {
 public:
  explicit Store(const std::string& path);  // creates the schema; throws std::runtime_error
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  void put_rules();
  int put_result(const SubstrateResult& r);  // returns the substrate id
  // Runs a query and returns its rows as text (NULL -> ""); throws with SQLite's message.
  std::vector<std::vector<std::string>> query(const std::string& sql);
  std::map<std::string, FamilyCounts> summary();  // over every substrate in the store

 private:
  void exec(const std::string& sql);
  sqlite3* db_ = nullptr;
};

}  // namespace dirigo::mutate
