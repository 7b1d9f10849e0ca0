// Inlining of .func calls (see inline.h).
#include "ptx/inline.h"

#include <unordered_map>
#include <unordered_set>

namespace dirigo::ptx {
namespace {

struct CallSite {
  std::vector<std::string> returns;  // caller variables receiving the return values
  std::string callee;
  std::vector<std::string> args;     // caller variables holding the arguments
};

[[noreturn]] void fail_at(const Instruction& ins, const std::string& reason, const std::string& token) {
  throw ParseError(ins.loc.ptx_line, ins.loc.ptx_col, reason, token);
}

std::vector<std::string> list_names(const Instruction& ins, const Operand& list) {
  std::vector<std::string> out;
  for (const Operand& e : list.elements) {
    if (e.kind != Operand::Kind::Symbol && e.kind != Operand::Kind::Register)
      fail_at(ins, "call argument is not a variable", e.name);
    out.push_back(e.name);
  }
  return out;
}

// call [(r...),] f [, (a...)] [, proto]
CallSite decode_call(const Instruction& ins) {
  CallSite cs;
  size_t i = 0;
  const auto& ops = ins.operands;
  if (i < ops.size() && ops[i].kind == Operand::Kind::List) cs.returns = list_names(ins, ops[i++]);
  if (i >= ops.size()) fail_at(ins, "call without a callee", ins.text);
  if (ops[i].kind != Operand::Kind::Symbol) fail_at(ins, "indirect call through a register is not supported", ops[i].name);
  cs.callee = ops[i++].name;
  if (i < ops.size() && ops[i].kind == Operand::Kind::List) cs.args = list_names(ins, ops[i++]);
  return cs;
}

// Functions that `f` calls (with bodies), in order of appearance.
std::vector<std::string> callees(const Module& m, const Function& f) {
  std::vector<std::string> out;
  for (const Instruction& ins : f.body) {
    if (ins.op != Opcode::Call) continue;
    CallSite cs = decode_call(ins);
    const Function* g = m.find_function(cs.callee);
    if (g && g->has_body) out.push_back(cs.callee);
  }
  return out;
}

// Callees before callers; throws on a cycle. Iterative DFS (white/grey/black).
std::vector<std::string> bottom_up_order(const Module& m) {
  enum Color { White, Grey, Black };
  std::unordered_map<std::string, Color> color;
  std::vector<std::string> order;
  for (const Function& root : m.functions) {
    if (!root.has_body || color[root.name] != White) continue;
    struct Frame { std::string name; std::vector<std::string> next; size_t i = 0; };
    std::vector<Frame> stack;
    color[root.name] = Grey;
    stack.push_back({root.name, callees(m, root)});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.i == top.next.size()) {
        color[top.name] = Black;
        order.push_back(top.name);
        stack.pop_back();
        continue;
      }
      std::string g = top.next[top.i++];
      if (color[g] == Grey) {
        std::string cycle;
        bool on = false;
        for (const Frame& fr : stack) {
          on = on || fr.name == g;
          if (on) cycle += fr.name + " -> ";
        }
        cycle += g;
        const Function* caller = m.find_function(top.name);
        for (const Instruction& ins : caller->body)
          if (ins.op == Opcode::Call && decode_call(ins).callee == g)
            fail_at(ins, "recursive call cycle " + cycle + " cannot be inlined", g);
        throw ParseError(caller->line, 1, "recursive call cycle " + cycle + " cannot be inlined", g);
      }
      if (color[g] == White) {
        color[g] = Grey;
        stack.push_back({g, callees(m, *m.find_function(g))});
      }
    }
  }
  return order;
}

class Renamer {
 public:
  Renamer(const Function& callee, const CallSite& cs, const Instruction& call, int id)
      : callee_(callee), suffix_("$i" + std::to_string(id)) {
    if (cs.args.size() != callee.params.size())
      fail_at(call, "call passes " + std::to_string(cs.args.size()) + " arguments, '" + callee.name +
                        "' takes " + std::to_string(callee.params.size()), callee.name);
    if (cs.returns.size() != callee.returns.size())
      fail_at(call, "call expects " + std::to_string(cs.returns.size()) + " return values, '" + callee.name +
                        "' returns " + std::to_string(callee.returns.size()), callee.name);
    for (size_t k = 0; k < cs.args.size(); ++k) symbols_[callee.params[k].name] = cs.args[k];
    for (size_t k = 0; k < cs.returns.size(); ++k) symbols_[callee.returns[k].name] = cs.returns[k];
    for (const auto& [label, _] : callee.labels) symbols_[label] = label + suffix_;
    for (const Variable& v : callee.locals) symbols_[v.name] = v.name + suffix_;
    for (const RegDecl& d : callee.regs)
      if (d.count < 0) singles_[d.name] = d.name + suffix_;
  }

  std::string ret_label() const { return "$Lret" + suffix_; }

  RegDecl reg(const RegDecl& d) const {
    RegDecl out = d;
    out.name = d.count < 0 ? d.name + suffix_ : d.name + suffix_ + "_";
    return out;
  }

