#include "blas/blas.h"

#include "ir/eval.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dirigo::blas {
namespace {

using nlohmann::json;

// The op's arguments by key, with JSON values parsed once.
class Args {
 public:
  Args(const bundle::LibraryOp& op) : name_(op.name) {
    for (const auto& [k, v] : op.args) {
      if (std::holds_alternative<bundle::TensorRef>(v)) {
        tensors_.insert(k);
      } else {
        try {
          values_[k] = json::parse(std::get<bundle::RawJson>(v).text);
        } catch (const json::exception&) {
          throw Unsupported(fmt::format("{} argument {} is not valid JSON", name_, k));
        }
      }
    }
  }
  bool has(const std::string& k) const { return tensors_.count(k) || values_.count(k); }
  bool is_tensor(const std::string& k) const { return tensors_.count(k) > 0; }
  const json* value(const std::string& k) const {
    auto it = values_.find(k);
    return it == values_.end() ? nullptr : &it->second;
  }
  int64_t integer(const std::string& k) const {
    const json* v = value(k);
    if (!v || !v->is_number_integer())
      throw Unsupported(fmt::format("{} argument {} is missing or not an integer", name_, k));
    return v->get<int64_t>();
  }
  int64_t integer_or(const std::string& k, int64_t dflt) const { return value(k) ? integer(k) : dflt; }
  bool trans(const std::string& k) const {
    const json* v = value(k);
    if (!v || !v->is_string()) throw Unsupported(fmt::format("{} argument {} is missing", name_, k));
    std::string s = v->get<std::string>();
    if (s == "N") return false;
    if (s == "T" || s == "C") return true;  // real data: conjugate transpose == transpose
    throw Unsupported(fmt::format("{} argument {} is the operation '{}'", name_, k, s));
  }
  // A pointer argument that must be bound to a traced tensor.
  std::string pointer(const std::string& k) const {
    if (is_tensor(k)) return k;
    if (const json* v = value(k); v && v->is_object() && v->contains("pointer"))
      throw Unsupported(fmt::format("{} argument {} is a pointer into no traced tensor ({})", name_, k,
                                    (*v)["pointer"].dump()));
    throw Unsupported(fmt::format("{} argument {} is missing", name_, k));
  }
  Scalar scalar(const std::string& k) const {
    Scalar s;
    if (is_tensor(k + "_ptr")) {
      s.ptr_key = k + "_ptr";
      return s;
    }
    const json* v = value(k);
    if (v && v->is_number()) {
      s.value = v->get<double>();
    } else if (v && v->is_string()) {
      std::string t = v->get<std::string>();
      if (t == "nan") s.value = std::numeric_limits<double>::quiet_NaN();
      else if (t == "inf") s.value = std::numeric_limits<double>::infinity();
      else if (t == "-inf") s.value = -std::numeric_limits<double>::infinity();
    }
    if (!s.value) throw Unsupported(fmt::format("{} argument {} has no value and no device tensor", name_, k));
    if (!std::isfinite(*s.value)) throw Unsupported(fmt::format("{} argument {} is not finite", name_, k));
    return s;
  }

