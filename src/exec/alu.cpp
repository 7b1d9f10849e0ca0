// Register-to-register instruction semantics: integers on bitvectors of the declared width,
// floats on reals, predicates on Bool. Shared by the symbolic and the concrete mode.
#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "exec/machine.h"
#include "ir/bits.h"
#include "ir/eval.h"

namespace dirigo::exec {

namespace {
Type main_type(const ptx::Instruction& in) {
  if (in.mod.types.empty()) return Type::None;
  return in.mod.types[0];
}
Type widen(Type t) {
  switch (t) {
    case Type::S8: return Type::S16;
    case Type::S16: return Type::S32;
    case Type::S32: return Type::S64;
    case Type::U8: return Type::U16;
    case Type::U16: return Type::U32;
    case Type::U32: return Type::U64;
    case Type::B16: return Type::B32;
    case Type::B32: return Type::B64;
    default: return t;
  }
}
ir::RoundMode int_round(ptx::Rounding r) {
  switch (r) {
    case ptx::Rounding::Rni: case ptx::Rounding::Rn: return ir::RoundMode::NearestEven;
    case ptx::Rounding::Rmi: case ptx::Rounding::Rm: return ir::RoundMode::Down;
    case ptx::Rounding::Rpi: case ptx::Rounding::Rp: return ir::RoundMode::Up;
    default: return ir::RoundMode::Zero;
  }
}
}  // namespace

void Machine::exec_alu(Bundle& b, const ptx::Instruction& in) {
  Type ty = main_type(in);
  switch (in.op) {
    case Opcode::Cvt: return exec_cvt(b, in);
    case Opcode::Setp: return exec_setp(b, in);
    case Opcode::Cvta: {
      Expr v = read_raw(b, in.operands.at(1), ty);
      if (ir::is_bv(v->sort)) v = as_bv(v, std::max(8u, ptx::type_bits(ty)));
      return write(b, in.operands[0], v);
    }
    case Opcode::Mov: {
      const Operand& src = in.operands.at(1);
      const Operand& dst = in.operands.at(0);
      if (src.kind == Operand::Kind::Vector || dst.kind == Operand::Kind::Vector) {
        // pack/unpack of constants only (half2 packing of data is not modeled)
        if (dst.kind == Operand::Kind::Vector) {
          Expr raw = read_raw(b, src, ty);
          if (packed_.count(raw) && dst.elements.size() == 2) {  // mov.b32 {%rs1, %rs2}, %r: the two halves
            write(b, dst.elements[0], packed_.at(raw).first);
            write(b, dst.elements[1], packed_.at(raw).second);
            return;
          }
          Expr v = read(b, src, ty);
          if (v->op != Op::ConstBV) unsupported(in, "unpacking a non-constant register");
          unsigned part = ptx::type_bits(ty) / unsigned(dst.elements.size());
          for (size_t i = 0; i < dst.elements.size(); ++i)
            write(b, dst.elements[i], ctx_.bv_const(ir::bv_sort(std::max(8u, part)), v->bv_value() >> (part * i)));
          return;
        }
        unsigned part = ptx::type_bits(ty) / unsigned(src.elements.size());
        if (part == 16 && src.elements.size() == 2) {  // mov.b32 %r, {%rs1, %rs2} of float halves: packed
          Expr lo = read_raw(b, src.elements[0], Type::None), hi = read_raw(b, src.elements[1], Type::None);
          if (lo->sort == Sort::Real || hi->sort == Sort::Real) {
            auto half = [&](Expr e) {
              if (e->sort == Sort::Real) return e;
              if (e->op == Op::ConstBV && e->bv_value() == 0) return ctx_.real_const(0);  // +0 in f16 and bf16
              unsupported(in, "packing a float half with integer bits");
            };
            return write(b, dst, pack_half2(half(lo), half(hi)));
          }
        }
        uint64_t bits = 0;
        for (size_t i = 0; i < src.elements.size(); ++i) {
          Expr e = read_raw(b, src.elements[i], Type::None);
          if (e->op != Op::ConstBV) unsupported(in, "packing non-constant registers");
          bits |= (e->bv_value() & ir::width_mask(part)) << (part * i);
        }
        return write(b, dst, ctx_.bv_const(sort_of(ty), bits));
      }
      Expr v = read_raw(b, src, ty);
      if (ty == Type::Pred) return write(b, dst, v);
      if (ptx::is_float(ty)) {
        // mov.f32 of an integer register is a bit reinterpretation
        if (v->sort != Sort::Real) v = as_real(v);
        return write(b, dst, v);
      }
      // .b/.u/.s: moves keep floats as they are (type punning through b32 registers);
      // the destination register's declared type decides how later ops see it
      Type dt = reg_type(dst.kind == Operand::Kind::Register ? dst.name : "");
      if (ptx::is_float(dt) && ir::is_bv(v->sort)) v = as_real(v);
      return write(b, dst, v);
    }
    case Opcode::Selp: {
      Expr p = read(b, in.operands.at(3), Type::Pred);
      Expr x = read_raw(b, in.operands[1], ty), y = read_raw(b, in.operands[2], ty);
      if (ptx::is_float(ty)) { x = as_real(x); y = as_real(y); }
      else if (x->sort != y->sort) {
        if (x->sort == Sort::Real || y->sort == Sort::Real) unsupported(in, "selp between a float and an integer");
        unsigned w = ptx::type_bits(ty);
        x = as_bv(x, w); y = as_bv(y, w);
      }
      return write(b, in.operands[0], ctx_.ite(p, x, y));
    }
    default: break;
  }
  if (ty == Type::F16x2 || ty == Type::BF16x2) return exec_packed(b, in, ty);
  if (ptx::is_float(ty)) return exec_float(b, in, ty);
  return exec_int(b, in, ty);
}

void Machine::exec_int(Bundle& b, const ptx::Instruction& in, Type ty) {
  const auto& ops = in.operands;
  auto arg = [&](size_t i, Type t) { return read(b, ops.at(i), t); };
  if (ty == Type::Pred) {
    switch (in.op) {
      case Opcode::And: return write(b, ops[0], ctx_.and_(arg(1, ty), arg(2, ty)));
      case Opcode::Or: return write(b, ops[0], ctx_.or_(arg(1, ty), arg(2, ty)));
      case Opcode::Xor: {
        Expr x = arg(1, ty), y = arg(2, ty);
        return write(b, ops[0], ctx_.or_(ctx_.and_(x, ctx_.not_(y)), ctx_.and_(ctx_.not_(x), y)));
      }
      case Opcode::Not: return write(b, ops[0], ctx_.not_(arg(1, ty)));
      default: unsupported(in, "predicate operation");
    }
  }
  if (ty == Type::None) unsupported(in, "instruction without a type");
  bool sgn = ptx::is_signed_int(ty);
  unsigned w = ptx::type_bits(ty);
  Sort s = sort_of(ty);
  auto wide_arg = [&](size_t i) {
    Expr v = arg(i, ty);
    Sort ws = ir::bv_sort(2 * w);
    return sgn ? ctx_.sext(v, ws) : ctx_.zext(v, ws);
  };
  auto konst = [&](Expr e, const char* what) -> uint64_t {
    if (e->op != Op::ConstBV) unsupported(in, fmt::format("{} of a non-constant value", what));
    return e->bv_value();
  };
  auto c = [&](uint64_t v) { return ctx_.bv_const(s, v); };
  Expr r;
  switch (in.op) {
    case Opcode::Add: r = ctx_.bv_add(arg(1, ty), arg(2, ty)); break;
    case Opcode::Sub: r = ctx_.bv_sub(arg(1, ty), arg(2, ty)); break;
    case Opcode::Mul: case Opcode::Mul24:
      if (in.mod.mul == ptx::MulMode::Wide) r = ctx_.bv_mul(wide_arg(1), wide_arg(2));
      else if (in.mod.mul == ptx::MulMode::Hi) r = ctx_.bv_mulhi(arg(1, ty), arg(2, ty), sgn);
      else r = ctx_.bv_mul(arg(1, ty), arg(2, ty));
      break;
    case Opcode::Mad: case Opcode::Mad24:
      if (in.mod.mul == ptx::MulMode::Wide) r = ctx_.bv_add(ctx_.bv_mul(wide_arg(1), wide_arg(2)), arg(3, widen(ty)));
      else if (in.mod.mul == ptx::MulMode::Hi) r = ctx_.bv_add(ctx_.bv_mulhi(arg(1, ty), arg(2, ty), sgn), arg(3, ty));
      else r = ctx_.bv_add(ctx_.bv_mul(arg(1, ty), arg(2, ty)), arg(3, ty));
      break;
    case Opcode::Div: r = sgn ? ctx_.bv_sdiv(arg(1, ty), arg(2, ty)) : ctx_.bv_udiv(arg(1, ty), arg(2, ty)); break;
    case Opcode::Rem: r = sgn ? ctx_.bv_srem(arg(1, ty), arg(2, ty)) : ctx_.bv_urem(arg(1, ty), arg(2, ty)); break;
    case Opcode::Neg: r = ctx_.bv_neg(arg(1, ty)); break;
    case Opcode::Abs: {
      Expr x = arg(1, ty);
      r = ctx_.ite(ctx_.slt(x, c(0)), ctx_.bv_neg(x), x);
      break;
    }
    case Opcode::Min: r = ctx_.bv_min(arg(1, ty), arg(2, ty), sgn); break;
    case Opcode::Max: r = ctx_.bv_max(arg(1, ty), arg(2, ty), sgn); break;
    case Opcode::And: r = ctx_.bv_and(arg(1, ty), arg(2, ty)); break;
    case Opcode::Or: r = ctx_.bv_or(arg(1, ty), arg(2, ty)); break;
    case Opcode::Xor: r = ctx_.bv_xor(arg(1, ty), arg(2, ty)); break;
    case Opcode::Not: r = ctx_.bv_not(arg(1, ty)); break;
    case Opcode::Cnot: r = ctx_.ite(ctx_.eq(arg(1, ty), c(0)), c(1), c(0)); break;
    case Opcode::Shl: r = ctx_.bv_shl(arg(1, ty), as_bv(read(b, ops.at(2), Type::U32), w)); break;
    case Opcode::Shr: {
      Expr amount = as_bv(read(b, ops.at(2), Type::U32), w);
      r = sgn ? ctx_.bv_ashr(arg(1, ty), amount) : ctx_.bv_lshr(arg(1, ty), amount);
      break;
    }
    case Opcode::Popc:
      if (arg(1, ty)->op != Op::ConstBV) {  // sum of the bits (ballot counts)
        Expr x = arg(1, ty);
        std::vector<Expr> bits;
        for (unsigned i = 0; i < w; ++i) bits.push_back(as_bv(ctx_.bv_and(ctx_.bv_lshr(x, c(i)), c(1)), 32));
        r = ctx_.bv_add(bits);
        break;
      }
      [[fallthrough]];
    case Opcode::Clz: case Opcode::Brev: case Opcode::Bfind: {
      uint64_t x = konst(arg(1, ty), "bit counting");
      uint64_t m = ir::width_mask(w);
      x &= m;
      uint64_t v = 0;
      if (in.op == Opcode::Popc) v = std::popcount(x);
      else if (in.op == Opcode::Clz) v = x ? std::countl_zero(x) - (64 - w) : w;
      else if (in.op == Opcode::Brev) { for (unsigned i = 0; i < w; ++i) if (x >> i & 1) v |= uint64_t(1) << (w - 1 - i); }
      else v = x ? 63 - std::countl_zero(x) : 0xFFFFFFFF;
      r = ctx_.bv_const(in.op == Opcode::Brev ? s : Sort::BV32, v);
      break;
    }
    case Opcode::Bfe: {
      uint64_t pos = konst(read(b, ops.at(2), Type::U32), "bfe position") & 0xff;
      uint64_t len = konst(read(b, ops.at(3), Type::U32), "bfe length") & 0xff;
      Expr x = arg(1, ty);
      if (len == 0) { r = c(0); break; }
      if (pos + len > w) len = w > pos ? w - pos : 0;
      Expr left = ctx_.bv_shl(x, c(w - pos - len));
      r = sgn ? ctx_.bv_ashr(left, c(w - len)) : ctx_.bv_lshr(left, c(w - len));
      break;
    }
    case Opcode::Bfi: {
      uint64_t pos = konst(read(b, ops.at(3), Type::U32), "bfi position") & 0xff;
      uint64_t len = konst(read(b, ops.at(4), Type::U32), "bfi length") & 0xff;
      if (pos + len > w) len = w > pos ? w - pos : 0;
      uint64_t field = ir::width_mask(len) << pos;
      r = ctx_.bv_or(ctx_.bv_and(arg(2, ty), c(~field)), ctx_.bv_and(ctx_.bv_shl(arg(1, ty), c(pos)), c(field)));
      break;
    }
    case Opcode::Lop3: {
      // bit i of the look-up table is the result for the minterm (a, b, c) = (i>>2, i>>1, i) & 1
      if (ops[0].kind != Operand::Kind::Register) unsupported(in, "lop3 with a predicate output");
      uint64_t lut = konst(read(b, ops.at(4), Type::U32), "lop3 look-up table") & 0xff;
      Expr x[3] = {arg(1, ty), arg(2, ty), arg(3, ty)};
      std::vector<Expr> terms;
      for (unsigned i = 0; i < 8; ++i) {
        if (!(lut >> i & 1)) continue;
        std::vector<Expr> lits;
        for (unsigned k = 0; k < 3; ++k) lits.push_back((i >> (2 - k) & 1) ? x[k] : ctx_.bv_not(x[k]));
        terms.push_back(ctx_.bv_and(lits));
      }
      r = terms.empty() ? c(0) : ctx_.bv_or(terms);
      break;
    }
    case Opcode::Prmt: {
      // byte permute of {b, a} (a = bytes 0-3, b = bytes 4-7) by a constant selector
      uint64_t sel = konst(read(b, ops.at(3), Type::U32), "prmt selector");
      Expr a = as_bv(arg(1, ty), 32), bb = as_bv(arg(2, ty), 32);
      auto c32 = [&](uint64_t v) { return ctx_.bv_const(Sort::BV32, v); };
      std::string mode;
      for (const auto& w : in.mod.words)
        if (w == "f4e" || w == "b4e" || w == "rc8" || w == "ecl" || w == "ecr" || w == "rc16") mode = w;
      unsigned s2 = unsigned(sel & 3), pick[4];
      bool sign[4] = {false, false, false, false};
      static const unsigned ecl[4][4] = {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}};
      static const unsigned ecr[4][4] = {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}};
      for (unsigned k = 0; k < 4; ++k) {
        if (mode.empty()) { pick[k] = (sel >> (4 * k)) & 7; sign[k] = (sel >> (4 * k + 3)) & 1; }
        else if (mode == "f4e") pick[k] = (s2 + k) & 7;
        else if (mode == "b4e") pick[k] = (s2 + 8 - k) & 7;
        else if (mode == "rc8") pick[k] = s2;
        else if (mode == "ecl") pick[k] = ecl[s2][k];
        else if (mode == "ecr") pick[k] = ecr[s2][k];
        else pick[k] = (sel & 1) * 2 + (k & 1);  // rc16
      }
      std::vector<Expr> bytes;
      for (unsigned k = 0; k < 4; ++k) {
        Expr src = pick[k] < 4 ? a : bb;
        Expr byte = ctx_.bv_and(ctx_.bv_lshr(src, c32(8 * (pick[k] & 3))), c32(0xff));
        if (sign[k])  // replicate the selected byte's sign bit
          byte = ctx_.bv_and(ctx_.bv_ashr(ctx_.bv_shl(src, c32(24 - 8 * (pick[k] & 3))), c32(31)), c32(0xff));
        bytes.push_back(ctx_.bv_shl(byte, c32(8 * k)));
      }
      r = as_bv(ctx_.bv_or(bytes), w);
      break;
    }
    case Opcode::Shf: {
      // funnel shift of the 64-bit {b:a} (b high); the amount wraps (mod 32) or clamps (at 32)
      Expr a = ctx_.zext(as_bv(arg(1, ty), 32), Sort::BV64), hi = ctx_.zext(as_bv(arg(2, ty), 32), Sort::BV64);
      Expr n = as_bv(read(b, ops.at(3), Type::U32), 32);
      n = in.mod.clamp ? ctx_.bv_min(n, ctx_.bv_const(Sort::BV32, 32), false) : ctx_.bv_and(n, ctx_.bv_const(Sort::BV32, 31));
      Expr cat = ctx_.bv_or(ctx_.bv_shl(hi, ctx_.bv_const(Sort::BV64, 32)), a), n64 = ctx_.zext(n, Sort::BV64);
      if (in.mod.shift_left) r = ctx_.trunc(ctx_.bv_lshr(ctx_.bv_shl(cat, n64), ctx_.bv_const(Sort::BV64, 32)), Sort::BV32);
      else if (in.mod.shift_right) r = ctx_.trunc(ctx_.bv_lshr(cat, n64), Sort::BV32);
      else unsupported(in, "shf without .l or .r");
      break;
    }
    default:
      unsupported(in, fmt::format("integer instruction '{}'", ptx::opcode_name(in.op)));
  }
  write(b, ops[0], r);
}

