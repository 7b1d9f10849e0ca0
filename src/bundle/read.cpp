// manifest.json -> Bundle. Every access checks the JSON type first; the first
// structural problem throws a BundleError naming the field's JSON path.
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bundle/detail.h"
#include "bundle/io.h"
#include "bundle/data.h"

namespace dirigo::bundle {
namespace detail {

std::string quote(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += char(c);
    }
  }
  if (s.size() > kMax) out += "...";
  return out + "\"";
}

bool is_safe_relative_path(std::string_view p) {
  if (p.empty() || p.front() == '/') return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    std::string_view part = p.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    for (char c : part)
      if (static_cast<unsigned char>(c) < 0x20 || c == '\\' || c == 0x7f) return false;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return true;
}

}  // namespace detail

std::string Issue::str() const {
  std::string s = file;
  if (!path.empty()) s += ": " + path;
  return s + ": " + message;
}

namespace {
std::string join_issues(const std::vector<Issue>& issues) {
  constexpr size_t kShown = 20;
  std::string s;
  for (size_t i = 0; i < issues.size() && i < kShown; ++i) {
    if (i) s += "\n";
    s += issues[i].str();
  }
  if (issues.size() > kShown) s += "\n... and " + std::to_string(issues.size() - kShown) + " more";
  if (issues.empty()) s = "invalid bundle";
  return s;
}
}  // namespace

BundleError::BundleError(std::vector<Issue> issues) : std::runtime_error(join_issues(issues)), issues_(std::move(issues)) {}

namespace {
using J = nlohmann::ordered_json;
using detail::child;
using detail::elem;
using detail::quote;

constexpr size_t kMaxDepth = 64;     // JSON nesting accepted at all
constexpr int kMaxListDepth = 16;    // ARG lists inside ARG lists

[[noreturn]] void fail(const std::string& path, std::string msg) {
  throw BundleError({Issue{std::string(kManifestName), path, std::move(msg)}});
}

[[noreturn]] void wrong_type(const J& v, const std::string& path, std::string_view expected) {
  fail(path, "expected " + std::string(expected) + ", got " + v.type_name());
}

const J& as_object(const J& v, const std::string& path) {
  if (!v.is_object()) wrong_type(v, path, "an object");
  return v;
}
const J& as_array(const J& v, const std::string& path) {
  if (!v.is_array()) wrong_type(v, path, "an array");
  return v;
}
std::string as_string(const J& v, const std::string& path) {
  if (!v.is_string()) wrong_type(v, path, "a string");
  return v.get<std::string>();
}
int64_t as_int(const J& v, const std::string& path) {
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max())) fail(path, "integer " + std::to_string(u) + " is out of range");
    return int64_t(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) fail(path, "expected an integer, got " + v.dump());
  wrong_type(v, path, "an integer");
}
bool as_bool(const J& v, const std::string& path) {
  if (!v.is_boolean()) wrong_type(v, path, "a boolean");
  return v.get<bool>();
}
double as_number(const J& v, const std::string& path) {
  if (!v.is_number()) wrong_type(v, path, "a number");
  return v.get<double>();
}

// Object field access: nullptr when absent.
const J* find(const J& obj, std::string_view key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}
const J& require(const J& obj, const std::string& path, std::string_view key) {
  const J* v = find(obj, key);
  if (!v) fail(child(path, key), "missing required field");
  return *v;
}
std::string req_string(const J& obj, const std::string& path, std::string_view key) {
  return as_string(require(obj, path, key), child(path, key));
}
std::string opt_string(const J& obj, const std::string& path, std::string_view key, std::string dflt = "") {
  const J* v = find(obj, key);
  return v ? as_string(*v, child(path, key)) : dflt;
}
int64_t req_int(const J& obj, const std::string& path, std::string_view key) {
  return as_int(require(obj, path, key), child(path, key));
}
int64_t opt_int(const J& obj, const std::string& path, std::string_view key, int64_t dflt) {
  const J* v = find(obj, key);
  return v ? as_int(*v, child(path, key)) : dflt;
}
// An optional array field; `each(item, item_path)` is called per element.
template <class F>
void for_each_in(const J& obj, const std::string& path, std::string_view key, bool required, F&& each) {
  const J* v = find(obj, key);
  if (!v) {
    if (required) fail(child(path, key), "missing required field");
    return;
  }
  std::string p = child(path, key);
  as_array(*v, p);
  for (size_t i = 0; i < v->size(); ++i) each((*v)[i], elem(p, i));
}
std::vector<std::string> string_list(const J& obj, const std::string& path, std::string_view key, bool required) {
  std::vector<std::string> out;
  for_each_in(obj, path, key, required, [&](const J& v, const std::string& p) { out.push_back(as_string(v, p)); });
  return out;
}
std::vector<int64_t> int_list(const J& obj, const std::string& path, std::string_view key) {
  std::vector<int64_t> out;
  for_each_in(obj, path, key, true, [&](const J& v, const std::string& p) { out.push_back(as_int(v, p)); });
  return out;
}

