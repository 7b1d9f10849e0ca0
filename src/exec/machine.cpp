#include "exec/interval.h"
#include "exec/machine.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "ir/eval.h"

namespace dirigo::exec {

namespace {
uint64_t align_up(uint64_t x, uint64_t a) { return a ? (x + a - 1) / a * a : x; }

double bits_to_double(uint64_t bits, unsigned width) {
  if (width == 64) { double d; std::memcpy(&d, &bits, 8); return d; }
  if (width == 32) { uint32_t b = uint32_t(bits); float f; std::memcpy(&f, &b, 4); return f; }
  if (width == 16) {  // IEEE half
    uint32_t s = (bits >> 15) & 1, e = (bits >> 10) & 31, m = bits & 1023;
    double v = e == 0 ? std::ldexp(double(m), -24) : e == 31 ? INFINITY : std::ldexp(double(m | 1024), int(e) - 25);
    return s ? -v : v;
  }
  return NAN;
}
}  // namespace

Machine::Machine(ir::Context& ctx, const ptx::Module& m, const ptx::Function& f, const Launch& launch,
                 const ExecOptions& opt, ExecResult& out, const ConcreteMemory* concrete)
    : ctx_(ctx), m_(m), f_(f), launch_(launch), opt_(opt), out_(out), tv_(ctx, launch.block, launch.grid),
      sat_(ctx, tv_, opt.max_enumeration), ranges_(ctx, tv_, opt.max_enumeration), rollup_(ptx::rollup(f)), concrete_(concrete != nullptr) {
  if (opt.max_ms > 0) deadline_ = Deadline(started_ + std::chrono::microseconds(int64_t(opt.max_ms * 1000)));
  if (opt.deadline && (!deadline_.set() || *opt.deadline < deadline_.at())) deadline_ = Deadline(*opt.deadline);
  sat_.set_deadline(&deadline_);
  ranges_.set_deadline(&deadline_);
  if (concrete) mem_ = *concrete;
  out_.idioms = rollup_.matched;
  if (launch.params.size() != f.params.size())
    throw Unsupported(fmt::format("kernel {} has {} parameters, launch binds {}", f.name, f.params.size(), launch.params.size()));
  for (uint32_t d : {launch.block.x, launch.block.y, launch.block.z, launch.grid.x, launch.grid.y, launch.grid.z})
    if (d == 0) throw Unsupported("launch dimension 0");
  if (launch.block.count() > 1024) throw Unsupported("block of more than 1024 threads");
  layout_variables();
  static std::atomic<uint64_t> launches{0};
  uint64_t id = launches++;
  out_.smem_bytes = static_shared_ + launch.dynamic_shared_bytes;
  out_.smem_tensor.push_back(ctx_.tensor(fmt::format("{}#{}.smem.e0", f.name, id)));
  out_.epoch_writes.emplace_back();
  if (!concrete_) {
    Bundle b;
    b.pred = ctx_.bool_const(true);
    out_.bundles.push_back({b.pred, "", {}});
    bundles_.push_back(std::move(b));
  } else {
    const Dim3& B = launch.block;
    const Dim3& G = launch.grid;
    uint64_t total = B.count() * G.count();
    if (total > 65536) throw Unsupported("concrete interpretation is limited to 65536 threads");
    for (uint32_t cz = 0; cz < G.z; ++cz) for (uint32_t cy = 0; cy < G.y; ++cy) for (uint32_t cx = 0; cx < G.x; ++cx)
    for (uint32_t z = 0; z < B.z; ++z) for (uint32_t y = 0; y < B.y; ++y) for (uint32_t x = 0; x < B.x; ++x) {
      Bundle b;
      b.coord = ThreadCoord{{x, y, z}, {cx, cy, cz}};
      uint32_t vals[6] = {x, y, z, cx, cy, cz};
      std::vector<Expr> eqs;
      auto vars = tv_.all();
      for (int i = 0; i < 6; ++i) eqs.push_back(ctx_.eq(vars[i], ctx_.bv_const(Sort::BV32, vals[i])));
      b.pred = ctx_.and_(eqs);
      b.info = int(out_.bundles.size());
      out_.bundles.push_back({b.pred, "", {}});
      bundles_.push_back(std::move(b));
    }
  }
}

void Machine::layout_variables() {
  auto place = [&](const ptx::Variable& v, bool function_scope) {
    uint64_t a = v.align ? v.align : std::max<uint64_t>(1, ptx::type_bits(v.type) / 8);
    if (v.space == ptx::StateSpace::Shared) {
      bool unsized = v.is_extern || (!v.dims.empty() && v.dims[0] == 0);
      if (unsized) return;  // placed after the static ones
      static_shared_ = align_up(static_shared_, a);
      var_addr_[v.name] = kSharedBase + static_shared_;
      var_size_[v.name] = v.size_bytes();
      static_shared_ += v.size_bytes();
    } else if (v.space == ptx::StateSpace::Local || (function_scope && v.space == ptx::StateSpace::Param)) {
      local_bytes_ = align_up(local_bytes_, std::max<uint64_t>(a, 8));
      var_addr_[v.name] = kLocalBase + local_bytes_;
      var_size_[v.name] = v.size_bytes();
      local_bytes_ += std::max<uint64_t>(v.size_bytes(), 8);
    }
  };
  for (const auto& v : m_.globals) {
    if (v.space == ptx::StateSpace::Const && v.has_init) {
      // initialized constant memory: lay out its bytes (little-endian) in the const window
      uint64_t a = v.align ? v.align : std::max<uint64_t>(1, ptx::type_bits(v.type) / 8);
      uint64_t at = align_up(const_bytes_.size(), a);
      const_bytes_.resize(at + v.size_bytes(), 0);
      unsigned es = std::max(1u, ptx::type_bits(v.type) / 8);
      for (size_t i = 0; i < v.init.size() && (i + 1) * es <= v.size_bytes(); ++i) {
        const auto& o = v.init[i];
        uint64_t bits = o.kind == ptx::Operand::Kind::Float
                            ? (es == 4 ? uint64_t(std::bit_cast<uint32_t>(float(o.float_value))) : std::bit_cast<uint64_t>(o.float_value))
                            : uint64_t(o.int_value);
        if (o.kind == ptx::Operand::Kind::Float && o.float_width == 32 && es == 4) bits = o.float_bits;
        for (unsigned b = 0; b < es; ++b) const_bytes_[at + i * es + b] = uint8_t(bits >> (8 * b));
      }
      var_addr_[v.name] = kConstBase + at;
      var_size_[v.name] = v.size_bytes();
      continue;
    }
    place(v, false);
  }
  for (const auto& v : f_.locals) place(v, true);
  static_shared_ = align_up(static_shared_, 16);
  for (const auto* vars : {&m_.globals, &f_.locals})
    for (const auto& v : *vars)
      if (v.space == ptx::StateSpace::Shared && !var_addr_.count(v.name)) {
        var_addr_[v.name] = kSharedBase + static_shared_;  // every extern array aliases the dynamic region
        var_size_[v.name] = launch_.dynamic_shared_bytes;
      }
}

int Machine::slot(const std::string& reg) {
  auto it = slots_.find(reg);
  if (it != slots_.end()) return it->second;
  auto t = f_.register_type(reg);
  int s = int(slot_types_.size());
  slots_[reg] = s;
  slot_types_.push_back(t ? *t : Type::None);
  return s;
}

ptx::Type Machine::reg_type(const std::string& reg) { return slot_types_[slot(reg)]; }

Where Machine::where(const ptx::Instruction& in) const {
  Where w;
  w.ptx_line = in.loc.ptx_line;
  if (in.loc.file >= 0) {
    auto name = [&](int file) {
      auto it = m_.files.find(file);
      return it == m_.files.end() ? std::string("?") : it->second;
    };
    std::string file = name(in.loc.file);
    int line = in.loc.line;
    // code inlined from a CUDA header (__shfl_*_sync, __ballot_sync, ...): name the call site
    if (in.loc.inlined_file >= 0 && file.find("/include/") != std::string::npos) {
      file = name(in.loc.inlined_file);
      line = in.loc.inlined_line;
    }
    w.source = fmt::format("{}:{}", file, line);
  }
  return w;
}

void Machine::unsupported(const ptx::Instruction& in, const std::string& why) const {
  throw Unsupported(fmt::format("{} at PTX line {} ('{}') in kernel {}", why, in.loc.ptx_line, in.text, f_.name));
}

Sort Machine::sort_of(Type ty) {
  if (ty == Type::Pred) return Sort::Bool;
  if (ptx::is_float(ty)) return Sort::Real;
  unsigned w = ptx::type_bits(ty);
  return ir::bv_sort(w < 8 ? 8 : w > 64 ? 64 : w);
}

// ---------------------------------------------------------------- values

Expr Machine::const_of(Type ty, const Operand& o) {
  if (o.kind == Operand::Kind::Int) {
    if (ty == Type::Pred) return ctx_.bool_const(o.int_value != 0);
    if (ptx::is_float(ty)) return ctx_.real_const(o.int_value);
    return ctx_.bv_const(sort_of(ty), uint64_t(o.int_value));
  }
  // Float immediate
  if (ptx::is_float(ty) || ty == Type::None) {
    double d = o.float_value;
    if (std::isnan(d)) throw Unsupported("NaN constant");
    if (std::isinf(d)) return ctx_.var(d > 0 ? "+inf" : "-inf", Sort::Real);
    return ctx_.real_const_from_double(d);
  }
  return ctx_.bv_const(sort_of(ty), o.float_bits);
}

Expr Machine::linear_tid(Expr tx, Expr ty, Expr tz) {
  const Dim3& B = launch_.block;
  Expr nx = ctx_.bv_const(Sort::BV32, B.x), nxy = ctx_.bv_const(Sort::BV32, uint64_t(B.x) * B.y);
  return ctx_.bv_add(std::vector<Expr>{tx, ctx_.bv_mul(ty, nx), ctx_.bv_mul(tz, nxy)});
}

std::vector<Expr> Machine::tid_of_linear(Expr lin) {
  const Dim3& B = launch_.block;
  if (B.y == 1 && B.z == 1) return {lin, ctx_.bv_const(Sort::BV32, 0), ctx_.bv_const(Sort::BV32, 0)};
  Expr nx = ctx_.bv_const(Sort::BV32, B.x), ny = ctx_.bv_const(Sort::BV32, B.y);
  Expr rest = ctx_.bv_udiv(lin, nx);
  return {ctx_.bv_urem(lin, nx), ctx_.bv_urem(rest, ny), ctx_.bv_udiv(rest, ny)};
}

ir::Substituter Machine::tid_substituter(std::vector<Expr> tid) {
  return ir::Substituter(ctx_, [this, tid = std::move(tid)](Expr leaf) -> Expr {
    for (int i = 0; i < 3; ++i) if (leaf == tv_.tid[i]) return tid[i];
    return nullptr;
  });
}

Expr Machine::ctaid_linear() { return tv_.block_linear(ctx_); }

Expr Machine::special(Bundle& b, const std::string& name) {
  auto dimsel = [&](const Dim3& d, char c) { return c == 'x' ? d.x : c == 'y' ? d.y : d.z; };
  auto idx = [&](char c) { return c == 'x' ? 0 : c == 'y' ? 1 : 2; };
  char c = name.back();
  auto c32 = [&](uint64_t v) { return ctx_.bv_const(Sort::BV32, v); };
  if (name.rfind("%tid.", 0) == 0) return b.coord ? c32(dimsel(b.coord->tid, c)) : tv_.tid[idx(c)];
  if (name.rfind("%ctaid.", 0) == 0) return b.coord ? c32(dimsel(b.coord->ctaid, c)) : tv_.ctaid[idx(c)];
  if (name.rfind("%ntid.", 0) == 0) return c32(dimsel(launch_.block, c));
  if (name.rfind("%nctaid.", 0) == 0) return c32(dimsel(launch_.grid, c));
  Expr lin = linear_tid(special(b, "%tid.x"), special(b, "%tid.y"), special(b, "%tid.z"));
  if (name == "%laneid") return ctx_.bv_and(lin, c32(31));
  if (name == "%warpid") return ctx_.bv_lshr(lin, c32(5));
  if (name == "%nwarpid") return c32((launch_.block.count() + 31) / 32);
  if (name == "%lanemask_lt" || name == "%lanemask_le" || name == "%lanemask_eq") {
    Expr lane = ctx_.bv_and(lin, c32(31));
    Expr bit = ctx_.bv_shl(c32(1), lane);
    if (name == "%lanemask_eq") return bit;
    if (name == "%lanemask_lt") return ctx_.bv_sub(bit, c32(1));
    return ctx_.bv_sub(ctx_.bv_shl(bit, c32(1)), c32(1));
  }
  throw Unsupported("special register " + name);
}

Expr Machine::read_raw(Bundle& b, const Operand& o, Type ty) {
  switch (o.kind) {
    case Operand::Kind::Register: {
      Expr v;
      if (o.name.size() > 1 && o.name[0] == '%' && !slots_.count(o.name) && !f_.register_type(o.name)) {
        v = special(b, o.name);
      } else {
        int s = slot(o.name);
        if (size_t(s) >= b.regs.size()) b.regs.resize(slot_types_.size(), nullptr);
        // materialize once: accumulate() clears regs[s] whenever it extends the list, so a set
        // register with a pending list holds that list's node already (a softmax's exp pass reads
        // the 10^5-term running max every step; rebuilding it per read is O(n) each)
        if (auto it = b.sums.find(s); it != b.sums.end() && !b.regs[s]) b.regs[s] = list_value(it->second);
        v = b.regs[s];
        if (!v) v = ctx_.undef(sort_of(slot_types_[s] == Type::None ? ty : slot_types_[s]));
      }
      if (o.negated) {
        if (v->sort != Sort::Bool) throw Unsupported("negated non-predicate " + o.name);
        v = ctx_.not_(v);
      }
      return v;
    }
    case Operand::Kind::Int: case Operand::Kind::Float:
      return const_of(ty, o);
    case Operand::Kind::Symbol: {
      // WARP_SZ is PTX's predefined constant for the warp size (`mov.u32 %r, WARP_SZ`)
      if (o.name == "WARP_SZ") return ptx::is_float(ty) ? ctx_.real_const(32) : ctx_.bv_const(sort_of(ty), 32);
      auto it = var_addr_.find(o.name);
      if (it == var_addr_.end()) throw Unsupported("address of symbol " + o.name);
      unsigned w = ptx::type_bits(ty) == 32 ? 32 : 64;
      return ctx_.bv_const(ir::bv_sort(w), it->second);
    }
    default:
      throw Unsupported("operand form");
  }
}

Expr Machine::list_value(const Bundle::PendingSum& p) {
  std::span<const Expr> xs(p.terms->data(), p.n);
  if (p.op == Op::Add) return ctx_.add(xs);
  if (p.n == 0) return p.op == Op::Max ? ninf_ : pinf_;
  return p.op == Op::Max ? ctx_.max(xs) : ctx_.min(xs);
}

Expr Machine::as_real(Expr v) {
  if (v->sort == Sort::Real) return v;
  if (v->op == Op::ConstBV) {
    double d = bits_to_double(v->bv_value(), ir::bv_width(v->sort));
    if (std::isnan(d)) throw Unsupported("NaN bit pattern");
    if (std::isinf(d)) return ctx_.var(d > 0 ? "+inf" : "-inf", Sort::Real);
    return ctx_.real_const_from_double(d);
  }
  if (v->op == Op::Undef) return ctx_.undef(Sort::Real);
  // a shared cell read through an integer register (CAS loops: `old = *(int*)addr`) and
  // reinterpreted as a float is the same cell read as a float; the Resolver converts constants
  bool smem = (v->op == Op::Load || v->op == Op::TensorElem) &&
              std::find(out_.smem_tensor.begin(), out_.smem_tensor.end(), v->tensor()) != out_.smem_tensor.end();
  if (smem && ir::bv_width(v->sort) == 32)
    return ctx_.load(v->tensor(), v->op == Op::Load ? v->arg(0) : ctx_.bv_const(Sort::BV64, uint64_t(v->index())), Sort::Real);
  throw Unsupported("bit reinterpretation of an integer value as a float (no math idiom matched)");
}

Expr Machine::as_bv(Expr v, unsigned width) {
  if (packed_.count(v)) throw Unsupported("integer operation on a packed half2 value (bit manipulation of halves)");
  if (v->sort == Sort::Real) {
    if (v->op == Op::Undef) return ctx_.undef(ir::bv_sort(width));
    throw Unsupported("integer operation on a float value (bit manipulation on floats, no math idiom matched)");
  }
  if (v->sort == Sort::Bool) return ctx_.ite(v, ctx_.bv_const(ir::bv_sort(width), 1), ctx_.bv_const(ir::bv_sort(width), 0));
  unsigned w = ir::bv_width(v->sort);
  if (w == width) return v;
  return w < width ? ctx_.zext(v, ir::bv_sort(width)) : ctx_.trunc(v, ir::bv_sort(width));
}

Expr Machine::read(Bundle& b, const Operand& o, Type ty) {
  Expr v = read_raw(b, o, ty);
  if (ty == Type::Pred) {
    if (v->sort != Sort::Bool) throw Unsupported("predicate operand is not a predicate");
    return v;
  }
  if (ptx::is_float(ty)) return as_real(v);
  return as_bv(v, std::max(8u, ptx::type_bits(ty)));
}

void Machine::write(Bundle& b, const Operand& o, Expr v) {
  if (o.kind == Operand::Kind::Sink) return;
  if (o.kind == Operand::Kind::Pair) return write(b, o.elements.at(0), v);
  if (o.kind != Operand::Kind::Register) throw Unsupported("destination is not a register");
  if (concrete_ && v->sort == Sort::Real && !v->is_const() && !v->has_undef() && !v->has_data()) {
    // concrete mode: named functions are not folded by the canonicalizer; evaluate them (fp64)
    ir::Evaluator ev(ir::Env{});
    double d = ev.real(v);
    if (std::isnan(d) || std::isinf(d)) throw Unsupported("non-finite value in concrete mode");
    v = ctx_.real_const_from_double(d);
  }
  int s = slot(o.name);
  if (size_t(s) >= b.regs.size()) b.regs.resize(slot_types_.size(), nullptr);
  if (b.conv && !unmerged_write_) b.conv->written.insert(s);
  b.sums.erase(s);
  Type t = slot_types_[s];
  // registers keep the sort of what was stored, narrowed/widened for integer registers
  if (t != Type::None && t != Type::Pred && !ptx::is_float(t) && ir::is_bv(v->sort) && !packed_.count(v)) {
    unsigned w = std::max(8u, ptx::type_bits(t));
    if (w <= 64) v = as_bv(v, w);
  }
  b.regs[s] = v;
}

Expr Machine::pred_value(Bundle& b, const std::string& reg, bool negated) {
  Operand o;
  o.kind = Operand::Kind::Register;
  o.name = reg;
  Expr v = read_raw(b, o, Type::Pred);
  if (v->sort != Sort::Bool) throw Unsupported("guard " + reg + " is not a predicate");
  return negated ? ctx_.not_(v) : v;
}

// ---------------------------------------------------------------- findings

ThreadCoord Machine::coord_of(uint64_t lin, const Dim3& ctaid) const {
  const Dim3& B = launch_.block;
  ThreadCoord c;
  c.tid = {uint32_t(lin % B.x), uint32_t(lin / B.x % B.y), uint32_t(lin / (uint64_t(B.x) * B.y))};
  c.ctaid = ctaid;
  return c;
}

bool Machine::finding(const std::string& kind, const ptx::Instruction& in, Bundle& b, Expr where_pred, std::string msg,
                      Expr holds, std::optional<ThreadCoord> thread) {
  if (summary_) throw SummaryAbort(kind);  // found at a symbolic iteration: stepping finds it at a real one
  std::string key = kind + "@" + std::to_string(in.loc.ptx_line);
  if (!reported_.insert(key).second) return true;
  Finding fd;
  fd.kind = kind;
  fd.kernel = f_.name;
  fd.where = where(in);
  fd.message = std::move(msg);
  if (b.coord) fd.thread = b.coord;
  else if (thread) fd.thread = thread;
  else if (where_pred) {
    // A finding needs a thread that commits it; sat() answers "satisfiable" when it cannot enumerate.
    fd.thread = sat_.witness(where_pred);
    if (!fd.thread) fd.thread = sample_witness(tv_, where_pred);
    if (fd.thread && holds) {  // the domain over-approximates (atoms over Undef count as free): evaluate
      const ThreadCoord& t = *fd.thread;
      uint32_t v[6] = {t.tid.x, t.tid.y, t.tid.z, t.ctaid.x, t.ctaid.y, t.ctaid.z};
      auto vars = tv_.all();
      Expr at = ir::substitute(ctx_, holds, [&](Expr leaf) -> Expr {
        for (int i = 0; i < 6; ++i) if (leaf == vars[i]) return ctx_.bv_const(leaf->sort, v[i]);
        return nullptr;
      });
      // false: the thread does not commit it; still Undef: whether the value is undefined at the
      // thread depends on an undefined value itself (a region guard over registers the thread
      // never set) — no concrete witness either (002, a correct pair, got such an undef-branch BUG)
      if ((at->op == Op::ConstBool && !at->bool_value()) || at->has_undef()) fd.thread.reset();
    }
    if (!fd.thread) {
      reported_.erase(key);
      out_.undecided.push_back(fmt::format("{} in {} at PTX line {}: {} (too many threads to decide, no sampled "
                                           "thread violates it)", kind, f_.name, in.loc.ptx_line, fd.message));
      return false;
    }
  }
  out_.findings.push_back(std::move(fd));
  return true;
}

void Machine::undef_sink(Bundle& b, const ptx::Instruction& in, Expr v, const char* kind, const char* what) {
  if (!v || !v->has_undef()) return;
  // an ite arm that is undefined only on paths not taken (if-converted regions) is no finding
  Expr when = undef_domain(b, v);
  if (when != b.pred && !sat(when)) return;
  finding(kind, in, b, when, fmt::format("an undefined value reaches {}", what), undef_holds(b, v));
}

// Where v is undefined at this instruction, exactly (undef_domain over-approximates it by
// projecting Undef/data atoms away): a proposed witness thread must not make it false.
Expr Machine::undef_holds(Bundle& b, Expr v) {
  Expr holds = undef_condition(ctx_, v, undef_cond_memo_);
  if (arm_cond_) holds = ctx_.and_(arm_cond_, holds);
  return b.conv ? ctx_.and_(b.conv->guard, holds) : holds;
}

// An unsigned comparison between `c + x` and `y` (c a constant, x and y free of constants, c + x
// never wrapping over the Var bounds): the one form a loop whose trip count depends on the thread
// (`for (k = row; k <= col; ++k)`) adds at every iteration's exit split.
struct ShiftedAtom {
  Expr x, y;
  bool shifted_left;  // `c + x <(=) y` (a larger c is tighter); else `y <(=) c + x` (a smaller c is)
  bool strict;
  uint64_t c;
};

static std::optional<ShiftedAtom> shifted_atom(ir::Context& ctx, Expr a) {
  if ((a->op != Op::Ult && a->op != Op::Ule) || !is_bv(a->arg(0)->sort)) return std::nullopt;
  auto split = [&](Expr side) -> std::optional<std::pair<uint64_t, Expr>> {
    if (side->op != Op::BvAdd) return std::nullopt;
    Expr c = nullptr;
    std::vector<Expr> rest;
    for (Expr t : side->args()) {
      if (t->op == Op::ConstBV && !c) c = t;
      else rest.push_back(t);
    }
    if (!c || rest.empty()) return std::nullopt;
    Expr x = ctx.bv_add(rest);
    unsigned w = bv_width(side->sort);
    uint64_t hi = ctx.bv_bounds(x).hi, top = w == 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1;
    if (c->u > top - hi) return std::nullopt;  // c + x may wrap: not monotone in c
    return std::make_pair(c->u, x);
  };
  bool strict = a->op == Op::Ult;
  Expr l = a->arg(0), r = a->arg(1);
  if (l->op == Op::ConstBV || r->op == Op::ConstBV) return std::nullopt;
  auto sl = split(l), sr = split(r);
  if (sl && !sr) return ShiftedAtom{sl->second, r, true, strict, sl->first};
  if (sr && !sl) return ShiftedAtom{sr->second, l, false, strict, sr->first};
  return std::nullopt;
}

// Keeps one lower and one upper bound per thread Var among a conjunction's simple atoms
// (`v < c`, `c <= v`), and the tightest of the comparisons `c + x <(=) y` (or `y <(=) c + x`)
// that differ only in c, so split domains stay short: (t < 64) && (t < 32) -> (t < 32), and a
// triangular loop's N exit splits leave one `c + row < col` instead of N of them.
Expr Machine::tighten(Expr pred) {
  if (pred->op != Op::And) return pred;
  std::map<Expr, std::pair<uint64_t, uint64_t>, std::less<>> box;
  std::map<std::tuple<Expr, Expr, bool, bool>, std::pair<uint64_t, Expr>, std::less<>> shifted;
  std::vector<Expr> rest;
  auto var_bounds = [&](Expr v) -> std::pair<uint64_t, uint64_t>& {
    auto it = box.find(v);
    if (it == box.end()) it = box.emplace(v, std::make_pair(v->bounds().lo, v->bounds().hi)).first;
    return it->second;
  };
  for (Expr a : pred->args()) {
    // plain `v < c`, `v <= c`, `c < v`, `c <= v` over 32-bit Vars fold into the box
    auto ab = a->op == Op::Ult || a->op == Op::Ule ? bound_of_atom(a) : std::nullopt;
    if (ab && ab->subject->op == Op::Var && ab->subject->sort == Sort::BV32) {
      if (ab->lo > ab->hi) return ctx_.bool_const(false);
      auto& bd = var_bounds(ab->subject);
      bd.first = std::max(bd.first, ab->lo), bd.second = std::min(bd.second, ab->hi);
      continue;
    }
    if (auto sa = shifted_atom(ctx_, a)) {
      auto [it, fresh] = shifted.try_emplace({sa->x, sa->y, sa->shifted_left, sa->strict}, sa->c, a);
      if (!fresh && (sa->shifted_left ? sa->c > it->second.first : sa->c < it->second.first)) it->second = {sa->c, a};
      continue;
    }
    rest.push_back(a);
  }
  for (auto& [key, kept] : shifted) rest.push_back(kept.second);
  for (auto& [v, bd] : box) {
    if (bd.first > bd.second) return ctx_.bool_const(false);
    if (bd.first > v->bounds().lo) rest.push_back(ctx_.ule(ctx_.bv_const(Sort::BV32, bd.first), v));
    if (bd.second < v->bounds().hi) rest.push_back(ctx_.ult(v, ctx_.bv_const(Sort::BV32, bd.second + 1)));
  }
  return ctx_.and_(rest);
}

// ---------------------------------------------------------------- scheduling

void Machine::run() {
  try {
    run_all();
  } catch (const TimeLimit& t) {
    out_.steps = steps_;
    double limit = std::chrono::duration<double, std::milli>(deadline_.at() - started_).count();
    throw TimeLimit(fmt::format("time limit ({:.0f} ms) reached {} in kernel {} after {} steps", limit, t.what(), f_.name,
                                steps_));
  }
}

void Machine::run_all() {
  auto t0 = std::chrono::steady_clock::now();
  while (true) {
    for (size_t i = 0; i < bundles_.size(); ++i) run_bundle(i);
    if (merge_waiting(false)) continue;
    std::vector<size_t> warp, bar;
    for (size_t i = 0; i < bundles_.size(); ++i) {
      if (bundles_[i].state == Bundle::State::AtWarp) warp.push_back(i);
      if (bundles_[i].state == Bundle::State::AtBarrier) bar.push_back(i);
    }
    if (!warp.empty()) {
      size_t pc = SIZE_MAX;
      for (size_t i : warp) pc = std::min(pc, bundles_[i].pc);
      std::vector<size_t> group;
      for (size_t i : warp) if (bundles_[i].pc == pc) group.push_back(i);
      collective_warp(group);
      continue;
    }
    if (!bar.empty()) { barrier(bar); continue; }
    if (merge_waiting(true)) continue;  // a group that cannot complete: its halves go on apart
    break;
  }
  check_shared_epoch();
  for (auto& b : bundles_) if (out_.bundles[b.info].end.empty()) out_.bundles[b.info].end = "exit";
  check_global_reads();
  out_.steps = steps_;
  out_.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void Machine::run_bundle(size_t bi) {
  while (bundles_[bi].state == Bundle::State::Running) {
    try {
      step(bi);
    } catch (const TimeLimit& t) {
      size_t pc = std::min(bundles_[bi].pc, f_.body.size() - 1);
      std::string phase = t.what();
      throw TimeLimit(fmt::format("at PTX line {}{}", f_.body[pc].loc.ptx_line, phase.empty() ? "" : " (" + phase + ")"));
    } catch (const Unsupported& e) {
      out_.steps = steps_;
      std::string msg = e.what();
      if (msg.find("PTX line") != std::string::npos || bundles_[bi].pc >= f_.body.size()) throw;
      unsupported(f_.body[bundles_[bi].pc], msg);
    }
  }
}

bool Machine::step(size_t bi) {
  Bundle* b = &bundles_[bi];
  if (b->pc >= f_.body.size()) { b->state = Bundle::State::Exited; return false; }
  if (!b->merges.empty() && at_merge_point(*b)) return false;
  if (!concrete_ && opt_.summarize_loops && !summary_) note_loop_entry(*b);
  if (++steps_ > opt_.max_steps)
    throw Unsupported(fmt::format("step limit ({} instructions) reached at PTX line {} in kernel {}", opt_.max_steps,
                                  f_.body[b->pc].loc.ptx_line, f_.name));
  if ((steps_ & 63) == 0) deadline_.check("");  // one step can build a 10^5-term sum: look often
  const auto& in = f_.body[b->pc];
  const auto& rl = rollup_.at[b->pc];
  if (b->conv && ifconv_enter(*b)) return true;
  if (rl.kind == ptx::RolledInstr::Kind::Absorbed) { ++b->pc; return true; }
  Expr data_guard = nullptr;
  Expr own_guard = nullptr;  // inside an if-converted region: the instruction's own predicate
  if (in.guard) {
    Expr c = pred_value(*b, in.guard->reg, in.guard->negated);
    // undefined only on paths that do not reach here (if-converted regions): no finding
    Expr undef_when = c->has_undef() ? undef_domain(*b, c) : nullptr;
    if (undef_when && (undef_when == b->pred || sat(undef_when))) {
      Expr holds = undef_holds(*b, c);
      // no thread exhibited: the bundle's threads must not silently vanish
      if (!finding("undef-branch", in, *b, undef_when, "an undefined value decides a predicate", holds))
        unsupported(in, "undefined predicate (undecided: no thread exhibited)");
      b->state = Bundle::State::Exited;
      out_.bundles[b->info].end = "undefined predicate";
      return false;
    }
    if (c->op == Op::ConstBool) {
      if (!c->bool_value()) { retype_skipped_load(*b, in); ++b->pc; return true; }
    } else if (b->conv) {
      own_guard = c;
    } else if (is_thread_pred(c)) {
      Expr yes = tighten(ctx_.and_(b->pred, c)), no = tighten(ctx_.and_(b->pred, ctx_.not_(c)));
      bool sy = sat(yes), sn = sat(no);
      int s = slot(in.guard->reg);
      if (size_t(s) >= b->regs.size()) b->regs.resize(slot_types_.size(), nullptr);
      if (sy && sn) {
        if (in.op == Opcode::Bra && bundles_.size() >= opt_.ifconvert_thread_after && begin_ifconv(*b, in, c, true))
          return true;
        if (bundles_.size() >= opt_.max_bundles) throw Unsupported(fmt::format("more than {} bundles", opt_.max_bundles));
        Expr before = b->pred;
        Bundle clone = *b;
        clone.pred = no;
        clone.regs[s] = ctx_.bool_const(in.guard->negated);
        if (in.op == Opcode::Bra && bundles_.size() >= opt_.ifconvert_thread_after) mark_merge(*b, clone, in, c, before);
        clone.info = int(out_.bundles.size());
        out_.bundles.push_back({no, "", out_.bundles[b->info].writes});
        b->pred = yes;
        b->regs[s] = ctx_.bool_const(!in.guard->negated);
        out_.bundles[b->info].pred = yes;
        bundles_.push_back(std::move(clone));
        return true;  // re-run this instruction in both halves with a constant guard
      }
      if (size_t(s) >= b->regs.size()) b->regs.resize(slot_types_.size(), nullptr);
      b->regs[s] = ctx_.bool_const(sy ? !in.guard->negated : in.guard->negated);
      if (!sy) { retype_skipped_load(*b, in); ++b->pc; return true; }
    } else {
      if (in.op == Opcode::Bra) return begin_ifconv(*b, in, c, false);
      data_guard = c;
    }
  }
  // inside an if-converted region every instruction runs under the guard of its paths; its
  // checks and records concern the threads that guard admits
  struct RestorePred {
    Bundle* b = nullptr;
    Expr pred = nullptr;
    ~RestorePred() { if (pred) b->pred = pred; }
  } restore_pred;
  if (b->conv) {
    Expr g = b->conv->guard;
    bool always = g->op == Op::ConstBool && g->bool_value();
    data_guard = own_guard ? (always ? own_guard : ctx_.and_(g, own_guard)) : (always ? nullptr : g);
    if (data_guard && in.op != Opcode::Bra) {
      Expr dom = guarded_domain(*b, data_guard);
      if (dom != b->pred) {
        if (!sat(dom)) {  // no thread of the bundle runs it
          // nor anything after it on this path: a register it would have set must not reach a
          // later instruction as Undef through a guard whose Undef atoms hide the contradiction
          if (!own_guard) b->conv->guard = ctx_.bool_const(false);
          ++b->pc;
          return true;
        }
        restore_pred = {b, b->pred};
        b->pred = dom;
      }
    }
  }
  if (rl.kind == ptx::RolledInstr::Kind::Math) {
    std::vector<Expr> args;
    for (const auto& a : rl.args) args.push_back(read(*b, a, Type::F32));
    if (rl.negate) args[0] = ctx_.neg(args[0]);
    Expr v = ctx_.call(rl.fn, args);
    Operand d; d.kind = Operand::Kind::Register; d.name = rl.dest;
    if (rl.addend && !data_guard && !concrete_ && holds_list(*b, *rl.addend, d, Op::Add)) {
      // `acc = fma(ex2(..), scale, acc)` (expf fused into a softmax's sum): one more term of acc's
      // list, like accumulate(); `v + acc` would copy the n-ary sum every step (O(n^2))
      int src = slot(rl.addend->name);
      Expr cur = b->sums.count(src) ? nullptr : read(*b, *rl.addend, Type::F32);
      if (!cur || (cur != ninf_ && cur != pinf_)) {
        append_to_list(*b, src, slot(rl.dest), cur, v, Op::Add);
        ++b->pc;
        return true;
      }
    }
    if (rl.addend) v = ctx_.add(v, read(*b, *rl.addend, Type::F32));
    if (data_guard) v = merge_register(*b, d, data_guard, v, read_raw(*b, d, Type::F32));
    write(*b, d, v);
    ++b->pc;
    return true;
  }
  switch (in.op) {
    case Opcode::Bra: {
      if (b->conv) { ifconv_branch(*b, in, own_guard); ++b->pc; return true; }
      auto it = f_.labels.find(in.operands.at(0).name);
      if (it == f_.labels.end()) unsupported(in, "branch to unknown label");
      bool backward = it->second <= b->pc;
      if (backward && summarize_loop(bi, it->second, b->pc)) return true;
      b = &bundles_[bi];
      b->pc = it->second;
      if (backward) predict_step_limit(*b);  // a loop: will it run past max_steps?
      return true;
    }
    case Opcode::Ret: case Opcode::Exit:
      b->state = Bundle::State::Exited;
      return false;
    case Opcode::Trap:
      finding("trap", in, *b, b->pred, "a thread executes trap");
      b->state = Bundle::State::Exited;
      out_.bundles[b->info].end = "trap";
      return false;
    case Opcode::Bar: case Opcode::Barrier: {
      bool warp = in.text.find(".warp") != std::string::npos;
      if (data_guard) unsupported(in, "barrier under a data-dependent predicate");
      if (!warp) {
        bool arrive = in.text.find("arrive") != std::string::npos || in.text.find(".red") != std::string::npos;
        if (arrive) unsupported(in, "bar.arrive / bar.red");
        if (in.operands.size() >= 2) {
          Expr n = read(*b, in.operands[1], Type::U32);
          if (n->op != Op::ConstBV || n->bv_value() < launch_.block.count()) unsupported(in, "named barrier with a thread count");
        }
      }
      b->state = warp ? Bundle::State::AtWarp : Bundle::State::AtBarrier;
      return false;
    }
    case Opcode::Shfl: case Opcode::Vote: case Opcode::Activemask:
      if (data_guard) unsupported(in, "warp collective under a data-dependent predicate");
      b->state = Bundle::State::AtWarp;
      return false;
    case Opcode::Membar: case Opcode::Fence: case Opcode::Prefetch: case Opcode::Prefetchu: case Opcode::Nanosleep:
      break;
    case Opcode::Ld: case Opcode::Ldu: case Opcode::St:
      exec_mem(*b, in, data_guard);
      break;
    case Opcode::Atom: case Opcode::Red:
      exec_atom(*b, in, data_guard);
      break;
    case Opcode::CpAsync: case Opcode::CpAsyncCommitGroup: case Opcode::CpAsyncWaitGroup: case Opcode::CpAsyncWaitAll:
    case Opcode::CpAsyncBulk: case Opcode::CpReduceAsyncBulk: case Opcode::Mbarrier:
      unsupported(in, fmt::format("asynchronous copy '{}' (not modeled)", in.text));
    case Opcode::Mma: case Opcode::WmmaLoad: case Opcode::WmmaStore: case Opcode::WmmaMma: case Opcode::Wgmma:
    case Opcode::Ldmatrix: case Opcode::Stmatrix:
      unsupported(in, fmt::format("tensor-core instruction '{}' (not modeled)", in.text));
    case Opcode::Call: {
      std::string callee = in.operands.size() > 1 ? in.operands[in.operands[0].kind == Operand::Kind::List ? 1 : 0].name : "";
      unsupported(in, "call to " + (callee.empty() ? std::string("an external function") : callee));
    }
    default: {
      // register-writing instruction; with a data-dependent guard, merge with the old values
      std::vector<std::pair<Operand, Expr>> old;
      if (data_guard) {
        int nd = std::max(0, ptx::opcode_info(in.op).num_dests);
        for (int i = 0; i < nd && i < int(in.operands.size()); ++i) {
          std::vector<Operand> ds = in.operands[i].kind == Operand::Kind::Pair ? in.operands[i].elements
                                                                               : std::vector<Operand>{in.operands[i]};
          for (auto& d : ds)
            if (d.kind == Operand::Kind::Register) old.push_back({d, read_raw(*b, d, reg_type(d.name))});
        }
      }
      unmerged_write_ = bool(data_guard);  // merge_register below sees the write first
      try {
        exec_alu(*b, in);
      } catch (...) {
        unmerged_write_ = false;
        throw;
      }
      unmerged_write_ = false;
      for (auto& [d, ov] : old) {
        Expr nv = read_raw(*b, d, reg_type(d.name));
        // a register never written before (a b32 first given a float's bits on one path) has no sort to keep
        if (nv->sort != ov->sort && ov->op == Op::Undef) ov = ctx_.undef(nv->sort);
        if (nv->sort != ov->sort) unsupported(in, "data-guarded write changes the register's sort");
        write(*b, d, merge_register(*b, d, data_guard, nv, ov));
      }
    }
  }
  ++bundles_[bi].pc;
  return true;
}

}  // namespace dirigo::exec