 private:
  std::string name_;
  std::set<std::string> tensors_;
  std::map<std::string, json> values_;
};

void invalid(Call& c, std::string why) {
  if (c.valid) {
    c.valid = false;
    c.invalid_reason = std::move(why);
  }
}

// A column-major matrix needs ld >= max(1, rows), as cuBLAS itself checks (CUBLAS_STATUS_INVALID_VALUE).
void require_leading_dimensions(Call& c) {
  for (auto [m, name] : {std::pair{&c.A, "lda"}, {&c.B, "ldb"}, {&c.C, "ldc"}})
    if (m->ld < std::max<int64_t>(1, m->rows)) invalid(c, fmt::format("{} = {} < {}", name, m->ld, m->rows));
}

// The matrix and vectors of a level-2 call (gemv, ger): A is m x n column-major.
void require_matrix_vector(Call& c) {
  if (c.m < 0 || c.n < 0) invalid(c, "a negative size");
  if (c.A.ld < std::max<int64_t>(1, c.m)) invalid(c, fmt::format("lda = {} < {}", c.A.ld, c.m));
  if (c.x.inc == 0 || c.y.inc == 0) invalid(c, "incx or incy is 0");
}

// The stored matrix of an operand op(X) of rows x cols: X itself is cols x rows where op transposes.
Matrix operand(const char* key, bool trans, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
  return {key, trans ? cols : rows, trans ? rows : cols, ld, stride, false};
}

void require_f32(const Args& a, const std::string& name, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (a.has(k) && a.integer(k) != 0)  // CUDA_R_32F
      throw Unsupported(fmt::format("{} with {} = cudaDataType {} (only CUDA_R_32F is modeled)", name, k,
                                    a.integer(k)));
}

void compute_type(const Args& a, Call& c) {
  if (!a.has("computeType")) return;
  int64_t ct = a.integer("computeType");
  switch (ct) {
    case 68: case 69: break;  // CUBLAS_COMPUTE_32F, _PEDANTIC
    case 74: case 75: case 77:
      c.notes.push_back(fmt::format("computeType {} lets cuBLAS round inputs to TF32/fp16/bf16; modeled as fp32", ct));
      break;
    default: throw Unsupported(fmt::format("{} with computeType {} (only the fp32 compute types are modeled)", c.name, ct));
  }
}

std::string batch_key(const Call& c, const char* k, int64_t b) {
  return c.pointer_arrays ? fmt::format("{}[{}]", k, b) : std::string(k);
}

// op(A) and op(B) of the calls that take transa and transb.
void read_ops(const Args& a, Call& c) {
  c.ta = a.trans("transa");
  c.tb = a.trans("transb");
}

// The sizes m, n (and k where the call has it), then the scalar alpha (and beta where it has it).
void read_sizes_and_scalars(const Args& a, Call& c, bool with_k, bool with_beta) {
  c.m = a.integer("m");
  c.n = a.integer("n");
  if (with_k) c.k = a.integer("k");
  c.alpha = a.scalar("alpha");
  if (with_beta) c.beta = a.scalar("beta");
}

void parse_gemm(const Args& a, Call& c) {
  c.kind = Kind::Gemm;
  read_ops(a, c);
  read_sizes_and_scalars(a, c, true, true);
  c.batch = a.integer_or("batchCount", 1);
  c.pointer_arrays = c.name == "cublasSgemmBatched";
  for (int64_t b = 0; b < (c.pointer_arrays ? c.batch : 1); ++b)
    for (const char* k : {"A", "B", "C"}) {
      bool needed = k[0] == 'C' || !c.alpha.is(0);  // alpha == 0: A and B are not read (may be null)
      if (needed) a.pointer(batch_key(c, k, b));
    }
  c.A = operand("A", c.ta, c.m, c.k, a.integer("lda"), a.integer_or("strideA", 0));
  c.B = operand("B", c.tb, c.k, c.n, a.integer("ldb"), a.integer_or("strideB", 0));
  c.C = operand("C", false, c.m, c.n, a.integer("ldc"), a.integer_or("strideC", 0));
  c.D = c.C;
  require_f32(a, c.name, {"Atype", "Btype", "Ctype"});
  compute_type(a, c);
  if (c.m < 0 || c.n < 0 || c.k < 0 || c.batch < 0) invalid(c, "a negative size");
  require_leading_dimensions(c);
}

void parse_geam(const Args& a, Call& c) {
  c.kind = Kind::Geam;
  read_ops(a, c);
  read_sizes_and_scalars(a, c, false, true);
  if (!c.alpha.is(0)) a.pointer("A");
  if (!c.beta.is(0)) a.pointer("B");
  a.pointer("C");
  c.A = operand("A", c.ta, c.m, c.n, a.integer("lda"), 0);
  c.B = operand("B", c.tb, c.m, c.n, a.integer("ldb"), 0);
  c.C = operand("C", false, c.m, c.n, a.integer("ldc"), 0);
  c.D = c.C;
  if (c.m < 0 || c.n < 0) invalid(c, "a negative size");
  require_leading_dimensions(c);
}

void parse_gemv(const Args& a, Call& c) {
  c.kind = Kind::Gemv;
  c.ta = a.trans("trans");
  read_sizes_and_scalars(a, c, false, true);
  for (const char* k : {"A", "x", "y"}) a.pointer(k);
  c.A = {"A", c.m, c.n, a.integer("lda"), 0, false};
  int64_t lx = c.ta ? c.m : c.n, ly = c.ta ? c.n : c.m;
  c.x = {"x", lx, a.integer("incx")};
  c.y = {"y", ly, a.integer("incy")};
  require_matrix_vector(c);
}

void parse_ger(const Args& a, Call& c) {
  c.kind = Kind::Ger;
  read_sizes_and_scalars(a, c, false, false);
  for (const char* k : {"x", "y", "A"}) a.pointer(k);
  c.A = {"A", c.m, c.n, a.integer("lda"), 0, false};
  c.x = {"x", c.m, a.integer("incx")};
  c.y = {"y", c.n, a.integer("incy")};
  require_matrix_vector(c);
}

void parse_level1(const Args& a, Call& c) {
  int64_t n = a.integer("n");
  if (c.name == "cublasSaxpy_v2") {
    c.kind = Kind::Axpy;
    c.alpha = a.scalar("alpha");
  } else if (c.name == "cublasSscal_v2") {
    c.kind = Kind::Scal;
    c.alpha = a.scalar("alpha");
  } else {
    c.kind = Kind::Dot;
    if (a.has("result")) c.result_key = a.pointer("result");
  }
  c.x = {a.pointer("x"), n, a.integer("incx")};
  if (c.kind != Kind::Scal) c.y = {a.pointer("y"), n, a.integer("incy")};
  if (n < 0) c.x.n = c.y.n = 0;  // cuBLAS: n <= 0 computes nothing
  if (c.kind == Kind::Scal && c.x.inc <= 0) invalid(c, "incx <= 0 (sscal does nothing)");
}

// A cuBLASLt matrix layout from its recorded attributes.
Matrix lt_layout(const Args& a, const std::string& name, const std::string& key) {
  const json* d = a.value(key + "desc");
  if (!d || !d->is_object()) throw Unsupported(fmt::format("{} has no layout {}desc", name, key));
  auto get = [&](const char* f, int64_t dflt) -> int64_t {
    return d->contains(f) && (*d)[f].is_number_integer() ? (*d)[f].get<int64_t>() : dflt;
  };
  if (get("type", 0) != 0)
    throw Unsupported(fmt::format("{} layout {}desc has cudaDataType {} (only CUDA_R_32F is modeled)", name, key,
                                  get("type", 0)));
  int64_t order = get("order", 0);
  if (order != 0 && order != 1)
    throw Unsupported(fmt::format("{} layout {}desc has order {} (only COL and ROW are modeled)", name, key, order));
  return {key, get("rows", 0), get("cols", 0), get("ld", 0), get("stride", 0), order == 1};
}

void parse_lt(const Args& a, Call& c) {
  c.kind = Kind::LtMatmul;
  read_ops(a, c);
  if (a.integer_or("scaleType", 0) != 0)
    throw Unsupported(fmt::format("{} with scaleType {} (only CUDA_R_32F is modeled)", c.name, a.integer("scaleType")));
  int64_t pm = a.integer_or("lt_pointer_mode", 0);
  if (pm != 0 && pm != 1) throw Unsupported(fmt::format("{} with pointer mode {} (vector alpha)", c.name, pm));
  compute_type(a, c);
  c.alpha = a.scalar("alpha");
  c.beta = a.scalar("beta");
  c.epilogue = int(a.integer_or("epilogue", 1));
  int rest = c.epilogue & ~(1 | kEpiRelu | kEpiBias | kEpiGelu);
  if (rest || ((c.epilogue & kEpiRelu) && (c.epilogue & kEpiGelu)))
    throw Unsupported(fmt::format("{} with epilogue {} (modeled: DEFAULT, RELU, BIAS, GELU and their bias forms)",
                                  c.name, c.epilogue));
  if (c.epilogue & kEpiBias) {
    c.bias_key = a.pointer("bias");
    int64_t bt = a.integer_or("bias_dtype", -1);
    if (bt != -1 && bt != 0) throw Unsupported(fmt::format("{} with a bias of cudaDataType {}", c.name, bt));
    c.bias_stride = a.integer_or("bias_batch_stride", 0);
  }
  for (const char* k : {"A", "B", "D"}) a.pointer(k);
  c.A = lt_layout(a, c.name, "A");
  c.B = lt_layout(a, c.name, "B");
  c.C = lt_layout(a, c.name, "C");
  c.D = lt_layout(a, c.name, "D");
  if (!c.beta.is(0)) a.pointer("C");
  c.m = c.D.rows;
  c.n = c.D.cols;
  c.k = c.ta ? c.A.rows : c.A.cols;
  const json* dd = a.value("Ddesc");
  c.batch = dd->contains("batch") && (*dd)["batch"].is_number_integer() ? (*dd)["batch"].get<int64_t>() : 1;
  if ((c.ta ? c.A.cols : c.A.rows) != c.m || (c.tb ? c.B.cols : c.B.rows) != c.k ||
      (c.tb ? c.B.rows : c.B.cols) != c.n || c.C.rows != c.m || c.C.cols != c.n)
    invalid(c, "the layouts' shapes do not agree");
  for (const Matrix* x : {&c.A, &c.B, &c.C, &c.D})
    if (x->ld < std::max<int64_t>(1, x->row_major ? x->cols : x->rows))
      invalid(c, fmt::format("ld of {} = {} is smaller than its {}", x->key, x->ld, x->row_major ? "cols" : "rows"));
}

// [lo, hi) covered by a matrix with `batch` entries.
Extent matrix_extent(const Matrix& x, int64_t batch, bool write, const std::string& key) {
  if (x.rows <= 0 || x.cols <= 0 || batch <= 0) return {key, 0, 0, write};
  int64_t last = x.at(x.rows - 1, x.cols - 1);
  int64_t lo = std::min<int64_t>(0, (batch - 1) * x.stride), hi = std::max<int64_t>(0, (batch - 1) * x.stride);
  return {key, lo, hi + last + 1, write};
}

Extent vector_extent(const Vector& v, bool write) {
  if (v.n <= 0) return {v.key, 0, 0, write};
  return {v.key, 0, (v.n - 1) * std::abs(v.inc) + 1, write};
}

// Logical element of a vector at element offset `off`, or -1.
int64_t vector_index(const Vector& v, int64_t off) {
  int64_t s = std::abs(v.inc);
  if (off < 0 || s == 0 || off % s != 0 || off / s >= v.n) return -1;
  int64_t p = off / s;
  return v.inc > 0 ? p : v.n - 1 - p;
}

// (i, j) of matrix x at relative offset r, when r is one of its elements.
std::optional<std::pair<int64_t, int64_t>> matrix_index(const Matrix& x, int64_t r) {
  if (r < 0 || x.ld <= 0) return std::nullopt;
  int64_t i = x.row_major ? r / x.ld : r % x.ld, j = x.row_major ? r % x.ld : r / x.ld;
  if (i < x.rows && j < x.cols) return std::make_pair(i, j);
  return std::nullopt;
}

ir::Expr scalar_expr(ir::Context& ctx, const Scalar& s, const Reader& read) {
  return s.value ? ctx.real_const_from_double(*s.value) : read(s.ptr_key, 0);
}

// alpha * op(A)op(B) [+ beta * Cold] [+ bias] and the epilogue, at (b, i, j).
ir::Expr gemm_value(ir::Context& ctx, const Call& c, int64_t b, int64_t i, int64_t j, const Reader& read,
                    const ProductsReader* products) {
  ir::Expr acc = nullptr;
  if (!c.alpha.is(0) && c.k > 0) {
    std::string ka = batch_key(c, "A", b), kb = batch_key(c, "B", b);
    int64_t oa = c.pointer_arrays ? 0 : b * c.A.stride, ob = c.pointer_arrays ? 0 : b * c.B.stride;
    auto a_at = [&](int64_t l) { return oa + (c.ta ? c.A.at(l, i) : c.A.at(i, l)); };
    auto b_at = [&](int64_t l) { return ob + (c.tb ? c.B.at(j, l) : c.B.at(l, j)); };
    ir::Expr product;
    if (products) {  // both offsets are affine in l
      Products p{ka, kb, a_at(0), c.k > 1 ? a_at(1) - a_at(0) : 0, b_at(0), c.k > 1 ? b_at(1) - b_at(0) : 0, c.k};
      product = (*products)(p);
    } else {
      std::vector<ir::Expr> terms;
      terms.reserve(size_t(c.k));
      for (int64_t l = 0; l < c.k; ++l) terms.push_back(ctx.mul(read(ka, a_at(l)), read(kb, b_at(l))));
      product = ctx.add(terms);
    }
    acc = c.alpha.is(1) ? product : ctx.mul(scalar_expr(ctx, c.alpha, read), product);
  }
  if (!acc) acc = ctx.real_const(0);
  if (!c.beta.is(0)) {
    std::string kc = batch_key(c, "C", b);
    ir::Expr old = read(kc, (c.pointer_arrays ? 0 : b * c.C.stride) + c.C.at(i, j));
    if (c.beta.is(1)) {
      acc = ctx.add(old, acc);
    } else {
      ir::Expr beta = scalar_expr(ctx, c.beta, read);
      ir::Expr with_c = ctx.add(ctx.mul(beta, old), acc);
      // a device beta is only known at run time: cuBLAS skips C when it is 0
      acc = c.beta.value ? with_c : ctx.ite(ctx.eq(beta, ctx.real_const(0)), acc, with_c);
    }
  }
  if (c.kind == Kind::LtMatmul) {
    if (c.epilogue & kEpiBias) acc = ctx.add(acc, read(c.bias_key, b * c.bias_stride + i));
    if (c.epilogue & kEpiRelu) acc = ctx.max(acc, ctx.real_const(0));
    if (c.epilogue & kEpiGelu) acc = ctx.call(ir::Fn::GeluTanh, acc);
  }
  return acc;
}

}  // namespace

