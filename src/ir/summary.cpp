// Short forms of symbolic values (summary.h). Two printers share one set of node descriptions:
// concrete() prints a node and the nodes below it; pattern() describes a set of like nodes at once
// (the operands of a wide n-ary node), showing what they have in common and index ranges where
// they differ. A group of k > 1 like operands of an n-ary node prints as `sym_{k terms} pattern`.
#include "ir/summary.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/expr_internal.h"
#include "ir/print.h"
#include "ir/print_internal.h"

namespace dirigo::ir {

namespace {

// n-ary nodes with sorted, deduplicated operands: printed grouped when wide.
bool is_nary(Op o) {
  switch (o) {
    case Op::Add: case Op::Mul: case Op::Min: case Op::Max: case Op::And: case Op::Or:
    case Op::BvAdd: case Op::BvMul: case Op::BvAnd: case Op::BvOr: case Op::BvXor:
      return true;
    default: return false;
  }
}

// The symbol of a grouped n-ary node and what its operands are called.
std::pair<std::string_view, std::string_view> nary_symbol(Op o) {
  switch (o) {
    case Op::Add: return {"Σ", "terms"};
    case Op::Mul: return {"Π", "factors"};
    case Op::Min: return {"min", "terms"};
    case Op::Max: return {"max", "terms"};
    case Op::And: return {"and", "operands"};
    case Op::Or: return {"or", "operands"};
    case Op::BvAdd: return {"Σbv", "terms"};
    case Op::BvMul: return {"Πbv", "factors"};
    case Op::BvAnd: return {"&", "operands"};
    case Op::BvOr: return {"|", "operands"};
    case Op::BvXor: return {"^", "operands"};
    default: return {op_name(o), "operands"};
  }
}

// The name of a node printed as f(args).
std::string head(Expr x) {
  if (x->op == Op::RealToBv) return fmt::format("cvt{}", bv_width(x->sort));
  return function_name(x);
}

// Like nodes: same op and the same payload that is not an operand (tensor, function, width, flags).
struct Key {
  Op op;
  uint64_t aux;
  bool operator<(const Key& o) const { return op != o.op ? op < o.op : aux < o.aux; }
  bool operator==(const Key& o) const { return op == o.op && aux == o.aux; }
};
Key key_of(Expr x) {
  switch (x->op) {
    case Op::TensorElem: case Op::Load: return {x->op, uint64_t(uint32_t(x->tensor()))};
    case Op::Call: return {x->op, uint64_t(x->fn())};
    case Op::Reduce: return {x->op, uint64_t(x->flags)};
    case Op::ZExt: case Op::SExt: case Op::Trunc: case Op::RealToBv: case Op::BvToReal:
      return {x->op, uint64_t(x->flags) << 16 | bv_width(x->sort)};
    default: return {x->op, 0};
  }
}

struct Text {
  std::string s;
  bool atomic = true;   // needs no parentheses as an operand
  bool grouped = false; // `sym_{k terms} …`: needs none after another such prefix either
};
std::string wrap(const Text& t) { return t.atomic ? t.s : "(" + t.s + ")"; }

std::string count_range(size_t lo, size_t hi, std::string_view what) {
  return lo == hi ? fmt::format("{} {}", lo, what) : fmt::format("{}..{} {}", lo, hi, what);
}

// Where a kind of operand prints among its siblings, the same for both sides of a pair whatever
// their hash order: compound operands first, then tensor elements and variables, constants last —
// constant factors first.
int print_rank(Op parent, Expr x) {
  if (x->is_const()) return parent == Op::Mul || parent == Op::BvMul ? 0 : 3;
  return x->is_leaf() ? 2 : 1;
}

// Groups of like nodes in print order; `solo` nodes (the path to a hole) stay alone.
std::vector<std::vector<Expr>> group_by_key(Op parent, std::span<const Expr> xs, const std::unordered_set<Expr>& solo) {
  std::vector<std::vector<Expr>> groups;
  std::map<Key, size_t> at;
  for (Expr x : xs) {
    if (solo.count(x)) {
      groups.push_back({x});
      continue;
    }
    auto [it, fresh] = at.try_emplace(key_of(x), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(x);
  }
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    int ra = print_rank(parent, a[0]), rb = print_rank(parent, b[0]);
    return ra != rb ? ra < rb : key_of(a[0]) < key_of(b[0]);
  });
  return groups;
}

struct Printer {
  const Context& ctx;
  const SummaryOptions& opt;
  Expr hole = nullptr;               // prints as □
  std::unordered_set<Expr> path;     // the hole and its ancestors: never folded into a pattern
  // Nodes a rendering may visit in patterns: a location of 10^7 nodes then prints shallower, in
  // milliseconds, instead of walking all of it at every depth.
  static constexpr size_t kWorkLimit = 1u << 18;
  struct TooMuch {};
  mutable size_t work = 0;
  mutable std::unordered_map<Expr, std::optional<LeafName>> names;

