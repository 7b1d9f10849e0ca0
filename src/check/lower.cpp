#include "check/lower.h"

#include "exec/deadline.h"
#include "exec/inffold.h"
#include "exec/interval.h"
#include "exec/sat.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "aten/aten.h"
#include "blas/blas.h"
#include "ir/print.h"
#include "ir/reduce.h"
#include "ptx/inline.h"
#include "ptx/parser.h"

namespace dirigo::check {

using program::ValueId;
using program::View;

struct ParsedModule {
  ptx::Module module;
};

exec::DType exec_dtype(bundle::DType d) {
  switch (d) {
    case bundle::DType::Float64: return exec::DType::F64;
    case bundle::DType::Float32: return exec::DType::F32;
    case bundle::DType::Float16: return exec::DType::F16;
    case bundle::DType::BFloat16: return exec::DType::BF16;
    case bundle::DType::Int64: return exec::DType::I64;
    case bundle::DType::Int32: return exec::DType::I32;
    case bundle::DType::Int16: return exec::DType::I16;
    case bundle::DType::Int8: return exec::DType::I8;
    case bundle::DType::UInt8: return exec::DType::U8;
    case bundle::DType::Bool: return exec::DType::Bool;
  }
  return exec::DType::F32;
}

namespace {

ir::Sort sort_of(bundle::DType d) { return aten::elem_sort(aten::parse_dtype(bundle::dtype_name(d))); }

aten::TensorRef aten_ref(const View& v, int32_t tensor_id) {
  aten::TensorRef t;
  t.tensor_id = tensor_id;
  t.shape = v.shape;
  t.strides = v.strides;
  t.offset = v.offset;
  t.dtype = aten::parse_dtype(bundle::dtype_name(v.dtype));
  return t;
}


// A captured constant (torch.tensor(0.5) in forward) is part of the program, not a free input: its
// recorded value is the literal. Without recorded values the program cannot be checked.
double constant_value(const bundle::Bundle& b, const std::string& program, const program::SsaInput& in, int64_t j) {
  const bundle::Program* bp = b.find_program(program);
  const bundle::Input* bi = nullptr;
  if (bp)
    for (const auto& x : bp->inputs)
      if (x.name == in.name) bi = &x;
  if (!bi || bi->constant_values.empty())
    throw Unsupported(fmt::format("{}: captured constant {} has no recorded values{}", program, in.name,
                                  bi && bi->data.empty() ? " (the bundle has no data file for it)" : ""));
  int64_t l = logical_of_storage(in.view, j);
  if (l < 0 || size_t(l) >= bi->constant_values.size())
    throw Unsupported(fmt::format("{}: element {} of captured constant {}'s storage is outside the constant",
                                  program, j, in.name));
  double x = bi->constant_values[size_t(l)];
  if (sort_of(in.view.dtype) == ir::Sort::Real && !std::isfinite(x))
    throw Unsupported(fmt::format("{}: captured constant {} holds the non-finite value {}", program, in.name, x));
  return x;
}

ir::Expr constant_element(ir::Context& ctx, const bundle::Bundle& b, const std::string& program,
                          const program::SsaInput& in, int64_t j) {
  double x = constant_value(b, program, in, j);
  ir::Sort s = sort_of(in.view.dtype);
  if (s == ir::Sort::Real) return ctx.real_const_from_double(x);
  return ctx.bv_const(s, uint64_t(int64_t(x)));  // integers and bools (as 0/1 bytes), exact below 2^53
}

}  // namespace

std::vector<int64_t> unravel(std::span<const int64_t> shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    int64_t n = std::max<int64_t>(shape[k], 1);
    idx[k] = flat % n;
    flat /= n;
  }
  return idx;
}

int64_t storage_of_logical(const View& v, int64_t logical) {
  auto idx = unravel(v.shape, logical);
  int64_t j = v.offset;
  for (size_t k = 0; k < idx.size(); ++k) j += idx[k] * v.strides[k];
  return j;
}

int64_t logical_of_storage(const View& v, int64_t j) {
  // Walk dimensions from the largest stride down; exact for non-overlapping views
  // (the only kind a write region or an input can be).
  int64_t rem = j - v.offset;
  if (rem < 0) return -1;
  std::vector<size_t> order(v.shape.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v.strides[a] > v.strides[b]; });
  std::vector<int64_t> idx(v.shape.size(), 0);
  for (size_t k : order) {
    if (v.shape[k] == 0) return -1;
    if (v.strides[k] <= 0 || v.shape[k] == 1) continue;
    int64_t q = std::min(rem / v.strides[k], v.shape[k] - 1);
    idx[k] = q;
    rem -= q * v.strides[k];
  }
  if (rem != 0) return -1;
  int64_t flat = 0;
  for (size_t k = 0; k < idx.size(); ++k) flat = flat * v.shape[k] + idx[k];
  return flat;
}

Lowering::Lowering(ir::Context& ctx, const bundle::Bundle& b, const program::Merged& m, bool reference,
                   const exec::ExecOptions& eopt)
    : ctx_(ctx), bundle_(b), merged_(m), prog_(reference ? m.ref : m.cand), reference_(reference), eopt_(eopt),
      prefix_(reference ? "ref" : "new") {}

Lowering::~Lowering() = default;

int32_t Lowering::value_tensor(ValueId v) {
  auto it = value_tensor_.find(v);
  if (it != value_tensor_.end()) return it->second;
  int32_t t = ctx_.tensor(prefix_ + ":" + program::value_name(prog_, v));
  value_tensor_[v] = t;
  tensor_value_[t] = v;
  return t;
}

ir::Expr Lowering::element(const View& view, int64_t logical) {
  int64_t j = storage_of_logical(view, logical);
  ir::Expr e = storage_element(view.value, j);
  return e;
}

ir::Expr Lowering::element_symbolic(const View& view, std::span<const ir::Expr> coords, std::string* why_not) {
  if (coords.size() != view.shape.size() || view.strides.size() != view.shape.size()) return nullptr;
  struct Restore {
    std::string*& p;
    ~Restore() { p = nullptr; }
  } restore{why_not_};
  why_not_ = why_not;
  ir::Expr e = read_symbolic(aten_ref(view, value_tensor(view.value)), coords, sort_of(view.dtype));
  return e && reads_deferred(e) ? resolve_reads_symbolic(e) : e;
}

bool Lowering::reads_deferred(ir::Expr e) {
  if (!deferred_reads_ || !e->has_data()) return false;  // no walk over equations of programs that never deferred
  for (ir::Expr l : ir::leaves(e))
    if (l->op == ir::Op::Load)
      if (auto it = tensor_value_.find(l->tensor()); it != tensor_value_.end() && !outside_data(it->second)) return true;
  return false;
}

// Version 0 of a storage that is neither a shared input nor a captured constant: data from outside the
// trace, a free leaf of this program (compute()'s leaf, at a symbolic index a Load of its tensor).
bool Lowering::outside_data(ValueId v) {
  const program::Value& val = prog_.value(v);
  if (val.producer >= 0 || shared_leaf(v).shared >= 0) return false;
  for (const auto& in : prog_.inputs)
    if (in.constant && prog_.value(in.view.value).storage == val.storage) return false;
  return true;
}

// Elements of shared inputs are leaves: built directly (hash-consing makes them unique), never
// memoized; a GEMM's location reads millions of them and a memo entry per leaf cost more than the leaf.
const Lowering::SharedLeaf& Lowering::shared_leaf(ValueId v) {
  if (auto it = shared_leaves_.find(v); it != shared_leaves_.end()) return it->second;
  SharedLeaf sl;
  sl.shared = reference_ ? merged_.shared_input_of_ref(v) : merged_.shared_input_of_cand(v);
  if (sl.shared >= 0) {
    const auto& si = merged_.inputs[size_t(sl.shared)];
    const View& view = reference_ ? si.ref : si.cand;
    sl.view = &view;
    sl.tensor = ctx_.tensor("in:" + si.name);
    sl.sort = sort_of(view.dtype);
    sl.numel = 1;
    bool dense = view.strides.size() == view.shape.size();
    for (size_t k = view.shape.size(); k-- > 0;) {  // row-major contiguous: logical = storage - offset
      if (dense && view.shape[k] != 1 && view.strides[k] != sl.numel) dense = false;
      sl.numel *= view.shape[k];
    }
    sl.contiguous = dense;
  }
  return shared_leaves_.emplace(v, sl).first->second;
}

