#include "program/ssa.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "bundle/print.h"
#include "program/kernel_params.h"

namespace dirigo::program {
namespace {
using namespace dirigo::bundle;

struct RawRef {  // a tensor reference found in an op, before it becomes an Operand
  const TensorRef* ref;
  std::string path;
};

// Tensor references of ATen args/kwargs in order, lists flattened (explicit stack).
std::vector<RawRef> aten_refs(const AtenOp& a) {
  std::vector<RawRef> out;
  auto walk = [&](const Arg& root, std::string root_path) {
    std::vector<std::pair<const Arg*, std::string>> stack{{&root, std::move(root_path)}};
    while (!stack.empty()) {
      auto [arg, path] = std::move(stack.back());
      stack.pop_back();
      if (const auto* t = std::get_if<TensorRef>(&arg->value)) {
        out.push_back({t, path});
      } else if (const auto* l = std::get_if<ListArg>(&arg->value)) {
        for (size_t i = l->items.size(); i-- > 0;)
          stack.push_back({&l->items[i], fmt::format("{}.list[{}]", path, i)});
      }
    }
  };
  for (size_t i = 0; i < a.args.size(); ++i) walk(a.args[i], fmt::format("args[{}]", i));
  for (const auto& [k, v] : a.kwargs) walk(v, "kwargs." + k);
  return out;
}

class Builder {
 public:
  Builder(const Bundle& b, const Program& p) : b_(b), p_(p) { (void)b_; }

  SsaProgram run() {
    out_.name = p_.name;
    out_.role = p_.role;
    out_.storages = p_.storages;
    for (size_t i = 0; i < p_.storages.size(); ++i) {
      storage_index_.emplace(p_.storages[i].id, int32_t(i));
      out_.values.push_back(Value{int32_t(i), 0, -1});
    }
    out_.storage_tensors.resize(p_.storages.size());
    for (size_t i = 0; i < p_.tensors.size(); ++i) {
      const Tensor& t = p_.tensors[i];
      tensor_index_.emplace(t.id, i);
      out_.storage_tensors[size_t(storage_of(t.id))].push_back(t.id);
    }
    current_.resize(p_.storages.size());
    for (size_t s = 0; s < current_.size(); ++s) current_[s] = ValueId(s);
    touched_.assign(p_.storages.size(), false);
    input_storage_.assign(p_.storages.size(), false);
    for (const auto& in : p_.inputs) {
      int32_t s = storage_of(in.tensor);
      input_storage_[size_t(s)] = true;
      touched_[size_t(s)] = true;
      out_.inputs.push_back({in.name, in.kind, view_of(in.tensor), in.constant, in.sha256});
    }
    for (size_t i = 0; i < p_.ops.size(); ++i) add_op(i);
    for (const auto& o : p_.outputs) out_.outputs.push_back({o.name, view_of(o.tensor)});
    out_.final_value = current_;
    for (const auto& in : out_.inputs) {
      int32_t s = out_.value(in.view.value).storage;
      if (current_[size_t(s)] != in.view.value) out_.mutated_inputs.push_back(in.name);
    }
    collect_aliasing();
    return std::move(out_);
  }

 private:
  const Tensor& tensor(const std::string& id) const {
    auto it = tensor_index_.find(id);
    if (it == tensor_index_.end()) throw std::runtime_error("program " + p_.name + ": unknown tensor id " + id);
    return p_.tensors[it->second];
  }
  int32_t storage_of(const std::string& tensor_id) const {
    auto it = storage_index_.find(tensor(tensor_id).storage);
    if (it == storage_index_.end())
      throw std::runtime_error("program " + p_.name + ": tensor " + tensor_id + " has an unknown storage");
    return it->second;
  }
  View view_of(const std::string& tensor_id) const {
    const Tensor& t = tensor(tensor_id);
    return View{t.id, current_[size_t(storage_of(tensor_id))], t.offset, t.shape, t.strides, t.dtype};
  }

  void add_read(SsaOp& op, const TensorRef& r, std::string path, bool writable = false) {
    Operand o{std::move(path), view_of(r.tensor), r.byte_offset, writable};
    const Value& v = out_.value(o.view.value);
    if (v.version == 0 && !input_storage_[size_t(v.storage)])
      out_.external_reads.push_back({out_.ops.size(), o.path, r.tensor});
    op.reads.push_back(std::move(o));
  }

  struct PendingWrite {
    int32_t storage;
    std::vector<std::string> tensors;
    bool potential;
    bool fresh;
  };
  static void note_write(std::vector<PendingWrite>& ws, int32_t storage, const std::string& tensor, bool potential,
                         bool fresh) {
    for (auto& w : ws) {
      if (w.storage != storage) continue;
      if (std::find(w.tensors.begin(), w.tensors.end(), tensor) == w.tensors.end()) w.tensors.push_back(tensor);
      w.potential = w.potential && potential;
      w.fresh = w.fresh && fresh;
      return;
    }
    ws.push_back({storage, {tensor}, potential, fresh});
  }