// `d = c + x`, `d = x + c`, `d = c - x`, `d = fma(a, b, c)` on float registers, where c is d itself
// or a register holding a sum (pending, or an n-ary Add node: a chain that started outside the
// loop): d's sum is c's terms plus one (Bundle::sums), instead of a new n-ary node each step.
// `d = max(c, x)` / `min`, the running maximum of a softmax or a max-pool, alike.
bool Machine::holds_list(Bundle& b, const Operand& o, const Operand& dst, Op list_op) {
  if (o.kind != Operand::Kind::Register || o.negated) return false;
  if (o.name == dst.name) return true;
  auto it = slots_.find(o.name);
  if (it == slots_.end()) return false;
  if (auto p = b.sums.find(it->second); p != b.sums.end()) return p->second.op == list_op;
  return size_t(it->second) < b.regs.size() && b.regs[it->second] && b.regs[it->second]->op == list_op &&
         b.regs[it->second]->sort == Sort::Real;
}

void Machine::append_to_list(Bundle& b, int src, int dst, Expr cur, Expr term, Op list_op) {
  Bundle::PendingSum sum;
  if (auto it = b.sums.find(src); it != b.sums.end() && it->second.op == list_op) {
    sum = it->second;
  } else {
    sum.op = list_op;
    sum.terms = std::make_shared<std::vector<Expr>>();
    if (cur->op == list_op) sum.terms->assign(cur->args().begin(), cur->args().end());
    else if (list_op == Op::Add || cur != (list_op == Op::Max ? ninf_ : pinf_))
      sum.terms->push_back(cur);  // the identity -inf / +inf of max / min is left out
    sum.n = sum.terms->size();
  }
  if (sum.terms->size() != sum.n)  // another register extended this list past our prefix: branch off
    sum.terms = std::make_shared<std::vector<Expr>>(sum.terms->begin(), sum.terms->begin() + long(sum.n));
  sum.terms->push_back(term);
  ++sum.n;
  if (size_t(dst) >= b.regs.size()) b.regs.resize(slot_types_.size(), nullptr);
  if (b.conv) b.conv->written.insert(dst);
  b.regs[dst] = nullptr;  // materialized from the sum when read
  b.sums[dst] = std::move(sum);
}