  std::optional<LeafName> leaf_name(Expr x) const {
    if (!opt.leaf) return std::nullopt;
    auto it = names.find(x);
    if (it == names.end()) it = names.emplace(x, opt.leaf(x->tensor(), x->index())).first;
    return it->second;
  }
  std::string tensor_name(Expr x) const { return std::string(detail::TensorRegistry::get().name(x->tensor())); }

  std::string constant(Expr x) const {
    switch (x->op) {
      case Op::ConstBool: return x->u ? "true" : "false";
      case Op::ConstBV: return x->u < 65536 ? std::to_string(x->u) : fmt::format("0x{:x}", x->u);
      case Op::ConstReal: {
        const mpq_class& q = x->rational();
        if (q.get_den() == 1 || q.get_str().size() <= 12) return q.get_str();
        return fmt::format("{:.6g}", q.get_d());
      }
      default: return "?";
    }
  }

  Text leaf(Expr x) const {
    switch (x->op) {
      case Op::Var: return {std::string(x->name())};
      case Op::Bound: return {fmt::format("k{}", x->u)};
      case Op::Undef: return {"undef"};
      case Op::TensorElem: {
        if (auto n = leaf_name(x)) {
          std::string s;
          for (size_t k = 0; k < n->index.size(); ++k) s += (k ? ", " : "") + std::to_string(n->index[k]);
          return {fmt::format("{}[{}]", n->tensor, s)};
        }
        return {fmt::format("{}[{}]", tensor_name(x), x->index())};
      }
      default: return {constant(x), !(x->op == Op::ConstReal && x->rational() < 0)};
    }
  }

  // f(args) / infix / ternary forms over already printed operands.
  Text compose(Expr x, const std::vector<Text>& parts) const {
    if (x->op == Op::Reduce && !parts.empty()) return {reduce_string(x, parts[0].s), false, true};
    if (x->op == Op::Not && parts.size() == 1) return {"!" + wrap(parts[0])};
    if (x->op == Op::BvNot && parts.size() == 1) return {"~" + wrap(parts[0])};
    if (x->op == Op::Load && parts.size() == 1) return {fmt::format("{}[{}]", tensor_name(x), parts[0].s)};
    if (x->op == Op::Ite && parts.size() == 3)
      return {fmt::format("{} ? {} : {}", wrap(parts[0]), wrap(parts[1]), wrap(parts[2])), false};
    if (x->op == Op::Call && x->fn() == Fn::Recip && parts.size() == 1) return {"1/" + wrap(parts[0])};
    std::string_view op = infix_symbol(x->op, "·");
    std::vector<std::string> ps;
    if (!op.empty()) {
      for (const auto& p : parts) ps.push_back(wrap(p));
      return {fmt::format("{}", fmt::join(ps, op)), parts.size() <= 1};
    }
    for (const auto& p : parts) ps.push_back(p.s);
    return {fmt::format("{}({})", head(x), fmt::join(ps, ", "))};
  }

  Text concrete(Expr x, int depth) const {
    if (x == hole) return {"□"};
    if (x->is_leaf()) return leaf(x);
    if (depth <= 0) return {"…"};
    if (is_nary(x->op) && x->nargs >= opt.group_min) {
      auto groups = group_by_key(x->op, x->args(), path);
      std::vector<Text> parts;
      for (auto& g : groups) parts.push_back(g.size() == 1 ? concrete(g[0], depth - 1) : grouped(x->op, g, g.size(), g.size(), depth));
      if (parts.size() == 1) return parts[0];
      return compose(x, parts);
    }
    std::vector<Expr> args(x->args().begin(), x->args().end());
    if (is_nary(x->op))
      std::stable_sort(args.begin(), args.end(), [&](Expr a, Expr b) {
        int ra = print_rank(x->op, a), rb = print_rank(x->op, b);
        return ra != rb ? ra < rb : key_of(a) < key_of(b);
      });
    std::vector<Text> parts;
    for (Expr c : args) parts.push_back(concrete(c, depth - 1));
    return compose(x, parts);
  }

