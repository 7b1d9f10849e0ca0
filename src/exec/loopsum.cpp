// Loop summaries (machine.h, summarize_loop): a per-thread loop whose control flow is decided by
// concrete counters and whose body is straight-line loads and arithmetic becomes one Reduce per
// accumulator instead of one term per executed instruction.
//
// The state at the loop's entry is kept; at the first back edge the body is executed once more, from
// that state, at a symbolic iteration number i in [0, T), T the trip count (the counters replayed
// natively). That one symbolic iteration is the proof: every register the body writes must come
// out as (a) an induction r + c·(i+1) when it went in as r + c·i, (b) an accumulator A ⊕ t(i) with
// t free of every accumulator when it went in as a fresh A, (c) unchanged, or (d) a temporary the
// body writes before it reads. By induction over the iterations the loop then leaves
// acc ⊕ reduce_{i<T} t(i) and r + c·T, exactly what stepping would build term by term. Loads are
// checked at the first and last iteration (their index is verified affine in i, so these bound
// it), and a launch that also writes a tensor a summary read is executed again without summaries
// (memory.cpp, check_global_reads: the cross-thread read-after-write check needs every index).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <unordered_set>

#include "exec/machine.h"
#include "exec/sat.h"
#include "ir/reduce.h"

namespace dirigo::exec {

namespace {

bool allowed_in_body(const ptx::Instruction& in) {
  switch (in.op) {
    case Opcode::Bra: case Opcode::Ret: case Opcode::Exit: case Opcode::Trap: case Opcode::Bar: case Opcode::Barrier:
    case Opcode::Shfl: case Opcode::Vote: case Opcode::Activemask: case Opcode::St: case Opcode::Atom: case Opcode::Red:
    case Opcode::Call: case Opcode::Ldu: case Opcode::Membar: case Opcode::Fence:
    case Opcode::CpAsync: case Opcode::CpAsyncCommitGroup: case Opcode::CpAsyncWaitGroup: case Opcode::CpAsyncWaitAll:
    case Opcode::CpAsyncBulk: case Opcode::CpReduceAsyncBulk: case Opcode::Mbarrier:
    case Opcode::Mma: case Opcode::WmmaLoad: case Opcode::WmmaStore: case Opcode::WmmaMma: case Opcode::Wgmma:
    case Opcode::Ldmatrix: case Opcode::Stmatrix:
      return false;
    case Opcode::Ld:
      return in.mod.space == ptx::StateSpace::Global;
    default:
      return true;
  }
}

}  // namespace

const Machine::LoopShape* Machine::loop_shape(size_t header, size_t branch) {
  uint64_t key = uint64_t(header) << 32 | branch;
  if (auto it = loop_shapes_.find(key); it != loop_shapes_.end()) return it->second ? &*it->second : nullptr;
  std::optional<LoopShape> shape;
  const auto& br = f_.body[branch];
  bool ok = header < branch && br.op == Opcode::Bra && br.guard && f_.register_type(br.guard->reg);
  LoopShape s;
  std::vector<uint8_t> state;  // per slot: 0 untouched, 1 read first, 2 written first
  auto touch = [&](int sl, bool def) {
    if (size_t(sl) >= state.size()) state.resize(size_t(sl) + 1, 0);
    if (state[size_t(sl)] == 0) state[size_t(sl)] = def ? 2 : 1;
    if (def && std::find(s.written.begin(), s.written.end(), sl) == s.written.end()) s.written.push_back(sl);
  };
  for (size_t pc = header; ok && pc < branch; ++pc) {
    const auto& in = f_.body[pc];
    const auto& rl = rollup_.at[pc];
    if (rl.kind == ptx::RolledInstr::Kind::Absorbed) continue;
    if (in.guard || !allowed_in_body(in)) { ok = false; break; }
    if (rl.kind == ptx::RolledInstr::Kind::Math) {
      for (const auto& a : rl.args)
        if (a.kind == Operand::Kind::Register && f_.register_type(a.name)) touch(slot(a.name), false);
      if (rl.addend && f_.register_type(rl.addend->name)) touch(slot(rl.addend->name), false);
      touch(slot(rl.dest), true);
      continue;
    }
    int nd = std::max(0, ptx::opcode_info(in.op).num_dests);
    std::vector<int> defs;
    for (size_t k = 0; k < in.operands.size(); ++k) {
      std::vector<const Operand*> todo{&in.operands[k]};
      while (!todo.empty()) {
        const Operand* o = todo.back();
        todo.pop_back();
        bool reg = o->kind == Operand::Kind::Register || (o->kind == Operand::Kind::Address && o->base_is_register);
        if (reg && f_.register_type(o->name)) {
          if (int(k) < nd && o->kind == Operand::Kind::Register) defs.push_back(slot(o->name));
          else touch(slot(o->name), false);
        }
        for (const auto& e : o->elements) todo.push_back(&e);
      }
    }
    for (int d : defs) touch(d, true);  // an instruction reads its sources before it writes
  }
  if (ok) {
    s.header = header;
    s.branch = branch;
    for (int sl : s.written) if (state[size_t(sl)] == 2) s.temps.insert(sl);
    shape = std::move(s);
  }
  auto& slot_ref = loop_shapes_[key] = std::move(shape);
  return slot_ref ? &*slot_ref : nullptr;
}

std::optional<uint64_t> Machine::loop_trips(const std::vector<Expr>& regs, const std::unordered_map<int, Bundle::PendingSum>& sums,
                                            const LoopShape& shape, uint64_t cap,
                                            std::span<const std::pair<int, uint64_t>> words) {
  if (dry_.empty()) decode_dry_run();
  size_t n = slot_types_.size();
  std::vector<uint64_t> word(n, 0);
  std::vector<uint8_t> bits(n, 0);  // 0: unknown, 1: a predicate, else the word's width
  for (size_t sl = 0; sl < n && sl < regs.size(); ++sl) {
    Expr v = regs[sl];
    if (!v || sums.count(int(sl))) continue;
    if (v->op == Op::ConstBV) word[sl] = v->bv_value(), bits[sl] = uint8_t(ir::bv_width(v->sort));
    else if (v->op == Op::ConstBool) word[sl] = v->bool_value(), bits[sl] = 1;
  }
  for (auto [sl, w] : words) word[size_t(sl)] = w, bits[size_t(sl)] = uint8_t(ir::bv_width(regs[size_t(sl)]->sort));
  const DryInstr& br = dry_[shape.branch];
  if (br.guard < 0) return std::nullopt;
  for (uint64_t trips = 1; trips <= cap; ++trips) {
    if ((trips & 4095) == 0) deadline_.check("loop summary trip count");
    for (size_t pc = shape.header; pc < shape.branch; ++pc) {
      const DryInstr& d = dry_[pc];
      if (d.kind == DryInstr::Skip) continue;
      std::optional<uint64_t> r;
      if (d.kind == DryInstr::Native) {
        auto arg = [&](const DryInstr::Src& a) -> std::optional<uint64_t> {
          if (a.slot < 0) return a.imm;
          if (bits[size_t(a.slot)] != d.width) return std::nullopt;
          return word[size_t(a.slot)];
        };
        auto x = arg(d.args[0]);
        auto y = d.args.size() > 1 ? arg(d.args[1]) : std::optional<uint64_t>(0);
        if (x && y) r = native_word(d.op, d.cmp, d.width, d.is_signed, *x, *y);
      }
      for (int sl : d.dests) bits[size_t(sl)] = 0;
      if (r && d.dests.size() == 1) {
        word[size_t(d.dests[0])] = *r;
        bits[size_t(d.dests[0])] = uint8_t(d.op == Opcode::Setp ? 1 : d.width);
      }
    }
    if (bits[size_t(br.guard)] != 1) return std::nullopt;
    bool taken = (word[size_t(br.guard)] != 0) != br.guard_negated;
    if (!taken) return trips;
  }
  return std::nullopt;
}

std::optional<Machine::ThreadTrips> Machine::thread_trips(const Bundle& b, const std::vector<Expr>& regs,
                                              const std::unordered_map<int, Bundle::PendingSum>& sums,
                                              const LoopShape& shape, uint64_t cap) {
  // thread points evaluated (cheap: a BvProgram each), and distinct counter values replayed (a loop each)
  constexpr uint64_t kTripThreads = uint64_t(1) << 24, kTripReplays = 4096;
  const ThreadVars& tv = sat_.vars();
  std::vector<Expr> vars = tv.all();
  // the slots the back edge's guard depends on across iterations (a fixed point over the body)
  if (dry_.empty()) decode_dry_run();
  if (dry_[shape.branch].guard < 0) return std::nullopt;
  std::vector<uint8_t> needed(slot_types_.size(), 0);
  needed[size_t(dry_[shape.branch].guard)] = 1;
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t pc = shape.branch; pc-- > shape.header;) {
      const DryInstr& d = dry_[pc];
      bool feeds = false;
      for (int sl : d.dests) feeds = feeds || needed[size_t(sl)];
      if (!feeds) continue;
      auto need = [&](int sl) {
        if (sl >= 0 && !needed[size_t(sl)]) needed[size_t(sl)] = 1, grew = true;
      };
      for (const auto& a : d.args) need(a.slot);
      for (int sl : d.sources) need(sl);
    }
  }
  std::vector<int> slots;
  std::vector<Expr> roots{b.pred};
  std::array<bool, 6> used{};
  for (size_t sl = 0; sl < regs.size() && sl < needed.size(); ++sl) {
    Expr v = regs[sl];
    if (!needed[sl] || shape.temps.count(int(sl))) continue;
    if (!v || sums.count(int(sl)) || !ir::is_bv(v->sort) || v->op == Op::ConstBV || !sat_.thread_only(v)) continue;
    slots.push_back(int(sl));
    roots.push_back(v);
    for (Expr l : ir::leaves(v))
      for (size_t d = 0; d < 6; ++d) used[d] = used[d] || l == vars[d];
  }
  if (slots.empty()) return std::nullopt;
  // the threads of the bundle among the points of the used Vars; a pred that mentions other Vars
  // counts every point (one count over more threads than the bundle's is still that count)
  bool pred_exact = sat_.thread_only(b.pred);
  for (Expr l : ir::leaves(b.pred))
    for (size_t d = 0; d < 6; ++d) pred_exact = pred_exact && (l != vars[d] || used[d]);
  const uint32_t extent[6] = {tv.block.x, tv.block.y, tv.block.z, tv.grid.x, tv.grid.y, tv.grid.z};
  uint64_t points = 1;
  for (size_t d = 0; d < 6; ++d)
    if (used[d] && (points *= extent[d]) > kTripThreads) return std::nullopt;
  BvProgram prog(vars, roots);
  if (!prog.ok()) return std::nullopt;
  std::vector<uint64_t> out(roots.size());
  std::vector<std::pair<int, uint64_t>> words(slots.size());
  std::optional<ThreadTrips> trips;
  // threads with the same counter values run the same trips: each distinct tuple is replayed once (a
  // loop over a group's channels is one tuple per group, however large the grid)
  struct TupleHash {
    size_t operator()(const std::vector<uint64_t>& v) const {
      size_t h = 0;
      for (uint64_t x : v) h = (h ^ x) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
      return h;
    }
  };
  std::unordered_set<std::vector<uint64_t>, TupleHash> replayed;
  std::vector<uint64_t> tuple(slots.size());
  for (uint64_t n = 0; n < points; ++n) {
    if ((n & 65535) == 65535) deadline_.check("loop summary trip count");
    uint64_t p[6] = {}, r = n;
    for (size_t d = 0; d < 6; ++d)
      if (used[d]) p[d] = r % extent[d], r /= extent[d];
    prog.eval(p, out.data());
    if (pred_exact && !out[0]) continue;
    tuple.assign(out.begin() + 1, out.end());
    if (!replayed.insert(tuple).second) continue;
    if (replayed.size() > kTripReplays) return std::nullopt;
    for (size_t k = 0; k < slots.size(); ++k) words[k] = {slots[k], out[k + 1]};
    auto t = loop_trips(regs, sums, shape, cap, words);
    if (!t) return std::nullopt;
    if (!trips) trips = ThreadTrips{*t, true};
    else if (*t != trips->common) trips = ThreadTrips{std::min(*t, trips->common), false};
  }
  return trips;
}

