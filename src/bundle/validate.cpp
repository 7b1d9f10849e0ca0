// The semantic rules of format v1. Each issue carries the JSON path of the
// offending field; the model keeps file order, so model positions are JSON paths.
#include <cctype>
#include <cmath>
#include <unordered_set>

#include "bundle/detail.h"
#include "bundle/io.h"
#include "bundle/sha256.h"

namespace dirigo::bundle {
namespace {
using detail::child;
using detail::elem;
using detail::quote;

constexpr int64_t kMaxRecordedDim = 4294967295;  // a launch dimension is an unsigned int

bool valid_program_name(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) return false;
  return true;
}

bool is_hex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// `.entry name(` or `.entry name` followed by whitespace, anywhere in the text.
bool ptx_has_entry(std::string_view ptx, std::string_view kernel) {
  for (size_t at = ptx.find(".entry"); at != std::string_view::npos; at = ptx.find(".entry", at + 1)) {
    size_t p = at + 6;
    while (p < ptx.size() && (ptx[p] == ' ' || ptx[p] == '\t')) ++p;
    if (ptx.substr(p, kernel.size()) != kernel) continue;
    size_t end = p + kernel.size();
    if (end == ptx.size() || ptx[end] == '(' || std::isspace(static_cast<unsigned char>(ptx[end]))) return true;
  }
  return false;
}

class Validator {
 public:
  explicit Validator(const Bundle& b) : b_(b) {}

  std::vector<Issue> run() {
    if (b_.version != kFormatVersion)
      add("version", "unsupported version " + std::to_string(b_.version));
    check_modules();
    if (b_.programs.empty()) add("programs", "a bundle needs at least one program");
    std::unordered_set<std::string> names;
    for (size_t p = 0; p < b_.programs.size(); ++p) {
      const Program& prog = b_.programs[p];
      std::string pp = elem("programs", p);
      if (!valid_program_name(prog.name))
        add(child(pp, "name"), "program name " + quote(prog.name) + " must match [A-Za-z0-9_.-]+");
      else if (!names.insert(prog.name).second)
        add(child(pp, "name"), "duplicate program name " + quote(prog.name));
      ProgramChecker{*this, prog, pp, {}, {}}.run();
    }
    check_match();
    if (b_.tolerance) {
      if (!(b_.tolerance->atol >= 0) || std::isinf(b_.tolerance->atol))
        add("tolerance.atol", "must be a finite number >= 0");
      if (!(b_.tolerance->rtol >= 0) || std::isinf(b_.tolerance->rtol))
        add("tolerance.rtol", "must be a finite number >= 0");
    }
    return std::move(issues_);
  }

  void add(std::string path, std::string msg) {
    issues_.push_back({std::string(kManifestName), std::move(path), std::move(msg)});
  }
  // An id or name (key, at path) is non-empty and used once: first_use() records it, false on a repeat.
  template <class FirstUse>
  void require_unique(const std::string& path, const std::string& key, const std::string& what, FirstUse first_use) {
    if (key.empty()) add(path, "empty " + what);
    else if (!first_use()) add(path, "duplicate " + what + " " + quote(key));
  }

 private:
  void check_modules() {
    std::unordered_set<std::string> ids;
    for (size_t i = 0; i < b_.modules.size(); ++i) {
      const Module& m = b_.modules[i];
      std::string mp = elem("modules", i);
      require_unique(child(mp, "id"), m.id, "module id", [&] { return ids.insert(m.id).second; });
      if (!detail::is_safe_relative_path(m.path))
        add(child(mp, "path"), "path " + quote(m.path) + " must be relative and stay inside the bundle");
      if (!m.sha256.empty()) {
        if (!is_hex64(m.sha256)) {
          add(child(mp, "sha256"), "expected 64 hex digits, got " + quote(m.sha256));
        } else if (m.ptx) {
          std::string actual = sha256_hex(*m.ptx);
          if (actual != lower(m.sha256))
            add(child(mp, "sha256"), "does not match " + quote(m.path) + " (its sha256 is " + actual + ")");
        }
      }
    }
  }

