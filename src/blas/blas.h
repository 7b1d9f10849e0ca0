// cuBLAS / cuBLASLt calls as first-class operations: per-element equations of the functions dirigo models,
// in cuBLAS's own conventions, over a traced "library" op (docs/bundle-format.md, docs/blas.md).
//
// Conventions (cuBLAS documentation): matrices are column-major, element (i, j) of a matrix with leading
// dimension ld at i + j*ld from its pointer (cuBLASLt ORDER_ROW: i*ld + j); op(X) is X or X^T; batch b of a
// strided call adds b*stride; C := alpha*op(A)op(B) + beta*C reads C's earlier contents, except that
// beta == 0 does not read C at all (NaN/Inf there do not propagate), and alpha == 0 does not read A, B;
// sger A := alpha*x*y^T + A; vectors with inc < 0 are walked from their last element (reference BLAS); sscal with incx <= 0 does
// nothing; arguments cuBLAS rejects (ld smaller than the rows, negative sizes) make it return
// CUBLAS_STATUS_INVALID_VALUE without computing anything, so such a call writes nothing.
//
// Operands are named by their argument key ("A", "C", "A[3]" for a batched call's pointer arrays,
// "alpha_ptr" for a device-mode scalar); positions are element offsets from that argument's pointer.
// The caller (check's lowering) maps keys to tensors and reads earlier values through a Reader.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "ir/expr.h"

namespace dirigo::blas {

// A call dirigo cannot model; what() starts with "UNSUPPORTED: " and names the function.
class Unsupported : public std::runtime_error {
 public:
  explicit Unsupported(const std::string& what) : std::runtime_error("UNSUPPORTED: " + what) {}
};

enum class Kind : uint8_t { Gemm, Geam, Gemv, Ger, Axpy, Scal, Dot, LtMatmul };

// alpha / beta: a value known at trace time, or a device scalar read through `ptr_key`.
struct Scalar {
  std::optional<double> value;
  std::string ptr_key;
  bool is(double v) const { return value && *value == v; }
};

// A stored matrix: rows x cols as laid out in memory (before op()), leading dimension, batch stride.
struct Matrix {
  std::string key;
  int64_t rows = 0, cols = 0, ld = 0, stride = 0;
  bool row_major = false;  // cuBLASLt ORDER_ROW
  int64_t at(int64_t i, int64_t j) const { return row_major ? i * ld + j : i + j * ld; }
};

struct Vector {
  std::string key;
  int64_t n = 0, inc = 1;
  // Element offset of logical element i.
  int64_t at(int64_t i) const { return (inc > 0 ? i : n - 1 - i) * (inc < 0 ? -inc : inc); }
};

// Lt epilogue bits (cublasLtEpilogue_t): DEFAULT 1, RELU 2, BIAS 4, GELU 32 (tanh form).
inline constexpr int kEpiRelu = 2, kEpiBias = 4, kEpiGelu = 32;

struct Call {
  std::string name;         // "cublasSgemm_v2"
  Kind kind = Kind::Gemm;
  bool valid = true;        // false: cuBLAS rejects the arguments and computes nothing
  std::string invalid_reason;
  std::vector<std::string> notes;  // modelling notes (TF32 math, ...)
  // gemm / geam / Lt: C(m x n) = alpha op(A) op(B) + beta C; gemv: y = alpha op(A) x + beta y
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool pointer_arrays = false;  // cublasSgemmBatched: A[b], B[b], C[b] are separate keys
  Scalar alpha, beta;
  Matrix A, B, C, D;            // D: Lt's output (C for everything else)
  int epilogue = 1;
  std::string bias_key;
  int64_t bias_stride = 0;
  Vector x, y;                  // gemv (x, y), ger (x, y), axpy (x, y), scal (x), dot (x, y)
  std::string result_key;       // dot in device pointer mode
};

// Parses a traced library op. Throws Unsupported naming the function for anything outside the model
// (an unknown entry point, a data type other than float32, an epilogue dirigo does not know, ...).
Call parse(const bundle::LibraryOp& op);

// The argument keys the call writes through (C / C[b] / D / y / x / result).
std::vector<std::string> output_keys(const Call& c);

// Every element range the call touches, [lo, hi) in elements from the key's pointer.
struct Extent {
  std::string key;
  int64_t lo = 0, hi = 0;
  bool write = false;
};
std::vector<Extent> extents(const Call& c);

// Value of operand `key` at element offset `off`, as it was before the call.
using Reader = std::function<ir::Expr(const std::string& key, int64_t off)>;

// The value the call leaves at element offset `off` of output `key`, or nullopt when the call does not
// write that element. Builds sums of products like the ATen matmul equations (one n-ary add).
// `products` (optional, check's numeric evaluation): a GEMM's sum_l A[a_first + l*a_step] * B[b_first + l*b_step]
// (count terms, offsets from the keys' pointers) handed over whole instead of built term by term.
struct Products {
  std::string a_key, b_key;
  int64_t a_first = 0, a_step = 0, b_first = 0, b_step = 0, count = 0;
};
using ProductsReader = std::function<ir::Expr(const Products&)>;
std::optional<ir::Expr> element(ir::Context& ctx, const Call& c, const std::string& key, int64_t off,
                                const Reader& read, const ProductsReader* products = nullptr);

// Concrete evaluation (tests, the Python binding): tensor arguments name flat float32 buffers
// ({"tensor": BUFFER, "byte_offset": B}); returns the buffers the call writes, after it, in fp64.
// Throws Unsupported for an unmodeled call and std::out_of_range for a read or write outside a buffer.
using Buffers = std::map<std::string, std::vector<double>>;
Buffers evaluate(const bundle::LibraryOp& op, const Buffers& before);
// A library op from the JSON form of a bundle op ({"name", "library", "args": {...}}), for tests and tools.
bundle::LibraryOp library_op_from_json(const std::string& text);

}  // namespace dirigo::blas
