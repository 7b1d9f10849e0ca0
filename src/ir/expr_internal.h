// Internals of the Context shared by the ir sources (not part of the public API).
#pragma once

#include <array>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_set>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/bits.h"
#include "ir/expr.h"
#include "ir/limits.h"

namespace dirigo::ir::detail {

inline uint64_t mix64(uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}
inline uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) { h ^= c; h *= 0x100000001b3ULL; }
  return h;
}

// Process-wide tensor names: ids are shared by every Context so that import()
// and cross-worker comparisons need no remapping.
struct TensorRegistry {
  mutable std::shared_mutex mu;
  std::deque<std::string> names;
  std::vector<uint64_t> hashes;
  std::unordered_map<std::string, int32_t> ids;
  static TensorRegistry& get();
  int32_t intern(std::string_view name);
  std::string_view name(int32_t id) const;
  uint64_t hash(int32_t id) const;
  size_t size() const;
};

// Everything needed to find or create one node.
struct Key {
  Op op;
  Sort sort;
  uint8_t flags = 0;
  std::span<const Expr> args = {};
  uint64_t u = 0, v = 0;
  int32_t tensor = -1;
  const mpq_class* q = nullptr;  // ConstReal
  std::string_view name = {};    // Var
};

uint64_t rational_hash(const mpq_class& q);
uint64_t key_hash(const Key& k);
bool commutative(Op o);
uint64_t child_mix(Expr c);  // contribution of one operand to a commutative node's hash

// Memo keyed on node pointers: open addressing with Fibonacci hashing, far
// cheaper than std::unordered_map on million-node DAGs. The subset of the
// std::unordered_map API used here (find/end/count/emplace/at/operator[]).
// Entry pointers are invalidated by inserts.
template <class V>
class NodeMap {
 public:
  struct Entry {
    Expr first = nullptr;
    V second{};
  };
  NodeMap() { slots_.resize(16); }
  Entry* end() const { return nullptr; }
  Entry* find(Expr k) {
    size_t i = slot(k);
    while (slots_[i].first) {
      if (slots_[i].first == k) return &slots_[i];
      i = (i + 1) & mask();
    }
    return nullptr;
  }
  const Entry* find(Expr k) const { return const_cast<NodeMap*>(this)->find(k); }
  size_t count(Expr k) const { return find(k) ? 1 : 0; }
  template <class T>
  std::pair<Entry*, bool> emplace(Expr k, T&& v) {
    if (Entry* e = find(k)) return {e, false};
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = slot(k);
    while (slots_[i].first) i = (i + 1) & mask();
    slots_[i].first = k;
    slots_[i].second = std::forward<T>(v);
    ++size_;
    return {&slots_[i], true};
  }
  V& operator[](Expr k) { return emplace(k, V{}).first->second; }
  V& at(Expr k) {
    Entry* e = find(k);
    if (!e) throw std::out_of_range("NodeMap::at: node not present");
    return e->second;
  }
  const V& at(Expr k) const { return const_cast<NodeMap*>(this)->at(k); }
  size_t size() const { return size_; }
  void clear() {
    slots_.assign(16, Entry{});
    size_ = 0;
  }

 private:
  std::vector<Entry> slots_;
  size_t size_ = 0;
  size_t mask() const { return slots_.size() - 1; }
  size_t slot(Expr k) const {
    uint64_t h = (reinterpret_cast<uint64_t>(k) >> 4) * 0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>(h >> 20) & mask();
  }
  void grow() {
    std::vector<Entry> old(slots_.size() * 2);
    old.swap(slots_);
    for (Entry& e : old)
      if (e.first) {
        size_t i = slot(e.first);
        while (slots_[i].first) i = (i + 1) & mask();
        slots_[i] = std::move(e);
      }
  }
};

// A set of nodes with the same representation.
class NodeSet {
 public:
  bool insert(Expr k) { return map_.emplace(k, true).second; }
  size_t count(Expr k) const { return map_.count(k); }
  size_t size() const { return map_.size(); }

 private:
  NodeMap<bool> map_;
};

