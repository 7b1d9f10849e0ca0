// Math-idiom rollup: template matching over def-use chains (see rollup.h).
//
// A template names an anchor (the idiom's last instruction), how to find the idiom's input x
// from the anchor's backward slice, and the hex constants that must occur in the slice.
// The slice is collected backward from the anchor through register operands, stopping at x;
// it must consist of pure register arithmetic (no memory, no control flow), every register it
// defines must have exactly one definition, and none may be used outside the slice.
#include "ptx/rollup.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

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

// Adds to `keep`, transitively, the instructions that those on `stack` read from: def(i, reg) is
// the instruction whose definition of reg instruction i reads, or -1 for none to keep. Empties
// the stack.
template <class Def>
void keep_sources(const Function& f, std::set<int>& keep, std::vector<int>& stack, Def def) {
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    std::vector<std::string> d, s;
    regs_of(f.body[i], d, s);
    for (auto& r : s) {
      int di = def(i, r);
      if (di >= 0 && keep.insert(di).second) stack.push_back(di);
    }
  }
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
    case Opcode::Shr: case Opcode::And: case Opcode::Or: case Opcode::Xor: case Opcode::Not:
    case Opcode::Ex2: case Opcode::Lg2:
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
  // Users already rolled into another idiom (Math or Absorbed) do not read registers any more:
  // two idioms sharing one exp (tanh as (e-1)/(e+1)) absorb the shared part with the second.
  std::set<int> escaping(const std::vector<int>& sl, int anchor, const Rollup& done) const {
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
          if (!in.count(u) && done.at[u].kind == RolledInstr::Kind::Keep && keep.insert(i).second) stack.push_back(i);
      }
    }
    keep_sources(f_, keep, stack, [&](int, const std::string& r) {
      int di = def_of(r);
      return di >= 0 && in.count(di) && di != anchor ? di : -1;
    });
    return keep;
  }

  bool in_slice_def(const Operand& o, const std::vector<int>& sl) const {
    int d = def_of(o.name);
    return std::find(sl.begin(), sl.end(), d) != sl.end();
  }
  std::multiset<uint64_t> constants(const std::vector<int>& sl) const {
    std::multiset<uint64_t> out;
    for (int i : sl)
      for (const auto& o : f_.body[i].operands)
        if (o.kind == Operand::Kind::Float) out.insert(o.float_bits);
        else if (o.kind == Operand::Kind::Int) out.insert(uint64_t(o.int_value) | kIntTag);
        else if (auto k = const_bits(o); k && !in_slice_def(o, sl)) out.insert(*k);  // a shared constant register
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
std::optional<Operand> find_operand_with_const(const Matcher& m, int start, uint64_t k, Opcode op,
                                               const std::string& skip = "") {
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
      if (o.kind != Operand::Kind::Register || (i == start && o.name == skip)) continue;
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
                 // not through an fma anchor's addend: in an unrolled `sum += expf(..)` it is the
                 // previous expf, whose x is not this one's
                 std::string addend = a.op == Opcode::Fma && a.operands.size() == 4 && a.operands[3].kind == Operand::Kind::Register
                                          ? a.operands[3].name : "";
                 return find_operand_with_const(m, index_of(a), 0x3BBB989D, Opcode::Fma, addend);
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
    // a kernel-parameter read is as side-effect free as arithmetic (nvcc hoists `ld.param` of a
    // later store's pointer into the logf range)
    const auto& other = f.body[i];
    bool param_read = other.op == Opcode::Ld && other.mod.space == StateSpace::Param && !other.guard;
    bool pure = math(i) || (is_pure_arith(other) && !other.guard) || param_read;
    if (!pure || skipped(f, in, i)) return std::nullopt;
  }
  // no label may be the target of a jump from outside the region
  for (const auto& [name, idx] : f.labels)
    if (int(idx) > start && int(idx) <= end)
      for (int i = 0; i < int(f.body.size()); ++i)
        if ((i < start || i > end) && f.body[i].op == Opcode::Bra && f.body[i].operands.at(0).name == name) return std::nullopt;
  return std::vector<int>(in.begin(), in.end());
}

// x of tanhf's small-|x| path end: fma(p, x, x), i.e. x + x·p(x²).
std::optional<Operand> tanh_polynomial_x(const Instruction& in) {
  if (in.op != Opcode::Fma || in.operands.size() != 4) return std::nullopt;
  const auto& x = in.operands[2];
  if (x.kind != Operand::Kind::Register || in.operands[3].kind != Operand::Kind::Register || in.operands[3].name != x.name)
    return std::nullopt;
  return x;
}