bool Machine::accumulate(Bundle& b, const ptx::Instruction& in, Type ty) {
  const auto& ops = in.operands;
  if (concrete_ || in.mod.sat || (ty != Type::F32 && ty != Type::F64) || ops.empty() ||
      ops[0].kind != Operand::Kind::Register)
    return false;
  const bool is_minmax = in.op == Opcode::Max || in.op == Opcode::Min;
  const Op list_op = in.op == Opcode::Max ? Op::Max : in.op == Opcode::Min ? Op::Min : Op::Add;
  // the destination itself, or a register holding a (pending) sum/max/min
  auto is_acc = [&](size_t i) { return ops.size() > i && holds_list(b, ops[i], ops[0], list_op); };
  int acc = -1;  // operand index of the accumulator
  if ((in.op == Opcode::Add || in.op == Opcode::Sub) && ops.size() == 3 && is_acc(1)) acc = 1;
  if ((in.op == Opcode::Add || is_minmax) && ops.size() == 3 && acc < 0 && is_acc(2)) acc = 2;
  if (is_minmax && ops.size() == 3 && acc < 0 && is_acc(1)) acc = 1;
  if ((in.op == Opcode::Fma || in.op == Opcode::Mad) && ops.size() == 4 && is_acc(3)) acc = 3;
  if (acc < 0) return false;
  Expr ninf = ninf_, pinf = pinf_;
  // max/min: -inf/+inf is the identity (left out of the list) or absorbs (the plain path decides)
  Expr identity = in.op == Opcode::Max ? ninf : pinf;
  auto arg = [&](size_t i) -> Expr {  // nullptr: an absorbing infinity (not an accumulation)
    Expr x = read(b, ops.at(i), ty);
    if (x == ninf || x == pinf) {
      if (is_minmax) return x == identity ? x : nullptr;
      unsupported(in, "arithmetic on an infinite value");
    }
    return x;
  };
  int src = slot(ops[size_t(acc)].name), dst = slot(ops[0].name);
  Expr term;
  if (in.op == Opcode::Add || is_minmax) term = arg(acc == 1 ? 2 : 1);
  else if (in.op == Opcode::Sub) term = ctx_.neg(arg(2));
  else term = ctx_.mul(arg(1), arg(2));
  if (!term) return false;
  Expr cur = nullptr;
  if (auto it = b.sums.find(src); it == b.sums.end() || it->second.op != list_op) {
    cur = arg(size_t(acc));
    if (!cur) return false;
  }
  if (is_minmax && term == identity) return src == dst;  // max(m, -inf) is m: nothing to append
  append_to_list(b, src, dst, cur, term, list_op);
  return true;
}

