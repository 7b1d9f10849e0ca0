// How an ATen operator call is described to the aten module, independent of
// the bundle format: tensors are views (shape, strides, offset in elements)
// into an ir tensor id's flat element space, arguments mirror the schema.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace dirigo::aten {

enum class DType : uint8_t { Float64, Float32, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool };

// Accepts "float32" and "torch.float32" (and the usual aliases float/double/half/long/int);
// throws std::invalid_argument naming the string otherwise.
DType parse_dtype(std::string_view s);
std::string_view dtype_name(DType d);
bool is_floating(DType d);
bool is_signed_int(DType d);  // int8..int64 (uint8 and bool are unsigned)
// Element sort of a tensor of this dtype: floats are reals, integers bitvectors of
// their width, bool is an 8-bit bitvector holding 0 or 1 (as the byte a kernel stores).
ir::Sort elem_sort(DType d);

// A strided view: element at multi-index i lives at flat index
// offset + sum_k i_k * strides_k of tensor `tensor_id` (an ir tensor id naming a
// flat element space, typically a storage).
struct TensorRef {
  int32_t tensor_id = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // empty: contiguous (row-major) strides are assumed
  int64_t offset = 0;
  DType dtype = DType::Float32;

  int64_t numel() const;
  size_t rank() const { return shape.size(); }
  int64_t stride(size_t k) const;  // strides[k], or the contiguous stride when strides is empty
  int64_t flat_index(std::span<const int64_t> idx) const;  // offset + sum idx_k * stride_k
};

struct Arg {
  enum class Kind : uint8_t { None, Tensor, Real, Int, Bool, List, String, DType };
  Kind kind = Kind::None;
  TensorRef tensor;
  double real = 0;
  int64_t integer = 0;  // Int, and Bool (0/1)
  std::vector<Arg> list;
  std::string str;
  DType dtype = DType::Float32;

  static Arg none() { return {}; }
  static Arg of(TensorRef t) { Arg a; a.kind = Kind::Tensor; a.tensor = std::move(t); return a; }
  static Arg of_real(double d) { Arg a; a.kind = Kind::Real; a.real = d; return a; }
  static Arg of_int(int64_t i) { Arg a; a.kind = Kind::Int; a.integer = i; return a; }
  static Arg of_bool(bool b) { Arg a; a.kind = Kind::Bool; a.integer = b; return a; }
  static Arg of_string(std::string s) { Arg a; a.kind = Kind::String; a.str = std::move(s); return a; }
  static Arg of_dtype(DType d) { Arg a; a.kind = Kind::DType; a.dtype = d; return a; }
  static Arg of_list(std::vector<Arg> xs) { Arg a; a.kind = Kind::List; a.list = std::move(xs); return a; }
  static Arg of_ints(const std::vector<int64_t>& xs);
};

// sum_k a[a_index(k)] * b[b_index(k)] over flat element indices, summed in order of k:
//  - runs == 0, empty lists: a_index(k) = a_first + k * a_step (likewise b);
//  - runs == 0, lists: a_index(k) = a_list[k] (k < their length);
//  - runs > 0 (a convolution: r an input channel, t a kernel tap inside the input), with lists of
//    one length T and count = runs * T: k = r * T + t reads a_index = a_first + r * a_step + a_list[t]
//    (likewise b), for r < runs and t < T.
struct Products {
  int32_t a_tensor = 0, b_tensor = 0;
  int64_t count = 0;
  int64_t a_first = 0, a_step = 0, b_first = 0, b_step = 0;
  std::vector<int64_t> a_list, b_list;
  int64_t runs = 0;
  // Set (>= 0): the sum is c[c_index] + the products (a convolution's bias), added last.
  int32_t c_tensor = -1;
  int64_t c_index = 0;
};

// Normalization statistics (mean and variance over a channel, group or row) already built in one
// Context, by (kind, input view, reduced set). A caller that asks many elements of such ops in one
// Context keeps one alive exactly as long as that Context: each element would otherwise rebuild its
// statistic's 10^5-10^6 terms (a batch norm over a convolution output).
struct StatsMemo {
  std::map<std::vector<int64_t>, std::pair<ir::Expr, ir::Expr>> entries;
};

struct OpCall {
  // "aten::convolution", "aten.add.Tensor", "add.Tensor", "relu_"; the overload may be
  // part of the name or given separately ("" and "default" mean the default overload).
  std::string name;
  std::string overload;
  std::vector<Arg> args;                              // positional, in schema order
  std::vector<std::pair<std::string, Arg>> kwargs;    // by schema name
  std::vector<TensorRef> outputs;                     // the tensors the op returns (shapes are trusted)
  // How an element is read: unset, T[i] is the leaf elem(tensor_id, i); set (check's back-projection),
  // the equation is built directly over the values read, with no leaf-substitution pass after it.
  std::function<ir::Expr(int32_t tensor_id, int64_t flat_index, ir::Sort sort)> read;
  // How an element at a symbolic multi-index (BV64 expressions over a reduction's Bound indices) is
  // read; nullptr back: not symbolically (the reduction is expanded instead). Unset with `read`
  // unset: a Load of the view's flat index; unset with `read` set: never symbolically.
  std::function<ir::Expr(const TensorRef& view, std::span<const ir::Expr> index, ir::Sort sort)> read_sym;
  // Reductions over more than this many elements are emitted as one ir Reduce node (when every
  // element can be read symbolically); smaller ones, and every one when negative, term by term.
  int64_t reduce_above = 1024;
  // Set (check's numeric evaluation of giant locations): a sum of products of two float tensors'
  // elements (matrix products, convolutions) is handed over as flat indices instead of being built
  // term by term; the callback returns the sum as an expression (there: one leaf holding its value).
  std::function<ir::Expr(const Products&)> sum_of_products;
  // Set: normalization statistics are looked up there before being built (see StatsMemo).
  StatsMemo* stats_memo = nullptr;
};

}  // namespace dirigo::aten
