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

constexpr uint64_t kIntTag = uint64_t(1) << 63;  // integer constants in fingerprints

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
        else if (o.kind == Operand::Kind::Int) out.insert(uint64_t(o.int_value) | kIntTag);
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
               [index_of](const Matcher& m, const Instruction& a) -> std::optional<Operand> {
                 bool scales_ex2 = false;  // the anchor multiplies ex2.approx(frac) by 2^n
                 for (size_t k = 1; k <= 2 && k < a.operands.size(); ++k) {
                   const Instruction* d = m.def_instr(a.operands[k]);
                   if (d && has_opcode(*d, Opcode::Ex2, true)) scales_ex2 = true;
                 }
                 if (!scales_ex2) return std::nullopt;
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
                 for (size_t i = 1; i <= 2 && i < a.operands.size(); ++i) {
                   const Instruction* lg = m.def_instr(a.operands[i]);
                   if (lg && has_opcode(*lg, Opcode::Lg2, true) && m.const_bits(a.operands[3 - i]) == kLn2)
                     return lg->operands[1];
                 }
                 return std::nullopt;
               },
               [](const Instruction& in) { return in.op == Opcode::Mul || in.op == Opcode::Fma; }});
  return t;
}

// ---- region idioms: logf, log1pf, erff contain a data-dependent branch and registers with
// several definitions (the result is selected by control flow). The idiom is a contiguous
// range of instructions [start, end]: the backward closure from the result through every
// definition of every register (and the guards of the branches inside), stopping at x. All of
// it must be pure arithmetic or branches whose targets stay inside (start, end + 1].
struct RegionTemplate {
  std::string name;
  ir::Fn fn;
  std::vector<uint64_t> required;
  // anchor index -> x operand, or nullopt
  std::function<std::optional<Operand>(const Matcher&, int)> match;
};

// Whether instruction i lies between a branch of the slice and that branch's target.
bool skipped(const Function& f, const std::set<int>& slice, int i) {
  for (int b : slice) {
    if (f.body[b].op != Opcode::Bra) continue;
    auto t = f.labels.find(f.body[b].operands.at(0).name);
    if (t != f.labels.end() && b < i && i < int(t->second)) return true;
  }
  return false;
}

std::optional<std::vector<int>> region_slice(const Function& f, const Rollup& done, int end, const std::string& result,
                                             const std::string& x) {
  auto absorbed = [&](int i) { return done.at[i].kind == RolledInstr::Kind::Absorbed; };
  auto math = [&](int i) { return done.at[i].kind == RolledInstr::Kind::Math; };
  std::unordered_map<std::string, std::vector<int>> defs;
  int lo_limit = std::max(0, end - 120);
  for (int i = lo_limit; i <= end; ++i) {
    if (absorbed(i)) continue;  // part of an idiom matched before: gone
    std::vector<std::string> d, s;
    regs_of(f.body[i], d, s);
    for (auto& r : d) defs[r].push_back(i);
  }
  std::set<int> in{end};
  std::set<std::string> seen_regs{x};
  std::vector<std::string> work;
  auto push_sources = [&](int i) {
    std::vector<std::string> d, s;
    regs_of(f.body[i], d, s);
    for (auto& r : s) if (seen_regs.insert(r).second) work.push_back(r);
  };
  push_sources(end);
  seen_regs.insert(result);
  for (int i : defs[result]) if (in.insert(i).second) push_sources(i);
  while (true) {
    while (!work.empty()) {
      std::string r = work.back();
      work.pop_back();
      auto it = defs.find(r);
      if (it == defs.end()) return std::nullopt;  // an input other than x
      for (int i : it->second) if (in.insert(i).second) push_sources(i);
    }
    // branches that skip a definition of the slice steer which one arrives: include them and
    // their guards (independent interleaved branches are not part of the idiom)
    bool grew = false;
    for (int i = *in.begin(); i <= end; ++i) {
      const auto& ins = f.body[i];
      if (ins.op != Opcode::Bra || in.count(i) || absorbed(i)) continue;
      auto t = f.labels.find(ins.operands.at(0).name);
      if (t == f.labels.end()) return std::nullopt;
      bool controls = false;
      for (int j : in) if (j > i && j < int(t->second)) controls = true;
      if (!controls) continue;
      if (int(t->second) <= i || int(t->second) > end + 1) return std::nullopt;
      in.insert(i);
      grew = true;
      if (ins.guard && seen_regs.insert(ins.guard->reg).second) work.push_back(ins.guard->reg);
    }
    if (!grew && work.empty()) break;
  }
  int start = *in.begin();
  // instructions of the range outside the slice (nvcc interleaves independent work) stay and
  // execute, so they must not sit where a branch of the idiom would have skipped them
  for (int i = start; i <= end; ++i) {
    if (absorbed(i)) continue;
    if (in.count(i)) {
      if (math(i) && i != end) return std::nullopt;  // nested idioms enter only as x
      if (f.body[i].op != Opcode::Bra && !is_pure_arith(f.body[i])) return std::nullopt;
      continue;
    }
    bool pure = math(i) || (is_pure_arith(f.body[i]) && !f.body[i].guard);
    if (!pure || skipped(f, in, i)) return std::nullopt;
  }
  // no label may be the target of a jump from outside the region
  for (const auto& [name, idx] : f.labels)
    if (int(idx) > start && int(idx) <= end)
      for (int i = 0; i < int(f.body.size()); ++i)
        if ((i < start || i > end) && f.body[i].op == Opcode::Bra && f.body[i].operands.at(0).name == name) return std::nullopt;
  return std::vector<int>(in.begin(), in.end());
}