// IEEE arithmetic with an infinite operand, for the cases whose result is exact whatever the finite
// operand (tensor data and its functions are finite reals in the model): Triton's masked lanes load
// -inf (a softmax's `other`), subtract the row max, scale by log2(e) and exponentiate to 0. What
// would need the finite operand's sign, or gives NaN (inf - inf, 0 * inf), stays UNSUPPORTED.
Expr Machine::inf_arith(const ptx::Instruction& in, const std::vector<Expr>& xs) {
  auto sign_of_inf = [&](Expr x) { return x == pinf_ ? 1 : x == ninf_ ? -1 : 0; };
  auto inf_of = [&](int s) { return s > 0 ? pinf_ : ninf_; };
  auto refuse = [&]() -> Expr { unsupported(in, "arithmetic on an infinite value"); };
  auto const_sign = [&](Expr x) -> int {  // sign of a constant finite operand, 2 when not constant
    if (x->op != Op::ConstReal) return 2;
    return sgn(x->rational());
  };
  auto sum = [&](Expr a, int sa, Expr c, int sc) -> Expr {  // a + c
    if (sa && sc && sa != sc) return refuse();
    return sa ? inf_of(sa) : sc ? inf_of(sc) : ctx_.add(a, c);
  };
  auto prod = [&](Expr a, Expr c) -> Expr {
    int sa = sign_of_inf(a), sc = sign_of_inf(c);
    if (!sa && !sc) return ctx_.mul(a, c);
    int ka = sa ? sa : const_sign(a), kc = sc ? sc : const_sign(c);
    if (ka == 2 || kc == 2 || ka == 0 || kc == 0) return refuse();
    return inf_of(ka * kc);
  };
  switch (in.op) {
    case Opcode::Add: return sum(xs.at(0), sign_of_inf(xs[0]), xs.at(1), sign_of_inf(xs[1]));
    case Opcode::Sub: return sum(xs.at(0), sign_of_inf(xs[0]), ctx_.neg(xs.at(1)), -sign_of_inf(xs[1]));
    case Opcode::Mul: return prod(xs.at(0), xs.at(1));
    case Opcode::Fma: case Opcode::Mad: {
      Expr p = prod(xs.at(0), xs.at(1));
      return sum(p, sign_of_inf(p), xs.at(2), sign_of_inf(xs[2]));
    }
    case Opcode::Neg: return inf_of(-sign_of_inf(xs.at(0)));
    case Opcode::Abs: return pinf_;
    case Opcode::Ex2: return sign_of_inf(xs.at(0)) < 0 ? ctx_.real_const(0) : pinf_;
    case Opcode::Rcp: return ctx_.real_const(0);
    case Opcode::Div: {
      int sa = sign_of_inf(xs.at(0)), sc = sign_of_inf(xs.at(1));
      if (!sa) return ctx_.real_const(0);  // finite / inf
      int kc = sc ? 2 : const_sign(xs[1]);
      if (kc == 2 || kc == 0) return refuse();
      return inf_of(sa * kc);
    }
    default: return refuse();
  }
}