void Machine::note_loop_entry(Bundle& b) {
  if (summary_header_.empty()) {
    summary_header_.assign(f_.body.size(), 0);
    for (size_t pc = 0; pc < f_.body.size(); ++pc) {
      const auto& in = f_.body[pc];
      if (in.op != Opcode::Bra || !in.guard || in.operands.empty()) continue;
      auto it = f_.labels.find(in.operands[0].name);
      if (it != f_.labels.end() && it->second < pc && loop_shape(it->second, pc)) summary_header_[it->second] = 1;
    }
  }
  if (b.pc >= summary_header_.size() || !summary_header_[b.pc] || b.conv || b.unsummarized.count(b.pc)) return;
  if (b.watch && b.watch->header == b.pc && b.watch->steps == steps_) return;  // back from its own back edge
  b.watch = Bundle::LoopWatch{b.pc, steps_, b.regs, b.sums};
}

std::optional<std::pair<Expr, Expr>> Machine::fold_unrolled(std::span<const Expr> terms, Expr iv, uint64_t T) {
  const uint64_t u = terms.size();
  if (u < 2 || u > 16 || T > (uint64_t(1) << 40)) return std::nullopt;
  Expr kv = ctx_.var(std::string(iv->name()) + ".k", Sort::BV64, ir::Bounds{0, u * T - 1});
  std::vector<Expr> want(terms.begin(), terms.end());
  std::sort(want.begin(), want.end());
  for (Expr base : terms) {
    auto reads = ir::strided_reads(ctx_, base, iv);
    if (reads && reads->empty()) return std::nullopt;
    if (!reads || std::any_of(reads->begin(), reads->end(), [&](const auto& r) { return r.step % int64_t(u) != 0; }))
      continue;
    for (uint64_t j0 = 0; j0 < u; ++j0) {
      // base = t_{j0}: its load at a + s·i is g's load at (a − d·j0) + d·k, d = s/u
      std::unordered_map<Expr, Expr> rebuilt;
      for (const ir::StridedRead& r : *reads) {
        Expr d = ctx_.bv_const(Sort::BV64, uint64_t(r.step / int64_t(u)));
        Expr start = ctx_.bv_sub(r.start, ctx_.bv_mul(d, ctx_.bv_const(Sort::BV64, j0)));
        rebuilt[r.load] = ctx_.load(r.load->tensor(), ctx_.bv_add(start, ctx_.bv_mul(d, kv)), r.load->sort);
      }
      Expr g = ir::substitute(ctx_, base, [&](Expr leaf) -> Expr {
        auto it = rebuilt.find(leaf);
        return it == rebuilt.end() ? nullptr : it->second;
      });
      bool uses_iv = false;
      for (Expr l : ir::leaves(g)) uses_iv = uses_iv || l == iv;
      if (uses_iv) break;  // the counter reaches the terms other than through load indices
      // the proof: t_j(i) == g(u·i + j) for every j, the same terms as the iteration appended
      std::vector<Expr> got;
      for (uint64_t j = 0; j < u; ++j) {
        Expr k = ctx_.bv_add(ctx_.bv_mul(ctx_.bv_const(Sort::BV64, u), iv), ctx_.bv_const(Sort::BV64, j));
        got.push_back(ir::substitute(ctx_, g, [&](Expr leaf) -> Expr { return leaf == kv ? k : nullptr; }));
      }
      std::sort(got.begin(), got.end());
      if (got == want) return std::make_pair(kv, g);
    }
  }
  return std::nullopt;
}

