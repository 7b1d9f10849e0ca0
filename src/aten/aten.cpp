#include <algorithm>
#include <cmath>
#include <mutex>
#include <sstream>

#include "aten/internal.h"
#include "ir/reduce.h"

namespace dirigo::aten {

// ---------------------------------------------------------------- dtypes, refs

DType parse_dtype(std::string_view s) {
  if (s.starts_with("torch.")) s.remove_prefix(6);
  struct Alias { std::string_view name; DType d; };
  static constexpr Alias kAliases[] = {
      {"float64", DType::Float64}, {"double", DType::Float64}, {"float32", DType::Float32},
      {"float", DType::Float32},   {"float16", DType::Float16}, {"half", DType::Float16},
      {"bfloat16", DType::BFloat16}, {"int64", DType::Int64},   {"long", DType::Int64},
      {"int32", DType::Int32},     {"int", DType::Int32},       {"int16", DType::Int16},
      {"short", DType::Int16},     {"int8", DType::Int8},       {"uint8", DType::UInt8},
      {"bool", DType::Bool}};
  for (const auto& a : kAliases)
    if (a.name == s) return a.d;
  throw std::invalid_argument("unknown dtype \"" + std::string(s) + "\"");
}

std::string_view dtype_name(DType d) {
  static constexpr std::string_view kNames[] = {"float64", "float32", "float16", "bfloat16", "int64",
                                                "int32",   "int16",   "int8",    "uint8",    "bool"};
  return kNames[static_cast<int>(d)];
}

bool is_floating(DType d) { return d <= DType::BFloat16; }
bool is_signed_int(DType d) { return d >= DType::Int64 && d <= DType::Int8; }

ir::Sort elem_sort(DType d) {
  switch (d) {
    case DType::Int64: return ir::Sort::BV64;
    case DType::Int32: return ir::Sort::BV32;
    case DType::Int16: return ir::Sort::BV16;
    case DType::Int8: case DType::UInt8: case DType::Bool: return ir::Sort::BV8;
    default: return ir::Sort::Real;
  }
}

int64_t TensorRef::numel() const { return detail::numel(shape); }

int64_t TensorRef::stride(size_t k) const {
  if (!strides.empty()) return strides.at(k);
  int64_t s = 1;
  for (size_t j = k + 1; j < shape.size(); ++j) s *= shape[j];
  return s;
}

int64_t TensorRef::flat_index(std::span<const int64_t> idx) const {
  if (idx.size() != shape.size()) throw std::invalid_argument("index rank does not match tensor rank");
  if (!strides.empty() && strides.size() != shape.size())
    throw std::invalid_argument("tensor strides and shape differ in length");
  int64_t f = offset;
  for (size_t k = 0; k < idx.size(); ++k) {
    if (idx[k] < 0 || idx[k] >= shape[k])
      throw std::invalid_argument("index " + std::to_string(idx[k]) + " out of range for dim " + std::to_string(k) +
                                  " of size " + std::to_string(shape[k]));
    f += idx[k] * stride(k);
  }
  return f;
}

Arg Arg::of_ints(const std::vector<int64_t>& xs) {
  std::vector<Arg> l;
  for (auto x : xs) l.push_back(of_int(x));
  return of_list(std::move(l));
}

Unsupported::Unsupported(std::string op, std::string reason)
    : std::runtime_error("UNSUPPORTED: aten op " + op + " (" + reason + ")"), op_(std::move(op)), reason_(std::move(reason)) {}

std::string canonical_name(std::string_view name, std::string_view overload) {
  if (name.starts_with("aten::")) name.remove_prefix(6);
  else if (name.starts_with("aten.")) name.remove_prefix(5);
  std::string base(name), ov(overload);
  if (auto dot = base.find('.'); dot != std::string::npos) {
    if (ov.empty()) ov = base.substr(dot + 1);
    base.resize(dot);
  }
  if (ov.empty() || ov == "default") return base;
  return base + "." + ov;
}

namespace detail {

// ---------------------------------------------------------------- registry

void Registry::add(std::string key, std::string_view params, Handler fn) {
  OpDef d{key, {}, std::move(fn), adding_pointwise, false, 0, {}};
  std::istringstream ss{std::string(params)};
  for (std::string p; ss >> p;) d.params.push_back(p);
  defs_[key] = std::move(d);
}

void Registry::set_symbolic_location(std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    auto it = defs_.find(k);
    if (it == defs_.end()) throw std::logic_error(std::string("aten registry: set_symbolic_location before add for ") + k);
    it->second.symbolic_location = true;
  }
}

void Registry::set_writes(const std::string& key, int returns, std::string_view params) {
  auto it = defs_.find(key);
  if (it == defs_.end()) throw std::logic_error("aten registry: set_writes before add for " + key);
  it->second.returns = returns;
  std::istringstream ss{std::string(params)};
  for (std::string p; ss >> p;) it->second.writes.push_back(p);
}

const OpDef* Registry::find(const std::string& key) const {
  auto it = defs_.find(key);
  return it == defs_.end() ? nullptr : &it->second;
}

std::vector<std::string> Registry::keys() const {
  std::vector<std::string> k;
  for (const auto& [name, d] : defs_) k.push_back(name);
  std::sort(k.begin(), k.end());
  return k;
}

static const Registry& registry() {
  static const Registry reg = [] {
    Registry r;
    register_elementwise(r);
    register_activation(r);
    register_conv(r);
    register_linalg(r);
    register_norm(r);
    register_reduce(r);
    register_pool(r);
    register_view(r);
    register_loss(r);
    register_factory(r);
    register_attention(r);
    return r;
  }();
  return reg;
}

// out= overload -> functional overload (same parameters and types apart from the written outs).
static const std::unordered_map<std::string, std::string>& out_overloads() {
  static const std::unordered_map<std::string, std::string> table = {
#include "aten/out_overloads.inc"
  };
  return table;
}

// In-place ("relu_") and functional forms share semantics: the result is the
// value written to the mutated tensor, which the caller lists as the output.
// out= overloads ("add.out") too: their kwarg-only `out` arguments are never read,
// the results are the written `out` tensors, listed as the outputs.
static const OpDef* lookup(const std::string& key) {
  const auto& reg = registry();
  if (const OpDef* d = reg.find(key)) return d;
  auto dot = key.find('.');
  std::string base = key.substr(0, dot), rest = dot == std::string::npos ? "" : key.substr(dot);
  if (base.size() > 1 && base.back() == '_' && base.front() != '_') {
    base.pop_back();
    if (const OpDef* d = reg.find(base + rest)) return d;
  }
  if (auto it = out_overloads().find(key); it != out_overloads().end()) return reg.find(it->second);
  return nullptr;
}

// ---------------------------------------------------------------- Env

Env::Env(ir::Context& c, const OpCall& cl, const OpDef& d, int o, std::span<const int64_t> i)
    : cx(c), call(cl), def(d), out(o), idx(i.begin(), i.end()) {}

void Env::unsupported(const std::string& reason) const { throw Unsupported(def.key, reason); }
void Env::malformed(const std::string& reason) const {
  throw std::invalid_argument("aten op " + def.key + ": " + reason);
}

const Arg* Env::arg(std::string_view name) const {
  auto it = std::find(def.params.begin(), def.params.end(), name);
  if (it == def.params.end()) malformed("internal: no parameter named " + std::string(name));
  size_t pos = it - def.params.begin();
  if (pos < call.args.size()) return &call.args[pos];
  for (const auto& [k, v] : call.kwargs)
    if (k == name) return &v;
  return nullptr;
}

void Env::require_rank(size_t rank) const {
  require(idx.size() == rank, "output rank " + std::to_string(idx.size()) + " does not match the inputs (expected " +
                                  std::to_string(rank) + ")");
}

bool Env::has_param(std::string_view name) const {
  return std::find(def.params.begin(), def.params.end(), name) != def.params.end();
}

bool Env::given(std::string_view name) const {
  const Arg* a = arg(name);
  return a && a->kind != Arg::Kind::None;
}

const TensorRef& Env::tensor(std::string_view name) const {
  const Arg* a = arg(name);
  if (!a || a->kind != Arg::Kind::Tensor) malformed("argument '" + std::string(name) + "' must be a tensor");
  return a->tensor;
}

std::optional<TensorRef> Env::opt_tensor(std::string_view name) const {
  if (!given(name)) return std::nullopt;
  return tensor(name);
}

std::optional<double> Env::opt_real(std::string_view name) const {
  const Arg* a = arg(name);
  if (!a || a->kind == Arg::Kind::None) return std::nullopt;
  switch (a->kind) {
    case Arg::Kind::Real: return a->real;
    case Arg::Kind::Int: case Arg::Kind::Bool: return static_cast<double>(a->integer);
    default: malformed("argument '" + std::string(name) + "' must be a number");
  }
}

double Env::real(std::string_view name, std::optional<double> def) const {
  if (auto v = opt_real(name)) return *v;
  return default_of(name, def);
}

int64_t Env::integer(std::string_view name, std::optional<int64_t> def) const {
  const Arg* a = arg(name);
  if (!a || a->kind == Arg::Kind::None) return default_of(name, def);
  if (a->kind == Arg::Kind::Int || a->kind == Arg::Kind::Bool) return a->integer;
  if (a->kind == Arg::Kind::List && a->list.size() == 1 && a->list[0].kind == Arg::Kind::Int) return a->list[0].integer;
  if (a->kind == Arg::Kind::Real && a->real == static_cast<double>(static_cast<int64_t>(a->real)))
    return static_cast<int64_t>(a->real);
  malformed("argument '" + std::string(name) + "' must be an integer");
}

bool Env::flag(std::string_view name, std::optional<bool> def) const {
  const Arg* a = arg(name);
  if (!a || a->kind == Arg::Kind::None) return default_of(name, def);
  if (a->kind == Arg::Kind::Bool || a->kind == Arg::Kind::Int) return a->integer != 0;
  malformed("argument '" + std::string(name) + "' must be a bool");
}

std::vector<int64_t> Env::ints(std::string_view name, std::optional<std::vector<int64_t>> def) const {
  const Arg* a = arg(name);
  if (!a || a->kind == Arg::Kind::None) return default_of(name, def);
  if (a->kind == Arg::Kind::Int) return {a->integer};
  if (a->kind != Arg::Kind::List) malformed("argument '" + std::string(name) + "' must be a list of integers");
  std::vector<int64_t> r;
  for (const auto& x : a->list) {
    if (x.kind != Arg::Kind::Int) malformed("argument '" + std::string(name) + "' must be a list of integers");
    r.push_back(x.integer);
  }
  return r;
}

std::string Env::str(std::string_view name, std::optional<std::string> def) const {
  const Arg* a = arg(name);
  if (!a || a->kind == Arg::Kind::None) return default_of(name, def);
  if (a->kind != Arg::Kind::String) malformed("argument '" + std::string(name) + "' must be a string");
  return a->str;
}

std::vector<TensorRef> Env::tensors(std::string_view name) const {
  const Arg* a = arg(name);
  if (!a || a->kind != Arg::Kind::List) malformed("argument '" + std::string(name) + "' must be a list of tensors");
  std::vector<TensorRef> r;
  for (const auto& x : a->list) {
    if (x.kind != Arg::Kind::Tensor) malformed("argument '" + std::string(name) + "' must be a list of tensors");
    r.push_back(x.tensor);
  }
  return r;
}

const TensorRef& Env::output(int k) const {
  if (k < 0 || static_cast<size_t>(k) >= call.outputs.size())
    malformed("output " + std::to_string(k) + " not described (call lists " + std::to_string(call.outputs.size()) + ")");
  return call.outputs[k];
}

Expr Env::at(const TensorRef& t, std::span<const int64_t> i) const {
  if (!sidx.empty()) {  // a pointwise op at a symbolic location: every read is at the broadcast of it
    if (Index(i.begin(), i.end()) != broadcast_index(t, idx) || t.rank() > sidx.size()) throw NotSymbolic{};
    size_t lead = sidx.size() - t.rank();
    std::vector<Expr> si;
    for (size_t k = 0; k < t.rank(); ++k) si.push_back(t.shape[k] == 1 ? bv(0) : sidx[lead + k]);
    return sym_at(t, si);
  }
  if (call.read) return call.read(t.tensor_id, t.flat_index(i), elem_sort(t.dtype));
  return cx.elem(t.tensor_id, t.flat_index(i), elem_sort(t.dtype));
}

bool Env::keep_reduce(int64_t n, Expr built) const {
  if (reduce_symbolically(n) || symbolic()) return true;
  // the terms its reductions stand for: past n, some body holds a reduction of its own
  uint64_t terms = ir::expansion_terms(built);
  return terms > uint64_t(n) && terms > kNestedExpandTerms;
}

Expr Env::coord(size_t k, uint32_t binders) const {
  if (!symbolic()) return bv(idx.at(k));
  return binders ? cx.lift_bound(sidx.at(k), binders) : sidx.at(k);
}

Expr Env::sym_at(const TensorRef& t, std::span<const Expr> i) const {
  ir::Sort sort = elem_sort(t.dtype);
  if (call.read_sym) {
    Expr r = call.read_sym(t, i, sort);
    if (!r) throw NotSymbolic{};
    return r;
  }
  if (call.read) throw NotSymbolic{};
  Expr flat = bv(t.offset);
  for (size_t k = 0; k < i.size(); ++k) flat = cx.bv_add(flat, cx.bv_mul(i[k], bv(t.stride(k))));
  return cx.load(t.tensor_id, flat, sort);
}

Expr Env::to_real(Expr e, DType from) const {
  if (e->sort == ir::Sort::Real) return e;
  if (e->sort == ir::Sort::Bool) return cx.ite(e, cx.real_const(1), cx.real_const(0));
  return cx.bv_to_real(e, is_signed_int(from));
}

Expr Env::real_at(const TensorRef& t, std::span<const int64_t> i) const { return to_real(at(t, i), t.dtype); }

Expr Env::num(double d) const {
  if (!std::isfinite(d))  // masked_fill(~mask, -inf) and the like: the reals have no infinities
    unsupported("non-finite constant " + std::string(std::isnan(d) ? "nan" : d > 0 ? "inf" : "-inf") +
                " (elements are modelled as reals)");
  return cx.real_const_from_double(d);
}

Expr Env::convert(Expr e, DType from, DType to) const {
  ir::Sort want = elem_sort(to);
  if (e->sort == want && (is_floating(from) == is_floating(to))) return e;
  if (want == ir::Sort::Real) return to_real(e, from);
  if (to == DType::Bool) {  // nonzero -> 1
    Expr zero = e->sort == ir::Sort::Real ? cx.real_const(0) : (e->sort == ir::Sort::Bool ? nullptr : cx.bv_const(e->sort, 0));
    Expr nz = zero ? cx.not_(cx.eq(e, zero)) : e;
    return cx.ite(nz, cx.bv_const(want, 1), cx.bv_const(want, 0));
  }
  if (e->sort == ir::Sort::Bool) return cx.ite(e, cx.bv_const(want, 1), cx.bv_const(want, 0));
  if (e->sort == ir::Sort::Real) return cx.real_to_bv(e, want, is_signed_int(to), ir::RoundMode::Zero);
  // bitvector -> bitvector: wraparound truncation or sign/zero extension by the source's signedness
  unsigned wf = ir::bv_width(e->sort), wt = ir::bv_width(want);
  if (wf == wt) return e;
  if (wf > wt) return cx.trunc(e, want);
  return is_signed_int(from) ? cx.sext(e, want) : cx.zext(e, want);
}

bool Env::is_tensor(std::string_view name) const {
  const Arg* a = arg(name);
  return a && a->kind == Arg::Kind::Tensor;
}

Expr Env::operand(std::string_view name, std::span<const int64_t> at_idx) const {
  const Arg* a = arg(name);
  if (!a) malformed("missing argument '" + std::string(name) + "'");
  switch (a->kind) {
    case Arg::Kind::Tensor: return real_at(a->tensor, broadcast_index(a->tensor, at_idx));
    case Arg::Kind::Real: return num(a->real);
    case Arg::Kind::Int: case Arg::Kind::Bool: return cx.real_const(a->integer);
    default: malformed("argument '" + std::string(name) + "' must be a tensor or a number");
  }
}

// ---------------------------------------------------------------- helpers

int64_t wrap_dim(int64_t d, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (d < -r || d >= r) throw std::invalid_argument("dim " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
  return d < 0 ? d + r : d;
}

std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t k = shape.size(); k-- > 0;) { s[k] = acc; acc *= std::max<int64_t>(shape[k], 1); }
  return s;
}

