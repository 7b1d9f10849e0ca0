// Sums (Add, BvAdd): terms as coefficient * monomial, like terms combined, constant first, division/
// remainder pairs recombined, and the O(1) extension of a canonical sum by one term.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

Context::Impl::Term Context::Impl::decompose(Sort s, const Expr* slot) {
  Expr t = *slot;
  Op mulop = s == Sort::Real ? Op::Mul : Op::BvMul;
  Term r{one(s), slot, 1, t->hash, t, one(s)};
  if (t->op == mulop) {
    if (t->args_[0]->is_const()) {
      r.coef = r.orig_coef = t->args_[0];
      r.f = t->args_ + 1;
      r.nf = t->nargs - 1;
      r.key = r.nf == 1 ? r.f[0]->hash : t->hash - child_mix(t->args_[0]);  // hash of Mul(f...)
    } else {
      r.f = t->args_;
      r.nf = t->nargs;
    }
  }
  return r;
}

bool Context::Impl::same_mono(const Term& a, const Term& b) {
  return a.key == b.key && a.nf == b.nf && std::equal(a.f, a.f + a.nf, b.f);
}

bool Context::Impl::mono_has_undef(const Term& t) {
  for (uint32_t i = 0; i < t.nf; ++i)
    if (t.f[i]->has_undef()) return true;
  return false;
}

Expr Context::Impl::mono_node(Sort s, const Term& t) {
  if (t.nf == 1) return t.f[0];
  return raw(s == Sort::Real ? Op::Mul : Op::BvMul, s, {t.f, t.nf});
}

bool Context::Impl::term_less(Sort s, const Term& a, const Term& b) {
  if (a.key != b.key) return a.key < b.key;
  if (same_mono(a, b)) return false;
  return compare(mono_node(s, a), mono_node(s, b)) < 0;
}

Expr Context::Impl::term_node(Sort s, const Term& t) {
  if (t.coef == t.orig_coef) return t.orig;
  if (is_one(t.coef)) return mono_node(s, t);
  // A new coefficient of a monomial with a min/max factor goes where mul_n puts a constant
  // (MulDistributeMinMax): c*max(0, x) scaled by a sum's distribution must be mul_n(c, max(0, x)).
  if (s == Sort::Real && t.coef->rational() != -1 &&
      std::any_of(t.f, t.f + t.nf, [](Expr f) { return f->op == Op::Min || f->op == Op::Max; })) {
    std::vector<Expr> a{t.coef};
    a.insert(a.end(), t.f, t.f + t.nf);
    return mul_n(s, a);
  }
  std::vector<Expr> a;
  a.reserve(t.nf + 1);
  a.push_back(t.coef);
  a.insert(a.end(), t.f, t.f + t.nf);
  return raw(s == Sort::Real ? Op::Mul : Op::BvMul, s, a);
}

