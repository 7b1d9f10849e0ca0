// Context: arena, unique table, and the canonicalizing smart constructors.
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
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sys/mman.h>
#include <optional>
#include <stdexcept>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/expr_internal.h"
#include "ir/limits.h"

namespace dirigo::ir {
using namespace detail;
using i128 = __int128;

// ------------------------------------------------------------------ names

unsigned bv_width(Sort s) {
  switch (s) {
    case Sort::BV8: return 8;
    case Sort::BV16: return 16;
    case Sort::BV32: return 32;
    case Sort::BV64: return 64;
    default: return 0;
  }
}
Sort bv_sort(unsigned w) {
  switch (w) {
    case 8: return Sort::BV8;
    case 16: return Sort::BV16;
    case 32: return Sort::BV32;
    case 64: return Sort::BV64;
  }
  throw std::invalid_argument(fmt::format("bv_sort: unsupported bit-vector width {}", w));
}
bool is_bv(Sort s) { return bv_width(s) != 0; }
std::string_view sort_name(Sort s) {
  static constexpr std::string_view n[] = {"bool", "bv8", "bv16", "bv32", "bv64", "real"};
  return n[static_cast<unsigned>(s)];
}
std::string_view fn_name(Fn f) {
  static constexpr std::string_view n[] = {
      "exp", "exp2", "log", "log2", "log1p", "expm1", "tanh", "erf", "erfc", "sqrt", "rsqrt", "pow",
      "sigmoid", "gelu_erf", "gelu_tanh", "softplus", "silu", "mish", "elu", "selu", "sin", "cos", "tan",
      "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh",
      "floor", "ceil", "round", "trunc", "sign", "recip"};
  static_assert(std::size(n) == static_cast<size_t>(Fn::Count_));
  return n[static_cast<unsigned>(f)];
}
unsigned fn_arity(Fn f) { return f == Fn::Pow ? 2 : 1; }
std::string_view op_name(Op o) {
  static constexpr std::string_view n[] = {
      "const_bool", "const_bv", "const_real", "var", "elem", "undef",
      "not", "and", "or", "eq", "ult", "ule", "slt", "sle", "lt", "le", "ite",
      "bvadd", "bvmul", "bvudiv", "bvsdiv", "bvurem", "bvsrem", "bvshl", "bvlshr", "bvashr",
      "bvand", "bvor", "bvxor", "bvnot", "bvsmin", "bvsmax", "bvumin", "bvumax",
      "bvmulhi_u", "bvmulhi_s", "zext", "sext", "trunc",
      "add", "mul", "min", "max", "abs", "call", "bv2real", "real2bv", "load"};
  static_assert(std::size(n) == static_cast<size_t>(Op::Count_));
  return n[static_cast<unsigned>(o)];
}
std::string_view rule_name(Rule r) {
  static constexpr std::string_view n[] = {
      "ConstFold", "UndefPropagate", "AddFlatten", "AddCombineLike", "AddSort", "AddIdentity",
      "MulFlatten", "MulSort", "MulIdentity", "MulDistributeConst", "MulDistributeSmall", "NegToMul",
      "DivToRecip", "MinMaxFlatten", "MinMaxSortDedup", "MinMaxConst", "IteConstCond", "IteSameArms",
      "IteNegCond", "IteToMinMax", "BoolSimplify", "CmpCanon", "BvAffine", "BvExtMerge",
      "BvSignedToUnsigned", "BvExtPush", "BvTruncPush", "BvBitFold", "BvDivRemConst", "BvDivModRecombine", "LoadFold",
      "AbsCanon", "MinMaxFloatLimit", "MulDistributeMinMax", "MulSumContent", "IteLeakyToMax", "ClampOrder"};
  static_assert(std::size(n) == static_cast<size_t>(Rule::Count_));
  return n[static_cast<unsigned>(r)];
}

static_assert(sizeof(Node) == 64, "Node layout: keep it one cache line");

int64_t Node::bv_signed() const {
  unsigned w = bv_width(sort);
  uint64_t x = u;
  if (w && w < 64 && ((x >> (w - 1)) & 1)) x |= ~mask_of(w);
  return static_cast<int64_t>(x);
}
std::string_view Node::name() const {
  return op == Op::Var ? std::string_view(*static_cast<const std::string*>(p_)) : std::string_view();
}

// ------------------------------------------------------------------ tensor registry

TensorRegistry& TensorRegistry::get() {
  static TensorRegistry r;
  return r;
}
int32_t TensorRegistry::intern(std::string_view name) {
  {
    std::shared_lock lk(mu);
    auto it = ids.find(std::string(name));
    if (it != ids.end()) return it->second;
  }
  std::unique_lock lk(mu);
  auto [it, fresh] = ids.try_emplace(std::string(name), static_cast<int32_t>(names.size()));
  if (fresh) {
    names.emplace_back(name);
    hashes.push_back(fnv1a(name));
  }
  return it->second;
}
std::string_view TensorRegistry::name(int32_t id) const {
  std::shared_lock lk(mu);
  if (id < 0 || static_cast<size_t>(id) >= names.size())
    throw std::out_of_range(fmt::format("unknown tensor id {}", id));
  return names[id];
}
uint64_t TensorRegistry::hash(int32_t id) const {
  std::shared_lock lk(mu);
  if (id < 0 || static_cast<size_t>(id) >= hashes.size())
    throw std::out_of_range(fmt::format("unknown tensor id {}", id));
  return hashes[id];
}
size_t TensorRegistry::size() const {
  std::shared_lock lk(mu);
  return names.size();
}

namespace detail {
uint64_t rational_hash(const mpq_class& q) {
  uint64_t h = 0x51ed270b27a4b3c1ULL;
  for (mpz_srcptr z : {mpq_numref(q.get_mpq_t()), mpq_denref(q.get_mpq_t())}) {
    int sz = z->_mp_size;
    h = mix64(h ^ static_cast<uint64_t>(static_cast<int64_t>(sz)));
    for (int i = 0; i < std::abs(sz); ++i) h = mix64(h + mpz_getlimbn(z, i));
  }
  return h;
}
bool commutative(Op o) {
  switch (o) {
    case Op::And: case Op::Or: case Op::BvAdd: case Op::BvMul: case Op::BvAnd: case Op::BvOr: case Op::BvXor:
    case Op::BvSMin: case Op::BvSMax: case Op::BvUMin: case Op::BvUMax: case Op::Add: case Op::Mul: case Op::Min:
    case Op::Max:
      return true;
    default:
      return false;
  }
}
uint64_t child_mix(Expr c) { return mix64(c->hash ^ 0x2545f4914f6cdd1dULL); }
uint64_t key_hash(const Key& k) {
  // Commutative n-ary ops hash their (multi)set of children as a sum, so that inserting
  // or replacing one operand of a big node updates its hash in O(1).
  if (commutative(k.op)) {
    uint64_t h = mix64(static_cast<uint64_t>(k.op) | static_cast<uint64_t>(k.sort) << 8 |
                       static_cast<uint64_t>(k.flags) << 16 | (1ULL << 40));
    for (Expr c : k.args) h += child_mix(c);
    return h;
  }
  uint64_t h = mix64(static_cast<uint64_t>(k.op) | static_cast<uint64_t>(k.sort) << 8 |
                     static_cast<uint64_t>(k.flags) << 16 | static_cast<uint64_t>(k.args.size()) << 24);
  if (k.u) h = mix64(h ^ mix64(k.u + 0x9e3779b97f4a7c15ULL));
  if (k.v) h = mix64(h ^ (k.v * 0xc2b2ae3d27d4eb4fULL));
  if (k.tensor >= 0) h = mix64(h ^ TensorRegistry::get().hash(k.tensor));
  if (k.q) h = mix64(h ^ rational_hash(*k.q));
  if (k.op == Op::Var) h = mix64(h ^ fnv1a(k.name));
  for (Expr c : k.args) h = mix64(h + c->hash * 0x9e3779b97f4a7c15ULL);
  return h;
}
}  // namespace detail

// ------------------------------------------------------------------ Context::Impl

namespace {
constexpr unsigned kNumRules = static_cast<unsigned>(Rule::Count_);
constexpr size_t kBlock = 1 << 20;
bool is_pow2(uint64_t x) { return x && !(x & (x - 1)); }
unsigned log2u(uint64_t x) { return 63 - __builtin_clzll(x); }
i128 sx(uint64_t v, unsigned w) {  // signed value of a w-bit pattern
  if (w < 64 && ((v >> (w - 1)) & 1)) return static_cast<i128>(v) - (static_cast<i128>(1) << w);
  if (w == 64) return static_cast<i128>(static_cast<int64_t>(v));
  return v;
}
}  // namespace

// Large allocations (unique table, arena blocks) are 2 MiB aligned and marked for
// transparent huge pages: million-node Contexts are bound by TLB and cache misses.
// DIRIGO_IR_NO_HUGEPAGES=1 turns this off (for A/B measurements).
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
template <class T>
using Buf = std::unique_ptr<T[], FreeDeleter>;
template <class T>
Buf<T> alloc_buf(size_t n) {
  static const bool huge = !std::getenv("DIRIGO_IR_NO_HUGEPAGES");
  constexpr size_t kHuge = 2u << 20;
  size_t bytes = n * sizeof(T);
  void* p = nullptr;
  if (huge && bytes >= kHuge) {
    bytes = (bytes + kHuge - 1) & ~(kHuge - 1);
    p = std::aligned_alloc(kHuge, bytes);
    if (p) madvise(p, bytes, MADV_HUGEPAGE);
  } else {
    p = std::malloc(bytes);
  }
  if (!p) throw std::bad_alloc();
  return Buf<T>(static_cast<T*>(p));
}

struct Context::Impl {
  Context& C;
  explicit Impl(Context& c) : C(c) {
    enabled.fill(true);
    hits.fill(0);
    table = empty_table(1024);
    table_size = 1024;
  }

  // ---- arena
  std::vector<Buf<std::byte>> blocks;
  std::byte* cur = nullptr;
  size_t left = 0, bytes = 0;
  std::deque<mpq_class> rats;
  std::deque<std::string> names;

  void* alloc(size_t n) {
    n = (n + 15) & ~size_t(15);
    if (n > left) {
      // blocks grow with the Context: 1 MiB up to 16 MiB
      size_t sz = std::max(std::min(kBlock << std::min<size_t>(blocks.size() / 4, 4), size_t(16) << 20), n);
      blocks.push_back(alloc_buf<std::byte>(sz));
      cur = blocks.back().get();
      left = sz;
      bytes += sz;
    }
    void* p = cur;
    cur += n;
    left -= n;
    return p;
  }

  // ---- unique table (open addressing, linear probing)
  // Slots keep the hash next to the pointer so that probing past other
  // entries never touches their nodes (one cache miss per lookup).
  struct Slot {
    uint64_t hash;
    Expr node;
  };
  Buf<Slot> table;
  size_t table_size = 0;
  size_t count = 0;
  // What the node budget counts (Limits::max_nodes, Context::node_units): every node, plus half
  // the operands of a wide one. A sum of 16k terms rebuilt once per element (x - mean over a
  // warp's partial sum) creates few nodes but sorts and copies millions of terms.
  size_t units = 0;
  static Buf<Slot> empty_table(size_t n) {
    Buf<Slot> t = alloc_buf<Slot>(n);
    std::fill(t.get(), t.get() + n, Slot{0, nullptr});
    return t;
  }
  uint32_t next_id = 0;