int64_t numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

Index unravel(int64_t flat, std::span<const int64_t> shape) {
  Index i(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] > 0) { i[k] = flat % shape[k]; flat /= shape[k]; }
  }
  return i;
}

int64_t ravel(std::span<const int64_t> idx, std::span<const int64_t> shape) {
  int64_t f = 0;
  for (size_t k = 0; k < shape.size(); ++k) f = f * shape[k] + idx[k];
  return f;
}

Index broadcast_index(const TensorRef& in, std::span<const int64_t> idx) {
  if (in.rank() > idx.size()) throw std::invalid_argument("operand has higher rank than the output");
  size_t lead = idx.size() - in.rank();
  Index r(in.rank());
  for (size_t k = 0; k < in.rank(); ++k) r[k] = in.shape[k] == 1 ? 0 : idx[lead + k];
  return r;
}

void for_each_index(std::span<const int64_t> shape, const std::function<void(const Index&)>& f) {
  for (auto s : shape)
    if (s <= 0) return;
  Index i(shape.size(), 0);
  while (true) {
    f(i);
    size_t k = shape.size();
    while (k > 0) {
      --k;
      if (++i[k] < shape[k]) break;
      i[k] = 0;
      if (k == 0) return;
    }
    if (shape.empty()) return;
  }
}