using i128 = __int128;
inline constexpr unsigned kNumRules = static_cast<unsigned>(Rule::Count_);
inline bool is_pow2(uint64_t x) { return x && !(x & (x - 1)); }
inline unsigned log2u(uint64_t x) { return 63 - __builtin_clzll(x); }
inline i128 sx(uint64_t v, unsigned w) {  // signed value of a w-bit pattern
  if (w < 64 && ((v >> (w - 1)) & 1)) return static_cast<i128>(v) - (static_cast<i128>(1) << w);
  if (w == 64) return static_cast<i128>(static_cast<int64_t>(v));
  return v;
}

// Owner of a malloc'ed buffer (the arena's blocks and the unique table, expr_store.cpp alloc_buf).
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
template <class T>
using Buf = std::unique_ptr<T[], FreeDeleter>;

}  // namespace dirigo::ir::detail

namespace dirigo::ir {

// The state of a Context and its smart constructors. The node store and hash-consing are in
// expr_store.cpp, each family of rewrites in its own rewrite_*.cpp, the bitvector interval analysis in
// expr_bounds.cpp; expr.cpp is the public Context API over them.
//
// Canonical forms (the invariants every constructor below maintains):
//  * Add/BvAdd: [c0 if != 0] then terms sorted by monomial (structural hash,
//    then structural tie-break); a term is a monomial m or Mul(c, m...) with a
//    constant coefficient c != 0, 1 first. Like monomials are combined.
//  * Mul/BvMul: [c if != 1] then atoms sorted (repeats allowed: x*x); no atom
//    is a Mul; an Add atom only when distributing would exceed kDistributeLimit.
//  * Min/Max/And/Or/BvAnd/...: flattened, sorted, deduplicated, constants folded first.
// Undefined values are poison: an op with a direct Undef operand is Undef, and
// rules that would drop an Undef-dependent operand (x*0, x-x) do not fire.
struct Context::Impl {
  Context& C;
  explicit Impl(Context& c) : C(c) {
    enabled.fill(true);
    enabled[static_cast<unsigned>(Rule::BvFieldExtPush)] = false;
    hits.fill(0);
    table = empty_table(1024);
    table_size = 1024;
  }

  // ---- arena (expr_store.cpp, like the unique table, constants and the canonical order)
  std::vector<detail::Buf<std::byte>> blocks;
  std::byte* cur = nullptr;
  size_t left = 0, bytes = 0;
  std::deque<mpq_class> rats;
  std::deque<std::string> names;

  void* alloc(size_t n);

  // ---- unique table (open addressing, linear probing)
  // Slots keep the hash next to the pointer so that probing past other
  // entries never touches their nodes (one cache miss per lookup).
  struct Slot {
    uint64_t hash;
    Expr node;
  };
  detail::Buf<Slot> table;
  size_t table_size = 0;
  size_t count = 0;  // nodes interned, in either table
  // The table before the last doubling, while its entries move over (grow, migrate).
  detail::Buf<Slot> old_table;
  size_t old_size = 0, migrated = 0;
  // Old slots moved per intern call: a doubling at count = old_size / 2 leaves old_size / 2 inserts before
  // the next, so 8 per call ends each move after a quarter of them even when every call inserts.
  static constexpr size_t kMigrateStep = 8;
  // What the node budget counts (Limits::max_nodes, Context::node_units): every node, plus half
  // the operands of a wide one. A sum of 16k terms rebuilt once per element (x - mean over a
  // warp's partial sum) creates few nodes but sorts and copies millions of terms.
  size_t units = 0;
  static detail::Buf<Slot> empty_table(size_t n);
  uint32_t next_id = 0;

  static bool same(Expr n, const detail::Key& k, uint64_t h);
  void grow();
  void migrate(size_t steps);
  Expr find_old(const detail::Key& k, uint64_t h) const;
  // Precomputed hash/attrs/size for nodes derived from a neighbour in O(1) (add_one).
  struct Pre {
    uint64_t hash;
    uint8_t attrs;
    uint64_t size;
  };
  // ---- limits (Context::set_limits)
  Limits limits;
  uint32_t since_clock = 0;
  void over_limit();
  Expr intern(const detail::Key& k, const Pre* pre = nullptr);
  Expr raw(Op op, Sort s, std::span<const Expr> args, uint8_t flags = 0, uint64_t u = 0);
  Expr raw1(Op op, Sort s, Expr a, uint8_t flags = 0, uint64_t u = 0);
  Expr raw2(Op op, Sort s, Expr a, Expr b, uint8_t flags = 0);

