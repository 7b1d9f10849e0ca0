// Results for the check stage: specializing write values to a concrete thread, resolving lazy
// shared-memory reads, and inverting write records for a concrete output element.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "exec/deadline.h"
#include "exec/exec.h"
#include "exec/interval.h"
#include "exec/inffold.h"
#include "exec/sat.h"
#include "ir/bits.h"
#include "ir/walk.h"

namespace dirigo::exec {

using ir::Expr;
using ir::Op;
using ir::Sort;

namespace {
std::vector<uint64_t> point_of(const ThreadCoord& t) {
  return {t.tid.x, t.tid.y, t.tid.z, t.ctaid.x, t.ctaid.y, t.ctaid.z};
}
ThreadCoord coord_of_point(const uint64_t* p) {
  return {{uint32_t(p[0]), uint32_t(p[1]), uint32_t(p[2])}, {uint32_t(p[3]), uint32_t(p[4]), uint32_t(p[5])}};
}
}  // namespace

ThreadOnlySplit split_thread_only(Expr root, const std::vector<Expr>& thread_vars) {
  ThreadOnlySplit out;
  auto& thread_only = out.thread_only;
  ir::post_order(root, [&](Expr x) { return thread_only.count(x) > 0; }, [&](Expr x) {
    bool t = x->sort == Sort::Bool || ir::is_bv(x->sort);
    if (x->op == Op::Var) t = t && std::find(thread_vars.begin(), thread_vars.end(), x) != thread_vars.end();
    else if (x->nargs == 0) t = t && x->is_const();
    else if (x->op == Op::Load) t = false;
    for (Expr a : x->args()) t = t && thread_only.at(a);
    thread_only.emplace(x, t);
    out.post.push_back(x);
  });
  return out;
}

struct Resolver::Impl {
  ir::Context& ctx;
  const ExecResult& r;
  ThreadVars tv;
  std::unordered_map<int32_t, int> epoch_of;
  // One shared cell in one epoch of one block: its last plain store and the atomic updates.
  struct Cell {
    int32_t plain = -1;
    uint32_t plain_lin = 0;
    std::vector<std::pair<uint32_t, uint32_t>> atomics;  // (write, thread), in issue order
  };
  std::map<std::pair<int, uint64_t>, std::unordered_map<uint64_t, Cell>> writers;
  std::unordered_map<Expr, Expr> memo;
  std::unordered_map<size_t, std::unique_ptr<WritePlan>> plans;  // by write record
  Deadline deadline;  // ticked per substituted leaf: one specialization can rebuild 10^5-term sums

  Impl(ir::Context& c, const ExecResult& res) : ctx(c), r(res), tv(c, res.launch.block, res.launch.grid) {
    for (size_t k = 0; k < r.smem_tensor.size(); ++k) epoch_of[r.smem_tensor[k]] = int(k);
  }

  // A write value is mostly index arithmetic over thread identity (096's conv kernel: 258 of 356
  // nodes) around a few loads and products. Per template, once: its post-order and its "frontier",
  // the maximal thread-only bitvector/Boolean sub-expressions below a node that is not, compiled
  // into one BvProgram. Per thread: the frontier is evaluated on machine words and only the rest is
  // rebuilt through the canonicalizer (which turns each Load at its now constant index into the
  // element). Substituting the thread Vars everywhere interned every intermediate constant.
  struct SpecPlan {
    bool ok = false;                      // false: specialize by substitution
    std::vector<Expr> order;              // non-frontier nodes, children first
    std::unordered_map<Expr, size_t> frontier;  // node -> root index in prog
    std::optional<BvProgram> prog;
    std::vector<uint64_t> values;
  };
  std::unordered_map<Expr, SpecPlan> spec_plans;