  void check_match() {
    if (!b_.match) return;
    auto check = [&](const std::vector<std::pair<std::string, std::string>>& pairs, const char* key, bool outputs) {
      std::string base = child("match", key);
      for (size_t i = 0; i < pairs.size(); ++i) {
        const std::string* sides[2] = {&pairs[i].first, &pairs[i].second};
        for (size_t s = 0; s < 2; ++s)
          if (!resolve_interface_ref(b_, *sides[s], outputs))
            add(elem(elem(base, i), s), std::string("no ") + (outputs ? "output" : "input") + " named " +
                                            quote(*sides[s]) + " (expected \"<program>.<name>\")");
      }
    };
    check(b_.match->inputs, "inputs", false);
    check(b_.match->outputs, "outputs", true);
  }

  struct ProgramChecker {
    Validator& v;
    const Program& p;
    std::string base;
    std::unordered_map<std::string, size_t> storages, tensors;

    void add(const std::string& path, std::string msg) { v.add(path, std::move(msg)); }

    void run() {
      check_storages();
      check_tensors();
      check_interface();
      for (size_t i = 0; i < p.ops.size(); ++i) check_op(p.ops[i], elem(child(base, "ops"), i));
    }

    void check_storages() {
      for (size_t i = 0; i < p.storages.size(); ++i) {
        const Storage& s = p.storages[i];
        std::string sp = elem(child(base, "storages"), i);
        v.require_unique(child(sp, "id"), s.id, "storage id", [&] { return storages.emplace(s.id, i).second; });
        if (s.nbytes < 0) add(child(sp, "nbytes"), "negative size " + std::to_string(s.nbytes));
      }
    }

    void check_tensors() {
      for (size_t i = 0; i < p.tensors.size(); ++i) {
        const Tensor& t = p.tensors[i];
        std::string tp = elem(child(base, "tensors"), i);
        v.require_unique(child(tp, "id"), t.id, "tensor id", [&] { return tensors.emplace(t.id, i).second; });
        auto st = storages.find(t.storage);
        if (st == storages.end()) add(child(tp, "storage"), "unknown storage id " + quote(t.storage));
        if (t.shape.size() != t.strides.size()) {
          add(child(tp, "strides"), "has " + std::to_string(t.strides.size()) + " entries but shape has " +
                                        std::to_string(t.shape.size()));
          continue;
        }
        bool sizes_ok = true;
        int64_t numel = 1;
        for (size_t d = 0; d < t.shape.size(); ++d) {
          if (t.shape[d] < 0) {
            add(elem(child(tp, "shape"), d), "negative size " + std::to_string(t.shape[d]));
            sizes_ok = false;
          } else if (__builtin_mul_overflow(numel, t.shape[d], &numel)) {
            add(child(tp, "shape"), "element count overflows 64 bits");
            sizes_ok = false;
            break;
          }
        }
        if (t.offset < 0) {
          add(child(tp, "offset"), "negative offset " + std::to_string(t.offset));
          sizes_ok = false;
        }
        if (!sizes_ok || st == storages.end()) continue;
        Extent e = t.extent();
        const Storage& s = p.storages[st->second];
        int64_t end_byte;
        if (e.status == Extent::Status::Overflow ||
            (e.status == Extent::Status::Ok && __builtin_mul_overflow(e.hi, int64_t(element_size(t.dtype)), &end_byte))) {
          add(tp, "view extent overflows 64 bits");
        } else if (e.status == Extent::Status::Ok && e.lo < 0) {
          add(child(tp, "strides"), "view reaches element " + std::to_string(e.lo) + ", before the start of storage " +
                                        quote(s.id));
        } else if (e.status == Extent::Status::Ok && end_byte > s.nbytes) {
          add(tp, "view extent [" + std::to_string(e.lo) + ", " + std::to_string(e.hi) + ") elements of " +
                      std::string(dtype_name(t.dtype)) + " needs " + std::to_string(end_byte) + " bytes, storage " +
                      quote(s.id) + " has " + std::to_string(s.nbytes));
        }
      }
    }