Expr Context::Impl::add_n(Sort s, std::span<const Expr> xs) {
  Op addop = s == Sort::Real ? Op::Add : Op::BvAdd;
  check_sorts(xs, s, op_name(addop));
  if (xs.empty()) return zero(s);
  if (xs.size() == 1) return xs[0];
  if (s == Sort::Real && on(Rule::ReduceMerge)) {
    // Reductions among the operands, and among the terms of small sums next to them.
    bool any = false;
    for (Expr x : xs) any |= x->op == Op::Reduce || (x->op == Op::Mul && x->nargs == 2 && x->args_[1]->op == Op::Reduce);
    if (any) {
      std::vector<Expr> flat;
      for (Expr x : xs) {
        if (x->op == Op::Add && x->nargs <= kDistributeLimit) flat.insert(flat.end(), x->args_, x->args_ + x->nargs);
        else flat.push_back(x);
      }
      if (merge_reductions(Op::Add, flat)) return add_n(s, flat);
    }
  }
  if (xs.size() == 2) {  // big canonical sum + one term (a reduction loop): O(log n) search, one copy
    if (Expr r = add_one(s, xs[0], xs[1])) return r;
    if (Expr r = add_one(s, xs[1], xs[0])) return r;
  }
  Expr c = zero(s);
  unsigned nconst = 0;
  std::vector<Term> terms;
  size_t total = xs.size() + 4;  // reserved once: growing per flattened sum copied O(n^2) (a sum of 1024 dot products)
  // A scaled sum too big to distribute (c*S, kDistributeConstLimit) stays one term while it is the only
  // big part of the sum (x - mean: 8194 terms, not 8 M); next to another big sum it is distributed, so
  // that shared terms cancel (S - S = 0, (S + y) - S = y) as they did before.
  unsigned big = 0;
  for (Expr x : xs) {
    if (x->op == addop) total += x->nargs;
    if ((x->op == addop && x->nargs > kDistributeConstLimit) || scaled_big_sum(x, addop)) ++big;
  }
  if (big >= 2)
    for (Expr x : xs)
      if (scaled_big_sum(x, addop)) total += x->args_[1]->nargs;
  terms.reserve(total);
  auto push = [&](const Expr* slot) {
    Term t = decompose(s, slot);
    if (is_zero(t.coef) && !mono_has_undef(t)) return;
    terms.push_back(t);
  };
  auto konst = [&](Expr k) {
    if (!take_const(nconst)) return false;
    c = cadd(c, k);
    return true;
  };
  for (size_t i = 0; i < xs.size(); ++i) {
    Expr x = xs[i];
    if (x->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
    if (x->op == addop && apply(Rule::AddFlatten)) {
      uint32_t j = 0;
      if (x->args_[0]->is_const() && konst(x->args_[0])) j = 1;
      for (; j < x->nargs; ++j) push(x->args_ + j);
    } else if (big >= 2 && scaled_big_sum(x, addop) && apply(Rule::AddFlatten)) {
      Expr k = x->args_[0], sum = x->args_[1];
      for (uint32_t j = 0; j < sum->nargs; ++j) {
        if (j == 0 && sum->args_[0]->is_const() && konst(cmul(k, sum->args_[0]))) continue;
        Term t = decompose(s, sum->args_ + j);
        t.coef = cmul(k, t.coef);
        if (!is_zero(t.coef) || mono_has_undef(t)) terms.push_back(t);
      }
    } else if (x->is_const() && konst(x)) {
    } else {
      push(xs.data() + i);
    }
  }
  if (on(Rule::AddSort) && sort_runs(terms, [&](const Term& a, const Term& b) { return term_less(s, a, b); }))
    apply(Rule::AddSort);
  size_t n = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (n && same_mono(terms[n - 1], terms[i]) && apply(Rule::AddCombineLike)) {
      terms[n - 1].coef = cadd(terms[n - 1].coef, terms[i].coef);
    } else {
      terms[n++] = terms[i];
    }
  }
  terms.resize(n);
  std::erase_if(terms, [&](const Term& t) { return is_zero(t.coef) && !mono_has_undef(t); });
  if (terms.empty()) return c;
  if (s != Sort::Real && terms.size() >= 2 && on(Rule::BvDivModRecombine))
    if (Expr r = recombine_divmod(s, c, terms)) return r;
  bool keep_zero = nconst > 0 && !on(Rule::AddIdentity);
  if (terms.size() == 1 && is_zero(c) && !keep_zero) {
    if (nconst > 0 || xs.size() > 1) apply(Rule::AddIdentity);
    return term_node(s, terms[0]);
  }
  std::vector<Expr> args;
  args.reserve(terms.size() + 1);
  if (!is_zero(c) || keep_zero) args.push_back(c);
  for (const Term& t : terms) args.push_back(term_node(s, t));
  return raw(addop, s, args);
}