  // `sym_{k terms} pattern`: k (lo..hi) operands of an `op` node, described by one pattern.
  Text grouped(Op op, const std::vector<Expr>& members, size_t lo, size_t hi, int depth) const {
    auto [sym, what] = nary_symbol(op);
    Text p = pattern(members, depth - 1);
    return {fmt::format("{}_{{{}}} {}", sym, count_range(lo, hi, what), p.grouped ? p.s : wrap(p)), false, true};
  }

  // A description of like nodes, one line for all of them.
  Text pattern(const std::vector<Expr>& in, int depth) const {
    if ((work += in.size()) > kWorkLimit) throw TooMuch{};  // (callers check first; this bounds the rest)
    std::vector<Expr> members;
    {
      std::unordered_set<Expr> seen;
      for (Expr m : in)
        if (seen.insert(m).second) members.push_back(m);
    }
    if (members.size() == 1) return concrete(members[0], depth);
    Expr m0 = members[0];
    if (depth <= 0 && !m0->is_leaf()) return {"…"};
    auto groups = group_by_key(Op::Count_, members, {});
    if (groups.size() > 1) {  // unlike nodes: the two largest kinds
      std::stable_sort(groups.begin(), groups.end(), [](auto& a, auto& b) { return a.size() > b.size(); });
      std::string s = "one of " + wrap(pattern(groups[0], depth)) + " | " + wrap(pattern(groups[1], depth));
      if (groups.size() > 2) s += " | …";
      return {s, false};
    }
    switch (m0->op) {
      case Op::TensorElem: return tensor_range(members);
      case Op::ConstBool: case Op::ConstBV: case Op::ConstReal: {
        std::vector<std::string> vs;
        for (Expr m : members) {
          std::string v = constant(m);
          if (std::find(vs.begin(), vs.end(), v) == vs.end()) vs.push_back(v);
        }
        if (vs.size() > 3) return {"c"};
        return {"{" + fmt::format("{}", fmt::join(vs, ", ")) + "}"};
      }
      case Op::Var: return {"v"};
      case Op::Undef: return {"undef"};
      default: break;
    }
    if (is_nary(m0->op)) {
      // The operands of all members, grouped; each group's count per member.
      std::vector<Expr> all;
      size_t amin = SIZE_MAX, amax = 0, total = 0;
      for (Expr m : members) {
        amin = std::min<size_t>(amin, m->nargs);
        amax = std::max<size_t>(amax, m->nargs);
        total += m->nargs;
      }
      if (work + total > kWorkLimit) {  // too many to describe: the counts only
        auto [sym, what] = nary_symbol(m0->op);
        return {fmt::format("{}_{{{}}} …", sym, count_range(amin, amax, what)), false, true};
      }
      for (Expr m : members) all.insert(all.end(), m->args().begin(), m->args().end());
      auto groups = group_by_key(m0->op, all, {});
      std::map<Key, size_t> gi;
      for (size_t k = 0; k < groups.size(); ++k) gi[key_of(groups[k][0])] = k;
      std::vector<size_t> cmin(groups.size(), SIZE_MAX), cmax(groups.size(), 0);
      for (Expr m : members) {
        std::vector<size_t> c(groups.size(), 0);
        for (Expr a : m->args()) ++c[gi.at(key_of(a))];
        for (size_t k = 0; k < groups.size(); ++k) {
          cmin[k] = std::min(cmin[k], c[k]);
          cmax[k] = std::max(cmax[k], c[k]);
        }
      }
      if (groups.size() == 1 && (amax >= opt.group_min || amin != amax)) return grouped(m0->op, groups[0], amin, amax, depth);
      std::vector<Text> parts;
      for (size_t k = 0; k < groups.size(); ++k) {
        if (cmin[k] == 1 && cmax[k] == 1) parts.push_back(pattern(groups[k], depth - 1));
        else parts.push_back(grouped(m0->op, groups[k], cmin[k], cmax[k], depth));
      }
      if (parts.size() == 1) return parts[0];
      return compose(m0, parts);
    }
    // Fixed arity: operand by operand.
    std::vector<Text> parts;
    for (unsigned i = 0; i < m0->nargs; ++i) {
      std::vector<Expr> col;
      for (Expr m : members) col.push_back(m->arg(i));
      parts.push_back(pattern(col, depth - 1));
    }
    return compose(m0, parts);
  }