void Machine::exec_float(Bundle& b, const ptx::Instruction& in, Type ty) {
  if (accumulate(b, in, ty)) return;
  const auto& ops = in.operands;
  Expr ninf = ninf_, pinf = pinf_;
  bool is_minmax = in.op == Opcode::Min || in.op == Opcode::Max;
  auto arg = [&](size_t i) {
    Expr x = read(b, ops.at(i), ty);
    if (!is_minmax && (x == ninf || x == pinf)) unsupported(in, "arithmetic on an infinite value");
    return x;
  };
  auto minmax = [&](bool is_max) {
    std::vector<Expr> xs;
    for (size_t i = 1; i < ops.size(); ++i) {
      Expr x = arg(i);
      if (x == (is_max ? ninf : pinf)) continue;  // identity element
      if (x == (is_max ? pinf : ninf)) return x;
      xs.push_back(x);
    }
    if (xs.empty()) return is_max ? ninf : pinf;
    return is_max ? ctx_.max(xs) : ctx_.min(xs);
  };
  if (!is_minmax) {
    std::vector<Expr> xs;
    bool any_inf = false;
    for (size_t i = 1; i < ops.size(); ++i) {
      xs.push_back(read(b, ops[i], ty));
      any_inf = any_inf || xs.back() == ninf || xs.back() == pinf;
    }
    if (any_inf) {
      Expr r = inf_arith(in, xs);
      if (in.mod.sat) r = r == pinf ? ctx_.real_const(1) : r == ninf ? ctx_.real_const(0) : r;
      write(b, ops[0], r);
      return;
    }
  }
  Expr r;
  switch (in.op) {
    case Opcode::Add: r = ctx_.add(arg(1), arg(2)); break;
    case Opcode::Sub: r = ctx_.sub(arg(1), arg(2)); break;
    case Opcode::Mul: r = ctx_.mul(arg(1), arg(2)); break;
    case Opcode::Div: r = ctx_.div(arg(1), arg(2)); break;
    case Opcode::Fma: case Opcode::Mad: r = ctx_.add(ctx_.mul(arg(1), arg(2)), arg(3)); break;
    case Opcode::Neg: r = ctx_.neg(arg(1)); break;
    case Opcode::Abs: r = ctx_.abs(arg(1)); break;
    case Opcode::Min: r = minmax(false); break;
    case Opcode::Max: r = minmax(true); break;
    case Opcode::Sqrt: r = ctx_.call(ir::Fn::Sqrt, arg(1)); break;
    case Opcode::Rsqrt: r = ctx_.call(ir::Fn::Rsqrt, arg(1)); break;
    case Opcode::Rcp: r = ctx_.recip(arg(1)); break;
    case Opcode::Ex2: r = ctx_.call(ir::Fn::Exp2, arg(1)); break;
    case Opcode::Lg2: r = ctx_.call(ir::Fn::Log2, arg(1)); break;
    case Opcode::Tanh: r = ctx_.call(ir::Fn::Tanh, arg(1)); break;
    case Opcode::Sin: r = ctx_.call(ir::Fn::Sin, arg(1)); break;
    case Opcode::Cos: r = ctx_.call(ir::Fn::Cos, arg(1)); break;
    case Opcode::Copysign: {
      Expr sign = arg(1), mag = ctx_.abs(arg(2));
      r = ctx_.ite(ctx_.lt(sign, ctx_.real_const(0)), ctx_.neg(mag), mag);
      break;
    }
    default:
      unsupported(in, fmt::format("float instruction '{}'", ptx::opcode_name(in.op)));
  }
  if (in.mod.sat) r = ctx_.min(ctx_.max(r, ctx_.real_const(0)), ctx_.real_const(1));
  write(b, ops[0], r);
}