namespace {
// g as a quotient or remainder of x by a constant d: x/d and x>>s (div), x%d and x & (2^s-1) (rem).
struct DivModField {
  Expr x;
  uint64_t d;
  bool div;
};
std::optional<DivModField> divmod_field(Expr g, unsigned w) {
  const uint64_t m = width_mask(w);
  auto k = [&](unsigned i) { return g->args_[i]->op == Op::ConstBV ? std::optional<uint64_t>(g->args_[i]->u) : std::nullopt; };
  if ((g->op == Op::BvUDiv || g->op == Op::BvURem) && k(1) && *k(1) >= 2) return DivModField{g->args_[0], *k(1), g->op == Op::BvUDiv};
  if (g->op == Op::BvLShr && k(1) && *k(1) >= 1 && *k(1) < w) return DivModField{g->args_[0], uint64_t(1) << *k(1), true};
  if (g->op == Op::BvAnd && g->nargs == 2 && k(0) && *k(0) != m && is_pow2(*k(0) + 1))
    return DivModField{g->args_[1], *k(0) + 1, false};
  return std::nullopt;
}
}  // namespace

// k*c*(x/c) + k*(x%c) -> k*x (also with x>>s and x & (2^s-1), and a middle field:
// k*2^s*(x>>(t+s)) + k*((x>>t) & (2^s-1)) -> k*(x>>t)): the index split row = i / N, col = i % N
// recombined as row*N + col. Also the differences k*x - k*c*(x/c) -> k*(x%c) and
// k*x - k*(x%c) -> k*c*(x/c) (see split_divmod). Returns nullptr if nothing matched.
Expr Context::Impl::recombine_divmod(Sort s, Expr c0, std::vector<Term>& terms) {
  std::vector<char> gone(terms.size(), 0);
  std::vector<Expr> extra;
  join_divmod(s, terms, gone, extra);
  split_divmod(s, c0, terms, gone, extra);
  if (extra.empty()) return nullptr;
  std::vector<Expr> out = std::move(extra);
  if (!is_zero(c0)) out.push_back(c0);
  for (size_t i = 0; i < terms.size(); ++i)
    if (!gone[i]) out.push_back(term_node(s, terms[i]));
  return add_n(s, out);
}

// k*x - k*c*(x/c) -> k*(x%c) and k*x - k*(x%c) -> k*c*(x/c), x a sum whose terms appear scaled by k
// among `terms` (its constant taken from c0): exact for unsigned division — x = c*(x/c) + x%c holds
// in the integers with both parts at most x, so modulo 2^w too. A kernel's `c = i - (i/N)*N` and
// `start = c - c%G` become bounded fields instead of differences no interval can bound.
void Context::Impl::split_divmod(Sort s, Expr& c0, std::vector<Term>& terms, std::vector<char>& gone,
                                 std::vector<Expr>& extra) {
  const unsigned w = bv_width(s);
  const uint64_t m = width_mask(w);
  for (size_t j = 0; j < terms.size(); ++j) {
    if (gone[j] || terms[j].nf != 1 || terms[j].f[0]->has_undef()) continue;
    Expr g = terms[j].f[0];
    auto field = divmod_field(g, w);
    if (!field) continue;
    const bool div = field->div;
    const uint64_t d = field->d;
    const Expr* xslot = g->op == Op::BvAnd ? &g->args_[1] : &g->args_[0];  // x's slot in g, for decompose
    Expr x = *xslot;
    std::vector<Term> xt;  // x's monomials
    uint64_t x0 = 0;       // and its constant
    if (x->op == Op::BvAdd) {
      for (uint32_t a = 0; a < x->nargs; ++a)
        if (x->args_[a]->op == Op::ConstBV) x0 += x->args_[a]->u;
        else xt.push_back(decompose(s, &x->args_[a]));
    } else {
      xt.push_back(decompose(s, xslot));
    }
    // k from a monomial of coefficient 1 in x
    auto unit = std::find_if(xt.begin(), xt.end(), [&](const Term& t) { return is_one(t.coef); });
    if (unit == xt.end()) continue;
    std::vector<size_t> used;
    auto find = [&](const Term& t, uint64_t coef) -> bool {
      for (size_t i = 0; i < terms.size(); ++i)
        if (i != j && !gone[i] && same_mono(terms[i], t) && (coef == UINT64_MAX || terms[i].coef->u == coef) &&
            std::find(used.begin(), used.end(), i) == used.end()) {
          used.push_back(i);
          return true;
        }
      return false;
    };
    if (!find(*unit, UINT64_MAX)) continue;
    uint64_t k = terms[used[0]].coef->u;
    uint64_t want = div ? (0 - k * d) & m : (0 - k) & m;
    if (terms[j].coef->u != want) continue;
    bool all = true;
    for (const Term& t : xt)
      if (&t != &*unit && !find(t, (k * t.coef->u) & m)) { all = false; break; }
    if (!all || !apply(Rule::BvDivModRecombine)) continue;
    for (size_t i : used) gone[i] = 1;
    gone[j] = 1;
    c0 = mk_bv(s, (c0->u - k * x0) & m);
    Expr part = div ? urem_const(x, d) : udiv_const(x, d, false);
    Expr kx[] = {mk_bv(s, div ? k : (k * d) & m), part};
    extra.push_back(mul_n(s, kx));
  }
}

