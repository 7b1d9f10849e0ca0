// Synchronization family: barrier removal and weakening, shuffle mask and offset faults,
// shuffle direction changes, volatile removal on warp-synchronous shared memory, atomics
// made plain, shared memory made thread-local, fences removed.
#include "mutate/rules_util.h"

namespace dirigo::mutate::rules {
namespace {

const std::vector<std::string>& mask_intrinsics() {
  static const std::vector<std::string> v = {"__shfl_sync", "__shfl_down_sync", "__shfl_up_sync", "__shfl_xor_sync",
                                             "__ballot_sync", "__all_sync", "__any_sync", "__reduce_add_sync",
                                             "__reduce_max_sync", "__reduce_min_sync", "__match_any_sync"};
  return v;
}

// Argument `k` of every shuffle call rewritten by f(text) (empty = skip).
Finder shfl_arg(size_t k, std::function<std::string(const SourceModel&, TokRange)> f) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (std::string name : {"__shfl_sync", "__shfl_down_sync", "__shfl_up_sync", "__shfl_xor_sync"})
      for (const auto& c : m.calls(name)) {
        if (!m.in_device(c.name_tok) || c.args.size() <= k) continue;
        std::string t = f(m, c.args[k]);
        if (!t.empty()) out.push_back(replace_tokens(m, c.args[k].first, c.args[k].second, t));
      }
  };
}

bool in_device_signature(const SourceModel& m, int i) {
  for (const auto& f : m.functions())
    if (f.device_code() && f.lparen < i && i < f.rparen) return true;
  return false;
}

}  // namespace

void add_synchronization(std::vector<Rule>& out) {
  RuleList r{out, "synchronization"};
  r.add("syncthreads-remove", "barrier removal: a __syncthreads(); statement is removed", call_remove("__syncthreads"));
  r.add("syncwarp-remove", "a __syncwarp(); statement is removed", call_remove("__syncwarp"));
  r.add("syncwarp-weaken", "__syncwarp(...) synchronizes only lanes 0-15", call_rewrite("__syncwarp", [](const std::vector<std::string>& a) {
          return std::string("__syncwarp(0x0000ffff)");
        }, 0, 1));
  r.add("syncthreads2syncwarp", "block barrier weakened to a warp barrier", call_rename("__syncthreads", "__syncwarp"));
  r.add("threadfence-remove", "a __threadfence(); statement is removed", [](const SourceModel& m, std::vector<Site>& out) {
    call_remove("__threadfence")(m, out);
    call_remove("__threadfence_block")(m, out);
  });
  r.add("shfl-mask-half", "warp mask 0xffffffff becomes 0x0000ffff in a *_sync intrinsic", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& name : mask_intrinsics())
      for (const auto& c : m.calls(name))
        if (m.in_device(c.name_tok) && !c.args.empty() && is_full_mask(m, c.args[0].first, c.args[0].second))
          out.push_back(replace_tokens(m, c.args[0].first, c.args[0].second, "0x0000ffff"));
  });
  r.add("shfl-offset-double", "shuffle offset/lane o becomes o * 2", shfl_arg(2, [](const SourceModel& m, TokRange a) {
          return paren(m, a.first, a.second) + " * 2";
        }));
  r.add("shfl-offset-halve", "shuffle offset/lane o becomes o / 2", shfl_arg(2, [](const SourceModel& m, TokRange a) {
          return paren(m, a.first, a.second) + " / 2";
        }));
  r.add("shfl-down2up", "__shfl_down_sync becomes __shfl_up_sync", call_rename("__shfl_down_sync", "__shfl_up_sync"));
  r.add("shfl-xor2down", "__shfl_xor_sync becomes __shfl_down_sync (butterfly becomes tree)", call_rename("__shfl_xor_sync", "__shfl_down_sync"));
  r.add("vote-all2any", "__all_sync becomes __any_sync", call_rename("__all_sync", "__any_sync"));
  r.add("volatile-remove", "volatile removed (warp-synchronous shared memory may be cached in registers)", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 1 < m.size(); ++i)
      if (m.is(i, "volatile") && (m.in_device(i) || in_device_signature(m, i)))
        out.push_back(make_site(m, i, {Edit{m.tok(i).offset, m.tok(i + 1).offset, ""}}));
  });
  r.add("atomic2plain", "atomicAdd(p, v) becomes a racy (*(p) += (v))", call_rewrite("atomicAdd", [](const std::vector<std::string>& a) {
          return "(*(" + a[0] + ") += " + a[1] + ")";
        }, 2, 2));
  r.add("atomicadd2exch", "atomicAdd becomes atomicExch (lost accumulation)", call_rename("atomicAdd", "atomicExch"));
  r.add("shared2local", "__shared__ removed: the buffer becomes per-thread", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 1 < m.size(); ++i)
      if (m.is(i, "__shared__") && m.in_device(i) && !m.is(i - 1, "extern"))
        out.push_back(make_site(m, i, {Edit{m.tok(i).offset, m.tok(i + 1).offset, ""}}));
  });
}

}  // namespace dirigo::mutate::rules