Call parse(const bundle::LibraryOp& op) {
  if (op.library != "cublas") throw Unsupported(fmt::format("library {} ({}) is not modeled", op.library, op.name));
  Call c;
  c.name = op.name;
  Args a(op);
  if (const auto* v = a.value("modeled"); v && v->is_boolean() && !v->get<bool>())
    throw Unsupported(fmt::format("cuBLAS function {} is not modeled", op.name));
  if (const auto* v = a.value("math_mode"); v && v->is_number_integer() && v->get<int64_t>() == 3)
    c.notes.push_back("the handle's math mode is CUBLAS_TF32_TENSOR_OP_MATH; modeled as fp32");
  const std::string& n = op.name;
  if (n == "cublasSgemm_v2" || n == "cublasGemmEx" || n == "cublasSgemmStridedBatched" ||
      n == "cublasGemmStridedBatchedEx" || n == "cublasSgemmBatched")
    parse_gemm(a, c);
  else if (n == "cublasSgeam")
    parse_geam(a, c);
  else if (n == "cublasSgemv_v2")
    parse_gemv(a, c);
  else if (n == "cublasSger_v2")
    parse_ger(a, c);
  else if (n == "cublasSaxpy_v2" || n == "cublasSscal_v2" || n == "cublasSdot_v2")
    parse_level1(a, c);
  else if (n == "cublasLtMatmul")
    parse_lt(a, c);
  else
    throw Unsupported(fmt::format("cuBLAS function {} is not modeled", n));
  return c;
}