ir::Expr Lowering::storage_element(ValueId v, int64_t j) {
  if (const SharedLeaf& sl = shared_leaf(v); sl.shared >= 0) {
    int64_t l = sl.contiguous ? (j >= sl.view->offset && j - sl.view->offset < sl.numel ? j - sl.view->offset : -1)
                              : logical_of_storage(*sl.view, j);
    if (l >= 0) return ctx_.elem(sl.tensor, l, sl.sort);
  }
  auto key = std::make_pair(int32_t(v), j);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  ir::Expr e = compute(v, j);
  memo_.emplace(key, e);
  return e;
}

ir::Expr Lowering::operand_element(ValueId v, int64_t j, ir::Sort s) {
  return template_ctx_ ? template_ctx_->elem(value_tensor(v), j, s) : storage_element(v, j);
}

ir::Expr Lowering::element_template(ir::Context& cx, ValueId v, int64_t j, const ProductsHook& products) {
  struct Restore {
    Lowering& l;
    ~Restore() { l.template_ctx_ = nullptr, l.products_ = nullptr; }
  } restore{*this};
  template_ctx_ = &cx;
  products_ = products ? &products : nullptr;
  return compute(v, j);
}

void Lowering::forget_context(const ir::Context& cx) {
  for (int mode : {0, 1, 2}) stats_memos_.erase({&cx, mode});
  std::erase_if(aten_calls_, [&](const auto& kv) { return kv.first.ctx == &cx; });
}

std::optional<Lowering::SharedView> Lowering::shared_view(ValueId v) {
  const SharedLeaf& sl = shared_leaf(v);
  if (sl.shared < 0) return std::nullopt;
  return SharedView{sl.tensor, sl.sort, sl.view->offset, sl.numel, sl.contiguous};
}

std::optional<Lowering::Operand> Lowering::operand(int32_t tensor, int64_t index) const {
  if (auto it = launch_tensor_.find(tensor); it != launch_tensor_.end()) return Operand{it->second.second, index};
  if (auto it = tensor_value_.find(tensor); it != tensor_value_.end()) return Operand{it->second, index};
  return std::nullopt;
}

Lowering::Source Lowering::source(ValueId v, int64_t j) {
  Source src;
  if (const SharedLeaf& sl = shared_leaf(v); sl.shared >= 0) {
    int64_t l = sl.contiguous ? (j >= sl.view->offset && j - sl.view->offset < sl.numel ? j - sl.view->offset : -1)
                              : logical_of_storage(*sl.view, j);
    if (l >= 0) {
      src.kind = Source::Kind::Shared;
      src.tensor = sl.tensor;
      src.index = l;
      src.sort = sl.sort;
      return src;
    }
  }
  const program::Value& val = prog_.value(v);
  if (val.producer >= 0) return src;
  src.kind = Source::Kind::External;
  src.tensor = value_tensor(v);
  src.index = j;
  for (const auto& in : prog_.inputs)
    if (prog_.value(in.view.value).storage == val.storage) {
      src.sort = sort_of(in.view.dtype);
      if (in.constant) {
        src.kind = Source::Kind::Constant;
        src.constant = constant_value(bundle_, prog_.name, in, j);
        return src;
      }
    }
  return src;
}

ir::Expr Lowering::compute(ValueId v, int64_t j) {
  if (++computes_since_clock_ >= 64) {  // one element can substitute through a 10^5-node expression
    computes_since_clock_ = 0;
    if (std::chrono::steady_clock::now() > deadline_)
      throw OutOfTime(fmt::format("building the {} program's expression for this location ran past the budget",
                                  reference_ ? "reference" : "candidate"));
  }
  const program::Value& val = prog_.value(v);
  // Version 0 of a storage that is no shared input: data from outside the trace.
  // Reading it is a free variable of this program alone.
  auto leaf = [&] {
    bundle::DType d = bundle::DType::Float32;
    for (const auto& in : prog_.inputs)
      if (prog_.value(in.view.value).storage == val.storage) {
        if (in.constant) return constant_element(cx(), bundle_, prog_.name, in, j);
        d = in.view.dtype;
      }
    return cx().elem(value_tensor(v), j, sort_of(d));
  };
  if (val.producer < 0) return leaf();
  const program::SsaOp& op = prog_.ops[size_t(val.producer)];
  const program::Write* w = nullptr;
  for (const auto& cand : op.writes)
    if (cand.after == v) w = &cand;
  if (!w) throw Unsupported(fmt::format("{}: value {} has no write record", prog_.name, program::value_name(prog_, v)));
  if (std::holds_alternative<bundle::AtenOp>(op.op)) return from_aten(op, *w, v, j);
  if (std::holds_alternative<bundle::LaunchOp>(op.op)) return from_launch(size_t(val.producer), *w, j);
  if (std::holds_alternative<bundle::CopyOp>(op.op)) return from_copy(op, *w, j);
  return from_library(size_t(val.producer), *w, j);
}

// ---- library calls (cuBLAS): equations from src/blas over the op's tensor operands

const blas::Call& Lowering::library_call(size_t op_index) {
  if (auto it = library_calls_.find(op_index); it != library_calls_.end()) return *it->second;
  const program::SsaOp& op = prog_.ops[op_index];
  const auto& lib = std::get<bundle::LibraryOp>(op.op);
  std::shared_ptr<const blas::Call> call;
  try {
    call = std::make_shared<const blas::Call>(blas::parse(lib));
  } catch (const blas::Unsupported& u) {
    throw Unsupported(fmt::format("library call (op {} of {}): {}", op.index, prog_.name,
                                  std::string(u.what()).substr(13)));
  }
  // Every range the leading dimensions, strides and sizes imply must lie inside the bound tensor's
  // storage: sizes are known, so this is a concrete check, reported like a kernel's global OOB.
  for (const auto& e : blas::extents(*call)) {
    if (e.hi <= e.lo) continue;
    const program::Operand* r = nullptr;
    for (const auto& rd : op.reads)
      if (rd.path == "args." + e.key) r = &rd;
    if (!r) throw Unsupported(fmt::format("{} (op {} of {}): argument {} is no tensor", lib.name, op.index,
                                          prog_.name, e.key));
    unsigned es = bundle::element_size(r->view.dtype);
    if (r->view.dtype != bundle::DType::Float32 || r->byte_offset.value_or(0) % es != 0)
      throw Unsupported(fmt::format("{} (op {} of {}): argument {} is not float32 data at an element boundary",
                                    lib.name, op.index, prog_.name, e.key));
    int64_t base = r->view.offset + r->byte_offset.value_or(0) / es;
    int64_t size = prog_.storages[size_t(prog_.value(r->view.value).storage)].nbytes / es;
    if (base + e.lo < 0 || base + e.hi > size) {
      exec::Finding f;
      f.kind = "global-out-of-bounds";
      f.kernel = fmt::format("{} (op {} of {})", lib.name, op.index, prog_.name);
      f.message = fmt::format("the call {} elements [{}, {}) of argument {} (tensor {}, storage of {} elements, "
                              "pointer at element {}): its sizes, leading dimensions or strides reach outside it",
                              e.write ? "writes" : "reads", base + e.lo, base + e.hi, e.key, r->view.tensor, size,
                              base);
      library_findings_.push_back(std::move(f));
    }
  }
  library_calls_[op_index] = call;
  return *call;
}