  SpecPlan& spec_plan(Expr e) {
    auto [it, fresh] = spec_plans.try_emplace(e);
    SpecPlan& P = it->second;
    if (!fresh) return P;
    auto all = tv.all();
    // named members, not a structured binding: the lambda below captures them (clang 14 rejects that)
    const ThreadOnlySplit split = split_thread_only(e, all);
    const auto& thread_only = split.thread_only;
    const auto& post = split.post;
    std::vector<Expr> roots;
    auto mark = [&](Expr x) {
      if (thread_only.at(x) && !x->is_const() && !P.frontier.count(x)) {
        P.frontier.emplace(x, roots.size());
        roots.push_back(x);
      }
    };
    for (Expr x : post)
      if (!thread_only.at(x)) {
        for (Expr a : x->args()) mark(a);
        P.order.push_back(x);
      }
    mark(e);
    P.prog.emplace(all, roots);
    P.ok = P.prog->ok();
    P.values.resize(roots.size());
    return P;
  }

  // an infinity (Execute's "-inf"/"+inf" Vars) among a value's leaves: folded after specialization
  std::unordered_map<Expr, bool> mentions_inf;
  bool has_inf(Expr e) {
    auto [it, fresh] = mentions_inf.emplace(e, false);
    if (fresh)
      for (Expr l : ir::leaves(e))
        if (l->op == Op::Var && l->sort == Sort::Real && (l->name() == "-inf" || l->name() == "+inf")) it->second = true;
    return it->second;
  }

  Expr specialize(Expr e, const ThreadCoord& t) {
    Expr s = specialize_plain(e, t);
    return has_inf(e) ? fold_infinities(ctx, s) : s;
  }

  Expr specialize_plain(Expr e, const ThreadCoord& t) {
    auto p = point_of(t);
    deadline.check("in the write inversion (Resolver::specialize)");
    SpecPlan& P = spec_plan(e);
    if (!P.ok) {
      auto all = tv.all();
      Expr s = ir::substitute(ctx, e, [&](Expr leaf) -> Expr {
        deadline.tick("in the write inversion (Resolver::specialize)");
        for (int i = 0; i < 6; ++i) if (leaf == all[i]) return ctx.bv_const(Sort::BV32, p[i]);
        return nullptr;
      });
      return resolve(s);
    }
    if (!P.values.empty()) P.prog->eval(p.data(), P.values.data());
    std::unordered_map<Expr, Expr> value;
    auto get = [&](Expr x) -> Expr {
      if (auto f = P.frontier.find(x); f != P.frontier.end()) {
        uint64_t v = P.values[f->second];
        return x->sort == Sort::Bool ? ctx.bool_const(v != 0) : ctx.bv_const(x->sort, v);
      }
      auto it = value.find(x);
      return it == value.end() ? x : it->second;  // constants, and nodes left as they are
    };
    std::vector<Expr> args;
    for (Expr x : P.order) {
      deadline.tick("in the write inversion (Resolver::specialize)");
      args.clear();
      bool changed = false;
      for (Expr a : x->args()) {
        Expr v = get(a);
        changed = changed || v != a;
        args.push_back(v);
      }
      if (changed) value.emplace(x, ctx.rebuild(x, args));
    }
    return resolve(get(e));
  }

  const std::unordered_map<uint64_t, Cell>& writer_map(int epoch, uint64_t block) {
    auto key = std::make_pair(epoch, block);
    auto it = writers.find(key);
    if (it != writers.end()) return it->second;
    auto& m = writers[key];
    const Dim3& B = r.launch.block;
    const Dim3& G = r.launch.grid;
    Dim3 c{uint32_t(block % G.x), uint32_t(block / G.x % G.y), uint32_t(block / (uint64_t(G.x) * G.y))};
    auto vars = tv.all();
    const auto& ws = r.epoch_writes[epoch];
    for (size_t wi = 0; wi < ws.size(); ++wi) {
      Expr roots[] = {ws[wi].pred, ws[wi].addr};
      BvProgram prog(vars, roots);
      if (!prog.ok()) throw std::runtime_error("shared store with a data-dependent address cannot be resolved");
      for (uint64_t lin = 0; lin < B.count(); ++lin) {
        uint64_t p[6] = {lin % B.x, lin / B.x % B.y, lin / (uint64_t(B.x) * B.y), c.x, c.y, c.z};
        uint64_t out[2];
        prog.eval(p, out);
        if (!out[0]) continue;
        Cell& cell = m[out[1]];
        if (ws[wi].op == WriteOp::Store) { cell.plain = int32_t(wi); cell.plain_lin = uint32_t(lin); }
        else cell.atomics.push_back({uint32_t(wi), uint32_t(lin)});
      }
    }
    return m;
  }

