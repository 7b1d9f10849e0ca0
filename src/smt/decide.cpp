#include "smt/decide.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <thread>
#include <tuple>
#include <cmath>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include <fmt/format.h>
#include <z3++.h>

#include "ir/polynomial.h"
#include "ir/walk.h"
#include "smt/falsify.h"
#include "smt/tolerance.h"
#include "smt/translate.h"

namespace dirigo::smt {

using ir::Expr;
using ir::Op;
using ir::Sort;
using ir::Value;
using Clock = std::chrono::steady_clock;

std::string_view verdict_name(Verdict v) {
  static constexpr std::string_view n[] = {"equal", "differ", "unknown", "timeout"};
  return n[static_cast<size_t>(v)];
}

std::string_view stage_name(Stage s) {
  static constexpr std::string_view n[] = {"canonical", "axioms", "cut-points", "cache", "solver", "tolerance", "sampling", "error", "domain", "sparse"};
  return n[static_cast<size_t>(s)];
}

bool values_differ(const Value& x, const Value& y, double rtol, double atol) {
  if (x.sort != y.sort) return true;
  if (x.sort != Sort::Real) return x.bits != y.bits;
  double p = x.real, q = y.real;
  if (std::isnan(p) || std::isnan(q)) return std::isnan(p) != std::isnan(q);
  if (std::isinf(p) || std::isinf(q)) return p != q;
  return std::fabs(p - q) > atol + rtol * std::max(std::fabs(p), std::fabs(q));
}

// ---- leaf values and environments

namespace {

Value zero_of(Sort s) {
  if (s == Sort::Real) return Value::of_real(0);
  if (s == Sort::Bool) return Value::of_bool(false);
  return Value::of_bv(s, 0);
}

struct ElemKeyHash {
  size_t operator()(const std::pair<int32_t, int64_t>& k) const {
    return std::hash<uint64_t>()(static_cast<uint64_t>(k.second) * 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(k.first));
  }
};
using ElemSet = std::unordered_set<std::pair<int32_t, int64_t>, ElemKeyHash>;

ir::Env make_env(const std::vector<LeafValue>& leaves, const std::vector<std::pair<int32_t, double>>& fills = {}) {
  auto elems = std::make_shared<std::unordered_map<std::pair<int32_t, int64_t>, Value, ElemKeyHash>>();
  auto filled = std::make_shared<std::unordered_map<int32_t, double>>(fills.begin(), fills.end());
  auto vars = std::make_shared<std::unordered_map<std::string, Value>>();
  for (const LeafValue& l : leaves) {
    if (l.kind == LeafValue::Kind::Elem) (*elems)[{l.tensor, l.index}] = l.value;
    else (*vars)[l.name] = l.value;
  }
  ir::Env env;
  env.elem = [elems, filled](int32_t t, int64_t i, Sort s) {
    auto it = elems->find({t, i});
    if (it != elems->end() && it->second.sort == s) return it->second;
    auto f = filled->find(t);
    return f != filled->end() && s == Sort::Real ? Value::of_real(f->second) : zero_of(s);
  };
  env.var = [vars](std::string_view name, Sort s) {
    auto it = vars->find(std::string(name));
    if (it != vars->end() && it->second.sort == s) return it->second;
    if (name == kLn2Var && s == Sort::Real) return Value::of_real(0.6931471805599453);
    return zero_of(s);
  };
  return env;
}

std::string value_string(const Value& v) {
  if (v.sort == Sort::Real) return fmt::format("{}", v.real);
  if (v.sort == Sort::Bool) return v.bits ? "true" : "false";
  return fmt::format("{}:{}", v.bits, ir::sort_name(v.sort));
}

// The default for a leaf the model leaves unconstrained.
LeafValue default_leaf(Expr leaf) {
  LeafValue lv;
  if (leaf->op == Op::Var) {
    lv.kind = LeafValue::Kind::Var;
    lv.name = std::string(leaf->name());
    lv.value = zero_of(leaf->sort);
    if (ir::is_bv(leaf->sort)) lv.value.bits = leaf->bounds().lo;
  } else {
    lv.kind = LeafValue::Kind::Elem;
    lv.tensor = leaf->tensor();
    lv.index = leaf->index();
    lv.value = zero_of(leaf->sort);
  }
  return lv;
}

Value value_from_model(const z3::model& m, const z3::expr& v, Sort s) {
  z3::expr r = m.eval(v, true);
  if (s == Sort::Bool) return Value::of_bool(r.is_true());
  if (ir::is_bv(s)) {
    uint64_t bits = 0;
    if (!Z3_get_numeral_uint64(r.ctx(), r, &bits)) throw std::runtime_error("bitvector model value: " + r.to_string());
    return Value::of_bv(s, bits);
  }
  return Value::of_real(numeral_to_double(r));
}

// The Var leaves of both sides (they need bound-aware defaults). One DAG walk,
// no sorting: the originals can be huge.
std::vector<Expr> original_vars(std::initializer_list<Expr> roots, const std::vector<Expr>& more = {}) {
  std::vector<Expr> out, stack;
  std::unordered_set<Expr> seen;
  for (Expr root : roots)
    if (root && seen.insert(root).second) stack.push_back(root);
  for (Expr root : more)
    if (root && seen.insert(root).second) stack.push_back(root);
  while (!stack.empty()) {
    Expr e = stack.back();
    stack.pop_back();
    if (e->op == Op::Var) out.push_back(e);
    for (Expr c : e->args())
      if (seen.insert(c).second) stack.push_back(c);
  }
  return out;
}

// Witness from a model: every Var of the originals (model value, or a default
// when the query did not contain it), every tensor element the query
// contained, and the elements symbolic loads read. Elements not listed are 0.
std::vector<LeafValue> extract_leaves(const z3::model& m, const Translator& tr, const std::vector<Expr>& vars) {
  std::vector<LeafValue> out;
  ElemSet elems;
  for (Expr v : vars) {
    if (v->name().starts_with("!")) continue;  // cut variables and reserved constants are not inputs
    LeafValue lv = default_leaf(v);
    if (const z3::expr* z = tr.lookup(v)) lv.value = value_from_model(m, *z, v->sort);
    out.push_back(std::move(lv));
  }
  for (const auto& [leaf, z] : tr.leaves()) {
    if (leaf->op != Op::TensorElem) continue;
    LeafValue lv = default_leaf(leaf);
    lv.value = value_from_model(m, z, leaf->sort);
    elems.insert({lv.tensor, lv.index});
    out.push_back(std::move(lv));
  }
  for (const LoadApp& l : tr.loads()) {
    Value idx = value_from_model(m, l.index, Sort::BV64);
    auto index = static_cast<int64_t>(idx.bits);
    if (!elems.insert({l.tensor, index}).second) continue;
    LeafValue lv;
    lv.kind = LeafValue::Kind::Elem;
    lv.tensor = l.tensor;
    lv.index = index;
    lv.value = value_from_model(m, l.value, l.node->sort);
    out.push_back(std::move(lv));
  }
  return out;
}

bool is_timeout_reason(const std::string& r) {
  return r.find("timeout") != std::string::npos || r.find("canceled") != std::string::npos || r.find("interrupted") != std::string::npos ||
         r.find("resource") != std::string::npos || r.find("rlimit") != std::string::npos;
}

void apply_params(z3::context& z, z3::solver& s, const DecideOptions& opt) {
  // No Z3 "timeout": it arms Z3 4.8.12's thread-pool scoped_timer, which deadlocks when it expires
  // inside a nested timer (Z3Prover/z3#5369/#5990: the process hangs until killed). The
  // watchdog in Impl::check interrupts the context at the deadline instead, the same cancel flag.
  z3::params p(z);
  if (opt.rlimit) p.set("rlimit", opt.rlimit);
  p.set("random_seed", opt.random_seed);
  p.set("model", true);
  for (const auto& [k, v] : opt.solver_params) p.set(k.c_str(), v);
  s.set(p);
}

}  // namespace

ir::Env Witness::env() const { return make_env(leaves, fills); }
ir::Env SatResult::env() const { return make_env(model); }

std::string Witness::to_string(const ir::Context& ctx) const {
  std::string s;
  for (const LeafValue& l : leaves) {
    if (l.kind == LeafValue::Kind::Var) s += fmt::format("{} = {}; ", l.name, value_string(l.value));
    else s += fmt::format("{}[{}] = {}; ", ctx.tensor_name(l.tensor), l.index, value_string(l.value));
  }
  for (const auto& [t, v] : fills) s += fmt::format("{}[*] = {}; ", ctx.tensor_name(t), v);
  s += fmt::format("a = {}, b = {}", value_string(a), value_string(b));
  return s;
}

// ---- cache

size_t ResultCache::KeyHash::operator()(const Key& k) const {
  uint64_t h = k.ha * 0x9E3779B97F4A7C15ull;
  for (uint64_t x : {k.hb, k.sa, k.sb, k.opts}) h = (h ^ x) * 0x100000001B3ull + (h >> 29);
  return static_cast<size_t>(h);
}

std::optional<ResultCache::Entry> ResultCache::lookup(const Key& k, const Key* alt) {
  std::lock_guard lock(mu_);
  auto it = map_.find(k);
  if (it == map_.end() && alt) it = map_.find(*alt);
  if (it == map_.end()) { ++misses_; return std::nullopt; }
  ++hits_;
  return it->second;
}

void ResultCache::store(const Key& k, Entry e) {
  std::lock_guard lock(mu_);
  if (map_.size() >= capacity_) {
    map_.clear();
    ++flushes_;
  }
  map_[k] = std::move(e);
}

size_t ResultCache::size() const {
  std::lock_guard lock(mu_);
  return map_.size();
}

void ResultCache::clear() {
  std::lock_guard lock(mu_);
  map_.clear();
}

// ---- the solver

namespace {

// What one Z3 check answered, in the caller's context.
struct CheckResult {
  z3::check_result r = z3::unknown;
  std::string reason;              // unknown: Z3's reason
  std::optional<z3::model> model;  // sat
};

std::atomic<size_t> abandoned{0};

// Past the deadline Z3 is interrupted every 50 ms; one that has not returned this long after the
// deadline is abandoned (Z3 4.8.12's arithmetic ignores the interrupt on some nonlinear queries:
// docs/smt.md "Checks Z3 does not stop").
constexpr auto kAbandonAfter = std::chrono::milliseconds(400);

// Test hook (docs/smt.md): DIRIGO_INJECT_FAULT=z3-stall makes every check sleep past the abandon
// limit before Z3 starts, as a check Z3 does not stop would run past it.
bool z3_stalls() {
  const char* f = std::getenv("DIRIGO_INJECT_FAULT");
  return f && std::string_view(f) == "z3-stall";
}

}  // namespace

struct Solver::Impl {
  std::unique_ptr<z3::context> ctx = std::make_unique<z3::context>();
  bool interrupted = false;  // the last check was interrupted (a Z3 exception from it is a timeout)

