// Step-limit prediction: a dry run of a bundle's loop counters (machine.h, predict_step_limit).
//
// A per-thread loop nest of 10^8-10^9 instructions (a thread computing a whole linear layer) runs
// into max_steps after 10-40 s of symbolic stepping. Its control flow is decided by concrete
// integer counters only, so replaying just those (integer ALU ops on constant operands; every
// other instruction is counted and its destinations forgotten) walks the same instruction sequence
// at a few percent of the cost. When that sequence reaches the step limit before anything the
// dry run cannot decide (a branch or guard on a non-constant, a barrier or warp collective, an
// exit), the real run would stop at the same instruction with the same message: report it now.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "exec/machine.h"
#include "ir/bits.h"

namespace dirigo::exec {

using ir::Expr;
using ir::Op;
using ptx::Opcode;
using ptx::Operand;
using ptx::Type;

namespace {

bool integer_alu(Opcode op) {
  switch (op) {
    case Opcode::Add: case Opcode::Sub: case Opcode::Mul: case Opcode::Mad: case Opcode::Div: case Opcode::Rem:
    case Opcode::Neg: case Opcode::Abs: case Opcode::Min: case Opcode::Max: case Opcode::Shl: case Opcode::Shr:
    case Opcode::And: case Opcode::Or: case Opcode::Xor: case Opcode::Not: case Opcode::Setp: case Opcode::Selp:
    case Opcode::Mov: case Opcode::Cvt: case Opcode::Cvta:
      return true;
    default:
      return false;
  }
}

}  // namespace

void Machine::decode_dry_run() {
  dry_.resize(f_.body.size());
  auto launch_constant = [&](const std::string& n) -> std::optional<uint64_t> {
    const Dim3* d = n.starts_with("%ntid.") ? &launch_.block : n.starts_with("%nctaid.") ? &launch_.grid : nullptr;
    if (!d) return std::nullopt;
    char c = n.back();
    return c == 'x' ? d->x : c == 'y' ? d->y : c == 'z' ? std::optional<uint64_t>(d->z) : std::nullopt;
  };
  // a register of the function (slots are created on first use); special registers are not
  auto is_reg = [&](const std::string& n) { return slots_.count(n) || f_.register_type(n); };
  bool special = false;
  auto slots_of = [&](const Operand& o, std::vector<int>& out) {
    std::vector<Operand> os = o.kind == Operand::Kind::Pair || o.kind == Operand::Kind::Vector ? o.elements
                                                                                             : std::vector<Operand>{o};
    bool ok = true;
    for (const auto& r : os) {
      if (r.kind == Operand::Kind::Register && is_reg(r.name)) out.push_back(slot(r.name));
      else if (r.kind == Operand::Kind::Register && !r.negated) special = true;  // %tid.x, %ntid.x, ...
      else if (r.kind != Operand::Kind::Int && r.kind != Operand::Kind::Symbol && r.kind != Operand::Kind::Sink) ok = false;
    }
    return ok;
  };
  for (size_t pc = 0; pc < f_.body.size(); ++pc) {
    const auto& in = f_.body[pc];
    const auto& rl = rollup_.at[pc];
    DryInstr& d = dry_[pc];
    if (rl.kind == ptx::RolledInstr::Kind::Absorbed) { d.kind = DryInstr::Skip; continue; }
    if (in.guard) {
      if (!is_reg(in.guard->reg)) { d.kind = DryInstr::Stop; continue; }
      d.guard = slot(in.guard->reg);
      d.guard_negated = in.guard->negated;
    }
    if (rl.kind == ptx::RolledInstr::Kind::Math) {
      if (is_reg(rl.dest)) d.dests.push_back(slot(rl.dest));
      continue;
    }
    switch (in.op) {
      case Opcode::Bra: {
        auto it = f_.labels.find(in.operands.at(0).name);
        if (it == f_.labels.end()) d.kind = DryInstr::Stop;
        else d.kind = DryInstr::Branch, d.target = it->second;
        continue;
      }
      case Opcode::Ret: case Opcode::Exit: case Opcode::Trap: case Opcode::Bar: case Opcode::Barrier:
      case Opcode::Shfl: case Opcode::Vote: case Opcode::Activemask: case Opcode::Call:
        d.kind = DryInstr::Stop;
        continue;
      default:
        break;
    }
    int nd = std::max(0, ptx::opcode_info(in.op).num_dests);
    for (int i = 0; i < nd && i < int(in.operands.size()); ++i) slots_of(in.operands[size_t(i)], d.dests);
    bool on_floats = std::any_of(in.mod.types.begin(), in.mod.types.end(), [](Type t) { return ptx::is_float(t); });
    if (in.op == Opcode::Ld && in.mod.space == ptx::StateSpace::Param && !on_floats) { d.kind = DryInstr::Param; continue; }
    if (!integer_alu(in.op) || on_floats) continue;
    bool plain = true;
    special = false;
    for (size_t i = size_t(nd); i < in.operands.size(); ++i) plain = slots_of(in.operands[i], d.sources) && plain;
    if (plain) d.kind = DryInstr::Alu;
    // a block-stride loop's `mov.u32 %r, %ntid.x` inside the body: the launch's constant
    std::optional<uint64_t> launch_word;
    if (special && in.op == Opcode::Mov && in.operands.size() == 2 && in.operands[1].kind == Operand::Kind::Register)
      launch_word = launch_constant(in.operands[1].name);
    d.special = special && !launch_word;
    plain = plain && (!special || launch_word);
    // the counters' own instructions: add/sub/mov/setp of one 32/64-bit integer type, register or
    // immediate sources, one plain destination
    Type ty = in.mod.types.empty() ? Type::None : in.mod.types[0];
    unsigned w = ty == Type::None ? 0 : ptx::type_bits(ty);
    bool simple_op = in.op == Opcode::Add || in.op == Opcode::Sub || in.op == Opcode::Mov ||
                     (in.op == Opcode::Setp && in.mod.bool_op == ptx::BoolOp::None);
    if (!plain || !simple_op || (w != 32 && w != 64) || in.mod.types.size() != 1 || in.mod.cc || nd != 1 ||
        in.operands[0].kind != Operand::Kind::Register || d.dests.size() != 1)
      continue;
    std::vector<DryInstr::Src> args;
    for (size_t i = 1; i < in.operands.size(); ++i) {
      const Operand& o = in.operands[i];
      if (o.kind == Operand::Kind::Int) args.push_back({-1, uint64_t(o.int_value) & (w == 64 ? ~0ull : 0xffffffffull)});
      else if (launch_word) args.push_back({-1, *launch_word});
      else if (o.kind == Operand::Kind::Register && is_reg(o.name)) args.push_back({slot(o.name), 0});
      else args.clear(), args.push_back({}), args.push_back({}), args.push_back({}), args.push_back({});  // not native
    }
    if (args.size() != (in.op == Opcode::Mov ? 1u : 2u)) continue;
    d.kind = DryInstr::Native;
    d.op = in.op;
    d.cmp = in.mod.cmp;
    d.width = w;
    d.is_signed = ty == Type::S32 || ty == Type::S64;
    d.args = std::move(args);
  }
}

std::optional<uint64_t> native_word(Opcode op, ptx::CmpOp cmp, unsigned width, bool is_signed, uint64_t a, uint64_t b) {
  const uint64_t mask = ir::width_mask(width);
  auto sgn = [&](uint64_t v) { return width == 64 ? int64_t(v) : int64_t(int32_t(uint32_t(v))); };
  using C = ptx::CmpOp;
  switch (op) {
    case Opcode::Mov: return a;
    case Opcode::Add: return (a + b) & mask;
    case Opcode::Sub: return (a - b) & mask;
    case Opcode::Setp: {
      bool lt = is_signed ? sgn(a) < sgn(b) : a < b, eq = a == b;
      switch (cmp) {
        case C::Eq: return eq;
        case C::Ne: return !eq;
        case C::Lt: return lt;
        case C::Le: return lt || eq;
        case C::Gt: return !lt && !eq;
        case C::Ge: return !lt;
        case C::Lo: return a < b;
        case C::Ls: return a <= b;
        case C::Hi: return a > b;
        case C::Hs: return a >= b;
        default: return std::nullopt;
      }
    }
    default: return std::nullopt;
  }
}

void Machine::predict_step_limit(Bundle& b) {
  if (!opt_.predict_step_limit || concrete_ || b.conv || !b.merges.empty() || steps_ < b.dry_run_until ||
      steps_ >= opt_.max_steps)
    return;
  if (dry_.empty()) decode_dry_run();
  // Pass 1 replays the counters of the bundle as it is: reaching the limit there is exactly what
  // stepping does (same instruction, same message). When it stops at a guard it cannot decide (a
  // thread predicate: the real run splits or if-converts there), pass 2 starts over following ONE
  // thread of the bundle, its identity substituted into the registers. The real run executes that
  // thread's path (in this bundle, a split half, or an if-converted region, which runs every
  // instruction of the region once), so the path's length is a lower bound of the launch's
  // remaining steps: "will reach the limit" stays exact, the PTX line is the thread's.
  const uint64_t left = opt_.max_steps - steps_;  // the step that makes steps_ exceed max_steps is number left + 1
  uint64_t k = 0;
  auto dry = [&](bool follow_thread) -> bool {  // true: stopped at an undecided guard
    Bundle s;  // scratch: registers only (float sums are irrelevant to control flow)
    s.pred = b.pred;
    s.regs = b.regs;
    s.regs.resize(slot_types_.size(), nullptr);
    s.pc = b.pc;
    std::optional<ThreadCoord> thread;
    std::unique_ptr<ir::Substituter> at_thread;
    auto concretize = [&](Expr v) -> Expr {
      if (!v || v->is_const() || v->has_data() || v->has_undef() || (!ir::is_bv(v->sort) && v->sort != ir::Sort::Bool))
        return v;
      return (*at_thread)(v);
    };
    if (follow_thread) {
      thread = sat_.witness(b.pred);
      if (!thread) return false;
      uint64_t v[6] = {thread->tid.x, thread->tid.y, thread->tid.z, thread->ctaid.x, thread->ctaid.y, thread->ctaid.z};
      auto vars = tv_.all();
      at_thread = std::make_unique<ir::Substituter>(ctx_, [this, v, vars](Expr leaf) -> Expr {
        for (int i = 0; i < 6; ++i) if (leaf == vars[size_t(i)]) return ctx_.bv_const(leaf->sort, v[i]);
        return nullptr;
      });
      for (auto& r : s.regs) r = concretize(r);
    }
    // registers a Native instruction wrote hold a machine word (width in word_bits, 1 for
    // predicates) until an Alu instruction needs them as constants
    std::vector<uint64_t> word(s.regs.size(), 0);
    std::vector<uint8_t> word_bits(s.regs.size(), 0);
    auto as_expr = [&](int sl) {
      if (word_bits[size_t(sl)] == 1) s.regs[size_t(sl)] = ctx_.bool_const(word[size_t(sl)] != 0);
      else if (word_bits[size_t(sl)]) s.regs[size_t(sl)] = ctx_.bv_const(ir::bv_sort(word_bits[size_t(sl)]), word[size_t(sl)]);
      word_bits[size_t(sl)] = 0;
    };
    auto as_word = [&](const DryInstr::Src& a, unsigned w) -> std::optional<uint64_t> {
      if (a.slot < 0) return a.imm;
      size_t sl = size_t(a.slot);
      if (word_bits[sl]) return word_bits[sl] == w ? std::optional<uint64_t>(word[sl]) : std::nullopt;
      Expr v = s.regs[sl];
      if (v && v->op == Op::ConstBV && ir::bv_width(v->sort) == w) return v->bv_value();
      return std::nullopt;
    };
    auto is_const = [&](int sl) { as_expr(sl); Expr v = s.regs[size_t(sl)]; return v && v->is_const(); };
    for (k = 0;;) {
      if (++k > left) {
        const auto& in = f_.body[std::min(s.pc, f_.body.size() - 1)];
        if (!thread)
          throw Unsupported(fmt::format("step limit ({} instructions) reached at PTX line {} in kernel {}", opt_.max_steps,
                                        in.loc.ptx_line, f_.name));
        throw Unsupported(fmt::format("step limit ({} instructions) reached: thread (tid {},{},{} ctaid {},{},{}) alone "
                                      "runs past it at PTX line {} in kernel {} (its counters replayed)",
                                      opt_.max_steps, thread->tid.x, thread->tid.y, thread->tid.z, thread->ctaid.x,
                                      thread->ctaid.y, thread->ctaid.z, in.loc.ptx_line, f_.name));
      }
      if ((k & 65535) == 0) deadline_.check("step-limit dry run");
      if (s.pc >= f_.body.size()) return false;
      const DryInstr& d = dry_[s.pc];
      if (d.kind == DryInstr::Skip) { ++s.pc; continue; }
      if (d.kind == DryInstr::Stop) return false;
      if (d.guard >= 0) {
        as_expr(d.guard);
        Expr c = s.regs[size_t(d.guard)];
        if (!c || c->op != Op::ConstBool) return true;  // thread or data predicate: stepping decides
        if (c->bool_value() == d.guard_negated) { ++s.pc; continue; }
      }
      if (d.kind == DryInstr::Branch) { s.pc = d.target; continue; }
      if (d.kind == DryInstr::Native) {
        auto x = as_word(d.args[0], d.width);
        auto y = d.args.size() > 1 ? as_word(d.args[1], d.width) : std::optional<uint64_t>(0);
        auto r = x && y ? native_word(d.op, d.cmp, d.width, d.is_signed, *x, *y) : std::nullopt;
        if (r) {
          size_t sl = size_t(d.dests[0]);
          word[sl] = *r;
          word_bits[sl] = uint8_t(d.op == Opcode::Setp ? 1 : d.width);
          ++s.pc;
          continue;
        }
      }
      for (int sl : d.dests) word_bits[size_t(sl)] = 0;
      bool ran = false;
      if (d.kind == DryInstr::Param) {
        try {
          exec_mem(s, f_.body[s.pc], nullptr);
          ran = true;
        } catch (const Unsupported&) {
        }
      }
      if ((d.kind == DryInstr::Alu || d.kind == DryInstr::Native) && (!d.special || thread) &&
          std::all_of(d.sources.begin(), d.sources.end(), is_const)) {
        try {
          exec_alu(s, f_.body[s.pc]);
          ran = true;
          if (d.special) for (int sl : d.dests) s.regs[size_t(sl)] = concretize(s.regs[size_t(sl)]);
        } catch (const Unsupported&) {
        }
      }
      // a comparison on a value that is no constant may still fold (`&bias == 0`: a tensor pointer
      // is never null); anything else it yields is forgotten
      auto known = [&](int sl) { as_expr(sl); Expr v = s.regs[size_t(sl)]; return v && !v->has_data() && !v->has_undef(); };
      if (!ran && d.kind != DryInstr::Forget && f_.body[s.pc].op == Opcode::Setp && (!d.special || thread) &&
          std::all_of(d.sources.begin(), d.sources.end(), known)) {
        try {
          exec_alu(s, f_.body[s.pc]);
          ran = true;
          for (int sl : d.dests) if (!s.regs[size_t(sl)]->is_const()) s.regs[size_t(sl)] = nullptr;
        } catch (const Unsupported&) {
        }
      }
      if (!ran) for (int sl : d.dests) s.regs[size_t(sl)] = nullptr;
      ++s.pc;
    }
  };
  if (dry(false)) dry(true);
  b.dry_run_until = steps_ + k;
}

}  // namespace dirigo::exec
