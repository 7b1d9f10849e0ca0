#include "mutate/store.h"

#include <sqlite3.h>

#include <stdexcept>
#include <type_traits>

namespace dirigo::mutate {
namespace {

constexpr const char* kSchema = R"sql(
PRAGMA journal_mode=WAL;
PRAGMA foreign_keys=ON;
CREATE TABLE IF NOT EXISTS rules(
  name TEXT PRIMARY KEY, family TEXT NOT NULL, description TEXT NOT NULL, scope TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS substrates(
  id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, sha256 TEXT, kind TEXT, units INTEGER,
  status TEXT, message TEXT, image_hash TEXT, compile_ms REAL);
CREATE TABLE IF NOT EXISTS mutants(
  id INTEGER PRIMARY KEY, substrate_id INTEGER NOT NULL REFERENCES substrates(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL, rule TEXT NOT NULL, family TEXT NOT NULL, unit INTEGER, line INTEGER, col INTEGER,
  status TEXT NOT NULL, duplicate_of INTEGER, ptx_hash TEXT, image_hash TEXT, source_sha256 TEXT,
  compile_ms REAL, compile_cpu_ms REAL, cached INTEGER, message TEXT, source_path TEXT, ptx_path TEXT,
  UNIQUE(substrate_id, ordinal));
CREATE INDEX IF NOT EXISTS mutants_image ON mutants(image_hash);
CREATE TABLE IF NOT EXISTS inputs(
  id INTEGER PRIMARY KEY, substrate_id INTEGER NOT NULL REFERENCES substrates(id) ON DELETE CASCADE,
  name TEXT NOT NULL, problem TEXT, distribution TEXT, seed INTEGER, family TEXT, spec_json TEXT,
  UNIQUE(substrate_id, name));
CREATE TABLE IF NOT EXISTS protocols(name TEXT PRIMARY KEY, description TEXT);
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY, substrate_id INTEGER NOT NULL REFERENCES substrates(id) ON DELETE CASCADE,
  mutant_id INTEGER REFERENCES mutants(id) ON DELETE CASCADE,
  input_id INTEGER NOT NULL REFERENCES inputs(id) ON DELETE CASCADE, source TEXT NOT NULL, status TEXT NOT NULL,
  t_eq REAL, t_eq32 REAL, max_abs REAL, nonfinite_mismatch INTEGER, ms REAL, detail TEXT);
CREATE INDEX IF NOT EXISTS runs_mutant ON runs(mutant_id, input_id);
CREATE INDEX IF NOT EXISTS runs_substrate ON runs(substrate_id, source);
CREATE TABLE IF NOT EXISTS mutant_class(
  mutant_id INTEGER PRIMARY KEY REFERENCES mutants(id) ON DELETE CASCADE,
  substrate_id INTEGER NOT NULL REFERENCES substrates(id) ON DELETE CASCADE,
  runnable INTEGER NOT NULL, reason TEXT, verdict TEXT, verdict_reason TEXT, check_s REAL, equivalent INTEGER DEFAULT 0);
CREATE TABLE IF NOT EXISTS kills(
  mutant_id INTEGER NOT NULL REFERENCES mutants(id) ON DELETE CASCADE,
  input_id INTEGER NOT NULL REFERENCES inputs(id) ON DELETE CASCADE,
  protocol TEXT NOT NULL, killed INTEGER NOT NULL, witness INTEGER DEFAULT 0,
  PRIMARY KEY(mutant_id, input_id, protocol));
CREATE TABLE IF NOT EXISTS substrate_bundle(
  substrate_id INTEGER PRIMARY KEY REFERENCES substrates(id) ON DELETE CASCADE,
  reference TEXT NOT NULL, bundle TEXT NOT NULL, candidate TEXT, module TEXT, origin TEXT, gate_json TEXT);
CREATE TABLE IF NOT EXISTS harness_runs(
  protocol TEXT NOT NULL, substrate_id INTEGER NOT NULL REFERENCES substrates(id) ON DELETE CASCADE,
  mutant_id INTEGER REFERENCES mutants(id) ON DELETE CASCADE, verdict TEXT NOT NULL, compiled INTEGER,
  ms REAL, detail TEXT, UNIQUE(protocol, substrate_id, mutant_id));
CREATE VIEW IF NOT EXISTS family_summary AS
  SELECT substrate_id, family, COUNT(*) AS generated,
         SUM(status = 'non-compiling') AS non_compiling,
         SUM(status = 'duplicate' AND duplicate_of = 0) AS dup_original,
         SUM(status = 'duplicate' AND duplicate_of > 0) AS duplicate,
         SUM(status = 'unique') AS unique_count
  FROM mutants GROUP BY substrate_id, family;
)sql";

struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(sqlite3* db, const std::string& sql) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db) + " in: " + sql);
  }
  ~Stmt() { sqlite3_finalize(s); }
  void text(int i, const std::string& v) { sqlite3_bind_text(s, i, v.c_str(), -1, SQLITE_TRANSIENT); }
  void integer(int i, long long v) { sqlite3_bind_int64(s, i, v); }
  void real(int i, double v) { sqlite3_bind_double(s, i, v); }
  void null(int i) { sqlite3_bind_null(s, i); }
  void done(sqlite3* db) {
    int rc = sqlite3_step(s);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db));
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
};

}  // namespace