ir::Expr Lowering::from_library(size_t op_index, const program::Write& w, int64_t j) {
  const blas::Call& call = library_call(op_index);
  const program::SsaOp& op = prog_.ops[op_index];
  auto operand = [&](const std::string& key) -> const program::Operand* {
    for (const auto& r : op.reads)
      if (r.path == "args." + key) return &r;
    return nullptr;
  };
  auto first_element = [](const program::Operand& r) {
    return r.view.offset + r.byte_offset.value_or(0) / int64_t(bundle::element_size(r.view.dtype));
  };
  blas::Reader read = [&](const std::string& key, int64_t off) -> ir::Expr {
    const program::Operand* r = operand(key);
    if (!r) throw Unsupported(fmt::format("{}: argument {} is no tensor", call.name, key));
    return operand_element(r->view.value, first_element(*r) + off, ir::Sort::Real);
  };
  for (const auto& key : blas::output_keys(call)) {
    const program::Operand* r = operand(key);
    if (!r || prog_.value(r->view.value).storage != w.storage) continue;
    try {
      blas::ProductsReader products;
      if (products_)  // a GEMM's sum of products, handed over whole as the operands' storage elements
        products = [&](const blas::Products& p) {
          const program::Operand *ra = operand(p.a_key), *rb = operand(p.b_key);
          if (!ra || !rb) throw Unsupported(fmt::format("{}: argument {} or {} is no tensor", call.name, p.a_key, p.b_key));
          aten::Products q;
          q.a_tensor = value_tensor(ra->view.value);
          q.b_tensor = value_tensor(rb->view.value);
          q.count = p.count;
          q.a_first = first_element(*ra) + p.a_first;
          q.a_step = p.a_step;
          q.b_first = first_element(*rb) + p.b_first;
          q.b_step = p.b_step;
          return (*products_)(q);
        };
      if (auto e = blas::element(cx(), call, key, j - first_element(*r), read, products_ ? &products : nullptr))
        return *e;
    } catch (const blas::Unsupported& u) {
      throw Unsupported(fmt::format("library call (op {} of {}): {}", op.index, prog_.name,
                                    std::string(u.what()).substr(13)));
    }
  }
  if (w.before == program::kNoValue) return cx().elem(value_tensor(w.after), j);
  return operand_element(w.before, j, ir::Sort::Real);
}

namespace {

// bundle argument -> aten argument; tensors through the op's SSA reads (by path).
aten::Arg convert_arg(const bundle::Arg& a, const std::string& path,
                      const std::map<std::string, const program::Operand*>& reads,
                      const std::function<int32_t(ValueId)>& tensor_of) {
  using namespace bundle;
  if (std::holds_alternative<TensorRef>(a.value)) {
    auto it = reads.find(path);
    if (it == reads.end()) throw Unsupported("tensor argument " + path + " has no SSA read");
    return aten::Arg::of(aten_ref(it->second->view, tensor_of(it->second->view.value)));
  }
  if (const auto* s = std::get_if<Scalar>(&a.value)) {
    switch (s->type) {
      case ScalarType::Bool: return aten::Arg::of_bool(s->i != 0);
      case ScalarType::Int: return aten::Arg::of_int(s->i);
      case ScalarType::Float: return aten::Arg::of_real(s->f);
      case ScalarType::Complex: throw Unsupported("complex scalar argument " + path);
      default:
        return is_float_scalar(s->type) ? aten::Arg::of_real(s->f) : aten::Arg::of_int(s->i);
    }
  }
  if (const auto* l = std::get_if<ListArg>(&a.value)) {
    std::vector<aten::Arg> xs;
    for (size_t i = 0; i < l->items.size(); ++i)
      xs.push_back(convert_arg(l->items[i], fmt::format("{}.list[{}]", path, i), reads, tensor_of));
    return aten::Arg::of_list(std::move(xs));
  }
  if (const auto* s = std::get_if<StringArg>(&a.value)) return aten::Arg::of_string(s->value);
  if (const auto* d = std::get_if<DTypeArg>(&a.value)) return aten::Arg::of_dtype(aten::parse_dtype(dtype_name(d->dtype)));
  if (const auto* s = std::get_if<LayoutArg>(&a.value)) return aten::Arg::of_string(s->layout);
  if (const auto* s = std::get_if<DeviceArg>(&a.value)) return aten::Arg::of_string(s->device);
  if (const auto* s = std::get_if<MemoryFormatArg>(&a.value)) return aten::Arg::of_string(s->format);
  return aten::Arg::none();
}

}  // namespace

// How many elements a reduction needs before it is emitted as one ir Reduce node (aten::OpCall::
// reduce_above); DIRIGO_REDUCE_ABOVE=-1 expands every reduction term by term (the old form, for A/B).
// Read at each call so that a test can switch it.
int64_t reduce_above() {
  const char* s = std::getenv("DIRIGO_REDUCE_ABOVE");
  return s && *s ? std::strtoll(s, nullptr, 10) : aten::OpCall{}.reduce_above;
}

aten::OpCall Lowering::make_aten_call(const program::SsaOp& op) {
  const auto& a = *op.aten();
  std::map<std::string, const program::Operand*> reads;
  for (const auto& r : op.reads) reads[r.path] = &r;
  auto tensor_of = [this](ValueId x) { return value_tensor(x); };
  aten::OpCall call;
  call.name = a.name;
  call.overload = a.overload;
  for (size_t i = 0; i < a.args.size(); ++i)
    call.args.push_back(convert_arg(a.args[i], fmt::format("args[{}]", i), reads, tensor_of));
  for (const auto& [k, x] : a.kwargs) call.kwargs.emplace_back(k, convert_arg(x, "kwargs." + k, reads, tensor_of));
  for (const auto& out : op.results) call.outputs.push_back(aten_ref(out, value_tensor(out.value)));
  // The equation is built over the operands' back-projections directly (every tensor aten reads is a
  // value tensor of this program): no leaf-substitution pass, no second copy of the equation's nodes.
  call.read = [this](int32_t t, int64_t j, ir::Sort s) -> ir::Expr {
    auto it = tensor_value_.find(t);
    return it == tensor_value_.end() ? cx().elem(t, j, s) : operand_element(it->second, j, s);
  };
  call.reduce_above = reduce_above();
  // Templates (the numeric path) keep their reductions term by term.
  if (!template_ctx_)
    call.read_sym = [this](const aten::TensorRef& t, std::span<const ir::Expr> idx, ir::Sort s) {
      return read_symbolic(t, idx, s);
    };
  if (products_) call.sum_of_products = *products_;
  call.stats_memo = &stats_memos_[{&cx(), call_mode()}];
  return call;
}

const aten::OpCall& Lowering::aten_call(const program::SsaOp& op) {
  CallKey key{&op, &cx(), call_mode(), products_};
  auto it = aten_calls_.find(key);
  if (it == aten_calls_.end()) it = aten_calls_.emplace(key, make_aten_call(op)).first;
  return it->second;
}

namespace {
// Whether `res` is row-major contiguous and every address `t` can take lies within it.
bool row_major_within(const View& res, const aten::TensorRef& t) {
  int64_t numel = 1;
  for (size_t d = res.shape.size(); d-- > 0;) {
    if (res.shape[d] != 1 && res.strides[d] != numel) return false;
    numel *= res.shape[d];
  }
  int64_t lo = t.offset, hi = t.offset;
  for (size_t k = 0; k < t.rank(); ++k) {
    if (t.shape[k] <= 0) return false;
    int64_t span = (t.shape[k] - 1) * t.stride(k);
    (span < 0 ? lo : hi) += span;
  }
  return lo >= res.offset && hi < res.offset + numel;
}
}  // namespace

