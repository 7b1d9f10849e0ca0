// The results store: SQLite. Tables
//   rules(name, family, description, scope)
//   substrates(id, path, sha256, kind, units, status, message, image_hash, compile_ms)
//   mutants(id, substrate_id, ordinal, rule, family, unit, line, col, status, duplicate_of,
//           ptx_hash, image_hash, source_sha256, compile_ms, compile_cpu_ms, cached, message,
//           source_path, ptx_path)
// and, for the kill matrix (`dirigo killmatrix`; columns explained in docs/mutation.md):
//   inputs(id, substrate_id, name, problem, distribution, seed, family, spec_json)
//   runs(id, substrate_id, mutant_id (NULL = the substrate), input_id, source, status, t_eq, t_eq32,
//        max_abs, nonfinite_mismatch, ms, detail)
//   mutant_class(mutant_id, substrate_id, runnable, reason, verdict, verdict_reason, check_s, equivalent)
//   protocols(name, description), kills(mutant_id, input_id, protocol, killed, witness)  -- `dirigo score`
// and the view family_summary(substrate_id, family, generated, non_compiling, dup_original,
// duplicate, unique). Re-running a substrate replaces its mutants.
#pragma once

#include <string>
#include <variant>
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

  // One statement with bound values; returns the last inserted rowid.
  using SqlValue = std::variant<std::monostate, long long, double, std::string>;
  long long run(const std::string& sql, const std::vector<SqlValue>& values = {});
  void begin();
  void commit();
  void rollback();

 private:
  void exec(const std::string& sql);
  sqlite3* db_ = nullptr;
};

}  // namespace dirigo::mutate