std::vector<std::string> output_keys(const Call& c) {
  switch (c.kind) {
    case Kind::Gemm:
      if (c.pointer_arrays) {
        std::vector<std::string> ks;
        for (int64_t b = 0; b < c.batch; ++b) ks.push_back(fmt::format("C[{}]", b));
        return ks;
      }
      return {"C"};
    case Kind::Geam: return {"C"};
    case Kind::LtMatmul: return {"D"};
    case Kind::Gemv: return {c.y.key};
    case Kind::Ger: return {"A"};
    case Kind::Axpy: return {c.y.key};
    case Kind::Scal: return {c.x.key};
    case Kind::Dot: return c.result_key.empty() ? std::vector<std::string>{} : std::vector<std::string>{c.result_key};
  }
  return {};
}

std::vector<Extent> extents(const Call& c) {
  std::vector<Extent> out;
  if (!c.valid) return out;
  auto scalars = [&] {
    for (const Scalar* s : {&c.alpha, &c.beta})
      if (!s->ptr_key.empty()) out.push_back({s->ptr_key, 0, 1, false});
  };
  switch (c.kind) {
    case Kind::Gemm:
    case Kind::LtMatmul: {
      if (c.m == 0 || c.n == 0) return out;
      scalars();
      int64_t per = c.pointer_arrays ? 1 : c.batch;
      int64_t entries = c.pointer_arrays ? c.batch : 1;
      for (int64_t b = 0; b < entries; ++b) {
        if (!c.alpha.is(0) && c.k > 0) {
          out.push_back(matrix_extent(c.A, per, false, batch_key(c, "A", b)));
          out.push_back(matrix_extent(c.B, per, false, batch_key(c, "B", b)));
        }
        if (!c.beta.is(0)) out.push_back(matrix_extent(c.C, per, false, batch_key(c, "C", b)));
        const Matrix& o = c.kind == Kind::LtMatmul ? c.D : c.C;
        out.push_back(matrix_extent(o, per, true, c.kind == Kind::LtMatmul ? "D" : batch_key(c, "C", b)));
      }
      if (c.kind == Kind::LtMatmul && (c.epilogue & kEpiBias))
        out.push_back({c.bias_key, std::min<int64_t>(0, (c.batch - 1) * c.bias_stride),
                       std::max<int64_t>(0, (c.batch - 1) * c.bias_stride) + c.m, false});
      return out;
    }
    case Kind::Geam:
      if (c.m == 0 || c.n == 0) return out;
      scalars();
      if (!c.alpha.is(0)) out.push_back(matrix_extent(c.A, 1, false, "A"));
      if (!c.beta.is(0)) out.push_back(matrix_extent(c.B, 1, false, "B"));
      out.push_back(matrix_extent(c.C, 1, true, "C"));
      return out;
    case Kind::Gemv:
      if (c.m == 0 || c.n == 0) return out;
      scalars();
      out.push_back(matrix_extent(c.A, 1, false, "A"));
      out.push_back(vector_extent(c.x, false));
      out.push_back(vector_extent(c.y, true));
      return out;
    case Kind::Ger:
      if (c.m == 0 || c.n == 0 || c.alpha.is(0)) return out;
      scalars();
      out.push_back(vector_extent(c.x, false));
      out.push_back(vector_extent(c.y, false));
      out.push_back(matrix_extent(c.A, 1, true, "A"));
      return out;
    case Kind::Axpy:
    case Kind::Dot:
      if (c.x.n <= 0) return out;
      scalars();
      out.push_back(vector_extent(c.x, false));
      out.push_back(vector_extent(c.y, c.kind == Kind::Axpy));
      if (!c.result_key.empty()) out.push_back({c.result_key, 0, 1, true});
      return out;
    case Kind::Scal:
      if (c.x.n <= 0) return out;
      scalars();
      out.push_back(vector_extent(c.x, true));
      return out;
  }
  return out;
}

