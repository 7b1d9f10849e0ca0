// Collective points: block barriers (epoch commit + shared-memory checks) and warp-level
// primitives (shfl.sync, vote.sync, activemask, bar.warp.sync) executed as a barrier over the
// bundles of the warp (paper §3.3.4).
#include <fmt/format.h>

#include "exec/interval.h"
#include "exec/machine.h"

namespace dirigo::exec {

namespace {
Dim3 block_of(uint64_t lin, const Dim3& g) {
  return {uint32_t(lin % g.x), uint32_t(lin / g.x % g.y), uint32_t(lin / (uint64_t(g.x) * g.y))};
}
uint64_t linear_of(const Dim3& c, const Dim3& d) { return c.x + uint64_t(d.x) * (c.y + uint64_t(d.y) * c.z); }
}  // namespace

std::vector<ThreadCoord> Machine::sample_blocks(bool depends_on_ctaid) {
  uint64_t n = launch_.grid.count();
  std::vector<uint64_t> lins{0};
  if (depends_on_ctaid) {
    for (unsigned i = 1; i < opt_.check_blocks; ++i) lins.push_back(i + 1 == opt_.check_blocks ? n - 1 : n * i / opt_.check_blocks);
  }
  std::sort(lins.begin(), lins.end());
  lins.erase(std::unique(lins.begin(), lins.end()), lins.end());
  std::vector<ThreadCoord> out;
  for (uint64_t l : lins) out.push_back({{0, 0, 0}, block_of(l, launch_.grid)});
  return out;
}

std::optional<std::vector<ThreadCoord>> Machine::block_classes(const std::vector<Expr>& exprs,
                                                               std::vector<BlockClass>& block_classes_,
                                                               bool& block_classes_failed_, bool inherit) {
  const Dim3& G = launch_.grid;
  if (block_classes_failed_) return std::nullopt;
  if (block_classes_.empty()) block_classes_.push_back({{0, 0, 0}, {G.x - 1, G.y - 1, G.z - 1}, 0});
  // the comparisons through which the accesses see ctaid; a ctaid Var met outside one: no classes
  std::vector<Expr> atoms;
  std::unordered_set<Expr> seen;
  bool other = false;
  auto vars = tv_.all();
  std::vector<Expr> stack = exprs;
  while (!stack.empty() && !other) {
    Expr e = stack.back();
    stack.pop_back();
    if (!seen.insert(e).second || !sat_.mentions_ctaid(e)) continue;
    bool cmp = (e->op == Op::Ult || e->op == Op::Ule || e->op == Op::Slt || e->op == Op::Sle || e->op == Op::Eq) &&
               e->nargs == 2 && ir::is_bv(e->arg(0)->sort);
    if (cmp) { atoms.push_back(e); continue; }
    if (e->op == Op::Var) { other = true; break; }
    for (Expr x : e->args()) stack.push_back(x);
  }
  // giving up: the sampled blocks inherit the bytes of the classes they were in until now
  auto give_up = [&]() -> std::optional<std::vector<ThreadCoord>> {
    block_classes_failed_ = true;
    if (inherit) for (const auto& blk : sample_blocks(true)) {
      uint64_t b = linear_of(blk.ctaid, G);
      const Dim3& t = blk.ctaid;
      for (const auto& c : block_classes_)
        if (t.x >= c.lo.x && t.x <= c.hi.x && t.y >= c.lo.y && t.y <= c.hi.y && t.z >= c.lo.z && t.z <= c.hi.z) {
          if (auto it = initialized_.find(c.rep); it != initialized_.end() && b != c.rep) initialized_[b] = it->second;
          break;
        }
    }
    return std::nullopt;
  };
  if (other) return give_up();
  ThreadBox tids;
  for (int i = 0; i < 6; ++i) tids[i] = vars[i]->bounds();
  std::vector<BlockClass> refined;
  for (const BlockClass& c : block_classes_) {
    std::vector<std::pair<Dim3, Dim3>> work{{c.lo, c.hi}};
    while (!work.empty()) {
      auto [lo, hi] = work.back();
      work.pop_back();
      ThreadBox box = tids;
      box[3] = {lo.x, hi.x}, box[4] = {lo.y, hi.y}, box[5] = {lo.z, hi.z};
      bool single = lo.x == hi.x && lo.y == hi.y && lo.z == hi.z;
      bool uniform = true;
      for (size_t k = 0; k < atoms.size() && uniform; ++k) uniform = truth_over_box(tv_, atoms[k], box).has_value();
      if (!uniform && !single) {  // halve the widest ctaid range
        uint32_t w[3] = {hi.x - lo.x, hi.y - lo.y, hi.z - lo.z};
        int d = w[0] >= w[1] && w[0] >= w[2] ? 0 : w[1] >= w[2] ? 1 : 2;
        Dim3 mid_hi = hi, mid_lo = lo;
        uint32_t* h = d == 0 ? &mid_hi.x : d == 1 ? &mid_hi.y : &mid_hi.z;
        uint32_t* l = d == 0 ? &mid_lo.x : d == 1 ? &mid_lo.y : &mid_lo.z;
        const uint32_t half = (d == 0 ? lo.x : d == 1 ? lo.y : lo.z) + w[d] / 2;
        *h = half, *l = half + 1;
        work.push_back({mid_lo, hi});
        work.push_back({lo, mid_hi});
        if (refined.size() + work.size() > kMaxBlockClasses) return give_up();
        continue;
      }
      // the new class behaved like c's representative in every earlier epoch: it inherits its bytes
      uint64_t rep = linear_of(lo, G);
      if (inherit && rep != c.rep)
        if (auto it = initialized_.find(c.rep); it != initialized_.end()) initialized_[rep] = it->second;
      refined.push_back({lo, hi, rep});
    }
  }
  block_classes_ = std::move(refined);
  std::vector<ThreadCoord> out;
  for (const auto& c : block_classes_) out.push_back({{0, 0, 0}, block_of(c.rep, G)});
  return out;
}

const std::optional<std::vector<ThreadCoord>>& Machine::bundle_block_classes() {
  std::vector<Expr> preds;
  for (const auto& b : bundles_)
    if (!b.coord) preds.push_back(b.pred);
  auto it = bundle_classes_memo_.find(preds);
  if (it != bundle_classes_memo_.end()) return it->second;
  std::vector<BlockClass> classes;
  bool failed = false;
  auto c = block_classes(preds, classes, failed, false);
  return bundle_classes_memo_.emplace(std::move(preds), std::move(c)).first->second;
}

// Which bundle holds each thread of one block (-1: none alive), by evaluating bundle predicates.
static std::vector<int> holders_of(Machine*, const std::vector<Bundle>& bundles, const ThreadVars& tv, const Dim3& block,
                                   const Dim3& ctaid, bool skip_exited) {
  std::vector<int> holder(block.count(), -1);
  auto vars = tv.all();
  for (size_t bi = 0; bi < bundles.size(); ++bi) {
    const Bundle& b = bundles[bi];
    if (skip_exited && b.state == Bundle::State::Exited) continue;
    if (b.coord) {
      if (linear_of(b.coord->ctaid, tv.grid) != linear_of(ctaid, tv.grid)) continue;
      holder[linear_of(b.coord->tid, block)] = int(bi);
      continue;
    }
    Expr roots[] = {b.pred};
    BvProgram prog(vars, roots);
    if (!prog.ok()) continue;
    for (uint64_t lin = 0; lin < block.count(); ++lin) {
      uint64_t p[6] = {lin % block.x, lin / block.x % block.y, lin / (uint64_t(block.x) * block.y), ctaid.x, ctaid.y, ctaid.z};
      uint64_t r;
      prog.eval(p, &r);
      if (r) holder[lin] = int(bi);
    }
  }
  return holder;
}

void Machine::barrier(std::vector<size_t> group) {
  // Within one block every thread must reach the same barrier: threads waiting at different
  // barriers, or some waiting while others of the block already exited, is a barrier under
  // divergent control flow (CUDA requires __syncthreads to be reached by all or none).
  bool dep = false, any_exited = false;
  std::set<size_t> pcs;
  for (size_t i : group) pcs.insert(bundles_[i].pc);
  for (const auto& b : bundles_) {
    dep = dep || sat_.mentions_ctaid(b.pred);
    any_exited = any_exited || b.state == Bundle::State::Exited;
  }
  std::vector<ThreadCoord> blocks;
  if (pcs.size() > 1 || any_exited) {  // one block per class of blocks whose bundles split alike
    std::optional<std::vector<ThreadCoord>> c;
    if (!concrete_) c = bundle_block_classes();
    blocks = c ? *c : sample_blocks(dep);
    if (!c && !concrete_ && dep && launch_.grid.count() > opt_.check_blocks &&
        reported_.insert("barrier-blocks-sampled").second)
      out_.undecided.push_back(fmt::format(
          "barrier-divergence in {}: the threads' paths depend on the block in ways not split into at most {} classes "
          "of alike blocks; {} of {} blocks checked",
          f_.name, kMaxBlockClasses, std::min<uint64_t>(opt_.check_blocks, launch_.grid.count()), launch_.grid.count()));
  }
  for (const auto& blk : blocks) {
    auto holder = holders_of(this, bundles_, tv_, launch_.block, blk.ctaid, false);
    std::map<size_t, uint64_t> pc_thread;  // barrier pc -> a thread waiting there
    std::optional<std::pair<size_t, uint64_t>> exited;  // (bundle, thread) that exited
    for (uint64_t lin = 0; lin < holder.size(); ++lin) {
      if (holder[lin] < 0) continue;
      const Bundle& hb = bundles_[holder[lin]];
      if (hb.state == Bundle::State::AtBarrier) pc_thread.emplace(hb.pc, lin);
      else if (hb.state == Bundle::State::Exited && !exited) exited = {size_t(holder[lin]), lin};
    }
    if (pc_thread.empty() || (pc_thread.size() == 1 && !exited)) continue;
    auto a = pc_thread.begin();
    const auto& ia = f_.body[a->first];
    std::string key = "barrier-divergence";  // once: later barriers only repeat a broken count
    if (!reported_.insert(key).second) break;
    Finding fd;
    fd.kind = "barrier-divergence";
    fd.kernel = f_.name;
    fd.where = where(ia);
    fd.thread = coord_of(a->second, blk.ctaid);
    if (pc_thread.size() > 1) {
      auto c = std::next(a);
      fd.other = where(f_.body[c->first]);
      fd.other_thread = coord_of(c->second, blk.ctaid);
      fd.message = "threads of one block wait at different barriers";
    } else {
      const Bundle& eb = bundles_[exited->first];
      fd.other = where(f_.body[std::min(eb.pc, f_.body.size() - 1)]);
      fd.other_thread = coord_of(exited->second, blk.ctaid);
      fd.message = "threads of the block wait at a barrier that other threads of the block exited without reaching";
    }
    out_.findings.push_back(std::move(fd));
    break;
  }
  // commit the epoch: pending shared stores become visible
  if (!concrete_) {
    check_shared_epoch();
    ++epoch_;
    std::string name = fmt::format("{}.e{}", ctx_.tensor_name(out_.smem_tensor[0]).substr(0, ctx_.tensor_name(out_.smem_tensor[0]).size() - 3), epoch_);
    out_.smem_tensor.push_back(ctx_.tensor(name));
    out_.epoch_writes.emplace_back();
    for (auto& b : bundles_) b.pending.clear();
    epoch_access_.clear();
    warp_sync_marks_.clear();
  }
  for (size_t i : group) { bundles_[i].state = Bundle::State::Running; ++bundles_[i].pc; }
}

void Machine::check_shared_epoch() {
  if (concrete_ || epoch_access_.empty()) return;
  // Tiled loops repeat the same shared accesses every iteration (same address nodes, new values).
  // Races and uninitialized reads depend only on who touches which bytes in which order, and the
  // initialized set only grows, so an access pattern already checked cannot show anything new.
  uint64_t sig = epoch_access_.size();
  for (const auto& a : epoch_access_)
    for (uint64_t x : {a.pred->hash, a.addr->hash, uint64_t(a.bytes) << 2 | uint64_t(a.write) << 1 | uint64_t(a.atomic),
                       uint64_t(a.where.ptx_line)})
      sig = (sig ^ x) * 0x100000001b3ull + (sig >> 29);
  if (!checked_epochs_.insert(sig).second) return;
  bool dep = false;
  for (const auto& a : epoch_access_) dep = dep || sat_.mentions_ctaid(a.pred) || sat_.mentions_ctaid(a.addr);
  auto vars = tv_.all();
  std::vector<std::unique_ptr<BvProgram>> progs;
  for (const auto& a : epoch_access_) {
    Expr roots[] = {a.pred, a.addr};
    progs.push_back(std::make_unique<BvProgram>(vars, roots));
  }
  const Dim3& B = launch_.block;
  struct Touch { uint32_t lin; uint32_t access; };
  struct Race { Touch w, t; bool cross; Dim3 ctaid; uint64_t byte; };
  std::map<std::pair<int, int>, Race> races;  // (write line, other line) -> example
  std::vector<Expr> exprs;
  for (const auto& a : epoch_access_) exprs.insert(exprs.end(), {a.pred, a.addr});
  auto classes = block_classes(exprs, shared_classes_, shared_classes_failed_, true);
  if (!classes && dep && launch_.grid.count() > opt_.check_blocks && reported_.insert("shared-blocks-sampled").second)
    out_.undecided.push_back(fmt::format(
        "shared-race/uninitialized-shared-read in {}: the shared accesses depend on the block in ways not split into "
        "at most {} classes of alike blocks; {} of {} blocks checked",
        f_.name, kMaxBlockClasses, std::min<uint64_t>(opt_.check_blocks, launch_.grid.count()), launch_.grid.count()));
  for (const auto& blk : classes ? *classes : sample_blocks(dep)) {
    uint64_t blin = linear_of(blk.ctaid, launch_.grid);
    auto& init = initialized_[blin];
    init.resize(out_.smem_bytes, false);
    std::unordered_map<uint64_t, std::vector<Touch>> bytes;  // byte -> touches in seq order
    for (size_t ai = 0; ai < epoch_access_.size(); ++ai) {
      if (!progs[ai]->ok()) continue;
      const auto& acc = epoch_access_[ai];
      for (uint64_t lin = 0; lin < B.count(); ++lin) {
        deadline_.tick("in the shared-memory epoch check");
        uint64_t p[6] = {lin % B.x, lin / B.x % B.y, lin / (uint64_t(B.x) * B.y), blk.ctaid.x, blk.ctaid.y, blk.ctaid.z};
        uint64_t r[2];
        progs[ai]->eval(p, r);
        if (!r[0]) continue;
        for (unsigned k = 0; k < acc.bytes; ++k) bytes[r[1] + k].push_back({uint32_t(lin), uint32_t(ai)});
      }
    }
    for (auto& [byte, touches] : bytes) {
      // races: a write and another access by a different thread in the same epoch; per pair
      // of accesses keep one example, preferring two threads of different warps
      int writers = 0;
      for (const auto& w : touches) {
        if (!epoch_access_[w.access].write) continue;
        if (++writers > 8) break;
        const Touch* same = nullptr;
        const Touch* cross = nullptr;
        bool w_atomic = epoch_access_[w.access].atomic;
        for (const auto& t : touches) {
          if (t.lin == w.lin || (w_atomic && epoch_access_[t.access].atomic)) continue;
          if (t.lin / 32 == w.lin / 32) {  // lanes of one warp: ordered by a __syncwarp between them
            if (!same && warp_epoch_of(t.access) == warp_epoch_of(w.access)) same = &t;
          }
          else if (!cross) { cross = &t; break; }
        }
        const Touch* t = cross ? cross : same;
        if (!t) continue;
        auto key = std::make_pair(epoch_access_[w.access].where.ptx_line, epoch_access_[t->access].where.ptx_line);
        auto it = races.find(key);
        if (it == races.end() || (cross && !it->second.cross))
          races[key] = {w, *t, cross != nullptr, blk.ctaid, byte};
      }
      // uninitialized reads: no earlier epoch wrote the byte and the reader did not write it before
      if (byte < init.size() && !init[byte]) {
        for (const auto& t : touches) {
          const auto& a = epoch_access_[t.access];
          if (a.write && !a.atomic) continue;  // an atomic reads the cell too
          bool own = false;
          for (const auto& u : touches) {
            const auto& ua = epoch_access_[u.access];
            if (u.lin == t.lin && ua.write && !ua.atomic && ua.seq < a.seq) own = true;
          }
          bool other_write = false;
          for (const auto& u : touches) {
            const auto& ua = epoch_access_[u.access];
            if (u.lin != t.lin && ua.write && !(a.atomic && ua.atomic)) other_write = true;
          }
          if (own || other_write) continue;  // other_write is reported as a race
          std::string key = fmt::format("uninitialized-shared-read@{}", a.where.ptx_line);
          if (reported_.insert(key).second) {
            Finding fd;
            fd.kind = "uninitialized-shared-read";
            fd.kernel = f_.name;
            fd.where = a.where;
            fd.thread = coord_of(t.lin, blk.ctaid);
            fd.message = fmt::format("shared byte {} is read before any thread wrote it", byte);
            out_.findings.push_back(std::move(fd));
          }
          break;
        }
      }
    }
    for (auto& [byte, touches] : bytes)
      for (const auto& t : touches)
        if (epoch_access_[t.access].write && byte < init.size()) init[byte] = true;
  }
  // An epoch with a conflict between two warps is a missing __syncthreads (shared-race); one
  // whose conflicts all stay inside warps is warp-synchronous code missing __syncwarp.
  bool any_cross = false;
  for (const auto& [key, r] : races) any_cross = any_cross || r.cross;
  for (const auto& [key, r] : races) {
    if (any_cross && !r.cross) continue;
    std::string kind = r.cross ? "shared-race" : "warp-sync-race";
    if (!reported_.insert(fmt::format("{}@{}:{}", kind, key.first, key.second)).second) continue;
    const auto& a1 = epoch_access_[r.w.access];
    const auto& a2 = epoch_access_[r.t.access];
    Finding fd;
    fd.kind = kind;
    fd.kernel = f_.name;
    fd.where = a1.where;
    fd.other = a2.where;
    fd.thread = coord_of(r.w.lin, r.ctaid);
    fd.other_thread = coord_of(r.t.lin, r.ctaid);
    fd.message = r.cross
                     ? fmt::format("shared byte {} written by one thread and {} by a thread of another warp without a "
                                   "barrier between", r.byte, a2.write ? "written" : "read")
                     : fmt::format("shared byte {} written by one lane and {} by another lane of the same warp without "
                                   "__syncwarp between (warp-synchronous code)", r.byte, a2.write ? "written" : "read");
    out_.findings.push_back(std::move(fd));
  }
}

void Machine::collective_warp(std::vector<size_t> group) {
  const auto& in = f_.body[bundles_[group[0]].pc];
  const Dim3& B = launch_.block;
  uint64_t nthreads = B.count();
  auto c32 = [&](uint64_t v) { return ctx_.bv_const(Sort::BV32, v); };
  bool is_bar = in.op == Opcode::Bar || in.op == Opcode::Barrier;

  // membermask check over the sampled blocks: every lane the mask names must be here
  std::optional<uint64_t> mask;
  int mask_at = in.op == Opcode::Shfl ? 4 : in.op == Opcode::Vote ? 2 : is_bar ? 0 : -1;
  if (mask_at >= 0 && int(in.operands.size()) > mask_at) {
    Expr mv = read(bundles_[group[0]], in.operands[mask_at], Type::B32);
    if (mv->op == Op::ConstBV) mask = mv->bv_value();
  } else if (is_bar && in.operands.empty()) {
    mask = 0xFFFFFFFFu;
  }
  if (mask) {
    bool dep = false;
    for (size_t i : group) dep = dep || sat_.mentions_ctaid(bundles_[i].pred);
    std::set<size_t> in_group(group.begin(), group.end());
    std::vector<ThreadCoord> blocks;
    if (!concrete_) {  // one block per class of blocks whose bundles split alike, as for barriers
      auto c = bundle_block_classes();
      blocks = c ? *c : sample_blocks(dep);
      if (!c && dep && launch_.grid.count() > opt_.check_blocks && reported_.insert("warp-blocks-sampled").second)
        out_.undecided.push_back(fmt::format(
            "shuffle-inactive-lane/shuffle-outside-block in {}: the threads' paths depend on the block in ways not split "
            "into at most {} classes of alike blocks; {} of {} blocks checked",
            f_.name, kMaxBlockClasses, std::min<uint64_t>(opt_.check_blocks, launch_.grid.count()), launch_.grid.count()));
    }
    for (const auto& blk : blocks) {
      auto holder = holders_of(this, bundles_, tv_, B, blk.ctaid, false);
      for (uint64_t lin = 0; lin < nthreads; ++lin) {
        if (holder[lin] < 0 || !in_group.count(size_t(holder[lin]))) continue;
        uint64_t base = lin & ~uint64_t(31);
        // PTX: a thread executing a *.sync collective must be in its own membermask (undefined otherwise)
        if (!(*mask >> (lin & 31) & 1) && reported_.insert("mask-excludes-caller@" + std::to_string(in.loc.ptx_line)).second) {
          Finding fd;
          fd.kind = "mask-excludes-caller";
          fd.kernel = f_.name;
          fd.where = where(in);
          fd.thread = coord_of(lin, blk.ctaid);
          fd.message = fmt::format("membermask 0x{:08x} does not name lane {}, which executes the collective (undefined "
                                   "behaviour)", *mask, lin & 31);
          out_.findings.push_back(std::move(fd));
        }
        for (unsigned l = 0; l < 32; ++l) {
          if (!(*mask >> l & 1)) continue;
          uint64_t p = base + l;
          std::string kind;
          if (p >= nthreads) kind = "shuffle-outside-block";
          else if (holder[p] < 0 || !in_group.count(size_t(holder[p]))) kind = "shuffle-inactive-lane";
          if (kind.empty()) continue;
          std::string key = kind + "@" + std::to_string(in.loc.ptx_line);
          if (!reported_.insert(key).second) continue;
          Finding fd;
          fd.kind = kind;
          fd.kernel = f_.name;
          fd.where = where(in);
          fd.thread = coord_of(lin, blk.ctaid);
          if (p < nthreads) fd.other_thread = coord_of(p, blk.ctaid);
          fd.message = fmt::format("membermask 0x{:08x} names lane {} which {}", *mask, l,
                                   p >= nthreads ? "lies outside the block" : "does not execute this instruction");
          out_.findings.push_back(std::move(fd));
        }
      }
    }
  }

  if (is_bar) {
    // __syncwarp: commit the epoch for the values its lanes read; the race window stays open
    // for other warps until the next block barrier
    if (!concrete_) {
      check_shared_epoch();
      ++epoch_;
      std::string base(ctx_.tensor_name(out_.smem_tensor[0]));
      out_.smem_tensor.push_back(ctx_.tensor(base.substr(0, base.size() - 3) + ".e" + std::to_string(epoch_)));
      out_.epoch_writes.emplace_back();
      for (auto& b : bundles_) b.pending.clear();
      warp_sync_marks_.push_back(epoch_access_.size());  // accesses stay: other warps are not ordered by it
    }
    for (size_t i : group) { bundles_[i].state = Bundle::State::Running; ++bundles_[i].pc; }
    return;
  }

  // concrete lookup: (block, linear tid) -> bundle
  std::map<std::pair<uint64_t, uint64_t>, size_t> by_thread;
  if (concrete_)
    for (size_t i : group)
      by_thread[{linear_of(bundles_[i].coord->ctaid, launch_.grid), linear_of(bundles_[i].coord->tid, B)}] = i;

  struct Arm { Expr valid, value; };
  // One substitution tid -> partner(plin) per partner expression, shared by every reading bundle:
  // symbolic readers have the same plin, and the senders' values share most of their DAG.
  std::unordered_map<Expr, ir::Substituter> to_partner;
  auto partner_subst = [&](Expr plin) -> ir::Substituter& {
    auto it = to_partner.find(plin);
    if (it == to_partner.end())
      it = to_partner.emplace(plin, tid_substituter(tid_of_linear(plin))).first;
    return it->second;
  };
  // Values of operand `o` held by the thread `plin` (same block) among the group, as arms.
  auto partner_arms = [&](Bundle& R, Expr cond, Expr plin, const Operand& o, Type ty, bool& complete) {
    std::vector<Arm> arms;
    complete = false;
    if (concrete_) {
      if (plin->op != Op::ConstBV) throw Unsupported("non-constant shuffle partner in concrete mode");
      auto it = by_thread.find({linear_of(R.coord->ctaid, launch_.grid), plin->bv_value()});
      if (it != by_thread.end()) {
        arms.push_back({ctx_.bool_const(true), read(bundles_[it->second], o, ty)});
        complete = true;
      }
      return arms;
    }
    ir::Substituter& to_p = partner_subst(plin);
    Expr inblock = ctx_.ult(plin, c32(nthreads));
    std::vector<Expr> covered;
    for (size_t si : group) {
      deadline_.check("");  // each partner substitutes thread ids through whole expressions
      Bundle& S = bundles_[si];
      Expr valid = ctx_.and_(inblock, to_p(S.pred));
      if (!sat(ctx_.and_(cond, valid))) continue;
      arms.push_back({valid, to_p(read(S, o, ty))});
      covered.push_back(valid);
      // the arms so far cover every reader: the last one needs no condition
      if (!sat(ctx_.and_(cond, ctx_.not_(ctx_.or_(covered))))) { complete = true; break; }
    }
    return arms;
  };
  auto combine = [&](std::vector<Arm>& arms, bool complete, Sort s) {
    Expr acc = complete ? arms.back().value : ctx_.undef(s);
    for (size_t k = arms.size() - (complete ? 1 : 0); k-- > 0;) {
      if (arms[k].value->sort != s) throw Unsupported("warp exchange between values of different sorts");
      acc = ctx_.ite(arms[k].valid, arms[k].value, acc);
    }
    return acc;
  };

  std::vector<std::vector<std::pair<Operand, Expr>>> results(group.size());
  for (size_t gi = 0; gi < group.size(); ++gi) {
    Bundle& R = bundles_[group[gi]];
    Expr lin = linear_tid(special(R, "%tid.x"), special(R, "%tid.y"), special(R, "%tid.z"));
    Expr lane = ctx_.bv_and(lin, c32(31));
    Expr warp_base = ctx_.bv_sub(lin, lane);
    if (in.op == Opcode::Shfl) {
      Type ty = in.mod.types.empty() ? Type::B32 : in.mod.types[0];
      Expr own = read_raw(R, in.operands.at(1), ty);
      if (own->sort != Sort::Real) own = read(R, in.operands[1], ty);
      Type vty = own->sort == Sort::Real ? Type::F32 : ty;
      Expr bv = read(R, in.operands.at(2), Type::U32), cv = read(R, in.operands.at(3), Type::U32);
      if (cv->op != Op::ConstBV) unsupported(in, "shuffle with a non-constant clamp operand");
      uint64_t c = cv->bv_value(), seg = (c >> 8) & 31, clamp = c & 31;
      Expr max_lane = ctx_.bv_or(ctx_.bv_and(lane, c32(seg)), c32(clamp & ~seg & 31));
      Expr min_lane = ctx_.bv_and(lane, c32(seg));
      Expr j, p;
      switch (in.mod.shfl) {
        case ptx::ShflMode::Up: j = ctx_.bv_sub(lane, bv); p = ctx_.sle(max_lane, j); break;
        case ptx::ShflMode::Down: j = ctx_.bv_add(lane, bv); p = ctx_.sle(j, max_lane); break;
        case ptx::ShflMode::Bfly: j = ctx_.bv_xor(lane, bv); p = ctx_.sle(j, max_lane); break;
        case ptx::ShflMode::Idx: j = ctx_.bv_or(min_lane, ctx_.bv_and(bv, c32(~seg & 0xFFFFFFFFu))); p = ctx_.sle(j, max_lane); break;
        default: unsupported(in, "shuffle mode");
      }
      if (!concrete_ && nthreads % 32 != 0) {
        // a partner lane past the end of the block (a partial last warp) holds no value
        Expr past = ctx_.and_(ctx_.and_(R.pred, p), ctx_.ule(c32(nthreads), ctx_.bv_add(warp_base, j)));
        if (sat(past)) {
          std::string key = "shuffle-outside-block@" + std::to_string(in.loc.ptx_line);
          if (reported_.insert(key).second) {
            Finding fd;
            fd.kind = "shuffle-outside-block";
            fd.kernel = f_.name;
            fd.where = where(in);
            fd.thread = sat_.witness(past);
            fd.message = "a lane reads its shuffle partner from past the end of the block (partial last warp)";
            out_.findings.push_back(std::move(fd));
          }
        }
      }
      Expr result;
      bool any_in = sat(ctx_.and_(R.pred, p)), any_out = sat(ctx_.and_(R.pred, ctx_.not_(p)));
      if (!any_in) result = own;
      else {
        bool complete;
        auto arms = partner_arms(R, ctx_.and_(R.pred, p), ctx_.bv_add(warp_base, j), in.operands[1], vty, complete);
        Expr pv = combine(arms, complete, own->sort);
        result = any_out ? ctx_.ite(p, pv, own) : pv;
      }
      const Operand& d = in.operands[0];
      if (d.kind == Operand::Kind::Pair) {
        results[gi].push_back({d.elements.at(0), result});
        results[gi].push_back({d.elements.at(1), p});
      } else {
        results[gi].push_back({d, result});
      }
    } else if (in.op == Opcode::Vote || in.op == Opcode::Activemask) {
      bool ballot = in.op == Opcode::Activemask || in.mod.vote == ptx::VoteMode::Ballot;
      if (in.op == Opcode::Vote && in.mod.vote == ptx::VoteMode::Uni) unsupported(in, "vote.uni");
      std::vector<Expr> bits, alls, anys;
      for (unsigned l = 0; l < 32; ++l) {
        bool complete;
        Operand po;
        bool use_pred = in.op == Opcode::Vote;
        if (use_pred) po = in.operands.at(1);
        Expr plin = ctx_.bv_add(warp_base, c32(l));
        std::vector<Arm> arms;
        if (use_pred) arms = partner_arms(R, R.pred, plin, po, Type::Pred, complete);
        else {
          Operand t; t.kind = Operand::Kind::Int; t.int_value = 1;
          arms = partner_arms(R, R.pred, plin, t, Type::Pred, complete);
        }
        std::vector<Expr> act, on;
        for (auto& a : arms) { act.push_back(a.valid); on.push_back(ctx_.and_(a.valid, a.value)); }
        Expr active = ctx_.or_(act), bit = ctx_.or_(on);
        bits.push_back(ctx_.ite(bit, c32(uint64_t(1) << l), c32(0)));
        anys.push_back(bit);
        alls.push_back(ctx_.or_(ctx_.not_(active), bit));
      }
      Expr r = ballot ? ctx_.bv_or(bits) : in.mod.vote == ptx::VoteMode::Any ? ctx_.or_(anys) : ctx_.and_(alls);
      results[gi].push_back({in.operands[0], r});
    } else {
      unsupported(in, "warp-level instruction");
    }
  }
  for (size_t gi = 0; gi < group.size(); ++gi) {
    Bundle& R = bundles_[group[gi]];
    for (auto& [d, v] : results[gi]) write(R, d, v);
    R.state = Bundle::State::Running;
    ++R.pc;
  }
}

}  // namespace dirigo::exec