// An element of a view at a symbolic index (a reduction's body): a shared input's element is a Load
// of its leaf tensor, an element computed by a pointwise ATen op is that op's equation at the index
// (aten::element_sym); anything else (kernel writes, views the producer did not write) is nullptr:
// the reduction is expanded instead.
ir::Expr Lowering::read_symbolic(const aten::TensorRef& t, std::span<const ir::Expr> idx, ir::Sort s) {
  auto bv = [this](int64_t x) { return cx().bv_const(ir::Sort::BV64, uint64_t(x)); };
  auto none = [this](std::string_view why, const auto&... args) -> ir::Expr {  // element_symbolic says why
    return no_symbolic(fmt::format(fmt::runtime(why), args...));
  };
  auto it = tensor_value_.find(t.tensor_id);
  if (it == tensor_value_.end()) return none("a tensor of no value of this program");
  ValueId v = it->second;
  if (std::all_of(idx.begin(), idx.end(), [](ir::Expr e) { return e->op == ir::Op::ConstBV; })) {
    std::vector<int64_t> ci;
    for (ir::Expr e : idx) ci.push_back(int64_t(e->u));
    return operand_element(v, t.flat_index(ci), s);
  }
  if (const SharedLeaf& sl = shared_leaf(v); sl.shared >= 0) {
    if (!sl.contiguous || sl.sort != s) return none("a non-contiguous shared input");
    ir::Expr flat = bv(t.offset - sl.view->offset);  // logical index of a contiguous input = storage - offset
    for (size_t k = 0; k < idx.size(); ++k) flat = cx().bv_add(flat, cx().bv_mul(idx[k], bv(t.stride(k))));
    return cx().load(sl.tensor, flat, s);
  }
  const program::Value& val = prog_.value(v);
  if (val.producer < 0) return none("an input that is not shared (a constant or data from outside the trace)");
  const program::SsaOp& op = prog_.ops[size_t(val.producer)];
  if (std::holds_alternative<bundle::LaunchOp>(op.op)) {
    if (template_ctx_ || !defer_kernel_reads_) return none("a value written by a kernel launch");
    ir::Expr flat = bv(t.offset);
    for (size_t k = 0; k < idx.size(); ++k) flat = cx().bv_add(flat, cx().bv_mul(idx[k], bv(t.stride(k))));
    // inside a reduction's body the index reads its Bound indices, whose ranges only the finished
    // reduction knows: a deferred read (a Load of the value), resolved once it is built (from_aten)
    if (!flat->has_free_bound()) return kernel_read_symbolic(v, flat, s);
    ++deferred_reads_;
    return cx().load(value_tensor(v), flat, s);
  }
  if (!std::holds_alternative<bundle::AtenOp>(op.op)) return none("a value written by a copy or library call");
  const std::string& name = op.aten()->name;
  for (size_t r = 0; r < op.results.size(); ++r) {
    const View& res = op.results[r];
    if (res.value != v || res.strides.size() != res.shape.size()) continue;
    // The view read is a sub-box at 0 of the producer's result, its dims in any order, dims of one element
    // added or dropped (a slice from 0, unsqueeze, squeeze, t, permute, transpose): each dim of t of more
    // than one element is a distinct dim of the result with the same stride, the result's other dims at
    // 0. Then both name one address, the element the op computed at that multi-index.
    std::vector<ir::Expr> at(res.shape.size(), bv(0));
    std::vector<bool> used(res.shape.size(), false);
    bool found = res.offset == t.offset;
    for (size_t k = 0; k < t.rank() && found; ++k) {
      if (t.shape[k] == 1) continue;
      found = false;
      for (size_t d = 0; d < res.shape.size() && !found; ++d)
        if (!used[d] && res.strides[d] == t.stride(k) && t.shape[k] <= res.shape[d]) {
          used[d] = found = true;
          at[d] = idx[k];
        }
    }
    if (!found) {
      // Otherwise (a reshape: x.view(N, G, -1) of a contiguous result, a slice at an offset) the view's
      // address, when every address it can take lies within a row-major result, is that result's element
      // at the address's row-major coordinates, by division and remainder.
      if (!row_major_within(res, t)) continue;
      ir::Expr flat = bv(t.offset - res.offset);
      for (size_t k = 0; k < idx.size(); ++k) flat = cx().bv_add(flat, cx().bv_mul(idx[k], bv(t.stride(k))));
      int64_t inner = 1;
      for (size_t d = res.shape.size(); d-- > 0;) {
        at[d] = res.shape[d] == 1 ? bv(0) : cx().bv_urem(cx().bv_udiv(flat, bv(inner)), bv(res.shape[d]));
        inner *= res.shape[d];
      }
    }
    try {
      ir::Expr e = aten::element_sym(cx(), aten_call(op), int(r), at);
      if (!e) return none("{} (output {}) at a symbolic location", name, r);
      return e->sort == s ? e : none("{}: an element of another sort", name);
    } catch (const std::exception& x) {  // malformed or unsupported there: the reduction is expanded
      return none("{}: {}", name, x.what());
    }
  }
  return none("a view of {}'s result that is neither a sub-box of it nor within a row-major result", name);
}

// A shared input that is the whole of its storage, contiguous from its start: an index Execute proved
// inside the storage is inside the input.
bool Lowering::input_is_its_storage(ValueId v) {
  const SharedLeaf& sl = shared_leaf(v);
  if (sl.shared < 0 || !sl.contiguous || sl.view->offset != 0) return false;
  const program::Value& val = prog_.value(v);
  return uint64_t(sl.numel) == uint64_t(prog_.storages[size_t(val.storage)].nbytes) / bundle::element_size(sl.view->dtype);
}

ir::Expr Lowering::no_symbolic(const std::string& why) {
  if (why_not_ && why_not_->empty()) *why_not_ = why;
  return nullptr;
}

ir::Expr Lowering::storage_read_symbolic(ValueId v, ir::Expr index, ir::Sort s, bool in_storage) {
  if (index->op == ir::Op::ConstBV) return operand_element(v, int64_t(index->u), s);
  auto bv = [this](uint64_t x) { return ctx_.bv_const(ir::Sort::BV64, x); };
  const ir::Bounds b = ctx_.bv_bounds(index);
  const program::Value& val = prog_.value(v);
  if (const SharedLeaf& sl = shared_leaf(v); sl.shared >= 0) {
    if (!sl.contiguous || sl.sort != s) return no_symbolic("a non-contiguous shared input");
    const uint64_t lo = uint64_t(sl.view->offset), n = uint64_t(sl.numel);
    // inside the input's elements by the index's range, or (a kernel's read, which Execute proved inside
    // the storage) because the input is its whole storage
    if (!(b.lo >= lo && b.hi < lo + n) && !(in_storage && input_is_its_storage(v)))
      return no_symbolic("a read of a shared input at an index not known to lie within it");
    return cx().load(sl.tensor, lo ? cx().bv_sub(index, bv(lo)) : index, s);
  }
  if (val.producer >= 0 && std::holds_alternative<bundle::LaunchOp>(prog_.ops[size_t(val.producer)].op))
    return kernel_read_symbolic(v, index, s);
  if (outside_data(v)) return cx().load(value_tensor(v), index, s);
  // otherwise as a one-dimensional view of the storage over the index's range (read_symbolic finds the
  // producer's element there, or none)
  if (b.hi < b.lo || b.hi - b.lo >= (uint64_t(1) << 40))
    return no_symbolic(fmt::format("a read of {} at an index whose range is not known ({})", program::value_name(prog_, v),
                                   ir::to_string(ctx_, index, ir::PrintOptions{.max_nodes = 24})));
  aten::TensorRef t;
  t.tensor_id = value_tensor(v);
  t.shape = {int64_t(b.hi - b.lo + 1)};
  t.strides = {1};
  t.offset = int64_t(b.lo);
  ir::Expr at[] = {b.lo ? cx().bv_sub(index, bv(b.lo)) : index};
  return read_symbolic(t, at, s);
}

