// Internals shared by the op-family files: the registry and the per-call
// environment that handlers use to read arguments and input elements.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "aten/aten.h"

namespace dirigo::aten::detail {

using ir::Expr;
using Index = std::vector<int64_t>;

class Env;
using Handler = std::function<Expr(Env&)>;

struct OpDef {
  std::string key;                  // canonical name
  std::vector<std::string> params;  // schema parameter names in order (kwarg-only ones last)
  Handler fn;
  bool pointwise = false;           // reads every tensor operand only at the broadcast of the location
  // The handler builds the element at a symbolic location too (Env::sidx: reductions and matrix
  // products as Reduce nodes, every path it cannot build so throwing Env::NotSymbolic).
  bool symbolic_location = false;
  int returns;                      // with `writes`: how many outputs the op returns
  std::vector<std::string> writes;  // arguments written in place but not returned (outputs returns+k)
};

class Registry {
 public:
  // params: space-separated schema names, e.g. "self other alpha".
  void add(std::string key, std::string_view params, Handler fn);
  // The op also writes these arguments (space-separated names) in place; their new values are
  // outputs returns+0, returns+1, ... (see aten::written_arguments).
  void set_writes(const std::string& key, int returns, std::string_view params);
  const OpDef* find(const std::string& key) const;
  // Ops added while set are pointwise (element_sym evaluates them at symbolic locations).
  bool adding_pointwise = false;
  // These (already added) ops' handlers also take a symbolic location (OpDef::symbolic_location).
  void set_symbolic_location(std::initializer_list<const char*> keys);
  std::vector<std::string> keys() const;
 private:
  std::unordered_map<std::string, OpDef> defs_;
};

// One registration function per op family (called once, in aten.cpp).
void register_elementwise(Registry&);
void register_activation(Registry&);
void register_conv(Registry&);
void register_linalg(Registry&);
void register_norm(Registry&);
void register_reduce(Registry&);
void register_pool(Registry&);
void register_view(Registry&);
void register_loss(Registry&);
void register_factory(Registry&);
void register_attention(Registry&);

class Env {
 public:
  // Thrown (and caught by the symbolic paths) when an element cannot be read symbolically.
  struct NotSymbolic {};
  Env(ir::Context& cx, const OpCall& call, const OpDef& def, int out, std::span<const int64_t> idx);

  ir::Context& cx;
  const OpCall& call;
  const OpDef& def;
  const int out;   // which output is asked for
  const Index idx; // its multi-index (element_sym: all zeros, the location is `sidx`)
  std::vector<Expr> sidx;  // set: the symbolic location (element_sym; closed or reading enclosing Bounds)
  bool symbolic() const { return !sidx.empty(); }
  // Coordinate k of the location as a BV64 expression, its enclosing indices lifted past `binders`
  // new reduction dims (the body of a Reduce the handler builds).
  Expr coord(size_t k, uint32_t binders = 0) const;
  // Paths that list a reduction element by element cannot take a symbolic location.
  void require_concrete() const { if (symbolic()) throw NotSymbolic{}; }

  [[noreturn]] void unsupported(const std::string& reason) const;
  [[noreturn]] void malformed(const std::string& reason) const;  // std::invalid_argument
  void require(bool ok, const std::string& what) const { if (!ok) malformed(what); }
  // The location's rank must be `rank` (handlers index e.idx and shapes directly).
  void require_rank(size_t rank) const;

  // ---- arguments by schema name (positional first, then kwargs)
  const Arg* arg(std::string_view name) const;  // nullptr when absent; names outside the schema are a bug
  bool has_param(std::string_view name) const;
  bool given(std::string_view name) const;      // present and not None
  const TensorRef& tensor(std::string_view name) const;
  std::optional<TensorRef> opt_tensor(std::string_view name) const;
  double real(std::string_view name, std::optional<double> def = {}) const;
  std::optional<double> opt_real(std::string_view name) const;
  int64_t integer(std::string_view name, std::optional<int64_t> def = {}) const;
  bool flag(std::string_view name, std::optional<bool> def = {}) const;
  std::vector<int64_t> ints(std::string_view name, std::optional<std::vector<int64_t>> def = {}) const;
  std::string str(std::string_view name, std::optional<std::string> def = {}) const;
  std::vector<TensorRef> tensors(std::string_view name) const;
  // def's value for an argument not given; malformed (missing) without one.
  template <class T>
  T default_of(std::string_view name, const std::optional<T>& def) const {
    if (def) return *def;
    malformed("missing argument '" + std::string(name) + "'");
  }

  const TensorRef& output(int k) const;
  const TensorRef& output() const { return output(out); }
  DType out_dtype() const { return output().dtype; }
  bool out_floating() const { return is_floating(out_dtype()); }