std::vector<RegionTemplate> region_templates(const Function& f) {
  std::vector<RegionTemplate> t;
  // logf: selp d, -inf, v, (s == 0) with s = selp(x * 2^23, x, x < 2^-126)
  t.push_back({"logf", ir::Fn::Log, {uint64_t(-1059760811) | kIntTag, 0x3F317218, 0x4B000000, 0xFF800000},
               [&f](const Matcher& m, int i) -> std::optional<Operand> {
                 const auto& a = f.body[i];
                 if (a.op != Opcode::Selp || a.operands.size() != 4 || m.const_bits(a.operands[1]) != 0xFF800000) return std::nullopt;
                 const Instruction* p = m.def_instr(a.operands[3]);
                 if (!p || p->op != Opcode::Setp) return std::nullopt;
                 const Instruction* sc = m.def_instr(p->operands.at(1));
                 if (!sc || sc->op != Opcode::Selp || sc->operands.size() != 4) return std::nullopt;
                 return sc->operands[2];
               }});
  // log1pf: the final selp keeps -0 for x == -0; x enters through add.rz x, 1
  t.push_back({"log1pf", ir::Fn::Log1p, {uint64_t(-1061158912) | kIntTag, 0x3F317218, 0x3E800000},
               [&f](const Matcher& m, int i) -> std::optional<Operand> {
                 const auto& a = f.body[i];
                 if (a.op != Opcode::Selp || a.operands.size() != 4 || m.const_bits(a.operands[1]) != 0x80000000) return std::nullopt;
                 const Instruction* p = m.def_instr(a.operands[3]);
                 if (!p || p->op != Opcode::Setp) return std::nullopt;
                 return p->operands.at(1);
               }});
  // erff: copysign(x, 1 - ex2(...)) on the large branch; both branches meet at a label after it
  t.push_back({"erff", ir::Fn::Erf, {0x3F8060FE, 0x38EB4C3A},
               [&f](const Matcher& m, int i) -> std::optional<Operand> {
                 const auto& a = f.body[i];
                 if (a.op != Opcode::Copysign || a.operands.size() != 3) return std::nullopt;
                 return a.operands[1];
               }});
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
  // repeat: an idiom interleaved inside another's range is matched first, then ignored
  for (int pass = 0, found = 1; pass < 4 && found; ++pass) {
  found = 0;
  for (const auto& t : region_templates(f)) {
    for (int i = int(f.body.size()) - 1; i >= 0; --i) {
      if (r.at[i].kind != RolledInstr::Kind::Keep) continue;
      const auto& in = f.body[i];
      if (in.guard || in.operands.empty() || in.operands[0].kind != Operand::Kind::Register) continue;
      auto x = t.match(m, i);
      if (!x || x->kind != Operand::Kind::Register) continue;
      auto sl = region_slice(f, r, i, in.operands[0].name, x->name);
      if (!sl) continue;
      if (std::any_of(sl->begin(), sl->end(), [&](int j) { return r.at[j].kind != RolledInstr::Kind::Keep; })) continue;
      auto consts = m.constants(*sl);
      if (!std::all_of(t.required.begin(), t.required.end(), [&](uint64_t k) { return consts.count(k) > 0; })) continue;
      // slice results used elsewhere (a shared |x|) stay executable, with what they depend on,
      // provided no branch of the idiom would have skipped them; other defs of the result
      // register are absorbed with the idiom
      std::set<int> inside(sl->begin(), sl->end());
      std::set<int> keep;
      std::vector<int> stack;
      for (int j : *sl) {
        if (j == i) continue;
        std::vector<std::string> d, s;
        regs_of(f.body[j], d, s);
        for (auto& reg : d) {
          if (reg == in.operands[0].name) continue;
          auto it = m.du_.uses.find(reg);
          if (it != m.du_.uses.end())
            for (int u : it->second)
              if (!inside.count(u) && keep.insert(j).second) stack.push_back(j);
        }
      }
      while (!stack.empty()) {
        int j = stack.back();
        stack.pop_back();
        std::vector<std::string> d, s;
        regs_of(f.body[j], d, s);
        for (auto& reg : s) {
          // the latest definition inside the slice before j
          for (int k = j - 1; k >= *inside.begin(); --k) {
            if (!inside.count(k)) continue;
            std::vector<std::string> d2, s2;
            regs_of(f.body[k], d2, s2);
            if (std::find(d2.begin(), d2.end(), reg) == d2.end()) continue;
            if (keep.insert(k).second) stack.push_back(k);
            break;
          }
        }
      }
      if (std::any_of(keep.begin(), keep.end(), [&](int j) { return f.body[j].op == Opcode::Bra || skipped(f, inside, j); }))
        continue;
      for (int j : *sl) if (j != i && !keep.count(j)) r.at[j].kind = RolledInstr::Kind::Absorbed;
      auto& a = r.at[i];
      a.kind = RolledInstr::Kind::Math;
      a.fn = t.fn;
      a.dest = in.operands[0].name;
      a.args = {*x};
      a.idiom = t.name;
      r.matched.push_back(t.name);
      ++found;
    }
  }
  }
  return r;
}

}  // namespace dirigo::ptx
