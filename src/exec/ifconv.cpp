#include "exec/ifconv.h"
#include "exec/machine.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "ir/walk.h"

namespace dirigo::exec {

using ir::Expr;
using ir::Op;
using ptx::Opcode;

IfRegion find_if_region(const ptx::Function& f, const ptx::Rollup& rollup, size_t pc, bool allow_loops) {
  IfRegion r;
  auto refuse = [&](size_t at, const std::string& why) {
    const auto& in = f.body[at];
    r.refusal = fmt::format("{} at PTX line {} ('{}')", why, in.loc.ptx_line, in.text);
    return r;
  };
  auto target_of = [&](size_t at) -> std::optional<size_t> {
    const auto& ops = f.body[at].operands;
    if (ops.empty()) return std::nullopt;
    auto it = f.labels.find(ops[0].name);
    if (it == f.labels.end()) return std::nullopt;
    return it->second;
  };
  auto t0 = target_of(pc);
  if (!t0) return refuse(pc, "branch to unknown label");
  if (*t0 <= pc) return refuse(pc, "loop on data (backward branch)");
  // The reconvergence point: the first pc that no edge from [pc, end) jumps past. Every edge in
  // the region goes forward, so every path advances monotonically and must pass through it.
  size_t end = *t0;
  for (size_t i = pc + 1; i < end; ++i) {
    if (rollup.at[i].kind == ptx::RolledInstr::Kind::Absorbed) continue;
    const auto& in = f.body[i];
    ++r.size;
    switch (in.op) {
      case Opcode::Bra: {
        auto t = target_of(i);
        if (!t) return refuse(i, "branch to unknown label");
        if (*t <= i && (!allow_loops || *t <= pc)) return refuse(i, "loop inside the branch region");
        end = std::max(end, *t);
        break;
      }
      case Opcode::Ret: case Opcode::Exit: return refuse(i, "return inside the branch region");
      case Opcode::Trap: return refuse(i, "trap inside the branch region");
      case Opcode::Call: return refuse(i, "call inside the branch region");
      case Opcode::Bar: case Opcode::Barrier: return refuse(i, "barrier inside the branch region");
      case Opcode::Shfl: case Opcode::Vote: case Opcode::Activemask:
        return refuse(i, "warp collective inside the branch region");
      case Opcode::St: case Opcode::Atom: case Opcode::Red: r.side_effects = true; break;
      default: break;
    }
  }
  if (end >= f.body.size()) return refuse(pc, "branch region runs to the end of the kernel");
  r.end = end;
  return r;
}

Expr thread_projection(ir::Context& ctx, Expr guard, const std::function<bool(Expr)>& thread_only) {
  // post-order over (node, polarity) with an explicit stack; guards are small, but nested
  // conditions can chain
  using Key = std::pair<Expr, bool>;
  struct KeyHash { size_t operator()(const Key& k) const { return std::hash<Expr>()(k.first) * 2 + k.second; } };
  std::unordered_map<Key, Expr, KeyHash> memo;
  std::vector<std::pair<Key, bool>> stack{{{guard, true}, false}};
  auto leaf = [&](Expr e, bool pos) -> Expr {
    if (e->sort == ir::Sort::Bool && thread_only(e)) return pos ? e : ctx.not_(e);
    return nullptr;  // structural (Not/And/Or) or a data atom
  };
  while (!stack.empty()) {
    auto [key, expanded] = stack.back();
    stack.pop_back();
    if (memo.count(key)) continue;
    auto [e, pos] = key;
    if (Expr l = leaf(e, pos)) { memo[key] = l; continue; }
    if (e->op == Op::Not) {
      Key sub{e->arg(0), !pos};
      if (!expanded) { stack.push_back({key, true}); stack.push_back({sub, false}); continue; }
      memo[key] = memo.at(sub);
      continue;
    }
    if (e->op == Op::And || e->op == Op::Or) {
      if (!expanded) {
        stack.push_back({key, true});
        for (Expr a : e->args()) stack.push_back({{a, pos}, false});
        continue;
      }
      std::vector<Expr> parts;
      for (Expr a : e->args()) parts.push_back(memo.at({a, pos}));
      bool conj = (e->op == Op::And) == pos;  // De Morgan under negative polarity
      memo[key] = conj ? ctx.and_(parts) : ctx.or_(parts);
      continue;
    }
    memo[key] = ctx.bool_const(true);  // a data comparison: some input satisfies it (either polarity)
  }
  return memo.at({guard, true});
}

namespace {
bool skeleton(Expr e) {
  return e->op == Op::Not || e->op == Op::And || e->op == Op::Or || (e->op == Op::Ite && e->sort == ir::Sort::Bool);
}
}  // namespace

namespace {
// The Boolean skeleton of a condition over its data atoms: skeleton nodes children first, and
// each data atom's variable (an atom and ctx.not_(atom) share one, with opposite polarity).
struct Skeleton {
  std::vector<Expr> order;
  std::unordered_map<Expr, std::pair<int, bool>> atom_var;  // data atom -> (variable, polarity)
  size_t vars = 0;
};
Skeleton skeleton_of(ir::Context& ctx, Expr cond, const std::function<bool(Expr)>& thread_only) {
  Skeleton sk;
  std::unordered_map<Expr, int> rep_var;
  std::unordered_map<Expr, bool> seen;
  std::vector<std::pair<Expr, bool>> stack{{cond, false}};
  while (!stack.empty()) {
    auto [e, expanded] = stack.back();
    stack.pop_back();
    if (expanded) { sk.order.push_back(e); continue; }
    if (seen.count(e)) continue;
    seen[e] = true;
    if (skeleton(e)) {
      stack.push_back({e, true});
      for (Expr a : e->args()) stack.push_back({a, false});
      continue;
    }
    if (e->op == Op::ConstBool || (e->op != Op::Undef && thread_only(e))) continue;
    Expr neg = ctx.not_(e);
    bool positive = skeleton(neg) || e->id <= neg->id;
    Expr rep = positive ? e : neg;
    auto [it, fresh] = rep_var.emplace(rep, int(rep_var.size()));
    sk.atom_var[e] = {it->second, positive};
  }
  sk.vars = rep_var.size();
  return sk;
}
}  // namespace

Expr exists_data(ir::Context& ctx, Expr cond, const std::function<bool(Expr)>& thread_only, unsigned max_atoms) {
  Skeleton sk = skeleton_of(ctx, cond, thread_only);
  const auto& order = sk.order;
  const auto& atom_var = sk.atom_var;
  if (sk.vars == 0) return cond;
  if (sk.vars > max_atoms) return thread_projection(ctx, cond, thread_only);
  std::vector<Expr> alternatives;
  for (uint64_t mask = 0; mask < (uint64_t(1) << sk.vars); ++mask) {
    std::unordered_map<Expr, Expr> val;
    auto value = [&](Expr e) -> Expr {
      if (auto it = val.find(e); it != val.end()) return it->second;
      if (auto it = atom_var.find(e); it != atom_var.end())
        return ctx.bool_const(bool((mask >> it->second.first) & 1) == it->second.second);
      return e;  // a thread atom or a constant
    };
    for (Expr e : order) {
      std::vector<Expr> a;
      for (Expr x : e->args()) a.push_back(value(x));
      Expr r = e->op == Op::Not ? ctx.not_(a[0]) : e->op == Op::And ? ctx.and_(a) : e->op == Op::Or ? ctx.or_(a)
                                                                                 : ctx.ite(a[0], a[1], a[2]);
      val[e] = r;
    }
    Expr r = value(cond);
    if (!(r->op == Op::ConstBool && !r->bool_value())) alternatives.push_back(r);
  }
  return ctx.or_(alternatives);
}

Expr undef_condition(ir::Context& ctx, Expr v) {
  std::unordered_map<Expr, Expr> memo;
  return undef_condition(ctx, v, memo);
}

Expr undef_condition(ir::Context& ctx, Expr v, std::unordered_map<Expr, Expr>& memo) {
  auto done = [&](Expr e) {  // leaves and Undef-free sub-terms are decided where they are met
    if (!e->has_undef()) return true;
    if (memo.count(e)) return true;
    if (e->op != Op::Undef) return false;
    memo[e] = ctx.bool_const(true);
    return true;
  };
  auto at = [&](Expr e) { return e->has_undef() ? memo.at(e) : ctx.bool_const(false); };
  ir::post_order(v, done, [&](Expr e) {
    if (e->op == Op::Ite) {
      Expr c = e->arg(0);
      memo[e] = ctx.or_(std::vector<Expr>{at(c), ctx.and_(c, at(e->arg(1))),
                                          ctx.and_(ctx.not_(c), at(e->arg(2)))});
      return;
    }
    std::vector<Expr> parts;
    for (Expr a : e->args()) parts.push_back(at(a));
    Expr any = ctx.or_(parts);
    if (e->op == Op::And || e->op == Op::Or) {
      // a defined false argument decides an And (a defined true one an Or) whatever the others are
      std::vector<Expr> deciders;
      for (Expr a : e->args())
        deciders.push_back(ctx.and_(ctx.not_(at(a)), e->op == Op::And ? ctx.not_(a) : a));
      any = ctx.and_(any, ctx.not_(ctx.or_(deciders)));
    }
    memo[e] = any;
  });
  return at(v);
}

namespace {
// cmp(f(ite(c, x, y)), z) -> ite(c, cmp(f(x), z), cmp(f(y), z)) for one comparison, the ite
// being the first bitvector ite below the comparison (breadth-first through bitvector operators,
// at most kLook nodes: `(1 & ite(g, L + 1, Undef)) == 1` as well as `32 <=s ite(g, x, Undef)`);
// the arms' comparisons are lifted in turn (an operand's ite chain is a register's history across
// a loop's if-converted iterations, one arm per iteration). At most kLeaves comparisons per atom,
// else the atom stays as it is (equivalent either way).
Expr first_bv_ite(Expr atom) {
  constexpr size_t kLook = 64;
  std::vector<Expr> level(atom->args().begin(), atom->args().end());
  std::unordered_set<Expr> seen;
  while (!level.empty() && seen.size() < kLook) {
    std::vector<Expr> next;
    for (Expr x : level) {
      if (!ir::is_bv(x->sort) || !seen.insert(x).second) continue;
      if (x->op == Op::Ite) return x;
      for (Expr a : x->args()) next.push_back(a);
    }
    level = std::move(next);
  }
  return nullptr;
}

Expr lift_atom(ir::Context& ctx, Expr atom) {
  constexpr size_t kLeaves = 64;
  struct Item { Expr atom; int parent; bool then_arm; Expr cond; Expr result; };
  std::vector<Item> items{{atom, -1, false, nullptr, nullptr}};  // a tree of arms, built breadth-first
  size_t leaves = 1;
  for (size_t i = 0; i < items.size(); ++i) {
    Expr e = items[i].atom;
    if (e->sort != ir::Sort::Bool || e->nargs == 0 || e->op == Op::Ite) continue;
    Expr sel = first_bv_ite(e);
    if (!sel) continue;
    if (++leaves > kLeaves) return atom;
    items[i].cond = sel->arg(0);
    Expr yes = replace_node(ctx, e, sel, sel->arg(1)), no = replace_node(ctx, e, sel, sel->arg(2));
    items.push_back({yes, int(i), true, nullptr, nullptr});
    items.push_back({no, int(i), false, nullptr, nullptr});
  }
  for (size_t i = items.size(); i-- > 0;) {  // children come after their parent: fold bottom-up
    if (!items[i].cond) items[i].result = items[i].atom;
    if (items[i].parent < 0 || !items[i].then_arm) continue;  // the then-arm folds both arms
    Item& p = items[size_t(items[i].parent)];
    p.result = ctx.ite(p.cond, items[i].result, items[i + 1].result);
  }
  return items[0].result;
}
}  // namespace

Expr replace_node(ir::Context& ctx, Expr e, Expr from, Expr to) {
  std::unordered_map<Expr, Expr> memo;
  std::vector<std::pair<Expr, bool>> stack{{e, false}};
  while (!stack.empty()) {
    auto [x, expanded] = stack.back();
    stack.pop_back();
    if (memo.count(x)) continue;
    if (x == from) { memo[x] = to; continue; }
    if (x->nargs == 0) { memo[x] = x; continue; }
    if (!expanded) {
      stack.push_back({x, true});
      for (Expr a : x->args()) stack.push_back({a, false});
      continue;
    }
    std::vector<Expr> args;
    bool same = true;
    for (Expr a : x->args()) { args.push_back(memo.at(a)); same = same && args.back() == a; }
    memo[x] = same ? x : ctx.rebuild(x, args);
  }
  return memo.at(e);
}

Expr lift_ite_atoms_once(ir::Context& ctx, Expr cond, std::unordered_map<Expr, Expr>& memo);

Expr lift_ite_atoms(ir::Context& ctx, Expr cond, std::unordered_map<Expr, Expr>& memo) {
  if (cond->sort != ir::Sort::Bool) return cond;
  // the conditions of the lifted ites have atoms of their own: lift again until nothing changes
  constexpr int kRounds = 8;
  for (int round = 0; round < kRounds; ++round) {
    Expr next = lift_ite_atoms_once(ctx, cond, memo);
    if (next == cond) break;
    cond = next;
  }
  return cond;
}

Expr lift_ite_atoms_once(ir::Context& ctx, Expr cond, std::unordered_map<Expr, Expr>& memo) {
  auto done = [&](Expr e) { return memo.count(e) > 0; };
  ir::post_order(cond, [&](Expr e) {
    if (done(e)) return true;
    if (!skeleton(e)) {  // an atom (or a constant): its operands are not walked
      memo[e] = e->sort == ir::Sort::Bool && e->nargs > 0 ? lift_atom(ctx, e) : e;
      return true;
    }
    return false;
  }, [&](Expr e) {
    std::vector<Expr> args;
    for (Expr a : e->args()) args.push_back(memo.at(a));
    memo[e] = ctx.rebuild(e, args);
  });
  return memo.at(cond);
}

}  // namespace dirigo::exec