  static bool same(Expr n, const Key& k, uint64_t h) {
    if (n->hash != h || n->op != k.op || n->sort != k.sort || n->flags != k.flags ||
        n->nargs != k.args.size() || n->u != k.u || n->v != k.v || n->tensor_ != k.tensor)
      return false;
    if (k.q && n->rational() != *k.q) return false;
    if (k.op == Op::Var && n->name() != k.name) return false;
    for (size_t i = 0; i < k.args.size(); ++i)
      if (n->args_[i] != k.args[i]) return false;
    return true;
  }
  void grow() {
    size_t n = table_size * 2, m = n - 1;
    Buf<Slot> t = empty_table(n);
    for (size_t j = 0; j < table_size; ++j)
      if (const Slot& sl = table[j]; sl.node) {
        size_t i = sl.hash & m;
        while (t[i].node) i = (i + 1) & m;
        t[i] = sl;
      }
    table = std::move(t);
    table_size = n;
  }
  // Precomputed hash/attrs/size for nodes derived from a neighbour in O(1) (add_one).
  struct Pre {
    uint64_t hash;
    uint8_t attrs;
    uint64_t size;
  };
  // ---- limits (Context::set_limits)
  Limits limits;
  uint32_t since_clock = 0;
  void over_limit() {
    if (units >= limits.max_nodes)
      throw LimitExceeded(fmt::format("expression has more than {} nodes (node budget)", limits.max_nodes));
    since_clock = 0;
    if (std::chrono::steady_clock::now() > limits.deadline)
      throw LimitExceeded(fmt::format("deadline passed while building expressions ({} nodes)", count));
  }
  Expr intern(const Key& k, const Pre* pre = nullptr) {
    if (++since_clock >= 4096) over_limit();  // lookups too: a rebuild pass that finds every node still ticks
    uint64_t h = pre ? pre->hash : key_hash(k);
    if ((count + 1) * 2 > table_size) grow();
    size_t m = table_size - 1, i = h & m;
    while (Expr n = table[i].node) {
      if (table[i].hash == h && same(n, k, h)) return n;
      i = (i + 1) & m;
    }
    if (units >= limits.max_nodes) over_limit();
    Node* n = new (alloc(sizeof(Node))) Node{};
    n->op = k.op;
    n->sort = k.sort;
    n->flags = k.flags;
    n->nargs = static_cast<uint32_t>(k.args.size());
    n->id = next_id++;
    n->tensor_ = k.tensor;
    n->hash = h;
    n->u = k.u;
    n->v = k.v;
    uint64_t size = 1;
    uint8_t attrs = k.op == Op::Undef ? Node::kHasUndef : 0;
    if (k.op == Op::TensorElem || k.op == Op::Load) attrs |= Node::kHasData;
    if (!k.args.empty()) {
      auto* a = static_cast<Expr*>(alloc(sizeof(Expr) * k.args.size()));
      std::copy(k.args.begin(), k.args.end(), a);
      if (pre) {
        attrs = pre->attrs;
        size = pre->size;
      } else {
        for (Expr c : k.args) {
          attrs |= c->attrs;
          size = c->size > UINT64_MAX - size ? UINT64_MAX : size + c->size;
        }
      }
      n->args_ = a;
    }
    n->attrs = attrs;
    n->size = size;
    if (k.q) n->p_ = &rats.emplace_back(*k.q);
    if (k.op == Op::Var) n->p_ = &names.emplace_back(k.name);
    table[i] = Slot{h, n};
    ++count;
    units += 1 + (k.args.size() > kWideNode ? k.args.size() / 2 : 0);
    return n;
  }
  Expr raw(Op op, Sort s, std::span<const Expr> args, uint8_t flags = 0, uint64_t u = 0) {
    Key k{op, s, flags, args};
    k.u = u;
    return intern(k);
  }
  Expr raw1(Op op, Sort s, Expr a, uint8_t flags = 0, uint64_t u = 0) {
    Expr xs[] = {a};
    return raw(op, s, xs, flags, u);
  }
  Expr raw2(Op op, Sort s, Expr a, Expr b, uint8_t flags = 0) {
    Expr xs[] = {a, b};
    return raw(op, s, xs, flags);
  }

  // ---- rules
  std::array<bool, kNumRules> enabled;
  std::array<uint64_t, kNumRules> hits;
  bool on(Rule r) const { return enabled[static_cast<unsigned>(r)]; }
  bool apply(Rule r) {  // call only once the rule's condition holds
    if (!on(r)) return false;
    ++hits[static_cast<unsigned>(r)];
    return true;
  }

  // ---- constants
  std::array<Expr, 6> zero_{}, one_{};
  Expr mk_bv(Sort s, uint64_t v) {
    Key k{Op::ConstBV, s};
    k.u = v & mask_of(bv_width(s));
    return intern(k);
  }
  Expr mk_real(const mpq_class& q) {
    Key k{Op::ConstReal, Sort::Real};
    k.q = &q;
    return intern(k);
  }
  Expr mk_bool(bool b) {
    Key k{Op::ConstBool, Sort::Bool};
    k.u = b;
    return intern(k);
  }
  Expr zero(Sort s) {
    Expr& z = zero_[static_cast<unsigned>(s)];
    if (!z) z = s == Sort::Real ? mk_real(mpq_class(0)) : s == Sort::Bool ? mk_bool(false) : mk_bv(s, 0);
    return z;
  }
  Expr one(Sort s) {
    Expr& o = one_[static_cast<unsigned>(s)];
    if (!o) o = s == Sort::Real ? mk_real(mpq_class(1)) : s == Sort::Bool ? mk_bool(true) : mk_bv(s, 1);
    return o;
  }
  Expr ones(Sort s) { return mk_bv(s, ~0ULL); }
  bool is_zero(Expr c) { return c == zero(c->sort); }
  bool is_one(Expr c) { return c == one(c->sort); }
  Expr cadd(Expr a, Expr b) {
    if (a->sort == Sort::Real) return mk_real(a->rational() + b->rational());
    return mk_bv(a->sort, a->u + b->u);
  }
  Expr cmul(Expr a, Expr b) {
    if (a->sort == Sort::Real) return mk_real(a->rational() * b->rational());
    return mk_bv(a->sort, a->u * b->u);
  }
  Expr undef(Sort s) { return raw(Op::Undef, s, {}); }

  // ---- canonical order
  int local_cmp(Expr x, Expr y) const {
    auto c3 = [](auto a, auto b) { return a < b ? -1 : a > b ? 1 : 0; };
    if (int c = c3(x->op, y->op)) return c;
    if (int c = c3(x->sort, y->sort)) return c;
    if (int c = c3(x->flags, y->flags)) return c;
    if (int c = c3(x->nargs, y->nargs)) return c;
    if (int c = c3(x->u, y->u)) return c;
    if (int c = c3(x->v, y->v)) return c;
    if (x->tensor_ != y->tensor_) {
      auto& reg = TensorRegistry::get();
      if (x->tensor_ < 0 || y->tensor_ < 0) return c3(x->tensor_, y->tensor_);
      if (int c = reg.name(x->tensor_).compare(reg.name(y->tensor_))) return c < 0 ? -1 : 1;
    }
    if (x->op == Op::ConstReal) return c3(cmp(x->rational(), y->rational()), 0);
    if (x->op == Op::Var) return c3(x->name().compare(y->name()), 0);
    return 0;
  }
  int compare(Expr a, Expr b) const {
    if (a == b) return 0;
    if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
    std::vector<std::pair<Expr, Expr>> st{{a, b}};  // pre-order lexicographic walk
    while (!st.empty()) {
      auto [x, y] = st.back();
      st.pop_back();
      if (x == y) continue;
      if (int c = local_cmp(x, y)) return c;
      for (uint32_t i = x->nargs; i-- > 0;) st.emplace_back(x->args_[i], y->args_[i]);
    }
    return 0;
  }
  bool less(Expr a, Expr b) const {
    if (a == b) return false;
    if (a->hash != b->hash) return a->hash < b->hash;
    return compare(a, b) < 0;
  }
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
  Term decompose(Sort s, const Expr* slot) {
    Expr t = *slot;
    Op mulop = s == Sort::Real ? Op::Mul : Op::BvMul;
    Term r{one(s), slot, 1, t->hash, t, one(s)};
    if (t->op == mulop) {
      if (t->args_[0]->is_const()) {
        r.coef = r.orig_coef = t->args_[0];
        r.f = t->args_ + 1;
        r.nf = t->nargs - 1;
        r.key = r.nf == 1 ? r.f[0]->hash : t->hash - child_mix(t->args_[0]);  // hash of Mul(f...)
      } else {
        r.f = t->args_;
        r.nf = t->nargs;
      }
    }
    return r;
  }
  static bool same_mono(const Term& a, const Term& b) {
    return a.key == b.key && a.nf == b.nf && std::equal(a.f, a.f + a.nf, b.f);
  }
  static bool mono_has_undef(const Term& t) {
    for (uint32_t i = 0; i < t.nf; ++i)
      if (t.f[i]->has_undef()) return true;
    return false;
  }
  Expr mono_node(Sort s, const Term& t) {
    if (t.nf == 1) return t.f[0];
    return raw(s == Sort::Real ? Op::Mul : Op::BvMul, s, {t.f, t.nf});
  }
  bool term_less(Sort s, const Term& a, const Term& b) {
    if (a.key != b.key) return a.key < b.key;
    if (same_mono(a, b)) return false;
    return compare(mono_node(s, a), mono_node(s, b)) < 0;
  }
  Expr term_node(Sort s, const Term& t) {
    if (t.coef == t.orig_coef) return t.orig;
    if (is_one(t.coef)) return mono_node(s, t);
    // A new coefficient of a monomial with a min/max factor goes where mul_n puts a constant
    // (MulDistributeMinMax): c*max(0, x) scaled by a sum's distribution must be mul_n(c, max(0, x)).
    if (s == Sort::Real && t.coef->rational() != -1 &&
        std::any_of(t.f, t.f + t.nf, [](Expr f) { return f->op == Op::Min || f->op == Op::Max; })) {
      std::vector<Expr> a{t.coef};
      a.insert(a.end(), t.f, t.f + t.nf);
      return mul_n(s, a);
    }
    std::vector<Expr> a;
    a.reserve(t.nf + 1);
    a.push_back(t.coef);
    a.insert(a.end(), t.f, t.f + t.nf);
    return raw(s == Sort::Real ? Op::Mul : Op::BvMul, s, a);
  }

  void check_sorts(std::span<const Expr> xs, Sort s, std::string_view what) {
    for (Expr x : xs)
      if (x->sort != s)
        throw std::invalid_argument(fmt::format("{}: operand of sort {} where {} expected", what,
                                                sort_name(x->sort), sort_name(s)));
  }
  void check_bv(Expr a, std::string_view what) {
    if (!is_bv(a->sort))
      throw std::invalid_argument(fmt::format("{}: bit-vector operand expected, got {}", what, sort_name(a->sort)));
  }