  // ---- rules
  std::array<bool, detail::kNumRules> enabled;
  std::array<uint64_t, detail::kNumRules> hits;
  bool on(Rule r) const { return enabled[static_cast<unsigned>(r)]; }
  bool apply(Rule r) {  // call only once the rule's condition holds
    if (!on(r)) return false;
    ++hits[static_cast<unsigned>(r)];
    return true;
  }
  // Whether an n-ary node folds one more constant operand into its running constant: the first
  // always, a later one when ConstFold applies; counts it in nconst when it does.
  bool take_const(unsigned& nconst) {
    if (nconst && !apply(Rule::ConstFold)) return false;
    ++nconst;
    return true;
  }
  // The operands xs of an n-ary `op` gathered into atoms: a nested `op` node is flattened (rule
  // `flatten`) with its leading constant offered to konst, a constant operand is offered to konst
  // (an atom when konst declines it). False when an Undef operand makes the whole node Undef.
  template <class Konst>
  bool gather_operands(Op op, Rule flatten, std::span<const Expr> xs, std::vector<Expr>& atoms, Konst&& konst) {
    for (Expr x : xs) {
      if (x->op == Op::Undef && apply(Rule::UndefPropagate)) return false;
      if (x->op == op && apply(flatten)) {
        uint32_t j = 0;
        if (x->args_[0]->is_const() && konst(x->args_[0])) j = 1;
        atoms.insert(atoms.end(), x->args_ + j, x->args_ + x->nargs);
      } else if (!(x->is_const() && konst(x))) {
        atoms.push_back(x);
      }
    }
    return true;
  }

  // ---- constants
  std::array<Expr, 6> zero_{}, one_{};
  Expr mk_bv(Sort s, uint64_t v);
  Expr mk_real(const mpq_class& q);
  Expr mk_bool(bool b);
  Expr zero(Sort s);
  Expr one(Sort s);
  Expr ones(Sort s) { return mk_bv(s, ~0ULL); }
  bool is_zero(Expr c) { return c == zero(c->sort); }
  bool is_one(Expr c) { return c == one(c->sort); }
  Expr cadd(Expr a, Expr b);
  Expr cmul(Expr a, Expr b);
  Expr undef(Sort s) { return raw(Op::Undef, s, {}); }

  // ---- canonical order
  int local_cmp(Expr x, Expr y) const;
  int compare(Expr a, Expr b) const;
  bool less(Expr a, Expr b) const;
  // Sort a vector that is usually already sorted or two sorted runs (flattening one
  // canonical n-ary node plus a few operands): O(n) in those cases.
  template <class T, class Less>
  static bool sort_runs(std::vector<T>& v, Less lt) {
    size_t breaks = 0, first = 0;
    for (size_t i = 1; i < v.size() && breaks < 2; ++i)
      if (lt(v[i], v[i - 1]) && breaks++ == 0) first = i;
    if (breaks == 0) return false;
    if (breaks == 1) std::inplace_merge(v.begin(), v.begin() + first, v.end(), lt);
    else std::sort(v.begin(), v.end(), lt);
    return true;
  }

  // ---- terms of sums: coef * monomial (monomial = product of f[0..nf))
  struct Term {
    Expr coef;
    const Expr* f;
    uint32_t nf;
    uint64_t key;  // hash of the monomial node (as if built)
    Expr orig;     // the node this term came from, valid while coef == orig_coef
    Expr orig_coef;
  };
  Term decompose(Sort s, const Expr* slot);
  static bool same_mono(const Term& a, const Term& b);
  static bool mono_has_undef(const Term& t);
  Expr mono_node(Sort s, const Term& t);
  bool term_less(Sort s, const Term& a, const Term& b);
  Expr term_node(Sort s, const Term& t);

  void check_sorts(std::span<const Expr> xs, Sort s, std::string_view what);
  void check_bv(Expr a, std::string_view what);