bool Machine::summarize_loop(size_t bi, size_t header, size_t branch) {
  Bundle* b = &bundles_[bi];
  if (concrete_ || !opt_.summarize_loops || b->conv || summary_) return false;
  for (const auto& m : b->merges)
    if (m.end >= header && m.end <= branch + 1) return false;
  const LoopShape* shape = loop_shape(header, branch);
  if (!shape || b->unsummarized.count(header)) return false;
  // one iteration ago (the loop's entry, or its previous back edge), with nothing else run since:
  // the two states are consecutive iterations
  uint64_t body_steps = branch - header + 1;
  if (!b->watch || b->watch->header != header || steps_ - b->watch->steps != body_steps) {
    b->watch = Bundle::LoopWatch{header, steps_, b->regs, b->sums};
    return false;
  }
  Bundle::LoopWatch prev = std::move(*b->watch);
  b->watch.reset();
  auto give_up = [&] {
    bundles_[bi].unsummarized.insert(header);
    return false;
  };
  prev.regs.resize(slot_types_.size(), nullptr);
  // the iterations from prev on: the one just stepped is summarized again (its checks and records
  // stand, its terms are replaced by the reduction's)
  auto trips = loop_trips(prev.regs, prev.sums, *shape, opt_.summarize_max_trips);
  bool uniform = true;  // every thread leaves after T iterations (else some run on: stepped from the back edge)
  if (!trips)
    if (auto tt = thread_trips(*b, prev.regs, prev.sums, *shape, opt_.summarize_max_trips))
      trips = tt->common, uniform = tt->uniform;
  if (!trips) return give_up();
  if (*trips < opt_.summarize_min_trips) return false;  // cheap to step; a later run of the loop may be long
  const uint64_t T = *trips;

  // the state now (restored when the summary does not hold)
  std::vector<Expr> regs0 = b->regs;
  regs0.resize(slot_types_.size(), nullptr);
  auto sums0 = b->sums;
  auto value_of = [&](const std::vector<Expr>& regs, const std::unordered_map<int, Bundle::PendingSum>& sums,
                      int sl) -> Expr {
    if (auto it = sums.find(sl); it != sums.end()) return list_value(it->second);
    return size_t(sl) < regs.size() ? regs[size_t(sl)] : nullptr;
  };
  Expr iv = ctx_.var(fmt::format("loop@{}", f_.body[header].loc.ptx_line), Sort::BV64, ir::Bounds{0, T - 1});
  enum class Kind : uint8_t { Temp, Induction, Accumulator, Invariant };
  struct Role { int slot; Kind kind; Expr before = nullptr, step = nullptr, acc = nullptr; Op op = Op::Add; };
  std::vector<Role> roles;
  auto times_i = [&](Expr c, unsigned w, Expr k) {  // c·k in width w
    return ctx_.bv_mul(c, w == 64 ? k : ctx_.trunc(k, ir::bv_sort(w)));
  };
  std::vector<Expr> accs;
  for (int sl : shape->written) {
    if (shape->temps.count(sl)) { roles.push_back({sl, Kind::Temp}); continue; }
    Expr now = value_of(regs0, sums0, sl), then = value_of(prev.regs, prev.sums, sl);
    if (!now || !then || now->has_undef() || then->has_undef()) return give_up();
    if (ir::is_bv(now->sort) && now->sort == then->sort) {
      Expr c = ctx_.bv_sub(now, then);
      if (c->op != Op::ConstBV) return give_up();
      roles.push_back({sl, Kind::Induction, then, c});
    } else if (now->sort == Sort::Real && (sums0.count(sl) || now->op == Op::Add || now->op == Op::Max ||
                                           now->op == Op::Min)) {
      Op op = sums0.count(sl) ? sums0.at(sl).op : now->op;
      Expr a = ctx_.var(fmt::format("acc{}@{}", sl, f_.body[header].loc.ptx_line), Sort::Real);
      accs.push_back(a);
      roles.push_back({sl, Kind::Accumulator, then, nullptr, a, op});
    } else if (now == then) {
      roles.push_back({sl, Kind::Invariant, then});
    } else {
      return give_up();
    }
  }

  // the symbolic iteration, from prev's state
  b->regs = prev.regs;
  b->sums = prev.sums;
  for (const auto& r : roles) {
    if (r.kind == Kind::Temp) continue;
    b->sums.erase(r.slot);
    if (r.kind == Kind::Induction) b->regs[size_t(r.slot)] = ctx_.bv_add(r.before, times_i(r.step, ir::bv_width(r.before->sort), iv));
    else if (r.kind == Kind::Accumulator) b->regs[size_t(r.slot)] = r.acc;
  }
  size_t pc0 = b->pc;
  SummaryMode mode;
  summary_ = &mode;
  auto restore = [&] {
    summary_ = nullptr;
    Bundle& bb = bundles_[bi];
    bb.regs = regs0;
    bb.sums = sums0;
    bb.pc = pc0;
  };
  try {
    b->pc = header;
    while (bundles_[bi].pc < branch)
      if (!step(bi) || bundles_[bi].state != Bundle::State::Running) throw SummaryAbort("the body stopped");
  } catch (const SummaryAbort&) {
    restore();
    return give_up();
  } catch (const Unsupported&) {
    restore();
    return give_up();
  } catch (...) {
    restore();
    throw;
  }
  summary_ = nullptr;
  b = &bundles_[bi];

  // the proof obligations of the one symbolic iteration
  auto mentions_acc = [&](Expr e) {
    if (!e || accs.empty()) return false;
    for (Expr l : ir::leaves(e))
      if (std::find(accs.begin(), accs.end(), l) != accs.end()) return true;
    return false;
  };
  std::vector<std::pair<int, Expr>> after;  // slot -> value after the loop
  std::vector<std::pair<int, Expr>> reduced;  // accumulator slot -> its reduction over the remaining trips
  std::vector<Op> reduced_op;
  ir::Substituter last(ctx_, [&](Expr leaf) -> Expr { return leaf == iv ? ctx_.bv_const(Sort::BV64, T - 1) : nullptr; });
  bool ok = true;
  for (const auto& r : roles) {
    Expr out = value_of(b->regs, b->sums, r.slot);
    if (!out) { ok = false; break; }
    switch (r.kind) {
      case Kind::Induction: {
        unsigned w = ir::bv_width(r.before->sort);
        // what the body computed from r + c·i, and what the next iteration must enter with
        ok = out == ctx_.bv_add(ctx_.bv_add(r.before, times_i(r.step, w, iv)), r.step);
        if (ok) after.push_back({r.slot, ctx_.bv_add(r.before, times_i(r.step, w, ctx_.bv_const(Sort::BV64, T)))});
        break;
      }
      case Kind::Invariant:
        ok = out == r.before;
        break;
      case Kind::Accumulator: {
        std::vector<Expr> terms;
        if (auto it = b->sums.find(r.slot); it != b->sums.end() && it->second.op == r.op) {
          terms.assign(it->second.terms->begin(), it->second.terms->begin() + long(it->second.n));
        } else if (out->op == r.op) {
          terms.assign(out->args().begin(), out->args().end());
        } else {
          ok = false;
          break;
        }
        auto self = std::find(terms.begin(), terms.end(), r.acc);
        if (self == terms.end()) { ok = false; break; }
        terms.erase(self);
        Expr t = r.op == Op::Add ? ctx_.add(terms) : terms.empty() ? nullptr : r.op == Op::Max ? ctx_.max(terms) : ctx_.min(terms);
        if (!t || mentions_acc(t) || t->has_undef()) { ok = false; break; }
        ir::ReduceOp rop = r.op == Op::Add ? ir::ReduceOp::Sum : r.op == Op::Max ? ir::ReduceOp::Max : ir::ReduceOp::Min;
        Expr ivs[] = {iv};
        std::pair<int64_t, int64_t> box[] = {{0, int64_t(T)}};
        if (auto folded = fold_unrolled(terms, iv, T)) {
          ivs[0] = folded->first;
          box[0] = {0, int64_t(T * terms.size())};
          t = folded->second;
        }
        reduced.push_back({r.slot, ctx_.reduce(rop, ivs, box, t)});
        reduced_op.push_back(r.op);
        break;
      }
      case Kind::Temp: {
        if (mentions_acc(out)) {
          // a partial sum of the unrolled chain: never read after the loop
          if (live_at(branch + 1, r.slot)) ok = false;
          else after.push_back({r.slot, nullptr});
        } else {
          after.push_back({r.slot, last(out)});
        }
        break;
      }
    }
    if (!ok) break;
  }
  // loads: an index affine in i is bounded by its first and last iteration
  std::vector<std::pair<const SummaryLoad*, std::pair<Expr, Expr>>> ends;
  ir::Substituter first(ctx_, [&](Expr leaf) -> Expr { return leaf == iv ? ctx_.bv_const(Sort::BV64, 0) : nullptr; });
  ir::Substituter second(ctx_, [&](Expr leaf) -> Expr { return leaf == iv ? ctx_.bv_const(Sort::BV64, 1) : nullptr; });
  for (const auto& l : mode.loads) {
    if (!ok) break;
    Expr i0 = first(l.index), i1 = second(l.index), step = ctx_.bv_sub(i1, i0);
    ok = step->op == Op::ConstBV && l.index == ctx_.bv_add(i0, ctx_.bv_mul(step, iv)) &&
         (uint64_t(std::abs(step->bv_signed())) >> 62) == 0 &&
         (T < 2 || uint64_t(std::abs(step->bv_signed())) <= (uint64_t(1) << 62) / (T - 1));
    if (ok && l.align > 1) {  // the vector access at every iteration: the first one, and a step of whole vectors
      uint64_t bytes_step = uint64_t(step->bv_value()) * l.bytes;
      ok = bytes_step % l.align == 0;
    }
    ends.push_back({&l, {i0, last(l.index)}});
  }
  if (!ok) {
    restore();
    return give_up();
  }
  // commit: the state after the last iteration, then the checks of the loads at both ends
  b->regs = std::move(prev.regs);
  b->sums = std::move(prev.sums);
  for (auto& [sl, v] : after) {
    b->sums.erase(sl);
    b->regs[size_t(sl)] = v ? v : ctx_.undef(sort_of(slot_types_[size_t(sl)]));
  }
  for (size_t k = 0; k < reduced.size(); ++k) {
    int sl = reduced[k].first;
    Expr cur = b->sums.count(sl) ? nullptr : value_of(b->regs, b->sums, sl);
    append_to_list(*b, sl, sl, cur, reduced[k].second, reduced_op[k]);
  }
  // a thread that runs on decides at the back edge, its guard the last summarized iteration's
  b->pc = uniform ? branch + 1 : branch;
  if (!uniform) b->unsummarized.insert(header);
  b->watch.reset();
  ++out_.loops_summarized;
  for (const auto& [l, ix] : ends) {
    summary_tensors_.insert(l->addr.tensor);
    const ptx::Instruction& in = f_.body[l->pc];
    check_global_bounds(*b, in, l->addr, ix.first);
    check_global_bounds(*b, in, l->addr, ix.second);
    if (l->align > 1) {
      Addr a = l->addr;
      a.expr = first(a.expr);
      check_vector_alignment(*b, in, a, l->align);
    }
  }
  return true;
}

}  // namespace dirigo::exec