std::optional<ir::Expr> element(ir::Context& ctx, const Call& c, const std::string& key, int64_t off,
                                const Reader& read, const ProductsReader* products) {
  if (!c.valid) return std::nullopt;
  switch (c.kind) {
    case Kind::Gemm:
    case Kind::LtMatmul: {
      if (c.m == 0 || c.n == 0) return std::nullopt;
      // cuBLAS returns early when nothing changes
      if ((c.alpha.is(0) || c.k == 0) && c.beta.is(1) && c.kind == Kind::Gemm) return std::nullopt;
      const Matrix& o = c.kind == Kind::LtMatmul ? c.D : c.C;
      if (c.pointer_arrays) {
        if (key.rfind("C[", 0) != 0) return std::nullopt;
        int64_t b = std::stoll(key.substr(2));
        auto ij = matrix_index(o, off);
        if (!ij) return std::nullopt;
        return gemm_value(ctx, c, b, ij->first, ij->second, read, products);
      }
      if (key != (c.kind == Kind::LtMatmul ? "D" : "C")) return std::nullopt;
      if (c.batch > 1 && o.stride == 0)
        throw Unsupported(fmt::format("{}: every batch entry writes the same output (stride 0)", c.name));
      std::optional<std::tuple<int64_t, int64_t, int64_t>> hit;
      int64_t one = o.at(o.rows - 1, o.cols - 1) + 1;  // extent of one entry
      int64_t b_lo = 0, b_hi = c.batch - 1;
      if (o.stride > 0) {
        b_hi = std::min(b_hi, off / o.stride);
        b_lo = std::max<int64_t>(0, (off - one + o.stride) / o.stride);
      }
      for (int64_t b = b_lo; b <= b_hi; ++b) {
        auto ij = matrix_index(o, off - b * o.stride);
        if (!ij) continue;
        if (hit)
          throw Unsupported(fmt::format("{}: batch entries {} and {} write the same element (overlapping outputs)",
                                        c.name, std::get<0>(*hit), b));
        hit = std::make_tuple(b, ij->first, ij->second);
      }
      if (!hit) return std::nullopt;
      return gemm_value(ctx, c, std::get<0>(*hit), std::get<1>(*hit), std::get<2>(*hit), read, products);
    }
    case Kind::Geam: {
      if (key != "C") return std::nullopt;
      auto ij = matrix_index(c.C, off);
      if (!ij) return std::nullopt;
      auto [i, j] = *ij;
      std::vector<ir::Expr> parts;
      if (!c.alpha.is(0)) {
        ir::Expr v = read("A", c.ta ? c.A.at(j, i) : c.A.at(i, j));
        parts.push_back(c.alpha.is(1) ? v : ctx.mul(scalar_expr(ctx, c.alpha, read), v));
      }
      if (!c.beta.is(0)) {
        ir::Expr v = read("B", c.tb ? c.B.at(j, i) : c.B.at(i, j));
        parts.push_back(c.beta.is(1) ? v : ctx.mul(scalar_expr(ctx, c.beta, read), v));
      }
      return parts.empty() ? ctx.real_const(0) : ctx.add(parts);
    }
    case Kind::Gemv: {
      if (key != c.y.key || c.m == 0 || c.n == 0) return std::nullopt;
      if (c.alpha.is(0) && c.beta.is(1)) return std::nullopt;
      int64_t i = vector_index(c.y, off);
      if (i < 0) return std::nullopt;
      ir::Expr acc = nullptr;
      if (!c.alpha.is(0)) {
        std::vector<ir::Expr> terms;
        for (int64_t l = 0; l < c.x.n; ++l)
          terms.push_back(ctx.mul(read("A", c.ta ? c.A.at(l, i) : c.A.at(i, l)), read(c.x.key, c.x.at(l))));
        ir::Expr product = ctx.add(terms);
        acc = c.alpha.is(1) ? product : ctx.mul(scalar_expr(ctx, c.alpha, read), product);
      }
      if (!acc) acc = ctx.real_const(0);
      if (!c.beta.is(0)) {
        ir::Expr old = read(c.y.key, off);
        if (c.beta.is(1)) return ctx.add(old, acc);
        ir::Expr beta = scalar_expr(ctx, c.beta, read);
        ir::Expr with_y = ctx.add(ctx.mul(beta, old), acc);
        return c.beta.value ? with_y : ctx.ite(ctx.eq(beta, ctx.real_const(0)), acc, with_y);
      }
      return acc;
    }
    case Kind::Ger: {
      if (key != "A" || c.m == 0 || c.n == 0 || c.alpha.is(0)) return std::nullopt;  // alpha 0: quick return
      auto ij = matrix_index(c.A, off);
      if (!ij) return std::nullopt;
      ir::Expr xy = ctx.mul(read(c.x.key, c.x.at(ij->first)), read(c.y.key, c.y.at(ij->second)));
      return ctx.add(read("A", off), c.alpha.is(1) ? xy : ctx.mul(scalar_expr(ctx, c.alpha, read), xy));
    }
    case Kind::Axpy: {
      if (key != c.y.key || c.alpha.is(0)) return std::nullopt;
      int64_t i = vector_index(c.y, off);
      if (i < 0) return std::nullopt;
      ir::Expr x = read(c.x.key, c.x.at(i));
      return ctx.add(read(c.y.key, off), c.alpha.is(1) ? x : ctx.mul(scalar_expr(ctx, c.alpha, read), x));
    }
    case Kind::Scal: {
      if (key != c.x.key) return std::nullopt;
      int64_t i = vector_index(c.x, off);
      if (i < 0) return std::nullopt;
      return ctx.mul(scalar_expr(ctx, c.alpha, read), read(c.x.key, off));
    }
    case Kind::Dot: {
      if (c.result_key.empty() || key != c.result_key || off != 0) return std::nullopt;
      std::vector<ir::Expr> terms;
      for (int64_t i = 0; i < c.x.n; ++i) terms.push_back(ctx.mul(read(c.x.key, c.x.at(i)), read(c.y.key, c.y.at(i))));
      return terms.empty() ? ctx.real_const(0) : ctx.add(terms);
    }
  }
  return std::nullopt;
}