// The sign operand of a copysign: `copysign.f32 d, x, m`, or the bit trick `mov.b32 d, (bits(x) &
// 0x80000000) | bits(m)` with bits(v) = `mov.b32 %r, v` (nvcc's copysignf where m is known >= 0).
std::optional<Operand> copysign_sign_operand(const Matcher& m, const Instruction& in) {
  if (in.op == Opcode::Copysign && in.operands.size() == 3 && in.operands[1].kind == Operand::Kind::Register)
    return in.operands[1];
  auto bits_of_float = [&](const Operand& o) -> std::optional<Operand> {  // o = mov.b32 o, %f
    const Instruction* mv = m.def_instr(o);
    if (!mv || mv->op != Opcode::Mov || mv->guard || mv->operands.size() != 2) return std::nullopt;
    const auto& src = mv->operands[1];
    auto t = src.kind == Operand::Kind::Register ? m.f_.register_type(src.name) : std::nullopt;
    if (!t || *t != Type::F32) return std::nullopt;
    return src;
  };
  if (in.op != Opcode::Mov || in.operands.size() != 2 || in.operands[1].kind != Operand::Kind::Register) return std::nullopt;
  auto dt = m.f_.register_type(in.operands[0].name);
  if (!dt || *dt != Type::F32) return std::nullopt;
  const Instruction* orr = m.def_instr(in.operands[1]);
  if (!orr || orr->op != Opcode::Or || orr->guard || orr->operands.size() != 3) return std::nullopt;
  for (int k = 1; k <= 2; ++k) {
    const Instruction* an = m.def_instr(orr->operands[size_t(k)]);
    if (!an || an->op != Opcode::And || an->guard || an->operands.size() != 3) continue;
    const auto& mask = an->operands[2];
    if (mask.kind != Operand::Kind::Int || uint32_t(mask.int_value) != 0x80000000u) continue;
    auto x = bits_of_float(an->operands[1]);
    if (x && bits_of_float(orr->operands[size_t(3 - k)])) return x;
  }
  return std::nullopt;
}