  ThreadCoord thread_of(uint64_t lin, uint64_t block) const {
    const Dim3& B = r.launch.block;
    const Dim3& G = r.launch.grid;
    return {{uint32_t(lin % B.x), uint32_t(lin / B.x % B.y), uint32_t(lin / (uint64_t(B.x) * B.y))},
            {uint32_t(block % G.x), uint32_t(block / G.x % G.y), uint32_t(block / (uint64_t(G.x) * G.y))}};
  }

  // A cell stored with one type and read with another: constants (st.shared.u32 0 read back as
  // a float, nvcc's zero-initialization) convert bit-exactly; anything else is an error.
  Expr coerce(Expr v, Sort s) {
    if (v->sort == s) return v;
    if (v->op == Op::Undef) return ctx.undef(s);
    if (v->op == Op::ConstBV && s == Sort::Real) {
      unsigned w = ir::bv_width(v->sort);
      double d;
      if (w == 32) { uint32_t b = uint32_t(v->bv_value()); float f; std::memcpy(&f, &b, 4); d = f; }
      else if (w == 64) { uint64_t b = v->bv_value(); std::memcpy(&d, &b, 8); }
      else throw std::runtime_error("shared cell read as a float of another width");
      return ctx.real_const_from_double(d);
    }
    if (v->op == Op::ConstBV && ir::is_bv(s)) {
      unsigned w = ir::bv_width(s);
      return ctx.bv_const(s, v->bv_value() & ir::width_mask(w));
    }
    throw std::runtime_error("shared cell stored with one type and read with another");
  }

  // The stores that give a cell its value at the start of `epoch`: the last plain store of the
  // latest epoch that has one, then every atomic update of that and the later epochs (add/min/max
  // commute, so issue order between threads does not matter).
  std::vector<CellWrite> cell_writes(int epoch, uint64_t idx) {
    uint64_t sb = std::max<uint64_t>(1, r.smem_bytes);
    uint64_t block = idx / sb, off = idx % sb;
    std::vector<std::pair<int, const Cell*>> chain;  // newest first
    std::vector<CellWrite> out;
    for (int j = epoch - 1; j >= 0; --j) {
      const auto& m = writer_map(j, block);
      auto w = m.find(off);
      if (w == m.end()) continue;
      chain.push_back({j, &w->second});
      if (w->second.plain >= 0) {
        out.push_back({j, size_t(w->second.plain), thread_of(w->second.plain_lin, block), true});
        break;
      }
    }
    for (size_t k = chain.size(); k-- > 0;)
      for (auto [wi, lin] : chain[k].second->atomics) out.push_back({chain[k].first, wi, thread_of(lin, block), false});
    return out;
  }

  // A cell's value at the start of `epoch` from its stores (cell_writes' order), each store's value
  // from `value_of` (nullopt: none, and then none for the cell either).
  template <class F>
  std::optional<Expr> fold_cell(int epoch, uint64_t idx, Sort sort, F value_of) {
    Expr v = ctx.undef(sort);
    for (const CellWrite& c : cell_writes(epoch, idx)) {
      const SharedWrite& sw = r.epoch_writes[size_t(c.epoch)][c.write];
      std::optional<Expr> x0 = value_of(sw, c);
      if (!x0) return std::nullopt;
      Expr x = coerce(*x0, sort);
      if (c.plain) {
        v = x;
        continue;
      }
      if (v->op == Op::Undef || x->op == Op::Undef) { v = ctx.undef(sort); break; }
      bool real = v->sort == Sort::Real;
      switch (sw.op) {
        case WriteOp::Add: v = real ? ctx.add(v, x) : ctx.bv_add(v, x); break;
        case WriteOp::Max: v = real ? ctx.max(v, x) : ctx.bv_max(v, x, sw.is_signed); break;
        case WriteOp::Min: v = real ? ctx.min(v, x) : ctx.bv_min(v, x, sw.is_signed); break;
        default: return std::nullopt;
      }
    }
    return v;
  }