// k*c*(x/c) + k*(x%c) -> k*x (recombine_divmod's first form).
void Context::Impl::join_divmod(Sort s, std::vector<Term>& terms, std::vector<char>& gone, std::vector<Expr>& extra) {
  struct Rem {
    Expr x;
    uint64_t d;
    size_t i;
  };
  const unsigned w = bv_width(s);
  const uint64_t m = width_mask(w);
  std::vector<Rem> rems;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].nf != 1 || terms[i].f[0]->has_undef()) continue;
    if (auto f = divmod_field(terms[i].f[0], w); f && !f->div) rems.push_back({f->x, f->d, i});
  }
  if (rems.empty()) return;
  for (size_t j = 0; j < terms.size(); ++j) {
    if (terms[j].nf != 1) continue;
    Expr g = terms[j].f[0];
    auto q = divmod_field(g, w);
    if (!q || !q->div) continue;
    Expr x = q->x;
    uint64_t d = q->d;
    for (const Rem& r : rems) {
      if (gone[r.i]) continue;
      // also a middle field of x: (x>>t) & (2^(q-t) - 1) next to x>>q is x>>t (a flat index split by a view)
      bool field = g->op == Op::BvLShr && r.x->op == Op::BvLShr && r.x->args_[0] == x &&
                   r.x->args_[1]->op == Op::ConstBV && r.x->args_[1]->u < g->args_[1]->u &&
                   (r.d << r.x->args_[1]->u) == d;
      // or a remainder of x reduced already: x & (2^s - 1) is (x - c*2^s) & (2^s - 1) for any c, and a
      // block-split index holds its quotient over x and its remainder over x with multiples dropped
      bool congruent = !field && r.x != x && r.d == d && is_pow2(d) && drop_multiples(x, d) == drop_multiples(r.x, d);
      if (!field && !congruent && (r.x != x || r.d != d)) continue;
      uint64_t k = terms[r.i].coef->u;
      if (((k * r.d) & m) != terms[j].coef->u || !apply(Rule::BvDivModRecombine)) continue;
      gone[r.i] = gone[j] = 1;
      Expr kx[] = {mk_bv(s, k), congruent ? x : r.x};
      extra.push_back(mul_n(s, kx));
      break;
    }
  }
}

// c * S for a sum S kept factored (more than kDistributeConstLimit terms).
bool Context::Impl::scaled_big_sum(Expr x, Op addop) {
  return x->nargs == 2 && (x->op == Op::Mul || x->op == Op::BvMul) && x->args_[0]->is_const() &&
         x->args_[1]->op == addop && x->args_[1]->nargs > kDistributeConstLimit;
}

