#include <bit>
#include <cstring>

#include "bundle/bundle.h"

namespace dirigo::bundle {
namespace {
struct DTypeRow { DType d; std::string_view name; unsigned size; bool floating; };
constexpr DTypeRow kDTypes[] = {
    {DType::Float64, "float64", 8, true}, {DType::Float32, "float32", 4, true},
    {DType::Float16, "float16", 2, true}, {DType::BFloat16, "bfloat16", 2, true},
    {DType::Int64, "int64", 8, false},    {DType::Int32, "int32", 4, false},
    {DType::Int16, "int16", 2, false},    {DType::Int8, "int8", 1, false},
    {DType::UInt8, "uint8", 1, false},    {DType::Bool, "bool", 1, false},
};

struct ScalarRow { ScalarType t; std::string_view name; bool floating; unsigned ptx_bits; };
constexpr ScalarRow kScalarTypes[] = {
    {ScalarType::Float, "float", true, 0},  {ScalarType::Int, "int", false, 0},
    {ScalarType::Bool, "bool", false, 0},   {ScalarType::Complex, "complex", true, 0},
    {ScalarType::U8, "u8", false, 8},       {ScalarType::U16, "u16", false, 16},
    {ScalarType::U32, "u32", false, 32},    {ScalarType::U64, "u64", false, 64},
    {ScalarType::S8, "s8", false, 8},       {ScalarType::S16, "s16", false, 16},
    {ScalarType::S32, "s32", false, 32},    {ScalarType::S64, "s64", false, 64},
    {ScalarType::B8, "b8", false, 8},       {ScalarType::B16, "b16", false, 16},
    {ScalarType::B32, "b32", false, 32},    {ScalarType::B64, "b64", false, 64},
    {ScalarType::F16, "f16", true, 16},     {ScalarType::BF16, "bf16", true, 16},
    {ScalarType::F32, "f32", true, 32},     {ScalarType::F64, "f64", true, 64},
    {ScalarType::Pred, "pred", false, 1},
};

// The names of an enum's values, in declaration order (value i is kRoleNames[i]).
constexpr std::string_view kRoleNames[] = {"reference", "candidate", "other"};
constexpr std::string_view kInputKindNames[] = {"input", "parameter", "buffer"};

constexpr std::string_view name_of(std::string_view name) { return name; }
template <class Row>
constexpr std::string_view name_of(const Row& row) { return row.name; }

// The enum value named `name`, from a table indexed by the enum (entry i names value i).
template <class E, class T, size_t N>
std::optional<E> parse_named(std::string_view name, const T (&table)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (name_of(table[i]) == name) return E(i);
  return std::nullopt;
}

bool same_bits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }
}  // namespace

std::string_view dtype_name(DType d) { return kDTypes[size_t(d)].name; }
unsigned element_size(DType d) { return kDTypes[size_t(d)].size; }
bool is_floating(DType d) { return kDTypes[size_t(d)].floating; }
std::optional<DType> parse_dtype(std::string_view name) { return parse_named<DType>(name, kDTypes); }

std::string_view scalar_type_name(ScalarType t) { return kScalarTypes[size_t(t)].name; }
bool is_float_scalar(ScalarType t) { return kScalarTypes[size_t(t)].floating; }
unsigned ptx_scalar_bits(ScalarType t) { return kScalarTypes[size_t(t)].ptx_bits; }
std::optional<ScalarType> parse_scalar_type(std::string_view name) {
  return parse_named<ScalarType>(name, kScalarTypes);
}

bool operator==(const Scalar& a, const Scalar& b) {
  return a.type == b.type && a.i == b.i && same_bits(a.f, b.f) && same_bits(a.imag, b.imag);
}
bool operator==(const ListArg& a, const ListArg& b) { return a.items == b.items; }

std::string_view op_kind_name(const Op& op) {
  static constexpr std::string_view kNames[] = {"aten", "launch", "library", "copy"};
  return kNames[op.index()];
}

namespace {
// The element of `xs` whose `key` is `value`, or null.
template <class T>
const T* find_by(const std::vector<T>& xs, std::string T::*key, std::string_view value) {
  for (const T& x : xs)
    if (x.*key == value) return &x;
  return nullptr;
}
}  // namespace

std::string_view role_name(Role r) { return kRoleNames[size_t(r)]; }
std::optional<Role> parse_role(std::string_view name) { return parse_named<Role>(name, kRoleNames); }

std::string_view input_kind_name(InputKind k) { return kInputKindNames[size_t(k)]; }
std::optional<InputKind> parse_input_kind(std::string_view name) {
  return parse_named<InputKind>(name, kInputKindNames);
}

Extent view_extent(int64_t offset, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  Extent e;
  for (int64_t s : shape)
    if (s == 0) return e;  // no elements: touches nothing
  int64_t lo = offset, hi = offset;
  for (size_t d = 0; d < shape.size() && d < strides.size(); ++d) {
    int64_t span;
    if (shape[d] < 0 || __builtin_mul_overflow(shape[d] - 1, strides[d], &span)) {
      e.status = Extent::Status::Overflow;
      return e;
    }
    if (__builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi)) {
      e.status = Extent::Status::Overflow;
      return e;
    }
  }
  if (__builtin_add_overflow(hi, 1, &hi)) {
    e.status = Extent::Status::Overflow;
    return e;
  }
  e.status = Extent::Status::Ok;
  e.lo = lo;
  e.hi = hi;
  return e;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t acc = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = acc;
    acc *= std::max<int64_t>(shape[d], 1);
  }
  return strides;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) continue;
    if (d >= strides.size() || strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

std::unordered_map<std::string, size_t> Program::storage_index() const {
  std::unordered_map<std::string, size_t> m;
  for (size_t i = 0; i < storages.size(); ++i) m.emplace(storages[i].id, i);
  return m;
}
std::unordered_map<std::string, size_t> Program::tensor_index() const {
  std::unordered_map<std::string, size_t> m;
  for (size_t i = 0; i < tensors.size(); ++i) m.emplace(tensors[i].id, i);
  return m;
}

const Program* Bundle::find_program(std::string_view name) const { return find_by(programs, &Program::name, name); }
const Module* Bundle::find_module(std::string_view id) const { return find_by(modules, &Module::id, id); }

std::optional<std::pair<size_t, size_t>> resolve_interface_ref(const Bundle& b, std::string_view ref,
                                                               bool want_outputs) {
  std::optional<std::pair<size_t, size_t>> found;
  int hits = 0;
  for (size_t dot = ref.find('.'); dot != std::string_view::npos; dot = ref.find('.', dot + 1)) {
    std::string_view prog = ref.substr(0, dot), name = ref.substr(dot + 1);
    for (size_t p = 0; p < b.programs.size(); ++p) {
      if (b.programs[p].name != prog) continue;
      const Program& pr = b.programs[p];
      size_t n = want_outputs ? pr.outputs.size() : pr.inputs.size();
      for (size_t i = 0; i < n; ++i) {
        const std::string& nm = want_outputs ? pr.outputs[i].name : pr.inputs[i].name;
        if (nm == name) { found = {p, i}; ++hits; break; }
      }
      break;  // program names are unique (validated); the first is the one
    }
  }
  if (hits != 1) return std::nullopt;
  return found;
}

}  // namespace dirigo::bundle
