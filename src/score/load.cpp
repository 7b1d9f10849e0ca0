#include "score/load.h"

#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

namespace dirigo::score {
namespace {

class Db {
 public:
  explicit Db(const std::string& path) : path_(path) {
    if (!std::filesystem::exists(path)) throw std::runtime_error("results store " + path + " does not exist");
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error("cannot open results store " + path + ": " + msg);
    }
    sqlite3_busy_timeout(db_, 10000);
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  bool has_table(const std::string& name) {
    bool found = false;
    each("SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = '" + name + "'",
         [&](sqlite3_stmt*) { found = true; });
    return found;
  }

  // Runs `sql` and calls `row` for each result row; errors name the store and the query.
  void each(const std::string& sql, const std::function<void(sqlite3_stmt*)>& row) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      throw std::runtime_error("results store " + path_ + ": " + sqlite3_errmsg(db_) +
                               " (is it a kill-matrix store? see docs/mutation.md) in: " + sql);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      try {
        row(st);
      } catch (...) {
        sqlite3_finalize(st);
        throw;
      }
    }
    std::string err = rc == SQLITE_DONE ? "" : sqlite3_errmsg(db_);
    sqlite3_finalize(st);
    if (!err.empty()) throw std::runtime_error("results store " + path_ + ": " + err);
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

std::string text(sqlite3_stmt* st, int c) {
  const unsigned char* t = sqlite3_column_text(st, c);
  return t ? reinterpret_cast<const char*>(t) : "";
}
bool is_null(sqlite3_stmt* st, int c) { return sqlite3_column_type(st, c) == SQLITE_NULL; }
double real_or_nan(sqlite3_stmt* st, int c) { return is_null(st, c) ? std::nan("") : sqlite3_column_double(st, c); }

// Appends a problem's input or mutant and records where it went: id -> (problem, index).
template <class T>
void place(std::vector<T>& list, T&& x, size_t problem, long long id,
           std::map<long long, std::pair<size_t, size_t>>& at) {
  at[id] = {problem, list.size()};
  list.push_back(std::move(x));
}

}  // namespace

Matrix load_matrix(const std::string& path, const LoadOptions& o) {
  if (o.source != "auto" && o.source != "cpu" && o.source != "gpu")
    throw std::runtime_error("source must be auto, cpu or gpu, not '" + o.source + "'");
  Db db(path);
  for (const char* t : {"substrates", "mutants", "inputs", "runs"})
    if (!db.has_table(t)) throw std::runtime_error("results store " + path + " has no table " + t);
  const bool has_class = db.has_table("mutant_class");

  // Problems: substrates with inputs, in id order.
  std::map<long long, size_t> problem_of;  // substrate id -> index
  std::map<long long, std::pair<size_t, size_t>> input_at;  // input id -> (problem, input index)
  Matrix m;
  std::multiset<std::string> names;
  db.each("SELECT i.substrate_id, i.id, i.name, i.problem, i.distribution, i.seed, i.family, s.path "
          "FROM inputs i JOIN substrates s ON s.id = i.substrate_id ORDER BY i.substrate_id, i.id",
          [&](sqlite3_stmt* st) {
            long long sid = sqlite3_column_int64(st, 0);
            auto [it, fresh] = problem_of.try_emplace(sid, m.problems.size());
            if (fresh) {
              Problem p;
              p.name = text(st, 3);
              if (p.name.empty()) p.name = std::filesystem::path(text(st, 7)).stem().string();
              names.insert(p.name);
              m.problems.push_back(std::move(p));
            }
            Input in{.name = text(st, 2), .distribution = text(st, 4), .family = text(st, 6),
                     .seed = sqlite3_column_int64(st, 5)};
            place(m.problems[it->second].inputs, std::move(in), it->second, sqlite3_column_int64(st, 1), input_at);
          });
  if (m.problems.empty())
    throw std::runtime_error("results store " + path + " has no inputs: no kill matrix yet (dirigo killmatrix writes it)");
  // Two substrates of one problem (e.g. two solutions) stay apart.
  for (auto& [sid, idx] : problem_of)
    if (names.count(m.problems[idx].name) > 1) m.problems[idx].name += "#" + std::to_string(sid);

  // Which source each problem uses.
  std::map<long long, std::set<std::string>> sources;
  db.each("SELECT DISTINCT substrate_id, source FROM runs WHERE mutant_id IS NULL",
          [&](sqlite3_stmt* st) { sources[sqlite3_column_int64(st, 0)].insert(text(st, 1)); });
  std::map<long long, std::string> source_of;
  for (auto& [sid, idx] : problem_of) {
    const auto& have = sources[sid];
    std::string s = o.source != "auto" ? o.source : have.count("gpu") ? "gpu" : "cpu";
    source_of[sid] = s;
    m.problems[idx].source = s;
  }

  // Mutants: unique ones of problems with inputs.
  std::map<long long, std::pair<size_t, size_t>> mutant_at;
  std::string mq = has_class
                       ? "SELECT m.id, m.substrate_id, m.rule, m.family, c.verdict, c.equivalent FROM mutants m "
                         "LEFT JOIN mutant_class c ON c.mutant_id = m.id WHERE m.status = 'unique' "
                         "ORDER BY m.substrate_id, m.ordinal"
                       : "SELECT m.id, m.substrate_id, m.rule, m.family, NULL, NULL FROM mutants m "
                         "WHERE m.status = 'unique' ORDER BY m.substrate_id, m.ordinal";
  db.each(mq, [&](sqlite3_stmt* st) {
    auto it = problem_of.find(sqlite3_column_int64(st, 1));
    if (it == problem_of.end()) return;
    Mutant mu{.id = sqlite3_column_int64(st, 0), .rule = text(st, 2), .family = text(st, 3), .verdict = text(st, 4),
              .equivalent = !is_null(st, 5) && sqlite3_column_int64(st, 5) != 0};
    place(m.problems[it->second].mutants, std::move(mu), it->second, mu.id, mutant_at);
  });
  if (db.has_table("substrate_check"))
    db.each("SELECT substrate_id, verdict FROM substrate_check", [&](sqlite3_stmt* st) {
      auto it = problem_of.find(sqlite3_column_int64(st, 0));
      if (it != problem_of.end()) m.problems[it->second].substrate_verdict = text(st, 1);
    });
  if (db.has_table("harness_runs")) {
    std::set<std::string> names;
    db.each("SELECT protocol, substrate_id, mutant_id, verdict FROM harness_runs", [&](sqlite3_stmt* st) {
      std::string proto = text(st, 0), verdict = text(st, 3);
      if (verdict != "accept" && verdict != "reject" && verdict != "error")
        throw std::runtime_error("results store " + path + ": harness verdict '" + verdict + "' (accept|reject|error)");
      auto it = problem_of.find(sqlite3_column_int64(st, 1));
      if (it == problem_of.end()) return;
      names.insert(proto);
      if (is_null(st, 2)) {
        m.problems[it->second].harness_substrate[proto] = verdict;
        return;
      }
      auto mu = mutant_at.find(sqlite3_column_int64(st, 2));
      if (mu != mutant_at.end()) m.problems[mu->second.first].mutants[mu->second.second].harness[proto] = verdict;
    });
    m.harnesses.assign(names.begin(), names.end());
  }
  for (auto& p : m.problems) {
    p.substrate.assign(p.inputs.size(), Outcome{});
    p.runs.assign(p.mutants.size(), std::vector<Outcome>(p.inputs.size()));
  }

  long long total = 0, done = 0;
  db.each("SELECT COUNT(*) FROM runs", [&](sqlite3_stmt* st) { total = sqlite3_column_int64(st, 0); });
  db.each("SELECT substrate_id, mutant_id, input_id, source, status, t_eq, t_eq32, max_abs, nonfinite_mismatch "
          "FROM runs",
          [&](sqlite3_stmt* st) {
            if (o.progress && ++done % 20000 == 0) o.progress(done, total);
            auto in = input_at.find(sqlite3_column_int64(st, 2));
            if (in == input_at.end()) return;  // an input of a substrate no longer in the store
            auto sid = sqlite3_column_int64(st, 0);
            auto src = source_of.find(sid);
            if (src == source_of.end() || text(st, 3) != src->second) return;
            Outcome out;
            std::string status = text(st, 4);
            try {
              out.status = parse_status(status);
            } catch (const std::exception& e) {
              throw std::runtime_error("results store " + path + ": " + e.what());
            }
            out.t_eq = real_or_nan(st, 5);
            out.t_eq32 = real_or_nan(st, 6);
            out.max_abs = real_or_nan(st, 7);
            out.nonfinite_mismatch = !is_null(st, 8) && sqlite3_column_int64(st, 8) > 0;
            auto [pi, ii] = in->second;
            if (is_null(st, 1)) {
              m.problems[pi].substrate[ii] = out;
              return;
            }
            auto mu = mutant_at.find(sqlite3_column_int64(st, 1));
            if (mu == mutant_at.end()) return;  // not a unique mutant: no cell
            if (mu->second.first != pi)
              throw std::runtime_error("results store " + path + ": run of mutant " +
                                       std::to_string(sqlite3_column_int64(st, 1)) + " on an input of another substrate");
            m.problems[pi].runs[mu->second.second][ii] = out;
          });
  if (o.progress) o.progress(total, total);
  return m;
}

}  // namespace dirigo::score