// sum + t for a canonical sum with many terms and a single non-sum t; nullptr if not applicable.
Expr Context::Impl::add_one(Sort s, Expr sum, Expr t) {
  Op addop = s == Sort::Real ? Op::Add : Op::BvAdd;
  if (sum->op != addop || sum->nargs < 16 || t->op == addop || t->op == Op::Undef || sum->has_undef() ||
      (scaled_big_sum(t, addop) && sum->nargs > kDistributeConstLimit) ||
      t->has_undef() || !on(Rule::AddFlatten) || !on(Rule::AddSort) || !on(Rule::AddCombineLike) ||
      !on(Rule::AddIdentity) || !on(Rule::ConstFold))
    return nullptr;
  apply(Rule::AddFlatten);
  const Expr* first = sum->args_;
  const Expr* last = sum->args_ + sum->nargs;
  bool has_c = first[0]->is_const();
  std::vector<Expr> args;
  args.reserve(sum->nargs + 1);
  auto plus = [](uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; };
  auto minus = [](uint64_t a, uint64_t b) { return a == UINT64_MAX ? a : a - b; };
  auto build = [&](uint64_t h, uint64_t size) {
    Pre pre{h, static_cast<uint8_t>(sum->attrs | t->attrs), size};
    return intern(Key{addop, s, 0, args}, &pre);
  };
  if (t->is_const()) {
    apply(Rule::ConstFold);
    Expr c = has_c ? cadd(first[0], t) : t;
    if (is_zero(c)) return nullptr;  // the constant vanishes: general path
    args.push_back(c);
    args.insert(args.end(), first + (has_c ? 1 : 0), last);
    uint64_t h = sum->hash + child_mix(c) - (has_c ? child_mix(first[0]) : 0);
    return build(h, plus(minus(sum->size, has_c ? first[0]->size : 0), c->size));
  }
  Term tt = decompose(s, &t);
  if (s != Sort::Real && tt.nf == 1) {  // may pair with a div/rem term: general path
    Op o = tt.f[0]->op;
    if (o == Op::BvURem || o == Op::BvAnd || o == Op::BvUDiv || o == Op::BvLShr) return nullptr;
  }
  // lower_bound over the terms by monomial order
  const Expr* lo = first + (has_c ? 1 : 0);
  size_t n = last - lo;
  while (n > 0) {
    size_t half = n / 2;
    Term m = decompose(s, lo + half);
    if (term_less(s, m, tt)) { lo += half + 1; n -= half + 1; }
    else n = half;
  }
  args.insert(args.end(), first, lo);
  if (lo != last) {
    Term m = decompose(s, lo);
    if (same_mono(m, tt)) {
      Expr coef = cadd(m.coef, tt.coef);
      if (is_zero(coef)) return nullptr;  // a term vanishes: general path
      apply(Rule::AddCombineLike);
      m.coef = coef;
      Expr nt = term_node(s, m);
      args.push_back(nt);
      args.insert(args.end(), lo + 1, last);
      return build(sum->hash - child_mix(*lo) + child_mix(nt), plus(minus(sum->size, (*lo)->size), nt->size));
    }
  }
  apply(Rule::AddSort);
  args.push_back(t);
  args.insert(args.end(), lo, last);
  return build(sum->hash + child_mix(t), plus(sum->size, t->size));
}

// The coefficient of a real sum's first non-constant term (1 when it has none).
mpq_class Context::Impl::sum_lead(Expr sum) {
  for (uint32_t i = 0; i < sum->nargs; ++i) {
    Expr a = sum->args_[i];
    if (a->is_const()) continue;
    return a->op == Op::Mul && a->args_[0]->op == Op::ConstReal ? a->args_[0]->rational() : mpq_class(1);
  }
  return 1;
}

// Whether every non-constant term of a real sum has coefficient `lead` (stops at the first that does not).
bool Context::Impl::uniform_sum(Expr sum, const mpq_class& lead) {
  for (uint32_t i = 0; i < sum->nargs; ++i) {
    Expr a = sum->args_[i];
    if (a->is_const()) continue;
    bool has = a->op == Op::Mul && a->args_[0]->op == Op::ConstReal;
    if (has ? a->args_[0]->rational() != lead : lead != 1) return false;
  }
  return true;
}

// c * (sum): scale every term's coefficient.
Expr Context::Impl::scale_sum(Sort s, Expr sum, Expr c) {
  std::vector<Expr> out;
  out.reserve(sum->nargs);
  for (uint32_t i = 0; i < sum->nargs; ++i) {
    Expr a = sum->args_[i];
    if (a->is_const()) { out.push_back(cmul(c, a)); continue; }
    Term t = decompose(s, sum->args_ + i);
    t.coef = cmul(c, t.coef);
    if (is_zero(t.coef) && !mono_has_undef(t)) continue;
    out.push_back(term_node(s, t));
  }
  return add_n(s, out);
}

}  // namespace dirigo::ir
