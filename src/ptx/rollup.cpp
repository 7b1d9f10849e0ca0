// Math-idiom rollup: template matching over def-use chains (see rollup.h).
//
// A template names an anchor (the idiom's last instruction), how to find the idiom's input x
// from the anchor's backward slice, and the hex constants that must occur in the slice.
// The slice is collected backward from the anchor through register operands, stopping at x;
// it must consist of pure register arithmetic (no memory, no control flow), every register it
// defines must have exactly one definition, and none may be used outside the slice.
#include "ptx/rollup.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

namespace dirigo::ptx {
namespace {

struct DefUse {
  std::unordered_map<std::string, int> def;       // register -> defining instruction (-1: several)
  std::unordered_map<std::string, std::vector<int>> uses;
};

void collect_regs(const Operand& o, std::vector<std::string>& out) {
  if (o.kind == Operand::Kind::Register) out.push_back(o.name);
  if (o.kind == Operand::Kind::Address && o.base_is_register) out.push_back(o.name);
  for (const auto& e : o.elements) collect_regs(e, out);
}

// Destination and source registers of an instruction.
void regs_of(const Instruction& in, std::vector<std::string>& dst, std::vector<std::string>& src) {
  int nd = opcode_info(in.op).num_dests;
  if (nd < 0) nd = 0;
  for (size_t i = 0; i < in.operands.size(); ++i) {
    std::vector<std::string> r;
    collect_regs(in.operands[i], r);
    auto& out = (int(i) < nd && in.operands[i].kind != Operand::Kind::Address) ? dst : src;
    out.insert(out.end(), r.begin(), r.end());
  }
  if (in.guard) src.push_back(in.guard->reg);
}

DefUse def_use(const Function& f) {
  DefUse du;
  for (int i = 0; i < int(f.body.size()); ++i) {
    std::vector<std::string> d, s;
    regs_of(f.body[i], d, s);
    for (auto& r : d) {
      auto [it, fresh] = du.def.emplace(r, i);
      if (!fresh) it->second = -1;
    }
    for (auto& r : s) du.uses[r].push_back(i);
  }
  return du;
}

bool is_pure_arith(const Instruction& in) {
  if (in.guard) return in.op == Opcode::Mov;  // nvcc never guards idiom arithmetic
  switch (in.op) {
    case Opcode::Add: case Opcode::Sub: case Opcode::Mul: case Opcode::Fma: case Opcode::Mad:
    case Opcode::Neg: case Opcode::Abs: case Opcode::Mov: case Opcode::Cvt: case Opcode::Shl:
    case Opcode::Shr: case Opcode::And: case Opcode::Or: case Opcode::Ex2: case Opcode::Lg2:
    case Opcode::Rcp: case Opcode::Setp: case Opcode::Selp: case Opcode::Copysign:
    case Opcode::Min: case Opcode::Max: case Opcode::Div: case Opcode::Sqrt: case Opcode::Rsqrt:
      return true;
    default:
      return false;
  }
}

class Matcher {
 public:
  explicit Matcher(const Function& f) : f_(f), du_(def_use(f)) {}

  // The unique definition of a register, or -1.
  int def_of(const std::string& reg) const {
    auto it = du_.def.find(reg);
    return it == du_.def.end() ? -1 : it->second;
  }
  // Float bits of an operand that is an immediate or a register set once by `mov` of one.
  std::optional<uint64_t> const_bits(const Operand& o) const {
    if (o.kind == Operand::Kind::Float) return o.float_bits;
    if (o.kind != Operand::Kind::Register) return std::nullopt;
    int d = def_of(o.name);
    if (d < 0) return std::nullopt;
    const auto& in = f_.body[d];
    if (in.op == Opcode::Mov && !in.guard && in.operands.size() == 2 && in.operands[1].kind == Operand::Kind::Float)
      return in.operands[1].float_bits;
    return std::nullopt;
  }
  const Instruction* def_instr(const Operand& o) const {
    if (o.kind != Operand::Kind::Register) return nullptr;
    int d = def_of(o.name);
    return d < 0 ? nullptr : &f_.body[d];
  }

  // Backward slice from `anchor`, not crossing register `x`. Empty on failure.
  std::vector<int> slice(int anchor, const std::string& x, const std::string& stop2 = "", size_t max_size = 64) const {
    std::vector<int> out, stack{anchor};
    std::set<int> seen{anchor};
    while (!stack.empty()) {
      int i = stack.back();
      stack.pop_back();
      const auto& in = f_.body[i];
      if (!is_pure_arith(in)) return {};
      out.push_back(i);
      if (out.size() > max_size) return {};
      std::vector<std::string> d, s;
      regs_of(in, d, s);
      for (auto& r : s) {
        if (r == x || (i == anchor && !stop2.empty() && r == stop2)) continue;
        int di = def_of(r);
        if (di < 0 || di > i) return {};  // several definitions or an input we cannot see
        if (seen.insert(di).second) stack.push_back(di);
      }
    }
    return out;
  }