void Machine::exec_cvt(Bundle& b, const ptx::Instruction& in) {
  if (in.mod.types.size() != 2) unsupported(in, "cvt without two types");
  Type dt = in.mod.types[0], st = in.mod.types[1];
  if ((dt == Type::F16x2 || dt == Type::BF16x2) && st == Type::F32 && in.operands.size() == 3) {
    // cvt.rn.f16x2.f32 d, a, b: a goes to the upper half, b to the lower (rounding: identity on reals)
    Expr hi = read(b, in.operands[1], st), lo = read(b, in.operands[2], st);
    if (in.mod.sat) unsupported(in, "saturating packed conversion");
    return write(b, in.operands[0], pack_half2(lo, hi));
  }
  if (dt == Type::F16x2 || st == Type::F16x2 || dt == Type::BF16x2 || st == Type::BF16x2) unsupported(in, "packed half2 conversion");
  Expr v = read(b, in.operands.at(1), st);
  Expr r;
  bool df = ptx::is_float(dt), sf = ptx::is_float(st);
  if (df && sf) {
    r = v;
    switch (in.mod.rounding) {
      case ptx::Rounding::Rni: r = ctx_.call(ir::Fn::Round, v); break;
      case ptx::Rounding::Rzi: r = ctx_.call(ir::Fn::Trunc, v); break;
      case ptx::Rounding::Rmi: r = ctx_.call(ir::Fn::Floor, v); break;
      case ptx::Rounding::Rpi: r = ctx_.call(ir::Fn::Ceil, v); break;
      default: break;  // float-to-float rounding is identity on reals
    }
    if (in.mod.sat) r = ctx_.min(ctx_.max(r, ctx_.real_const(0)), ctx_.real_const(1));
  } else if (df) {
    r = ctx_.bv_to_real(v, ptx::is_signed_int(st));
  } else if (sf) {
    r = ctx_.real_to_bv(v, sort_of(dt), ptx::is_signed_int(dt), int_round(in.mod.rounding));
  } else {
    unsigned dw = std::max(8u, ptx::type_bits(dt)), sw = std::max(8u, ptx::type_bits(st));
    if (in.mod.sat) unsupported(in, "saturating integer conversion");
    if (dw > sw) r = ptx::is_signed_int(st) ? ctx_.sext(v, ir::bv_sort(dw)) : ctx_.zext(v, ir::bv_sort(dw));
    else if (dw < sw) r = ctx_.trunc(v, ir::bv_sort(dw));
    else r = v;
    // narrow destination types held in wider registers (cvt.s8.s32 -> 16-bit reg) extend back
    unsigned regw = ptx::type_bits(reg_type(in.operands[0].name));
    if (ptx::type_bits(dt) < regw && regw >= 16)
      r = ptx::is_signed_int(dt) ? ctx_.sext(r, ir::bv_sort(regw)) : ctx_.zext(r, ir::bv_sort(regw));
  }
  write(b, in.operands[0], r);
}

