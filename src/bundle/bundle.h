// The trace-bundle data model (format v1, docs/bundle-format.md).
//
// A Bundle is what tracing produced: for each program its storages, the tensors
// that view them, its inputs/outputs and the operations in execution order
// (mutable storages, not SSA; src/program builds SSA from this). The model
// mirrors manifest.json one to one, keeping list order, so a position in the
// model is a position in the file: programs[i].ops[j].args[k] means the same
// thing in both, and validation errors can name JSON paths.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace dirigo::bundle {

inline constexpr std::string_view kFormatName = "dirigo-bundle";
inline constexpr int kFormatVersion = 1;

// ---- dtypes
enum class DType : uint8_t { Float64, Float32, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool };
std::string_view dtype_name(DType d);
std::optional<DType> parse_dtype(std::string_view name);
unsigned element_size(DType d);  // bytes per element
bool is_floating(DType d);

// ---- storages and tensors
struct Storage {
  std::string id;
  int64_t nbytes = 0;
  std::string device;  // "cuda", "cpu", ... (free-form)
  friend bool operator==(const Storage&, const Storage&) = default;
};

// The elements a view can touch, as element indices into its storage: [lo, hi).
struct Extent {
  enum class Status { Ok, Empty, Overflow } status = Status::Empty;
  int64_t lo = 0, hi = 0;
};
// Extent of a strided view; Overflow when some index does not fit in 64 bits.
Extent view_extent(int64_t offset, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides);
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

struct Tensor {
  std::string id;
  std::string storage;   // Storage::id
  int64_t offset = 0;    // in elements
  std::vector<int64_t> shape, strides;  // strides in elements
  DType dtype = DType::Float32;
  friend bool operator==(const Tensor&, const Tensor&) = default;

  int64_t numel() const;             // product of shape (validated tensors: fits in int64)
  int64_t nbytes() const { return numel() * element_size(dtype); }
  bool is_contiguous() const;        // PyTorch's definition: size-1 dims' strides do not matter
  Extent extent() const { return view_extent(offset, shape, strides); }
};

// ---- scalars and arguments
// Scalar types: the four Python/ATen scalar kinds, then the PTX .param types of launches.
enum class ScalarType : uint8_t {
  Float, Int, Bool, Complex,
  U8, U16, U32, U64, S8, S16, S32, S64, B8, B16, B32, B64, F16, BF16, F32, F64, Pred,
};
std::string_view scalar_type_name(ScalarType t);
std::optional<ScalarType> parse_scalar_type(std::string_view name);
bool is_float_scalar(ScalarType t);    // Float, Complex, F16, BF16, F32, F64
unsigned ptx_scalar_bits(ScalarType t);  // 8..64 for PTX integer/float types, 1 for Pred, 0 for ATen kinds

struct Scalar {
  ScalarType type = ScalarType::Int;
  int64_t i = 0;     // integer, bool and pred values (u64 kept as its bit pattern)
  double f = 0;      // float values; the real part of a complex
  double imag = 0;   // complex only
  friend bool operator==(const Scalar& a, const Scalar& b);  // bitwise on doubles: NaN == NaN
};

struct TensorRef {
  std::string tensor;
  std::optional<int64_t> byte_offset;  // launches, copies and library calls: bytes from the tensor's first element
  friend bool operator==(const TensorRef&, const TensorRef&) = default;
};
struct NoneArg { friend bool operator==(const NoneArg&, const NoneArg&) = default; };
struct StringArg { std::string value; friend bool operator==(const StringArg&, const StringArg&) = default; };
struct DTypeArg { DType dtype; friend bool operator==(const DTypeArg&, const DTypeArg&) = default; };
struct LayoutArg { std::string layout; friend bool operator==(const LayoutArg&, const LayoutArg&) = default; };
struct DeviceArg { std::string device; friend bool operator==(const DeviceArg&, const DeviceArg&) = default; };
struct MemoryFormatArg { std::string format; friend bool operator==(const MemoryFormatArg&, const MemoryFormatArg&) = default; };
struct BytesArg { std::vector<uint8_t> bytes; friend bool operator==(const BytesArg&, const BytesArg&) = default; };
struct PointerArg {  // a launch pointer that lands in no live tensor
  uint64_t address = 0;
  friend bool operator==(const PointerArg&, const PointerArg&) = default;
};
struct Arg;
struct ListArg {
  std::vector<Arg> items;
  friend bool operator==(const ListArg& a, const ListArg& b);
};
struct Arg {
  std::variant<TensorRef, Scalar, ListArg, NoneArg, StringArg, DTypeArg, LayoutArg, DeviceArg,
               MemoryFormatArg, BytesArg, PointerArg>
      value;
  friend bool operator==(const Arg&, const Arg&) = default;
};
using NamedArg = std::pair<std::string, Arg>;