// The element of a kernel-written value at a symbolic storage index F. Every store of the launch to
// that storage writes k + sum c_i v_i over the thread Vars exactly (no wrap on the way), the same
// index in every place, with coefficients that are injective digit by digit; Vars that do not move
// the index are pinned to one value by each store's path (thread 0 of a block). Then the one thread
// that can store to F is v_i = (F - k) / c_i % ..., from the largest digit down, and F's value is
// that thread's last store whose path holds there, else the element before the launch.
ir::Expr Lowering::kernel_read_symbolic(ValueId v, ir::Expr F, ir::Sort s) {
  if (template_ctx_) return no_symbolic("a value written by a kernel launch (numeric template)");
  if (auto it = kernel_reads_.find({v, F}); it != kernel_reads_.end()) return it->second;
  std::optional<KernelWrite> kw;
  try {
    kw = kernel_write(v);
  } catch (const Unsupported& u) {
    return no_symbolic(u.what());
  }
  LaunchInfo& L = *kw->launch;
  const exec::ExecResult& R = *L.result;
  auto why = [&](std::string_view w) { return no_symbolic(fmt::format("a value kernel {} writes {}", L.kernel, w)); };
  if (kw->sort != s) return why("as elements of another type");
  exec::ThreadVars tv(ctx_, R.launch.block, R.launch.grid);
  const std::vector<ir::Expr> vars = tv.all();
  const std::array<uint64_t, 6> width{R.launch.block.x, R.launch.block.y, R.launch.block.z,
                                      R.launch.grid.x,  R.launch.grid.y,  R.launch.grid.z};
  std::vector<size_t> recs;
  for (size_t i = 0; i < R.writes.size(); ++i)
    if (R.writes[i].tensor == kw->tensor) recs.push_back(i);
  std::sort(recs.begin(), recs.end(), [&](size_t a, size_t b) { return R.writes[a].seq < R.writes[b].seq; });
  auto bv = [this](uint64_t x) { return ctx_.bv_const(ir::Sort::BV64, x); };
  // the kernel's 32-bit index fields of the solved thread widened, so that they recombine with F's terms
  struct FieldPush {
    ir::Context& c;
    bool was;
    explicit FieldPush(ir::Context& c) : c(c), was(c.rule_enabled(ir::Rule::BvFieldExtPush)) {
      c.set_rule_enabled(ir::Rule::BvFieldExtPush, true);
    }
    ~FieldPush() { c.set_rule_enabled(ir::Rule::BvFieldExtPush, was); }
  } field_push(ctx_);
  std::vector<std::pair<ir::Expr, ir::Expr>> arms;  // (where the store holds at F, its value there), in issue order
  if (!recs.empty()) {
    std::optional<exec::Linear> lin;
    std::set<int64_t> offsets;  // the stores' constant offsets k (an unrolled row loop: one per iteration)
    std::vector<int64_t> offset_of;  // per store, in recs' order
    for (size_t i : recs) {
      const exec::WriteRecord& w = R.writes[i];
      if (w.op != exec::WriteOp::Store) return why("with atomics");
      auto li = exec::linear_of(w.index, vars);
      if (!li || !exec::linear_is_exact(w.index, vars, width) || li->k < 0 ||
          std::any_of(li->c, li->c + 6, [](int64_t c) { return c < 0; }))
        return why(fmt::format("at an index that is not affine in the thread ({})", exec::short_string(ctx_, w.index, 160)));
      if (lin && !std::equal(li->c, li->c + 6, lin->c)) return why("at indices of different strides in different places");
      lin = li;
      offsets.insert(li->k);
      offset_of.push_back(li->k);
    }
    std::array<std::optional<uint64_t>, 6> pinned;
    std::vector<int> digits;  // the Vars that move the index, by increasing coefficient
    for (int i = 0; i < 6; ++i) {
      if (width[size_t(i)] == 1) {
        pinned[size_t(i)] = 0;
      } else if (lin->c[i] == 0) {
        for (size_t r : recs) {
          auto box = exec::box_of(tv, R.writes[r].pred);
          if (!box || (*box)[size_t(i)].lo != (*box)[size_t(i)].hi ||
              (pinned[size_t(i)] && *pinned[size_t(i)] != (*box)[size_t(i)].lo))
            return why("from several threads to one element");
          pinned[size_t(i)] = (*box)[size_t(i)].lo;
        }
      } else {
        digits.push_back(i);
      }
    }
    std::sort(digits.begin(), digits.end(), [&](int a, int b) { return lin->c[a] < lin->c[b]; });
    // The largest value the smaller digits' sum takes at any writing thread: over the box, or below a
    // bound every store's path puts on exactly that sum (a 2-D launch's column `16*ctaid.x + tid.x < w`
    // under a row stride of w: the grid's last column block reaches past w).
    auto guarded_max = [&](const int64_t (&part)[6]) -> std::optional<uint64_t> {
      std::optional<uint64_t> most;
      for (size_t r : recs) {
        auto g = exec::guards_of(R.writes[r].pred);
        std::optional<uint64_t> here;
        if (g)
          for (const auto& [subject, bounds] : *g) {
            if (!ir::is_bv(subject->sort) || subject->op == ir::Op::Var) continue;
            ir::Expr wide = ir::bv_width(subject->sort) == 64 ? subject : ctx_.zext(subject, ir::Sort::BV64);
            auto ls = exec::linear_of(wide, vars);
            if (ls && ls->k == 0 && std::equal(ls->c, ls->c + 6, part) && exec::linear_is_exact(wide, vars, width))
              here = std::min(here.value_or(bounds.hi), bounds.hi);
          }
        if (!here) return std::nullopt;
        most = std::max(most.value_or(0), *here);
      }
      return most;
    };
    unsigned __int128 span = 0;
    int64_t part[6] = {0, 0, 0, 0, 0, 0};  // the smaller digits so far
    for (int i : digits) {
      if (uint64_t(lin->c[i]) <= span) {
        auto most = guarded_max(part);
        if (!most || uint64_t(lin->c[i]) <= *most) return why("at an index two threads can share");
        span = *most;
      }
      span += (unsigned __int128)uint64_t(lin->c[i]) * (width[size_t(i)] - 1);
      part[i] = lin->c[i];
    }
    // Stores at several offsets: no two threads' stores may meet (an index of one thread at k1 that is
    // another thread's at k2), decided digit by digit over the offsets' differences; a thread's own
    // stores at different offsets are different elements.
    if (offsets.size() > 1) {
      std::array<uint64_t, 6> free_width = width;
      for (int i = 0; i < 6; ++i)
        if (pinned[size_t(i)]) free_width[size_t(i)] = 1;
      auto d = exec::digits_of(lin->c, free_width);
      const std::vector<int64_t> ks(offsets.begin(), offsets.end());
      for (int64_t k : ks) {
        auto meet = d ? exec::digits_reach(*d, ks, k, 4096) : std::nullopt;
        if (!meet || *meet) return why("at offsets where two threads' stores can meet");
      }
    }
    // The thread whose store at offset k lands on F, and where it exists (F - k within the box's digits).
    struct Solved {
      std::array<ir::Expr, 6> theta{};
      ir::Expr exists;
    };
    std::map<int64_t, Solved> solved;
    auto solve = [&](int64_t k) -> const Solved& {
      if (auto it = solved.find(k); it != solved.end()) return it->second;
      Solved sv;
      std::vector<ir::Expr> conds;
      ir::Expr rem = F;
      if (k) {
        conds.push_back(ctx_.ule(bv(uint64_t(k)), F));
        rem = ctx_.bv_sub(F, bv(uint64_t(k)));
      }
      for (size_t d = digits.size(); d-- > 0;) {
        const int i = digits[d];
        const uint64_t c = uint64_t(lin->c[i]);
        ir::Expr q = c == 1 ? rem : ctx_.bv_udiv(rem, bv(c));
        conds.push_back(ctx_.ult(q, bv(width[size_t(i)])));
        rem = c == 1 ? bv(0) : ctx_.bv_urem(rem, bv(c));
        sv.theta[size_t(i)] = ctx_.trunc(q, vars[size_t(i)]->sort);
      }
      conds.push_back(ctx_.eq(rem, bv(0)));
      for (int i = 0; i < 6; ++i)
        if (pinned[size_t(i)]) sv.theta[size_t(i)] = ctx_.bv_const(vars[size_t(i)]->sort, *pinned[size_t(i)]);
      sv.exists = ctx_.and_(conds);
      return solved.emplace(k, std::move(sv)).first->second;
    };
    const bool tid_fixed = pinned[0] && pinned[1] && pinned[2];
    const exec::Dim3 tid{uint32_t(pinned[0].value_or(0)), uint32_t(pinned[1].value_or(0)), uint32_t(pinned[2].value_or(0))};
    auto at_theta = [&](ir::Expr e, const std::array<ir::Expr, 6>& theta) {
      return ir::substitute(ctx_, e, [&](ir::Expr leaf) -> ir::Expr {
        for (size_t i = 0; i < 6; ++i)
          if (leaf == vars[i]) return theta[i];
        return nullptr;
      });
    };
    auto reads_shared = [&](ir::Expr e) {
      for (ir::Expr l : ir::leaves(e))
        if ((l->op == ir::Op::Load || l->op == ir::Op::TensorElem) && L.resolver->epoch_of(l->tensor()) >= 0) return true;
      return false;
    };
    for (size_t q = 0; q < recs.size(); ++q) {
      const exec::WriteRecord& w = R.writes[recs[q]];
      const Solved& sv = solve(offset_of[q]);
      ir::Expr value = w.value;
      if (reads_shared(value)) {
        // each block's shared cells resolved at the symbolic block, for the one thread position
        if (!tid_fixed) return why("from shared memory, at a thread position the index does not fix");
        std::optional<ir::Expr> in_block;
        try {
          in_block = L.resolver->specialize_tid(value, tid);
        } catch (const std::runtime_error& e) {
          return why(fmt::format("from shared memory ({})", e.what()));
        }
        if (!in_block) return why("from shared memory the blocks store to differently");
        value = *in_block;
      }
      if (ir::contains_reduce(value))  // as summarized_reads forms them at a location
        value = ir::expand_reductions(ctx_, ir::merge_interleaved(ctx_, value), kExpandedSummaryBelow);
      value = exec::fold_infinities(ctx_, at_theta(value, sv.theta));
      ir::Expr holds = ctx_.and_(sv.exists, at_theta(w.pred, sv.theta));
      if (holds->op == ir::Op::ConstBool && !holds->u) continue;
      ir::Expr resolved = resolve_reads_symbolic(value);
      if (!resolved) return nullptr;
      arms.emplace_back(holds, resolved);
    }
  }
  ir::Expr result = nullptr;
  // storage no earlier op gave contents (torch.empty): what an unwritten element holds is a leaf no input determines
  auto uninitialized = [&](ValueId b) {
    if (b == program::kNoValue) return true;
    const program::Value& bv = prog_.value(b);
    const bundle::AtenOp* a = bv.producer >= 0 ? prog_.ops[size_t(bv.producer)].aten() : nullptr;
    std::string_view n = a ? std::string_view(a->name) : std::string_view();
    if (n.starts_with("aten::")) n.remove_prefix(6);
    return n.starts_with("empty") || n.starts_with("new_empty");
  };
  if (arms.empty() || arms.back().first->op != ir::Op::ConstBool) {  // some F may keep its earlier value
    if (uninitialized(kw->before))
      result = ctx_.load(ctx_.tensor(fmt::format("{}:unwritten:{}", prefix_, program::value_name(prog_, v))), F, s);
    else if (!(result = storage_read_symbolic(kw->before, F, s, false)))
      return nullptr;
    for (const auto& [holds, value] : arms) result = ctx_.ite(holds, value, result);
  } else {
    result = arms.back().second;  // the last store holds everywhere: it is the value
  }
  kernel_reads_.emplace(std::pair(v, F), result);
  return result;
}