  Expr resolve_elem(Expr leaf, int epoch) {
    auto it = memo.find(leaf);
    if (it != memo.end()) return it->second;
    deadline.check("in the write inversion (Resolver::resolve)");
    auto v = fold_cell(epoch, uint64_t(leaf->index()), leaf->sort, [&](const SharedWrite& sw, const CellWrite& c) {
      return std::optional<Expr>(specialize(sw.value, c.thread));
    });
    if (!v) throw std::runtime_error("unmodeled shared atomic");
    memo[leaf] = *v;
    return *v;
  }

  // ---- one thread position of every block at once (the block's coordinates left symbolic)
  std::vector<int8_t> uniform;  // per epoch: 1 when its shared stores' predicates and addresses do not mention the block
  std::unordered_map<Expr, Expr> block_memo;  // lazy shared read (symbolic block) -> its value
  bool block_uniform(int epoch) {
    if (uniform.empty()) uniform.assign(r.epoch_writes.size(), -1);
    int8_t& u = uniform[size_t(epoch)];
    if (u < 0) {
      u = 1;
      for (const SharedWrite& sw : r.epoch_writes[size_t(epoch)])
        for (Expr root : {sw.pred, sw.addr})
          for (Expr l : ir::leaves(root))
            if (l == tv.ctaid[0] || l == tv.ctaid[1] || l == tv.ctaid[2]) u = 0;
    }
    return u == 1;
  }
  Expr substitute_tid(Expr e, const Dim3& tid) {
    const uint64_t p[3] = {tid.x, tid.y, tid.z};
    return ir::substitute(ctx, e, [&](Expr leaf) -> Expr {
      deadline.tick("in the write inversion (Resolver::specialize_tid)");
      for (int i = 0; i < 3; ++i) if (leaf == tv.tid[i]) return ctx.bv_const(Sort::BV32, p[i]);
      return nullptr;
    });
  }
  std::optional<Expr> specialize_tid(Expr e, const Dim3& tid) {
    Expr s = substitute_tid(e, tid);
    if (!s->has_data()) return s;
    bool ok = true;
    Expr out = ir::substitute(ctx, s, [&](Expr leaf) -> Expr {
      if (!ok) return nullptr;
      auto it = epoch_of.find(leaf->tensor());
      if ((leaf->op != Op::Load && leaf->op != Op::TensorElem) || it == epoch_of.end()) return nullptr;
      auto v = leaf->op == Op::TensorElem ? std::optional<Expr>(resolve_elem(leaf, it->second))
                                          : block_cell(leaf, it->second);
      if (!v) ok = false;
      return v ? *v : nullptr;
    });
    if (!ok) return std::nullopt;
    return out;
  }
  // A lazy read blocklin·smem_bytes + off of one symbolic block: the stores of block 0's cell `off`
  // with their thread positions, each value itself for the symbolic block.
  std::optional<Expr> block_cell(Expr leaf, int epoch) {
    if (auto it = block_memo.find(leaf); it != block_memo.end()) return it->second;
    deadline.check("in the write inversion (Resolver::specialize_tid)");
    for (int j = 0; j < epoch; ++j)
      if (!block_uniform(j)) return std::nullopt;
    const uint64_t sb = std::max<uint64_t>(1, r.smem_bytes);
    Expr at0 = ir::substitute(ctx, leaf->arg(0), [&](Expr l) -> Expr {
      for (int i = 0; i < 3; ++i) if (l == tv.ctaid[i]) return ctx.bv_const(l->sort, 0);
      return nullptr;
    });
    if (at0->op != Op::ConstBV || at0->bv_value() >= sb) return std::nullopt;
    Expr want = ctx.bv_add(ctx.bv_mul(tv.block_linear(ctx), ctx.bv_const(Sort::BV64, sb)), at0);
    if (want != leaf->arg(0)) return std::nullopt;  // not the block-linear layout Machine::smem_index builds
    auto v = fold_cell(epoch, at0->bv_value(), leaf->sort, [&](const SharedWrite& sw, const CellWrite& c) {
      return specialize_tid(sw.value, c.thread.tid);
    });
    if (v) block_memo[leaf] = *v;
    return v;
  }
  Expr specialize_block(Expr v, const ThreadCoord& t) {
    const uint64_t p[3] = {t.ctaid.x, t.ctaid.y, t.ctaid.z};
    Expr s = ir::substitute(ctx, v, [&](Expr leaf) -> Expr {
      deadline.tick("in the write inversion (Resolver::specialize_block)");
      for (int i = 0; i < 3; ++i) if (leaf == tv.ctaid[i]) return ctx.bv_const(Sort::BV32, p[i]);
      return nullptr;
    });
    return has_inf(v) ? fold_infinities(ctx, s) : s;
  }

