// State merging at the reconvergence point of a thread-identity split.
//
// A thread-identity branch whose region ahead (up to its reconvergence point, find_if_region with
// loops allowed) has no return, barrier or warp collective splits the bundle as usual, but both
// halves remember the point. Each half runs the region on its own (loops with concrete counters,
// nested branches split or if-convert), and when both wait there with the same non-register state
// they become one bundle again: every register r = ite(cond, r_taken, r_other), the domain the one
// before the split. Exact: each half's register values are those of its threads, and the ite
// selects by the very predicate that split them. Transposed convolutions test every kernel tap
// (`if (ih in range) for (kw...)`); splitting without merging gives one bundle per combination of
// valid taps (> 4096), merging keeps it at one or two.
#include "exec/machine.h"

#include <cstdlib>

#include <fmt/format.h>

namespace dirigo::exec {

using ir::Expr;
using ir::Op;

bool Machine::mark_merge(Bundle& yes, Bundle& no, const ptx::Instruction& in, Expr cond, Expr pred_before) {
  if (yes.conv) return false;  // inside a data region: its guard bookkeeping is per bundle
  auto it = merge_regions_.find(yes.pc);
  if (it == merge_regions_.end()) it = merge_regions_.emplace(yes.pc, find_if_region(f_, rollup_, yes.pc, true)).first;
  if (!it->second.refusal.empty()) return false;
  (void)in;
  uint64_t id = next_merge_id_++;
  yes.merges.push_back({it->second.end, id, cond, pred_before, true});
  no.merges.push_back({it->second.end, id, cond, pred_before, false});
  return true;
}

bool Machine::at_merge_point(Bundle& b) {
  if (b.merges.empty() || b.pc != b.merges.back().end) return false;
  if (b.conv) {
    ifconv_enter(b);  // a data region ending here closes first
    if (b.conv) unsupported(f_.body[b.pc], "if-converted region crosses the reconvergence point of a thread split");
  }
  b.state = Bundle::State::AtMerge;
  return true;
}

bool Machine::merge_pair(Bundle& yes, Bundle& no, Expr cond) {
  auto debug = [&](const char* why) {
    if (std::getenv("DIRIGO_MERGE_DEBUG")) fmt::print(stderr, "merge refused at PTX line {}: {}\n", f_.body[yes.pc].loc.ptx_line, why);
    return false;
  };
  if (yes.pc != no.pc || yes.conv || no.conv || yes.own_global.size() != no.own_global.size() ||
      yes.pending.size() != no.pending.size() || yes.local.size() != no.local.size())
    return debug("different memory state");
  for (size_t i = 0; i < yes.own_global.size(); ++i)
    if (yes.own_global[i].index != no.own_global[i].index || yes.own_global[i].value != no.own_global[i].value) return false;
  for (size_t i = 0; i < yes.pending.size(); ++i)
    if (yes.pending[i].seq != no.pending[i].seq) return false;
  std::map<uint64_t, std::pair<Expr, unsigned>> local;
  for (auto a = yes.local.begin(), c = no.local.begin(); a != yes.local.end(); ++a, ++c) {
    if (a->first != c->first || a->second.second != c->second.second || a->second.first->sort != c->second.first->sort)
      return false;
    local[a->first] = {ctx_.ite(cond, a->second.first, c->second.first), a->second.second};
  }
  size_t n = std::max(yes.regs.size(), no.regs.size());
  yes.regs.resize(n, nullptr);
  no.regs.resize(n, nullptr);
  auto value = [&](Bundle& b, size_t s) -> Expr {  // materializes a pending float sum
    if (auto it = b.sums.find(int(s)); it != b.sums.end())
      return ctx_.add(std::span<const Expr>(it->second.terms->data(), it->second.n));
    return b.regs[s];
  };
  std::vector<Expr> regs(n);
  for (size_t s = 0; s < n; ++s) {
    if (!live_at(yes.pc, int(s))) continue;  // dead here: no ite (and no Undef arm) needed
    Expr a = value(yes, s), c = value(no, s);
    if (a == c) { regs[s] = a; continue; }
    if (!a) a = ctx_.undef(c->sort);
    if (!c) c = ctx_.undef(a->sort);
    if (a->sort != c->sort || packed_.count(a) || packed_.count(c)) return debug("register sorts differ");
    regs[s] = ctx_.ite(cond, a, c);
  }
  yes.regs = std::move(regs);
  yes.sums.clear();
  yes.local = std::move(local);
  return true;
}

bool Machine::live_at(size_t pc, int slot_index) {
  if (live_in_.empty()) {
    // backward dataflow over the body: a guarded write does not kill, an unknown form defines nothing
    size_t n = f_.body.size();
    std::vector<std::vector<int>> uses(n), defs(n);
    std::vector<std::vector<size_t>> succ(n);
    for (size_t i = 0; i < n; ++i) {
      const auto& in = f_.body[i];
      int nd = in.op == ptx::Opcode::Call ? 0 : std::max(0, ptx::opcode_info(in.op).num_dests);
      std::vector<std::pair<const ptx::Operand*, bool>> todo;
      for (size_t k = 0; k < in.operands.size(); ++k) todo.push_back({&in.operands[k], int(k) < nd});
      while (!todo.empty()) {
        auto [o, is_def] = todo.back();
        todo.pop_back();
        bool reg = o->kind == ptx::Operand::Kind::Register || (o->kind == ptx::Operand::Kind::Address && o->base_is_register);
        if (reg && f_.register_type(o->name)) (is_def && o->kind == ptx::Operand::Kind::Register ? defs : uses)[i].push_back(slot(o->name));
        for (const auto& e : o->elements) todo.push_back({&e, is_def});
      }
      if (in.guard) {
        if (f_.register_type(in.guard->reg)) uses[i].push_back(slot(in.guard->reg));
        defs[i].clear();
      }
      bool jumps = in.op == ptx::Opcode::Bra;
      if (jumps) {
        auto it = f_.labels.find(in.operands.empty() ? std::string() : in.operands[0].name);
        if (it != f_.labels.end()) succ[i].push_back(it->second);
      }
      bool ends = in.op == ptx::Opcode::Ret || in.op == ptx::Opcode::Exit || in.op == ptx::Opcode::Trap;
      if ((in.guard || (!jumps && !ends)) && i + 1 < n) succ[i].push_back(i + 1);
    }
    size_t words = (slot_types_.size() + 63) / 64;
    live_in_.assign(n + 1, std::vector<uint64_t>(words, 0));
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = n; i-- > 0;) {
        std::vector<uint64_t> live(words, 0);
        for (size_t t : succ[i]) for (size_t w = 0; w < words; ++w) live[w] |= live_in_[t][w];
        for (int d : defs[i]) live[size_t(d) / 64] &= ~(uint64_t(1) << (d % 64));
        for (int u : uses[i]) live[size_t(u) / 64] |= uint64_t(1) << (u % 64);
        if (live != live_in_[i]) { live_in_[i] = std::move(live); changed = true; }
      }
    }
  }
  if (pc >= live_in_.size() || size_t(slot_index) / 64 >= live_in_[pc].size()) return true;  // unknown: live
  return (live_in_[pc][size_t(slot_index) / 64] >> (slot_index % 64)) & 1;
}