void Machine::exec_setp(Bundle& b, const ptx::Instruction& in) {
  Type ty = main_type(in);
  const auto& ops = in.operands;
  Expr x, y;
  bool fl = ptx::is_float(ty);
  if (fl) { x = read(b, ops.at(1), ty); y = read(b, ops.at(2), ty); }
  else {
    x = read_raw(b, ops.at(1), ty);
    y = read_raw(b, ops.at(2), ty);
    bool punned = x->sort == Sort::Real || y->sort == Sort::Real;
    if (punned && !(in.mod.cmp == ptx::CmpOp::Eq || in.mod.cmp == ptx::CmpOp::Ne))
      unsupported(in, "integer comparison of float bits");
    if (!punned) { x = as_bv(x, ptx::type_bits(ty)); y = as_bv(y, ptx::type_bits(ty)); }
  }
  bool sgn = ptx::is_signed_int(ty);
  Expr r = nullptr;
  using C = ptx::CmpOp;
  auto lt = [&](Expr a, Expr c) { return fl ? ctx_.lt(a, c) : sgn ? ctx_.slt(a, c) : ctx_.ult(a, c); };
  auto le = [&](Expr a, Expr c) { return fl ? ctx_.le(a, c) : sgn ? ctx_.sle(a, c) : ctx_.ule(a, c); };
  Expr ninf = ninf_, pinf = pinf_;
  // comparisons with +-inf against finite reals (all reals are finite) fold to constants
  auto rank = [&](Expr v) { return v == ninf ? -1 : v == pinf ? 1 : 0; };
  bool inf_cmp = fl && (rank(x) != 0 || rank(y) != 0);
  int order = 0;  // sign of x - y when decided by infinities
  if (inf_cmp) {
    if (rank(x) == rank(y)) order = 0;
    else order = rank(x) != 0 ? rank(x) : -rank(y);
  }
  auto fold = [&](bool v) { return ctx_.bool_const(v); };
  switch (inf_cmp ? in.mod.cmp : ptx::CmpOp::None) {
    case ptx::CmpOp::None: break;
    case ptx::CmpOp::Eq: case ptx::CmpOp::Equ: r = fold(order == 0); break;
    case ptx::CmpOp::Ne: case ptx::CmpOp::Neu: r = fold(order != 0); break;
    case ptx::CmpOp::Lt: case ptx::CmpOp::Ltu: r = fold(order < 0); break;
    case ptx::CmpOp::Le: case ptx::CmpOp::Leu: r = fold(order <= 0); break;
    case ptx::CmpOp::Gt: case ptx::CmpOp::Gtu: r = fold(order > 0); break;
    case ptx::CmpOp::Ge: case ptx::CmpOp::Geu: r = fold(order >= 0); break;
    case ptx::CmpOp::Num: r = fold(true); break;
    case ptx::CmpOp::Nan: r = fold(false); break;
    default: unsupported(in, "comparison with an infinite value");
  }
  if (!r) switch (in.mod.cmp) {
    case C::Eq: case C::Equ: r = ctx_.eq(x, y); break;
    case C::Ne: case C::Neu: r = ctx_.not_(ctx_.eq(x, y)); break;
    case C::Lt: case C::Ltu: r = lt(x, y); break;
    case C::Le: case C::Leu: r = le(x, y); break;
    case C::Gt: case C::Gtu: r = lt(y, x); break;
    case C::Ge: case C::Geu: r = le(y, x); break;
    case C::Lo: r = ctx_.ult(x, y); break;
    case C::Ls: r = ctx_.ule(x, y); break;
    case C::Hi: r = ctx_.ult(y, x); break;
    case C::Hs: r = ctx_.ule(y, x); break;
    case C::Num: r = ctx_.bool_const(true); break;   // reals are never NaN
    case C::Nan: r = ctx_.bool_const(false); break;
    default: unsupported(in, "comparison operator");
  }
  Expr q = ctx_.not_(r);
  if (in.mod.bool_op != ptx::BoolOp::None) {
    Expr c = read(b, ops.at(3), Type::Pred);
    auto comb = [&](Expr p) {
      switch (in.mod.bool_op) {
        case ptx::BoolOp::And: return ctx_.and_(p, c);
        case ptx::BoolOp::Or: return ctx_.or_(p, c);
        default: return ctx_.or_(ctx_.and_(p, ctx_.not_(c)), ctx_.and_(ctx_.not_(p), c));
      }
    };
    r = comb(r);
    q = comb(q);
  }
  if (ops[0].kind == Operand::Kind::Pair) {
    write(b, ops[0].elements.at(0), r);
    write(b, ops[0].elements.at(1), q);
  } else {
    write(b, ops[0], r);
  }
}

