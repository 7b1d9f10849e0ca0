// A tiny kill-matrix store filled by hand, with the tables of the contract in docs/mutation.md
// ("Kill-matrix store"), so every test reads its matrix through the real loader.
#pragma once

#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace dirigo::score::testing {

class StoreBuilder {
 public:
  explicit StoreBuilder(const std::string& name)
      : path_((std::filesystem::temp_directory_path() / ("dirigo_score_" + name + ".sqlite")).string()) {
    std::filesystem::remove(path_);
    if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("cannot open " + path_);
    exec("PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY;");  // a scratch file: no fsync per row
    exec(R"sql(
CREATE TABLE substrates(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, sha256 TEXT, kind TEXT, units INTEGER,
  status TEXT, message TEXT, image_hash TEXT, compile_ms REAL);
CREATE TABLE mutants(id INTEGER PRIMARY KEY, substrate_id INTEGER NOT NULL, ordinal INTEGER NOT NULL, rule TEXT NOT NULL,
  family TEXT NOT NULL, unit INTEGER, line INTEGER, col INTEGER, status TEXT NOT NULL, duplicate_of INTEGER,
  ptx_hash TEXT, image_hash TEXT, source_sha256 TEXT, compile_ms REAL, compile_cpu_ms REAL, cached INTEGER,
  message TEXT, source_path TEXT, ptx_path TEXT);
CREATE TABLE inputs(id INTEGER PRIMARY KEY, substrate_id INTEGER NOT NULL, name TEXT NOT NULL, problem TEXT,
  distribution TEXT, seed INTEGER, family TEXT, spec_json TEXT);
CREATE TABLE runs(id INTEGER PRIMARY KEY, substrate_id INTEGER, mutant_id INTEGER, input_id INTEGER NOT NULL,
  source TEXT, status TEXT NOT NULL, t_eq REAL, t_eq32 REAL, max_abs REAL, nonfinite_mismatch INTEGER, ms REAL,
  detail TEXT);
CREATE TABLE mutant_class(mutant_id INTEGER PRIMARY KEY, substrate_id INTEGER, runnable INTEGER, reason TEXT,
  verdict TEXT, verdict_reason TEXT, check_s REAL, equivalent INTEGER);
)sql");
  }
  ~StoreBuilder() {
    sqlite3_close(db_);
    std::filesystem::remove(path_);
  }
  const std::string& path() const { return path_; }

  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(msg + " in " + sql);
    }
  }
  long long last() { return sqlite3_last_insert_rowid(db_); }

  long long substrate(const std::string& path) {
    exec(fmt::format("INSERT INTO substrates(path, status) VALUES('{}', 'ok')", path));
    return last();
  }
  // name = distribution/seed, as the contract says
  long long input(long long sid, const std::string& problem, const std::string& distribution, long long seed,
                  const std::string& family = "kernelbench") {
    exec(fmt::format("INSERT INTO inputs(substrate_id, name, problem, distribution, seed, family) "
                     "VALUES({}, '{}/{}', '{}', '{}', {}, '{}')",
                     sid, family == "fuzz" ? "fuzz" : distribution, seed, problem, distribution, seed, family));
    return last();
  }
  long long mutant(long long sid, const std::string& family, const std::string& verdict = "",
                   const std::string& status = "unique", bool equivalent = false) {
    exec(fmt::format("INSERT INTO mutants(substrate_id, ordinal, rule, family, status) VALUES({}, {}, 'r_{}', '{}', '{}')",
                     sid, ++ordinal_, family, family, status));
    long long id = last();
    exec(fmt::format("INSERT INTO mutant_class(mutant_id, substrate_id, runnable, verdict, equivalent) "
                     "VALUES({}, {}, 1, {}, {})",
                     id, sid, verdict.empty() ? "NULL" : "'" + verdict + "'", equivalent ? 1 : 0));
    return id;
  }
  // mutant_id < 0: the substrate itself. t_eq NaN: NULL (no comparison).
  void run(long long sid, long long mutant_id, long long input_id, double t_eq, const std::string& status = "ok",
           int nonfinite_mismatch = 0, const std::string& source = "cpu", double t_eq32 = -1) {
    auto real = [](double v) {
      if (std::isnan(v)) return std::string("NULL");
      if (std::isinf(v)) return std::string("9e999");
      return fmt::format("{:.17g}", v);
    };
    exec(fmt::format("INSERT INTO runs(substrate_id, mutant_id, input_id, source, status, t_eq, t_eq32, max_abs, "
                     "nonfinite_mismatch) VALUES({}, {}, {}, '{}', '{}', {}, {}, {}, {})",
                     sid, mutant_id < 0 ? "NULL" : std::to_string(mutant_id), input_id, source, status, real(t_eq),
                     real(t_eq32 < 0 ? t_eq : t_eq32), real(t_eq), nonfinite_mismatch));
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  int ordinal_ = 0;
};

}  // namespace dirigo::score::testing
