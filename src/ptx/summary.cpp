// Kernel summaries (summary.h).
#include "ptx/summary.h"

#include <map>
#include <set>
#include <sstream>

namespace dirigo::ptx {
namespace {

std::set<std::string> named_symbols(const Function& f) {
  std::set<std::string> out;
  for (const Instruction& ins : f.body) {
    std::vector<const Operand*> stack;
    for (const Operand& o : ins.operands) stack.push_back(&o);
    while (!stack.empty()) {
      const Operand* x = stack.back();
      stack.pop_back();
      for (const Operand& e : x->elements) stack.push_back(&e);
      if (x->kind == Operand::Kind::Symbol || (x->kind == Operand::Kind::Address && !x->base_is_register))
        out.insert(x->name);
    }
  }
  return out;
}

std::string param_type(const Param& p) {
  std::string t(type_name(p.type));
  for (uint64_t d : p.dims) t += "[" + std::to_string(d) + "]";
  return t;
}

void add_variable(KernelSummary& k, const Variable& v) {
  if (v.space == StateSpace::Shared) {
    bool unsized = !v.dims.empty() && v.dims[0] == 0;
    if (unsized) k.dynamic_shared.push_back(v.name);
    else k.static_shared_bytes += v.size_bytes();
  } else if (v.space == StateSpace::Local) {
    k.local_bytes += v.size_bytes();
  }
}

}  // namespace

std::vector<KernelSummary> summarize(const Module& m) {
  std::vector<KernelSummary> out;
  for (const Function* f : m.kernels()) {
    KernelSummary k;
    k.name = f->name;
    k.line = f->line;
    for (const Param& p : f->params)
      k.params.push_back({p.name, param_type(p), std::string(space_name(p.ptr_space)), p.size_bytes(), p.align});
    std::set<std::string> used = named_symbols(*f);
    for (const Variable& v : m.globals)
      if (used.count(v.name)) add_variable(k, v);
    for (const Variable& v : f->locals) add_variable(k, v);
    k.register_count = f->register_count();
    std::map<std::string, size_t> by_type;
    for (const RegDecl& d : f->regs) by_type[std::string(type_name(d.type))] += d.count < 0 ? 1 : size_t(d.count);
    k.registers_by_type.assign(by_type.begin(), by_type.end());
    k.instruction_count = f->body.size();
    for (const Instruction& ins : f->body) k.call_count += ins.op == Opcode::Call;
    out.push_back(std::move(k));
  }
  return out;
}

nlohmann::json to_json(const Module& m, const std::vector<KernelSummary>& kernels) {
  nlohmann::json j;
  j["version"] = m.version;
  j["target"] = m.target;
  j["address_size"] = m.address_size;
  j["kernels"] = nlohmann::json::array();
  for (const KernelSummary& k : kernels) {
    nlohmann::json jk;
    jk["name"] = k.name;
    jk["line"] = k.line;
    jk["params"] = nlohmann::json::array();
    for (const auto& p : k.params) {
      nlohmann::json jp{{"name", p.name}, {"type", p.type}, {"size", p.size_bytes}};
      if (!p.ptr_space.empty()) jp["ptr_space"] = p.ptr_space;
      if (p.align) jp["align"] = p.align;
      jk["params"].push_back(jp);
    }
    jk["static_shared_bytes"] = k.static_shared_bytes;
    jk["dynamic_shared"] = k.dynamic_shared;
    jk["local_bytes"] = k.local_bytes;
    jk["register_count"] = k.register_count;
    jk["registers"] = nlohmann::json::object();
    for (const auto& [t, n] : k.registers_by_type) jk["registers"][t] = n;
    jk["instruction_count"] = k.instruction_count;
    jk["external_calls"] = k.call_count;
    j["kernels"].push_back(jk);
  }
  return j;
}

std::string to_text(const std::vector<KernelSummary>& kernels) {
  std::ostringstream s;
  for (const KernelSummary& k : kernels) {
    s << k.name << "  (line " << k.line << ")\n  params:";
    if (k.params.empty()) s << " none";
    for (size_t i = 0; i < k.params.size(); ++i)
      s << (i ? ", " : " ") << k.params[i].type << (k.params[i].ptr_space.empty() ? "" : "*" + k.params[i].ptr_space)
        << " " << k.params[i].name;
    s << "\n  shared: " << k.static_shared_bytes << " bytes static";
    for (const auto& d : k.dynamic_shared) s << ", dynamic '" << d << "'";
    if (k.local_bytes) s << "; local: " << k.local_bytes << " bytes";
    s << "\n  registers: " << k.register_count << " (";
    for (size_t i = 0; i < k.registers_by_type.size(); ++i)
      s << (i ? ", " : "") << k.registers_by_type[i].first << " " << k.registers_by_type[i].second;
    s << ")\n  instructions: " << k.instruction_count;
    if (k.call_count) s << " (" << k.call_count << " external calls)";
    s << "\n";
  }
  return s.str();
}

}  // namespace dirigo::ptx
