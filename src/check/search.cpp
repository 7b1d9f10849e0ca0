#include "check/search.h"

#include <algorithm>
#include <utility>

#include "exec/deadline.h"
#include "exec/sat.h"
#include "ir/walk.h"

namespace dirigo::check {

LocationOrder::LocationOrder(ir::Context& ctx, const std::vector<program::OutputPair>& outputs, const Lowering& cand,
                             uint64_t seed, bool full, std::chrono::steady_clock::time_point deadline,
                             const std::vector<std::pair<size_t, int64_t>>& only)
    : full_(full), only_(!only.empty()), rng_(seed) {
  for (const auto& o : outputs) {
    int64_t n = 1;
    for (int64_t d : o.cand.shape) n *= d;
    offsets_.push_back(total_);
    numel_.push_back(n);
    shapes_.push_back(o.cand.shape);
    total_ += n;
  }
  if (only_) {
    for (auto [o, flat] : only)
      if (o < numel_.size()) add_prefix(o, flat, Tier::Sequential);
    return;
  }
  if (full) return;  // --full visits every location in order; no prefix needed
  add_launch_locations(ctx, outputs, cand, deadline);
  for (size_t o = 0; o < numel_.size(); ++o) {
    if (numel_[o] == 0) continue;
    add_prefix(o, 0, Tier::Boundary);
    add_prefix(o, numel_[o] - 1, Tier::Boundary);
  }
}

void LocationOrder::add_prefix(size_t output, int64_t flat, Tier tier) {
  if (flat < 0 || flat >= numel_[output]) return;
  if (!seen_.insert(offsets_[output] + flat).second) return;
  prefix_.push_back({output, flat, unravel(shapes_[output], flat), tier});
}

// Corners and path conditions of every candidate launch, later kernels first. A write into
// an output's storage names its location directly; a write into an intermediate tensor is
// mapped to the output location at the same relative position (a heuristic: the bug that a
// corner thread exposes usually sits at the same end of every tensor downstream).
void LocationOrder::add_launch_locations(ir::Context& ctx, const std::vector<program::OutputPair>& outputs,
                                         const Lowering& cand, std::chrono::steady_clock::time_point deadline) {
  const auto& launches = cand.launches();
  const auto& prog = cand.program();
  exec::Deadline dl(deadline);  // ticked by the satisfiability enumeration; checked per write below
  try {
    for (size_t li = launches.size(); li-- > 0;) add_launch(ctx, outputs, cand, launches[li], prog, dl);
  } catch (const exec::TimeLimit&) {
    stopped_ = "the budget ran out while choosing corner and path-condition locations";
  }
}

void LocationOrder::add_launch(ir::Context& ctx, const std::vector<program::OutputPair>& outputs, const Lowering& cand,
                               const LaunchInfo& L, const program::SsaProgram& prog, exec::Deadline& dl) {
  {
    const exec::ExecResult& r = *L.result;
    if (r.unsupported) return;
    const exec::Dim3 b = r.launch.block, g = r.launch.grid;
    auto coord = [](uint64_t linear, const exec::Dim3& d) {
      return exec::Dim3{uint32_t(linear % d.x), uint32_t((linear / d.x) % d.y), uint32_t(linear / (uint64_t(d.x) * d.y))};
    };
    std::vector<std::pair<exec::ThreadCoord, Tier>> threads;
    for (uint64_t t : {uint64_t(0), b.count() - 1})
      for (uint64_t c : {uint64_t(0), g.count() - 1}) threads.push_back({{coord(t, b), coord(c, g)}, Tier::Corner});
    for (uint64_t t : {uint64_t(31), uint64_t(32)})
      if (t < b.count()) threads.push_back({{coord(t, b), coord(0, g)}, Tier::Corner});
    // One satisfying thread per bundle that writes.
    exec::ThreadVars tv(ctx, b, g);
    exec::ThreadSat sat(ctx, tv, uint64_t(1) << 20);
    sat.set_deadline(&dl);
    for (const auto& bi : r.bundles) {
      dl.check("");
      if (bi.writes.empty()) continue;
      if (auto w = sat.witness(bi.pred)) threads.push_back({*w, Tier::PathCondition});
    }
    for (const auto& [thread, tier] : threads) {
      for (const auto& wr : r.writes) {
        dl.check("");  // Resolver::specialize itself does not look at the clock
        ir::Expr p = L.resolver->specialize(wr.pred, thread);
        if (p->op != ir::Op::ConstBool || !p->bool_value()) continue;
        ir::Expr idx = L.resolver->specialize(wr.index, thread);
        if (idx->op != ir::Op::ConstBV) continue;
        int64_t j = int64_t(idx->bv_value());
        auto after = L.after.find(wr.tensor);
        if (after == L.after.end()) continue;
        int32_t storage = prog.value(after->second).storage;
        int64_t storage_elems = 0;
        for (size_t o = 0; o < outputs.size(); ++o) {
          const program::View& ov = outputs[o].cand;
          if (prog.value(ov.value).storage == storage) {
            int64_t l = logical_of_storage(ov, j);
            if (l >= 0) add_prefix(o, l, tier);
            continue;
          }
          if (!storage_elems) {
            unsigned es = bundle::element_size(ov.dtype);
            storage_elems = std::max<int64_t>(1, prog.storages[size_t(storage)].nbytes / es);
          }
          double frac = double(j) / double(storage_elems);
          add_prefix(o, std::min<int64_t>(numel_[o] - 1, int64_t(frac * double(numel_[o]))), tier);
        }
      }
    }
  }
}

std::optional<Location> LocationOrder::next() {
  if (prefix_pos_ < prefix_.size()) return prefix_[prefix_pos_++];
  while (!only_ && drawn_ < total_) {
    int64_t id;
    if (full_) {
      id = drawn_++;
    } else {
      // Sparse Fisher-Yates step: pick k in [drawn_, total_), swap it with drawn_.
      std::uniform_int_distribution<int64_t> pick(drawn_, total_ - 1);
      int64_t k = pick(rng_);
      auto get = [&](int64_t i) { auto it = swapped_.find(i); return it == swapped_.end() ? i : it->second; };
      id = get(k);
      swapped_[k] = get(drawn_);
      swapped_.erase(drawn_);
      ++drawn_;
    }
    if (!full_ && seen_.count(id)) continue;
    size_t o = size_t(std::upper_bound(offsets_.begin(), offsets_.end(), id) - offsets_.begin()) - 1;
    int64_t flat = id - offsets_[o];
    return Location{o, flat, unravel(shapes_[o], flat), full_ ? Tier::Sequential : Tier::Random};
  }
  return std::nullopt;
}

namespace {
uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

struct LeafHash {
  size_t operator()(const std::pair<int32_t, int64_t>& k) const { return std::hash<int64_t>()(k.second * 1000003 + k.first); }
};
}  // namespace

PairKey renamed_pair_key(ir::Expr ea, ir::Expr eb) {
  std::unordered_map<ir::Expr, std::pair<uint64_t, uint64_t>> memo;
  std::unordered_map<std::pair<int32_t, int64_t>, uint64_t, LeafHash> leaf_no;
  std::unordered_map<int32_t, uint64_t> tensor_no;  // Load: the tensor, renamed too
  // operands pushed last to first, so that they are numbered first to last
  // a reversed view by hand: clang 14 (the sanitizer build) cannot use libstdc++ 12's std::views::reverse
  struct Reversed {
    decltype(std::declval<ir::Expr>()->args()) a;
    auto begin() const { return a.rbegin(); }
    auto end() const { return a.rend(); }
  };
  auto reversed_args = [](ir::Expr e) { return Reversed{e->args()}; };
  auto has = [&](ir::Expr e) { return memo.count(e) > 0; };
  for (ir::Expr root : {ea, eb}) {
    ir::walk_post_order(root, reversed_args, has, [](ir::Expr) { return false; }, [&](ir::Expr e) {
      uint64_t h1 = mix(uint64_t(e->op) * 131 + uint64_t(e->sort), e->flags);
      uint64_t h2 = mix(h1 ^ 0x5bd1e995, e->nargs);
      if (e->op == ir::Op::TensorElem) {
        auto [it, fresh] = leaf_no.try_emplace({e->tensor(), e->index()}, leaf_no.size());
        h1 = mix(h1, 0x1000 + it->second);
        h2 = mix(h2, 0x2000 + it->second);
      } else if (e->is_leaf()) {
        h1 = mix(h1, e->hash);  // constants, variables: as they are
        h2 = mix(h2, e->hash * 31 + 7);
      } else {
        if (e->op == ir::Op::Load) {
          auto [it, fresh] = tensor_no.try_emplace(e->tensor(), tensor_no.size());
          h1 = mix(h1, 0x3000 + it->second);
          h2 = mix(h2, 0x4000 + it->second);
        }
        h1 = mix(h1, e->u);
        h2 = mix(h2, e->v);
        for (ir::Expr c : e->args()) {
          const auto& hc = memo.at(c);
          h1 = mix(h1, hc.first);
          h2 = mix(h2, hc.second);
        }
      }
      memo.emplace(e, std::make_pair(h1, h2));
    });
  }
  const auto& ha = memo.at(ea);
  const auto& hb = memo.at(eb);
  return {mix(ha.first, hb.first), mix(ha.second ^ 0xabcdef, hb.second)};
}

}  // namespace dirigo::check