  // ---- sums (rewrite_add.cpp)
  Expr add_n(Sort s, std::span<const Expr> xs);
  Expr recombine_divmod(Sort s, Expr c0, std::vector<Term>& terms);
  mpq_class minmax_scale(Expr m);
  void join_divmod(Sort s, std::vector<Term>& terms, std::vector<char>& gone, std::vector<Expr>& extra);
  void split_divmod(Sort s, Expr& c0, std::vector<Term>& terms, std::vector<char>& gone, std::vector<Expr>& extra);
  static bool scaled_big_sum(Expr x, Op addop);
  Expr add_one(Sort s, Expr sum, Expr t);
  static mpq_class sum_lead(Expr sum);
  static bool uniform_sum(Expr sum, const mpq_class& lead);
  Expr scale_sum(Sort s, Expr sum, Expr c);

  // ---- products (rewrite_mul.cpp)
  static constexpr uint64_t kDistributeSizeBudget = 2048;
  int distribute_depth = 0;
  Expr mul_n(Sort s, std::span<const Expr> xs);
  Expr neg(Expr a);

  // ---- min / max (real and bitvector), n-ary (rewrite_minmax.cpp)
  static bool is_min(Op o) { return o == Op::Min || o == Op::BvSMin || o == Op::BvUMin; }
  int const_cmp(Op op, Expr a, Expr b);  // a <=> b in the order op uses
  static bool float_limit(bool mn, Expr c);
  Expr minmax_n(Op op, Sort s, std::span<const Expr> xs);

  // ---- interval analysis for bitvectors (unsigned bounds) (expr_bounds.cpp)
  detail::NodeMap<Bounds> bounds_memo;
  static Bounds full(Sort s) { return {0, width_mask(bv_width(s))}; }
  bool nonneg(Expr e);
  static bool analysed(Op o);
  Bounds memo_bounds(Expr e);
  void prepare_bounds(std::span<const Expr> terms);
  std::optional<std::pair<detail::i128, detail::i128>> mono_iv(const Expr* f, uint32_t nf, unsigned w);
  std::optional<std::pair<detail::i128, detail::i128>> sum_iv(Expr e, bool signed_atoms);
  Bounds compute_bounds(Expr e);
  Bounds bounds(Expr e);

  // ---- bitvector arithmetic
  Expr bv_add(std::span<const Expr> xs) { return add_n(xs.empty() ? Sort::BV32 : xs[0]->sort, xs); }
  Expr bv_mul(std::span<const Expr> xs) { return mul_n(xs.empty() ? Sort::BV32 : xs[0]->sort, xs); }
  // bit operations and shifts (rewrite_bv.cpp)
  Expr bitop_n(Op op, std::span<const Expr> xs);
  Expr shift(Op op, Expr a, Expr b);
  Expr bv_not(Expr a);
  // division, remainder, high half of products (rewrite_divrem.cpp)
  Expr drop_multiples(Expr x, uint64_t d);
  // x's terms (a sum, or one product) when their exact unsigned sum stays below 2^w: each monomial with
  // its index in x's operands and its largest value, and the constant part.
  struct NoWrapTerms {
    std::vector<Term> mono;
    std::vector<size_t> at;
    std::vector<detail::i128> hi;
    uint64_t c0 = 0;
  };
  std::optional<NoWrapTerms> no_wrap_terms(Expr x);
  std::optional<std::pair<Expr, Expr>> div_split(Expr x, uint64_t d);
  struct GcdSplit {
    Expr a;      // x = g*a + b
    Expr b;      // 0 <= b < g
    uint64_t g;  // divides d
  };
  std::optional<GcdSplit> gcd_split(Expr x, uint64_t d);
  Expr udiv_const(Expr x, uint64_t d, bool as_shift);
  Expr urem_const(Expr x, uint64_t d);
  static uint64_t fold_udiv(uint64_t a, uint64_t b, uint64_t m) { return b == 0 ? m : a / b; }
  static uint64_t fold_urem(uint64_t a, uint64_t b) { return b == 0 ? a : a % b; }
  static uint64_t fold_sdiv(Expr a, Expr b, uint64_t m);
  static uint64_t fold_srem(Expr a, Expr b);
  Expr divrem(Op op, Expr a, Expr b);
  Expr mulhi(Expr a, Expr b, bool sgn);

  // ---- width changes (rewrite_bv.cpp)
  int ext_depth = 0;
  Expr ext(Expr a, Sort to, bool sgn);
  Expr push_ext(Expr a, Sort to, bool sgn);
  Expr trunc(Expr a, Sort to, bool deep = true);