  // ---- element access
  Expr at(const TensorRef& t, std::span<const int64_t> i) const;       // in the tensor's own sort
  Expr real_at(const TensorRef& t, std::span<const int64_t> i) const;  // converted to Real
  Expr num(double d) const;  // exact real constant
  // Element of t at a symbolic multi-index (through call.read_sym); throws NotSymbolic.
  Expr sym_at(const TensorRef& t, std::span<const Expr> i) const;
  Expr real_sym_at(const TensorRef& t, std::span<const Expr> i) const { return to_real(sym_at(t, i), t.dtype); }
  // Whether a reduction over n elements is emitted as one Reduce node (call.reduce_above).
  bool reduce_symbolically(int64_t n) const { return call.reduce_above >= 0 && n > call.reduce_above; }
  // Whether one is tried as a Reduce node: also from kNestedReduceAbove elements, kept then only when
  // its body reads reductions and the whole stands for more than kNestedExpandTerms terms
  // (keep_reduce): expanded, it would repeat their terms n times. Smaller ones stay expanded, the form a
  // kernel's loops give and the re-roller matches.
  static constexpr int64_t kNestedReduceAbove = 16;
  static constexpr uint64_t kNestedExpandTerms = uint64_t(1) << 16;
  bool try_reduce(int64_t n) const { return reduce_symbolically(n) || (call.reduce_above >= 0 && n > kNestedReduceAbove); }
  bool keep_reduce(int64_t n, Expr built) const;
  Expr bv(int64_t v) const { return cx.bv_const(ir::Sort::BV64, static_cast<uint64_t>(v)); }
  Expr to_real(Expr e, DType from) const;
  // Convert a value computed in `from` to the output dtype's sort (float->int rounds toward zero).
  Expr convert(Expr e, DType from, DType to) const;

  // Argument `name` (tensor, broadcast against the output shape, or scalar) as a real at idx.
  Expr operand(std::string_view name) const { return operand(name, idx); }
  Expr operand(std::string_view name, std::span<const int64_t> at_idx) const;
  bool is_tensor(std::string_view name) const;
};

// ---- shared helpers
int64_t wrap_dim(int64_t d, int64_t rank);  // negative dims; throws std::invalid_argument
std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape);
int64_t numel(std::span<const int64_t> shape);
Index unravel(int64_t flat, std::span<const int64_t> shape);
int64_t ravel(std::span<const int64_t> idx, std::span<const int64_t> shape);
// Index of `in` (a tensor broadcast to the output's rank) for output index `idx`.
Index broadcast_index(const TensorRef& in, std::span<const int64_t> idx);
// Calls f(index) for every multi-index of `shape`, row-major.
void for_each_index(std::span<const int64_t> shape, const std::function<void(const Index&)>& f);
// A per-spatial-dim int list argument (stride, padding, kernel_size, ...): absent or empty
// means `def` (required when def is nullopt), one entry applies to every dim.
std::vector<int64_t> spatial_ints(const Env& e, std::string_view name, size_t n, std::optional<std::vector<int64_t>> def);
// Reduction dims as a sorted set of wrapped dims; empty list or absent means all dims.
std::vector<int64_t> reduce_dims(const Env& e, std::string_view name, int64_t rank, bool empty_means_all = true);
// For reductions: the input indices reduced into output index idx (keepdim or not).
std::vector<Index> reduction_domain(const TensorRef& in, std::span<const int64_t> dims, bool keepdim, std::span<const int64_t> idx);
// Sum / mean of real elements of `in` over a reduction domain.
Expr sum_of(const Env& e, const TensorRef& in, const std::vector<Index>& domain);
// A reduction over dims `dims` of `in` into the env's location as one Reduce node: body(x) of each
// element x read symbolically. nullptr when the elements cannot be read so (the caller expands).
struct SymDomain {
  std::vector<Expr> index;  // the input's multi-index: the location's coordinates and Bound leaves
  std::vector<std::pair<int64_t, int64_t>> box;
  int64_t count = 1;
};
// nullopt at a concrete location when every reduced dim has one element (at a symbolic one: an
// empty box, whose Reduce is the body at the location).
std::optional<SymDomain> sym_domain(const Env& e, const TensorRef& in, std::span<const int64_t> dims, bool keepdim);
Expr sym_reduce(const Env& e, ir::ReduceOp op, const TensorRef& in, const SymDomain& d,
                const std::function<Expr(Expr)>& body);
// ite chain: first index (as BV64 constant `positions[k]`) whose value is max (or min) of vals.
Expr arg_extreme(ir::Context& cx, std::span<const Expr> vals, std::span<const int64_t> positions, bool is_max);
// Element of t at index i except along `dim`, where the position is the runtime
// integer value `pos` (a Load with a symbolic flat index).
Expr gather_element(const Env& e, const TensorRef& t, Index i, int64_t dim, Expr pos);
// Same with several dims at runtime positions (dims[k] at positions[k], BV64).
Expr gather_element(const Env& e, const TensorRef& t, Index i, std::span<const int64_t> dims, std::span<const Expr> positions);
// The exact constant 1/n for averages; an empty set has no mean (PyTorch gives NaN): unsupported.
Expr inverse_count(const Env& e, size_t n);
// exp/log etc. shortcuts
Expr fn(ir::Context& cx, ir::Fn f, Expr a);
Expr square(ir::Context& cx, Expr a);
Expr rsqrt(ir::Context& cx, Expr a);

}  // namespace dirigo::aten::detail