ir::Expr Lowering::resolve_reads_symbolic(ir::Expr e) {
  if (template_ctx_) return no_symbolic("a read at a symbolic index (numeric template)");
  std::unordered_map<ir::Expr, ir::Expr> memo;
  bool failed = false;
  uint32_t looked = 0;
  std::function<ir::Expr(ir::Expr)> go = [&](ir::Expr x) -> ir::Expr {
    if (failed || !x->has_data()) return x;
    if (auto it = memo.find(x); it != memo.end()) return it->second;
    if ((++looked & 1023) == 0 && std::chrono::steady_clock::now() > deadline_)
      throw OutOfTime("building the location's expression ran past the budget");
    ir::Expr r = x;
    if (x->op == ir::Op::Load) {
      auto lt = launch_tensor_.find(x->tensor());
      auto tv = tensor_value_.find(x->tensor());
      if (x->arg(0)->has_data()) r = no_symbolic("a memory index that depends on tensor data");
      else if (lt != launch_tensor_.end()) r = storage_read_symbolic(lt->second.second, x->arg(0), x->sort, true);
      else if (tv != tensor_value_.end() && !outside_data(tv->second))
        r = storage_read_symbolic(tv->second, x->arg(0), x->sort, false);
      // an equation built there may hold deferred reads of its own (a convolution over a kernel's output)
      if (r && r != x && reads_deferred(r)) r = resolve_reads_symbolic(r);
      failed = !r;
    } else if (x->op == ir::Op::TensorElem) {
      if (auto lt = launch_tensor_.find(x->tensor()); lt != launch_tensor_.end())
        r = storage_element(lt->second.second, x->index());
      else if (auto tv = tensor_value_.find(x->tensor()); tv != tensor_value_.end())
        r = storage_element(tv->second, x->index());
    } else if (x->op == ir::Op::Reduce) {
      // opened over fresh Vars, so that the reads inside have closed indices; closed again after
      ir::Box box = ir::reduce_box(x);
      std::vector<ir::Expr> ks;
      for (const auto& [lo, hi] : box) {
        if (hi <= lo) return memo[x] = x;
        ks.push_back(ctx_.var(fmt::format("open{}", opened_reductions_++), ir::Sort::BV64,
                              ir::Bounds{uint64_t(lo), uint64_t(hi - 1)}));
      }
      ir::Expr body = go(ir::instantiate_at(ctx_, x, ks));
      if (!failed) r = ctx_.reduce(x->reduce_op(), ks, box, body);
    } else if (x->nargs) {
      std::vector<ir::Expr> a;
      bool same = true;
      for (ir::Expr c : x->args()) {
        a.push_back(go(c));
        same &= a.back() == c;
      }
      if (!failed && !same) r = ctx_.rebuild(x, a);
    }
    memo[x] = r;
    return r;
  };
  ir::Expr r = go(e);
  return failed ? nullptr : r;
}

ir::Expr Lowering::from_aten(const program::SsaOp& op, const program::Write& w, ValueId v, int64_t j) {
  const auto& a = *op.aten();
  auto equation = [&](const aten::OpCall& call, int output, const std::vector<int64_t>& index) {
    ir::Expr e;
    try {
      e = aten::element(cx(), call, output, index);
    } catch (const aten::Unsupported& u) {
      throw Unsupported(fmt::format("aten op {} ({})", u.op(), u.reason()));
    } catch (const std::invalid_argument& e2) {
      throw Unsupported(fmt::format("aten op {}.{}: {}", a.name, a.overload, e2.what()));
    }
    return e;
  };
  for (size_t r = 0; r < op.results.size(); ++r) {
    const View& res = op.results[r];
    if (res.value != v) continue;
    int64_t l = logical_of_storage(res, j);
    if (l < 0) continue;
    ir::Expr e = equation(aten_call(op), int(r), unravel(res.shape, l));
    if (!defer_kernel_reads_ || template_ctx_ || !reads_deferred(e)) return e;
    if (ir::Expr resolved = resolve_reads_symbolic(e)) return resolved;
    // some kernel-written element read has no symbolic form: its reductions expanded term by term
    defer_kernel_reads_ = false;
    struct Restore {
      bool& flag;
      ~Restore() { flag = true; }
    } restore{defer_kernel_reads_};
    return equation(aten_call(op), int(r), unravel(res.shape, l));
  }
  std::map<std::string, const program::Operand*> reads;
  for (const auto& r : op.reads) reads[r.path] = &r;
  // Arguments written in place without being returned (training-mode batch norm's running_mean/var):
  // aten gives their new values as outputs returns+k, after the returned tensors.
  aten::WrittenArguments wa;
  std::vector<std::string> params;
  try {
    wa = aten::written_arguments(a.name, a.overload);
    if (!wa.names.empty()) params = aten::op_parameters(a.name, a.overload);
  } catch (const aten::Unsupported&) {  // no semantics: reported below if this element was written
  }
  for (size_t k = 0; k < wa.names.size(); ++k) {
    auto p = std::find(params.begin(), params.end(), wa.names[k]) - params.begin();
    std::string path = size_t(p) < a.args.size() ? fmt::format("args[{}]", p) : "kwargs." + wa.names[k];
    auto rd = reads.find(path);
    if (rd == reads.end()) continue;  // None (no running statistics)
    View written = rd->second->view;
    if (prog_.value(written.value).storage != prog_.value(v).storage) continue;
    written.value = v;
    int64_t l = logical_of_storage(written, j);
    if (l < 0) continue;
    aten::OpCall call = make_aten_call(op);  // the op's arguments; outputs: every written argument
    for (size_t q = 0; q < wa.names.size(); ++q) {  // every written argument, in order, as outputs
      auto pq = std::find(params.begin(), params.end(), wa.names[q]) - params.begin();
      std::string pp = size_t(pq) < a.args.size() ? fmt::format("args[{}]", pq) : "kwargs." + wa.names[q];
      auto rq = reads.find(pp);
      View wq = q == k || rq == reads.end() ? written : rq->second->view;
      call.outputs.push_back(aten_ref(wq, value_tensor(wq.value)));
    }
    return equation(call, wa.returns + int(k), unravel(written.shape, l));
  }
  for (const auto& region : w.regions)
    if (logical_of_storage(region, j) >= 0)
      throw Unsupported(fmt::format("aten op {} writes tensor {} without returning it", a.name, region.tensor));
  ir::Sort s = w.regions.empty() ? ir::Sort::Real : sort_of(w.regions.front().dtype);
  if (w.before == program::kNoValue) return cx().elem(value_tensor(v), j, s);
  return operand_element(w.before, j, s);
}