std::vector<int64_t> spatial_ints(const Env& e, std::string_view name, size_t n, std::optional<std::vector<int64_t>> def) {
  std::vector<int64_t> v = e.has_param(name) && e.given(name) ? e.ints(name) : std::vector<int64_t>{};
  if (v.empty()) {
    if (!def) e.malformed("missing argument '" + std::string(name) + "'");
    v = *def;
  }
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  if (v.size() != n)
    e.malformed("argument '" + std::string(name) + "' has " + std::to_string(v.size()) + " entries for " +
                std::to_string(n) + " spatial dims");
  return v;
}

std::vector<int64_t> reduce_dims(const Env& e, std::string_view name, int64_t rank, bool empty_means_all) {
  std::vector<int64_t> dims = e.given(name) ? e.ints(name) : std::vector<int64_t>{};
  if (dims.empty() && empty_means_all)
    for (int64_t k = 0; k < rank; ++k) dims.push_back(k);
  for (auto& d : dims) d = wrap_dim(d, rank);
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  if (rank == 0) dims.clear();
  return dims;
}

std::vector<Index> reduction_domain(const TensorRef& in, std::span<const int64_t> dims, bool keepdim,
                                    std::span<const int64_t> idx) {
  size_t rank = in.rank();
  std::vector<bool> reduced(rank, false);
  for (auto d : dims) reduced[d] = true;
  Index base(rank, 0);
  std::vector<int64_t> red_shape;
  size_t j = 0;
  for (size_t k = 0; k < rank; ++k) {
    if (reduced[k]) {
      red_shape.push_back(in.shape[k]);
      if (keepdim) ++j;
    } else {
      if (j >= idx.size()) throw std::invalid_argument("reduction output index has the wrong rank");
      base[k] = idx[j++];
    }
  }
  if (j != idx.size()) throw std::invalid_argument("reduction output index has the wrong rank");
  std::vector<Index> dom;
  for_each_index(red_shape, [&](const Index& r) {
    Index full = base;
    size_t q = 0;
    for (size_t k = 0; k < rank; ++k)
      if (reduced[k]) full[k] = r[q++];
    dom.push_back(std::move(full));
  });
  return dom;
}

