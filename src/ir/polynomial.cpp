#include "ir/polynomial.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/expr_internal.h"
#include "ir/reduce.h"
#include "ir/walk.h"

namespace dirigo::ir {
namespace {

// Monomials by their atoms' node ids (sorted, repeated for powers), so that both sides of one
// context order them alike.
using Monomial = std::vector<uint32_t>;
using Poly = std::map<Monomial, mpq_class>;

struct Expander {
  Context& ctx;
  const ExpansionOptions& opt;
  std::unordered_map<Expr, Poly> polys;   // real Add / Mul / ConstReal nodes (and their forms, lazily)
  std::unordered_map<Expr, Expr> forms;   // the other nodes: rebuilt over expanded operands
  std::unordered_map<uint32_t, Expr> atom_of;
  size_t work = 0;

  void tick() {
    if ((++work & 4095) == 0 && opt.tick) opt.tick();
  }

  static bool polynomial(Expr e) {
    return e->sort == Sort::Real && (e->op == Op::Add || e->op == Op::Mul || e->op == Op::ConstReal);
  }

  Poly atom(Expr form) {
    if (form->op == Op::ConstReal) return form->rational() == 0 ? Poly{} : Poly{{{}, form->rational()}};
    atom_of.emplace(form->id, form);
    return Poly{{{form->id}, mpq_class(1)}};
  }

  // The poly of an operand already visited: its own, or its expanded form as one atom.
  const Poly& operand(Expr c, Poly& holder) {
    if (auto it = polys.find(c); it != polys.end()) return it->second;
    return holder = atom(forms.at(c));
  }

  Expr form_of(Expr c) {
    if (auto it = forms.find(c); it != forms.end()) return it->second;
    Expr f = to_expr(polys.at(c));
    forms.emplace(c, f);
    return f;
  }

  Expr to_expr(const Poly& p) {
    std::vector<Expr> terms;
    terms.reserve(p.size());
    for (const auto& [m, coef] : p) {
      tick();
      std::vector<Expr> f{ctx.real_const(coef)};
      for (uint32_t id : m) f.push_back(atom_of.at(id));
      terms.push_back(f.size() == 1 ? f[0] : ctx.mul(f));
    }
    if (terms.empty()) return ctx.real_const(0);
    return terms.size() == 1 ? terms[0] : ctx.add(terms);
  }

  std::optional<Poly> product(const Poly& a, const Poly& b) {
    if (a.size() * b.size() > opt.max_terms) return std::nullopt;
    Poly out;
    for (const auto& [ma, ca] : a)
      for (const auto& [mb, cb] : b) {
        tick();
        Monomial m;
        m.reserve(ma.size() + mb.size());
        std::merge(ma.begin(), ma.end(), mb.begin(), mb.end(), std::back_inserter(m));
        mpq_class& slot = out[m];
        slot += ca * cb;
        if (slot == 0) out.erase(m);
      }
    return out;
  }

  void visit(Expr e) {
    if (e->nargs == 0 && e->op != Op::ConstReal) {
      forms.emplace(e, e);
      return;
    }
    if (!polynomial(e)) {  // an atom over expanded operands
      std::vector<Expr> args;
      bool same = true;
      for (Expr c : e->args()) {
        args.push_back(form_of(c));
        same = same && args.back() == c;
      }
      forms.emplace(e, same ? e : ctx.rebuild(e, args));
      return;
    }
    std::optional<Poly> p;
    if (e->op == Op::ConstReal) {
      p = atom(e);
    } else if (e->op == Op::Add) {
      p.emplace();
      for (Expr c : e->args()) {
        Poly holder;
        for (const auto& [m, coef] : operand(c, holder)) {
          tick();
          mpq_class& slot = (*p)[m];
          slot += coef;
          if (slot == 0) p->erase(m);
        }
        if (p->size() > opt.max_terms) { p.reset(); break; }
      }
    } else {
      p = Poly{{{}, mpq_class(1)}};
      for (Expr c : e->args()) {
        Poly holder;
        p = product(*p, operand(c, holder));
        if (!p) break;
      }
    }
    if (!p) {  // past the budget: one atom over expanded operands
      std::vector<Expr> args;
      for (Expr c : e->args()) args.push_back(form_of(c));
      forms.emplace(e, ctx.rebuild(e, args));
      return;
    }
    polys.emplace(e, std::move(*p));
  }
};

bool sum_like(Expr f) {
  return f->sort == Sort::Real && ((f->op == Op::Add && f->nargs >= 2) ||
                                   (f->op == Op::Reduce && f->reduce_op() == ReduceOp::Sum));
}

Expr collect_in_sum(Context& ctx, Expr sum, const std::function<void()>& tick) {
  struct Cand {
    size_t term, factor;
  };
  std::map<std::vector<Expr>, std::vector<Cand>> groups;  // (coefficient, the other factors) -> terms
  std::vector<std::vector<Expr>> factors(sum->nargs);
  for (size_t t = 0; t < sum->nargs; ++t) {
    if ((t & 4095) == 4095 && tick) tick();
    Expr x = sum->arg(t);
    std::vector<Expr>& fs = factors[t];
    if (x->op == Op::Mul) fs.assign(x->args().begin(), x->args().end());
    else fs = {x};
    if (fs[0]->op != Op::ConstReal) fs.insert(fs.begin(), ctx.real_const(1));
    for (size_t f = 1; f < fs.size(); ++f) {
      if (!sum_like(fs[f]) || (f > 1 && fs[f] == fs[f - 1])) continue;
      std::vector<Expr> key = fs;
      key.erase(key.begin() + std::ptrdiff_t(f));
      groups[key].push_back({t, f});
    }
  }
  std::vector<const std::pair<const std::vector<Expr>, std::vector<Cand>>*> order;
  for (const auto& g : groups)
    if (g.second.size() >= 2) order.push_back(&g);
  if (order.empty()) return sum;
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->second.size() > b->second.size(); });
  std::vector<char> used(sum->nargs, 0);
  std::vector<Expr> out;
  for (auto* g : order) {
    std::vector<Expr> parts;
    for (const Cand& c : g->second)
      if (!used[c.term]) parts.push_back(factors[c.term][c.factor]);
    if (parts.size() < 2) continue;
    for (const Cand& c : g->second) used[c.term] = 1;
    std::vector<Expr> f = g->first;
    f.push_back(merge_interleaved(ctx, ctx.add(parts)));
    out.push_back(ctx.mul(f));
  }
  for (size_t t = 0; t < sum->nargs; ++t)
    if (!used[t]) out.push_back(sum->arg(t));
  return ctx.add(out);
}
}  // namespace

Expr collect_partial_sums(Context& ctx, Expr e, const std::function<void()>& tick) {
  detail::NodeMap<Expr> memo;
  return rebuild_post_order(
      ctx, e, memo, [&](Expr x) -> Expr { return x->nargs == 0 ? x : nullptr; },
      [&](Expr, Expr r) {
        return r->op == Op::Add && r->sort == Sort::Real && !r->has_free_bound() ? collect_in_sum(ctx, r, tick) : r;
      });
}

Expr expansion(Context& ctx, Expr e, const ExpansionOptions& opt) {
  if (e->has_undef()) return nullptr;
  Expander x{ctx, opt, {}, {}, {}};
  post_order(e, [&](Expr n) { return x.forms.count(n) > 0 || x.polys.count(n) > 0; }, [&](Expr n) { x.visit(n); });
  return x.form_of(e);
}

}  // namespace dirigo::ir
