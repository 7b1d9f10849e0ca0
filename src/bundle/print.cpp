#include "bundle/print.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

namespace dirigo::bundle {

std::string join_ints(std::span<const int64_t> v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

namespace {

std::string describe_float(double f) {  // 1.0 stays "1.0" so floats and ints read apart
  std::string v = fmt::format("{}", f);
  if (v.find_first_of(".eninf") == std::string::npos) v += ".0";
  return v;
}

std::string describe_scalar(const Scalar& s) {
  std::string v;
  switch (s.type) {
    case ScalarType::Float: case ScalarType::F16: case ScalarType::BF16: case ScalarType::F32: case ScalarType::F64:
      v = describe_float(s.f);
      break;
    case ScalarType::Complex:
      v = "(" + describe_float(s.f) + (std::signbit(s.imag) ? "" : "+") + describe_float(s.imag) + "j)";
      break;
    case ScalarType::Bool:
    case ScalarType::Pred:
      v = s.i ? "True" : "False";
      break;
    case ScalarType::U64: case ScalarType::B64:
      v = std::to_string(uint64_t(s.i));
      break;
    default:
      v = std::to_string(s.i);
  }
  // ATen scalars read naturally untyped; PTX ones carry their .param type.
  return ptx_scalar_bits(s.type) ? v + ":" + std::string(scalar_type_name(s.type)) : v;
}

std::string describe_ref(const TensorRef& r) {
  return r.byte_offset ? r.tensor + "+" + std::to_string(*r.byte_offset) : r.tensor;
}

std::string join_ids(const std::vector<std::string>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + ids[i];
  return s;
}

}  // namespace

// Lists nest at most 16 deep (the reader's cap), so this recursion is bounded.
std::string describe_arg(const Arg& a) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, TensorRef>) return describe_ref(v);
        else if constexpr (std::is_same_v<T, Scalar>) return describe_scalar(v);
        else if constexpr (std::is_same_v<T, ListArg>) {
          std::string s = "[";
          for (size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + describe_arg(v.items[i]);
          return s + "]";
        } else if constexpr (std::is_same_v<T, NoneArg>) return "None";
        else if constexpr (std::is_same_v<T, StringArg>) return "\"" + v.value + "\"";
        else if constexpr (std::is_same_v<T, DTypeArg>) return std::string(dtype_name(v.dtype));
        else if constexpr (std::is_same_v<T, LayoutArg>) return v.layout;
        else if constexpr (std::is_same_v<T, DeviceArg>) return v.device;
        else if constexpr (std::is_same_v<T, MemoryFormatArg>) return v.format;
        else if constexpr (std::is_same_v<T, BytesArg>) return fmt::format("<{} bytes>", v.bytes.size());
        else return fmt::format("{:#x}(unbound)", v.address);
      },
      a.value);
}

std::string describe_tensor(const Tensor& t) {
  return fmt::format("{}: {}[{}] strides [{}] @ {}+{}{}", t.id, dtype_name(t.dtype), join_ints(t.shape),
                     join_ints(t.strides), t.storage, t.offset, t.is_contiguous() ? " (contiguous)" : "");
}

std::string describe_op(const Op& op) {
  if (const auto* a = std::get_if<AtenOp>(&op)) {
    std::string s = a->name;
    if (!a->overload.empty() && a->overload != "default") s += "." + a->overload;
    s += "(";
    bool first = true;
    for (const auto& x : a->args) s += (first ? "" : ", ") + describe_arg(x), first = false;
    for (const auto& [k, x] : a->kwargs) s += (first ? "" : ", ") + k + "=" + describe_arg(x), first = false;
    s += ")";
    if (!a->outputs.empty()) s += " -> " + join_ids(a->outputs);
    if (!a->mutates.empty()) s += " mutates " + join_ids(a->mutates);
    if (a->from == "extension") s += " [extension]";
    return s;
  }
  if (const auto* l = std::get_if<LaunchOp>(&op)) {
    std::string s = fmt::format("launch {}:{} grid({}, {}, {}) block({}, {}, {})", l->module, l->kernel, l->grid[0],
                                l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2]);
    if (l->shared_bytes) s += fmt::format(" smem {}", l->shared_bytes);
    s += " (";
    for (size_t i = 0; i < l->args.size(); ++i) s += (i ? ", " : "") + describe_arg(l->args[i]);
    return s + ")";
  }
  if (const auto* lib = std::get_if<LibraryOp>(&op)) {
    std::string s = lib->library + "." + lib->name + "(";
    for (size_t i = 0; i < lib->args.size(); ++i) {
      const auto& [k, v] = lib->args[i];
      s += (i ? ", " : "") + k + "=";
      if (const auto* t = std::get_if<TensorRef>(&v)) s += describe_ref(*t);
      else s += std::get<RawJson>(v).text;
    }
    s += ")";
    if (!lib->writes.empty()) s += " writes " + join_ids(lib->writes);
    return s;
  }
  const auto& c = std::get<CopyOp>(op);
  return fmt::format("copy {} <- {} ({} bytes)", describe_ref(c.dst), describe_ref(c.src), c.nbytes);
}

BundleSummary summarize(const Bundle& b) {
  BundleSummary s;
  s.programs = b.programs.size();
  s.modules = b.modules.size();
  std::set<std::pair<std::string, std::string>> kernels;
  for (const auto& p : b.programs) {
    s.ops += p.ops.size();
    s.tensors += p.tensors.size();
    s.storages += p.storages.size();
    for (const auto& op : p.ops) {
      ++s.ops_by_kind[std::string(op_kind_name(op))];
      if (const auto* l = std::get_if<LaunchOp>(&op)) {
        ++s.launches;
        kernels.emplace(l->module, l->kernel);
      }
    }
  }
  s.kernels = kernels.size();
  return s;
}

std::string describe_summary(const BundleSummary& s) {
  std::string kinds;
  for (const auto& [k, n] : s.ops_by_kind) kinds += (kinds.empty() ? "" : ", ") + fmt::format("{} {}", k, n);
  return fmt::format("{} program{}, {} op{}{}, {} launch{} of {} distinct kernel{} in {} module{}, {} tensors over {} "
                     "storages",
                     s.programs, s.programs == 1 ? "" : "s", s.ops, s.ops == 1 ? "" : "s",
                     kinds.empty() ? "" : " (" + kinds + ")", s.launches, s.launches == 1 ? "" : "es", s.kernels,
                     s.kernels == 1 ? "" : "s", s.modules, s.modules == 1 ? "" : "s", s.tensors, s.storages);
}

}  // namespace dirigo::bundle