  void add_op(size_t index) {
    SsaOp op;
    op.index = index;
    op.op = p_.ops[index];
    std::vector<PendingWrite> writes;
    if (const auto* a = std::get_if<AtenOp>(&op.op)) {
      std::unordered_set<int32_t> read_storages;
      for (const auto& r : aten_refs(*a)) {
        add_read(op, *r.ref, r.path);
        read_storages.insert(storage_of(r.ref->tensor));
      }
      for (const auto& t : a->mutates) note_write(writes, storage_of(t), t, false, false);
      for (const auto& t : a->outputs) {
        if (std::find(a->mutates.begin(), a->mutates.end(), t) != a->mutates.end()) continue;
        int32_t s = storage_of(t);
        if (read_storages.count(s)) continue;  // a view of an operand: aliases, writes nothing
        note_write(writes, s, t, false, !touched_[size_t(s)]);
      }
    } else if (const auto* l = std::get_if<LaunchOp>(&op.op)) {
      auto params = kernel_params_from_mangled(l->kernel);
      bool known = params && params->size() == l->args.size();
      for (size_t i = 0; i < l->args.size(); ++i) {
        const auto* r = std::get_if<TensorRef>(&l->args[i].value);
        if (!r) continue;
        bool read_only = known && (*params)[i].pointer && (*params)[i].pointee_const;
        add_read(op, *r, fmt::format("args[{}]", i), !read_only);
        if (!read_only) note_write(writes, storage_of(r->tensor), r->tensor, true, false);
      }
    } else if (const auto* lib = std::get_if<LibraryOp>(&op.op)) {
      for (const auto& [k, v] : lib->args)
        if (const auto* r = std::get_if<TensorRef>(&v)) add_read(op, *r, "args." + k);
      for (const auto& t : lib->writes) note_write(writes, storage_of(t), t, false, false);
    } else {
      const auto& c = std::get<CopyOp>(op.op);
      add_read(op, c.src, "src");
      note_write(writes, storage_of(c.dst.tensor), c.dst.tensor, false, false);
    }
    for (const auto& r : op.reads) touched_[size_t(out_.value(r.view.value).storage)] = true;
    // Each written storage gets one new version; the regions are views of it.
    for (const auto& w : writes) {
      Write wr;
      wr.storage = w.storage;
      wr.before = current_[size_t(w.storage)];
      wr.after = ValueId(out_.values.size());
      wr.potential = w.potential;
      wr.fresh = w.fresh;
      out_.values.push_back(Value{w.storage, out_.value(wr.before).version + 1, int32_t(out_.ops.size())});
      current_[size_t(w.storage)] = wr.after;
      touched_[size_t(w.storage)] = true;
      for (const auto& t : w.tensors) wr.regions.push_back(view_of(t));
      op.writes.push_back(std::move(wr));
    }
    if (const auto* a = op.aten())
      for (const auto& t : a->outputs) op.results.push_back(view_of(t));
    out_.ops.push_back(std::move(op));
  }

  static bool overlap(const View& x, const View& y) {
    Extent a = x.extent(), b = y.extent();
    if (a.status != Extent::Status::Ok || b.status != Extent::Status::Ok) return a.status == Extent::Status::Overflow;
    return a.lo < b.hi && b.lo < a.hi;
  }

  void collect_aliasing() {
    auto storage = [&](const View& v) { return out_.value(v.value).storage; };
    const auto& ins = out_.inputs;
    const auto& outs = out_.outputs;
    for (size_t i = 0; i < ins.size(); ++i)
      for (size_t j = i + 1; j < ins.size(); ++j)
        if (storage(ins[i].view) == storage(ins[j].view))
          out_.aliasing.push_back({AliasFact::Kind::InputInput, ins[i].name, ins[j].name, overlap(ins[i].view, ins[j].view)});
    for (const auto& o : outs)
      for (const auto& in : ins)
        if (storage(o.view) == storage(in.view))
          out_.aliasing.push_back({AliasFact::Kind::OutputInput, o.name, in.name, overlap(o.view, in.view)});
    for (size_t i = 0; i < outs.size(); ++i)
      for (size_t j = i + 1; j < outs.size(); ++j)
        if (storage(outs[i].view) == storage(outs[j].view))
          out_.aliasing.push_back(
              {AliasFact::Kind::OutputOutput, outs[i].name, outs[j].name, overlap(outs[i].view, outs[j].view)});
  }

  const Bundle& b_;
  const Program& p_;
  SsaProgram out_;
  std::unordered_map<std::string, int32_t> storage_index_;
  std::unordered_map<std::string, size_t> tensor_index_;
  std::vector<ValueId> current_;
  std::vector<bool> touched_, input_storage_;
};

}  // namespace

bool SsaProgram::is_input_storage(int32_t storage) const {
  for (const auto& in : inputs)
    if (value(in.view.value).storage == storage) return true;
  return false;
}

SsaProgram to_ssa(const Bundle& b, const Program& program) { return Builder(b, program).run(); }

std::string value_name(const SsaProgram& p, ValueId v) {
  if (v < 0 || size_t(v) >= p.values.size()) return "?";
  const Value& val = p.value(v);
  return fmt::format("{}@v{}", p.storages[size_t(val.storage)].id, val.version);
}

std::string describe(const SsaProgram& p) {
  std::string s = fmt::format("program {} ({})\n", p.name, role_name(p.role));
  for (const auto& in : p.inputs)
    s += fmt::format("  {} {} = {} {}\n", input_kind_name(in.kind), in.name, in.view.tensor, value_name(p, in.view.value));
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const SsaOp& op = p.ops[i];
    s += fmt::format("  [{}] {}\n", i, describe_op(op.op));
    for (const auto& r : op.reads)
      s += fmt::format("        reads {} {} {}{}\n", r.path, r.view.tensor, value_name(p, r.view.value),
                       r.writable ? " (writable)" : "");
    for (const auto& w : op.writes) {
      std::string via;
      for (const auto& r : w.regions) via += (via.empty() ? "" : ", ") + r.tensor;
      s += fmt::format("        {} {} -> {} via {}{}\n", w.potential ? "may write" : "writes", value_name(p, w.before),
                       value_name(p, w.after), via, w.fresh ? " (fresh)" : "");
    }
  }
  for (const auto& o : p.outputs) s += fmt::format("  output {} = {} {}\n", o.name, o.view.tensor, value_name(p, o.view.value));
  return s;
}

}  // namespace dirigo::program