  Expr resolve(Expr e) {
    if (!e->has_data()) return e;
    return ir::substitute(ctx, e, [&](Expr leaf) -> Expr {
      if (leaf->op != Op::TensorElem) {
        if (leaf->op == Op::Load && epoch_of.count(leaf->tensor()))
          throw std::runtime_error("lazy shared read with a non-constant index (thread identity not substituted?)");
        return nullptr;
      }
      auto it = epoch_of.find(leaf->tensor());
      if (it == epoch_of.end()) return nullptr;
      return resolve_elem(leaf, it->second);
    });
  }
};

Resolver::Resolver(ir::Context& ctx, const ExecResult& r) : impl_(std::make_unique<Impl>(ctx, r)) {}
Resolver::~Resolver() = default;
Expr Resolver::specialize(Expr e, const ThreadCoord& t) { return impl_->specialize(e, t); }
Expr Resolver::resolve(Expr e) { return impl_->resolve(e); }
std::optional<Expr> Resolver::specialize_tid(Expr e, const Dim3& tid) { return impl_->specialize_tid(e, tid); }
Expr Resolver::specialize_block(Expr v, const ThreadCoord& t) { return impl_->specialize_block(v, t); }
void Resolver::set_deadline(std::chrono::steady_clock::time_point t) { impl_->deadline = Deadline(t); }
int Resolver::epoch_of(int32_t tensor) const {
  auto it = impl_->epoch_of.find(tensor);
  return it == impl_->epoch_of.end() ? -1 : it->second;
}
std::vector<Resolver::CellWrite> Resolver::cell_writes(int epoch, uint64_t index) {
  return impl_->cell_writes(epoch, index);
}

// What inverting one write record needs, independent of the element: compiling its predicate and
// index was most of writers_of's cost per element (27 records of ~650 nodes in 096's conv kernel).
struct Resolver::WritePlan {
  std::optional<BvProgram> prog;           // (pred, index)
  std::optional<Linear> linear;            // index affine with coefficients >= 0
  // 1b: index = A(tid) + B(ctaid) with B affine (nonneg); A compiled
  std::optional<BvProgram> tid_part;
  std::optional<Linear> block_part;
  uint64_t free_blocks = 1;
};

Resolver::WritePlan& Resolver::plan(size_t wi) {
  auto& slot = impl_->plans[wi];
  if (slot) return *slot;
  slot = std::make_unique<WritePlan>();
  WritePlan& P = *slot;
  ir::Context& ctx = impl_->ctx;
  const auto& w = impl_->r.writes[wi];
  auto vars = impl_->tv.all();
  const auto& L = impl_->r.launch;
  uint64_t range[6] = {L.block.x, L.block.y, L.block.z, L.grid.x, L.grid.y, L.grid.z};
  Expr roots[] = {w.pred, w.index};
  P.prog.emplace(vars, roots);
  if (!P.prog->ok()) throw std::runtime_error(fmt::format("write at PTX line {} has a data-dependent index", w.where.ptx_line));
  auto nonneg = [](const Linear& x) {
    for (int i = 0; i < 6; ++i) if (x.c[i] < 0) return false;
    return true;
  };
  if (auto lin = linear_of(w.index, vars); lin && nonneg(*lin)) {
    P.linear = lin;
    return P;
  }
  std::vector<Expr> tid_part, rest;
  for (Expr x : w.index->op == Op::BvAdd ? std::vector<Expr>(w.index->args().begin(), w.index->args().end())
                                         : std::vector<Expr>{w.index}) {
    unsigned mask = 0;
    for (Expr l : ir::leaves(x))
      for (int i = 0; i < 6; ++i) if (l == vars[size_t(i)]) mask |= 1u << i;
    if (mask && !(mask & 0x38)) tid_part.push_back(x);
    else if (!(mask & 0x07)) rest.push_back(x);
    else return P;
  }
  if (tid_part.empty()) return P;
  Expr A = ctx.bv_add(tid_part);
  Expr Bx = rest.empty() ? ctx.bv_const(w.index->sort, 0) : ctx.bv_add(rest);
  auto LB = linear_of(Bx, vars);
  if (!LB || !nonneg(*LB)) return P;
  for (int i = 3; i < 6; ++i)
    if (LB->c[i] == 0) P.free_blocks *= range[i];
  if (P.free_blocks > (uint64_t(1) << 16)) return P;
  Expr aroots[] = {A};
  BvProgram aprog(vars, aroots);
  if (!aprog.ok()) return P;
  P.tid_part.emplace(std::move(aprog));
  P.block_part = LB;
  return P;
}


// The most threads a search over thread ranges hands back for one element (an atomic statistic of
// a group: every thread of the group's slice of the launch) before bounded enumeration takes over.
constexpr size_t kMaxRangeWriters = size_t(1) << 21;

std::vector<Writer> writers_of(ir::Context& ctx, const ExecResult& r, int32_t tensor, int64_t flat, Resolver* resolver,
                               bool specialize) {
  std::unique_ptr<Resolver> own;
  if (!resolver) { own = std::make_unique<Resolver>(ctx, r); resolver = own.get(); }
  ThreadVars tv(ctx, r.launch.block, r.launch.grid);
  auto vars = tv.all();
  uint64_t range[6] = {r.launch.block.x, r.launch.block.y, r.launch.block.z, r.launch.grid.x, r.launch.grid.y, r.launch.grid.z};
  std::vector<std::pair<uint64_t, Writer>> found;
  for (size_t wi = 0; wi < r.writes.size(); ++wi) {
    const auto& w = r.writes[wi];
    if (w.tensor != tensor) continue;
    Resolver::WritePlan& plan = resolver->plan(wi);
    BvProgram& prog = *plan.prog;
    auto hit = [&](const uint64_t* p) {
      resolver->impl_->deadline.tick("in the write inversion (writers_of)");
      uint64_t out[2];
      prog.eval(p, out);
      return out[0] && out[1] == uint64_t(flat);
    };
    auto add = [&](const uint64_t* p) {
      ThreadCoord t = coord_of_point(p);
      found.push_back({w.seq, Writer{wi, t, specialize ? resolver->specialize(w.value, t) : nullptr}});
    };
    // 1. affine solve: index = k + sum c_i v_i with c_i >= 0; depth-first over the Vars by
    // decreasing coefficient, each Var limited to the values that leave a reachable remainder
    // (exact: every solution is found, with no blind enumeration). `fixed` Vars (already set in
    // p) are left alone; Vars neither in the index nor fixed are enumerated against the predicate.
    auto affine_solve = [&](const Linear& L, int64_t target, uint64_t* p, unsigned fixed) {
      std::vector<int> order;
      for (int i = 0; i < 6; ++i)
        if (L.c[i] != 0) order.push_back(i);
      std::sort(order.begin(), order.end(), [&](int a, int b) { return L.c[a] > L.c[b]; });
      std::vector<int64_t> span(order.size() + 1, 0);  // max of the remaining terms
      for (size_t a = order.size(); a-- > 0;) span[a] = span[a + 1] + L.c[order[a]] * int64_t(range[order[a]] - 1);
      std::vector<int> free;
      for (int i = 0; i < 6; ++i) if (L.c[i] == 0 && range[i] > 1 && !(fixed >> i & 1)) free.push_back(i);
      auto finish = [&] {  // Vars absent from the index: enumerate against the predicate
        uint64_t total = 1;
        for (int i : free) total *= range[i];
        for (uint64_t n = 0; n < total; ++n) {
          uint64_t q = n;
          for (int i : free) { p[i] = q % range[i]; q /= range[i]; }
          if (hit(p)) add(p);
        }
      };
      // depth-first search, at most 6 levels deep (one per thread Var)
      std::function<void(size_t, int64_t)> dfs = [&](size_t lvl, int64_t rem) {
        if (rem < 0 || rem > span[lvl]) return;
        if (lvl == order.size()) { if (rem == 0) finish(); return; }
        int i = order[lvl];
        int64_t c = L.c[i];
        int64_t lo = std::max<int64_t>(0, (rem - span[lvl + 1] + c - 1) / c), hi = std::min<int64_t>(rem / c, range[i] - 1);
        for (int64_t v = lo; v <= hi; ++v) {
          p[i] = uint64_t(v);
          dfs(lvl + 1, rem - v * c);
        }
      };
      dfs(0, target - L.k);
    };
    if (plan.linear) {
      uint64_t p[6] = {0, 0, 0, 0, 0, 0};
      affine_solve(*plan.linear, int64_t(flat), p, 0);
      continue;
    }
    // 1b. index = f(tid) + (affine in ctaid): a warp- or group-level writer (`(tid.x >> 7) +
    // 2*ctaid.x`, one writer per 128 lanes) is not affine in tid, but a block has at most 1024
    // threads: each tid point fixes f, and the ctaid part is solved as in 1 (exact; every
    // candidate is checked by evaluation).
    if (plan.tid_part) {
      const uint64_t threads = range[0] * range[1] * range[2];
      for (uint64_t n = 0; n < threads; ++n) {
        uint64_t p[6] = {n % range[0], n / range[0] % range[1], n / (range[0] * range[1]), 0, 0, 0};
        uint64_t a = 0;
        plan.tid_part->eval(p, &a);
        affine_solve(*plan.block_part, int64_t(flat) - int64_t(a), p, 0x07);
      }
      continue;
    }
    // 2. over thread ranges: sub-boxes whose index range misses the element are dropped (a padded
    // layout's `8*(i/7) + i%7` is monotone in i), so a 2^25-thread launch costs a few hundred boxes
    uint64_t total = 1;
    for (auto x : range) total *= x;
    if (total > (uint64_t(1) << 16)) {
      Expr cond = ctx.and_(w.pred, ctx.eq(w.index, ctx.bv_const(w.index->sort, uint64_t(flat))));
      if (auto sols = solutions_over_ranges(tv, cond, 4096, kMaxRangeWriters, &resolver->impl_->deadline)) {
        for (const ThreadCoord& t : *sols) {
          uint64_t p[6] = {t.tid.x, t.tid.y, t.tid.z, t.ctaid.x, t.ctaid.y, t.ctaid.z};
          if (hit(p)) add(p);
        }
        continue;
      }
    }
    // 3. bounded enumeration over every thread
    if (total > (uint64_t(1) << 26)) throw std::runtime_error("write inversion: launch too large to enumerate");
    uint64_t p[6];
    for (uint64_t n = 0; n < total; ++n) {
      uint64_t q = n;
      for (int i = 0; i < 6; ++i) { p[i] = q % range[i]; q /= range[i]; }
      if (hit(p)) add(p);
    }
  }
  std::stable_sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<Writer> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

}  // namespace dirigo::exec