// Iterative: the manifest may be arbitrarily deep, this must not recurse.
size_t json_depth(const J& root) {
  size_t deepest = 0;
  std::vector<std::pair<const J*, size_t>> stack{{&root, 1}};
  while (!stack.empty()) {
    auto [v, d] = stack.back();
    stack.pop_back();
    deepest = std::max(deepest, d);
    if (d > kMaxDepth) return d;
    if (v->is_structured())
      for (const auto& c : *v) stack.push_back({&c, d + 1});
  }
  return deepest;
}

// ---- scalars
double float_value(const J& v, const std::string& path) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s == "nan" || s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf" || s == "+inf" || s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-inf" || s == "-Infinity") return -std::numeric_limits<double>::infinity();
    fail(path, "expected a number or one of \"nan\", \"inf\", \"-inf\", got " + quote(s));
  }
  wrong_type(v, path, "a number");
}

Scalar parse_scalar(const J& obj, const std::string& path) {
  std::string type_path = child(path, "type");
  std::string type_name = as_string(require(obj, path, "type"), type_path);
  auto type = parse_scalar_type(type_name);
  if (!type) fail(type_path, "unknown scalar type " + quote(type_name));
  Scalar s;
  s.type = *type;
  const J& v = require(obj, path, "scalar");
  std::string vp = child(path, "scalar");
  switch (*type) {
    case ScalarType::Float: case ScalarType::F16: case ScalarType::BF16: case ScalarType::F32: case ScalarType::F64:
      s.f = float_value(v, vp);
      break;
    case ScalarType::Complex:
      if (v.is_array()) {
        if (v.size() != 2) fail(vp, "a complex scalar is [real, imag]");
        s.f = float_value(v[0], elem(vp, 0));
        s.imag = float_value(v[1], elem(vp, 1));
      } else {
        s.f = float_value(v, vp);
      }
      break;
    case ScalarType::Bool:
      s.i = as_bool(v, vp);
      break;
    case ScalarType::Pred:
      if (v.is_boolean()) {
        s.i = v.get<bool>();
      } else {
        s.i = as_int(v, vp);
        if (s.i != 0 && s.i != 1) fail(vp, "a pred scalar is true/false or 0/1");
      }
      break;
    case ScalarType::Int:
      s.i = as_int(v, vp);
      break;
    default: {  // PTX integer types: accept the value as signed or unsigned in the width
      unsigned bits = ptx_scalar_bits(*type);
      if (v.is_number_unsigned()) {
        uint64_t u = v.get<uint64_t>();
        if (bits < 64 && u >> bits) fail(vp, std::to_string(u) + " does not fit in " + type_name);
        s.i = int64_t(u);
      } else {
        s.i = as_int(v, vp);
        if (bits < 64 && (s.i < -(int64_t(1) << (bits - 1)) || s.i >= (int64_t(1) << bits)))
          fail(vp, std::to_string(s.i) + " does not fit in " + type_name);
      }
    }
  }
  return s;
}

std::optional<std::vector<uint8_t>> parse_hex(std::string_view s) {
  if (s.size() % 2) return std::nullopt;
  std::vector<uint8_t> out;
  out.reserve(s.size() / 2);
  for (size_t i = 0; i < s.size(); i += 2) {
    uint8_t b = 0;
    auto r = std::from_chars(s.data() + i, s.data() + i + 2, b, 16);
    if (r.ec != std::errc() || r.ptr != s.data() + i + 2) return std::nullopt;
    out.push_back(b);
  }
  return out;
}