bundle::LibraryOp library_op_from_json(const std::string& text) {
  json j = json::parse(text);
  bundle::LibraryOp op;
  op.library = j.value("library", "cublas");
  op.name = j.at("name").get<std::string>();
  for (const auto& [k, v] : j.at("args").items()) {
    if (v.is_object() && v.contains("tensor"))
      op.args.emplace_back(k, bundle::TensorRef{v["tensor"].get<std::string>(), v.value("byte_offset", int64_t(0))});
    else
      op.args.emplace_back(k, bundle::RawJson{v.dump()});
  }
  if (j.contains("writes")) op.writes = j["writes"].get<std::vector<std::string>>();
  return op;
}

Buffers evaluate(const bundle::LibraryOp& op, const Buffers& before) {
  Call call = parse(op);
  std::map<std::string, std::pair<std::string, int64_t>> ptr;  // argument -> (buffer, first element)
  for (const auto& [k, v] : op.args)
    if (const auto* t = std::get_if<bundle::TensorRef>(&v)) ptr[k] = {t->tensor, t->byte_offset.value_or(0) / 4};
  ir::Context ctx;
  std::map<std::string, int32_t> ids;
  std::map<int32_t, const std::vector<double>*> data;
  for (const auto& [name, v] : before) {
    ids[name] = ctx.tensor(name);
    data[ids[name]] = &v;
  }
  auto where = [&](const std::string& key) {
    auto it = ptr.find(key);
    if (it == ptr.end() || !ids.count(it->second.first)) throw std::out_of_range("argument " + key + " names no buffer");
    return it->second;
  };
  Reader read = [&](const std::string& key, int64_t off) {
    auto [buf, base] = where(key);
    int64_t i = base + off;
    if (i < 0 || i >= int64_t(before.at(buf).size()))
      throw std::out_of_range(fmt::format("read of {} outside buffer {} (element {})", key, buf, i));
    return ctx.elem(ids[buf], i);
  };
  ir::Env env;
  env.elem = [&](int32_t t, int64_t i, ir::Sort) { return ir::Value::of_real((*data.at(t))[size_t(i)]); };
  ir::Evaluator ev(env, ir::Precision::F64);
  Buffers after;
  for (const auto& e : extents(call)) {
    if (!e.write) continue;
    auto [buf, base] = where(e.key);
    auto& out = after.try_emplace(buf, before.at(buf)).first->second;
    for (int64_t off = e.lo; off < e.hi; ++off)
      if (auto v = element(ctx, call, e.key, off, read)) {
        if (base + off < 0 || base + off >= int64_t(out.size()))
          throw std::out_of_range(fmt::format("write of {} outside buffer {} (element {})", e.key, buf, base + off));
        out[size_t(base + off)] = ev.real(*v);
      }
  }
  return after;
}

}  // namespace dirigo::blas