  // The checks run in a context of their own (`runner`), on a thread of their own, so that a check Z3
  // does not stop can be left running: its context goes with it and the caller's is never touched by
  // it. Replaced after every interrupted check.
  struct Run {
    std::unique_ptr<z3::context> z = std::make_unique<z3::context>();
    std::optional<z3::solver> solver;      // this check's, in z (destroyed before z: declared after it)
    std::optional<z3::expr_vector> given;  // the assertions, translated into z
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    z3::check_result r = z3::unknown;
    std::string reason;
    std::exception_ptr error;
  };
  std::shared_ptr<Run> runner = std::make_shared<Run>();

  // The assertions (in the caller's context `z`) translated into the runner's context and checked
  // there with opt's parameters under a watchdog, the only wall-clock limit Z3 gets (apply_params
  // sets no Z3 timeout): the runner's context is interrupted at the deadline. The assertions are
  // added on the runner's thread too: Z3 simplifies what it is given as it is asserted, which alone
  // can outlast the budget on large locations. Interrupted there, Z3 throws (a timeout:
  // `interrupted` is set). A model comes back translated into `z`.
  CheckResult check(z3::context& z, const z3::expr_vector& assertions, const DecideOptions& opt, unsigned timeout_ms) {
    auto deadline = Clock::now() + std::chrono::milliseconds(std::max(1u, timeout_ms));
    std::shared_ptr<Run> run = runner;
    run->done = false, run->reason.clear(), run->error = nullptr;
    run->given.reset();
    run->solver.emplace(*run->z);
    apply_params(*run->z, *run->solver, opt);
    run->given.emplace(*run->z, assertions);  // Z3_ast_vector_translate
    std::thread worker([run, stall = z3_stalls()] {
      z3::check_result r = z3::unknown;
      std::string reason;
      std::exception_ptr error;
      if (stall) std::this_thread::sleep_for(2 * kAbandonAfter + std::chrono::milliseconds(200));
      try {
        for (unsigned i = 0; i < run->given->size(); ++i) run->solver->add((*run->given)[i]);
        r = run->solver->check();
        if (r == z3::unknown) reason = run->solver->reason_unknown();
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard lock(run->m);
      run->r = r, run->reason = std::move(reason), run->error = error, run->done = true;
      run->cv.notify_all();
    });
    bool fired = false, finished;
    {
      std::unique_lock lock(run->m);
      finished = run->cv.wait_until(lock, deadline, [&] { return run->done; });
      // Past the deadline the interrupt is repeated until Z3 returns: one delivered between the
      // assertions and check() (or in a phase that clears the cancel flag) would otherwise be lost.
      while (!finished && Clock::now() < deadline + kAbandonAfter) {
        fired = true;
        run->z->interrupt();
        finished = run->cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return run->done; });
      }
    }
    interrupted = fired;
    if (!finished) {
      // The thread keeps the runner (context, solver, assertions) alive; this Solver takes a new one.
      worker.detach();
      ++abandoned;
      runner = std::make_shared<Run>();
      return {z3::unknown, "interrupted (Z3 did not stop when interrupted: the check was abandoned)", {}};
    }
    worker.join();
    if (fired) runner = std::make_shared<Run>();  // an interrupted context is not reused
    if (run->error) std::rethrow_exception(run->error);
    CheckResult out{run->r, run->reason, {}};
    if (run->r == z3::sat) {
      z3::model m = run->solver->get_model();
      out.model.emplace(m, z, z3::model::translate{});
    }
    return out;
  }
};