TensorRef parse_tensor_ref(const J& obj, const std::string& path) {
  TensorRef r;
  r.tensor = req_string(obj, path, "tensor");
  if (const J* off = find(obj, "byte_offset")) r.byte_offset = as_int(*off, child(path, "byte_offset"));
  return r;
}

// ARG: exactly one of these keys says which form it is.
constexpr std::string_view kArgForms[] = {"tensor", "scalar", "list", "none", "string", "dtype",
                                          "layout", "device", "memory_format", "bytes", "pointer"};

Arg parse_arg(const J& v, const std::string& path, int depth) {
  as_object(v, path);
  std::string_view form;
  for (auto f : kArgForms) {
    if (!find(v, f)) continue;
    if (!form.empty()) fail(path, "ambiguous argument: has both \"" + std::string(form) + "\" and \"" + std::string(f) + "\"");
    form = f;
  }
  if (form.empty())
    fail(path, "unknown argument form; expected one of tensor, scalar, list, none, string, dtype, layout, device, "
               "memory_format, bytes, pointer");
  std::string p = child(path, form);
  const J& x = *find(v, form);
  Arg a;
  if (form == "tensor") {
    a.value = parse_tensor_ref(v, path);
  } else if (form == "scalar") {
    a.value = parse_scalar(v, path);
  } else if (form == "list") {
    if (depth >= kMaxListDepth) fail(p, "argument lists nested deeper than " + std::to_string(kMaxListDepth));
    as_array(x, p);
    ListArg l;
    for (size_t i = 0; i < x.size(); ++i) l.items.push_back(parse_arg(x[i], elem(p, i), depth + 1));
    a.value = std::move(l);
  } else if (form == "none") {
    a.value = NoneArg{};
  } else if (form == "string") {
    a.value = StringArg{as_string(x, p)};
  } else if (form == "dtype") {
    std::string name = as_string(x, p);
    auto d = parse_dtype(name);
    if (!d) fail(p, "unknown dtype " + quote(name));
    a.value = DTypeArg{*d};
  } else if (form == "layout") {
    a.value = LayoutArg{as_string(x, p)};
  } else if (form == "device") {
    a.value = DeviceArg{as_string(x, p)};
  } else if (form == "memory_format") {
    a.value = MemoryFormatArg{as_string(x, p)};
  } else if (form == "bytes") {
    auto bytes = parse_hex(as_string(x, p));
    if (!bytes) fail(p, "expected an even number of hex digits");
    a.value = BytesArg{std::move(*bytes)};
  } else {  // pointer
    PointerArg ptr;
    if (x.is_string()) {
      std::string s = x.get<std::string>();
      std::string_view digits = s;
      if (digits.starts_with("0x") || digits.starts_with("0X")) digits.remove_prefix(2);
      auto r = std::from_chars(digits.data(), digits.data() + digits.size(), ptr.address, 16);
      if (digits.empty() || r.ec != std::errc() || r.ptr != digits.data() + digits.size())
        fail(p, "expected a hex address like \"0x7f00\", got " + quote(s));
    } else if (x.is_number_unsigned() || x.is_number_integer()) {
      ptr.address = x.get<uint64_t>();
    } else {
      wrong_type(x, p, "a hex address string");
    }
    a.value = ptr;
  }
  return a;
}

std::vector<Arg> parse_arg_list(const J& obj, const std::string& path, std::string_view key, bool required) {
  std::vector<Arg> out;
  for_each_in(obj, path, key, required, [&](const J& v, const std::string& p) { out.push_back(parse_arg(v, p, 0)); });
  return out;
}

std::array<int64_t, 3> parse_dims(const J& obj, const std::string& path, std::string_view key) {
  std::string p = child(path, key);
  const J& v = as_array(require(obj, path, key), p);
  if (v.empty() || v.size() > 3) fail(p, "expected 1 to 3 dimensions, got " + std::to_string(v.size()));
  std::array<int64_t, 3> dims{1, 1, 1};
  for (size_t i = 0; i < v.size(); ++i) dims[i] = as_int(v[i], elem(p, i));
  return dims;
}