    const Tensor* tensor_at(const std::string& id, const std::string& path) {
      auto it = tensors.find(id);
      if (it == tensors.end()) {
        add(path, "unknown tensor id " + quote(id));
        return nullptr;
      }
      return &p.tensors[it->second];
    }

    void check_data_fields(const std::string& data, const std::string& sha256, const std::string& path) {
      if (!data.empty() && !detail::is_safe_relative_path(data))
        add(child(path, "data"), "path " + quote(data) + " must be relative and stay inside the bundle");
      if (!sha256.empty() && !is_hex64(sha256))
        add(child(path, "sha256"), "expected 64 hex digits, got " + quote(sha256));
    }

    void check_interface() {
      // inputs and outputs alike: unique non-empty names, a tensor each, well-formed data fields
      auto check_side = [&](const auto& entries, const char* key, const std::string& what) {
        std::unordered_set<std::string> names;
        for (size_t i = 0; i < entries.size(); ++i) {
          const auto& io = entries[i];
          std::string ip = elem(child(base, key), i);
          v.require_unique(child(ip, "name"), io.name, what, [&] { return names.insert(io.name).second; });
          tensor_at(io.tensor, child(ip, "tensor"));
          check_data_fields(io.data, io.sha256, ip);
        }
      };
      check_side(p.inputs, "inputs", "input name");
      check_side(p.outputs, "outputs", "output name");
    }

    // A pointer-style reference (launch, copy, library): the address must land inside the storage.
    void check_pointer_ref(const TensorRef& r, const std::string& path, int64_t nbytes = 0) {
      const Tensor* t = tensor_at(r.tensor, child(path, "tensor"));
      if (!t) return;
      auto st = storages.find(t->storage);
      if (st == storages.end() || t->offset < 0) return;  // reported with the tensor
      int64_t start, end;
      int64_t bo = r.byte_offset.value_or(0);
      if (__builtin_mul_overflow(t->offset, int64_t(element_size(t->dtype)), &start) ||
          __builtin_add_overflow(start, bo, &start) || __builtin_add_overflow(start, nbytes, &end) || start < 0 ||
          end > p.storages[st->second].nbytes)
        add(child(path, "byte_offset"), "points outside storage " + quote(t->storage) + " (" +
                                            std::to_string(p.storages[st->second].nbytes) + " bytes)");
    }

    enum class ArgContext { Aten, Launch };

    using ArgStack = std::vector<std::pair<const Arg*, std::string>>;

    // Lists nest at most 16 deep (the reader's cap); walk them with an explicit stack anyway.
    void walk_args(ArgStack stack, ArgContext ctx) {
      while (!stack.empty()) {
        auto [a, ap] = stack.back();
        stack.pop_back();
        check_arg(*a, ap, ctx, stack);
      }
    }
    void check_args(const std::vector<Arg>& args, const std::string& path, ArgContext ctx) {
      ArgStack stack;
      for (size_t i = args.size(); i-- > 0;) stack.push_back({&args[i], elem(path, i)});
      walk_args(std::move(stack), ctx);
    }

    void check_arg(const Arg& a, const std::string& ap, ArgContext ctx,
                   ArgStack& stack) {
      bool launch = ctx == ArgContext::Launch;
      if (const auto* t = std::get_if<TensorRef>(&a.value)) {
        if (launch) check_pointer_ref(*t, ap);
        else tensor_at(t->tensor, child(ap, "tensor"));
      } else if (const auto* s = std::get_if<Scalar>(&a.value)) {
        bool ptx = ptx_scalar_bits(s->type) != 0;
        if (launch && !ptx)
          add(child(ap, "type"), "scalar type " + quote(scalar_type_name(s->type)) +
                                     " in a launch (expected a PTX type: u8..u64, s8..s64, b8..b64, f16, bf16, f32, f64, pred)");
        if (!launch && ptx)
          add(child(ap, "type"), "PTX scalar type " + quote(scalar_type_name(s->type)) +
                                     " in an aten op (expected float, int, bool or complex)");
      } else if (const auto* l = std::get_if<ListArg>(&a.value)) {
        if (launch) add(ap, "a list is not a launch argument");
        for (size_t i = l->items.size(); i-- > 0;) stack.push_back({&l->items[i], elem(child(ap, "list"), i)});
      } else if (std::holds_alternative<BytesArg>(a.value) || std::holds_alternative<PointerArg>(a.value)) {
        if (!launch) add(ap, "raw bytes and unbound pointers are launch arguments only");
      } else if (launch) {
        add(ap, "not a launch argument (expected tensor, scalar, bytes or pointer)");
      }
    }