  // Elements of one tensor: each index as a value or a lo..hi range.
  Text tensor_range(const std::vector<Expr>& members) const {
    std::vector<int64_t> lo, hi;
    std::string name;
    bool named = true;
    for (Expr m : members) {
      std::vector<int64_t> idx;
      if (auto n = named ? leaf_name(m) : std::nullopt) {
        name = n->tensor;
        idx = std::move(n->index);
      } else {
        named = false;
        name = tensor_name(m);
        idx = {m->index()};
      }
      if (lo.empty() || lo.size() != idx.size()) {
        lo = hi = idx;
        continue;
      }
      for (size_t k = 0; k < idx.size(); ++k) {
        lo[k] = std::min(lo[k], idx[k]);
        hi[k] = std::max(hi[k], idx[k]);
      }
    }
    std::string s;
    for (size_t k = 0; k < lo.size(); ++k)
      s += (k ? ", " : "") + (lo[k] == hi[k] ? std::to_string(lo[k]) : fmt::format("{}..{}", lo[k], hi[k]));
    return {fmt::format("{}[{}]", name, s)};
  }

  // The deepest rendering that fits opt.max_chars (counted in code points).
  std::string fit(const std::function<Text(int)>& render) const {
    auto width = [](const std::string& s) {
      return size_t(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
    };
    std::string best;
    for (int depth = 1; depth <= 12; ++depth) {
      std::string s;
      work = 0;
      try {
        s = render(depth).s;
      } catch (const TooMuch&) {
        break;
      }
      if (!best.empty() && width(s) > opt.max_chars) break;
      bool deeper = s != best;
      best = std::move(s);
      if (!deeper) break;  // nothing left to show
    }
    return best.empty() ? "…" : best;
  }
};

}  // namespace

std::string summarize(const Context& ctx, Expr e, const SummaryOptions& opt) {
  Printer p{ctx, opt, nullptr, {}};
  return p.fit([&](int d) { return p.concrete(e, d); });
}

PairSummary summarize_pair(const Context& ctx, Expr a, Expr b, const SummaryOptions& opt) {
  PairSummary out;
  Printer p{ctx, opt, nullptr, {}};
  // Walk down while the two differ in one operand only.
  std::vector<Expr> path;
  Expr x = a, y = b;
  std::string note;
  while (x != y && !x->is_leaf() && !y->is_leaf() && key_of(x) == key_of(y)) {
    if (!is_nary(x->op)) {
      if (x->nargs != y->nargs) break;
      int diff = -1, ndiff = 0;
      for (unsigned i = 0; i < x->nargs; ++i)
        if (x->arg(i) != y->arg(i)) diff = int(i), ++ndiff;
      if (ndiff != 1) break;
      path.push_back(x);
      x = x->arg(diff);
      y = y->arg(diff);
      continue;
    }
    std::unordered_set<Expr> in_y(y->args().begin(), y->args().end()), in_x(x->args().begin(), x->args().end());
    std::vector<Expr> only_x, only_y;
    for (Expr c : x->args())
      if (!in_y.count(c)) only_x.push_back(c);
    for (Expr c : y->args())
      if (!in_x.count(c)) only_y.push_back(c);
    if (only_x.size() == 1 && only_y.size() == 1) {
      path.push_back(x);
      x = only_x[0];
      y = only_y[0];
      continue;
    }
    // The differing part is the operand list itself: say which operands the two share.
    size_t n = x->nargs, m = y->nargs, common = n - only_x.size();
    std::string_view what = nary_symbol(x->op).second;
    Printer np{ctx, opt, nullptr, {}};
    auto describe = [&](const std::vector<Expr>& xs) {
      return np.fit([&](int d) {
        return xs.size() == 1 ? np.concrete(xs[0], d) : np.grouped(x->op, xs, xs.size(), xs.size(), d);
      });
    };
    if (common == 0) {
      note = "";
    } else if (only_y.empty()) {
      note = fmt::format("the candidate's {} {} are all among the reference's {}; missing from the candidate: {}", m, what,
                         n, describe(only_x));
    } else if (only_x.empty()) {
      note = fmt::format("the reference's {} {} are all among the candidate's {}; only in the candidate: {}", n, what, m,
                         describe(only_y));
    } else {
      note = fmt::format("{} {} are the same in both; only in the reference: {}; only in the candidate: {}", common, what,
                         describe(only_x), describe(only_y));
    }
    break;
  }
  out.note = std::move(note);
  if (x == y) {  // equal values: nothing differs
    out.shared = summarize(ctx, a, opt);
    return out;
  }
  if (!path.empty()) {
    Printer ctxp{ctx, opt, x, {}};
    ctxp.path.insert(path.begin(), path.end());
    ctxp.path.insert(x);
    out.shared = ctxp.fit([&](int d) { return ctxp.concrete(a, d + int(path.size())); });
  }
  out.ref = summarize(ctx, x, opt);
  out.cand = summarize(ctx, y, opt);
  return out;
}

}  // namespace dirigo::ir
