// Bundle -> manifest.json + ptx files, keys in the documented order.
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bundle/detail.h"
#include "bundle/io.h"

namespace dirigo::bundle {
namespace {
using J = nlohmann::ordered_json;

J float_json(double v) {  // JSON has no NaN/Infinity: those are written as strings
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

J scalar_json(const Scalar& s) {
  J j;
  switch (s.type) {
    case ScalarType::Float: case ScalarType::F16: case ScalarType::BF16: case ScalarType::F32: case ScalarType::F64:
      j["scalar"] = float_json(s.f);
      break;
    case ScalarType::Complex:
      j["scalar"] = J::array({float_json(s.f), float_json(s.imag)});
      break;
    case ScalarType::Bool:
      j["scalar"] = s.i != 0;
      break;
    case ScalarType::U64: case ScalarType::B64:
      j["scalar"] = uint64_t(s.i);
      break;
    default:
      j["scalar"] = s.i;
  }
  j["type"] = scalar_type_name(s.type);
  return j;
}

J tensor_ref_json(const TensorRef& r) {
  J j;
  j["tensor"] = r.tensor;
  if (r.byte_offset) j["byte_offset"] = *r.byte_offset;
  return j;
}

// Lists nest at most a few levels (the reader caps them), so recursion is bounded.
J arg_json(const Arg& a) {
  return std::visit(
      [](const auto& v) -> J {
        using T = std::decay_t<decltype(v)>;
        J j;
        if constexpr (std::is_same_v<T, TensorRef>) {
          return tensor_ref_json(v);
        } else if constexpr (std::is_same_v<T, Scalar>) {
          return scalar_json(v);
        } else if constexpr (std::is_same_v<T, ListArg>) {
          J items = J::array();
          for (const auto& x : v.items) items.push_back(arg_json(x));
          j["list"] = std::move(items);
        } else if constexpr (std::is_same_v<T, NoneArg>) {
          j["none"] = true;
        } else if constexpr (std::is_same_v<T, StringArg>) {
          j["string"] = v.value;
        } else if constexpr (std::is_same_v<T, DTypeArg>) {
          j["dtype"] = dtype_name(v.dtype);
        } else if constexpr (std::is_same_v<T, LayoutArg>) {
          j["layout"] = v.layout;
        } else if constexpr (std::is_same_v<T, DeviceArg>) {
          j["device"] = v.device;
        } else if constexpr (std::is_same_v<T, MemoryFormatArg>) {
          j["memory_format"] = v.format;
        } else if constexpr (std::is_same_v<T, BytesArg>) {
          static constexpr char kHex[] = "0123456789abcdef";
          std::string hex;
          for (uint8_t b : v.bytes) { hex += kHex[b >> 4]; hex += kHex[b & 15]; }
          j["bytes"] = hex;
        } else {
          static constexpr char kHex[] = "0123456789abcdef";
          std::string hex;
          for (int shift = 60; shift >= 0; shift -= 4)
            if (!hex.empty() || (v.address >> shift) & 15 || shift == 0) hex += kHex[(v.address >> shift) & 15];
          j["pointer"] = "0x" + hex;
          j["unbound"] = true;
        }
        return j;
      },
      a.value);
}

J args_json(const std::vector<Arg>& args) {
  J j = J::array();
  for (const auto& a : args) j.push_back(arg_json(a));
  return j;
}

J op_json(const Op& op) {
  J j;
  j["kind"] = op_kind_name(op);
  if (const auto* a = std::get_if<AtenOp>(&op)) {
    j["name"] = a->name;
    j["overload"] = a->overload;
    j["schema"] = a->schema;
    j["args"] = args_json(a->args);
    J kw = J::object();
    for (const auto& [k, v] : a->kwargs) kw[k] = arg_json(v);
    j["kwargs"] = std::move(kw);
    j["outputs"] = a->outputs;
    j["mutates"] = a->mutates;
    j["from"] = a->from;
  } else if (const auto* l = std::get_if<LaunchOp>(&op)) {
    j["module"] = l->module;
    j["kernel"] = l->kernel;
    j["grid"] = l->grid;
    j["block"] = l->block;
    j["shared_bytes"] = l->shared_bytes;
    j["args"] = args_json(l->args);
    j["stream"] = l->stream;
    j["source_lines"] = l->source_lines;
  } else if (const auto* lib = std::get_if<LibraryOp>(&op)) {
    j["library"] = lib->library;
    j["name"] = lib->name;
    J args = J::object();
    for (const auto& [k, v] : lib->args) {
      if (const auto* t = std::get_if<TensorRef>(&v))
        args[k] = tensor_ref_json(*t);
      else
        args[k] = J::parse(std::get<RawJson>(v).text);
    }
    j["args"] = std::move(args);
    j["writes"] = lib->writes;
  } else {
    const auto& c = std::get<CopyOp>(op);
    j["dst"] = tensor_ref_json(c.dst);
    j["src"] = tensor_ref_json(c.src);
    j["nbytes"] = c.nbytes;
  }
  return j;
}

J program_json(const Program& p) {
  J j;
  j["name"] = p.name;
  j["role"] = role_name(p.role);
  j["source"] = p.source;
  J storages = J::array();
  for (const auto& s : p.storages) storages.push_back(J{{"id", s.id}, {"nbytes", s.nbytes}, {"device", s.device}});
  j["storages"] = std::move(storages);
  J tensors = J::array();
  for (const auto& t : p.tensors) {
    tensors.push_back(J{{"id", t.id}, {"storage", t.storage}, {"offset", t.offset}, {"shape", t.shape},
                        {"strides", t.strides}, {"dtype", dtype_name(t.dtype)}});
  }
  j["tensors"] = std::move(tensors);
  J inputs = J::array();
  auto add_data = [](J& x, const std::string& data, const std::string& sha256) {
    if (!data.empty()) x["data"] = data;
    if (!sha256.empty()) x["sha256"] = sha256;
  };
  for (const auto& in : p.inputs) {
    J x{{"name", in.name}, {"tensor", in.tensor}, {"kind", input_kind_name(in.kind)}};
    add_data(x, in.data, in.sha256);
    if (in.constant) x["constant"] = true;
    inputs.push_back(std::move(x));
  }
  j["inputs"] = std::move(inputs);
  J outputs = J::array();
  for (const auto& out : p.outputs) {
    J x{{"name", out.name}, {"tensor", out.tensor}};
    add_data(x, out.data, out.sha256);
    outputs.push_back(std::move(x));
  }
  j["outputs"] = std::move(outputs);
  J ops = J::array();
  for (const auto& op : p.ops) ops.push_back(op_json(op));
  j["ops"] = std::move(ops);
  return j;
}

J pairs_json(const std::vector<std::pair<std::string, std::string>>& pairs) {
  J j = J::array();
  for (const auto& [a, b] : pairs) j.push_back(J::array({a, b}));
  return j;
}

}  // namespace

std::string to_manifest_json(const Bundle& b) {
  J j;
  j["format"] = kFormatName;
  j["version"] = b.version;
  try {
    j["created_by"] = J::parse(b.created_by.text);
  } catch (const J::exception&) {
    throw BundleError({Issue{std::string(kManifestName), "created_by", "not valid JSON text"}});
  }
  J modules = J::array();
  for (const auto& m : b.modules) {
    J x{{"id", m.id}, {"path", m.path}};
    if (!m.sha256.empty()) x["sha256"] = m.sha256;
    if (!m.source.empty()) x["source"] = m.source;
    x["compile"] = J{{"arch", m.arch}, {"flags", m.flags}};
    modules.push_back(std::move(x));
  }
  j["modules"] = std::move(modules);
  J programs = J::array();
  for (const auto& p : b.programs) programs.push_back(program_json(p));
  j["programs"] = std::move(programs);
  if (b.match) j["match"] = J{{"inputs", pairs_json(b.match->inputs)}, {"outputs", pairs_json(b.match->outputs)}};
  if (b.tolerance) j["tolerance"] = J{{"atol", b.tolerance->atol}, {"rtol", b.tolerance->rtol}};
  return j.dump(1) + "\n";
}

void write_bundle(const Bundle& b, const std::filesystem::path& dir) {
  std::vector<Issue> issues = validate(b);
  for (size_t i = 0; i < b.modules.size(); ++i)
    if (!b.modules[i].ptx)
      issues.push_back({std::string(kManifestName), "modules[" + std::to_string(i) + "]",
                        "module " + detail::quote(b.modules[i].id) + " has no PTX text to write"});
  if (!issues.empty()) throw BundleError(std::move(issues));
  auto write_file = [&](const std::string& rel, const std::string& text) {
    std::filesystem::path p = dir / rel;
    std::error_code ec;
    std::filesystem::create_directories(p.parent_path(), ec);
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw BundleError({Issue{rel, "", "cannot write " + p.string()}});
  };
  for (const auto& m : b.modules) write_file(m.path, *m.ptx);
  write_file(std::string(kManifestName), to_manifest_json(b));
}

}  // namespace dirigo::bundle