  // Instructions of the slice whose results are also used outside it (nvcc shares common
  // sub-expressions such as x*x), plus everything inside the slice they depend on: these stay
  // and execute normally; the rest of the slice is absorbed.
  std::set<int> escaping(const std::vector<int>& sl, int anchor) const {
    std::set<int> in(sl.begin(), sl.end()), keep;
    std::vector<int> stack;
    for (int i : sl) {
      if (i == anchor) continue;
      std::vector<std::string> d, s;
      regs_of(f_.body[i], d, s);
      for (auto& r : d) {
        auto it = du_.uses.find(r);
        if (it == du_.uses.end()) continue;
        for (int u : it->second)
          if (!in.count(u) && keep.insert(i).second) stack.push_back(i);
      }
    }
    while (!stack.empty()) {
      int i = stack.back();
      stack.pop_back();
      std::vector<std::string> d, s;
      regs_of(f_.body[i], d, s);
      for (auto& r : s) {
        int di = def_of(r);
        if (di >= 0 && in.count(di) && di != anchor && keep.insert(di).second) stack.push_back(di);
      }
    }
    return keep;
  }

  std::multiset<uint64_t> constants(const std::vector<int>& sl) const {
    std::multiset<uint64_t> out;
    for (int i : sl)
      for (const auto& o : f_.body[i].operands)
        if (o.kind == Operand::Kind::Float) out.insert(o.float_bits);
    return out;
  }

