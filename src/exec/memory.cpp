// Memory instructions: ld/st/atom/red over global (tensor-bound), shared (epoch-versioned),
// local and param spaces, in symbolic and concrete mode.
#include <bit>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "exec/interval.h"
#include "exec/machine.h"

namespace dirigo::exec {

namespace {
double const_to_double(Expr e, bool is_signed) {
  if (e->op == Op::ConstReal) return e->rational().get_d();
  if (e->op == Op::ConstBV) return is_signed ? double(e->bv_signed()) : double(e->bv_value());
  if (e->op == Op::ConstBool) return e->bool_value();
  return NAN;
}

// The atom.cas of an atomic max/min loop writes max(expected, rest...) (or min): as one atomic
// max/min of the rest; nullopt when the new value has another shape.
std::optional<std::pair<WriteOp, Expr>> cas_as_minmax(ir::Context& ctx, Expr expected, Expr nw) {
  if (nw->op != Op::Max && nw->op != Op::Min) return std::nullopt;
  std::vector<Expr> rest;
  bool found = false;
  for (Expr x : nw->args()) { if (x == expected && !found) found = true; else rest.push_back(x); }
  if (!found || rest.empty()) return std::nullopt;
  WriteOp w = nw->op == Op::Max ? WriteOp::Max : WriteOp::Min;
  return std::pair{w, rest.size() == 1 ? rest[0] : (w == WriteOp::Max ? ctx.max(rest) : ctx.min(rest))};
}
}  // namespace

std::pair<Expr, Expr> Machine::single_pointer_summand(Expr a, bool with_rest) {
  if (ptr_param_.count(a)) return {a, ctx_.bv_const(a->sort, 0)};
  if (a->op != Op::BvAdd) return {nullptr, nullptr};
  Expr ptr = nullptr;
  std::vector<Expr> rest;
  for (Expr x : a->args()) {
    if (ptr_param_.count(x)) {
      if (ptr) return {nullptr, nullptr};
      ptr = x;
      continue;
    }
    if (x->nargs == 0) {  // a constant (new every step: not memoized) or another leaf
      rest.push_back(x);
      continue;
    }
    auto [it, fresh] = pointer_free_.try_emplace(x, true);
    if (fresh)
      for (Expr l : ir::leaves(x))
        if (ptr_param_.count(l)) { it->second = false; break; }
    if (!it->second) return {nullptr, nullptr};
    rest.push_back(x);
  }
  if (!ptr || !with_rest) return {ptr, nullptr};
  return {ptr, ctx_.bv_add(rest)};  // a - ptr: the canonical sum of the other summands
}

std::vector<std::pair<Expr, Expr>> Machine::pointer_arms(Bundle& b, const ptx::Instruction& in, const Operand& o) {
  if (o.kind != Operand::Kind::Address || !o.base_is_register || concrete_) return {};
  Operand r = o;
  r.kind = Operand::Kind::Register;
  Expr base = read_raw(b, r, Type::U64);
  if (!ir::is_bv(base->sort)) return {};
  if (single_pointer_summand(base, false).first) return {};  // one tensor, address - pointer cancels: not mixed
  // Undef arms stay as they are here: the arm conditions must be the very atoms of the guards
  // they run under (an if-converted region's guard keeps its own Undef arms), so that an arm
  // contradicting its guard is recognized without enumerating threads
  auto tensors_in = [&](Expr e) {
    size_t n = 0;
    for (Expr l : ir::leaves(e)) n += ptr_param_.count(l);
    return n;
  };
  // one tensor whose pointer cancels out of (address - pointer); an ite over pointers
  // (`c ? &a[i] : &b[j]`, or `g ? &a[i] : old` from an if-converted region) does not
  auto mixed = [&](Expr e) {
    for (Expr l : ir::leaves(e))
      if (ptr_param_.count(l)) {
        Expr off = ctx_.bv_sub(e, l);
        if (tensors_in(off) > 0) return true;
        if (e == base) last_split_ = {base, l, off};  // address() reuses it for this access
        return false;
      }
    return false;
  };
  if (!mixed(base)) return {};
  // lift the topmost ite that has a tensor pointer below it, until each arm names one tensor
  constexpr size_t kMaxArms = 64;
  std::vector<std::pair<Expr, Expr>> done, work{{ctx_.bool_const(true), base}};
  while (!work.empty()) {
    auto [g, e] = work.back();
    work.pop_back();
    if (!mixed(e)) { done.push_back({g, e}); continue; }
    Expr sel = nullptr;  // breadth-first: the ite closest to the root
    std::vector<Expr> level{e};
    std::unordered_set<Expr> seen;
    while (!sel && !level.empty()) {
      std::vector<Expr> next;
      for (Expr x : level) {
        if (!seen.insert(x).second) continue;
        if (x->op == Op::Ite && ir::is_bv(x->sort) && tensors_in(x) > 0) { sel = x; break; }
        for (Expr a : x->args()) next.push_back(a);
      }
      level = std::move(next);
    }
    if (!sel) unsupported(in, "address mixes several tensor pointers");
    Expr c = sel->arg(0);
    if (c->has_undef()) {  // undefined only where this arm's path or the region's guard excludes it?
      Expr uc = ctx_.and_(g, undef_condition(ctx_, c, undef_cond_memo_));
      if (b.conv) uc = ctx_.and_(b.conv->guard, uc);
      uc = lift_ite_atoms(ctx_, uc, lift_memo_);
      if (!propositionally_false(uc)) {
        Expr when = guarded_domain(b, uc);
        if (when == b.pred || sat(when)) {
          finding("undef-address", in, b, when, "an undefined value selects the address", uc);
          unsupported(in, "undefined address");
        }
      }
    }
    work.push_back({ctx_.and_(g, ctx_.not_(c)), replace_node(ctx_, e, sel, sel->arg(2))});
    work.push_back({ctx_.and_(g, c), replace_node(ctx_, e, sel, sel->arg(1))});
    if (done.size() + work.size() > kMaxArms) unsupported(in, "address selects among too many tensor pointers");
  }
  return done;
}

Machine::Addr Machine::address(Bundle& b, const ptx::Instruction& in, const Operand& o, Expr base) {
  if (o.kind != Operand::Kind::Address) unsupported(in, "memory operand is not an address");
  if (!o.base_is_register) {
    for (size_t i = 0; i < f_.params.size(); ++i)
      if (f_.params[i].name == o.name) return {Space::Param, ctx_.bv_const(Sort::BV64, uint64_t(o.offset)), int(i), -1};
    auto it = var_addr_.find(o.name);
    if (it == var_addr_.end()) unsupported(in, "access to module variable " + o.name);
    uint64_t a = it->second + uint64_t(o.offset);
    if (a >= kLocalBase) return {Space::Local, ctx_.bv_const(Sort::BV64, a), -1, -1};
    if (a >= kConstBase) return {Space::Const, ctx_.bv_const(Sort::BV64, a - kConstBase), -1, -1};
    return {Space::Shared, ctx_.bv_const(Sort::BV64, a - kSharedBase), -1, -1};
  }
  Operand r = o;
  r.kind = Operand::Kind::Register;
  if (!base) base = read_raw(b, r, Type::U64);
  if (!ir::is_bv(base->sort)) unsupported(in, "address register holds a non-integer value");
  base = drop_unreachable_undef(b, base);  // set on one side of an if-converted region, used on it
  if (base->has_undef()) {
    finding("undef-address", in, b, undef_domain(b, base), "an undefined value is used as an address",
            undef_holds(b, base));
    unsupported(in, "undefined address");
  }
  if (base == last_split_.base && ir::bv_width(base->sort) == 64) {
    // pointer_arms just split this base into pointer + pointer-free offset: (base + k) - pointer
    // is that offset + k
    Expr off = ctx_.bv_add(last_split_.offset, ctx_.bv_const(Sort::BV64, uint64_t(o.offset)));
    int param = ptr_param_.at(last_split_.pointer);
    return {Space::Global, off, param, launch_.params[param].tensor};
  }
  Expr a = ctx_.bv_add(as_bv(base, 64), ctx_.bv_const(Sort::BV64, uint64_t(o.offset)));
  if (ir::bv_width(base->sort) == 32) a = ctx_.bv_add(ctx_.zext(base, Sort::BV64), ctx_.bv_const(Sort::BV64, uint64_t(o.offset)));
  if (auto [ptr, off] = single_pointer_summand(a); ptr) {
    int param = ptr_param_.at(ptr);
    return {Space::Global, off, param, launch_.params[size_t(param)].tensor};
  }
  for (Expr l : ir::leaves(a)) {
    auto it = ptr_param_.find(l);
    if (it == ptr_param_.end()) continue;
    Expr off = ctx_.bv_sub(a, l);
    for (Expr l2 : ir::leaves(off))
      if (ptr_param_.count(l2)) unsupported(in, "address mixes several tensor pointers");
    return {Space::Global, off, it->second, launch_.params[it->second].tensor};
  }
  if (a->has_data()) unsupported(in, "data-dependent address outside a tensor");
  uint64_t sample;
  if (a->op == Op::ConstBV) sample = a->bv_value();
  else {
    auto vars = tv_.all();
    Expr roots[] = {a};
    BvProgram prog(vars, roots);
    if (!prog.ok()) unsupported(in, "address depends on something other than thread identity");
    // classify by the address of one thread of the bundle (spaces never overlap): any thread
    // will do when the address's interval lies in the shared window; else one thread of the
    // bundle, found once per predicate (an enumeration until the first model)
    if (!b.coord)
      if (auto box = box_of(tv_, b.pred)) {
        auto guards = guards_of(b.pred);
        auto r = range_over(a, tv_, *box, guards ? &*guards : nullptr);
        if (r && r->lo >= kSharedBase && r->hi < kSharedBase + (uint64_t(1) << 24))
          return {Space::Shared, ctx_.bv_sub(a, ctx_.bv_const(Sort::BV64, kSharedBase)), -1, -1};
      }
    auto wit = witness_memo_.find(b.pred);
    if (wit == witness_memo_.end()) wit = witness_memo_.emplace(b.pred, sat_.witness(b.pred)).first;
    const auto& t = wit->second;
    uint64_t pt[6] = {0, 0, 0, 0, 0, 0};
    if (t) {
      uint64_t v[6] = {t->tid.x, t->tid.y, t->tid.z, t->ctaid.x, t->ctaid.y, t->ctaid.z};
      std::copy(v, v + 6, pt);
    }
    prog.eval(pt, &sample);
  }
  if (sample >= kConstBase && sample < kLocalBase)
    return {Space::Const, ctx_.bv_sub(a, ctx_.bv_const(Sort::BV64, kConstBase)), -1, -1};
  if (sample >= kLocalBase) {
    if (a->op != Op::ConstBV) local_cells(b, in, a, 1);  // refuses what it cannot enumerate
    return {Space::Local, a, -1, -1};
  }
  if (sample >= kSharedBase && sample < kSharedBase + (uint64_t(1) << 24))
    return {Space::Shared, ctx_.bv_sub(a, ctx_.bv_const(Sort::BV64, kSharedBase)), -1, -1};
  unsupported(in, "address not derived from a tensor parameter, shared or local memory");
}

std::vector<uint64_t> Machine::local_cells(Bundle& b, const ptx::Instruction& in, Expr addr, unsigned bytes) {
  if (addr->op == Op::ConstBV) return {addr->bv_value()};
  constexpr uint64_t kMaxCells = 64;
  if (addr->has_data() || addr->has_undef()) unsupported(in, "data-dependent local-memory address");
  ir::Bounds bd = ctx_.bv_bounds(addr);
  if (bd.lo < kLocalBase || bd.hi >= kLocalBase + local_bytes_) {
    // interval arithmetic is loose on thread arithmetic (div/rem, sign extension): the exact
    // range over the bundle's threads
    auto r = ranges_.range(addr, b.pred);
    if (r) bd = *r;
  }
  if (bd.lo < kLocalBase || bd.hi + bytes > kLocalBase + local_bytes_)
    unsupported(in, "symbolic local-memory address (not proven inside the local window)");
  uint64_t first = bd.lo - (bd.lo - kLocalBase) % bytes, last = bd.hi - (bd.hi - kLocalBase) % bytes;
  if ((last - first) / bytes + 1 > kMaxCells) unsupported(in, "symbolic local-memory address (more than 64 cells)");
  std::vector<uint64_t> cells;
  for (uint64_t c = first; c <= last; c += bytes) cells.push_back(c);
  return cells;
}

// A load from initialized constant memory: the bytes at a constant offset, or an ite over
// the (at most 64) aligned offsets a thread-dependent offset can take.
Expr Machine::load_const(const ptx::Instruction& in, Expr off, unsigned bytes, Type ty) {
  auto value_at = [&](uint64_t o) -> Expr {
    if (o + bytes > const_bytes_.size()) return ctx_.undef(sort_of(ty));
    uint64_t bits = 0;
    for (unsigned b = 0; b < bytes; ++b) bits |= uint64_t(const_bytes_[o + b]) << (8 * b);
    Expr v = ctx_.bv_const(ir::bv_sort(std::max(8u, bytes * 8)), bits);
    return ptx::is_float(ty) ? as_real(v) : v;
  };
  if (off->op == Op::ConstBV) return value_at(off->bv_value());
  if (off->has_data()) unsupported(in, "data-dependent constant-memory address");
  ir::Bounds bd = ctx_.bv_bounds(off);
  if (bd.hi >= const_bytes_.size() || (bd.hi - bd.lo) / bytes > 64) unsupported(in, "constant-memory table lookup too wide");
  // the last aligned offset is the default arm (aligned accesses take no other values)
  uint64_t first = bd.lo - bd.lo % bytes, last = bd.hi - bd.hi % bytes;
  Expr r = value_at(last);
  for (uint64_t o = first; o < last; o += bytes)
    r = ctx_.ite(ctx_.eq(off, ctx_.bv_const(Sort::BV64, o)), value_at(o), r);
  return r;
}

Expr Machine::element_index(Bundle& b, const ptx::Instruction& in, const Addr& a, unsigned bytes, unsigned k) {
  const auto& p = launch_.params[a.param];
  unsigned es = dtype_bytes(p.dtype);
  if (bytes != es)
    unsupported(in, fmt::format("{}-byte access to a tensor of {}-byte elements", bytes, es));
  Expr off = ctx_.bv_add(a.expr, ctx_.bv_const(Sort::BV64, uint64_t(k) * bytes));
  return ctx_.bv_udiv(off, ctx_.bv_const(Sort::BV64, es));
}

void Machine::check_global_bounds(Bundle& b, const ptx::Instruction& in, const Addr& a, Expr index) {
  uint64_t extent = launch_.params[a.param].extent;
  if (extent == 0 || index->has_data() || index->has_undef()) return;
  if (index->op == Op::ConstBV) {
    if (index->bv_value() >= extent)
      finding("global-out-of-bounds", in, b, b.pred,
              fmt::format("element {} of {} (extent {})", index->bv_signed(), ctx_.tensor_name(a.tensor), extent));
    return;
  }
  if (ctx_.bv_bounds(index).hi < extent) return;
  if (!b.coord) {  // one interval evaluation over the bundle's thread box proves most accesses
    auto box = box_of(tv_, b.pred);
    if (!box) return;  // no thread runs this bundle
    auto guards = guards_of(b.pred);
    if (auto r = range_over(index, tv_, *box, &*guards); r && r->hi < extent) return;
  }
  Expr bad = ctx_.and_(b.pred, ctx_.ule(ctx_.bv_const(Sort::BV64, extent), index));
  if (!b.coord) {  // over sub-boxes of the thread ranges, before any enumeration
    auto d = bounds_over_ranges(tv_, b.pred, index, extent, 128, &deadline_);
    if (d.answer == BoundsOverRanges::Answer::InBounds) return;
    if (d.answer == BoundsOverRanges::Answer::Violated) {
      finding("global-out-of-bounds", in, b, bad,
              fmt::format("index outside {} (extent {} elements)", ctx_.tensor_name(a.tensor), extent), nullptr,
              d.witness);
      return;
    }
    if (auto r = ranges_.range(index, b.pred); r && r->hi < extent) return;
  }
  if (sat(bad))
    finding("global-out-of-bounds", in, b, bad,
            fmt::format("index outside {} (extent {} elements)", ctx_.tensor_name(a.tensor), extent));
}

void Machine::check_vector_alignment(Bundle& b, const ptx::Instruction& in, const Addr& a, unsigned align) {
  // tensor storage starts 256-byte aligned (the CUDA caching allocator); the view's byte offset and
  // the thread's offset decide the rest
  Expr off = ctx_.bv_add(a.expr, ctx_.bv_const(Sort::BV64, launch_.params[a.param].byte_offset));
  if (off->has_data() || off->has_undef()) return;  // data-dependent addresses: like bounds, not checked
  Expr rem = ctx_.bv_and(off, ctx_.bv_const(Sort::BV64, align - 1));
  if (rem->op == Op::ConstBV) {
    if (rem->bv_value() != 0)
      finding("misaligned-address", in, b, b.pred,
              fmt::format("{}-byte vector access at byte offset {} of {}", align, off->bv_value(), ctx_.tensor_name(a.tensor)));
    return;
  }
  uint64_t key = b.pred->hash * 31 + uint64_t(in.loc.ptx_line);
  if (auto it = aligned_proven_.find(key); it != aligned_proven_.end()) {
    Expr step = ctx_.bv_sub(off, it->second);
    if (step->op == Op::ConstBV && step->bv_value() % align == 0) return;
  }
  Expr bad = ctx_.and_(b.pred, ctx_.not_(ctx_.eq(rem, ctx_.bv_const(Sort::BV64, 0))));
  if (sat(bad))
    finding("misaligned-address", in, b, bad,
            fmt::format("{}-byte vector access to {} at an offset that is not a multiple of {}", align,
                        ctx_.tensor_name(a.tensor), align));
  else
    aligned_proven_[key] = off;
}

void Machine::record_write(Bundle& b, const ptx::Instruction& in, int32_t tensor, Expr index, Expr value, WriteOp op,
                           bool is_signed) {
  value = drop_unreachable_undef(b, value);
  undef_sink(b, in, value, "undef-store", "a global store");
  undef_sink(b, in, index, "undef-address", "a global address");
  WriteRecord w;
  w.bundle = b.info;
  w.pred = b.pred;
  w.tensor = tensor;
  w.index = index;
  w.value = value;
  w.op = op;
  w.is_signed = is_signed;
  w.where = where(in);
  w.seq = seq_++;
  out_.bundles[b.info].writes.push_back(out_.writes.size());
  out_.writes.push_back(std::move(w));
}

Expr Machine::smem_index(Bundle& b, Expr off) {
  if (b.coord) {
    const Dim3& G = launch_.grid;
    uint64_t blk = b.coord->ctaid.x + uint64_t(G.x) * (b.coord->ctaid.y + uint64_t(G.y) * b.coord->ctaid.z);
    return ctx_.bv_add(ctx_.bv_const(Sort::BV64, blk * out_.smem_bytes), off);
  }
  return ctx_.bv_add(ctx_.bv_mul(ctaid_linear(), ctx_.bv_const(Sort::BV64, out_.smem_bytes)), off);
}

Expr Machine::load(Bundle& b, const ptx::Instruction& in, const Addr& a, unsigned bytes, Type ty, unsigned k) {
  switch (a.space) {
    case Space::Const:
      return load_const(in, ctx_.bv_add(a.expr, ctx_.bv_const(Sort::BV64, uint64_t(k) * bytes)), bytes, ty);
    case Space::Param: {
      const auto& p = launch_.params[a.param];
      if (a.expr->bv_value() != 0 || k != 0) unsupported(in, "by-value struct parameter");
      if (p.kind == ParamBinding::Kind::Tensor) {
        // a bound tensor's address: never null, below the 48-bit virtual address space
        Expr v = ctx_.var("&" + std::string(ctx_.tensor_name(p.tensor)), Sort::BV64, ir::Bounds{4096, uint64_t(1) << 48});
        ptr_param_[v] = a.param;
        return ctx_.bv_add(v, ctx_.bv_const(Sort::BV64, p.byte_offset));
      }
      if (ptx::is_float(ty)) return p.scalar_is_float ? ctx_.real_const_from_double(p.real) : ctx_.real_const(int64_t(p.bits));
      // a float parameter read as untyped bits (Triton: `ld.param.b32 %r, [p]` then `mul.f32 .., %r`) holds
      // the float: registers keep the sort of what was stored, and integer work on it is refused later
      if (p.scalar_is_float) return ctx_.real_const_from_double(p.real);
      return ctx_.bv_const(sort_of(ty), p.bits);
    }
    case Space::Local: {
      auto cell_value = [&](uint64_t addr) {
        auto it = b.local.find(addr);
        if (it == b.local.end() || it->second.second != bytes) return ctx_.undef(sort_of(ty));
        return it->second.first;
      };
      Expr at = ctx_.bv_add(a.expr, ctx_.bv_const(Sort::BV64, uint64_t(k) * bytes));
      if (at->op == Op::ConstBV) return cell_value(at->bv_value());
      // a thread-dependent index into a private array: an ite over the cells it can name (the last
      // one the default arm: an aligned access takes no other value)
      auto cells = local_cells(b, in, at, bytes);
      Expr r = cell_value(cells.back());
      for (size_t i = cells.size() - 1; i-- > 0;)
        r = ctx_.ite(ctx_.eq(at, ctx_.bv_const(Sort::BV64, cells[i])), cell_value(cells[i]), r);
      return r;
    }
    case Space::Global: {
      const auto& p = launch_.params[a.param];
      if (bytes == 4 && dtype_bytes(p.dtype) == 2 && dtype_is_float(p.dtype)) {
        // a 32-bit access to a half/bf16 tensor: two elements, one packed half2 register
        Addr lo = a, hi = a;
        lo.expr = ctx_.bv_add(a.expr, ctx_.bv_const(Sort::BV64, uint64_t(k) * 4));
        hi.expr = ctx_.bv_add(lo.expr, ctx_.bv_const(Sort::BV64, 2));
        return pack_half2(load(b, in, lo, 2, Type::F16, 0), load(b, in, hi, 2, Type::F16, 0));
      }
      Expr idx = element_index(b, in, a, bytes, k);
      if (summary_) {  // checked at the first and last iteration once the summary holds
        if (idx->has_data() || idx->has_undef()) throw SummaryAbort("an index that depends on data");
        for (const auto& st : b.own_global)
          if (st.tensor == a.tensor) throw SummaryAbort("a read of a tensor the thread wrote");
        summary_->loads.push_back({b.pc, a, idx, bytes, k == 0 ? summary_->align : 0});
        return ctx_.load(a.tensor, idx, dtype_sort(p.dtype));
      }
      check_global_bounds(b, in, a, idx);
      Sort s = dtype_sort(p.dtype);
      if (concrete_) {
        if (idx->op != Op::ConstBV) unsupported(in, "non-constant index in concrete mode");
        auto it = mem_.tensors.find(a.tensor);
        if (it == mem_.tensors.end()) unsupported(in, "no concrete contents for tensor " + std::string(ctx_.tensor_name(a.tensor)));
        if (idx->bv_value() >= it->second.size()) return ctx_.undef(s);
        double d = it->second[idx->bv_value()];
        return s == Sort::Real ? ctx_.real_const_from_double(d) : ctx_.bv_const(s, uint64_t(int64_t(d)));
      }
      for (auto it = b.own_global.rbegin(); it != b.own_global.rend(); ++it)
        if (it->tensor == a.tensor && it->index == idx) return it->value;
      global_reads_.push_back({a.tensor, idx, b.pred, where(in)});
      return ctx_.load(a.tensor, idx, s);
    }
    case Space::Shared: {
      Expr off = ctx_.bv_add(a.expr, ctx_.bv_const(Sort::BV64, uint64_t(k) * bytes));
      Sort s = sort_of(ty);
      Expr bad = out_.smem_bytes < bytes ? b.pred
                                         : ctx_.and_(b.pred, ctx_.ult(ctx_.bv_const(Sort::BV64, out_.smem_bytes - bytes), off));
      if (sat(bad)) {
        finding("shared-out-of-bounds", in, b, bad, fmt::format("shared access outside {} bytes", out_.smem_bytes));
        return ctx_.undef(s);
      }
      if (concrete_) {
        if (off->op != Op::ConstBV) unsupported(in, "non-constant shared address in concrete mode");
        uint64_t blk = smem_index(b, ctx_.bv_const(Sort::BV64, 0))->bv_value() / std::max<uint64_t>(1, out_.smem_bytes);
        auto& mem = concrete_shared_[blk];
        auto it = mem.find(off->bv_value());
        if (it == mem.end() || concrete_shared_bytes_[blk * (uint64_t(1) << 32) + off->bv_value()] != bytes) {
          finding("uninitialized-shared-read", in, b, nullptr, "read of shared memory that no thread wrote");
          return ctx_.undef(s);
        }
        return it->second;
      }
      epoch_access_.push_back({b.pred, off, bytes, false, seq_++, where(in)});
      Expr res = ctx_.load(out_.smem_tensor[epoch_], smem_index(b, off), s);
      for (const auto& w : b.pending) {
        Expr same = ctx_.eq(w.addr, off);
        if (same->op == Op::ConstBool && !same->bool_value()) continue;
        if (w.op != WriteOp::Store)
          unsupported(in, "shared read of a cell this thread updated atomically in the same epoch (before a barrier)");
        if (w.bytes != bytes) unsupported(in, "shared read partially overlapping an own pending write");
        Expr wv = w.value;
        // a constant stored through a .b32 register (st.shared.u32 0) read back as a float, or widths
        if (wv->sort != res->sort && wv->op == Op::ConstBV && res->sort == Sort::Real) wv = as_real(wv);
        else if (wv->sort != res->sort && ir::is_bv(wv->sort) && ir::is_bv(res->sort)) wv = as_bv(wv, ir::bv_width(res->sort));
        if (same->op == Op::ConstBool) { res = wv; continue; }
        if (wv->sort != res->sort) unsupported(in, "type punning through shared memory");
        res = ctx_.ite(same, wv, res);
      }
      return res;
    }
  }
  return nullptr;
}

void Machine::store(Bundle& b, const ptx::Instruction& in, const Addr& a, unsigned bytes, Type ty, Expr v, unsigned k,
                    Expr guard) {
  switch (a.space) {
    case Space::Param: unsupported(in, "store to a kernel parameter");
    case Space::Const: unsupported(in, "store to constant memory");
    case Space::Local: {
      Expr at = ctx_.bv_add(a.expr, ctx_.bv_const(Sort::BV64, uint64_t(k) * bytes));
      auto old_value = [&](uint64_t addr) {
        auto it = b.local.find(addr);
        return it == b.local.end() || it->second.second != bytes ? ctx_.undef(v->sort) : it->second.first;
      };
      if (at->op == Op::ConstBV) {
        uint64_t addr = at->bv_value();
        b.local[addr] = {guard ? merge_guarded(b, guard, v, old_value(addr)) : v, bytes};
        return;
      }
      // a thread-dependent index: every cell it can name keeps its value unless the index names it
      for (uint64_t cell : local_cells(b, in, at, bytes)) {
        Expr hit = ctx_.eq(at, ctx_.bv_const(Sort::BV64, cell));
        if (guard) hit = ctx_.and_(guard, hit);
        b.local[cell] = {ctx_.ite(hit, v, old_value(cell)), bytes};
      }
      return;
    }
    case Space::Global: {
      const auto& p = launch_.params[a.param];
      if (bytes == 4 && dtype_bytes(p.dtype) == 2 && dtype_is_float(p.dtype)) {
        auto [vl, vh] = unpack_half2(in, v, p.dtype == DType::BF16);
        Addr lo = a, hi = a;
        lo.expr = ctx_.bv_add(a.expr, ctx_.bv_const(Sort::BV64, uint64_t(k) * 4));
        hi.expr = ctx_.bv_add(lo.expr, ctx_.bv_const(Sort::BV64, 2));
        store(b, in, lo, 2, Type::F16, vl, 0, guard);
        store(b, in, hi, 2, Type::F16, vh, 0, guard);
        return;
      }
      Expr idx = element_index(b, in, a, bytes, k);
      check_global_bounds(b, in, a, idx);
      if (dtype_is_float(p.dtype)) v = as_real(v);
      else v = as_bv(v, dtype_bytes(p.dtype) * 8);
      if (guard) v = ctx_.ite(guard, v, load(b, in, a, bytes, ty, k));
      if (concrete_) {
        if (v->has_undef()) { finding("undef-store", in, b, nullptr, "an undefined value reaches a global store"); return; }
        if (idx->op != Op::ConstBV || !v->is_const()) unsupported(in, "non-constant store in concrete mode");
        auto& t = mem_.tensors[a.tensor];
        if (idx->bv_value() < t.size()) t[idx->bv_value()] = const_to_double(v, !dtype_is_float(p.dtype) && p.dtype != DType::U8);
        return;
      }
      record_write(b, in, a.tensor, idx, v, WriteOp::Store, false);
      b.own_global.push_back({a.tensor, idx, v});
      return;
    }
    case Space::Shared: {
      Expr off = ctx_.bv_add(a.expr, ctx_.bv_const(Sort::BV64, uint64_t(k) * bytes));
      Expr bad = out_.smem_bytes < bytes ? b.pred
                                         : ctx_.and_(b.pred, ctx_.ult(ctx_.bv_const(Sort::BV64, out_.smem_bytes - bytes), off));
      if (sat(bad)) {
        finding("shared-out-of-bounds", in, b, bad, fmt::format("shared store outside {} bytes", out_.smem_bytes));
        return;
      }
      if (guard) v = ctx_.ite(guard, v, load(b, in, a, bytes, ty, k));
      undef_sink(b, in, off, "undef-address", "a shared-memory address");
      if (concrete_) {
        if (off->op != Op::ConstBV) unsupported(in, "non-constant shared address in concrete mode");
        uint64_t blk = smem_index(b, ctx_.bv_const(Sort::BV64, 0))->bv_value() / std::max<uint64_t>(1, out_.smem_bytes);
        concrete_shared_[blk][off->bv_value()] = v;
        concrete_shared_bytes_[blk * (uint64_t(1) << 32) + off->bv_value()] = bytes;
        return;
      }
      SharedWrite w{b.pred, off, v, bytes, seq_++, where(in)};
      out_.epoch_writes[epoch_].push_back(w);
      epoch_access_.push_back({b.pred, off, bytes, true, w.seq, w.where});
      b.pending.push_back(std::move(w));
      return;
    }
  }
}

void Machine::exec_mem(Bundle& b, const ptx::Instruction& in, Expr guard) {
  bool is_store = in.op == Opcode::St;
  if (in.mod.types.empty()) unsupported(in, "memory access without a type");
  Type ty = in.mod.types.back();
  if (ty == Type::B128 || ty == Type::F16x2 || ty == Type::BF16x2) unsupported(in, "packed or 128-bit access");
  const Operand& addr_op = in.operands.at(is_store ? 0 : 1);
  auto arms = pointer_arms(b, in, addr_op);
  if (arms.empty()) return exec_mem_at(b, in, address(b, in, addr_op), guard);
  if (summary_) throw SummaryAbort("a pointer select");
  // `p = c ? a : b`: one access per arm, under its condition, like a guarded instruction (a load
  // merges ite(c, a[i], old), a store stores ite(c, v, old element)); bounds and the other checks
  // see only the threads some input sends down that arm
  for (const auto& [c, base] : arms) {
    Expr g = guard ? ctx_.and_(guard, c) : c;
    // the arm contradicts the guard it runs under (the guard's atoms select the same ites)
    if (propositionally_false(lift_ite_atoms(ctx_, g, lift_memo_))) continue;
    Expr dom = guarded_domain(b, g);
    if (!sat(dom)) continue;
    Expr saved = b.pred;
    b.pred = dom;
    arm_cond_ = c;  // dom over-approximates the arm: an undef-* witness must also take it
    try {
      exec_mem_at(b, in, address(b, in, addr_op, base), g);
    } catch (...) {
      b.pred = saved;
      arm_cond_ = nullptr;
      throw;
    }
    b.pred = saved;
    arm_cond_ = nullptr;
  }
}

void Machine::retype_skipped_load(Bundle& b, const ptx::Instruction& in) {
  if (in.op != Opcode::Ld || in.mod.types.empty() || in.operands.size() < 2) return;
  unsigned bits = ptx::type_bits(in.mod.types.back());
  const Operand& data_op = in.operands[0];
  std::vector<Operand> elems = data_op.kind == Operand::Kind::Vector ? data_op.elements : std::vector<Operand>{data_op};
  auto holds_int_const = [&](const Operand& e) {
    if (e.kind != Operand::Kind::Register || !slots_.count(e.name)) return false;
    size_t s = size_t(slot(e.name));
    return s < b.regs.size() && b.regs[s] && b.regs[s]->op == Op::ConstBV && ir::bv_width(b.regs[s]->sort) == bits;
  };
  if (std::none_of(elems.begin(), elems.end(), holds_int_const)) return;
  std::optional<Addr> a;
  try {
    if (pointer_arms(b, in, in.operands[1]).empty()) a = address(b, in, in.operands[1]);
  } catch (const Unsupported&) {  // an address the load would refuse: leave the registers as they are
    return;
  }
  if (!a || a->space != Space::Global || a->param < 0) return;
  const auto& p = launch_.params[size_t(a->param)];
  if (!dtype_is_float(p.dtype) || dtype_bytes(p.dtype) * 8 != bits) return;
  for (const auto& e : elems) {
    if (!holds_int_const(e)) continue;
    Expr& r = b.regs[size_t(slot(e.name))];
    try {
      r = as_real(r);
    } catch (const Unsupported&) {  // a NaN fill stays bits (as_real refuses NaN patterns)
    }
  }
}

void Machine::exec_mem_at(Bundle& b, const ptx::Instruction& in, const Addr& a, Expr guard) {
  bool is_store = in.op == Opcode::St;
  Type ty = in.mod.types.back();
  unsigned bytes = std::max(1u, ptx::type_bits(ty) / 8);
  const Operand& data_op = in.operands.at(is_store ? 1 : 0);
  std::vector<Operand> elems = data_op.kind == Operand::Kind::Vector ? data_op.elements : std::vector<Operand>{data_op};
  if (summary_) {
    if (a.space != Space::Global || is_store) throw SummaryAbort("not a global load");
    summary_->align = elems.size() > 1 ? bytes * unsigned(elems.size()) : 0;
  } else if (elems.size() > 1 && a.space == Space::Global && !concrete_) {
    check_vector_alignment(b, in, a, bytes * unsigned(elems.size()));
  }
  for (unsigned k = 0; k < elems.size(); ++k) {
    if (is_store) {
      Expr v = read_raw(b, elems[k], ty);
      if (ptx::is_float(ty)) v = as_real(v);
      store(b, in, a, bytes, ty, v, k, guard);
    } else {
      if (elems[k].kind == Operand::Kind::Sink) continue;
      Expr v = load(b, in, a, bytes, ty, k);
      if (guard) {
        Expr old = read_raw(b, elems[k], ty);
        // Triton's masked load: the `other` value moved in as integer bits, the load gives a float
        if (v->sort == Sort::Real && old->op == Op::ConstBV && ir::bv_width(old->sort) == bytes * 8) old = as_real(old);
        v = merge_register(b, elems[k], guard, v, old);
      }
      write(b, elems[k], v);
    }
  }
}

void Machine::exec_atom(Bundle& b, const ptx::Instruction& in, Expr guard) {
  bool is_red = in.op == Opcode::Red;
  if (in.mod.types.empty()) unsupported(in, "atomic without a type");
  Type ty = in.mod.types.back();
  unsigned bytes = std::max(1u, ptx::type_bits(ty) / 8);
  size_t ai = is_red ? 0 : 1;
  Addr a = address(b, in, in.operands.at(ai));
  using A = ptx::AtomOp;
  A op = in.mod.atom;
  // CAS on b32 moves float bits around: keep the operands' own sorts
  Expr v = op == A::Cas ? read_raw(b, in.operands.at(ai + 1), ty) : read(b, in.operands.at(ai + 1), ty);
  bool sgn = ptx::is_signed_int(ty);
  if (a.space == Space::Shared && !concrete_) return shared_atomic(b, in, a, bytes, ty, v, guard);
  if (a.space == Space::Shared || (concrete_ && a.space == Space::Global)) {
    // concrete read-modify-write through the ordinary load/store paths
    if (guard) unsupported(in, "data-guarded atomic in concrete mode");
    Expr old = load(b, in, a, bytes, ty, 0);
    if (ptx::is_float(ty)) old = as_real(old);
    Expr nv;
    switch (op) {
      case A::Add: nv = ptx::is_float(ty) ? ctx_.add(old, v) : ctx_.bv_add(old, v); break;
      case A::Min: nv = ptx::is_float(ty) ? ctx_.min(old, v) : ctx_.bv_min(old, v, sgn); break;
      case A::Max: nv = ptx::is_float(ty) ? ctx_.max(old, v) : ctx_.bv_max(old, v, sgn); break;
      case A::Exch: nv = v; break;
      case A::And: nv = ctx_.bv_and(old, v); break;
      case A::Or: nv = ctx_.bv_or(old, v); break;
      case A::Xor: nv = ctx_.bv_xor(old, v); break;
      case A::Inc: nv = ctx_.ite(ctx_.ule(v, old), ctx_.bv_const(old->sort, 0), ctx_.bv_add(old, ctx_.bv_const(old->sort, 1))); break;
      case A::Cas: {
        // compare and swap bit patterns: a float constant (a CAS loop's fmaxf result) becomes its bits
        Expr nw = read_raw(b, in.operands.at(ai + 2), ty);
        unsigned w = std::max(8u, ptx::type_bits(ty));
        auto bits = [&](Expr e) -> Expr {
          if (e->op == Op::ConstReal && (w == 32 || w == 64)) {
            double d = e->rational().get_d();
            return w == 32 ? ctx_.bv_const(Sort::BV32, std::bit_cast<uint32_t>(float(d)))
                           : ctx_.bv_const(Sort::BV64, std::bit_cast<uint64_t>(d));
          }
          if (!ir::is_bv(e->sort)) unsupported(in, "atom.cas mixing float and integer values");
          return as_bv(e, w);
        };
        Expr ob = bits(old);
        nv = ctx_.ite(ctx_.eq(ob, bits(v)), bits(nw), ob);  // `old` keeps its sort for the loop's compare
        break;
      }
      default: unsupported(in, "atomic operation");
    }
    store(b, in, a, bytes, ty, nv, 0, nullptr);
    if (!is_red) write(b, in.operands[0], old);
    return;
  }
  if (a.space != Space::Global) unsupported(in, "atomic outside global and shared memory");
  Expr idx = element_index(b, in, a, bytes, 0);
  check_global_bounds(b, in, a, idx);
  Expr old = ctx_.fresh_var("atom.old", v->sort);
  WriteOp wop = WriteOp::Other;
  switch (op) {
    case A::Add: wop = WriteOp::Add; if (guard) v = ctx_.ite(guard, v, ptx::is_float(ty) ? ctx_.real_const(0) : ctx_.bv_const(v->sort, 0)); break;
    case A::Min: wop = WriteOp::Min; break;
    case A::Max: wop = WriteOp::Max; break;
    case A::Exch: wop = WriteOp::Exch; break;
    case A::Cas: {
      // the CAS loop of a float atomicMax/Min: new = max(expected, v) with expected = the loaded element
      Expr expected = read_raw(b, in.operands.at(ai + 1), ty), nw = read_raw(b, in.operands.at(ai + 2), ty);
      if (expected->sort == Sort::Real) {
        if (auto mm = cas_as_minmax(ctx_, expected, nw)) {
          std::tie(wop, v) = *mm;
          old = expected;  // the loop's compare succeeds: it exits after one round
          break;
        }
      }
      unsupported(in, "atom.cas outside a recognized atomic max/min loop");
    }
    default: break;
  }
  if (guard && wop != WriteOp::Add) unsupported(in, "data-guarded atomic");
  record_write(b, in, a.tensor, idx, v, wop, sgn);
  if (!is_red) write(b, in.operands[0], old);
}

// A load returns the tensor's pre-launch contents (or the thread's own earlier store). That is
// wrong when ANOTHER thread of the launch stores to the element (in any order: bundles run one
// after the other), so such a read makes the launch UNSUPPORTED, naming both accesses.
// Atomic accumulations are not stores here: a read racing with them is the CAS-loop idiom.
// Disjointness: the same index expression that is injective over thread identity (every thread
// its own element: the in-place elementwise pattern), disjoint index ranges, or else evaluation
// over every thread of the launch (up to 2^22 threads).
void Machine::check_global_reads() {
  if (concrete_) return;
  for (const auto& w : out_.writes)
    if (summary_tensors_.count(w.tensor)) throw SummaryConflict(std::string(ctx_.tensor_name(w.tensor)));
  std::map<int32_t, std::vector<size_t>> stores;
  for (size_t i = 0; i < out_.writes.size(); ++i)
    if (out_.writes[i].op == WriteOp::Store) stores[out_.writes[i].tensor].push_back(i);
  if (stores.empty()) return;
  auto vars = tv_.all();
  const Dim3& B = launch_.block;
  const Dim3& G = launch_.grid;
  uint64_t range[6] = {B.x, B.y, B.z, G.x, G.y, G.z};
  // An index k + sum c_i v_i whose thread part is injective "digit by digit": sorted by |c|, each
  // coefficient exceeds the span of the smaller ones (tid + 256*ctaid, p + C*HW*b). The ranges are
  // the widths of the accessing threads' box (the union of the read's and the write's bundle
  // boxes: a `c < channels` test on tid.x leaves 128 of 256 lanes, and 16641*tid.x +
  // 2129048*ctaid.x is injective over those).
  // A strided loop (`for (i = tid; i < n; i += 256)`) records one read and one store per iteration
  // and bundle: thousands of each, so everything a pair needs is computed once per distinct index,
  // box, coefficient vector and widths, and a pair costs a few integer operations (096's softmax
  // kernel: 13824 reads x 4608 stores took 5 s as map lookups).
  using Widths = std::array<uint64_t, 6>;
  using Coefs = std::array<int64_t, 6>;
  struct Form {                 // what the pair checks need of one index expression
    bool data = false;          // depends on tensor data
    ir::Bounds bounds;
    bool linear = false;
    int64_t k = 0;
    Coefs c{};
    int coefs = -1;             // id of c in coef_list (linear only)
  };
  std::unordered_map<Expr, Form> forms;
  std::vector<Coefs> coef_list;
  auto form_of = [&](Expr idx) -> const Form& {
    auto [it, fresh] = forms.try_emplace(idx);
    if (!fresh) return it->second;
    Form& f = it->second;
    f.data = idx->has_data();
    f.bounds = ctx_.bv_bounds(idx);
    if (auto L = linear_of(idx, vars)) {
      f.linear = true;
      f.k = L->k;
      std::copy(std::begin(L->c), std::end(L->c), f.c.begin());
      auto at = std::find(coef_list.begin(), coef_list.end(), f.c);
      f.coefs = int(at - coef_list.begin());
      if (at == coef_list.end()) coef_list.push_back(f.c);
    }
    return f;
  };
  // bundles of one shape share their box: ids over distinct boxes, -1 for a bundle with no thread
  std::vector<ThreadBox> box_list;
  std::unordered_map<Expr, int> box_ids;
  auto box_id = [&](Expr pred) -> int {
    auto [it, fresh] = box_ids.try_emplace(pred, -1);
    if (!fresh) return it->second;
    if (auto bx = box_of(tv_, pred)) {
      auto same = [&](const ThreadBox& o) {
        for (size_t i = 0; i < 6; ++i)
          if (o[i].lo != (*bx)[i].lo || o[i].hi != (*bx)[i].hi) return false;
        return true;
      };
      auto at = std::find_if(box_list.begin(), box_list.end(), same);
      it->second = int(at - box_list.begin());
      if (at == box_list.end()) box_list.push_back(*bx);
    }
    return it->second;
  };
  struct Union { Widths width; std::array<uint64_t, 6> lo; };  // the union box of two bundles
  std::map<std::pair<int, int>, Union> unions;
  auto union_of = [&](int b1, int b2) -> const Union& {
    auto [it, fresh] = unions.try_emplace({b1, b2});
    if (fresh)
      for (size_t i = 0; i < 6; ++i) {
        uint64_t lo = std::min(box_list[size_t(b1)][i].lo, box_list[size_t(b2)][i].lo);
        uint64_t hi = std::max(box_list[size_t(b1)][i].hi, box_list[size_t(b2)][i].hi);
        it->second.width[i] = std::min<uint64_t>(hi - lo + 1, range[i]);
        it->second.lo[i] = lo;
      }
    return it->second;
  };
  std::map<std::pair<int, Widths>, std::optional<Digits>> digits_memo;  // (coefficient id, widths)
  auto digits = [&](int coefs, const Widths& width) -> const std::optional<Digits>& {
    auto [it, fresh] = digits_memo.try_emplace({coefs, width});
    if (fresh) {
      int64_t c[6];
      std::copy(coef_list[size_t(coefs)].begin(), coef_list[size_t(coefs)].end(), c);
      it->second = digits_of(c, width);
    }
    return it->second;
  };
  // Read index k_r + T(v), write index k_w + T(v') with the same injective thread part T over the
  // Vars that vary in the union box: another thread's write lands on the read's element iff
  // k_w - k_r = T(v) - T(v') for two threads (digits_reach). A Var fixed in the union box adds its
  // coefficient times its one value to each constant: `shift` is what the write's fixed terms
  // add minus the read's; nullopt when the thread parts differ.
  auto shift = [&](const Form& R, const Coefs& wc, const Union& u) -> std::optional<__int128> {
    __int128 adj = 0;
    for (size_t i = 0; i < 6; ++i) {
      if (u.width[i] != 1) {
        if (R.c[i] != wc[i]) return std::nullopt;
      } else {
        adj += (__int128(wc[i]) - R.c[i]) * __int128(u.lo[i]);
      }
    }
    return adj;
  };
  // Can a store of the group (one coefficient vector, one box; `ks` its constants, sorted and
  // distinct) reach the read's element from another thread? nullopt: not decided this way.
  auto group_can_hit = [&](const Form& R, int rb, const Coefs& wc, int wb,
                           std::span<const int64_t> ks, size_t max_windows) -> std::optional<bool> {
    if (R.data || !R.linear) return std::nullopt;
    const Union& u = union_of(rb, wb);
    auto adj = shift(R, wc, u);
    if (!adj) return std::nullopt;
    const auto& D = digits(R.coefs, u.width);
    if (!D) return std::nullopt;
    return digits_reach(*D, ks, __int128(R.k) - *adj, max_windows, &deadline_);
  };
  auto fail = [&](const GlobalRead& rd, const WriteRecord& w, const std::string& why) {
    throw Unsupported(fmt::format(
        "global read of {} at PTX line {}{} may observe the store at PTX line {} by another thread of the same launch "
        "({}); cross-thread dependences through global memory are not modeled, in kernel {}",
        ctx_.tensor_name(rd.tensor), rd.where.ptx_line, rd.where.source.empty() ? "" : " (" + rd.where.source + ")",
        w.where.ptx_line, why, f_.name));
  };
  for (const auto& [tensor, st] : stores) {
    // the distinct (index, box) of the stores: one per loop iteration, not per bundle. Affine
    // data-free ones are grouped by (coefficients, box), the rest tested one by one
    struct Group { int coefs, box; std::vector<int64_t> ks; std::vector<const Form*> forms; };
    std::vector<Group> groups;
    std::vector<std::pair<const Form*, int>> single;
    {
      std::set<std::pair<Expr, int>> seen;
      std::map<std::pair<int, int>, size_t> group_of;
      for (size_t wi : st) {
        const auto& w = out_.writes[wi];
        int b = box_id(w.pred);
        if (b < 0 || !seen.insert({w.index, b}).second) continue;  // a bundle with no thread writes nothing
        const Form& W = form_of(w.index);
        if (W.data || !W.linear) { single.push_back({&W, b}); continue; }
        auto [g, fresh] = group_of.try_emplace({W.coefs, b}, groups.size());
        if (fresh) groups.push_back({W.coefs, b, {}, {}});
        groups[g->second].ks.push_back(W.k);
        groups[g->second].forms.push_back(&W);
      }
      for (auto& g : groups) {
        std::sort(g.ks.begin(), g.ks.end());
        g.ks.erase(std::unique(g.ks.begin(), g.ks.end()), g.ks.end());
      }
    }
    auto pair_can_hit = [&](const Form& R, int rb, const Form& W, int wb) {
      deadline_.tick("in the global read-after-write check");
      if (!R.data && !W.data && (R.bounds.hi < W.bounds.lo || W.bounds.hi < R.bounds.lo)) return false;
      if (!W.linear) return true;
      const int64_t k[] = {W.k};  // one store: at most 3 windows per digit
      return group_can_hit(R, rb, W.c, wb, k, SIZE_MAX).value_or(true);
    };
    auto read_can_be_hit = [&](const Form& R, int rb) {
      for (const auto& [W, wb] : single)
        if (pair_can_hit(R, rb, *W, wb)) return true;
      for (const auto& g : groups) {
        deadline_.tick("in the global read-after-write check");
        // windows beyond the group's size: testing its stores one by one is cheaper
        auto hit = group_can_hit(R, rb, coef_list[size_t(g.coefs)], g.box, g.ks, g.ks.size() + 64);
        if (!hit) {
          hit = false;
          for (const Form* W : g.forms)
            if (pair_can_hit(R, rb, *W, g.box)) { hit = true; break; }
        }
        if (*hit) return true;
      }
      return false;
    };
    std::vector<const GlobalRead*> open;
    std::map<std::pair<Expr, int>, bool> cleared_index;  // the clearing looks at the index and the read's threads
    for (const auto& rd : global_reads_) {
      if (rd.tensor != tensor) continue;
      const int rb = box_id(rd.pred);
      if (rb < 0) continue;  // no thread performs this read
      auto [known, fresh] = cleared_index.try_emplace({rd.index, rb}, true);
      if (fresh) known->second = !read_can_be_hit(form_of(rd.index), rb);
      if (!known->second) open.push_back(&rd);
    }
    if (open.empty()) continue;
    const WriteRecord& w0 = out_.writes[st[0]];
    uint64_t total = B.count() * G.count();
    for (size_t wi : st)
      if (out_.writes[wi].index->has_data()) fail(*open[0], out_.writes[wi], "the store's index depends on tensor data");
    for (const auto* rd : open)
      if (rd->index->has_data()) fail(*rd, w0, "the read's index depends on tensor data");
    if (total > (uint64_t(1) << 22)) fail(*open[0], w0, "the launch is too large to rule it out by evaluation");
    // element -> (first writer thread, its record, another writer thread or UINT64_MAX)
    struct Writers { uint64_t lin, other; size_t rec; };
    std::unordered_map<uint64_t, Writers> writers;
    auto point = [&](uint64_t n, uint64_t* p) {
      uint64_t tl = n % B.count(), bl = n / B.count();
      p[0] = tl % B.x; p[1] = tl / B.x % B.y; p[2] = tl / (uint64_t(B.x) * B.y);
      p[3] = bl % G.x; p[4] = bl / G.x % G.y; p[5] = bl / (uint64_t(G.x) * G.y);
    };
    auto coord = [&](uint64_t n) {
      uint64_t p[6];
      point(n, p);
      ThreadCoord c{{uint32_t(p[0]), uint32_t(p[1]), uint32_t(p[2])}, {uint32_t(p[3]), uint32_t(p[4]), uint32_t(p[5])}};
      return c.str();
    };
    // f(n, element) for every thread n (linear id) whose access (pred, index) happens; an index that
    // is no function of thread identity is reported by not_a_function first.
    auto each_thread = [&](Expr pred, Expr index, auto&& not_a_function, auto&& f) {
      Expr roots[] = {pred, index};
      BvProgram prog(vars, roots);
      if (!prog.ok()) not_a_function();
      for (uint64_t n = 0; n < total; ++n) {
        deadline_.tick("in the global read-after-write check");
        uint64_t p[6], o[2];
        point(n, p);
        prog.eval(p, o);
        if (o[0]) f(n, o[1]);
      }
    };
    std::set<std::pair<Expr, Expr>> enumerated;  // (predicate, index): one pass each
    for (size_t wi : st) {
      const auto& w = out_.writes[wi];
      if (!enumerated.insert({w.pred, w.index}).second) continue;
      each_thread(w.pred, w.index, [&] { fail(*open[0], w, "the store's index is not a function of thread identity"); },
                  [&](uint64_t n, uint64_t elem) {
                    auto [it, fresh] = writers.try_emplace(elem, Writers{n, UINT64_MAX, wi});
                    if (!fresh && it->second.lin != n && it->second.other == UINT64_MAX) it->second.other = n;
                  });
    }
    enumerated.clear();
    for (const auto* rd : open) {
      if (!enumerated.insert({rd->pred, rd->index}).second) continue;
      each_thread(rd->pred, rd->index, [&] { fail(*rd, w0, "the read's index is not a function of thread identity"); },
                  [&](uint64_t n, uint64_t elem) {
                    auto it = writers.find(elem);
                    if (it == writers.end()) return;
                    uint64_t other = it->second.lin != n ? it->second.lin : it->second.other;
                    if (other == UINT64_MAX) return;
                    fail(*rd, out_.writes[it->second.rec],
                         fmt::format("thread {} reads element {} that thread {} writes", coord(n), elem, coord(other)));
                  });
    }
  }
}

// atom.shared / red.shared, symbolic: an accumulation onto the cell (SharedWrite::op), resolved
// after the barrier as base + every contribution of the block (Resolver); the returned old
// value is a fresh Var. The float CAS loop of atomicMax/Min is recognized as for global memory.
void Machine::shared_atomic(Bundle& b, const ptx::Instruction& in, const Addr& a, unsigned bytes, Type ty, Expr v,
                            Expr guard) {
  using A = ptx::AtomOp;
  bool is_red = in.op == Opcode::Red;
  size_t ai = is_red ? 0 : 1;
  Expr old = ctx_.fresh_var("atom.old", v->sort);
  WriteOp wop = WriteOp::Other;
  switch (in.mod.atom) {
    case A::Add: wop = WriteOp::Add; break;
    case A::Min: wop = WriteOp::Min; break;
    case A::Max: wop = WriteOp::Max; break;
    case A::Cas: {
      Expr expected = read_raw(b, in.operands.at(ai + 1), ty), nw = read_raw(b, in.operands.at(ai + 2), ty);
      // `old = *(int*)addr` loads the cell through an integer register: its float view
      Expr expected_f = expected;
      if (expected->sort != Sort::Real && (nw->op == Op::Max || nw->op == Op::Min)) {
        try { expected_f = as_real(expected); } catch (const Unsupported&) {}
      }
      if (expected_f->sort == Sort::Real) {
        if (auto mm = cas_as_minmax(ctx_, expected_f, nw)) {
          std::tie(wop, v) = *mm;
          old = expected;  // the loop's compare succeeds: it exits after one round
          // the loop's initial plain read of the cell is part of the atomic idiom, not a race
          for (auto it = epoch_access_.rbegin(); it != epoch_access_.rend(); ++it)
            if (!it->write && it->addr == a.expr && it->pred == b.pred) { it->atomic = true; break; }
          break;
        }
      }
      unsupported(in, "shared atom.cas outside a recognized atomic max/min loop");
    }
    default: unsupported(in, "shared-memory atomic operation other than add/min/max");
  }
  if (guard) {
    if (wop != WriteOp::Add) unsupported(in, "data-guarded shared atomic min/max");
    v = ctx_.ite(guard, v, ptx::is_float(ty) ? ctx_.real_const(0) : ctx_.bv_const(v->sort, 0));
  }
  Expr bad = out_.smem_bytes < bytes ? b.pred
                                     : ctx_.and_(b.pred, ctx_.ult(ctx_.bv_const(Sort::BV64, out_.smem_bytes - bytes), a.expr));
  if (sat(bad)) {
    finding("shared-out-of-bounds", in, b, bad, fmt::format("shared atomic outside {} bytes", out_.smem_bytes));
    return;
  }
  undef_sink(b, in, v, "undef-store", "a shared-memory atomic");
  SharedWrite w{b.pred, a.expr, v, bytes, seq_++, where(in), wop, ptx::is_signed_int(ty)};
  out_.epoch_writes[epoch_].push_back(w);
  SharedAccess acc{b.pred, a.expr, bytes, true, w.seq, w.where};
  acc.atomic = true;
  epoch_access_.push_back(acc);
  b.pending.push_back(std::move(w));
  if (!is_red) write(b, in.operands[0], old);
}

}  // namespace dirigo::exec