Op parse_op(const J& v, const std::string& path) {
  as_object(v, path);
  std::string kind = req_string(v, path, "kind");
  if (kind == "aten") {
    AtenOp op;
    op.name = req_string(v, path, "name");
    op.overload = opt_string(v, path, "overload");
    op.schema = opt_string(v, path, "schema");
    op.args = parse_arg_list(v, path, "args", false);
    if (const J* kw = find(v, "kwargs")) {
      std::string kp = child(path, "kwargs");
      as_object(*kw, kp);
      for (auto it = kw->begin(); it != kw->end(); ++it)
        op.kwargs.emplace_back(it.key(), parse_arg(it.value(), child(kp, it.key()), 0));
    }
    op.outputs = string_list(v, path, "outputs", false);
    op.mutates = string_list(v, path, "mutates", false);
    op.from = opt_string(v, path, "from");
    return op;
  }
  if (kind == "launch") {
    LaunchOp op;
    op.module = req_string(v, path, "module");
    op.kernel = req_string(v, path, "kernel");
    op.grid = parse_dims(v, path, "grid");
    op.block = parse_dims(v, path, "block");
    op.shared_bytes = opt_int(v, path, "shared_bytes", 0);
    op.args = parse_arg_list(v, path, "args", true);
    op.stream = opt_int(v, path, "stream", 0);
    if (const J* sl = find(v, "source_lines")) op.source_lines = as_bool(*sl, child(path, "source_lines"));
    return op;
  }
  if (kind == "library") {
    LibraryOp op;
    op.library = req_string(v, path, "library");
    op.name = req_string(v, path, "name");
    if (const J* args = find(v, "args")) {
      std::string ap = child(path, "args");
      as_object(*args, ap);
      for (auto it = args->begin(); it != args->end(); ++it) {
        const J& a = it.value();
        if (a.is_object() && find(a, "tensor"))
          op.args.emplace_back(it.key(), parse_tensor_ref(a, child(ap, it.key())));
        else
          op.args.emplace_back(it.key(), RawJson{a.dump()});
      }
    }
    op.writes = string_list(v, path, "writes", false);
    return op;
  }
  if (kind == "copy") {
    CopyOp op;
    op.dst = parse_tensor_ref(as_object(require(v, path, "dst"), child(path, "dst")), child(path, "dst"));
    op.src = parse_tensor_ref(as_object(require(v, path, "src"), child(path, "src")), child(path, "src"));
    op.nbytes = req_int(v, path, "nbytes");
    return op;
  }
  fail(child(path, "kind"), "unknown op kind " + quote(kind) + " (known: aten, launch, library, copy)");
}

Program parse_program(const J& v, const std::string& path) {
  as_object(v, path);
  Program p;
  p.name = req_string(v, path, "name");
  std::string role = opt_string(v, path, "role", "other");
  auto r = parse_role(role);
  if (!r) fail(child(path, "role"), "unknown role " + quote(role) + " (known: reference, candidate, other)");
  p.role = *r;
  p.source = opt_string(v, path, "source");
  for_each_in(v, path, "storages", false, [&](const J& s, const std::string& sp) {
    as_object(s, sp);
    p.storages.push_back({req_string(s, sp, "id"), req_int(s, sp, "nbytes"), opt_string(s, sp, "device")});
  });
  for_each_in(v, path, "tensors", false, [&](const J& t, const std::string& tp) {
    as_object(t, tp);
    Tensor x;
    x.id = req_string(t, tp, "id");
    x.storage = req_string(t, tp, "storage");
    x.offset = opt_int(t, tp, "offset", 0);
    x.shape = int_list(t, tp, "shape");
    x.strides = int_list(t, tp, "strides");
    std::string dt = req_string(t, tp, "dtype");
    auto d = parse_dtype(dt);
    if (!d) fail(child(tp, "dtype"), "unknown dtype " + quote(dt));
    x.dtype = *d;
    p.tensors.push_back(std::move(x));
  });
  for_each_in(v, path, "inputs", false, [&](const J& in, const std::string& ip) {
    as_object(in, ip);
    Input x{req_string(in, ip, "name"), req_string(in, ip, "tensor"), InputKind::Input, opt_string(in, ip, "data"),
            opt_string(in, ip, "sha256")};
    std::string kind = opt_string(in, ip, "kind", "input");
    auto k = parse_input_kind(kind);
    if (!k) fail(child(ip, "kind"), "unknown input kind " + quote(kind) + " (known: input, parameter, buffer)");
    x.kind = *k;
    if (const J* c = find(in, "constant")) x.constant = as_bool(*c, child(ip, "constant"));
    p.inputs.push_back(std::move(x));
  });
  for_each_in(v, path, "outputs", false, [&](const J& out, const std::string& op) {
    as_object(out, op);
    p.outputs.push_back({req_string(out, op, "name"), req_string(out, op, "tensor"), opt_string(out, op, "data"),
                         opt_string(out, op, "sha256")});
  });
  for_each_in(v, path, "ops", false, [&](const J& o, const std::string& op) { p.ops.push_back(parse_op(o, op)); });
  return p;
}