  // ---- booleans and comparisons (rewrite_bool_cmp.cpp)
  Expr not_(Expr a);
  Expr andor(Op op, std::span<const Expr> xs);
  Expr const_diff(Expr a, Expr b);
  Expr cmp_op(Op op, Expr a, Expr b);

  // ---- if-then-else (rewrite_ite.cpp)
  Expr ite(Expr c, Expr t, Expr e);
  Expr clamp_minmax(Expr a, Expr b, Expr t, Expr e);
  Expr leaky_max(Expr a, Expr b, Expr t, Expr e);

  // ---- reals: functions and conversions; tensor loads (rewrite_call.cpp)
  Expr call(Fn f, std::span<const Expr> args);
  static std::optional<mpq_class> exact_fn(Fn f, const mpq_class& q);
  Expr abs(Expr a);
  Expr bv_to_real(Expr a, bool sgn);
  Expr real_to_bv(Expr a, Sort to, bool sgn, RoundMode rm);
  Expr load(int32_t tensor, Expr idx, Sort s);
  Expr elem(int32_t tensor, int64_t index, Sort s);

  // ---- reductions (rewrite_reduce.cpp: construction and the rules inside one reduction;
  // rewrite_reduce_merge.cpp: reductions combined by a sum / max / min)
  using Box = std::vector<std::pair<int64_t, int64_t>>;
  Expr bound_leaf(uint32_t k);
  Expr reduce_n(ReduceOp op, std::span<const std::pair<int64_t, int64_t>> box, Expr body);
  Expr reduce_raw(ReduceOp op, std::span<const std::pair<int64_t, int64_t>> box, Expr body);
  static Box box_of(Expr r);
  // 1 + the largest free de Bruijn index below e (0: e is closed); memoized.
  detail::NodeMap<uint32_t> loose_memo;
  uint32_t loose(Expr e);
  // e with each free Bound leaf x replaced by leaf(x, d), d the binders above x counted from `depth`
  // (a reduction's body is one level deeper per dim); closed parts are kept, results memoized by
  // (node, depth). The walk of shift, instantiate and offset_indices.
  Expr map_bound_leaves(Expr e, uint32_t depth, const std::function<Expr(Expr, uint32_t)>& leaf);
  // e with free Bound(k), k >= cutoff, replaced by Bound(k + delta) (delta may be negative).
  Expr shift(Expr e, uint32_t cutoff, int64_t delta);
  // Bound(depth + j) -> values[j] for j < n and Bound(depth + j) -> Bound(depth + j - n) for j >= n,
  // values closed; the body of a reduction opened at one point.
  Expr instantiate(Expr e, std::span<const Expr> values);
  // body with the reduction's own indices moved by constants: Bound(n-1-d) -> Bound(n-1-d) + off[d] for
  // the n = off.size() dims (dim order, the last dim is Bound(0)); enclosing indices untouched.
  Expr offset_indices(Expr body, std::span<const int64_t> off);
  // The reduction over `box` (lo may be negative: a box in another reduction's coordinates) with its
  // origin at 0 (ReduceOrigin; always when some lo < 0, which no box can hold).
  Expr reduce_from(ReduceOp op, std::span<const std::pair<int64_t, int64_t>> box, Expr body);
  // The same reduction with every dim of `box` moved to start at 0 (its lo moved into the body).
  Expr reduce_at_origin(ReduceOp op, std::span<const std::pair<int64_t, int64_t>> box, Expr body);
  // An offset per dim with body_b(k) == body_a(k + off) (pointer-equal after offset_indices), found
  // from the index difference of reads of one tensor; nullopt when none is found. Same rank assumed.
  std::optional<std::vector<int64_t>> align_bodies(Expr body_a, Expr body_b, unsigned rank);
  // Reduce terms of one sum / operands of one max or min over adjacent boxes with equal bodies merged;
  // false when nothing merged.
  bool merge_reductions(Op combine, std::vector<Expr>& xs);

  // ---- generic rebuild (substitute, cut points) (expr_store.cpp)
  Expr rebuild(Expr like, std::span<const Expr> a);

  // ---- variables
  std::unordered_set<std::string> var_names;
  std::unordered_map<std::string, uint64_t> fresh_counter;
};

struct ContextAccess {
  static Context::Impl& impl(Context& c) { return *c.impl_; }
};

}  // namespace dirigo::ir