std::vector<RegionTemplate> region_templates(const Function& f) {
  std::vector<RegionTemplate> t;
  // logf and log2f end alike: selp d, -inf, v, (s == 0), where s = selp(x * 2^23, x, x < 2^-126)
  // scales a denormal input; the input is x
  auto log_input = [&f](const Matcher& m, int i) -> std::optional<Operand> {
    const auto& a = f.body[i];
    if (a.op != Opcode::Selp || a.operands.size() != 4 || m.const_bits(a.operands[1]) != 0xFF800000) return std::nullopt;
    const Instruction* p = m.def_instr(a.operands[3]);
    if (!p || p->op != Opcode::Setp) return std::nullopt;
    const Instruction* sc = m.def_instr(p->operands.at(1));
    if (!sc || sc->op != Opcode::Selp || sc->operands.size() != 4) return std::nullopt;
    return sc->operands[2];
  };
  // logf: selp d, -inf, v, (s == 0) with s = selp(x * 2^23, x, x < 2^-126)
  t.push_back({"logf", ir::Fn::Log, {uint64_t(-1059760811) | kIntTag, 0x3F317218, 0x4B000000, 0xFF800000},
               log_input});
  // log2f: the logf shape with the sqrt(2)/2-centred reduction and a log2 polynomial
  t.push_back({"log2f", ir::Fn::Log2, {uint64_t(-1060439283) | kIntTag, kLog2e, 0x4B000000, 0xFF800000, 0xBF38AA3B},
               log_input});
  // log1pf: the final selp keeps -0 for x == -0; x enters through add.rz x, 1
  t.push_back({"log1pf", ir::Fn::Log1p, {uint64_t(-1061158912) | kIntTag, 0x3F317218, 0x3E800000},
               [&f](const Matcher& m, int i) -> std::optional<Operand> {
                 const auto& a = f.body[i];
                 if (a.op != Opcode::Selp || a.operands.size() != 4 || m.const_bits(a.operands[1]) != 0x80000000) return std::nullopt;
                 const Instruction* p = m.def_instr(a.operands[3]);
                 if (!p || p->op != Opcode::Setp) return std::nullopt;
                 return p->operands.at(1);
               }});
  // tanhf with its large-|x| path in a block of its own (a branch on |x| < 0.6 instead of the selp
  // of the branch-free form): that path ends in copysign(selp(|x| >= 9.0109, 1, 1 - 2/(ex2(2 log2e |x|)
  // + 1)), x), as a copysign instruction or as the sign-bit trick (mov.b32 / and.b32 0x80000000 /
  // or.b32 / mov.b32), the other in the odd polynomial's last fma(p, x, x); both define the result.
  // The anchor is the later of the two definitions, whichever path it ends.
  t.push_back({"tanhf (branching)", ir::Fn::Tanh, {0x3F19999A, kTwoLog2e, 0x41102CB4},
               [&f](const Matcher& m, int i) -> std::optional<Operand> {
                 const auto& a = f.body[i];
                 bool shape = (a.op == Opcode::Fma || a.op == Opcode::Mov || a.op == Opcode::Copysign) &&
                              !a.operands.empty() && a.operands[0].kind == Operand::Kind::Register;
                 if (!shape || m.def_of(a.operands[0].name) >= 0) return std::nullopt;  // one definition: no merge
                 const std::string& result = a.operands[0].name;
                 std::vector<int> defs;
                 for (int j = std::max(0, i - 120); j <= i; ++j) {
                   std::vector<std::string> d, s;
                   regs_of(f.body[j], d, s);
                   if (std::find(d.begin(), d.end(), result) != d.end()) defs.push_back(j);
                 }
                 if (defs.size() != 2 || defs.back() != i) return std::nullopt;
                 std::optional<Operand> x_poly, x_big;
                 for (int j : defs) {
                   const auto& in = f.body[j];
                   if (auto x = tanh_polynomial_x(in)) x_poly = x;
                   else if (auto y = copysign_sign_operand(m, in)) x_big = y;
                 }
                 if (!x_poly || !x_big || x_poly->name != x_big->name) return std::nullopt;
                 // the branch's test: |x| against 0.6, with |x| = abs x
                 for (int j = std::max(0, i - 120); j < defs.front(); ++j) {
                   const auto& st = f.body[j];
                   if (st.op != Opcode::Setp || st.operands.size() < 3 || m.const_bits(st.operands[2]) != 0x3F19999A) continue;
                   const Instruction* ab = m.def_instr(st.operands[1]);
                   if (ab && ab->op == Opcode::Abs && ab->operands.size() == 2 && ab->operands[1].name == x_poly->name)
                     return x_poly;
                 }
                 return std::nullopt;
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


// ---- CFG-region idioms: powf and the softplus threshold shape. Their control flow is not a
// nested if-then: nvcc places special cases out of line (after the kernel's `ret`) and jumps
// back to a merge label. The region R is everything reachable from the idiom's entry branch up
// to the merge label, plus the straight-line code before the branch that computes what R reads,
// stopping at the idiom's inputs. R must be closed: only pure arithmetic and branches inside it,
// no jump into it from outside, one register (the result) live after it, no other input.
Operand reg_operand(const std::string& name) {
  Operand o;
  o.kind = Operand::Kind::Register;
  o.name = name;
  return o;
}

struct CfgRegion {
  std::set<int> body;
  std::string result;
  int start = 0;  // first instruction of R in flat order
};

// The definition of `reg` reaching instruction `before` in the straight-line code above it, or
// -1 when a label or branch comes first (the value then comes from elsewhere).
int reaching_def(const Function& f, std::unordered_multimap<size_t, std::string>& label_at, int before,
                 const std::string& reg, int limit) {
  for (int j = before - 1; j >= std::max(0, before - limit); --j) {
    if (label_at.count(size_t(j + 1)) && j + 1 != before) return -1;
    const auto& in = f.body[j];
    if (in.op == Opcode::Bra || in.op == Opcode::Ret || in.op == Opcode::Exit) return -1;
    std::vector<std::string> d, s;
    regs_of(in, d, s);
    if (std::find(d.begin(), d.end(), reg) != d.end()) return j;
  }
  return -1;
}

std::optional<CfgRegion> cfg_region(const Matcher& m, const Rollup& done, int branch, int merge,
                                    const std::set<std::string>& inputs) {
  const Function& f = m.f_;
  const int n = int(f.body.size());
  std::unordered_multimap<size_t, std::string> label_at;
  for (const auto& [name, idx] : f.labels) label_at.emplace(idx, name);
  auto target_of = [&](const Instruction& in) -> int {
    auto t = f.labels.find(in.operands.at(0).name);
    return t == f.labels.end() ? -1 : int(t->second);
  };
  // 1. the tail: forward from the entry branch to the merge point
  CfgRegion r;
  std::vector<int> stack{branch};
  std::set<int>& R = r.body;
  R.insert(branch);
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    const auto& in = f.body[i];
    if (done.at[i].kind != RolledInstr::Kind::Keep) return std::nullopt;
    std::vector<int> next;
    if (in.op == Opcode::Bra) {
      int t = target_of(in);
      if (t < 0) return std::nullopt;
      next.push_back(t);
      if (in.guard) next.push_back(i + 1);
    } else if (is_pure_arith(in)) {
      next.push_back(i + 1);
    } else {
      return std::nullopt;  // memory, ret, barrier, ... inside the special cases
    }
    for (int t : next) {
      if (t == merge) continue;
      if (t >= n) return std::nullopt;
      if (R.insert(t).second) stack.push_back(t);
    }
    if (R.size() > 400) return std::nullopt;
  }
  // 2. the straight-line prefix: reaching definitions of what R reads, and of registers R
  // defines that are live after it (a path through R may leave them as they were)
  std::set<std::string> defined;
  auto note_defs = [&](int i) {
    std::vector<std::string> d, s;
    regs_of(f.body[i], d, s);
    defined.insert(d.begin(), d.end());
  };
  for (int i : R) note_defs(i);
  std::vector<std::pair<int, std::string>> want;  // (reader index, register)
  auto add_reads = [&](int i) {
    std::vector<std::string> d, s;
    regs_of(f.body[i], d, s);
    for (auto& reg : s) if (!inputs.count(reg)) want.push_back({i, reg});
  };
  for (int i : R) add_reads(i);
  auto used_outside = [&](const std::string& reg) {
    for (int i = 0; i < n; ++i) {
      if (R.count(i)) continue;
      std::vector<std::string> d, s;
      regs_of(f.body[i], d, s);
      if (std::find(s.begin(), s.end(), reg) != s.end()) return true;
    }
    return false;
  };
  std::set<std::string> live_out;
  for (int round = 0; round < 64; ++round) {
    while (!want.empty()) {
      auto [reader, reg] = want.back();
      want.pop_back();
      int from = reader < branch ? reader : branch;  // tail readers see the prefix's last definition
      int d = reaching_def(f, label_at, from, reg, 300);
      if (d < 0) {
        if (reader >= branch && defined.count(reg)) continue;  // only defined inside R's tail
        return std::nullopt;  // an input the idiom does not name
      }
      if (R.count(d)) continue;
      // a constant register (one `mov` of an immediate; nvcc hoists and shares these) stays
      if (m.def_of(reg) == d && m.const_bits(reg_operand(reg))) continue;
      if (!is_pure_arith(f.body[d]) || f.body[d].guard || done.at[d].kind != RolledInstr::Kind::Keep) {
        if (reader >= branch && defined.count(reg)) continue;
        return std::nullopt;
      }
      R.insert(d);
      note_defs(d);
      add_reads(d);
    }
    // registers R defines that are read after it; their prefix definition belongs to R too
    bool grew = false;
    for (const auto& reg : defined) {
      if (live_out.count(reg) || !used_outside(reg)) continue;
      live_out.insert(reg);
      if (!inputs.count(reg)) want.push_back({branch, reg});
      grew = true;
    }
    if (!grew && want.empty()) break;
  }
  if (live_out.size() != 1) return std::nullopt;
  r.result = *live_out.begin();
  r.start = *R.begin();
  if (r.start > branch) return std::nullopt;
  // 3. closedness: instructions in [start, merge) outside R may stay only before the branch and
  // must not touch what R defines or the inputs it reads after them
  for (int i = r.start; i < merge; ++i) {
    if (R.count(i)) continue;
    if (i > branch) return std::nullopt;  // code the branches of R would skip
    std::vector<std::string> d, s;
    regs_of(f.body[i], d, s);
    if (f.body[i].op == Opcode::Bra || f.body[i].op == Opcode::Ret || f.body[i].op == Opcode::Exit) return std::nullopt;
    for (auto& reg : d)
      if (inputs.count(reg))
        for (int j : R) {
          if (j >= i) break;
          std::vector<std::string> d2, s2;
          regs_of(f.body[j], d2, s2);
          if (std::find(s2.begin(), s2.end(), reg) != s2.end()) return std::nullopt;  // R would see two values of x
        }
    for (auto& reg : d) if (defined.count(reg)) return std::nullopt;
    for (auto& reg : s) if (defined.count(reg)) return std::nullopt;
  }
  // no jump from outside into R; out-of-line blocks are not fallen into
  for (const auto& [name, idx] : f.labels) {
    if (!R.count(int(idx)) || int(idx) == r.start) continue;
    for (int i = 0; i < n; ++i)
      if (!R.count(i) && f.body[i].op == Opcode::Bra && f.body[i].operands.at(0).name == name) return std::nullopt;
  }
  for (int i : R) {
    if (i <= r.start || (i > r.start && i < merge) || R.count(i - 1)) continue;
    const auto& prev = f.body[i - 1];
    bool falls = !((prev.op == Opcode::Bra || prev.op == Opcode::Ret || prev.op == Opcode::Exit) && !prev.guard);
    if (falls) return std::nullopt;
  }
  return r;
}

// Operands of `in` that are float registers or immediates (the multiplicands of mul/fma).
std::vector<std::string> operand_keys(const Instruction& in, size_t from, size_t to) {
  std::vector<std::string> out;
  for (size_t i = from; i < to && i < in.operands.size(); ++i) {
    const auto& o = in.operands[i];
    if (o.kind == Operand::Kind::Register) out.push_back(o.name);
    else if (o.kind == Operand::Kind::Float) out.push_back("#" + std::to_string(o.float_bits));
  }
  return out;
}

struct CfgMatch {
  std::vector<Operand> args;
  ir::Fn fn;
  std::string idiom;
};

// Where instruction i is `@p bra MERGE` (p not negated) jumping forward, the entry of a branch
// region: MERGE's instruction index and the test that defines p; nothing otherwise.
struct GuardedBranch {
  int merge;                // the index of MERGE
  const Instruction* test;  // the instruction defining p, or null
};
std::optional<GuardedBranch> forward_guarded_branch(const Matcher& m, int i) {
  const Function& f = m.f_;
  const auto& br = f.body[i];
  if (br.op != Opcode::Bra || !br.guard || br.guard->negated) return std::nullopt;
  auto merge_it = f.labels.find(br.operands.at(0).name);
  if (merge_it == f.labels.end() || int(merge_it->second) <= i) return std::nullopt;
  return GuardedBranch{int(merge_it->second), m.def_instr(reg_operand(br.guard->reg))};
}

// powf (default lowering). Entry: `@p bra MERGE` with p = (x == 1) or ((x == 1) | (y == 0)).
// y is the factor of nvcc's exact product log2|x| * y (mul.rn d,hi,y; neg n,d; fma e,hi,y,n;
// fma g,lo,y,e); the constants of the log2 and exp2 kernels must be present.
std::optional<CfgMatch> match_powf(const Matcher& m, const Rollup& done, int i, CfgRegion& out) {
  const Function& f = m.f_;
  auto branch = forward_guarded_branch(m, i);
  if (!branch || !branch->test) return std::nullopt;
  const int merge = branch->merge;
  const Instruction* g = branch->test;
  std::vector<const Instruction*> tests{g};
  if (g->op == Opcode::Or && g->operands.size() == 3) tests = {m.def_instr(g->operands[1]), m.def_instr(g->operands[2])};
  std::optional<Operand> x;
  for (const Instruction* t : tests)
    if (t && t->op == Opcode::Setp && t->mod.cmp == CmpOp::Eq && t->operands.size() == 3 && m.const_bits(t->operands[2]) == 0x3F800000)
      x = t->operands[1];
  if (!x || x->kind != Operand::Kind::Register) return std::nullopt;
  // candidates for y: the Dekker product anywhere near
  for (int j = std::max(0, i - 300); j < std::min(int(f.body.size()), i + 300); ++j) {
    const auto& mul = f.body[j];
    if (mul.op != Opcode::Mul || mul.mod.rounding != Rounding::Rn || mul.operands.size() != 3) continue;
    auto factors = operand_keys(mul, 1, 3);
    if (factors.size() != 2) continue;
    // the second fma of the product: multiplicands (lo, y), addend defined by fma(hi, y, -d)
    std::optional<Operand> y;
    for (int k = j + 1; k < std::min(int(f.body.size()), j + 16) && !y; ++k) {
      const auto& fma2 = f.body[k];
      if (fma2.op != Opcode::Fma || fma2.operands.size() != 4) continue;
      const Instruction* e = m.def_instr(fma2.operands[3]);
      if (!e || e->op != Opcode::Fma || operand_keys(*e, 1, 3) != factors) continue;
      auto k2 = operand_keys(fma2, 1, 3);
      for (size_t a = 0; a < 2; ++a)
        if (std::find(k2.begin(), k2.end(), factors[a]) != k2.end()) y = mul.operands[1 + a];
    }
    if (!y) continue;
    std::set<std::string> inputs{x->name};
    if (y->kind == Operand::Kind::Register) inputs.insert(y->name);
    auto region = cfg_region(m, done, i, merge, inputs);
    if (!region) continue;
    auto consts = m.constants(std::vector<int>(region->body.begin(), region->body.end()));
    for (uint64_t k : {uint64_t(0x3FB8AA3B), uint64_t(0x32A55E34), uint64_t(0x3AAF85ED), uint64_t(0x391FCB8E),
                       uint64_t(0x43180000), uint64_t(-1060439283) | kIntTag})
      if (!consts.count(k)) return std::nullopt;
    out = *region;
    if (auto k = m.const_bits(*y); k && y->kind == Operand::Kind::Register) {  // powf(x, 1.5f): the constant itself
      Operand c;
      c.kind = Operand::Kind::Float;
      c.float_bits = *k;
      c.float_width = 32;
      float v;
      uint32_t b32 = uint32_t(*k);
      std::memcpy(&v, &b32, 4);
      c.float_value = v;
      y = c;
    } else if (y->kind == Operand::Kind::Register && region->body.count(m.def_of(y->name))) {
      continue;  // y computed inside the idiom: not an input
    }
    return CfgMatch{{*x, *y}, ir::Fn::Pow, "powf"};
  }
  return std::nullopt;
}

// softplus with PyTorch's threshold: `x > 20 ? x : log1pf(expf(x))` (or logf(1 + expf(x))),
// default or fast-math lowering. Entry: `@p bra MERGE` with p = setp.gt x, 20; the result
// register is x itself on the bypass path (nvcc coalesces the two), or a `mov r, x` before it.
std::optional<CfgMatch> match_softplus(const Matcher& m, const Rollup& done, int i, CfgRegion& out) {
  const Function& f = m.f_;
  auto branch = forward_guarded_branch(m, i);
  if (!branch) return std::nullopt;
  const int merge = branch->merge;
  const Instruction* t = branch->test;
  if (!t || t->op != Opcode::Setp || t->mod.cmp != CmpOp::Gt || t->operands.size() != 3 ||
      m.const_bits(t->operands[2]) != 0x41A00000 || t->operands[1].kind != Operand::Kind::Register)
    return std::nullopt;
  Operand x = t->operands[1];
  auto region = cfg_region(m, done, i, merge, {x.name});
  if (!region) return std::nullopt;
  // the bypass path must leave x in the result register
  if (region->result != x.name) {
    int d = -1;
    for (int j = i - 1; j >= region->start; --j) {
      std::vector<std::string> ds, ss;
      regs_of(f.body[j], ds, ss);
      if (std::find(ds.begin(), ds.end(), region->result) != ds.end()) { d = j; break; }
    }
    if (d < 0 || f.body[d].op != Opcode::Mov || f.body[d].operands.size() != 2 || f.body[d].operands[1].kind != Operand::Kind::Register ||
        f.body[d].operands[1].name != x.name)
      return std::nullopt;
  }
  std::vector<int> sl(region->body.begin(), region->body.end());
  auto consts = m.constants(sl);
  bool log1p = consts.count(uint64_t(-1061158912) | kIntTag) && consts.count(0x3E800000);
  bool log = consts.count(uint64_t(-1059760811) | kIntTag);
  bool fast_log = false;  // __logf: lg2.approx * ln2
  for (int j : sl) if (has_opcode(f.body[j], Opcode::Lg2, true)) fast_log = true;
  if (!consts.count(0x3F317218) || !(log1p || log || fast_log)) return std::nullopt;
  // exp of +x: x * log2e (fast) or fma(x, log2e/128 magic, 0.5) (default), with x itself
  bool exp_of_x = false;
  for (int j : sl) {
    const auto& in = f.body[j];
    if (in.op != Opcode::Mul && in.op != Opcode::Fma) continue;
    uint64_t k = in.op == Opcode::Mul ? kLog2e : 0x3BBB989D;
    auto other = other_operand(m, in, k);
    if (other && other->name == x.name) exp_of_x = true;
  }
  if (!exp_of_x) return std::nullopt;
  out = *region;
  return CfgMatch{{x}, ir::Fn::Softplus, "softplus"};
}

void apply_cfg_idioms(const Function& f, const Matcher& m, Rollup& r) {
  for (int i = 0; i < int(f.body.size()); ++i) {
    if (f.body[i].op != Opcode::Bra || r.at[i].kind != RolledInstr::Kind::Keep) continue;
    CfgRegion region;
    auto match = match_powf(m, r, i, region);
    if (!match) match = match_softplus(m, r, i, region);
    if (!match) continue;
    int merge = int(f.labels.at(f.body[i].operands.at(0).name));
    // the pseudo-instruction sits at the last unguarded instruction of R before the merge
    // point, so straight-line execution from R's start reaches it and then the merge
    int at = -1;
    for (int j = merge - 1; j >= region.start && at < 0; --j)
      if (region.body.count(j) && !f.body[j].guard && f.body[j].op != Opcode::Bra) at = j;
    if (at < 0) continue;
    for (int j : region.body) r.at[j].kind = RolledInstr::Kind::Absorbed;
    auto& a = r.at[at];
    a.kind = RolledInstr::Kind::Math;
    a.fn = match->fn;
    a.dest = region.result;
    a.args = match->args;
    a.idiom = match->idiom;
    r.matched.push_back(match->idiom);
  }
}


// ---- shapes over rolled idioms: sigmoid = 1 / (1 + exp(-x)) and silu = x / (1 + exp(-x)).
// nvcc fuses the `+ 1` into the exp idiom's last fma (default) or emits add.f32 s, e, 1.0
// (fast math); the reciprocal is rcp.rn / rcp.approx or a div with numerator 1.0 (or x).
void apply_sigmoid_shapes(const Function& f, const Matcher& m, Rollup& r) {
  auto uses_only = [&](const std::string& reg, int user) {
    auto it = m.du_.uses.find(reg);
    return it != m.du_.uses.end() && it->second.size() == 1 && it->second[0] == user;
  };
  auto math_exp_at = [&](const std::string& reg) -> int {
    int d = m.def_of(reg);
    if (d < 0 || r.at[d].kind != RolledInstr::Kind::Math || r.at[d].fn != ir::Fn::Exp || r.at[d].args.size() != 1) return -1;
    return d;
  };
  for (int i = 0; i < int(f.body.size()); ++i) {
    const auto& in = f.body[i];
    if (r.at[i].kind != RolledInstr::Kind::Keep || in.guard || in.mod.types.empty() || in.mod.types[0] != Type::F32) continue;
    std::optional<Operand> numerator;  // nullopt: 1
    Operand denom;
    if (in.op == Opcode::Rcp && in.operands.size() == 2) {
      denom = in.operands[1];
    } else if (in.op == Opcode::Div && in.operands.size() == 3) {
      if (m.const_bits(in.operands[1]) != 0x3F800000) numerator = in.operands[1];
      denom = in.operands[2];
    } else {
      continue;
    }
    if (denom.kind != Operand::Kind::Register || !uses_only(denom.name, i)) continue;
    int e = math_exp_at(denom.name), add = -1;
    if (e >= 0) {  // exp idiom with a fused + 1
      if (!r.at[e].addend || m.const_bits(*r.at[e].addend) != 0x3F800000) continue;
    } else {  // add.f32 s, exp, 1.0
      add = m.def_of(denom.name);
      if (add < 0 || f.body[add].op != Opcode::Add || f.body[add].guard || r.at[add].kind != RolledInstr::Kind::Keep) continue;
      const auto& a = f.body[add];
      for (int k = 1; k <= 2 && e < 0; ++k)
        if (a.operands[k].kind == Operand::Kind::Register && m.const_bits(a.operands[3 - k]) == 0x3F800000 &&
            uses_only(a.operands[k].name, add))
          e = math_exp_at(a.operands[k].name);
      if (e < 0 || r.at[e].addend) continue;
    }
    const RolledInstr& ex = r.at[e];
    // sigmoid's argument x with exp(-x): the exp idiom's argument, negated unless it already was
    Operand x = ex.args[0];
    bool negate = !ex.negate;
    if (numerator) {  // silu: the numerator must be that same x
      if (numerator->kind != Operand::Kind::Register) continue;
      bool same = false;
      if (ex.negate) {
        same = numerator->name == x.name;
      } else if (const Instruction* ng = m.def_instr(x); ng && ng->op == Opcode::Neg && ng->operands[1].kind == Operand::Kind::Register) {
        same = ng->operands[1].name == numerator->name;
        if (same) { x = ng->operands[1]; negate = false; }
      }
      if (!same) continue;
    }
    std::string exp_idiom = ex.idiom;
    r.at[e] = RolledInstr{};
    r.at[e].kind = RolledInstr::Kind::Absorbed;
    if (add >= 0) r.at[add].kind = RolledInstr::Kind::Absorbed;
    auto& a = r.at[i];
    a.kind = RolledInstr::Kind::Math;
    a.fn = numerator ? ir::Fn::Silu : ir::Fn::Sigmoid;
    a.dest = in.operands[0].name;
    a.args = {x};
    a.negate = negate;
    a.idiom = std::string(numerator ? "silu" : "sigmoid") + "(" + exp_idiom + ")";
    auto it = std::find(r.matched.begin(), r.matched.end(), exp_idiom);
    if (it != r.matched.end()) *it = a.idiom;
  }
}

}  // namespace

Rollup rollup(const Function& f) {
  Rollup r;
  r.at.resize(f.body.size());
  Matcher m(f);
  apply_cfg_idioms(f, m, r);  // first: they contain expf/log1pf-like pieces of their own
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
      auto keep = m.escaping(sl, i, r);
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
      keep_sources(f, keep, stack, [&](int j, const std::string& reg) {
        // the latest definition inside the slice before j
        for (int k = j - 1; k >= *inside.begin(); --k) {
          if (!inside.count(k)) continue;
          std::vector<std::string> d2, s2;
          regs_of(f.body[k], d2, s2);
          if (std::find(d2.begin(), d2.end(), reg) != d2.end()) return k;
        }
        return -1;
      });
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
  apply_sigmoid_shapes(f, m, r);
  return r;
}

std::vector<FloatBitsUse> unmatched_float_bits(const Function& f, const Rollup& r) {
  std::vector<FloatBitsUse> out;
  // raw: registers holding a float's bits only moved around (mov.b32 %r, %f; shfl; selp; ld/st):
  // exec keeps the value. worked: bits transformed by integer arithmetic.
  std::set<std::string> raw, worked;
  auto is_float_reg = [&](const std::string& reg) {
    auto t = f.register_type(reg);
    return t && is_float(*t);
  };
  for (int i = 0; i < int(f.body.size()); ++i) {
    if (r.at[i].kind != RolledInstr::Kind::Keep) continue;
    const auto& in = f.body[i];
    std::vector<std::string> d, s;
    regs_of(in, d, s);
    std::string from_raw, from_worked;
    for (auto& reg : s) {
      if (raw.count(reg)) from_raw = reg;
      if (worked.count(reg)) from_worked = reg;
    }
    auto set_dests = [&](bool is_raw, bool is_worked) {
      for (auto& reg : d) {
        raw.erase(reg);
        worked.erase(reg);
        if (is_raw) raw.insert(reg);
        if (is_worked) worked.insert(reg);
      }
    };
    bool moves = in.op == Opcode::Mov || in.op == Opcode::Shfl || in.op == Opcode::Selp;
    if (in.op == Opcode::Mov && in.operands.size() == 2 && in.operands[1].kind == Operand::Kind::Register && !d.empty()) {
      bool src_f = is_float_reg(in.operands[1].name), dst_f = is_float_reg(d[0]);
      if (src_f && !dst_f) { set_dests(true, false); continue; }  // reinterpretation: the bits of a float
      if (dst_f && !from_worked.empty()) {
        out.push_back({i, in.loc.ptx_line, fmt::format("UNSUPPORTED: kernel {}, PTX line {} ('{}'): integer-computed bits moved into float register {} (no math idiom matched)",
                                                       f.name, in.loc.ptx_line, in.text, d[0])});
        set_dests(false, false);
        continue;
      }
      if (dst_f) { set_dests(false, false); continue; }  // raw bits back into a float: the value itself
    }
    if (moves) { set_dests(!from_raw.empty(), !from_worked.empty()); continue; }
    if (from_raw.empty() && from_worked.empty()) { set_dests(false, false); continue; }
    if (in.op == Opcode::Setp && from_worked.empty() && (in.mod.cmp == CmpOp::Eq || in.mod.cmp == CmpOp::Ne)) {
      set_dests(false, false);  // bit equality (the CAS loop of a float atomicMax): exec compares values
      continue;
    }
    if (in.op == Opcode::St || in.op == Opcode::Cvt || in.op == Opcode::Atom || in.op == Opcode::Red) {
      set_dests(false, false);  // stored or converted as a value: exec decides
      continue;
    }
    const std::string& from = from_raw.empty() ? from_worked : from_raw;
    if (!from_raw.empty())  // the first integer operation on a float's bits (later ones follow from it)
      out.push_back({i, in.loc.ptx_line, fmt::format("UNSUPPORTED: kernel {}, PTX line {} ('{}'): integer operation on float bits of {} (no math idiom matched)",
                                                     f.name, in.loc.ptx_line, in.text, from)});
    set_dests(false, true);
  }
  return out;
}

}  // namespace dirigo::ptx