size_t abandoned_checks() { return abandoned.load(); }

Solver::Solver(std::shared_ptr<ResultCache> cache)
    : impl_(std::make_unique<Impl>()), cache_(cache ? std::move(cache) : std::make_shared<ResultCache>()) {}
Solver::~Solver() = default;

Solver& thread_solver() {
  static std::shared_ptr<ResultCache> shared = std::make_shared<ResultCache>();
  thread_local Solver solver(shared);
  return solver;
}

namespace {

// The query that reaches Z3 after cut points.
struct Query {
  bool real = false;  // reals: goal is diff != 0 ; otherwise qa != qb
  Expr diff = nullptr, qa = nullptr, qb = nullptr;
  std::vector<std::pair<Expr, Expr>> cuts;  // (canonically named cut variable, original sub-expression)
  size_t num_cuts = 0;                      // shared sub-terms cut (some may cancel in the difference)
  bool trivially_equal() const { return real ? (diff->op == Op::ConstReal && diff->rational() == 0) : qa == qb; }
};

// Whether a term of a canonical sum has a negative numeric coefficient.
bool negative_term(Expr t) {
  if (t->op == Op::ConstReal) return t->rational() < 0;
  return t->op == Op::Mul && t->arg(0)->op == Op::ConstReal && t->arg(0)->rational() < 0;
}

// Reals: terms shared by both sums cancel in the canonical difference a - b,
// which is split back into its positive part A and negated negative part B
// (A - B == a - b). Then cut points replace sub-terms shared by A and B, and
// the query is the difference of the cut pair. Cut variables are renamed
// "!cut<k>" in order of appearance so that the query's structural hash is
// stable (cache key).
// A canonical difference d split into (A, B) with A - B == d: A holds the
// terms with a non-negative coefficient, B the negated negative ones.
std::pair<Expr, Expr> split_difference(ir::Context& ctx, Expr d) {
  std::vector<Expr> pos, neg;
  auto place = [&](Expr t) {
    if (negative_term(t)) neg.push_back(ctx.neg(t));
    else pos.push_back(t);
  };
  if (d->op == Op::Add) {
    for (Expr t : d->args()) place(t);
  } else {
    place(d);
  }
  return {pos.empty() ? ctx.real_const(0) : ctx.add(pos), neg.empty() ? ctx.real_const(0) : ctx.add(neg)};
}

// Rebuild root with some nodes replaced (iterative, memoized).
Expr replace_nodes(ir::Context& ctx, Expr root, const std::unordered_map<Expr, Expr>& repl,
                   std::unordered_map<Expr, Expr>& memo) {
  std::vector<Expr> kids;
  auto done = [&](Expr e) {  // a replaced node is done as soon as it is seen: its operands are not visited
    if (memo.count(e)) return true;
    auto r = repl.find(e);
    if (r == repl.end()) return false;
    memo[e] = r->second;
    return true;
  };
  ir::post_order(root, done, [&](Expr e) {
    kids.clear();
    bool changed = false;
    for (Expr c : e->args()) {
      kids.push_back(memo.at(c));
      changed = changed || kids.back() != c;
    }
    memo[e] = changed ? ctx.rebuild(e, kids) : e;
  });
  return memo.at(root);
}

// Originals larger than this (tree size, saturating) are sampled before they are normalized.
constexpr uint64_t kSampleFirstNodes = 20000;
// Differences past this many nodes are not expanded into monomials (decide's step 2a).
constexpr size_t kExpandNodes = 200'000;

constexpr const char* kCutStage = "while cutting shared sub-terms (cut points)";

// Cut points for shared PARTS of sums. cut_shared replaces shared sub-terms,
// but gelu(S1) vs gelu(S2), with S1 and S2 sharing 9,999 of 10,000 terms,
// shares only the terms: each becomes its own variable and Z3 gets two
// 10,000-term sums. Here a sum of A pairs with the sum of B that shares the
// most terms with it; the common part becomes ONE variable:
// S1 -> v + r1, S2 -> v + r2.
void cut_shared_sums(ir::Context& ctx, Expr& pa, Expr& pb, std::vector<std::pair<Expr, Expr>>& cuts, Ticker& ticker) {
  constexpr size_t kMinTerms = 8;
  auto collect_sums = [&ticker](Expr root) {
    std::vector<Expr> sums, stack{root};
    std::unordered_set<Expr> seen{root};
    while (!stack.empty()) {
      ticker.tick(kCutStage);
      Expr e = stack.back();
      stack.pop_back();
      if (e->op == Op::Add && e->nargs >= kMinTerms) sums.push_back(e);
      for (Expr c : e->args())
        if (seen.insert(c).second) stack.push_back(c);
    }
    return sums;
  };
  std::vector<Expr> sa = collect_sums(pa), sb = collect_sums(pb);
  if (sa.empty() || sb.empty()) return;
  std::unordered_set<Expr> in_a(sa.begin(), sa.end());
  std::unordered_map<Expr, std::vector<size_t>> holders;  // term -> sums of B containing it
  for (size_t j = 0; j < sb.size(); ++j)
    if (!in_a.count(sb[j]))
      for (Expr t : sb[j]->args())
        if (!t->is_const()) holders[t].push_back(j);
  std::unordered_map<Expr, Expr> repl;
  std::vector<bool> b_used(sb.size());
  std::unordered_set<Expr> in_b(sb.begin(), sb.end());
  for (Expr A : sa) {
    ticker.check(kCutStage);
    if (in_b.count(A)) continue;  // shared whole: cut_shared's job
    std::unordered_map<size_t, size_t> overlap;
    for (Expr t : A->args())
      if (auto h = holders.find(t); h != holders.end())
        for (size_t j : h->second) ++overlap[j];
    size_t best = 0, best_j = 0;
    for (auto [j, n] : overlap)
      if (!b_used[j] && n > best) best = n, best_j = j;
    Expr B = sb[best_j];
    if (best < kMinTerms / 2 || 2 * best < std::min(A->nargs, B->nargs)) continue;
    std::unordered_set<Expr> b_terms(B->args().begin(), B->args().end());
    std::vector<Expr> common, rest_a, rest_b;
    for (Expr t : A->args()) (!t->is_const() && b_terms.count(t) ? common : rest_a).push_back(t);
    std::unordered_set<Expr> common_set(common.begin(), common.end());
    for (Expr t : B->args())
      if (!common_set.count(t)) rest_b.push_back(t);
    Expr v = ctx.fresh_var("!sum", Sort::Real);
    cuts.push_back({v, ctx.add(common)});
    rest_a.push_back(v);
    rest_b.push_back(v);
    repl[A] = ctx.add(rest_a);
    repl[B] = ctx.add(rest_b);
    b_used[best_j] = true;
  }
  if (repl.empty()) return;
  std::unordered_map<Expr, Expr> memo;
  pa = replace_nodes(ctx, pa, repl, memo);
  pb = replace_nodes(ctx, pb, repl, memo);
}

// need_qb: a tolerance query wants the reference side for its rtol*|ref| term (the one
// convention, |ref - cand| <= atol + rtol*|ref|); it gets the (small) cut residual A', a
// heuristic — exceeding the tolerance is decided afterwards by evaluating the originals.
Query reduce(ir::Context& ctx, Expr na, Expr nb, bool cut_points, bool need_qb, Ticker& ticker) {
  Query q;
  q.real = na->sort == Sort::Real;
  Expr pa = na, pb = nb;
  if (q.real) {
    Expr d0 = ctx.sub(na, nb);
    if (need_qb) q.qb = na;
    if (d0->op == Op::ConstReal) { q.diff = d0; return q; }
    std::tie(pa, pb) = split_difference(ctx, d0);
  }
  std::vector<std::pair<Expr, Expr>> cuts;
  Expr ca = pa, cb = pb;
  if (cut_points) {
    if (q.real) cut_shared_sums(ctx, ca, cb, cuts, ticker);
    ticker.check(kCutStage);
    ir::CutResult cr = ir::cut_shared(ctx, ca, cb);
    ticker.check(kCutStage);
    ca = cr.a, cb = cr.b;
    cuts.insert(cuts.end(), cr.cuts.begin(), cr.cuts.end());
  }
  q.num_cuts = cuts.size();
  std::unordered_map<Expr, size_t> cut_index;
  for (size_t i = 0; i < cuts.size(); ++i) cut_index.emplace(cuts[i].first, i);
  std::unordered_map<Expr, Expr> renamed;
  auto rename = [&](Expr leaf) -> Expr {
    auto it = cut_index.find(leaf);
    if (it == cut_index.end()) return nullptr;
    auto r = renamed.find(leaf);
    if (r != renamed.end()) return r->second;
    Expr v = ctx.var(fmt::format("!cut{}", renamed.size()), leaf->sort);
    renamed.emplace(leaf, v);
    q.cuts.push_back({v, cuts[it->second].second});
    return v;
  };
  ir::Substituter sub(ctx, rename);
  if (q.real) {
    Expr d = ctx.sub(ca, cb);
    if (!cuts.empty())
      for (Expr l : ir::leaves(d)) rename(l);  // names in order of appearance in the difference
    q.diff = cuts.empty() ? d : sub(d);
    if (need_qb) q.qb = cuts.empty() ? ca : sub(ca);
  } else {
    if (!cuts.empty()) {
      for (Expr root : {ca, cb})
        for (Expr l : ir::leaves(root)) rename(l);
    }
    q.qa = cuts.empty() ? ca : sub(ca);
    q.qb = cuts.empty() ? cb : sub(cb);
  }
  return q;
}

// Key of an unordered pair (y may be null for a single difference term).
// `uncut` marks a proof that needed the cut definitions: it holds for the
// normalized pair, not for the cut query.
ResultCache::Key cache_key(Expr x, Expr y, const DecideOptions& opt, bool uncut) {
  uint64_t assumed = 0;
  for (Expr c : opt.assumptions) assumed = (assumed ^ c->hash) * 0x100000001B3ull;
  uint64_t opts = assumed ^ opt.axioms.fingerprint() ^ (uint64_t{opt.cut_points} << 40) ^
                  (uint64_t{opt.tolerance.has_value()} << 41) ^ (uint64_t{y == nullptr} << 42) ^
                  (uint64_t{uncut} << 43);
  if (!y) return {x->hash, 0, x->size, 0, opts};
  if (std::pair(x->hash, x->size) > std::pair(y->hash, y->size)) std::swap(x, y);
  return {x->hash, y->hash, x->size, y->size, opts};
}


}  // namespace

