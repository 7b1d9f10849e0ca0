// The node store of a Context: the process-wide tensor registry, node hashing, the arena, the unique
// table (hash-consing), constants, the canonical order of nodes, and the generic rebuild.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sys/mman.h>
#include <optional>
#include <type_traits>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

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

namespace {
constexpr size_t kBlock = 1 << 20;
}  // namespace

// Large allocations (unique table, arena blocks) are 2 MiB aligned and marked for
// transparent huge pages: million-node Contexts are bound by TLB and cache misses.
// DIRIGO_IR_NO_HUGEPAGES=1 turns this off (for A/B measurements).
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

void* Context::Impl::alloc(size_t n) {
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

// calloc: a table past glibc's mmap threshold comes as fresh zero pages, so doubling a 16M-slot table
// costs no 256 MB fill up front; its pages are zeroed as probes first touch them.
Buf<Context::Impl::Slot> Context::Impl::empty_table(size_t n) {
  static const bool huge = !std::getenv("DIRIGO_IR_NO_HUGEPAGES");
  constexpr uintptr_t kHuge = 2u << 20;
  static_assert(std::is_trivially_copyable_v<Slot>);
  void* p = std::calloc(n, sizeof(Slot));
  if (!p) throw std::bad_alloc();
  uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + n * sizeof(Slot)) & ~(kHuge - 1);
  if (huge && hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
  return Buf<Slot>(static_cast<Slot*>(p));
}

bool Context::Impl::same(Expr n, const Key& k, uint64_t h) {
  if (n->hash != h || n->op != k.op || n->sort != k.sort || n->flags != k.flags ||
      n->nargs != k.args.size() || n->u != k.u || n->v != k.v || n->tensor_ != k.tensor)
    return false;
  if (k.q && n->rational() != *k.q) return false;
  if (k.op == Op::Var && n->name() != k.name) return false;
  for (size_t i = 0; i < k.args.size(); ++i)
    if (n->args_[i] != k.args[i]) return false;
  return true;
}

// Doubling moves the old table's entries over in steps of kMigrateStep per intern call, not all at
// once: rehashing millions of entries in one go is a pause no deadline check can cut short. While
// entries move, the old table stays as it was (read-only) and a lookup that misses in the new one
// probes it; a node is inserted only when both miss, so no entry is ever in the new table twice.
void Context::Impl::grow() {
  migrate(old_size);  // the previous doubling's rest (the step rate ends it well before)
  old_table = std::move(table);
  old_size = table_size;
  migrated = 0;
  table_size *= 2;
  table = empty_table(table_size);
}

void Context::Impl::migrate(size_t steps) {
  size_t end = std::min(old_size, migrated + steps), m = table_size - 1;
  for (; migrated < end; ++migrated)
    if (const Slot& sl = old_table[migrated]; sl.node) {
      size_t i = sl.hash & m;
      while (table[i].node) i = (i + 1) & m;
      table[i] = sl;
    }
  if (old_table && migrated == old_size) old_table.reset(), old_size = 0;
}

Expr Context::Impl::find_old(const Key& k, uint64_t h) const {
  size_t m = old_size - 1;
  for (size_t i = h & m; Expr n = old_table[i].node; i = (i + 1) & m)
    if (old_table[i].hash == h && same(n, k, h)) return n;
  return nullptr;
}

void Context::Impl::over_limit() {
  if (units >= limits.max_nodes)
    throw LimitExceeded(fmt::format("expression has more than {} nodes (node budget)", limits.max_nodes));
  since_clock = 0;
  if (std::chrono::steady_clock::now() > limits.deadline)
    throw LimitExceeded(fmt::format("deadline passed while building expressions ({} nodes)", count));
}

Expr Context::Impl::intern(const Key& k, const Pre* pre) {
  if (++since_clock >= 4096) over_limit();  // lookups too: a rebuild pass that finds every node still ticks
  uint64_t h = pre ? pre->hash : key_hash(k);
  if ((count + 1) * 2 > table_size) grow();
  if (old_table) migrate(kMigrateStep);
  size_t m = table_size - 1, i = h & m;
  while (Expr n = table[i].node) {
    if (table[i].hash == h && same(n, k, h)) return n;
    i = (i + 1) & m;
  }
  if (old_table)
    if (Expr n = find_old(k, h)) return n;
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
  uint8_t attrs = k.op == Op::Undef ? Node::kHasUndef : k.op == Op::Bound ? Node::kHasBound : 0;
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
  // A reduction binds its body's indices: closed unless the body reads enclosing ones (an imported or
  // rebuilt Reduce comes here without the precomputed attributes reduce_raw gives).
  if (k.op == Op::Reduce && (attrs & Node::kHasBound) && loose(k.args[0]) <= (k.args.size() - 1) / 2)
    attrs &= static_cast<uint8_t>(~Node::kHasBound);
  n->attrs = attrs;
  n->size = size;
  if (k.q) n->p_ = &rats.emplace_back(*k.q);
  if (k.op == Op::Var) n->p_ = &names.emplace_back(k.name);
  table[i] = Slot{h, n};
  ++count;
  units += 1 + (k.args.size() > kWideNode ? k.args.size() / 2 : 0);
  return n;
}

Expr Context::Impl::raw(Op op, Sort s, std::span<const Expr> args, uint8_t flags, uint64_t u) {
  Key k{op, s, flags, args};
  k.u = u;
  return intern(k);
}

Expr Context::Impl::raw1(Op op, Sort s, Expr a, uint8_t flags, uint64_t u) {
  Expr xs[] = {a};
  return raw(op, s, xs, flags, u);
}

Expr Context::Impl::raw2(Op op, Sort s, Expr a, Expr b, uint8_t flags) {
  Expr xs[] = {a, b};
  return raw(op, s, xs, flags);
}

Expr Context::Impl::mk_bv(Sort s, uint64_t v) {
  Key k{Op::ConstBV, s};
  k.u = v & width_mask(bv_width(s));
  return intern(k);
}

Expr Context::Impl::mk_real(const mpq_class& q) {
  Key k{Op::ConstReal, Sort::Real};
  k.q = &q;
  return intern(k);
}

Expr Context::Impl::mk_bool(bool b) {
  Key k{Op::ConstBool, Sort::Bool};
  k.u = b;
  return intern(k);
}

Expr Context::Impl::zero(Sort s) {
  Expr& z = zero_[static_cast<unsigned>(s)];
  if (!z) z = s == Sort::Real ? mk_real(mpq_class(0)) : s == Sort::Bool ? mk_bool(false) : mk_bv(s, 0);
  return z;
}

Expr Context::Impl::one(Sort s) {
  Expr& o = one_[static_cast<unsigned>(s)];
  if (!o) o = s == Sort::Real ? mk_real(mpq_class(1)) : s == Sort::Bool ? mk_bool(true) : mk_bv(s, 1);
  return o;
}

Expr Context::Impl::cadd(Expr a, Expr b) {
  if (a->sort == Sort::Real) return mk_real(a->rational() + b->rational());
  return mk_bv(a->sort, a->u + b->u);
}

Expr Context::Impl::cmul(Expr a, Expr b) {
  if (a->sort == Sort::Real) return mk_real(a->rational() * b->rational());
  return mk_bv(a->sort, a->u * b->u);
}

int Context::Impl::local_cmp(Expr x, Expr y) const {
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

int Context::Impl::compare(Expr a, Expr b) const {
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

bool Context::Impl::less(Expr a, Expr b) const {
  if (a == b) return false;
  if (a->hash != b->hash) return a->hash < b->hash;
  return compare(a, b) < 0;
}

void Context::Impl::check_sorts(std::span<const Expr> xs, Sort s, std::string_view what) {
  for (Expr x : xs)
    if (x->sort != s)
      throw std::invalid_argument(fmt::format("{}: operand of sort {} where {} expected", what,
                                              sort_name(x->sort), sort_name(s)));
}

void Context::Impl::check_bv(Expr a, std::string_view what) {
  if (!is_bv(a->sort))
    throw std::invalid_argument(fmt::format("{}: bit-vector operand expected, got {}", what, sort_name(a->sort)));
}

Expr Context::Impl::rebuild(Expr like, std::span<const Expr> a) {
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
    case Op::Bound: return like;
    case Op::Reduce: return reduce_n(like->reduce_op(), box_of(like), a[0]);
    case Op::Count_: break;
  }
  throw std::invalid_argument("rebuild: unknown op");
}

}  // namespace dirigo::ir