Expr sum_of(const Env& e, const TensorRef& in, const std::vector<Index>& domain) {
  std::vector<Expr> terms;
  terms.reserve(domain.size());
  for (const auto& i : domain) terms.push_back(e.real_at(in, i));
  return e.cx.add(terms);
}

std::optional<SymDomain> sym_domain(const Env& e, const TensorRef& in, std::span<const int64_t> dims, bool keepdim) {
  size_t rank = in.rank();
  std::vector<bool> reduced(rank, false);
  for (auto d : dims) reduced[d] = true;
  SymDomain r;
  uint32_t n = 0;  // reduced dims of more than one element: the box's dims (one-element ones are index 0)
  for (auto d : dims) n += in.shape[size_t(d)] != 1;
  if (n == 0 && !e.symbolic()) return std::nullopt;
  const size_t out_rank = e.idx.size();
  size_t j = 0;
  uint32_t q = 0;
  for (size_t k = 0; k < rank; ++k) {
    if (reduced[k] && in.shape[k] == 1) {
      r.index.push_back(e.bv(0));
      if (keepdim) ++j;
    } else if (reduced[k]) {
      r.index.push_back(e.cx.bound(n - 1 - q++));  // dim q of the box: the last one is Bound(0)
      r.box.emplace_back(0, in.shape[k]);
      r.count *= in.shape[k];
      if (keepdim) ++j;
    } else {
      if (j >= out_rank) throw std::invalid_argument("reduction output index has the wrong rank");
      r.index.push_back(e.coord(j++, n));
    }
  }
  if (j != out_rank) throw std::invalid_argument("reduction output index has the wrong rank");
  return r;
}