std::vector<std::pair<std::string, std::string>> parse_pairs(const J& obj, const std::string& path, std::string_view key) {
  std::vector<std::pair<std::string, std::string>> out;
  for_each_in(obj, path, key, false, [&](const J& v, const std::string& p) {
    as_array(v, p);
    if (v.size() != 2) fail(p, "expected a pair [\"<program>.<name>\", \"<program>.<name>\"]");
    out.emplace_back(as_string(v[0], elem(p, 0)), as_string(v[1], elem(p, 1)));
  });
  return out;
}

}  // namespace

namespace {
Bundle parse_manifest_checked(std::string_view json_text) {
  J root;
  try {
    root = J::parse(json_text.begin(), json_text.end());
  } catch (const J::exception& e) {
    fail("", std::string("not valid JSON: ") + e.what());
  }
  if (json_depth(root) > kMaxDepth) fail("", "JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
  as_object(root, "");
  Bundle b;
  std::string format = req_string(root, "", "format");
  if (format != kFormatName) fail("format", "expected \"dirigo-bundle\", got " + quote(format));
  b.version = int(std::clamp<int64_t>(req_int(root, "", "version"), -1, 1 << 30));
  if (b.version != kFormatVersion)
    fail("version", "unsupported version " + std::to_string(b.version) + " (this reader knows " +
                        std::to_string(kFormatVersion) + ")");
  if (const J* cb = find(root, "created_by")) b.created_by = RawJson{cb->dump()};
  for_each_in(root, "", "modules", false, [&](const J& m, const std::string& mp) {
    as_object(m, mp);
    Module mod;
    mod.id = req_string(m, mp, "id");
    mod.path = req_string(m, mp, "path");
    mod.sha256 = opt_string(m, mp, "sha256");
    mod.source = opt_string(m, mp, "source");
    if (const J* c = find(m, "compile")) {
      std::string cp = child(mp, "compile");
      as_object(*c, cp);
      mod.arch = opt_string(*c, cp, "arch");
      mod.flags = string_list(*c, cp, "flags", false);
    }
    b.modules.push_back(std::move(mod));
  });
  for_each_in(root, "", "programs", true,
              [&](const J& p, const std::string& pp) { b.programs.push_back(parse_program(p, pp)); });
  if (const J* m = find(root, "match")) {
    as_object(*m, "match");
    b.match = Match{parse_pairs(*m, "match", "inputs"), parse_pairs(*m, "match", "outputs")};
  }
  if (const J* t = find(root, "tolerance")) {
    as_object(*t, "tolerance");
    Tolerance tol;
    if (const J* a = find(*t, "atol")) tol.atol = as_number(*a, "tolerance.atol");
    if (const J* r = find(*t, "rtol")) tol.rtol = as_number(*r, "tolerance.rtol");
    b.tolerance = tol;
  }
  return b;
}
}  // namespace

Bundle parse_manifest(std::string_view json_text) {
  try {
    return parse_manifest_checked(json_text);
  } catch (const BundleError&) {
    throw;
  } catch (const std::exception& e) {  // defensive: a JSON library error we did not anticipate
    fail("", std::string("unreadable manifest: ") + e.what());
  }
}

// ---- file sources
FileSource directory_source(const std::filesystem::path& dir) {
  FileSource fs;
  fs.read = [dir](const std::string& rel) -> std::optional<std::string> {
    std::error_code ec;
    auto p = dir / rel;
    if (!std::filesystem::is_regular_file(p, ec)) return std::nullopt;
    std::ifstream in(p, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  fs.size = [dir](const std::string& rel) -> std::optional<uint64_t> {
    std::error_code ec;
    auto p = dir / rel;
    if (!std::filesystem::is_regular_file(p, ec)) return std::nullopt;
    auto n = std::filesystem::file_size(p, ec);
    if (ec) return std::nullopt;
    return n;
  };
  return fs;
}

Bundle read_bundle(const FileSource& files) {
  auto manifest = files.read(std::string(kManifestName));
  if (!manifest) throw BundleError({Issue{std::string(kManifestName), "", "file not found in the bundle"}});
  Bundle b = parse_manifest(*manifest);
  std::vector<Issue> issues;
  auto add = [&](std::string path, std::string msg) {
    issues.push_back({std::string(kManifestName), std::move(path), std::move(msg)});
  };
  for (size_t i = 0; i < b.modules.size(); ++i) {
    Module& m = b.modules[i];
    if (!detail::is_safe_relative_path(m.path)) continue;  // validate() reports it
    m.ptx = files.read(m.path);
    if (!m.ptx) add(child(elem("modules", i), "path"), "file " + quote(m.path) + " not found in the bundle");
  }
  for (size_t p = 0; p < b.programs.size(); ++p) {
    const Program& prog = b.programs[p];
    auto tensors = prog.tensor_index();
    auto check_data = [&](const std::string& data, const std::string& tensor_id, const std::string& fp) {
      if (data.empty() || !detail::is_safe_relative_path(data)) return;  // validate() reports bad paths
      auto size = files.size(data);
      if (!size) {
        add(fp, "file " + quote(data) + " not found in the bundle");
        return;
      }
      auto t = tensors.find(tensor_id);
      if (t == tensors.end()) return;
      const Tensor& x = prog.tensors[t->second];
      int64_t n = 1, want = 0;
      bool sized = true;  // validate() reports bad shapes; only compare sizes that make sense
      for (int64_t s : x.shape)
        if (s < 0 || __builtin_mul_overflow(n, s, &n)) sized = false;
      if (sized && !__builtin_mul_overflow(n, int64_t(element_size(x.dtype)), &want) && *size != uint64_t(want))
        add(fp, "file " + quote(data) + " has " + std::to_string(*size) + " bytes, the tensor needs " +
                    std::to_string(want));
    };
    std::string pp = elem("programs", p);
    for (size_t i = 0; i < prog.inputs.size(); ++i)
      check_data(prog.inputs[i].data, prog.inputs[i].tensor, child(elem(child(pp, "inputs"), i), "data"));
    for (size_t i = 0; i < prog.outputs.size(); ++i)
      check_data(prog.outputs[i].data, prog.outputs[i].tensor, child(elem(child(pp, "outputs"), i), "data"));
  }
  for (auto& i : validate(b)) issues.push_back(std::move(i));
  if (!issues.empty()) throw BundleError(std::move(issues));
  for (auto& prog : b.programs) {  // captured constants are tiny (the tracer caps them): load their values
    auto tensors = prog.tensor_index();
    for (auto& in : prog.inputs) {
      if (!in.constant || in.data.empty()) continue;
      const Tensor& t = prog.tensors[tensors.at(in.tensor)];
      int64_t n = 1;
      for (int64_t s : t.shape) n *= s;
      in.constant_values = read_values(files, in.data, t.dtype, n);
    }
  }
  return b;
}

Bundle read_bundle(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return read_bundle(directory_source(path));
  std::string name = path.filename().string();
  if (name.ends_with(".tar")) return read_bundle(tar_source(path));
  if (name.ends_with(".tar.gz") || name.ends_with(".tgz"))
    throw BundleError({Issue{name, "", "compressed archives are read by the Python reader (dirigo.bundle); "
                                       "extract it or use a plain .tar"}});
  throw BundleError({Issue{path.string(), "", "not a bundle directory or .tar archive"}});
}

}  // namespace dirigo::bundle