bool Machine::merge_waiting(bool force) {
  // bundles still carrying a frame id without waiting at it
  std::unordered_map<uint64_t, int> busy;
  std::map<uint64_t, std::vector<size_t>> waiting;
  for (size_t i = 0; i < bundles_.size(); ++i) {
    const Bundle& b = bundles_[i];
    if (b.state == Bundle::State::Exited) {
      if (!b.merges.empty() && std::getenv("DIRIGO_MERGE_DEBUG"))
        fmt::print(stderr, "exited with merge frames at pc {} (PTX line {}), end '{}'\n", b.pc,
                   f_.body[std::min(b.pc, f_.body.size() - 1)].loc.ptx_line, out_.bundles[b.info].end);
      continue;
    }
    bool top_waiting = b.state == Bundle::State::AtMerge;
    for (size_t k = 0; k < b.merges.size(); ++k) {
      bool waits_here = top_waiting && k + 1 == b.merges.size();
      if (waits_here) waiting[b.merges[k].id].push_back(i);
      else ++busy[b.merges[k].id];
    }
  }
  bool progress = false;
  std::vector<bool> drop(bundles_.size(), false);
  for (auto& [id, members] : waiting) {
    if (busy.count(id) && !force) continue;
    bool merged = false;
    if (members.size() == 2) {
      Bundle& a = bundles_[members[0]];
      Bundle& c = bundles_[members[1]];
      Bundle& yes = a.merges.back().yes ? a : c;
      Bundle& no = a.merges.back().yes ? c : a;
      if (yes.merges.back().yes && !no.merges.back().yes && merge_pair(yes, no, yes.merges.back().cond)) {
        Expr before = yes.merges.back().pred_before;
        yes.pred = before;
        out_.bundles[yes.info].pred = before;
        out_.bundles[no.info].pred = ctx_.bool_const(false);  // its threads continue in `yes`
        out_.bundles[no.info].end = "merged";
        drop[&no == &a ? members[0] : members[1]] = true;
        ++out_.merged;
        merged = true;
      }
    }
    if (!merged && std::getenv("DIRIGO_MERGE_DEBUG")) {
      fmt::print(stderr, "merge id {} at pc {} (PTX line {}): {} members, not merged (force {}, busy {}, depth {}, live {})\n", id,
                 bundles_[members[0]].pc, f_.body[bundles_[members[0]].pc].loc.ptx_line, members.size(), force,
                 busy.count(id) ? busy[id] : 0, bundles_[members[0]].merges.size(), bundles_.size());
    }
    for (size_t i : members) {  // merged or not (an exited half, a differing store): go on
      bundles_[i].merges.pop_back();
      bundles_[i].state = Bundle::State::Running;
    }
    progress = true;
  }
  if (progress) {
    std::vector<Bundle> kept;
    kept.reserve(bundles_.size());
    for (size_t i = 0; i < bundles_.size(); ++i)
      if (!drop[i]) kept.push_back(std::move(bundles_[i]));
    bundles_ = std::move(kept);
  }
  return progress;
}

}  // namespace dirigo::exec