Decision Solver::decide(ir::Context& ctx, Expr a, Expr b, const DecideOptions& opt) {
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::milliseconds(opt.timeout_ms);
  auto remaining_ms = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left > 0 ? static_cast<unsigned>(left) : 0u;
  };
  Decision d;
  ++stats_.decisions;
  auto done = [&](Verdict v, Stage s, std::string reason = {}) {
    d.verdict = v;
    d.stage = s;
    d.reason = std::move(reason);
    d.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (v == Verdict::Timeout) ++stats_.timeouts;
    return d;
  };
  if (!a || !b) return done(Verdict::Unknown, Stage::Error, "null expression");
  if (a == b) { ++stats_.equal_canonical; return done(Verdict::Equal, Stage::Canonical); }
  for (Expr c : opt.assumptions)
    if (!c || c->sort != Sort::Bool) return done(Verdict::Unknown, Stage::Error, "assumptions must be Bool expressions");
  if (a->sort != b->sort)
    return done(Verdict::Unknown, Stage::Error,
                fmt::format("sort mismatch: {} vs {}", ir::sort_name(a->sort), ir::sort_name(b->sort)));

  std::vector<Expr> vars;  // Var leaves of the original expressions, computed on first need
  bool have_vars = false;
  Expr na = a, nb = b;  // what the solver is asked about: the normalized residuals (set below)
  Ticker ticker(deadline);  // every stage below stops (StageTimeout) once it passed
  auto confirm = [&](Witness& w) -> std::string {  // "" when confirmed, else why not
    // A reduction is evaluated point by point: one over 10^8 points is seconds of work.
    ir::Env env = w.env();
    env.tick = [&] { ticker.check("while evaluating a witness at its reductions' points"); };
    ir::Evaluator ev(env, ir::Precision::F64);
    w.a = ev(a);
    w.b = ev(b);
    if (w.a.undef || w.b.undef) return "witness depends on an undefined value";
    for (Expr c : opt.assumptions) {
      Value v = ev(c);
      if (v.undef || !v.bits) return "witness violates an assumption";
    }
    if (!values_differ(w.a, w.b, opt.confirm_rtol, opt.confirm_atol))
      return fmt::format("spurious witness (both sides evaluate to {} / {})", value_string(w.a), value_string(w.b));
    if (opt.tolerance && w.a.sort == Sort::Real)
      w.exceeds_tolerance = std::fabs(w.a.real - w.b.real) > opt.tolerance->atol + opt.tolerance->rtol * std::fabs(w.a.real);
    if (opt.tolerance && !w.exceeds_tolerance && (na != a || nb != b)) {
      // With a tolerance the normalizer's approximate axioms (snapped constants, GELU forms) hold:
      // a model the solver found for their forms (a cut left free, say) is no witness when those
      // forms agree at it and the originals differ within the tolerance — by the approximation
      // itself (0.16666667f vs 1/6: a 10^-8 difference every model would "confirm")
      Value ra = ev(na), rb = ev(nb);
      if (!ra.undef && !rb.undef && !values_differ(ra, rb, opt.confirm_rtol, opt.confirm_atol))
        return fmt::format("spurious witness (the normalized forms agree: {} / {}; the originals differ only by "
                           "an approximation the tolerance admits)", value_string(ra), value_string(rb));
    }
    return {};
  };

  Stage stage = Stage::Canonical;  // the stage running now (a timeout names it)
  try {
    // Reals: terms the two sums share cancel in the canonical difference; only
    // the residual is normalized and sent on (10,000-term sums stay cheap).
    if (a->sort == Sort::Real) {
      Expr d0 = ctx.sub(a, b);
      if (d0->op == Op::ConstReal && d0->rational() == 0) {
        ++stats_.equal_canonical;
        return done(Verdict::Equal, Stage::Canonical);
      }
      std::tie(na, nb) = split_difference(ctx, d0);
    }
    // Random points first for large originals: evaluation is one linear pass, while
    // normalizing a 10^5-node pooled sum can take the rest of the budget before a dropped term
    // shows. Small ones go to the cheap exact stages first.
    bool points_tried = false;
    auto sample = [&]() -> bool {
      points_tried = true;
      if (opt.falsify_points == 0) return false;
      stage = Stage::Sampling;
      FalsifyOptions fo{.points = opt.falsify_points, .seed = opt.random_seed,
                        .bound = opt.tolerance ? opt.tolerance->bound : 10, .tolerance = opt.tolerance,
                        .confirm_rtol = opt.confirm_rtol, .confirm_atol = opt.confirm_atol,
                        .assumptions = &opt.assumptions, .deadline = &ticker,
                        // by name, not by the process-wide tensor id: which points are drawn must not
                        // depend on how many tensors were registered before (other locations, workers)
                        .key_of = [&ctx](int32_t t) { return name_key(ctx.tensor_name(t)); }};
      auto w = falsify(a, b, fo);
      if (!w || (!w->exceeds_tolerance && opt.tolerance)) return false;
      ++stats_.differ_sampled;
      d.witness = std::move(*w);
      return true;
    };
    if (std::max(a->size, b->size) > kSampleFirstNodes && sample()) return done(Verdict::Differ, Stage::Sampling);
    stage = Stage::Axioms;
    ticker.check("before normalizing both sides (axioms)");
    Normalizer norm(ctx, opt.axioms);
    norm.set_deadline(&ticker);
    Expr ca = na, cb = nb;
    na = norm(na), nb = norm(nb);
    // An Equal from here on may rest on the approximation equivalences that fired (gelu_tanh = gelu_erf,
    // snapped constants): named in the decision. Equal forms without them need none.
    for (size_t k = 0; k < static_cast<size_t>(Axiom::Count_); ++k)
      if (axiom_is_approximation(Axiom(k)) && norm.applications(Axiom(k)))
        d.approximations.emplace_back(axiom_name(Axiom(k)));
    if (na == nb && !d.approximations.empty()) {
      AxiomOptions exact = opt.axioms;
      exact.gelu_tanh_is_erf = exact.fast_math_is_exact = exact.gelu_forms = false;
      for (size_t k = 0; k < static_cast<size_t>(Axiom::Count_); ++k)
        if (axiom_is_approximation(Axiom(k))) exact.set(Axiom(k), false);
      Normalizer strict(ctx, exact);
      strict.set_deadline(&ticker);
      if (strict(ca) == strict(cb)) d.approximations.clear();
    }
    if (na == nb) { ++stats_.equal_axioms; return done(Verdict::Equal, Stage::Axioms); }
    if (a->sort == Sort::Real) {
      // A ring identity the canonical forms keep in two shapes (a product over a sum too large to
      // distribute): the expanded difference is 0.
      ir::ExpansionOptions eo;
      eo.tick = [&] { ticker.check("while expanding the difference into monomials (axioms)"); };
      Expr diff = ctx.sub(ir::collect_partial_sums(ctx, na, eo.tick), ir::collect_partial_sums(ctx, nb, eo.tick));
      // (a difference of 10^6 nodes would spend the solver's time on monomials)
      if (!(diff->op == Op::ConstReal && diff->rational() == 0) && ir::dag_size(diff) <= kExpandNodes)
        diff = ir::expansion(ctx, diff, eo);
      if (diff && diff->op == Op::ConstReal && diff->rational() == 0) {
        ++stats_.equal_axioms;
        return done(Verdict::Equal, Stage::Axioms, "equal as polynomials over their other sub-expressions");
      }
    }
    if (opt.tolerance && opt.within_tolerance && a->sort == Sort::Real) {
      const Tolerance& t = *opt.tolerance;
      // on the originals: the split residual pairs the reference's positive terms with the
      // candidate's negated ones, which no longer line up term for term (linear passes, memoized)
      stage = Stage::Tolerance;
      double bound = difference_bound(ctx, a, b, t.bound, opt.axioms, &ticker);
      if (bound <= t.atol) {
        ++stats_.equal_tolerance;
        d.difference_bound = bound;
        return done(Verdict::Equal, Stage::Tolerance,
                    fmt::format("equal within tolerance: |reference - candidate| <= {:.3g} (atol {}) for every input "
                                "element in [-{}, {}]",
                                bound, t.atol, t.bound, t.bound));
      }
    }
    // random points: most real inequivalences show at any input
    if (!points_tried && sample()) return done(Verdict::Differ, Stage::Sampling);
    stage = Stage::CutPoints;
    Query q = reduce(ctx, na, nb, opt.cut_points, opt.tolerance.has_value(), ticker);
    d.cuts = q.num_cuts;
    d.query_nodes = q.real ? ir::dag_size(q.diff) : ir::dag_size(q.qa) + ir::dag_size(q.qb);
    if (q.trivially_equal()) { ++stats_.equal_cut; return done(Verdict::Equal, Stage::CutPoints); }
    if (d.query_nodes > opt.max_query_nodes)
      return done(Verdict::Unknown, Stage::CutPoints,
                  fmt::format("query has {} nodes after cut points (limit {})", d.query_nodes, opt.max_query_nodes));

    ResultCache::Key key = q.real ? cache_key(q.diff, nullptr, opt, false) : cache_key(q.qa, q.qb, opt, false);
    ResultCache::Key uncut_key = cache_key(na, nb, opt, true);
    if (opt.use_cache) {
      if (auto hit = cache_->lookup(key, &uncut_key)) {
        if (hit->verdict == Verdict::Equal) { ++stats_.cache_hits; return done(Verdict::Equal, Stage::Cache); }
        Witness w;
        w.leaves = hit->witness;
        // the cached query may come from other originals: list this pair's variables too
        vars = original_vars({a, b}, opt.assumptions), have_vars = true;
        std::unordered_set<std::string> listed;  // owning: w.leaves grows below
        for (const LeafValue& l : w.leaves)
          if (l.kind == LeafValue::Kind::Var) listed.insert(l.name);
        for (Expr v : vars)
          if (!v->name().starts_with("!") && !listed.count(std::string(v->name()))) w.leaves.push_back(default_leaf(v));
        if (confirm(w).empty()) {
          ++stats_.cache_hits;
          d.witness = std::move(w);
          return done(Verdict::Differ, Stage::Cache);
        }
      }
      ++stats_.cache_misses;
    }

    // ---- Z3
    stage = Stage::Solver;
    d.solver_called = true;
    ++stats_.solver_calls;
    z3::context& z = *impl_->ctx;
    Translator tr(z, ctx, TranslateOptions{.deadline = deadline});
    std::vector<z3::expr> base;  // sound constraints: leaf bounds, Ackermann congruence, lemmas
    auto pull = [&] { for (z3::expr& c : tr.take_constraints()) base.push_back(c); };
    z3::expr plain_goal = q.real ? tr(q.diff) != z.real_val(0) : tr(q.qa) != tr(q.qb);
    for (Expr c : opt.assumptions) base.push_back(tr(c));
    pull();

    // plain: a != b (unsat proves Equal). tolerance / separated only look for
    // witnesses: a difference beyond tolerance first, and after a plain witness
    // whose difference fp64 cannot show, one of at least 1.
    struct Attempt { z3::expr goal; bool plain; };
    std::vector<Attempt> attempts;
    if (opt.tolerance && q.real) {
      const Tolerance& t = *opt.tolerance;
      z3::expr diff = tr(q.diff), rhs = tr(q.qb);
      pull();
      z3::expr goal = z3::ite(diff >= 0, diff, -diff) >
                      double_to_real(z, t.atol) + double_to_real(z, t.rtol) * z3::ite(rhs >= 0, rhs, -rhs);
      z3::expr m = double_to_real(z, t.bound);
      z3::expr_vector parts(z);
      parts.push_back(goal);
      for (const auto& [leaf, v] : tr.leaves()) {
        bool original = leaf->op == Op::TensorElem || (leaf->op == Op::Var && !leaf->name().starts_with("!"));
        if (original && leaf->sort == Sort::Real) parts.push_back(v >= -m && v <= m);
      }
      for (const LoadApp& l : tr.loads())
        if (l.node->sort == Sort::Real) parts.push_back(l.value >= -m && l.value <= m);
      attempts.push_back({z3::mk_and(parts), false});
    }
    attempts.push_back({plain_goal, true});
    if (q.real) {
      z3::expr diff = tr(q.diff);
      attempts.push_back({z3::ite(diff >= 0, diff, -diff) >= 1, false});
    }

    std::vector<z3::expr> extra;      // cut definitions (sound) and function samples (approximate)
    bool approximated = false, cuts_defined = false;
    std::set<std::vector<double>> sampled;
    std::string last_spurious;
    for (const Attempt& at : attempts) {
      for (unsigned round = 0;; ++round) {
        unsigned left = remaining_ms();
        if (left == 0) return done(Verdict::Timeout, Stage::Solver, "the budget ran out before the next Z3 check (solver)");
        // a fresh solver per check: keeps Z3's nlsat path (no incremental asserts)
        z3::expr_vector given(z);
        for (const z3::expr& c : base) given.push_back(c);
        for (const z3::expr& c : extra) given.push_back(c);
        given.push_back(at.goal);
        auto c0 = Clock::now();
        CheckResult cr = impl_->check(z, given, opt, left);
        z3::check_result r = cr.r;
        stats_.solver_ms += std::chrono::duration<double, std::milli>(Clock::now() - c0).count();
        ++stats_.solver_checks;
        ++d.solver_checks;
        if (r == z3::unsat) {
          ++stats_.unsat;
          if (!at.plain) break;  // no witness of that kind: go on with the next attempt
          if (approximated)
            return done(Verdict::Unknown, Stage::Solver,
                        "no confirmed witness: unsat only after approximate function samples; " + last_spurious);
          if (opt.use_cache) cache_->store(cuts_defined ? uncut_key : key, {Verdict::Equal, {}});
          return done(Verdict::Equal, Stage::Solver);
        }
        if (r == z3::unknown) {
          ++stats_.unknown;
          std::string why = cr.reason;
          if (is_timeout_reason(why)) return done(Verdict::Timeout, Stage::Solver, "z3: " + why);
          return done(Verdict::Unknown, Stage::Solver, "z3: " + why);
        }
        ++stats_.sat;
        z3::model& m = *cr.model;
        if (!have_vars) vars = original_vars({a, b}, opt.assumptions), have_vars = true;
        Witness w;
        w.leaves = extract_leaves(m, tr, vars);
        std::string why = confirm(w);
        if (why.empty()) {
          if (opt.use_cache) cache_->store(key, {Verdict::Differ, w.leaves});
          d.witness = std::move(w);
          return done(Verdict::Differ, Stage::Solver);
        }
        ++stats_.spurious;
        last_spurious = why;
        if (round >= opt.max_refinements) break;
        // Refine: first make cut variables mean what they stand for, then pin
        // function values at the model's argument points to their real values.
        bool refined = false;
        if (!cuts_defined && !q.cuts.empty()) {
          cuts_defined = true;
          uint64_t total = 0;
          for (const auto& [v, orig] : q.cuts) {
            uint64_t cap = opt.max_uncut_nodes + 1;  // tree sizes saturate; keep the sum bounded
            total = std::min(total + std::min(orig->size, cap), cap);
          }
          if (total <= opt.max_uncut_nodes) {
            for (const auto& [v, orig] : q.cuts)
              if (const z3::expr* zv = tr.lookup(v)) extra.push_back(*zv == tr(orig));
            pull();
            refined = true;
          }
        }
        if (!refined) {
          for (const FnApp& app : tr.fn_apps()) {
            std::vector<double> point{static_cast<double>(app.fn)};
            bool finite = true;
            for (const z3::expr& x : app.args) {
              double p = numeral_to_double(m.eval(x, true));
              finite = finite && std::isfinite(p);
              point.push_back(p);
            }
            if (!finite) continue;
            double fv = ir::apply_fn(app.fn, point[1], point.size() > 2 ? point[2] : 0.0);
            if (!std::isfinite(fv) || !sampled.insert(point).second) continue;
            for (const FnApp& g : tr.fn_apps()) {
              if (g.fn != app.fn) continue;
              z3::expr at_point = z.bool_val(true);
              for (size_t i = 0; i < g.args.size(); ++i) at_point = at_point && g.args[i] == double_to_real(z, point[i + 1]);
              extra.push_back(z3::implies(at_point, g.result == double_to_real(z, fv)));
            }
            refined = approximated = true;
          }
        }
        if (!refined) break;
        ++stats_.refinements;
      }
    }
    return done(Verdict::Unknown, Stage::Solver, last_spurious.empty() ? "no witness" : last_spurious);
  } catch (const StageTimeout& t) {
    return done(Verdict::Timeout, stage, t.what());
  } catch (const TranslateTimeout&) {
    return done(Verdict::Timeout, Stage::Solver, "the budget ran out while translating the query to Z3 (solver)");
  } catch (const z3::exception& ex) {
    if (impl_->interrupted) {  // the watchdog interrupted Z3 while it was given the assertions
      ++stats_.timeouts;
      return done(Verdict::Timeout, Stage::Solver, std::string("z3: ") + ex.msg());
    }
    ++stats_.exceptions;
    return done(Verdict::Unknown, Stage::Error, std::string("z3 exception: ") + ex.msg());
  } catch (const std::exception& ex) {
    ++stats_.exceptions;
    return done(Verdict::Unknown, Stage::Error, ex.what());
  }
}