Expr sym_reduce(const Env& e, ir::ReduceOp op, const TensorRef& in, const SymDomain& d,
                const std::function<Expr(Expr)>& body) {
  try {
    Expr x = e.real_sym_at(in, d.index);
    // every reduced dim of one element (a symbolic location): the one term itself, whatever the op
    if (d.box.empty()) return body(x);
    return ir::reduce_bounded(e.cx, op, d.box, body(x));
  } catch (const Env::NotSymbolic&) {
    return nullptr;
  }
}

Expr arg_extreme(ir::Context& cx, std::span<const Expr> vals, std::span<const int64_t> positions, bool is_max) {
  if (vals.empty()) throw std::invalid_argument("arg_extreme over an empty set");
  // Torch returns the first position of the extreme value: the smallest position whose value
  // equals the extreme. Built as a balanced tree of unsigned minima (depth log n, size n); a
  // chain of prefix extrema was O(n^2) nodes and n deep.
  Expr extreme = is_max ? cx.max(vals) : cx.min(vals);
  const Expr none = cx.bv_const(ir::Sort::BV64, UINT64_MAX);
  std::vector<Expr> level;
  level.reserve(vals.size());
  for (size_t j = 0; j < vals.size(); ++j)
    level.push_back(cx.ite(cx.eq(vals[j], extreme), cx.bv_const(ir::Sort::BV64, static_cast<uint64_t>(positions[j])), none));
  while (level.size() > 1) {
    std::vector<Expr> next;
    next.reserve((level.size() + 1) / 2);
    for (size_t i = 0; i < level.size(); i += 2)
      next.push_back(i + 1 < level.size() ? cx.bv_min(level[i], level[i + 1], false) : level[i]);
    level = std::move(next);
  }
  return level[0];
}

