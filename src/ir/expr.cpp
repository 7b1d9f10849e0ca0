// The public Context API (ir/expr.h): names of sorts, ops and rules, and the Context methods over
// Context::Impl (ir/expr_internal.h).

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
#include "ir/walk.h"

namespace dirigo::ir {
using namespace detail;

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
      "add", "mul", "min", "max", "abs", "call", "bv2real", "real2bv", "load", "bound", "reduce"};
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
      "AbsCanon", "MinMaxFloatLimit", "MulDistributeMinMax", "MulSumContent", "IteLeakyToMax", "ClampOrder",
      "LogOfExp", "CmpIteConst",
      "ReduceEmpty", "ReduceInvariant", "ReduceFactor", "ReduceSplitSum", "ReduceFlatten", "ReduceMerge",
      "ReduceOrigin", "BvExtOfTrunc", "BvFieldExtPush"};
  static_assert(std::size(n) == static_cast<size_t>(Rule::Count_));
  return n[static_cast<unsigned>(r)];
}

static_assert(sizeof(Node) == 64, "Node layout: keep it one cache line");

int64_t Node::bv_signed() const {
  unsigned w = bv_width(sort);
  uint64_t x = u;
  if (w && w < 64 && ((x >> (w - 1)) & 1)) x |= ~width_mask(w);
  return static_cast<int64_t>(x);
}
std::string_view Node::name() const {
  return op == Op::Var ? std::string_view(*static_cast<const std::string*>(p_)) : std::string_view();
}

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
    uint64_t m = width_mask(bv_width(s));
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
// The binary builders that only name their Op: one line per Impl builder.
#define DIRIGO_BINARY(name, builder, op) \
  Expr Context::name(Expr a, Expr b) { return impl_->builder(Op::op, a, b); }
DIRIGO_BINARY(eq, cmp_op, Eq) DIRIGO_BINARY(ult, cmp_op, Ult) DIRIGO_BINARY(ule, cmp_op, Ule)
DIRIGO_BINARY(slt, cmp_op, Slt) DIRIGO_BINARY(sle, cmp_op, Sle) DIRIGO_BINARY(lt, cmp_op, Lt) DIRIGO_BINARY(le, cmp_op, Le)
DIRIGO_BINARY(bv_udiv, divrem, BvUDiv) DIRIGO_BINARY(bv_sdiv, divrem, BvSDiv)
DIRIGO_BINARY(bv_urem, divrem, BvURem) DIRIGO_BINARY(bv_srem, divrem, BvSRem)
DIRIGO_BINARY(bv_shl, shift, BvShl) DIRIGO_BINARY(bv_lshr, shift, BvLShr) DIRIGO_BINARY(bv_ashr, shift, BvAShr)
#undef DIRIGO_BINARY
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
std::string_view reduce_op_name(ReduceOp o) {
  static constexpr std::string_view n[] = {"sum", "prod", "max", "min"};
  return n[static_cast<unsigned>(o)];
}
Expr Context::bound(uint32_t de_bruijn) { return impl_->bound_leaf(de_bruijn); }
Expr Context::lift_bound(Expr e, uint32_t by) { return impl_->shift(e, 0, by); }
Expr Context::reduce_abstracted(ReduceOp op, std::span<const std::pair<int64_t, int64_t>> box, Expr body) {
  return impl_->reduce_n(op, box, body);
}
Expr Context::rebuild(Expr like, std::span<const Expr> new_args) { return impl_->rebuild(like, new_args); }


struct Importer::Impl {
  Context& to;
  NodeMap<Expr> memo;
};

Importer::Importer(Context& to) : impl_(std::make_shared<Impl>(Impl{to, {}})) {}

Expr Importer::operator()(Expr e) {
  auto& memo = impl_->memo;
  auto& I = ContextAccess::impl(impl_->to);
  if (auto it = memo.find(e); it != memo.end()) return it->second;
  std::vector<Expr> args;
  post_order(e, [&](Expr x) { return memo.count(x) > 0; }, [&](Expr x) {
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
  });
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