  // ---- sums
  Expr add_n(Sort s, std::span<const Expr> xs) {
    Op addop = s == Sort::Real ? Op::Add : Op::BvAdd;
    check_sorts(xs, s, op_name(addop));
    if (xs.empty()) return zero(s);
    if (xs.size() == 1) return xs[0];
    if (xs.size() == 2) {  // big canonical sum + one term (a reduction loop): O(log n) search, one copy
      if (Expr r = add_one(s, xs[0], xs[1])) return r;
      if (Expr r = add_one(s, xs[1], xs[0])) return r;
    }
    Expr c = zero(s);
    unsigned nconst = 0;
    std::vector<Term> terms;
    size_t total = xs.size() + 4;  // reserved once: growing per flattened sum copied O(n^2) (a sum of 1024 dot products)
    // A scaled sum too big to distribute (c*S, kDistributeConstLimit) stays one term while it is the only
    // big part of the sum (x - mean: 8194 terms, not 8 M); next to another big sum it is distributed, so
    // that shared terms cancel (S - S = 0, (S + y) - S = y) as they did before.
    unsigned big = 0;
    for (Expr x : xs) {
      if (x->op == addop) total += x->nargs;
      if ((x->op == addop && x->nargs > kDistributeConstLimit) || scaled_big_sum(x, addop)) ++big;
    }
    if (big >= 2)
      for (Expr x : xs)
        if (scaled_big_sum(x, addop)) total += x->args_[1]->nargs;
    terms.reserve(total);
    auto push = [&](const Expr* slot) {
      Term t = decompose(s, slot);
      if (is_zero(t.coef) && !mono_has_undef(t)) return;
      terms.push_back(t);
    };
    auto konst = [&](Expr k) {
      if (nconst == 0 || apply(Rule::ConstFold)) {
        c = cadd(c, k);
        ++nconst;
        return true;
      }
      return false;
    };
    for (size_t i = 0; i < xs.size(); ++i) {
      Expr x = xs[i];
      if (x->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
      if (x->op == addop && apply(Rule::AddFlatten)) {
        uint32_t j = 0;
        if (x->args_[0]->is_const() && konst(x->args_[0])) j = 1;
        for (; j < x->nargs; ++j) push(x->args_ + j);
      } else if (big >= 2 && scaled_big_sum(x, addop) && apply(Rule::AddFlatten)) {
        Expr k = x->args_[0], sum = x->args_[1];
        for (uint32_t j = 0; j < sum->nargs; ++j) {
          if (j == 0 && sum->args_[0]->is_const() && konst(cmul(k, sum->args_[0]))) continue;
          Term t = decompose(s, sum->args_ + j);
          t.coef = cmul(k, t.coef);
          if (!is_zero(t.coef) || mono_has_undef(t)) terms.push_back(t);
        }
      } else if (x->is_const() && konst(x)) {
      } else {
        push(xs.data() + i);
      }
    }
    if (on(Rule::AddSort) && sort_runs(terms, [&](const Term& a, const Term& b) { return term_less(s, a, b); }))
      apply(Rule::AddSort);
    size_t n = 0;
    for (size_t i = 0; i < terms.size(); ++i) {
      if (n && same_mono(terms[n - 1], terms[i]) && apply(Rule::AddCombineLike)) {
        terms[n - 1].coef = cadd(terms[n - 1].coef, terms[i].coef);
      } else {
        terms[n++] = terms[i];
      }
    }
    terms.resize(n);
    std::erase_if(terms, [&](const Term& t) { return is_zero(t.coef) && !mono_has_undef(t); });
    if (terms.empty()) return c;
    if (s != Sort::Real && terms.size() >= 2 && on(Rule::BvDivModRecombine))
      if (Expr r = recombine_divmod(s, c, terms)) return r;
    bool keep_zero = nconst > 0 && !on(Rule::AddIdentity);
    if (terms.size() == 1 && is_zero(c) && !keep_zero) {
      if (nconst > 0 || xs.size() > 1) apply(Rule::AddIdentity);
      return term_node(s, terms[0]);
    }
    std::vector<Expr> args;
    args.reserve(terms.size() + 1);
    if (!is_zero(c) || keep_zero) args.push_back(c);
    for (const Term& t : terms) args.push_back(term_node(s, t));
    return raw(addop, s, args);
  }

  // k*c*(x/c) + k*(x%c) -> k*x (also with x>>s and x & (2^s-1)): the index split
  // row = i / N, col = i % N recombined as row*N + col. Returns nullptr if nothing matched.
  Expr recombine_divmod(Sort s, Expr c0, std::vector<Term>& terms) {
    uint64_t m = mask_of(bv_width(s));
    struct Rem {
      Expr x;
      uint64_t d;
      size_t i;
    };
    std::vector<Rem> rems;
    for (size_t i = 0; i < terms.size(); ++i) {
      if (terms[i].nf != 1 || terms[i].f[0]->has_undef()) continue;
      Expr f = terms[i].f[0];
      if (f->op == Op::BvURem && f->args_[1]->op == Op::ConstBV && f->args_[1]->u >= 2)
        rems.push_back({f->args_[0], f->args_[1]->u, i});
      else if (f->op == Op::BvAnd && f->nargs == 2 && f->args_[0]->op == Op::ConstBV && f->args_[0]->u != m &&
               is_pow2(f->args_[0]->u + 1))
        rems.push_back({f->args_[1], f->args_[0]->u + 1, i});
    }
    if (rems.empty()) return nullptr;
    std::vector<char> gone(terms.size(), 0);
    std::vector<Expr> extra;
    unsigned w = bv_width(s);
    for (size_t j = 0; j < terms.size(); ++j) {
      if (terms[j].nf != 1) continue;
      Expr g = terms[j].f[0];
      Expr x = nullptr;
      uint64_t d = 0;
      if (g->op == Op::BvUDiv && g->args_[1]->op == Op::ConstBV && g->args_[1]->u >= 2) {
        x = g->args_[0];
        d = g->args_[1]->u;
      } else if (g->op == Op::BvLShr && g->args_[1]->op == Op::ConstBV && g->args_[1]->u >= 1 && g->args_[1]->u < w) {
        x = g->args_[0];
        d = 1ULL << g->args_[1]->u;
      }
      if (!x) continue;
      for (const Rem& r : rems) {
        if (gone[r.i] || r.x != x || r.d != d) continue;
        uint64_t k = terms[r.i].coef->u;
        if (((k * d) & m) != terms[j].coef->u || !apply(Rule::BvDivModRecombine)) continue;
        gone[r.i] = gone[j] = 1;
        Expr kx[] = {mk_bv(s, k), x};
        extra.push_back(mul_n(s, kx));
        break;
      }
    }
    if (extra.empty()) return nullptr;
    std::vector<Expr> out = std::move(extra);
    if (!is_zero(c0)) out.push_back(c0);
    for (size_t i = 0; i < terms.size(); ++i)
      if (!gone[i]) out.push_back(term_node(s, terms[i]));
    return add_n(s, out);
  }

  // c * S for a sum S kept factored (more than kDistributeConstLimit terms).
  static bool scaled_big_sum(Expr x, Op addop) {
    return x->nargs == 2 && (x->op == Op::Mul || x->op == Op::BvMul) && x->args_[0]->is_const() &&
           x->args_[1]->op == addop && x->args_[1]->nargs > kDistributeConstLimit;
  }
  // sum + t for a canonical sum with many terms and a single non-sum t; nullptr if not applicable.
  Expr add_one(Sort s, Expr sum, Expr t) {
    Op addop = s == Sort::Real ? Op::Add : Op::BvAdd;
    if (sum->op != addop || sum->nargs < 16 || t->op == addop || t->op == Op::Undef || sum->has_undef() ||
        (scaled_big_sum(t, addop) && sum->nargs > kDistributeConstLimit) ||
        t->has_undef() || !on(Rule::AddFlatten) || !on(Rule::AddSort) || !on(Rule::AddCombineLike) ||
        !on(Rule::AddIdentity) || !on(Rule::ConstFold))
      return nullptr;
    apply(Rule::AddFlatten);
    const Expr* first = sum->args_;
    const Expr* last = sum->args_ + sum->nargs;
    bool has_c = first[0]->is_const();
    std::vector<Expr> args;
    args.reserve(sum->nargs + 1);
    auto plus = [](uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; };
    auto minus = [](uint64_t a, uint64_t b) { return a == UINT64_MAX ? a : a - b; };
    auto build = [&](uint64_t h, uint64_t size) {
      Pre pre{h, static_cast<uint8_t>(sum->attrs | t->attrs), size};
      return intern(Key{addop, s, 0, args}, &pre);
    };
    if (t->is_const()) {
      apply(Rule::ConstFold);
      Expr c = has_c ? cadd(first[0], t) : t;
      if (is_zero(c)) return nullptr;  // the constant vanishes: general path
      args.push_back(c);
      args.insert(args.end(), first + (has_c ? 1 : 0), last);
      uint64_t h = sum->hash + child_mix(c) - (has_c ? child_mix(first[0]) : 0);
      return build(h, plus(minus(sum->size, has_c ? first[0]->size : 0), c->size));
    }
    Term tt = decompose(s, &t);
    if (s != Sort::Real && tt.nf == 1) {  // may pair with a div/rem term: general path
      Op o = tt.f[0]->op;
      if (o == Op::BvURem || o == Op::BvAnd || o == Op::BvUDiv || o == Op::BvLShr) return nullptr;
    }
    // lower_bound over the terms by monomial order
    const Expr* lo = first + (has_c ? 1 : 0);
    size_t n = last - lo;
    while (n > 0) {
      size_t half = n / 2;
      Term m = decompose(s, lo + half);
      if (term_less(s, m, tt)) { lo += half + 1; n -= half + 1; }
      else n = half;
    }
    args.insert(args.end(), first, lo);
    if (lo != last) {
      Term m = decompose(s, lo);
      if (same_mono(m, tt)) {
        Expr coef = cadd(m.coef, tt.coef);
        if (is_zero(coef)) return nullptr;  // a term vanishes: general path
        apply(Rule::AddCombineLike);
        m.coef = coef;
        Expr nt = term_node(s, m);
        args.push_back(nt);
        args.insert(args.end(), lo + 1, last);
        return build(sum->hash - child_mix(*lo) + child_mix(nt), plus(minus(sum->size, (*lo)->size), nt->size));
      }
    }
    apply(Rule::AddSort);
    args.push_back(t);
    args.insert(args.end(), lo, last);
    return build(sum->hash + child_mix(t), plus(sum->size, t->size));
  }

  // The coefficient of a real sum's first non-constant term (1 when it has none).
  static mpq_class sum_lead(Expr sum) {
    for (uint32_t i = 0; i < sum->nargs; ++i) {
      Expr a = sum->args_[i];
      if (a->is_const()) continue;
      return a->op == Op::Mul && a->args_[0]->op == Op::ConstReal ? a->args_[0]->rational() : mpq_class(1);
    }
    return 1;
  }

  // Whether every non-constant term of a real sum has coefficient `lead` (stops at the first that does not).
  static bool uniform_sum(Expr sum, const mpq_class& lead) {
    for (uint32_t i = 0; i < sum->nargs; ++i) {
      Expr a = sum->args_[i];
      if (a->is_const()) continue;
      bool has = a->op == Op::Mul && a->args_[0]->op == Op::ConstReal;
      if (has ? a->args_[0]->rational() != lead : lead != 1) return false;
    }
    return true;
  }

  // c * (sum): scale every term's coefficient.
  Expr scale_sum(Sort s, Expr sum, Expr c) {
    std::vector<Expr> out;
    out.reserve(sum->nargs);
    for (uint32_t i = 0; i < sum->nargs; ++i) {
      Expr a = sum->args_[i];
      if (a->is_const()) { out.push_back(cmul(c, a)); continue; }
      Term t = decompose(s, sum->args_ + i);
      t.coef = cmul(c, t.coef);
      if (is_zero(t.coef) && !mono_has_undef(t)) continue;
      out.push_back(term_node(s, t));
    }
    return add_n(s, out);
  }

  // ---- products
  static constexpr uint64_t kDistributeSizeBudget = 2048;
  int distribute_depth = 0;
  Expr mul_n(Sort s, std::span<const Expr> xs) {
    Op mulop = s == Sort::Real ? Op::Mul : Op::BvMul;
    Op addop = s == Sort::Real ? Op::Add : Op::BvAdd;
    check_sorts(xs, s, op_name(mulop));
    if (xs.empty()) return one(s);
    if (xs.size() == 1) return xs[0];
    Expr c = one(s);
    unsigned nconst = 0;
    std::vector<Expr> atoms;
    atoms.reserve(xs.size());
    auto konst = [&](Expr k) {
      if (nconst == 0 || apply(Rule::ConstFold)) {
        c = cmul(c, k);
        ++nconst;
        return true;
      }
      return false;
    };
    for (Expr x : xs) {
      if (x->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
      if (x->op == mulop && apply(Rule::MulFlatten)) {
        uint32_t j = 0;
        if (x->args_[0]->is_const() && konst(x->args_[0])) j = 1;
        atoms.insert(atoms.end(), x->args_ + j, x->args_ + x->nargs);
      } else if (x->is_const() && konst(x)) {
      } else {
        atoms.push_back(x);
      }
    }
    if (atoms.empty()) return c;
    if (is_zero(c) && std::none_of(atoms.begin(), atoms.end(), [](Expr a) { return a->has_undef(); }) &&
        apply(Rule::MulIdentity))
      return c;
    if (on(Rule::MulSort) && sort_runs(atoms, [&](Expr a, Expr b) { return less(a, b); })) apply(Rule::MulSort);
    // distribution over sums
    size_t nadd = std::count_if(atoms.begin(), atoms.end(), [&](Expr a) { return a->op == addop; });
    if (nadd) {
      if (nadd == 1 && atoms.size() == 1 && !is_one(c)) {
        if (atoms[0]->nargs <= kDistributeConstLimit && apply(Rule::MulDistributeConst))
          return scale_sum(s, atoms[0], c);
        nadd = 0;  // c*(a+b) stays factored; the product rule below is for sums times atoms
      }
    }
    if (nadd) {
      // Expand only small products of small sums: bounded term count, bounded
      // operand size (so recurrences like e = e*y + 1 stay linear), bounded nesting.
      uint64_t total = 1, size = 0;
      for (Expr a : atoms) {
        size += std::min<uint64_t>(a->size, kDistributeSizeBudget + 1);
        if (a->op == addop && (total *= a->nargs) > kDistributeLimit) break;
      }
      if (total <= kDistributeLimit && size <= kDistributeSizeBudget && distribute_depth < 4 &&
          apply(Rule::MulDistributeSmall)) {
        ++distribute_depth;
        struct Dec { int& d; ~Dec() { --d; } } dec{distribute_depth};
        std::vector<Expr> others{c};
        for (Expr a : atoms)
          if (a->op != addop) others.push_back(a);
        std::vector<Expr> prods{mul_n(s, others)}, next;
        for (Expr a : atoms) {
          if (a->op != addop) continue;
          next.clear();
          for (Expr p : prods)
            for (Expr t : a->args()) {
              Expr pt[] = {p, t};
              next.push_back(mul_n(s, pt));
            }
          prods.swap(next);
        }
        return add_n(s, prods);
      }
    }
    if (s == Sort::Real && nadd && atoms.size() > 1) {
      bool moved = false;
      for (Expr& a : atoms) {
        // Uniform sums only, up to 2^14 terms: rescaling is O(n) per product, and a batch variance's
        // 10^5 products (x_i - mean)^2 each hold a 10^5-term sum (whose coefficients differ anyway).
        if (a->op != addop || a->nargs > (1u << 14)) continue;
        mpq_class lead = sum_lead(a);
        if (lead == 1 || lead == 0 || !uniform_sum(a, lead) || !apply(Rule::MulSumContent)) continue;
        a = scale_sum(s, a, mk_real(1 / lead));
        c = cmul(c, mk_real(lead));
        moved = true;
      }
      if (moved) {
        atoms.insert(atoms.begin(), c);
        return mul_n(s, atoms);
      }
    }
    // The constant's magnitude goes into the first min/max factor, its sign stays (-2*max(x, y) is
    // -1*max(2x, 2y)): -m/6 and max(x/6, ...) of one max m then cancel as like terms (pair 052).
    if (s == Sort::Real && !is_one(c) && c->rational() != -1) {
      auto mm = std::find_if(atoms.begin(), atoms.end(), [](Expr a) { return a->op == Op::Min || a->op == Op::Max; });
      if (mm != atoms.end() && apply(Rule::MulDistributeMinMax)) {
        bool negative = c->rational() < 0;
        Expr magnitude = negative ? mk_real(-c->rational()) : c;
        std::vector<Expr> scaled;
        scaled.reserve((*mm)->nargs);
        for (Expr a : (*mm)->args()) {
          Expr pt[] = {magnitude, a};
          scaled.push_back(mul_n(s, pt));
        }
        *mm = minmax_n((*mm)->op, s, scaled);
        if (negative) atoms.insert(atoms.begin(), mk_real(mpq_class(-1)));
        return mul_n(s, atoms);
      }
    }
    bool keep_one = nconst > 0 && !on(Rule::MulIdentity);
    if (is_one(c) && !keep_one && atoms.size() == 1) {
      if (nconst) apply(Rule::MulIdentity);
      return atoms[0];
    }
    if (!is_one(c) || keep_one) atoms.insert(atoms.begin(), c);
    return raw(mulop, s, atoms);
  }
  Expr neg(Expr a) {
    Expr m1 = a->sort == Sort::Real ? mk_real(mpq_class(-1)) : ones(a->sort);
    if (!apply(Rule::NegToMul)) return raw2(a->sort == Sort::Real ? Op::Mul : Op::BvMul, a->sort, m1, a);
    Expr xs[] = {m1, a};
    return mul_n(a->sort, xs);
  }

  // ---- min / max (real and bitvector), n-ary
  static bool is_min(Op o) { return o == Op::Min || o == Op::BvSMin || o == Op::BvUMin; }
  int const_cmp(Op op, Expr a, Expr b) {  // a <=> b in the order op uses
    if (a->sort == Sort::Real) return cmp(a->rational(), b->rational());
    bool sgn = op == Op::BvSMin || op == Op::BvSMax;
    if (sgn) {
      int64_t x = a->bv_signed(), y = b->bv_signed();
      return x < y ? -1 : x > y;
    }
    return a->u < b->u ? -1 : a->u > b->u;
  }
  // A real constant no finite float passes: >= FLT_MAX for a min, <= -FLT_MAX for a max.
  static bool float_limit(bool mn, Expr c) {
    static const mpq_class flt_max(mpz_class("340282346638528859811704183484516925440"));
    return mn ? c->rational() >= flt_max : c->rational() <= -flt_max;
  }
  Expr minmax_n(Op op, Sort s, std::span<const Expr> xs) {
    check_sorts(xs, s, op_name(op));
    if (xs.empty()) throw std::invalid_argument(fmt::format("{} of no operands", op_name(op)));
    if (xs.size() == 1) return xs[0];
    bool mn = is_min(op);
    if ((op == Op::BvSMin || op == Op::BvSMax) &&
        std::all_of(xs.begin(), xs.end(), [&](Expr x) { return nonneg(x); }) && apply(Rule::BvSignedToUnsigned))
      return minmax_n(mn ? Op::BvUMin : Op::BvUMax, s, xs);
    if (xs.size() == 2 && on(Rule::MinMaxFlatten) && on(Rule::MinMaxSortDedup)) {
      for (int k = 0; k < 2; ++k) {  // big canonical node + one atom (a reduction loop): O(log n) search
        Expr big = xs[k], t = xs[1 - k];
        if (big->op != op || big->nargs < 16 || t->op == op || t->is_const() || t->op == Op::Undef) continue;
        const Expr* first = big->args_ + (big->args_[0]->is_const() ? 1 : 0);
        const Expr* last = big->args_ + big->nargs;
        const Expr* it = std::lower_bound(first, last, t, [&](Expr p, Expr q) { return less(p, q); });
        apply(Rule::MinMaxFlatten);
        apply(Rule::MinMaxSortDedup);
        if (it != last && *it == t) return big;
        std::vector<Expr> args(big->args_, it);
        args.push_back(t);
        args.insert(args.end(), it, last);
        uint64_t size = big->size > UINT64_MAX - t->size ? UINT64_MAX : big->size + t->size;
        Pre pre{big->hash + child_mix(t), static_cast<uint8_t>(big->attrs | t->attrs), size};
        return intern(Key{op, s, 0, args}, &pre);
      }
    }
    Expr best = nullptr;
    std::vector<Expr> atoms;
    atoms.reserve(xs.size());
    auto konst = [&](Expr k) {
      if (!best) { best = k; return true; }
      if (!apply(Rule::MinMaxConst)) return false;
      int c = const_cmp(op, k, best);
      if (mn ? c < 0 : c > 0) best = k;
      return true;
    };
    for (Expr x : xs) {
      if (x->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
      if (x->op == op && apply(Rule::MinMaxFlatten)) {
        uint32_t j = 0;
        if (x->args_[0]->is_const() && konst(x->args_[0])) j = 1;
        atoms.insert(atoms.end(), x->args_ + j, x->args_ + x->nargs);
      } else if (x->is_const() && konst(x)) {
      } else {
        atoms.push_back(x);
      }
    }
    if (on(Rule::MinMaxSortDedup)) {
      bool changed = sort_runs(atoms, [&](Expr a, Expr b) { return less(a, b); });
      size_t before = atoms.size();
      atoms.erase(std::unique(atoms.begin(), atoms.end()), atoms.end());
      if (changed || before != atoms.size()) apply(Rule::MinMaxSortDedup);
    }
    if (best && s == Sort::Real && !atoms.empty() && float_limit(mn, best) && apply(Rule::MinMaxFloatLimit))
      best = nullptr;
    if (best) atoms.insert(atoms.begin(), best);
    if (atoms.size() == 1) return atoms[0];
    if (op == Op::Max && s == Sort::Real && best && atoms.size() == 2 && atoms[1]->op == Op::Min &&
        atoms[1]->args_[0]->op == Op::ConstReal && atoms[1]->args_[0]->rational() >= best->rational() &&
        apply(Rule::ClampOrder)) {
      Expr inner = atoms[1];
      Expr lo_y[] = {best, minmax_n(Op::Min, s, {inner->args_ + 1, inner->nargs - 1})};
      Expr hi_rest[] = {inner->args_[0], minmax_n(Op::Max, s, lo_y)};
      return minmax_n(Op::Min, s, hi_rest);
    }
    return raw(op, s, atoms);
  }

  // ---- interval analysis for bitvectors (unsigned bounds)
  NodeMap<Bounds> bounds_memo;
  static Bounds full(Sort s) { return {0, mask_of(bv_width(s))}; }
  bool nonneg(Expr e) {
    unsigned w = bv_width(e->sort);
    return bounds(e).hi < (1ULL << (w - 1));
  }
  static bool analysed(Op o) {
    switch (o) {
      case Op::ZExt: case Op::SExt: case Op::Trunc: case Op::BvAdd: case Op::BvMul: case Op::BvAnd:
      case Op::BvOr: case Op::BvLShr: case Op::BvUDiv: case Op::BvURem: case Op::BvUMin: case Op::BvUMax:
      case Op::Ite: case Op::BvSMin: case Op::BvSMax: case Op::BvXor:
        return true;
      default:
        return false;
    }
  }
  Bounds memo_bounds(Expr e) {
    if (e->op == Op::ConstBV) return {e->u, e->u};
    if (e->op == Op::Var) return e->bounds();
    auto it = bounds_memo.find(e);
    return it == bounds_memo.end() ? full(e->sort) : it->second;
  }
  // Memoize bounds of every factor of every term (mono_iv reads the memo only).
  void prepare_bounds(std::span<const Expr> terms) {
    for (Expr t : terms)
      if (!t->is_const()) {
        if (t->op == Op::BvMul) for (Expr f : t->args()) bounds(f);
        else bounds(t);
      }
  }
  // Exact unsigned interval of a product of factors, or nullopt if it may wrap.
  std::optional<std::pair<i128, i128>> mono_iv(const Expr* f, uint32_t nf, unsigned w) {
    i128 lo = 1, hi = 1, lim = static_cast<i128>(mask_of(w));
    for (uint32_t i = 0; i < nf; ++i) {
      Bounds b = memo_bounds(f[i]);
      if (b.hi != 0 && hi > lim / static_cast<i128>(b.hi)) return std::nullopt;  // would exceed 2^w - 1
      lo *= b.lo;
      hi *= b.hi;
    }
    return std::pair{lo, hi};
  }
  // Exact integer interval of sum c_i*m_i + c0 with coefficients read signed
  // and monomials as their unsigned values; nullopt on possible overflow of i128 range.
  std::optional<std::pair<i128, i128>> sum_iv(Expr e, bool signed_atoms) {
    unsigned w = bv_width(e->sort);
    i128 lo = 0, hi = 0;
    const i128 cap = static_cast<i128>(1) << 100;
    auto terms = e->op == Op::BvAdd ? e->args() : std::span<const Expr>(&e, 1);
    for (size_t i = 0; i < terms.size(); ++i) {
      Expr t = terms[i];
      if (t->op == Op::ConstBV) { lo += sx(t->u, w); hi += sx(t->u, w); continue; }
      Term tm = decompose(e->sort, &terms[i]);
      i128 c = sx(tm.coef->u, w), mlo, mhi;
      auto m = mono_iv(tm.f, tm.nf, w);
      if (!m) { mlo = 0; mhi = static_cast<i128>(mask_of(w)); }
      else { mlo = m->first; mhi = m->second; }
      if (signed_atoms && mhi >= (static_cast<i128>(1) << (w - 1))) {
        mlo = -(static_cast<i128>(1) << (w - 1));
        mhi = (static_cast<i128>(1) << (w - 1)) - 1;
      }
      i128 a = c * mlo, b = c * mhi;  // |c| <= 2^63, |m| <= 2^64: fits in 128 bits
      if (a < -cap || a > cap || b < -cap || b > cap) return std::nullopt;
      lo += std::min(a, b);
      hi += std::max(a, b);
      if (lo < -cap || hi > cap) return std::nullopt;
    }
    return std::pair{lo, hi};
  }
  Bounds compute_bounds(Expr e) {
    unsigned w = bv_width(e->sort);
    uint64_t m = mask_of(w);
    Bounds f = full(e->sort);
    auto b = [&](unsigned i) { return memo_bounds(e->args_[i]); };
    switch (e->op) {
      case Op::ZExt: return b(0);
      case Op::SExt: {
        Bounds x = b(0);
        unsigned wi = bv_width(e->args_[0]->sort);
        return x.hi < (1ULL << (wi - 1)) ? x : f;
      }
      case Op::Trunc: { Bounds x = b(0); return x.hi <= m ? x : f; }
      case Op::BvAdd: case Op::BvMul: {
        auto iv = sum_iv(e, false);
        if (!iv) return f;
        i128 span = static_cast<i128>(1) << w;
        i128 q = iv->first >= 0 ? iv->first / span : -((-iv->first + span - 1) / span);
        i128 lo = iv->first - q * span, hi = iv->second - q * span;
        if (hi >= span) return f;
        return {static_cast<uint64_t>(lo), static_cast<uint64_t>(hi)};
      }
      case Op::BvAnd: {
        uint64_t hi = m;
        for (unsigned i = 0; i < e->nargs; ++i) hi = std::min(hi, b(i).hi);
        return {0, hi};
      }
      case Op::BvOr: case Op::BvXor: {
        uint64_t hi = 0, lo = 0;
        for (unsigned i = 0; i < e->nargs; ++i) {
          hi |= b(i).hi;
          if (e->op == Op::BvOr) lo = std::max(lo, b(i).lo);
        }
        uint64_t cap = hi ? (hi >= (1ULL << 63) ? ~0ULL : (1ULL << (log2u(hi) + 1)) - 1) : 0;
        return {lo, std::min(cap, m)};
      }
      case Op::BvLShr: {
        Bounds x = b(0), k = b(1);
        if (k.lo != k.hi || k.lo >= w) return Bounds{0, x.hi};  // x >> k <= x
        return {x.lo >> k.lo, x.hi >> k.lo};
      }
      case Op::BvUDiv: {
        Bounds x = b(0), d = b(1);
        if (d.lo == 0) return f;
        return {x.lo / d.hi, x.hi / d.lo};
      }
      case Op::BvURem: {
        Bounds x = b(0), d = b(1);
        if (d.lo == 0) return {0, x.hi};  // x % 0 = x
        return {0, std::min(x.hi, d.hi - 1)};
      }
      case Op::BvUMin: case Op::BvUMax: {
        Bounds r = b(0);
        for (unsigned i = 1; i < e->nargs; ++i) {
          Bounds x = b(i);
          if (e->op == Op::BvUMin) r = {std::min(r.lo, x.lo), std::min(r.hi, x.hi)};
          else r = {std::max(r.lo, x.lo), std::max(r.hi, x.hi)};
        }
        return r;
      }
      case Op::BvSMin: case Op::BvSMax: {  // only useful when all operands are non-negative
        Bounds r = b(0);
        for (unsigned i = 0; i < e->nargs; ++i)
          if (b(i).hi >= (1ULL << (w - 1))) return f;
        for (unsigned i = 1; i < e->nargs; ++i) {
          Bounds x = b(i);
          if (e->op == Op::BvSMin) r = {std::min(r.lo, x.lo), std::min(r.hi, x.hi)};
          else r = {std::max(r.lo, x.lo), std::max(r.hi, x.hi)};
        }
        return r;
      }
      case Op::Ite: {
        Bounds x = b(1), y = b(2);
        return {std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
      }
      default: return f;
    }
  }
  Bounds bounds(Expr e) {
    if (!is_bv(e->sort)) throw std::invalid_argument("bv_bounds: bit-vector expression expected");
    if (e->op == Op::ConstBV || e->op == Op::Var || !analysed(e->op)) return memo_bounds(e);
    if (auto it = bounds_memo.find(e); it != bounds_memo.end()) return it->second;
    std::vector<std::pair<Expr, bool>> st{{e, false}};
    while (!st.empty()) {
      auto [x, done] = st.back();
      st.pop_back();
      if (bounds_memo.count(x)) continue;
      if (done) {
        bounds_memo.emplace(x, compute_bounds(x));
        continue;
      }
      st.emplace_back(x, true);
      for (Expr c : x->args())
        if (is_bv(c->sort) && analysed(c->op) && !bounds_memo.count(c)) st.emplace_back(c, false);
    }
    return bounds_memo.at(e);
  }

  // ---- bitvector arithmetic
  Expr bv_add(std::span<const Expr> xs) { return add_n(xs.empty() ? Sort::BV32 : xs[0]->sort, xs); }
  Expr bv_mul(std::span<const Expr> xs) { return mul_n(xs.empty() ? Sort::BV32 : xs[0]->sort, xs); }

  Expr bitop_n(Op op, std::span<const Expr> xs) {
    if (xs.empty()) throw std::invalid_argument(fmt::format("{} of no operands", op_name(op)));
    Sort s = xs[0]->sort;
    check_bv(xs[0], op_name(op));
    check_sorts(xs, s, op_name(op));
    if (xs.size() == 1) return xs[0];
    uint64_t m = mask_of(bv_width(s));
    uint64_t c = op == Op::BvAnd ? m : 0;
    unsigned nconst = 0;
    std::vector<Expr> atoms;
    auto konst = [&](uint64_t k) {
      if (nconst && !apply(Rule::ConstFold)) return false;
      c = op == Op::BvAnd ? (c & k) : op == Op::BvOr ? (c | k) : (c ^ k);
      ++nconst;
      return true;
    };
    std::vector<Expr> extra_consts;
    for (Expr x : xs) {
      if (x->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
      if (x->op == op) {
        for (Expr a : x->args())
          if (!(a->op == Op::ConstBV && konst(a->u))) (a->op == Op::ConstBV ? extra_consts : atoms).push_back(a);
      } else if (x->op == Op::ConstBV) {
        if (!konst(x->u)) extra_consts.push_back(x);
      } else {
        atoms.push_back(x);
      }
    }
    bool any_undef = std::any_of(atoms.begin(), atoms.end(), [](Expr a) { return a->has_undef(); });
    sort_runs(atoms, [&](Expr a, Expr b) { return less(a, b); });
    if (op == Op::BvXor) {  // x ^ x = 0
      std::vector<Expr> keep;
      for (size_t i = 0; i < atoms.size();) {
        size_t j = i;
        while (j < atoms.size() && atoms[j] == atoms[i]) ++j;
        if ((j - i) % 2 && true) keep.push_back(atoms[i]);
        else if (atoms[i]->has_undef() || !apply(Rule::BvBitFold)) keep.insert(keep.end(), j - i, atoms[i]);
        i = j;
      }
      atoms.swap(keep);
    } else if (on(Rule::BvBitFold)) {
      size_t before = atoms.size();
      atoms.erase(std::unique(atoms.begin(), atoms.end()), atoms.end());
      if (before != atoms.size()) apply(Rule::BvBitFold);
    }
    // absorbing / neutral constants
    if (nconst) {
      if (op == Op::BvAnd && c == 0 && !any_undef && apply(Rule::BvBitFold)) return mk_bv(s, 0);
      if (op == Op::BvOr && c == m && !any_undef && apply(Rule::BvBitFold)) return mk_bv(s, m);
      bool neutral = (op == Op::BvAnd && c == m) || (op != Op::BvAnd && c == 0);
      if (neutral && !atoms.empty() && apply(Rule::BvBitFold)) nconst = 0;
    }
    // x & (2^k - 1): terms with coefficients divisible by 2^k vanish; then drop the mask if x fits.
    if (op == Op::BvAnd && nconst && atoms.size() == 1 && is_pow2(c + 1) && extra_consts.empty()) {
      Expr x = atoms[0];
      if ((x->op == Op::BvAdd || x->op == Op::BvMul) && !x->has_undef()) {
        Expr r = drop_multiples(x, c + 1);
        if (r != x && apply(Rule::BvBitFold)) {
          Expr ys[] = {r, mk_bv(s, c)};
          return bitop_n(op, ys);
        }
      }
      if (bounds(x).hi <= c && apply(Rule::BvBitFold)) return x;
    }
    if (nconst) atoms.insert(atoms.begin(), mk_bv(s, c));
    atoms.insert(atoms.begin() + (nconst ? 1 : 0), extra_consts.begin(), extra_consts.end());
    if (atoms.empty()) return mk_bv(s, c);
    if (atoms.size() == 1) return atoms[0];
    return raw(op, s, atoms);
  }
  // x with every term whose coefficient is a multiple of d (a power of two) removed, constant reduced mod d.
  Expr drop_multiples(Expr x, uint64_t d) {
    Sort s = x->sort;
    auto terms = x->op == Op::BvAdd ? x->args() : std::span<const Expr>(&x, 1);
    std::vector<Expr> keep;
    bool changed = false;
    for (size_t i = 0; i < terms.size(); ++i) {
      Expr t = terms[i];
      uint64_t c = t->op == Op::ConstBV ? t->u : decompose(s, &terms[i]).coef->u;
      if (t->op == Op::ConstBV) {
        if (c % d) keep.push_back(mk_bv(s, c % d));
        changed |= c % d != c;
      } else if (c % d == 0) {
        changed = true;
      } else {
        keep.push_back(t);
      }
    }
    return changed ? add_n(s, keep) : x;
  }

  // Split x (affine) by divisor d: returns (quotient terms, remainder expr) when the
  // sum provably does not wrap (exact unsigned arithmetic) and some term is divisible.
  std::optional<std::pair<Expr, Expr>> div_split(Expr x, uint64_t d) {
    if (x->op != Op::BvAdd && x->op != Op::BvMul) return std::nullopt;
    if (x->has_undef()) return std::nullopt;
    Sort s = x->sort;
    unsigned w = bv_width(s);
    auto terms = x->op == Op::BvAdd ? x->args() : std::span<const Expr>(&x, 1);
    prepare_bounds(terms);
    std::vector<Expr> quot, rem;
    i128 hi = 0;
    for (size_t i = 0; i < terms.size(); ++i) {
      Expr t = terms[i];
      if (t->op == Op::ConstBV) {
        hi += t->u;
        if (t->u / d) quot.push_back(mk_bv(s, t->u / d));
        if (t->u % d) rem.push_back(mk_bv(s, t->u % d));
        continue;
      }
      Term tm = decompose(s, &terms[i]);
      auto mi = mono_iv(tm.f, tm.nf, w);
      if (!mi) return std::nullopt;
      i128 lim = static_cast<i128>(mask_of(w));
      if (mi->second != 0 && static_cast<i128>(tm.coef->u) > (lim - hi) / mi->second) return std::nullopt;
      hi += static_cast<i128>(tm.coef->u) * mi->second;  // exact unsigned sum stays below 2^w
      if (tm.coef->u % d == 0) {
        tm.coef = mk_bv(s, tm.coef->u / d);
        quot.push_back(term_node(s, tm));
      } else {
        rem.push_back(t);
      }
    }
    if (quot.empty()) return std::nullopt;
    return std::pair{add_n(s, quot), add_n(s, rem)};
  }
  // x / d or (as_shift) x >> log2(d) for a constant d >= 2.
  Expr udiv_const(Expr x, uint64_t d, bool as_shift) {
    Sort s = x->sort;
    if (on(Rule::BvDivRemConst)) {
      if (auto sp = div_split(x, d)) {
        apply(Rule::BvDivRemConst);
        Expr xs[] = {sp->first, udiv_const(sp->second, d, as_shift)};
        return add_n(s, xs);
      }
      if (bounds(x).hi < d && !x->has_undef() && apply(Rule::BvDivRemConst)) return mk_bv(s, 0);
    }
    if (as_shift) return raw2(Op::BvLShr, s, x, mk_bv(s, log2u(d)));
    if (is_pow2(d) && apply(Rule::BvDivRemConst)) return raw2(Op::BvLShr, s, x, mk_bv(s, log2u(d)));
    return raw2(Op::BvUDiv, s, x, mk_bv(s, d));
  }
  Expr urem_const(Expr x, uint64_t d) {
    Sort s = x->sort;
    if (on(Rule::BvDivRemConst)) {
      if (is_pow2(d)) {
        apply(Rule::BvDivRemConst);
        Expr xs[] = {x, mk_bv(s, d - 1)};
        return bitop_n(Op::BvAnd, xs);
      }
      if (auto sp = div_split(x, d)) {
        apply(Rule::BvDivRemConst);
        return urem_const(sp->second, d);
      }
      if (bounds(x).hi < d && apply(Rule::BvDivRemConst)) return x;
    }
    return raw2(Op::BvURem, s, x, mk_bv(s, d));
  }
  static uint64_t fold_udiv(uint64_t a, uint64_t b, uint64_t m) { return b == 0 ? m : a / b; }
  static uint64_t fold_urem(uint64_t a, uint64_t b) { return b == 0 ? a : a % b; }
  static uint64_t fold_sdiv(Expr a, Expr b, uint64_t m) {
    int64_t x = a->bv_signed(), y = b->bv_signed();
    if (y == 0) return x < 0 ? 1 : m;
    if (y == -1) return static_cast<uint64_t>(0) - static_cast<uint64_t>(x);  // INT_MIN / -1 wraps
    return static_cast<uint64_t>(x / y);
  }
  static uint64_t fold_srem(Expr a, Expr b) {
    int64_t x = a->bv_signed(), y = b->bv_signed();
    if (y == 0) return static_cast<uint64_t>(x);
    if (y == -1) return 0;
    return static_cast<uint64_t>(x % y);
  }
  Expr divrem(Op op, Expr a, Expr b) {
    check_bv(a, op_name(op));
    Expr ab[] = {a, b};
    check_sorts(ab, a->sort, op_name(op));
    Sort s = a->sort;
    uint64_t m = mask_of(bv_width(s));
    if ((a->op == Op::Undef || b->op == Op::Undef) && apply(Rule::UndefPropagate)) return undef(s);
    if (a->op == Op::ConstBV && b->op == Op::ConstBV && apply(Rule::ConstFold)) {
      switch (op) {
        case Op::BvUDiv: return mk_bv(s, fold_udiv(a->u, b->u, m));
        case Op::BvURem: return mk_bv(s, fold_urem(a->u, b->u));
        case Op::BvSDiv: return mk_bv(s, fold_sdiv(a, b, m));
        default: return mk_bv(s, fold_srem(a, b));
      }
    }
    if ((op == Op::BvSDiv || op == Op::BvSRem) && nonneg(a) && nonneg(b) && apply(Rule::BvSignedToUnsigned))
      return divrem(op == Op::BvSDiv ? Op::BvUDiv : Op::BvURem, a, b);
    // x /s 1 = x and x %s 1 = 0 for every x, INT_MIN included (strides of 1 in generic index code)
    if (b->op == Op::ConstBV && b->u == 1 && (op == Op::BvSDiv || op == Op::BvSRem) && !a->has_undef() &&
        apply(Rule::BvDivRemConst))
      return op == Op::BvSDiv ? a : mk_bv(s, 0);
    if (b->op == Op::ConstBV && b->u >= 1 && (op == Op::BvUDiv || op == Op::BvURem)) {
      if (b->u == 1 && !a->has_undef() && apply(Rule::BvDivRemConst)) return op == Op::BvUDiv ? a : mk_bv(s, 0);
      if (b->u >= 2) return op == Op::BvUDiv ? udiv_const(a, b->u, false) : urem_const(a, b->u);
    }
    return raw2(op, s, a, b);
  }
  Expr shift(Op op, Expr a, Expr b) {
    check_bv(a, op_name(op));
    Expr ab[] = {a, b};
    check_sorts(ab, a->sort, op_name(op));
    Sort s = a->sort;
    unsigned w = bv_width(s);
    uint64_t m = mask_of(w);
    if ((a->op == Op::Undef || b->op == Op::Undef) && apply(Rule::UndefPropagate)) return undef(s);
    if (a->op == Op::ConstBV && b->op == Op::ConstBV && apply(Rule::ConstFold)) {
      uint64_t k = b->u;
      switch (op) {
        case Op::BvShl: return mk_bv(s, k >= w ? 0 : a->u << k);
        case Op::BvLShr: return mk_bv(s, k >= w ? 0 : a->u >> k);
        default: {
          int64_t x = a->bv_signed();
          return mk_bv(s, static_cast<uint64_t>(k >= w ? (x < 0 ? -1 : 0) : (x >> k)) & m);
        }
      }
    }
    if (b->op == Op::ConstBV) {
      uint64_t k = b->u;
      if (k == 0 && apply(Rule::BvBitFold)) return a;
      if (op == Op::BvAShr && nonneg(a) && apply(Rule::BvSignedToUnsigned)) return shift(Op::BvLShr, a, b);
      if (k >= w && op != Op::BvAShr && !a->has_undef() && apply(Rule::BvBitFold)) return mk_bv(s, 0);
      if (k < w && op == Op::BvShl && apply(Rule::BvAffine)) {
        Expr xs[] = {a, mk_bv(s, 1ULL << k)};
        return mul_n(s, xs);
      }
      if (k < w && op == Op::BvLShr) return udiv_const(a, 1ULL << k, true);
    }
    return raw2(op, s, a, b);
  }
  Expr bv_not(Expr a) {
    check_bv(a, "bvnot");
    Sort s = a->sort;
    if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
    if (a->op == Op::ConstBV && apply(Rule::ConstFold)) return mk_bv(s, ~a->u);
    if (apply(Rule::BvAffine)) {  // ~x = -x - 1
      Expr xs[] = {neg(a), ones(s)};
      return add_n(s, xs);
    }
    if (a->op == Op::BvNot && apply(Rule::BvBitFold)) return a->args_[0];
    return raw1(Op::BvNot, s, a);
  }
  Expr mulhi(Expr a, Expr b, bool sgn) {
    check_bv(a, "bvmulhi");
    Expr ab[] = {a, b};
    check_sorts(ab, a->sort, "bvmulhi");
    Sort s = a->sort;
    unsigned w = bv_width(s);
    if ((a->op == Op::Undef || b->op == Op::Undef) && apply(Rule::UndefPropagate)) return undef(s);
    if (a->op == Op::ConstBV && b->op == Op::ConstBV && apply(Rule::ConstFold)) {
      i128 p = sgn ? sx(a->u, w) * sx(b->u, w) : static_cast<i128>(static_cast<unsigned __int128>(a->u) * b->u);
      if (!sgn) return mk_bv(s, static_cast<uint64_t>((static_cast<unsigned __int128>(a->u) * b->u) >> w));
      return mk_bv(s, static_cast<uint64_t>(static_cast<unsigned __int128>(p) >> w));
    }
    if (less(b, a)) std::swap(a, b);
    return raw2(sgn ? Op::BvMulHiS : Op::BvMulHiU, s, a, b);
  }

  // ---- width changes
  int ext_depth = 0;
  Expr ext(Expr a, Sort to, bool sgn) {
    std::string_view what = sgn ? "sext" : "zext";
    check_bv(a, what);
    unsigned wf = bv_width(a->sort), wt = bv_width(to);
    if (wt < wf || !wt)
      throw std::invalid_argument(fmt::format("{}: cannot extend {} to {}", what, sort_name(a->sort), sort_name(to)));
    if (wt == wf) return a;
    if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(to);
    if (a->op == Op::ConstBV && apply(Rule::ConstFold))
      return mk_bv(to, sgn ? static_cast<uint64_t>(a->bv_signed()) : a->u);
    if (sgn && a->op == Op::SExt && apply(Rule::BvExtMerge)) return ext(a->args_[0], to, true);
    if (a->op == Op::ZExt && apply(Rule::BvExtMerge)) return ext(a->args_[0], to, false);
    if (sgn && nonneg(a) && apply(Rule::BvSignedToUnsigned)) return ext(a, to, false);
    if ((a->op == Op::BvAdd || a->op == Op::BvMul) && on(Rule::BvExtPush) && ext_depth < 8) {
      if (Expr r = push_ext(a, to, sgn)) return r;
    }
    return raw1(sgn ? Op::SExt : Op::ZExt, to, a);
  }
  // ext(sum c_i*m_i + c0) = sum sx(c_i)*ext(m_i) + sx(c0) when the exact integer
  // value of the sum provably lies in the narrow range (no wraparound).
  Expr push_ext(Expr a, Sort to, bool sgn) {
    if (a->has_undef()) return nullptr;
    unsigned w = bv_width(a->sort);
    if (a->op == Op::BvMul && !a->args_[0]->is_const()) {
      for (Expr f : a->args()) bounds(f);  // memoize the factors' bounds for mono_iv
      auto m = mono_iv(a->args_, a->nargs, w);
      if (!m || (sgn && m->second >= (static_cast<i128>(1) << (w - 1)))) return nullptr;
      apply(Rule::BvExtPush);
      ++ext_depth;
      std::vector<Expr> fs;
      for (Expr f : a->args()) fs.push_back(ext(f, to, false));
      --ext_depth;
      return mul_n(to, fs);
    }
    auto terms = a->op == Op::BvAdd ? a->args() : std::span<const Expr>(&a, 1);
    prepare_bounds(terms);
    auto iv = sum_iv(a, sgn);
    if (!iv) return nullptr;
    i128 lo = sgn ? -(static_cast<i128>(1) << (w - 1)) : 0;
    i128 hi = sgn ? (static_cast<i128>(1) << (w - 1)) - 1 : static_cast<i128>(mask_of(w));
    if (iv->first < lo || iv->second > hi) return nullptr;
    apply(Rule::BvExtPush);
    ++ext_depth;
    std::vector<Expr> out;
    for (size_t i = 0; i < terms.size(); ++i) {
      Expr t = terms[i];
      if (t->op == Op::ConstBV) {
        out.push_back(mk_bv(to, static_cast<uint64_t>(sx(t->u, w))));
        continue;
      }
      Term tm = decompose(a->sort, &terms[i]);
      Expr mono = mono_node(a->sort, tm);
      Expr xs[] = {mk_bv(to, static_cast<uint64_t>(sx(tm.coef->u, w))), ext(mono, to, sgn)};
      out.push_back(mul_n(to, xs));
    }
    --ext_depth;
    return add_n(to, out);
  }
  Expr trunc(Expr a, Sort to, bool deep = true) {
    check_bv(a, "trunc");
    unsigned wf = bv_width(a->sort), wt = bv_width(to);
    if (wt > wf || !wt)
      throw std::invalid_argument(fmt::format("trunc: cannot truncate {} to {}", sort_name(a->sort), sort_name(to)));
    if (wt == wf) return a;
    if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(to);
    if (a->op == Op::ConstBV && apply(Rule::ConstFold)) return mk_bv(to, a->u);
    if (a->op == Op::Trunc && apply(Rule::BvTruncPush)) return trunc(a->args_[0], to, false);
    if ((a->op == Op::ZExt || a->op == Op::SExt) && apply(Rule::BvTruncPush)) {
      Expr in = a->args_[0];
      unsigned wi = bv_width(in->sort);
      if (wi == wt) return in;
      if (wi > wt) return trunc(in, to, false);
      return ext(in, to, a->op == Op::SExt);
    }
    if (deep && !a->has_undef()) {
      switch (a->op) {
        case Op::BvAdd: case Op::BvMul: case Op::BvAnd: case Op::BvOr: case Op::BvXor: {
          if (!apply(Rule::BvTruncPush)) break;
          std::vector<Expr> xs;
          for (Expr x : a->args()) {
            if (a->op == Op::BvAdd && x->op == Op::BvMul) {  // one level further: the term's factors
              std::vector<Expr> fs;
              for (Expr f : x->args()) fs.push_back(trunc(f, to, false));
              xs.push_back(mul_n(to, fs));
            } else {
              xs.push_back(trunc(x, to, false));
            }
          }
          if (a->op == Op::BvAdd) return add_n(to, xs);
          if (a->op == Op::BvMul) return mul_n(to, xs);
          return bitop_n(a->op, xs);
        }
        default: break;
      }
    }
    return raw1(Op::Trunc, to, a);
  }

  // ---- booleans and comparisons
  Expr not_(Expr a) {
    if (a->sort != Sort::Bool) throw std::invalid_argument("not: bool operand expected");
    if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return a;
    if (a->op == Op::ConstBool && apply(Rule::ConstFold)) return mk_bool(!a->u);
    if (a->op == Op::Not && apply(Rule::BoolSimplify)) return a->args_[0];
    Op flip = Op::Count_;
    switch (a->op) {
      case Op::Lt: flip = Op::Le; break;
      case Op::Le: flip = Op::Lt; break;
      case Op::Ult: flip = Op::Ule; break;
      case Op::Ule: flip = Op::Ult; break;
      case Op::Slt: flip = Op::Sle; break;
      case Op::Sle: flip = Op::Slt; break;
      default: break;
    }
    if (flip != Op::Count_ && apply(Rule::BoolSimplify)) return cmp_op(flip, a->args_[1], a->args_[0]);
    return raw1(Op::Not, Sort::Bool, a);
  }
  Expr andor(Op op, std::span<const Expr> xs) {
    check_sorts(xs, Sort::Bool, op_name(op));
    bool absorb = op == Op::Or;  // the constant that decides: true for or, false for and
    if (xs.empty()) return mk_bool(!absorb);
    if (xs.size() == 1) return xs[0];
    std::vector<Expr> atoms;
    bool absorbed = false, undef_seen = false;
    for (Expr x : xs) {
      if (x->op == Op::Undef) undef_seen = true;
      if (x->op == op && apply(Rule::BoolSimplify)) atoms.insert(atoms.end(), x->args_, x->args_ + x->nargs);
      else atoms.push_back(x);
    }
    if (undef_seen && apply(Rule::UndefPropagate)) return undef(Sort::Bool);
    if (on(Rule::BoolSimplify)) {
      bool any_undef = std::any_of(atoms.begin(), atoms.end(), [](Expr a) { return a->has_undef(); });
      size_t before = atoms.size();
      std::erase_if(atoms, [&](Expr a) {
        if (a->op != Op::ConstBool) return false;
        if (a->bool_value() == absorb) absorbed = true;
        return true;
      });
      if (absorbed && !any_undef) { apply(Rule::BoolSimplify); return mk_bool(absorb); }
      if (absorbed) atoms.push_back(mk_bool(absorb));
      sort_runs(atoms, [&](Expr a, Expr b) { return less(a, b); });
      atoms.erase(std::unique(atoms.begin(), atoms.end()), atoms.end());
      if (!any_undef) {
        std::unordered_set<Expr> set(atoms.begin(), atoms.end());
        for (Expr a : atoms)
          if (a->op == Op::Not && set.count(a->args_[0])) { apply(Rule::BoolSimplify); return mk_bool(absorb); }
      }
      if (atoms.size() != before) apply(Rule::BoolSimplify);
      if (atoms.empty()) return mk_bool(!absorb);
      if (atoms.size() == 1) return atoms[0];
    }
    return raw(op, Sort::Bool, atoms);
  }
  // b - a as a constant, when cheap to find out (both sides small)
  Expr const_diff(Expr a, Expr b) {
    if (a->sort == Sort::Bool || a->size + b->size > 64) return nullptr;
    // a - b can only be a nonzero constant when a sum with a constant term is involved
    bool sums = a->op == Op::Add || a->op == Op::BvAdd || b->op == Op::Add || b->op == Op::BvAdd;
    if (!sums && !(a->is_const() && b->is_const())) return nullptr;
    Expr xs[] = {b, neg(a)};
    Expr d = add_n(a->sort, xs);
    return d->is_const() ? d : nullptr;
  }
  Expr cmp_op(Op op, Expr a, Expr b) {
    Expr ab[] = {a, b};
    check_sorts(ab, a->sort, op_name(op));
    Sort s = a->sort;
    bool real_op = op == Op::Lt || op == Op::Le;
    if (op != Op::Eq && (real_op ? s != Sort::Real : !is_bv(s)))
      throw std::invalid_argument(fmt::format("{}: operands of sort {} not allowed", op_name(op), sort_name(s)));
    if ((a->op == Op::Undef || b->op == Op::Undef) && apply(Rule::UndefPropagate)) return undef(Sort::Bool);
    bool strict = op == Op::Lt || op == Op::Ult || op == Op::Slt;
    if (a->is_const() && b->is_const() && apply(Rule::ConstFold)) {
      int c;
      if (s == Sort::Real) c = cmp(a->rational(), b->rational());
      else if (op == Op::Slt || op == Op::Sle) c = a->bv_signed() < b->bv_signed() ? -1 : a->bv_signed() > b->bv_signed();
      else c = a->u < b->u ? -1 : a->u > b->u;
      return mk_bool(op == Op::Eq ? c == 0 : strict ? c < 0 : c <= 0);
    }
    if (a == b && !a->has_undef() && apply(Rule::CmpCanon)) return mk_bool(!strict);
    if (op == Op::Eq && s == Sort::Bool && on(Rule::CmpCanon)) {
      if (a->op == Op::ConstBool) std::swap(a, b);
      if (b->op == Op::ConstBool && apply(Rule::CmpCanon)) return b->u ? a : not_(a);
    }
    if ((op == Op::Eq || real_op) && on(Rule::CmpCanon) && !a->has_undef() && !b->has_undef()) {
      if (Expr d = const_diff(a, b)) {  // d = b - a
        apply(Rule::CmpCanon);
        int sg = s == Sort::Real ? sgn(d->rational()) : (d->u != 0);
        return mk_bool(op == Op::Eq ? sg == 0 : op == Op::Lt ? sg > 0 : sg >= 0);
      }
    }
    if ((op == Op::Slt || op == Op::Sle) && nonneg(a) && nonneg(b) && apply(Rule::BvSignedToUnsigned))
      return cmp_op(op == Op::Slt ? Op::Ult : Op::Ule, a, b);
    if ((op == Op::Ult || op == Op::Ule) && on(Rule::CmpCanon) && !a->has_undef() && !b->has_undef()) {
      Bounds x = bounds(a), y = bounds(b);
      if ((strict ? x.hi < y.lo : x.hi <= y.lo) && apply(Rule::CmpCanon)) return mk_bool(true);
      if ((strict ? x.lo >= y.hi : x.lo > y.hi) && apply(Rule::CmpCanon)) return mk_bool(false);
    }
    if (op == Op::Eq && is_bv(s) && on(Rule::CmpCanon) && !a->has_undef() && !b->has_undef()) {
      Bounds x = bounds(a), y = bounds(b);  // disjoint ranges never meet (a non-null pointer vs 0)
      if ((x.hi < y.lo || y.hi < x.lo) && apply(Rule::CmpCanon)) return mk_bool(false);
    }
    if (op == Op::Eq && (s == Sort::Real || is_bv(s)) && !a->has_undef() && !b->has_undef() &&
        on(Rule::CmpCanon)) {
      // a + ca == b + cb  ->  a == b + (cb - ca), the constant-free sides ordered canonically
      auto split = [&](Expr x) -> std::pair<Expr, Expr> {
        if (x->is_const()) return {zero(s), x};
        if ((x->op == Op::Add || x->op == Op::BvAdd) && x->args_[0]->is_const())
          return {x->nargs == 2 ? x->args_[1] : raw(x->op, s, {x->args_ + 1, x->nargs - 1}), x->args_[0]};
        return {x, zero(s)};
      };
      auto [a0, ca] = split(a);
      auto [b0, cb] = split(b);
      if (less(b0, a0)) {
        std::swap(a0, b0);
        std::swap(ca, cb);
      }
      if (!is_zero(ca)) {
        apply(Rule::CmpCanon);
        Expr rhs[] = {b0, cadd(cb, cmul(ca, s == Sort::Real ? mk_real(mpq_class(-1)) : ones(s)))};
        return raw2(Op::Eq, Sort::Bool, a0, add_n(s, rhs));
      }
    }
    if (op == Op::Eq && less(b, a)) std::swap(a, b);
    return raw2(op, Sort::Bool, a, b);
  }
  Expr ite(Expr c, Expr t, Expr e) {
    if (c->sort != Sort::Bool) throw std::invalid_argument("ite: condition must be bool");
    if (t->sort != e->sort)
      throw std::invalid_argument(fmt::format("ite: arms of sorts {} and {}", sort_name(t->sort), sort_name(e->sort)));
    Sort s = t->sort;
    if (c->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
    if (c->op == Op::ConstBool && apply(Rule::IteConstCond)) return c->u ? t : e;
    if (t == e && !c->has_undef() && apply(Rule::IteSameArms)) return t;
    if (c->op == Op::Not && apply(Rule::IteNegCond)) return ite(c->args_[0], e, t);
    if (s == Sort::Bool && t->op == Op::ConstBool && e->op == Op::ConstBool && apply(Rule::IteNegCond))
      return t->u ? c : not_(c);
    if (c->nargs == 2 && on(Rule::IteToMinMax)) {
      Op mn = Op::Count_, mx = Op::Count_;
      switch (c->op) {
        case Op::Lt: case Op::Le: mn = Op::Min; mx = Op::Max; break;
        case Op::Slt: case Op::Sle: mn = Op::BvSMin; mx = Op::BvSMax; break;
        case Op::Ult: case Op::Ule: mn = Op::BvUMin; mx = Op::BvUMax; break;
        default: break;
      }
      if (mn != Op::Count_ && c->args_[0]->sort == s) {
        Expr a = c->args_[0], b = c->args_[1], ab[] = {a, b};
        if (t == a && e == b && apply(Rule::IteToMinMax)) return minmax_n(mn, s, ab);
        if (t == b && e == a && apply(Rule::IteToMinMax)) return minmax_n(mx, s, ab);
      }
    }
    if (s == Sort::Real && (c->op == Op::Lt || c->op == Op::Le) && on(Rule::IteLeakyToMax))
      if (Expr m = leaky_max(c->args_[0], c->args_[1], t, e)) return m;
    if (s == Sort::Real && (c->op == Op::Lt || c->op == Op::Le) && on(Rule::IteToMinMax))
      if (Expr m = clamp_minmax(c->args_[0], c->args_[1], t, e)) return m;
    Expr xs[] = {c, t, e};
    return raw(Op::Ite, s, xs);
  }
  // A clamp written as nested ternaries: v < lo ? lo : min(hi, v) is max(lo, min(hi, v)), and
  // hi < v ? hi : max(lo, v) is min(hi, max(lo, v)), when every other bound of the inner min (max)
  // is a constant on the right side of the outer one (at v = lo both arms agree, so < and <= alike).
  // nullptr when it is not that form.
  Expr clamp_minmax(Expr a, Expr b, Expr t, Expr e) {
    Op inner = Op::Count_;
    Expr v = nullptr, bound = nullptr;
    if (b->op == Op::ConstReal && t == b) inner = Op::Min, v = a, bound = b;       // v < lo ? lo : min(.., v)
    else if (a->op == Op::ConstReal && t == a) inner = Op::Max, v = b, bound = a;  // hi < v ? hi : max(.., v)
    if (inner == Op::Count_ || e->op != inner) return nullptr;
    bool has_v = false;
    for (uint32_t i = 0; i < e->nargs; ++i) {
      Expr x = e->args_[i];
      if (x == v) { has_v = true; continue; }
      if (x->op != Op::ConstReal) return nullptr;
      if (inner == Op::Min ? x->rational() < bound->rational() : x->rational() > bound->rational()) return nullptr;
    }
    if (!has_v || !apply(Rule::IteToMinMax)) return nullptr;
    Expr xs[] = {bound, e};
    return minmax_n(inner == Op::Min ? Op::Max : Op::Min, Sort::Real, xs);
  }
  // ite(a < b, t, e) as max(lin, k*lin) with 0 <= k <= 1: 0 < lin ? lin : k*lin, or lin < 0 ? k*lin : lin
  // (equal at lin = 0 either way, so < and <= alike). nullptr when it is not that form.
  Expr leaky_max(Expr a, Expr b, Expr t, Expr e) {
    Expr lin = nullptr, scaled = nullptr;
    if (is_zero(a) && b == t) lin = t, scaled = e;
    else if (is_zero(b) && a == e) lin = e, scaled = t;
    if (!lin || lin->is_const() || scaled->is_const() || scaled->op != lin->op ||
        (lin->op == Op::Add && lin->nargs != scaled->nargs))
      return nullptr;
    // k from the first non-constant terms' coefficients, then checked exactly: k*lin is scaled
    auto first = [](Expr x) {
      if (x->op != Op::Add) return x;
      for (uint32_t i = 0; i < x->nargs; ++i)
        if (!x->args_[i]->is_const()) return x->args_[i];
      return x;
    };
    auto coef = [](Expr term) {
      return term->op == Op::Mul && term->args_[0]->op == Op::ConstReal ? term->args_[0]->rational() : mpq_class(1);
    };
    mpq_class k = coef(first(scaled)) / coef(first(lin));
    if (k < 0 || k > 1) return nullptr;
    Expr ks[] = {mk_real(k), lin};
    if (mul_n(Sort::Real, ks) != scaled || !apply(Rule::IteLeakyToMax)) return nullptr;
    Expr xs[] = {lin, scaled};
    return minmax_n(Op::Max, Sort::Real, xs);
  }

  // ---- reals: functions
  Expr call(Fn f, std::span<const Expr> args) {
    if (args.size() != fn_arity(f))
      throw std::invalid_argument(fmt::format("{} takes {} argument(s), got {}", fn_name(f), fn_arity(f), args.size()));
    check_sorts(args, Sort::Real, fn_name(f));
    for (Expr a : args)
      if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(Sort::Real);
    Expr x = args[0];
    if (f == Fn::Recip && on(Rule::DivToRecip)) {
      if (x->op == Op::ConstReal && x->rational() != 0 && apply(Rule::DivToRecip))
        return mk_real(1 / x->rational());
      if (x->op == Op::Mul && x->args_[0]->op == Op::ConstReal && apply(Rule::DivToRecip)) {
        Expr rest = x->nargs == 2 ? x->args_[1] : raw(Op::Mul, Sort::Real, {x->args_ + 1, x->nargs - 1});
        Expr xs[] = {mk_real(1 / x->args_[0]->rational()), raw1(Op::Call, Sort::Real, rest, 0, uint64_t(Fn::Recip))};
        return mul_n(Sort::Real, xs);
      }
    }
    if (x->op == Op::ConstReal && f != Fn::Recip && f != Fn::Pow) {
      if (auto r = exact_fn(f, x->rational()); r && apply(Rule::ConstFold)) return mk_real(*r);
    }
    return raw(Op::Call, Sort::Real, args, 0, static_cast<uint64_t>(f));
  }
  // Function values that are exact rationals (the rest stay symbolic).
  static std::optional<mpq_class> exact_fn(Fn f, const mpq_class& q) {
    mpz_class fl;
    mpz_fdiv_q(fl.get_mpz_t(), q.get_num_mpz_t(), q.get_den_mpz_t());
    switch (f) {
      case Fn::Floor: return mpq_class(fl);
      case Fn::Ceil: return mpq_class(q.get_den() == 1 ? fl : fl + 1);
      case Fn::Trunc: return mpq_class(q >= 0 ? fl : (q.get_den() == 1 ? fl : fl + 1));
      case Fn::Round: {
        mpq_class frac = q - fl;
        if (frac < mpq_class(1, 2)) return mpq_class(fl);
        if (frac > mpq_class(1, 2)) return mpq_class(fl + 1);
        return mpq_class(mpz_even_p(fl.get_mpz_t()) ? fl : fl + 1);
      }
      case Fn::Sign: return mpq_class(sgn(q));
      default: break;
    }
    if (q == 0) {
      switch (f) {
        case Fn::Exp: case Fn::Exp2: case Fn::Cos: case Fn::Cosh: return mpq_class(1);
        case Fn::Sigmoid: return mpq_class(1, 2);
        case Fn::Log1p: case Fn::Expm1: case Fn::Tanh: case Fn::Erf: case Fn::Sqrt: case Fn::GeluErf:
        case Fn::GeluTanh: case Fn::Silu: case Fn::Mish: case Fn::Elu: case Fn::Selu: case Fn::Sin:
        case Fn::Tan: case Fn::Atan: case Fn::Asin: case Fn::Sinh: case Fn::Asinh: case Fn::Atanh:
          return mpq_class(0);
        case Fn::Erfc: return mpq_class(1);
        default: return std::nullopt;
      }
    }
    if (q == 1) {
      switch (f) {
        case Fn::Log: case Fn::Log2: case Fn::Acos: case Fn::Acosh: return mpq_class(0);
        case Fn::Sqrt: case Fn::Rsqrt: return mpq_class(1);
        default: return std::nullopt;
      }
    }
    return std::nullopt;
  }
  Expr abs(Expr a) {
    if (a->sort != Sort::Real) throw std::invalid_argument("abs: real operand expected");
    if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return a;
    if (a->op == Op::ConstReal && apply(Rule::ConstFold)) return mk_real(::abs(a->rational()));
    if (a->op == Op::Abs && apply(Rule::AbsCanon)) return a;
    if (a->op == Op::Mul && a->args_[0]->op == Op::ConstReal && apply(Rule::AbsCanon)) {
      Expr rest = a->nargs == 2 ? a->args_[1] : raw(Op::Mul, Sort::Real, {a->args_ + 1, a->nargs - 1});
      Expr xs[] = {mk_real(::abs(a->args_[0]->rational())), abs(rest)};
      return mul_n(Sort::Real, xs);
    }
    return raw1(Op::Abs, Sort::Real, a);
  }
  Expr bv_to_real(Expr a, bool sgn) {
    check_bv(a, "bv2real");
    if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(Sort::Real);
    if (a->op == Op::ConstBV && apply(Rule::ConstFold)) {
      if (sgn) return mk_real(mpq_class(mpz_class(std::to_string(a->bv_signed()))));
      return mk_real(mpq_class(mpz_class(std::to_string(a->u))));
    }
    if (sgn && nonneg(a) && apply(Rule::BvSignedToUnsigned)) return bv_to_real(a, false);
    return raw1(Op::BvToReal, Sort::Real, a, sgn ? kSigned : 0);
  }
  Expr real_to_bv(Expr a, Sort to, bool sgn, RoundMode rm) {
    if (a->sort != Sort::Real) throw std::invalid_argument("real2bv: real operand expected");
    if (!is_bv(to)) throw std::invalid_argument("real2bv: bit-vector target sort expected");
    uint8_t flags = (sgn ? kSigned : 0) | static_cast<uint8_t>(static_cast<uint8_t>(rm) << kRoundShift);
    if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(to);
    if (a->op == Op::ConstReal && apply(Rule::ConstFold)) {
      static constexpr Fn fns[] = {Fn::Round, Fn::Trunc, Fn::Floor, Fn::Ceil};
      mpq_class r = *exact_fn(fns[static_cast<unsigned>(rm)], a->rational());
      unsigned w = bv_width(to);
      mpz_class lo = sgn ? -(mpz_class(1) << (w - 1)) : mpz_class(0);
      mpz_class hi = sgn ? (mpz_class(1) << (w - 1)) - 1 : (mpz_class(1) << w) - 1;
      mpz_class z = r.get_num();
      if (z < lo) z = lo;  // PTX cvt saturates
      if (z > hi) z = hi;
      if (z < 0) z += mpz_class(1) << w;
      return mk_bv(to, std::stoull(z.get_str()));
    }
    return raw1(Op::RealToBv, to, a, flags);
  }
  Expr load(int32_t tensor, Expr idx, Sort s) {
    check_bv(idx, "load index");
    TensorRegistry::get().name(tensor);  // validates the id
    if (idx->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
    if (idx->op == Op::ConstBV && apply(Rule::LoadFold))
      return elem(tensor, idx->sort == Sort::BV64 ? idx->bv_signed() : static_cast<int64_t>(idx->u), s);
    Key k{Op::Load, s, 0, {&idx, 1}};
    k.tensor = tensor;
    return intern(k);
  }
  Expr elem(int32_t tensor, int64_t index, Sort s) {
    TensorRegistry::get().name(tensor);
    if (s == Sort::Bool) throw std::invalid_argument("elem: tensors hold reals or bit-vectors, not bool");
    Key k{Op::TensorElem, s};
    k.tensor = tensor;
    k.u = static_cast<uint64_t>(index);
    return intern(k);
  }

  // ---- generic rebuild (substitute, cut points)
  Expr rebuild(Expr like, std::span<const Expr> a) {
    if (a.size() != like->nargs)
      throw std::invalid_argument(fmt::format("rebuild {}: {} children given, {} expected", op_name(like->op),
                                              a.size(), like->nargs));
    Sort s = like->sort;
    switch (like->op) {
      case Op::ConstBool: case Op::ConstBV: case Op::ConstReal: case Op::Var: case Op::TensorElem: case Op::Undef:
        return like;
      case Op::Not: return not_(a[0]);
      case Op::And: case Op::Or: return andor(like->op, a);
      case Op::Eq: case Op::Ult: case Op::Ule: case Op::Slt: case Op::Sle: case Op::Lt: case Op::Le:
        return cmp_op(like->op, a[0], a[1]);
      case Op::Ite: return ite(a[0], a[1], a[2]);
      case Op::BvAdd: case Op::Add: return add_n(s, a);
      case Op::BvMul: case Op::Mul: return mul_n(s, a);
      case Op::BvUDiv: case Op::BvSDiv: case Op::BvURem: case Op::BvSRem: return divrem(like->op, a[0], a[1]);
      case Op::BvShl: case Op::BvLShr: case Op::BvAShr: return shift(like->op, a[0], a[1]);
      case Op::BvAnd: case Op::BvOr: case Op::BvXor: return bitop_n(like->op, a);
      case Op::BvNot: return bv_not(a[0]);
      case Op::BvSMin: case Op::BvSMax: case Op::BvUMin: case Op::BvUMax: case Op::Min: case Op::Max:
        return minmax_n(like->op, s, a);
      case Op::BvMulHiU: case Op::BvMulHiS: return mulhi(a[0], a[1], like->op == Op::BvMulHiS);
      case Op::ZExt: return ext(a[0], s, false);
      case Op::SExt: return ext(a[0], s, true);
      case Op::Trunc: return trunc(a[0], s);
      case Op::Abs: return abs(a[0]);
      case Op::Call: return call(like->fn(), a);
      case Op::BvToReal: return bv_to_real(a[0], like->is_signed());
      case Op::RealToBv: return real_to_bv(a[0], s, like->is_signed(), like->round_mode());
      case Op::Load: return load(like->tensor(), a[0], s);
      case Op::Count_: break;
    }
    throw std::invalid_argument("rebuild: unknown op");
  }

  // ---- variables
  std::unordered_set<std::string> var_names;
  std::unordered_map<std::string, uint64_t> fresh_counter;
};

// ------------------------------------------------------------------ Context

Context::Context() : impl_(std::make_unique<Impl>(*this)) {}
Context::~Context() = default;

int32_t Context::tensor(std::string_view name) { return TensorRegistry::get().intern(name); }
std::string_view Context::tensor_name(int32_t id) const { return TensorRegistry::get().name(id); }
size_t Context::num_tensors() const { return TensorRegistry::get().size(); }

Expr Context::bool_const(bool b) { return impl_->mk_bool(b); }
Expr Context::bv_const(Sort s, uint64_t value) {
  if (!is_bv(s)) throw std::invalid_argument(fmt::format("bv_const: {} is not a bit-vector sort", sort_name(s)));
  return impl_->mk_bv(s, value);
}
Expr Context::real_const(const mpq_class& q) {
  mpq_class c(q);
  c.canonicalize();
  return impl_->mk_real(c);
}
Expr Context::real_const(int64_t n) {
  static_assert(sizeof(long) == 8, "mpz from a 64-bit long");
  return impl_->mk_real(mpq_class(static_cast<long>(n)));
}
Expr Context::real_const_from_double(double d) {
  if (!std::isfinite(d)) throw std::invalid_argument(fmt::format("real_const_from_double: {} is not finite", d));
  return impl_->mk_real(mpq_class(d));
}
Expr Context::var(std::string_view name, Sort s, Bounds b) {
  Key k{Op::Var, s};
  if (is_bv(s)) {
    uint64_t m = mask_of(bv_width(s));
    b.hi = std::min(b.hi, m);
    if (b.lo > b.hi) throw std::invalid_argument(fmt::format("var {}: empty bounds [{}, {}]", name, b.lo, b.hi));
    k.u = b.lo;
    k.v = b.hi;
  }
  k.name = name;
  impl_->var_names.emplace(name);
  return impl_->intern(k);
}
Expr Context::fresh_var(std::string_view prefix, Sort s) {
  uint64_t& n = impl_->fresh_counter[std::string(prefix)];
  for (;;) {
    std::string name = fmt::format("{}!{}", prefix, n++);
    if (!impl_->var_names.count(name)) return var(name, s);
  }
}
Expr Context::elem(int32_t tensor, int64_t flat_index, Sort s) { return impl_->elem(tensor, flat_index, s); }
Expr Context::undef(Sort s) { return impl_->undef(s); }

Expr Context::not_(Expr a) { return impl_->not_(a); }
Expr Context::and_(std::span<const Expr> xs) { return impl_->andor(Op::And, xs); }
Expr Context::or_(std::span<const Expr> xs) { return impl_->andor(Op::Or, xs); }
Expr Context::eq(Expr a, Expr b) { return impl_->cmp_op(Op::Eq, a, b); }
Expr Context::ult(Expr a, Expr b) { return impl_->cmp_op(Op::Ult, a, b); }
Expr Context::ule(Expr a, Expr b) { return impl_->cmp_op(Op::Ule, a, b); }
Expr Context::slt(Expr a, Expr b) { return impl_->cmp_op(Op::Slt, a, b); }
Expr Context::sle(Expr a, Expr b) { return impl_->cmp_op(Op::Sle, a, b); }
Expr Context::lt(Expr a, Expr b) { return impl_->cmp_op(Op::Lt, a, b); }
Expr Context::le(Expr a, Expr b) { return impl_->cmp_op(Op::Le, a, b); }
Expr Context::ite(Expr c, Expr t, Expr e) { return impl_->ite(c, t, e); }

Expr Context::bv_add(Expr a, Expr b) { Expr xs[] = {a, b}; return bv_add(xs); }
Expr Context::bv_add(std::span<const Expr> xs) {
  if (!xs.empty()) impl_->check_bv(xs[0], "bvadd");
  return impl_->bv_add(xs);
}
Expr Context::bv_sub(Expr a, Expr b) {
  impl_->check_bv(a, "bvsub");
  Expr xs[] = {a, impl_->neg(b)};
  return bv_add(xs);
}
Expr Context::bv_neg(Expr a) { impl_->check_bv(a, "bvneg"); return impl_->neg(a); }
Expr Context::bv_mul(Expr a, Expr b) { Expr xs[] = {a, b}; return bv_mul(xs); }
Expr Context::bv_mul(std::span<const Expr> xs) {
  if (!xs.empty()) impl_->check_bv(xs[0], "bvmul");
  return impl_->bv_mul(xs);
}
Expr Context::bv_mulhi(Expr a, Expr b, bool is_signed) { return impl_->mulhi(a, b, is_signed); }
Expr Context::bv_udiv(Expr a, Expr b) { return impl_->divrem(Op::BvUDiv, a, b); }
Expr Context::bv_sdiv(Expr a, Expr b) { return impl_->divrem(Op::BvSDiv, a, b); }
Expr Context::bv_urem(Expr a, Expr b) { return impl_->divrem(Op::BvURem, a, b); }
Expr Context::bv_srem(Expr a, Expr b) { return impl_->divrem(Op::BvSRem, a, b); }
Expr Context::bv_shl(Expr a, Expr b) { return impl_->shift(Op::BvShl, a, b); }
Expr Context::bv_lshr(Expr a, Expr b) { return impl_->shift(Op::BvLShr, a, b); }
Expr Context::bv_ashr(Expr a, Expr b) { return impl_->shift(Op::BvAShr, a, b); }
Expr Context::bv_and(Expr a, Expr b) { Expr xs[] = {a, b}; return impl_->bitop_n(Op::BvAnd, xs); }
Expr Context::bv_or(Expr a, Expr b) { Expr xs[] = {a, b}; return impl_->bitop_n(Op::BvOr, xs); }
Expr Context::bv_xor(Expr a, Expr b) { Expr xs[] = {a, b}; return impl_->bitop_n(Op::BvXor, xs); }
Expr Context::bv_and(std::span<const Expr> xs) { return impl_->bitop_n(Op::BvAnd, xs); }
Expr Context::bv_or(std::span<const Expr> xs) { return impl_->bitop_n(Op::BvOr, xs); }
Expr Context::bv_xor(std::span<const Expr> xs) { return impl_->bitop_n(Op::BvXor, xs); }
Expr Context::bv_not(Expr a) { return impl_->bv_not(a); }
Expr Context::bv_min(Expr a, Expr b, bool is_signed) {
  impl_->check_bv(a, "bvmin");
  Expr xs[] = {a, b};
  return impl_->minmax_n(is_signed ? Op::BvSMin : Op::BvUMin, a->sort, xs);
}
Expr Context::bv_max(Expr a, Expr b, bool is_signed) {
  impl_->check_bv(a, "bvmax");
  Expr xs[] = {a, b};
  return impl_->minmax_n(is_signed ? Op::BvSMax : Op::BvUMax, a->sort, xs);
}
Expr Context::zext(Expr a, Sort to) { return impl_->ext(a, to, false); }
Expr Context::sext(Expr a, Sort to) { return impl_->ext(a, to, true); }
Expr Context::trunc(Expr a, Sort to) { return impl_->trunc(a, to); }

Expr Context::add(Expr a, Expr b) { Expr xs[] = {a, b}; return add(xs); }
Expr Context::add(std::span<const Expr> xs) { return impl_->add_n(Sort::Real, xs); }
Expr Context::sub(Expr a, Expr b) {
  if (b->sort != Sort::Real) throw std::invalid_argument("sub: real operands expected");
  Expr xs[] = {a, impl_->neg(b)};
  return add(xs);
}
Expr Context::neg(Expr a) {
  if (a->sort != Sort::Real) throw std::invalid_argument("neg: real operand expected");
  return impl_->neg(a);
}
Expr Context::mul(Expr a, Expr b) { Expr xs[] = {a, b}; return mul(xs); }
Expr Context::mul(std::span<const Expr> xs) { return impl_->mul_n(Sort::Real, xs); }
Expr Context::div(Expr a, Expr b) {
  if (b->sort != Sort::Real) throw std::invalid_argument("div: real operands expected");
  Expr xs[] = {a, impl_->call(Fn::Recip, {&b, 1})};
  return mul(xs);
}
Expr Context::min(Expr a, Expr b) { Expr xs[] = {a, b}; return min(xs); }
Expr Context::min(std::span<const Expr> xs) { return impl_->minmax_n(Op::Min, Sort::Real, xs); }
Expr Context::max(Expr a, Expr b) { Expr xs[] = {a, b}; return max(xs); }
Expr Context::max(std::span<const Expr> xs) { return impl_->minmax_n(Op::Max, Sort::Real, xs); }
Expr Context::abs(Expr a) { return impl_->abs(a); }
Expr Context::call(Fn f, std::span<const Expr> args) { return impl_->call(f, args); }
Expr Context::bv_to_real(Expr a, bool is_signed) { return impl_->bv_to_real(a, is_signed); }
Expr Context::real_to_bv(Expr a, Sort to, bool is_signed, RoundMode rm) {
  return impl_->real_to_bv(a, to, is_signed, rm);
}
Expr Context::load(int32_t tensor, Expr index, Sort s) { return impl_->load(tensor, index, s); }
Expr Context::rebuild(Expr like, std::span<const Expr> new_args) { return impl_->rebuild(like, new_args); }

struct ContextAccess {
  static Context::Impl& impl(Context& c) { return *c.impl_; }
};

struct Importer::Impl {
  Context& to;
  NodeMap<Expr> memo;
};

Importer::Importer(Context& to) : impl_(std::make_shared<Impl>(Impl{to, {}})) {}

Expr Importer::operator()(Expr e) {
  auto& memo = impl_->memo;
  auto& I = ContextAccess::impl(impl_->to);
  if (auto it = memo.find(e); it != memo.end()) return it->second;
  std::vector<std::pair<Expr, bool>> st{{e, false}};
  std::vector<Expr> args;
  while (!st.empty()) {
    auto [x, done] = st.back();
    st.pop_back();
    if (memo.count(x)) continue;
    if (!done) {
      st.emplace_back(x, true);
      for (Expr c : x->args())
        if (!memo.count(c)) st.emplace_back(c, false);
      continue;
    }
    args.clear();
    for (Expr c : x->args()) args.push_back(memo.at(c));
    Key k{x->op, x->sort, x->flags, args};
    k.u = x->u;
    k.v = x->v;
    k.tensor = x->tensor_;
    if (x->op == Op::ConstReal) k.q = &x->rational();
    if (x->op == Op::Var) {
      k.name = x->name();
      I.var_names.emplace(k.name);
    }
    memo.emplace(x, I.intern(k));
  }
  return memo.at(e);
}

Expr Context::import(Expr e) { return Importer(*this)(e); }

Bounds Context::bv_bounds(Expr e) { return impl_->bounds(e); }
int Context::compare(Expr a, Expr b) const { return impl_->compare(a, b); }

void Context::set_rule_enabled(Rule r, bool on) { impl_->enabled.at(static_cast<unsigned>(r)) = on; }
bool Context::rule_enabled(Rule r) const { return impl_->enabled.at(static_cast<unsigned>(r)); }
uint64_t Context::rule_applications(Rule r) const { return impl_->hits.at(static_cast<unsigned>(r)); }
void Context::reset_rule_stats() { impl_->hits.fill(0); }
size_t Context::num_nodes() const { return impl_->count; }
size_t Context::node_units() const { return impl_->units; }
size_t Context::bytes_used() const { return impl_->bytes; }
void set_limits(Context& c, const Limits& l) {
  ContextAccess::impl(c).limits = l;
  ContextAccess::impl(c).since_clock = 0;
}
Limits limits(Context& c) { return ContextAccess::impl(c).limits; }

}  // namespace dirigo::ir