Expr inverse_count(const Env& e, size_t n) {
  if (n == 0) e.unsupported("average over an empty set (NaN)");
  return e.cx.real_const(mpq_class(1, static_cast<unsigned long>(n)));
}

Expr fn(ir::Context& cx, ir::Fn f, Expr a) { return cx.call(f, a); }
Expr square(ir::Context& cx, Expr a) { return cx.mul(a, a); }
Expr rsqrt(ir::Context& cx, Expr a) { return cx.call(ir::Fn::Rsqrt, a); }

}  // namespace detail

// ---------------------------------------------------------------- entry points

ir::Expr element(ir::Context& ctx, const OpCall& call, int output_index, std::span<const int64_t> out_index) {
  std::string key = canonical_name(call.name, call.overload);
  const detail::OpDef* def = detail::lookup(key);
  if (!def) throw Unsupported(key, "no per-element semantics for this operator");
  if (output_index < 0 || static_cast<size_t>(output_index) >= call.outputs.size())
    throw std::invalid_argument("aten op " + key + ": output " + std::to_string(output_index) + " not described");
  const TensorRef& o = call.outputs[output_index];
  if (out_index.size() != o.rank())
    throw std::invalid_argument("aten op " + key + ": location has rank " + std::to_string(out_index.size()) +
                                ", output has rank " + std::to_string(o.rank()));
  for (size_t k = 0; k < o.rank(); ++k)
    if (out_index[k] < 0 || out_index[k] >= o.shape[k])
      throw std::invalid_argument("aten op " + key + ": location out of range in dim " + std::to_string(k));
  detail::Env env(ctx, call, *def, output_index, out_index);
  ir::Expr e;
  try {
    e = def->fn(env);
  } catch (const std::out_of_range& err) {  // a list argument shorter than the shapes need
    throw std::invalid_argument("aten op " + key + ": inconsistent arguments (" + err.what() + ")");
  }
  // Handlers compute floats in the reals, integer results as bitvectors and
  // predicates as Bool; the stored element has the output dtype's sort.
  ir::Sort want = elem_sort(o.dtype);
  if (e->sort != want) {
    DType from = e->sort == ir::Sort::Real ? DType::Float64 : e->sort == ir::Sort::Bool ? DType::Bool : DType::Int64;
    e = env.convert(e, from, o.dtype);
  }
  return e;
}