  std::string register_name(const std::string& r) const {
    auto it = singles_.find(r);
    if (it != singles_.end()) return it->second;
    for (const RegDecl& d : callee_.regs) {
      if (d.count < 0 || r.size() <= d.name.size() || r.compare(0, d.name.size(), d.name) != 0) continue;
      if (!callee_.register_type(r)) continue;
      std::string digits = r.substr(d.name.size());
      bool all = !digits.empty();
      for (char c : digits) all &= bool(std::isdigit((unsigned char)c));
      if (all) return d.name + suffix_ + "_" + digits;
    }
    return r;  // special registers (%tid.x) keep their names
  }

  std::string symbol(const std::string& s) const {
    auto it = symbols_.find(s);
    return it == symbols_.end() ? s : it->second;  // module-scope names stay
  }

  void operand(Operand& o) const {
    std::vector<Operand*> stack{&o};
    while (!stack.empty()) {
      Operand* x = stack.back();
      stack.pop_back();
      for (Operand& e : x->elements) stack.push_back(&e);
      if (x->kind == Operand::Kind::Register || (x->kind == Operand::Kind::Address && x->base_is_register))
        x->name = register_name(x->name);
      else if (x->kind == Operand::Kind::Symbol || x->kind == Operand::Kind::Address)
        x->name = symbol(x->name);
    }
  }

 private:
  const Function& callee_;
  std::string suffix_;
  std::unordered_map<std::string, std::string> symbols_, singles_;
};

Instruction branch_to(const std::string& label, const SourceLoc& loc, std::optional<Guard> guard) {
  Instruction b;
  b.op = Opcode::Bra;
  b.text = "bra.uni";
  b.mod.uni = true;
  b.mod.words = {"uni"};
  b.guard = std::move(guard);
  Operand t;
  t.kind = Operand::Kind::Symbol;
  t.name = label;
  b.operands.push_back(t);
  b.loc = loc;
  return b;
}

void inline_into(const Module& m, Function& caller) {
  bool any = false;
  for (const Instruction& ins : caller.body)
    if (ins.op == Opcode::Call) {
      const Function* g = m.find_function(decode_call(ins).callee);
      any = any || (g && g->has_body);
    }
  if (!any) return;

  // label positions by old index, so they can be re-pointed into the new body
  std::unordered_map<size_t, std::vector<std::string>> labels_at;
  for (const auto& [name, idx] : caller.labels) labels_at[idx].push_back(name);
  std::vector<Instruction> body;
  std::unordered_map<std::string, size_t> labels;
  int next_id = 1;
  std::vector<Variable> new_locals;
  std::vector<RegDecl> new_regs;
  for (size_t i = 0; i <= caller.body.size(); ++i) {
    if (auto it = labels_at.find(i); it != labels_at.end())
      for (const std::string& name : it->second) labels[name] = body.size();
    if (i == caller.body.size()) break;
    const Instruction& ins = caller.body[i];
    const Function* g = nullptr;
    CallSite cs;
    if (ins.op == Opcode::Call) {
      cs = decode_call(ins);
      g = m.find_function(cs.callee);
    }
    if (!g || !g->has_body) {
      body.push_back(ins);
      continue;
    }
    int id = next_id++;
    Renamer rn(*g, cs, ins, id);
    std::string skip = "$Lskip$i" + std::to_string(id);
    if (ins.guard) {  // @p call f  ->  @!p bra skip; <body>; skip:
      Guard inv = *ins.guard;
      inv.negated = !inv.negated;
      body.push_back(branch_to(skip, ins.loc, inv));
    }
    for (const RegDecl& d : g->regs) new_regs.push_back(rn.reg(d));
    for (const Variable& v : g->locals) {
      Variable copy = v;
      copy.name = rn.symbol(v.name);
      new_locals.push_back(std::move(copy));
    }
    std::unordered_map<size_t, std::vector<std::string>> g_labels_at;
    for (const auto& [name, idx] : g->labels) g_labels_at[idx].push_back(name);
    for (size_t j = 0; j <= g->body.size(); ++j) {
      if (auto it = g_labels_at.find(j); it != g_labels_at.end())
        for (const std::string& name : it->second) labels[rn.symbol(name)] = body.size();
      if (j == g->body.size()) break;
      const Instruction& src = g->body[j];
      if (src.op == Opcode::Ret) {
        bool last = j + 1 == g->body.size();
        if (!last || src.guard) {
          std::optional<Guard> guard = src.guard;
          if (guard) guard->reg = rn.register_name(guard->reg);
          body.push_back(branch_to(rn.ret_label(), src.loc, guard));
        }
        continue;
      }
      Instruction copy = src;
      if (copy.guard) copy.guard->reg = rn.register_name(copy.guard->reg);
      for (Operand& o : copy.operands) rn.operand(o);
      body.push_back(std::move(copy));
    }
    labels[rn.ret_label()] = body.size();
    if (ins.guard) labels[skip] = body.size();
  }
  caller.body = std::move(body);
  caller.labels = std::move(labels);
  for (auto& v : new_locals) caller.locals.push_back(std::move(v));
  for (auto& d : new_regs) caller.regs.push_back(std::move(d));
}

}  // namespace

void inline_calls(Module& m) {
  for (const std::string& name : bottom_up_order(m)) inline_into(m, *m.find_function(name));
}

}  // namespace dirigo::ptx