    void check_tensor_ids(const std::vector<std::string>& ids, const std::string& path) {
      for (size_t i = 0; i < ids.size(); ++i) tensor_at(ids[i], elem(path, i));
    }

    void check_op(const Op& op, const std::string& path) {
      if (const auto* a = std::get_if<AtenOp>(&op)) {
        if (a->name.empty()) add(child(path, "name"), "empty operator name");
        check_args(a->args, child(path, "args"), ArgContext::Aten);
        ArgStack kwargs;
        for (size_t i = a->kwargs.size(); i-- > 0;)
          kwargs.push_back({&a->kwargs[i].second, child(child(path, "kwargs"), a->kwargs[i].first)});
        walk_args(std::move(kwargs), ArgContext::Aten);
        check_tensor_ids(a->outputs, child(path, "outputs"));
        check_tensor_ids(a->mutates, child(path, "mutates"));
      } else if (const auto* l = std::get_if<LaunchOp>(&op)) {
        check_launch(*l, path);
      } else if (const auto* lib = std::get_if<LibraryOp>(&op)) {
        for (const auto& [k, arg] : lib->args)
          if (const auto* t = std::get_if<TensorRef>(&arg)) check_pointer_ref(*t, child(child(path, "args"), k));
        check_tensor_ids(lib->writes, child(path, "writes"));
      } else {
        const auto& c = std::get<CopyOp>(op);
        if (c.nbytes < 0) add(child(path, "nbytes"), "negative size " + std::to_string(c.nbytes));
        int64_t n = std::max<int64_t>(c.nbytes, 0);
        check_pointer_ref(c.dst, child(path, "dst"), n);
        check_pointer_ref(c.src, child(path, "src"), n);
      }
    }

    void check_launch(const LaunchOp& l, const std::string& path) {
      const Module* m = v.b_.find_module(l.module);
      if (!m) add(child(path, "module"), "unknown module id " + quote(l.module));
      if (l.kernel.empty()) add(child(path, "kernel"), "empty kernel name");
      else if (m && m->ptx && !ptx_has_entry(*m->ptx, l.kernel))
        add(child(path, "kernel"), "no .entry " + quote(l.kernel) + " in " + quote(m->path));
      // A launch the GPU refuses (a zero grid, more than 1024 threads per block) is what the program did:
      // it is recorded and checked (a BUG of the candidate, check/launch_limits); only values no launch
      // record can hold are malformed.
      for (size_t d = 0; d < 3; ++d) {
        if (l.grid[d] < 0 || l.grid[d] > kMaxRecordedDim)
          add(elem(child(path, "grid"), d), "grid dimension " + std::to_string(l.grid[d]) + " must be in [0, " +
                                                std::to_string(kMaxRecordedDim) + "]");
        if (l.block[d] < 0 || l.block[d] > kMaxRecordedDim)
          add(elem(child(path, "block"), d), "block dimension " + std::to_string(l.block[d]) + " must be in [0, " +
                                                 std::to_string(kMaxRecordedDim) + "]");
      }
      if (l.shared_bytes < 0) add(child(path, "shared_bytes"), "negative size " + std::to_string(l.shared_bytes));
      check_args(l.args, child(path, "args"), ArgContext::Launch);
    }
  };

  const Bundle& b_;
  std::vector<Issue> issues_;
};

}  // namespace

std::vector<Issue> validate(const Bundle& b) { return Validator(b).run(); }

}  // namespace dirigo::bundle