Expr Machine::pack_half2(Expr lo, Expr hi) {
  Expr m = ctx_.fresh_var("half2", Sort::BV32);
  packed_[m] = {lo, hi};
  return m;
}

std::pair<Expr, Expr> Machine::unpack_half2(const ptx::Instruction& in, Expr v, bool bf16) {
  auto it = packed_.find(v);
  if (it != packed_.end()) return it->second;
  if (v->op == Op::Undef) return {ctx_.undef(Sort::Real), ctx_.undef(Sort::Real)};
  if (v->op == Op::ConstBV) {  // an immediate: two f16 (or bf16) bit patterns
    auto half = [&](uint64_t h) {
      double d;
      if (bf16) { uint32_t f = uint32_t(h) << 16; float x; std::memcpy(&x, &f, 4); d = x; }
      else {
        uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
        if (e == 31) unsupported(in, "packed half2 constant is infinite or NaN");
        d = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(double(m | 1024), int(e) - 25);
        if (s) d = -d;
      }
      if (!std::isfinite(d)) unsupported(in, "packed bf16x2 constant is infinite or NaN");
      return ctx_.real_const_from_double(d);
    };
    return {half(v->bv_value() & 0xffff), half((v->bv_value() >> 16) & 0xffff)};
  }
  unsupported(in, "packed half2 value of unknown layout (not produced by a half2 load, cvt or mov)");
}

// add/sub/mul/fma/neg/abs/min/max on .f16x2 / .bf16x2: the float semantics per half
void Machine::exec_packed(Bundle& b, const ptx::Instruction& in, Type ty) {
  const auto& ops = in.operands;
  bool bf = ty == Type::BF16x2;
  std::vector<std::pair<Expr, Expr>> x;
  for (size_t i = 1; i < ops.size(); ++i) x.push_back(unpack_half2(in, read_raw(b, ops[i], Type::B32), bf));
  auto lane = [&](bool hi) {
    auto a = [&](size_t i) { return hi ? x.at(i).second : x.at(i).first; };
    Expr r;
    switch (in.op) {
      case Opcode::Add: r = ctx_.add(a(0), a(1)); break;
      case Opcode::Sub: r = ctx_.sub(a(0), a(1)); break;
      case Opcode::Mul: r = ctx_.mul(a(0), a(1)); break;
      case Opcode::Fma: r = ctx_.add(ctx_.mul(a(0), a(1)), a(2)); break;
      case Opcode::Neg: r = ctx_.neg(a(0)); break;
      case Opcode::Abs: r = ctx_.abs(a(0)); break;
      case Opcode::Min: r = ctx_.min(a(0), a(1)); break;
      case Opcode::Max: r = ctx_.max(a(0), a(1)); break;
      default: unsupported(in, fmt::format("packed half2 instruction '{}'", ptx::opcode_name(in.op)));
    }
    if (in.mod.sat) r = ctx_.min(ctx_.max(r, ctx_.real_const(0)), ctx_.real_const(1));
    return r;
  };
  Expr lo = lane(false), hi = lane(true);
  if (concrete_) {  // keep halves as constants (named functions are folded by write() otherwise)
    ir::Evaluator ev(ir::Env{});
    auto fold = [&](Expr e) { return e->is_const() || e->has_undef() || e->has_data() ? e : ctx_.real_const_from_double(ev.real(e)); };
    lo = fold(lo);
    hi = fold(hi);
  }
  write(b, ops[0], pack_half2(lo, hi));
}

}  // namespace dirigo::exec