ir::Expr Lowering::from_copy(const program::SsaOp& op, const program::Write& w, int64_t j) {
  const auto& c = std::get<bundle::CopyOp>(op.op);
  const program::Operand* src = nullptr;
  for (const auto& r : op.reads)
    if (r.path == "src") src = &r;
  if (!src || w.regions.empty()) throw Unsupported("copy without source or destination");
  const View& dst = w.regions.front();
  unsigned es = bundle::element_size(dst.dtype);
  int64_t dst_first = dst.offset + c.dst.byte_offset.value_or(0) / es;
  int64_t n = c.nbytes / es;
  if (j < dst_first || j >= dst_first + n) return operand_element(w.before, j, sort_of(dst.dtype));
  int64_t src_first = src->view.offset + c.src.byte_offset.value_or(0) / es;
  return operand_element(src->view.value, src_first + (j - dst_first), sort_of(src->view.dtype));
}

LaunchInfo& Lowering::launch(size_t op_index) {
  if (auto it = launch_of_op_.find(op_index); it != launch_of_op_.end()) return launches_[it->second];
  const program::SsaOp& op = prog_.ops[op_index];
  const auto& l = std::get<bundle::LaunchOp>(op.op);
  // Parse (and inline) each PTX module once.
  auto mit = module_index_.find(l.module);
  if (mit == module_index_.end()) {
    const bundle::Module* bm = bundle_.find_module(l.module);
    if (!bm || !bm->ptx) throw Unsupported("launch of " + l.kernel + ": module " + l.module + " has no PTX");
    auto pm = std::make_unique<ParsedModule>();
    try {
      pm->module = ptx::parse(*bm->ptx);
      ptx::inline_calls(pm->module);
    } catch (const ptx::ParseError& e) {
      throw Unsupported(fmt::format("PTX of module {} line {}:{}: {}", l.module, e.line(), e.col(), e.reason()));
    } catch (const std::exception& e) {
      throw Unsupported(fmt::format("PTX of module {}: {}", l.module, e.what()));
    }
    mit = module_index_.emplace(l.module, modules_.size()).first;
    modules_.push_back(std::move(pm));
  }
  LaunchInfo info;
  info.op = op_index;
  info.kernel = l.kernel;
  exec::Launch launch;
  launch.grid = {uint32_t(l.grid[0]), uint32_t(l.grid[1]), uint32_t(l.grid[2])};
  launch.block = {uint32_t(l.block[0]), uint32_t(l.block[1]), uint32_t(l.block[2])};
  launch.dynamic_shared_bytes = uint64_t(l.shared_bytes);
  std::map<std::string, const program::Operand*> reads;
  for (const auto& r : op.reads) reads[r.path] = &r;
  std::map<int32_t, int32_t> storage_tensor;  // one ir tensor per storage the launch touches
  for (size_t i = 0; i < l.args.size(); ++i) {
    const auto& a = l.args[i].value;
    std::string path = fmt::format("args[{}]", i);
    if (std::holds_alternative<bundle::TensorRef>(a)) {
      const program::Operand* r = reads.at(path);
      const program::Value& val = prog_.value(r->view.value);
      auto [it, fresh] = storage_tensor.emplace(val.storage, 0);
      if (fresh) {
        it->second = ctx_.tensor(fmt::format("{}:L{}:s{}", prefix_, op_index, val.storage));
        for (const auto& w : op.writes)
          if (w.storage == val.storage) info.after[it->second] = w.after;
        launch_tensor_[it->second] = {launches_.size(), r->view.value};
      }
      unsigned es = bundle::element_size(r->view.dtype);
      uint64_t extent = uint64_t(prog_.storages[size_t(val.storage)].nbytes) / es;
      uint64_t byte_off = uint64_t(r->view.offset) * es + uint64_t(r->byte_offset.value_or(0));
      launch.params.push_back(exec::ParamBinding::tensor_arg(it->second, exec_dtype(r->view.dtype), extent, byte_off));
    } else if (const auto* s = std::get_if<bundle::Scalar>(&a)) {
      launch.params.push_back(bundle::is_float_scalar(s->type) ? exec::ParamBinding::float_arg(s->f)
                                                               : exec::ParamBinding::int_arg(s->i));
    } else if (const auto* p = std::get_if<bundle::PointerArg>(&a); p && p->address == 0) {
      // A null pointer (Triton's global/profile scratch when the kernel needs none) is a plain integer
      // to Execute: a kernel that never dereferences it runs; an access through it is UNSUPPORTED there
      // ("address not derived from a tensor parameter").
      launch.params.push_back(exec::ParamBinding::int_arg(0));
    } else if (std::holds_alternative<bundle::PointerArg>(a)) {
      throw Unsupported(fmt::format("kernel {} argument {} is a pointer into no traced tensor", l.kernel, i));
    } else {
      throw Unsupported(fmt::format("kernel {} argument {} is passed by value as raw bytes", l.kernel, i));
    }
  }
  info.result = std::make_shared<exec::ExecResult>(
      exec::execute(ctx_, modules_[mit->second]->module, l.kernel, launch, eopt_));
  info.resolver = std::make_shared<exec::Resolver>(ctx_, *info.result);
  any_summary_ = any_summary_ || info.result->loops_summarized > 0;
  launch_of_op_[op_index] = launches_.size();
  launches_.push_back(std::move(info));
  return launches_.back();
}

std::optional<Lowering::KernelWrite> Lowering::kernel_write(ValueId v) {
  const program::Value& val = prog_.value(v);
  if (val.producer < 0) return std::nullopt;
  const program::SsaOp& op = prog_.ops[size_t(val.producer)];
  if (!std::holds_alternative<bundle::LaunchOp>(op.op)) return std::nullopt;
  const program::Write* w = nullptr;
  for (const auto& cand : op.writes)
    if (cand.after == v) w = &cand;
  if (!w) throw Unsupported(fmt::format("{}: value {} has no write record", prog_.name, program::value_name(prog_, v)));
  LaunchInfo& L = launch(size_t(val.producer));
  if (L.result->unsupported) throw Unsupported(fmt::format("kernel {}: {}", L.kernel, *L.result->unsupported));
  KernelWrite kw{&L, -1, w->before, w->regions.empty() ? ir::Sort::Real : sort_of(w->regions.front().dtype)};
  for (const auto& [t, after] : L.after)
    if (after == w->after) kw.tensor = t;
  if (kw.tensor < 0) throw Unsupported("kernel " + L.kernel + ": written storage is no argument");
  return kw;
}

ir::Expr Lowering::from_launch(size_t, const program::Write& w, int64_t j) {
  KernelWrite kw = *kernel_write(w.after);
  LaunchInfo& L = *kw.launch;
  int32_t tensor = kw.tensor;
  std::vector<exec::Writer> writers;
  try {
    L.resolver->set_deadline(deadline_);
    writers = exec::writers_of(ctx_, *L.result, tensor, j, L.resolver.get(), false);
    write_values(L, writers);
  } catch (const exec::TimeLimit&) {  // the inversion ran past the budget
    throw OutOfTime("building the location's expression ran past the budget");
  }
  ir::Sort sort = kw.sort;
  auto before = [&]() -> ir::Expr {  // in the launch's context: project_leaves() maps it like the writes
    if (w.before == program::kNoValue) return ctx_.elem(value_tensor(w.after), j, sort);
    return ctx_.elem(value_tensor(w.before), j, sort);
  };
  if (writers.empty())
    return w.before == program::kNoValue ? cx().elem(value_tensor(w.after), j, sort) : project_leaves(before());
  // Plain stores: the last store of each thread counts; two threads storing different
  // values to one element is a write-write race (reported by check as an Execute BUG).
  bool all_store = true, all_acc = true;
  exec::WriteOp acc = L.result->writes[writers[0].write].op;
  for (const auto& wr : writers) {
    exec::WriteOp o = L.result->writes[wr.write].op;
    all_store = all_store && o == exec::WriteOp::Store;
    all_acc = all_acc && o == acc && o != exec::WriteOp::Store && o != exec::WriteOp::Other && o != exec::WriteOp::Exch;
  }
  ir::Expr result = nullptr;
  if (all_store) {
    const exec::Writer* last = &writers.back();
    for (const auto& wr : writers) {
      bool same_thread = wr.thread.tid.x == last->thread.tid.x && wr.thread.tid.y == last->thread.tid.y &&
                         wr.thread.tid.z == last->thread.tid.z && wr.thread.ctaid.x == last->thread.ctaid.x &&
                         wr.thread.ctaid.y == last->thread.ctaid.y && wr.thread.ctaid.z == last->thread.ctaid.z;
      if (!same_thread && wr.value != last->value)
        throw WriteRace(fmt::format("kernel {}: threads {} and {} store different values to element {} of {} "
                                    "(PTX lines {} and {})",
                                    L.kernel, wr.thread.str(), last->thread.str(), j,
                                    program::value_name(prog_, w.after),
                                    L.result->writes[wr.write].where.ptx_line,
                                    L.result->writes[last->write].where.ptx_line));
    }
    result = last->value;
  } else if (all_acc) {
    std::vector<ir::Expr> xs{before()};
    for (const auto& wr : writers) xs.push_back(wr.value);
    switch (acc) {
      case exec::WriteOp::Add: result = ctx_.add(xs); break;
      case exec::WriteOp::Min: result = ctx_.min(xs); break;
      case exec::WriteOp::Max: result = ctx_.max(xs); break;
      default: break;
    }
  }
  if (!result)
    throw Unsupported(fmt::format("kernel {}: element {} receives a mix of stores and atomics", L.kernel, j));
  return project_leaves(result);
}