  const Function& f_;
  DefUse du_;
};

struct Template {
  std::string name;
  ir::Fn fn;
  std::vector<uint64_t> required;  // hex constants that must occur in the slice
  // Given the anchor, returns x (a register operand) or nullopt.
  std::function<std::optional<Operand>(const Matcher&, const Instruction&)> find_x;
  std::function<bool(const Instruction&)> is_anchor;
  bool negate = false;
};

bool has_opcode(const Instruction& in, Opcode op, bool approx) {
  return in.op == op && (!approx || in.mod.approx);
}

// The non-constant operand of the instruction defining `o` (for `op x, K` shapes).
std::optional<Operand> other_operand(const Matcher& m, const Instruction& in, uint64_t k) {
  for (size_t i = 1; i < in.operands.size(); ++i) {
    if (m.const_bits(in.operands[i]) == k) {
      for (size_t j = 1; j < in.operands.size(); ++j)
        if (j != i && in.operands[j].kind == Operand::Kind::Register && !m.const_bits(in.operands[j]))
          return in.operands[j];
    }
  }
  return std::nullopt;
}

// Searches the slice-to-be for the instruction that multiplies/fmas by `k` and returns its
// other operand: a bounded backward walk over definitions from `start`.
std::optional<Operand> find_operand_with_const(const Matcher& m, int start, uint64_t k, Opcode op) {
  std::vector<int> stack{start};
  std::set<int> seen{start};
  while (!stack.empty() && seen.size() < 64) {
    int i = stack.back();
    stack.pop_back();
    const auto& in = m.f_.body[i];
    if (in.op == op)
      if (auto x = other_operand(m, in, k)) return x;
    for (size_t j = 1; j < in.operands.size(); ++j) {
      const auto& o = in.operands[j];
      if (o.kind != Operand::Kind::Register) continue;
      int d = m.def_of(o.name);
      if (d >= 0 && d < i && seen.insert(d).second) stack.push_back(d);
    }
  }
  return std::nullopt;
}

constexpr uint64_t kNegLog2e = 0xBFB8AA3B, kLog2e = 0x3FB8AA3B, kLn2 = 0x3F317218, kTwoLog2e = 0x4038AA3B;

std::vector<Template> templates(const Function& f) {
  std::vector<Template> t;
  auto index_of = [&f](const Instruction& in) { return int(&in - f.body.data()); };
  // expf (default): 2^n * ex2(frac) with the range reduction constants.
  t.push_back({"expf", ir::Fn::Exp, {0x3BBB989D, 0xCB40007F, kLog2e, 0x32A57060},
               [index_of](const Matcher& m, const Instruction& a) {
                 return find_operand_with_const(m, index_of(a), 0x3BBB989D, Opcode::Fma);
               },
               [](const Instruction& in) {
                 return (in.op == Opcode::Mul || in.op == Opcode::Fma) && !in.mod.types.empty() && in.mod.types[0] == Type::F32;
               }});
  // tanhf (default): branch-free selp between the ex2/rcp path and an odd polynomial.
  t.push_back({"tanhf", ir::Fn::Tanh, {0x3F19999A, kTwoLog2e, 0x41102CB4},
               [](const Matcher& m, const Instruction& a) -> std::optional<Operand> {
                 // selp d, big, small, p ; p = setp.ge |x|, 0f3F19999A ; |x| = abs x
                 if (a.operands.size() != 4) return std::nullopt;
                 const Instruction* p = m.def_instr(a.operands[3]);
                 if (!p || p->op != Opcode::Setp || p->operands.size() < 3) return std::nullopt;
                 const Instruction* ab = m.def_instr(p->operands[1]);
                 if (!ab || ab->op != Opcode::Abs) return std::nullopt;
                 return ab->operands[1];
               },
               [](const Instruction& in) { return in.op == Opcode::Selp; }});
  // __expf / expf under --use_fast_math: ex2.approx(x * log2 e).
  t.push_back({"__expf", ir::Fn::Exp, {kLog2e},
               [](const Matcher& m, const Instruction& a) -> std::optional<Operand> {
                 const Instruction* mul = m.def_instr(a.operands[1]);
                 if (!mul || mul->op != Opcode::Mul) return std::nullopt;
                 return other_operand(m, *mul, kLog2e);
               },
               [](const Instruction& in) { return has_opcode(in, Opcode::Ex2, true); }});
  // __expf(-x): nvcc folds the negation into the constant
  t.push_back({"__expf(-x)", ir::Fn::Exp, {kNegLog2e},
               [](const Matcher& m, const Instruction& a) -> std::optional<Operand> {
                 const Instruction* mul = m.def_instr(a.operands[1]);
                 if (!mul || mul->op != Opcode::Mul) return std::nullopt;
                 return other_operand(m, *mul, kNegLog2e);
               },
               [](const Instruction& in) { return has_opcode(in, Opcode::Ex2, true); }, true});
  // __logf / logf under --use_fast_math: lg2.approx(x) * ln 2.
  t.push_back({"__logf", ir::Fn::Log, {kLn2},
               [](const Matcher& m, const Instruction& a) -> std::optional<Operand> {
                 for (size_t i = 1; i < a.operands.size(); ++i) {
                   const Instruction* lg = m.def_instr(a.operands[i]);
                   if (lg && has_opcode(*lg, Opcode::Lg2, true)) return lg->operands[1];
                 }
                 return std::nullopt;
               },
               [](const Instruction& in) { return in.op == Opcode::Mul; }});
  return t;
}

}  // namespace

Rollup rollup(const Function& f) {
  Rollup r;
  r.at.resize(f.body.size());
  Matcher m(f);
  auto tpls = templates(f);
  for (const auto& t : tpls) {
    for (int i = int(f.body.size()) - 1; i >= 0; --i) {
      if (r.at[i].kind != RolledInstr::Kind::Keep) continue;
      const auto& in = f.body[i];
      if (!t.is_anchor(in) || in.guard || in.operands.empty() || in.operands[0].kind != Operand::Kind::Register) continue;
      auto x = t.find_x(m, in);
      if (!x || x->kind != Operand::Kind::Register) continue;
      // an fma anchor (nvcc fused `acc + expf(x)`) keeps its addend outside the idiom
      std::optional<Operand> addend;
      if (in.op == Opcode::Fma && in.operands.size() == 4) addend = in.operands[3];
      if (addend && addend->kind == Operand::Kind::Register && addend->name == x->name) continue;
      auto sl = m.slice(i, x->name, addend && addend->kind == Operand::Kind::Register ? addend->name : "");
      if (sl.empty()) continue;
      if (std::any_of(sl.begin(), sl.end(), [&](int j) { return r.at[j].kind != RolledInstr::Kind::Keep; })) continue;
      auto consts = m.constants(sl);
      // constants may also sit in `mov` instructions inside the slice (counted above as operands)
      if (!std::all_of(t.required.begin(), t.required.end(), [&](uint64_t k) { return consts.count(k) > 0; })) continue;
      auto keep = m.escaping(sl, i);
      for (int j : sl)
        if (j != i && !keep.count(j)) r.at[j].kind = RolledInstr::Kind::Absorbed;
      auto& a = r.at[i];
      a.kind = RolledInstr::Kind::Math;
      a.fn = t.fn;
      a.dest = in.operands[0].name;
      a.args = {*x};
      a.addend = addend;
      a.negate = t.negate;
      a.idiom = t.name;
      r.matched.push_back(t.name);
    }
  }
  return r;
}

}  // namespace dirigo::ptx