SatResult Solver::solve(ir::Context& ctx, Expr cond, const DecideOptions& opt) {
  SatResult res;
  if (!cond || cond->sort != Sort::Bool) {
    res.reason = "solve: condition must be a Bool expression";
    return res;
  }
  try {
    z3::context& z = *impl_->ctx;
    Translator tr(z, ctx, TranslateOptions{.deadline = Clock::now() + std::chrono::milliseconds(opt.timeout_ms)});
    z3::expr goal = tr(cond);
    z3::expr_vector given(z);
    for (z3::expr& c : tr.take_constraints()) given.push_back(c);
    given.push_back(goal);
    auto c0 = Clock::now();
    CheckResult cr = impl_->check(z, given, opt, opt.timeout_ms);
    z3::check_result r = cr.r;
    stats_.solver_ms += std::chrono::duration<double, std::milli>(Clock::now() - c0).count();
    ++stats_.solver_checks;
    if (r == z3::unsat) { ++stats_.unsat; res.status = SatResult::Status::Unsat; return res; }
    if (r == z3::unknown) {
      ++stats_.unknown;
      res.reason = "z3: " + cr.reason;
      res.status = is_timeout_reason(res.reason) ? SatResult::Status::Timeout : SatResult::Status::Unknown;
      if (res.status == SatResult::Status::Timeout) ++stats_.timeouts;
      return res;
    }
    ++stats_.sat;
    res.model = extract_leaves(*cr.model, tr, original_vars({cond}));
    ir::Evaluator ev(res.env(), ir::Precision::F64);
    Value v = ev(cond);
    if (v.undef || !v.bits) {
      ++stats_.spurious;
      res.reason = "spurious model: the condition does not evaluate to true";
      res.model.clear();
      return res;
    }
    res.status = SatResult::Status::Sat;
  } catch (const TranslateTimeout& ex) {
    res.status = SatResult::Status::Timeout;
    res.reason = ex.what();
    ++stats_.timeouts;
  } catch (const z3::exception& ex) {
    bool timeout = impl_->interrupted;  // the watchdog interrupted Z3 while it was given the assertions
    ++(timeout ? stats_.timeouts : stats_.exceptions);
    if (timeout) res.status = SatResult::Status::Timeout;
    res.reason = std::string(timeout ? "z3: " : "z3 exception: ") + ex.msg();
  } catch (const std::exception& ex) {
    ++stats_.exceptions;
    res.reason = ex.what();
  }
  return res;
}

}  // namespace dirigo::smt