// Each writer's value. Atomics of one thread position from many blocks (a block's tree of
// summarized partials, one atomicAdd per block) are built once for a symbolic block — the partials
// merged into one reduction there — and then specialized to each block: block by block, every
// block's partials would be built before anything merged them.
void Lowering::write_values(LaunchInfo& L, std::vector<exec::Writer>& writers) {
  std::map<std::pair<size_t, std::array<uint32_t, 3>>, std::vector<size_t>> groups;
  for (size_t i = 0; i < writers.size(); ++i) {
    const exec::WriteOp o = L.result->writes[writers[i].write].op;
    if (o == exec::WriteOp::Add || o == exec::WriteOp::Min || o == exec::WriteOp::Max) {
      const exec::Dim3& t = writers[i].thread.tid;
      groups[{writers[i].write, {t.x, t.y, t.z}}].push_back(i);
    }
  }
  for (const auto& [key, members] : groups) {
    if (members.size() < kBlockTemplateWriters) continue;
    const exec::Writer& w0 = writers[members[0]];
    std::optional<ir::Expr> v;
    try {
      v = L.resolver->specialize_tid(L.result->writes[key.first].value, w0.thread.tid);
    } catch (const std::runtime_error&) {  // per thread below, which reports it
    }
    if (!v) continue;
    ir::Expr merged = ir::contains_reduce(*v) ? ir::merge_interleaved(ctx_, *v) : *v;
    for (size_t i : members) writers[i].value = L.resolver->specialize_block(merged, writers[i].thread);
  }
  for (auto& w : writers)
    if (!w.value) w.value = L.resolver->specialize(L.result->writes[w.write].value, w.thread);
}

bool Lowering::input_read(ir::Expr load) const {
  return !load->arg(0)->has_data() && !launch_tensor_.count(load->tensor()) && !tensor_value_.count(load->tensor());
}

ir::Expr Lowering::summarized_reads(ir::Expr e) {
  if (!any_summary_ || !e->has_data() || !ir::contains_reduce(e)) return e;
  // A short loop's terms, expanded as stepping built them: next to the elements the loop's first and
  // remainder iterations leave outside the reduction they are one n-ary node the reference's
  // expanded form meets (a min over 128 channels: one element before the loop, 124 summarized, 3 left)
  // the partials of a strided loop, combined by a tree, are one reduction over the whole range first
  e = ir::expand_reductions(ctx_, ir::merge_interleaved(ctx_, e), kExpandedSummaryBelow);
  if (!ir::contains_reduce(e)) return e;
  std::unordered_map<ir::Expr, ir::Expr> map;
  bool expand = false;
  for (ir::Expr leaf : ir::leaves(e)) {
    if (leaf->op != ir::Op::Load || leaf->arg(0)->has_data()) continue;
    auto it = launch_tensor_.find(leaf->tensor());
    if (it == launch_tensor_.end()) continue;
    const SharedLeaf& sl = shared_leaf(it->second.second);
    // Execute proved the index inside the launch tensor's storage; that storage is the input
    // itself when the input's view starts at 0 and covers all of it
    if (input_is_its_storage(it->second.second)) map[leaf] = ctx_.load(sl.tensor, leaf->arg(0), sl.sort);
    else expand = true;
  }
  // reads of an intermediate value: what it holds at the read's symbolic index (a kernel's stored value
  // with its thread solved from the index, an ATen equation), else the summary's points one by one
  if (expand) {
    if (!template_ctx_)
      if (ir::Expr r = resolve_reads_symbolic(e)) return r;
    return ir::expand_reductions(ctx_, e, kMaxExpandedSummaryPoints);
  }
  if (map.empty()) return e;
  return ir::substitute(ctx_, e, [&](ir::Expr leaf) -> ir::Expr {
    auto it = map.find(leaf);
    return it == map.end() ? nullptr : it->second;
  });
}

ir::Expr Lowering::project_leaves(ir::Expr e) {
  e = summarized_reads(e);
  if (template_ctx_) {  // the template keeps launch/value tensor leaves (operand() resolves them)
    for (ir::Expr leaf : ir::leaves(e))
      if (leaf->op == ir::Op::Load && !input_read(leaf))
        throw Unsupported("a memory index depends on tensor data (" + ir::to_string(ctx_, leaf, {.max_nodes = 12}) + ")");
      else if (leaf->op == ir::Op::Var)
        throw Unsupported("a value still depends on thread identity after specialization (" +
                          std::string(leaf->name()) + ")");
    return template_ctx_->import(e);
  }
  // memo hits and the substitution below never reach compute()'s clock: look here too
  uint32_t looked = 0;
  auto tick = [&] {
    if ((++looked & 1023) == 0 && std::chrono::steady_clock::now() > deadline_)
      throw OutOfTime("building the location's expression ran past the budget");
  };
  std::unordered_map<ir::Expr, ir::Expr> map;
  for (ir::Expr leaf : ir::leaves(e)) {
    tick();
    switch (leaf->op) {
      case ir::Op::TensorElem: {
        int32_t t = leaf->tensor();
        if (auto it = launch_tensor_.find(t); it != launch_tensor_.end()) {
          map[leaf] = storage_element(it->second.second, leaf->index());
        } else if (auto it2 = tensor_value_.find(t); it2 != tensor_value_.end()) {
          ir::Expr r = storage_element(it2->second, leaf->index());
          if (r != leaf) map[leaf] = r;
        }
        break;
      }
      case ir::Op::Load:
        if (input_read(leaf)) break;
        throw Unsupported("a memory index depends on tensor data (" +
                          ir::to_string(ctx_, leaf, {.max_nodes = 12}) + ")");
      case ir::Op::Var:
        throw Unsupported("a value still depends on thread identity after specialization (" +
                          std::string(leaf->name()) + ")");
      default: break;
    }
  }
  if (map.empty()) return e;
  return ir::substitute(ctx_, e, [&](ir::Expr leaf) -> ir::Expr {
    tick();
    auto it = map.find(leaf);
    return it == map.end() ? nullptr : it->second;
  });
}

void Lowering::execute_all() {
  for (size_t i = merged_.prefix; i < prog_.ops.size(); ++i)
    if (std::holds_alternative<bundle::LibraryOp>(prog_.ops[i].op)) library_call(i);  // unmodeled -> UNSUPPORTED
  for (size_t i = merged_.prefix; i < prog_.ops.size(); ++i)
    if (std::holds_alternative<bundle::LaunchOp>(prog_.ops[i].op)) {
      LaunchInfo& L = launch(i);
      if (L.result->unsupported) throw Unsupported(fmt::format("kernel {}: {}", L.kernel, *L.result->unsupported));
    }
}

std::vector<exec::Finding> Lowering::findings() const {
  std::vector<exec::Finding> out;
  for (const auto& L : launches_) out.insert(out.end(), L.result->findings.begin(), L.result->findings.end());
  out.insert(out.end(), library_findings_.begin(), library_findings_.end());
  return out;
}

}  // namespace dirigo::check