Store::Store(const std::string& path) {
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error("cannot open results store " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 10000);
  exec("PRAGMA foreign_keys = ON");
  // Stores written before the kill matrix existed have placeholder inputs/runs tables (never filled).
  if (!query("SELECT 1 FROM sqlite_master WHERE name = 'runs'").empty() &&
      query("SELECT 1 FROM pragma_table_info('runs') WHERE name = 't_eq'").empty())
    exec("DROP TABLE IF EXISTS kills; DROP TABLE IF EXISTS runs; DROP TABLE IF EXISTS inputs;");
  exec(kSchema);
}

Store::~Store() { sqlite3_close(db_); }

void Store::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error("sqlite: " + msg);
  }
}

void Store::put_rules() {
  exec("BEGIN");
  Stmt st(db_, "INSERT OR REPLACE INTO rules(name, family, description, scope) VALUES(?,?,?,?)");
  for (const auto& r : all_rules()) {
    st.text(1, r.name);
    st.text(2, r.family);
    st.text(3, r.description);
    st.text(4, r.scope == Scope::Device ? "device" : "host");
    st.done(db_);
  }
  exec("COMMIT");
}

int Store::put_result(const SubstrateResult& r) {
  exec("BEGIN");
  try {
    {
      Stmt del(db_, "DELETE FROM substrates WHERE path = ?");
      del.text(1, r.path);
      del.done(db_);
    }
    Stmt sub(db_,
             "INSERT INTO substrates(path, sha256, kind, units, status, message, image_hash, compile_ms) "
             "VALUES(?,?,?,?,?,?,?,?)");
    sub.text(1, r.path);
    sub.text(2, r.sha256);
    sub.text(3, r.kind);
    int units = 0;
    for (const auto& m : r.mutants) units = std::max(units, static_cast<int>(m.unit) + 1);
    sub.integer(4, units);
    sub.text(5, r.status);
    sub.text(6, r.message);
    sub.text(7, r.image_hash);
    sub.real(8, r.compile_ms);
    sub.done(db_);
    int id = static_cast<int>(sqlite3_last_insert_rowid(db_));
    Stmt mu(db_,
            "INSERT INTO mutants(substrate_id, ordinal, rule, family, unit, line, col, status, duplicate_of, ptx_hash, "
            "image_hash, source_sha256, compile_ms, compile_cpu_ms, cached, message, source_path, ptx_path) "
            "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (const auto& m : r.mutants) {
      mu.integer(1, id);
      mu.integer(2, m.ordinal);
      mu.text(3, m.rule);
      mu.text(4, m.family);
      mu.integer(5, static_cast<long long>(m.unit));
      mu.integer(6, m.line);
      mu.integer(7, m.col);
      mu.text(8, m.status);
      if (m.duplicate_of >= 0) mu.integer(9, m.duplicate_of);
      else mu.null(9);
      mu.text(10, m.ptx_hash);
      mu.text(11, m.image_hash);
      mu.text(12, m.source_sha256);
      mu.real(13, m.compile_ms);
      mu.real(14, m.compile_cpu_ms);
      mu.integer(15, m.cached ? 1 : 0);
      mu.text(16, m.message);
      mu.text(17, m.source_path);
      mu.text(18, m.ptx_path);
      mu.done(db_);
    }
    exec("COMMIT");
    return id;
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

void Store::begin() { exec("BEGIN"); }
void Store::commit() { exec("COMMIT"); }
void Store::rollback() { exec("ROLLBACK"); }

long long Store::run(const std::string& sql, const std::vector<SqlValue>& values) {
  Stmt st(db_, sql);
  for (size_t i = 0; i < values.size(); ++i) {
    int k = static_cast<int>(i) + 1;
    std::visit([&](const auto& v) {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, std::monostate>) st.null(k);
      else if constexpr (std::is_same_v<T, long long>) st.integer(k, v);
      else if constexpr (std::is_same_v<T, double>) st.real(k, v);
      else st.text(k, v);
    }, values[i]);
  }
  st.done(db_);
  return static_cast<long long>(sqlite3_last_insert_rowid(db_));
}

std::vector<std::vector<std::string>> Store::query(const std::string& sql) {
  Stmt st(db_, sql);
  std::vector<std::vector<std::string>> rows;
  for (;;) {
    int rc = sqlite3_step(st.s);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db_));
    std::vector<std::string> row;
    for (int c = 0; c < sqlite3_column_count(st.s); ++c) {
      const unsigned char* t = sqlite3_column_text(st.s, c);
      row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::map<std::string, FamilyCounts> Store::summary() {
  std::map<std::string, FamilyCounts> out;
  for (const auto& f : families()) out[f];
  for (const auto& row : query("SELECT family, SUM(generated), SUM(non_compiling), SUM(dup_original), SUM(duplicate), "
                               "SUM(unique_count) FROM family_summary GROUP BY family")) {
    FamilyCounts c;
    c.generated = std::stoi(row[1]);
    c.non_compiling = std::stoi(row[2]);
    c.duplicate_original = std::stoi(row[3]);
    c.duplicate = std::stoi(row[4]);
    c.unique = std::stoi(row[5]);
    out[row[0]] = c;
  }
  return out;
}

}  // namespace dirigo::mutate