ir::Expr element_sym(ir::Context& ctx, const OpCall& call, int output_index, std::span<const ir::Expr> out_index) {
  std::string key = canonical_name(call.name, call.overload);
  const detail::OpDef* def = detail::lookup(key);
  if (!def || !(def->pointwise || def->symbolic_location)) return nullptr;
  if (output_index != 0 || call.outputs.empty() || out_index.size() != call.outputs[0].rank()) return nullptr;
  const TensorRef& o = call.outputs[0];
  std::vector<int64_t> rep(o.rank(), 0);
  for (auto s : o.shape)
    if (s <= 0) return nullptr;
  detail::Env env(ctx, call, *def, 0, rep);
  env.sidx.assign(out_index.begin(), out_index.end());
  ir::Expr e;
  try {
    e = def->fn(env);
  } catch (const detail::Env::NotSymbolic&) {
    return nullptr;
  } catch (const std::out_of_range&) {
    return nullptr;
  }
  ir::Sort want = elem_sort(o.dtype);
  if (e->sort != want) {
    DType from = e->sort == ir::Sort::Real ? DType::Float64 : e->sort == ir::Sort::Bool ? DType::Bool : DType::Int64;
    e = env.convert(e, from, o.dtype);
  }
  return e;
}

ir::Expr element_flat(ir::Context& ctx, const OpCall& call, int output_index, int64_t flat_index) {
  if (output_index < 0 || static_cast<size_t>(output_index) >= call.outputs.size())
    throw std::invalid_argument("output " + std::to_string(output_index) + " not described");
  const auto& shape = call.outputs[output_index].shape;
  if (flat_index < 0 || flat_index >= detail::numel(shape)) throw std::invalid_argument("flat location out of range");
  auto idx = detail::unravel(flat_index, shape);
  return element(ctx, call, output_index, idx);
}

bool is_supported(std::string_view name, std::string_view overload) {
  return detail::lookup(canonical_name(name, overload)) != nullptr;
}

std::vector<std::string> supported_ops() { return detail::registry().keys(); }

std::string resolved_name(std::string_view name, std::string_view overload) {
  const detail::OpDef* def = detail::lookup(canonical_name(name, overload));
  return def ? def->key : std::string();
}

WrittenArguments written_arguments(std::string_view name, std::string_view overload) {
  std::string key = canonical_name(name, overload);
  const detail::OpDef* def = detail::lookup(key);
  if (!def) throw Unsupported(key, "no per-element semantics for this operator");
  return {def->returns, def->writes};
}

std::vector<std::string> op_parameters(std::string_view name, std::string_view overload) {
  std::string key = canonical_name(name, overload);
  const detail::OpDef* def = detail::lookup(key);
  if (!def) throw Unsupported(key, "no per-element semantics for this operator");
  return def->params;
}

}  // namespace dirigo::aten