// ---------------------------------------------------------------- Machine hooks

namespace dirigo::exec {

namespace {
constexpr size_t kThreadRegionMax = 256;  // instructions in a converted thread-identity region
}

bool Machine::begin_ifconv(Bundle& b, const ptx::Instruction& in, Expr taken, bool thread_branch) {
  auto it = regions_.find(b.pc);
  if (it == regions_.end()) it = regions_.emplace(b.pc, find_if_region(f_, rollup_, b.pc)).first;
  const IfRegion& r = it->second;
  if (!r.refusal.empty()) {
    if (thread_branch) return false;
    throw Unsupported(fmt::format("data-dependent control flow at PTX line {} ('{}') in kernel {} (not if-convertible: {})",
                                  in.loc.ptx_line, in.text, f_.name, r.refusal));
  }
  if (thread_branch && (r.side_effects || r.size > kThreadRegionMax)) return false;
  size_t target = f_.labels.at(in.operands.at(0).name);
  b.conv = Bundle::IfConv{r.end, ctx_.not_(taken), {{target, taken}}, b.pc, {}};
  ++out_.ifconverted;
  ++b.pc;
  return true;
}

bool Machine::ifconv_enter(Bundle& b) {
  auto& cv = *b.conv;
  if (auto it = cv.incoming.find(b.pc); it != cv.incoming.end()) {
    cv.guard = ctx_.or_(cv.guard, it->second);
    cv.incoming.erase(it);
  }
  if (b.pc == cv.end) {
    if (!cv.incoming.empty()) unsupported(f_.body[b.pc], "if-conversion: a path jumps past the reconvergence point");
    b.conv.reset();
    for (auto& r : b.regs) r = drop_unreachable_undef(b, r);
    return false;
  }
  if (cv.guard->op == Op::ConstBool && !cv.guard->bool_value()) {  // no path reaches this instruction
    ++b.pc;
    return true;
  }
  return false;
}

void Machine::ifconv_branch(Bundle& b, const ptx::Instruction& in, Expr own_guard) {
  auto& cv = *b.conv;
  size_t target = f_.labels.at(in.operands.at(0).name);  // find_if_region resolved every label
  bool always = cv.guard->op == Op::ConstBool && cv.guard->bool_value();
  Expr taken = !own_guard ? cv.guard : always ? own_guard : ctx_.and_(cv.guard, own_guard);
  auto [it, fresh] = cv.incoming.emplace(target, taken);
  if (!fresh) it->second = ctx_.or_(it->second, taken);
  cv.guard = own_guard ? ctx_.and_(cv.guard, ctx_.not_(own_guard)) : ctx_.bool_const(false);
}

Expr Machine::guarded_domain(Bundle& b, Expr guard) {
  auto it = exists_memo_.find(guard);
  if (it == exists_memo_.end())
    it = exists_memo_.emplace(guard, exists_data(ctx_, guard, [&](Expr e) { return sat_.thread_only(e); })).first;
  Expr proj = it->second;
  if (proj->op == Op::ConstBool) return proj->bool_value() ? b.pred : proj;
  return tighten(ctx_.and_(b.pred, proj));
}

Expr Machine::merge_guarded(Bundle&, Expr guard, Expr now, Expr old) { return ctx_.ite(guard, now, old); }

Expr Machine::merge_register(Bundle& b, const ptx::Operand& d, Expr guard, Expr now, Expr old) {
  if (b.conv && d.kind == ptx::Operand::Kind::Register && !concrete_) {
    int s = slot(d.name);
    if (b.conv->written.insert(s).second && !live_at(b.conv->start, s)) return now;
  }
  return merge_guarded(b, guard, now, old);
}

// A register first written on one side is ite(guard, v, Undef) after it; when no thread and no
// input can observe the Undef arm, it is replaced by a constant (any value is exact there), so
// evaluation and the solver never meet an unreachable Undef. A reachable one stays (undef-* checks).
Expr Machine::drop_unreachable_undef(Bundle& b, Expr v) {
  if (!v || !v->has_undef()) return v;
  // memoized: every register is re-examined at each region end (merged bundles keep
  // ite(c, v, Undef) for registers defined on one side only)
  Expr g = b.conv ? b.conv->guard : nullptr;
  UndefKey key{v, b.pred, g};
  if (auto it = undef_memo_.find(key); it != undef_memo_.end()) return it->second;
  Expr r = drop_unreachable_undef_uncached(b, v);
  undef_memo_.emplace(key, r);
  return r;
}

Expr Machine::drop_unreachable_undef_uncached(Bundle& b, Expr v) {
  Expr uc = undef_condition(ctx_, v, undef_cond_memo_);
  if (b.conv) uc = ctx_.and_(b.conv->guard, uc);
  uc = lift_ite_atoms(ctx_, uc, lift_memo_);  // the guard's atoms too: they select the same ites
  // first as pure propositional logic (every atom a free variable, an atom and its negation one):
  // unsatisfiable there is unsatisfiable for every thread and input, also where thread
  // enumeration would be too large to decide
  bool unreachable = propositionally_false(uc);
  if (!unreachable) {
    Expr when = guarded_domain(b, uc);
    if (when == b.pred || sat(when)) return v;
  }
  // rebuild every node above an Undef leaf (ir::substitute maps Var/data leaves only)
  std::unordered_map<Expr, Expr> memo;
  auto done = [&](Expr e) {
    if (memo.count(e)) return true;
    if (!e->has_undef()) memo[e] = e;
    else if (e->op == Op::Undef)
      memo[e] = e->sort == ir::Sort::Bool ? ctx_.bool_const(false)
                : e->sort == ir::Sort::Real ? ctx_.real_const(0) : ctx_.bv_const(e->sort, 0);
    else return false;
    return true;
  };
  ir::post_order(v, done, [&](Expr e) {
    std::vector<Expr> args;
    for (Expr a : e->args()) args.push_back(memo.at(a));
    memo[e] = ctx_.rebuild(e, args);
  });
  return memo.at(v);
}

Expr Machine::undef_domain(Bundle& b, Expr v) {
  Expr uc = undef_condition(ctx_, v, undef_cond_memo_);
  if (b.conv) uc = ctx_.and_(b.conv->guard, uc);
  uc = lift_ite_atoms(ctx_, uc, lift_memo_);  // the guard's atoms too: they select the same ites
  // unsatisfiable as pure propositional logic (`g ∧ ¬g` between an if-converted guard and the
  // ite it wrote): no thread, no input — also where thread enumeration is too large to decide
  if (propositionally_false(uc)) return ctx_.bool_const(false);
  return guarded_domain(b, uc);
}

bool Machine::propositionally_false(Expr cond) {
  if (auto it = prop_false_memo_.find(cond); it != prop_false_memo_.end()) return it->second;
  bool r = propositionally_unsat(ctx_, cond);
  prop_false_memo_.emplace(cond, r);
  return r;
}

// Every atom a free variable: the skeleton evaluated over 2^n assignments at a time, as truth
// tables of up to 2^12 bits (64 words per node) over the first 12 atoms, once per assignment of
// the others (≤ 2^8 passes, stopping at the first satisfiable one), instead of once per
// assignment through the Context. Merged and if-converted regions of transposed convolutions
// reach 11–16 atoms (061: a guard, its own Undef arms and the address it selects).
bool propositionally_unsat(ir::Context& ctx, Expr cond) {
  constexpr unsigned kMaxAtoms = 20, kTableAtoms = 12;
  Skeleton sk = skeleton_of(ctx, cond, [](Expr) { return false; });
  if (sk.vars == 0) return cond->op == Op::ConstBool && !cond->bool_value();
  if (sk.vars > kMaxAtoms) return false;  // exists_data's fallback keeps every atom satisfiable
  const size_t n = sk.vars, low = std::min<size_t>(n, kTableAtoms), words = ((size_t(1) << low) + 63) / 64;
  const uint64_t last = (size_t(1) << low) % 64 == 0 ? ~uint64_t(0) : (uint64_t(1) << ((size_t(1) << low) % 64)) - 1;
  using Table = std::vector<uint64_t>;
  auto constant = [&](bool v) { return Table(words, v ? ~uint64_t(0) : 0); };
  std::vector<Table> pattern(low);  // atom k < low: bit m of the table is bit k of m
  for (size_t k = 0; k < low; ++k) {
    pattern[k].assign(words, 0);
    for (size_t m = 0; m < (size_t(1) << low); ++m)
      if ((m >> k) & 1) pattern[k][m / 64] |= uint64_t(1) << (m % 64);
  }
  for (uint64_t pass = 0; pass < (uint64_t(1) << (n - low)); ++pass) {
    auto variable = [&](size_t k, bool positive) {
      if (k >= low) return constant(bool((pass >> (k - low)) & 1) == positive);
      Table t = pattern[k];
      if (!positive)
        for (auto& w : t) w = ~w;
      return t;
    };
    std::unordered_map<Expr, Table> val;
    auto value = [&](Expr e) -> Table {
      if (auto it = val.find(e); it != val.end()) return it->second;
      if (auto it = sk.atom_var.find(e); it != sk.atom_var.end()) return variable(size_t(it->second.first), it->second.second);
      return constant(e->op == Op::ConstBool && e->bool_value());  // only constants are neither
    };
    for (Expr e : sk.order) {
      std::vector<Table> a;
      for (Expr x : e->args()) a.push_back(value(x));
      Table r = e->op == Op::Or ? constant(false) : constant(true);
      for (size_t w = 0; w < words; ++w) {
        switch (e->op) {
          case Op::Not: r[w] = ~a[0][w]; break;
          case Op::And: for (const auto& t : a) r[w] &= t[w]; break;
          case Op::Or: for (const auto& t : a) r[w] |= t[w]; break;
          default: r[w] = (a[0][w] & a[1][w]) | (~a[0][w] & a[2][w]); break;  // Bool ite
        }
      }
      val[e] = std::move(r);
    }
    Table t = value(cond);
    t.back() &= last;
    for (uint64_t x : t)
      if (x) return false;
  }
  return true;
}

}  // namespace dirigo::exec