// ---- operations
struct AtenOp {
  std::string name;        // "aten::convolution"
  std::string overload;    // "default", "out", "Tensor", ...
  std::string schema;
  std::vector<Arg> args;   // positional, schema order
  std::vector<NamedArg> kwargs;  // file order
  std::vector<std::string> outputs;  // tensor ids returned (fresh or aliasing)
  std::vector<std::string> mutates;  // tensor ids written in place
  std::string from;        // "python" | "extension" | ""
  friend bool operator==(const AtenOp&, const AtenOp&) = default;
};

struct LaunchOp {
  std::string module;      // Module::id
  std::string kernel;      // mangled entry name
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t shared_bytes = 0;
  std::vector<Arg> args;   // TensorRef (with byte_offset), Scalar (PTX type), BytesArg, PointerArg
  int64_t stream = 0;
  bool source_lines = false;
  friend bool operator==(const LaunchOp&, const LaunchOp&) = default;
};

struct RawJson {  // a free-form JSON value kept as compact text
  std::string text;
  friend bool operator==(const RawJson&, const RawJson&) = default;
};
using LibraryArg = std::variant<TensorRef, RawJson>;
struct LibraryOp {
  std::string library;     // "cublas", "cudnn", ...
  std::string name;        // "cublasSgemm_v2"
  std::vector<std::pair<std::string, LibraryArg>> args;  // file order
  std::vector<std::string> writes;  // tensor ids written
  friend bool operator==(const LibraryOp&, const LibraryOp&) = default;
};

struct CopyOp {
  TensorRef dst, src;
  int64_t nbytes = 0;
  friend bool operator==(const CopyOp&, const CopyOp&) = default;
};

using Op = std::variant<AtenOp, LaunchOp, LibraryOp, CopyOp>;
std::string_view op_kind_name(const Op& op);  // "aten" | "launch" | "library" | "copy"

// ---- programs
enum class Role : uint8_t { Reference, Candidate, Other };
std::string_view role_name(Role r);
std::optional<Role> parse_role(std::string_view name);

enum class InputKind : uint8_t { Input, Parameter, Buffer };
std::string_view input_kind_name(InputKind k);
std::optional<InputKind> parse_input_kind(std::string_view name);

// `data` (optional) names a file "data/<program>.<name>.bin" with the traced
// values: the elements in row-major order, little-endian, numel * element size
// bytes. `sha256` (optional) is the hash of those values, recorded even when the
// file is not kept.
struct Input {
  std::string name;
  std::string tensor;
  InputKind kind = InputKind::Input;
  std::string data;
  std::string sha256;
  bool constant = false;  // a tensor the program captured from outside (tracer: "const<i>" buffers)
  // A constant's recorded elements (row-major), loaded by read_bundle from `data`: the constant is
  // part of the program, so check uses them as literals. Empty for other inputs and without data.
  std::vector<double> constant_values;
  friend bool operator==(const Input&, const Input&) = default;
};
struct Output {
  std::string name;
  std::string tensor;
  std::string data;
  std::string sha256;
  friend bool operator==(const Output&, const Output&) = default;
};

struct Program {
  std::string name;
  Role role = Role::Other;
  std::string source;
  std::vector<Storage> storages;
  std::vector<Tensor> tensors;
  std::vector<Input> inputs;
  std::vector<Output> outputs;
  std::vector<Op> ops;
  friend bool operator==(const Program&, const Program&) = default;

  // id -> position; the first occurrence wins (duplicates are a validation error).
  std::unordered_map<std::string, size_t> storage_index() const;
  std::unordered_map<std::string, size_t> tensor_index() const;
};

// ---- bundle
struct Module {
  std::string id;
  std::string path;                 // relative to the bundle root, "ptx/<id>.ptx"
  std::string sha256;               // lowercase hex, or "" when not given
  std::string source;               // optional CUDA source file name
  std::string arch;                 // compile.arch
  std::vector<std::string> flags;   // compile.flags
  std::optional<std::string> ptx;   // the PTX text; nullopt when the file was not loaded
  friend bool operator==(const Module&, const Module&) = default;
};

struct Match {
  std::vector<std::pair<std::string, std::string>> inputs;   // "<program>.<input name>" pairs
  std::vector<std::pair<std::string, std::string>> outputs;  // "<program>.<output name>" pairs
  friend bool operator==(const Match&, const Match&) = default;
};

struct Tolerance {
  double atol = 0, rtol = 0;
  friend bool operator==(const Tolerance&, const Tolerance&) = default;
};

struct Bundle {
  int version = kFormatVersion;
  RawJson created_by{"{}"};
  std::vector<Module> modules;
  std::vector<Program> programs;
  std::optional<Match> match;
  std::optional<Tolerance> tolerance;
  friend bool operator==(const Bundle&, const Bundle&) = default;

  const Program* find_program(std::string_view name) const;
  const Module* find_module(std::string_view id) const;
};

// Resolves "<program>.<name>" (both parts may contain dots) against the
// programs' inputs (want_outputs=false) or outputs. Returns (program index,
// input/output index) when exactly one split resolves.
std::optional<std::pair<size_t, size_t>> resolve_interface_ref(const Bundle& b, std::string_view ref,
                                                               bool want_outputs);

}  // namespace dirigo::bundle
