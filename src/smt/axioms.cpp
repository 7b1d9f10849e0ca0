#include "smt/axioms.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "ir/walk.h"
#include "smt/translate.h"  // kLn2Var

namespace dirigo::smt {

using ir::Expr;
using ir::Fn;
using ir::Op;

std::string_view axiom_name(Axiom a) {
  static constexpr std::string_view names[] = {
      "SigmoidToExp", "TanhToExp", "SoftplusToLog", "Log1pToLog", "Expm1ToExp", "Exp2ToExp",
      "Log2ToLog", "RsqrtToRecip", "SiluToSigmoid", "MishToTanh", "EluToExp", "ErfcToErf",
      "SinhCoshToExp", "PowSmallInt", "ExpSum", "RecipExp", "ExpLog", "SqrtSquare", "ExpShift",
      "GeluTanhIsErf", "GeluErfForm", "GeluTanhForm", "FastMathIsExact", "SnapConstants", "SoftplusThreshold"};
  static_assert(std::size(names) == static_cast<size_t>(Axiom::Count_));
  return names[static_cast<size_t>(a)];
}

bool axiom_is_approximation(Axiom a) {
  return a == Axiom::GeluTanhIsErf || a == Axiom::FastMathIsExact || a == Axiom::GeluErfForm ||
         a == Axiom::GeluTanhForm || a == Axiom::SnapConstants || a == Axiom::SoftplusThreshold;
}

bool AxiomOptions::on(Axiom a) const {
  if (a == Axiom::GeluTanhIsErf && !gelu_tanh_is_erf) return false;
  if (a == Axiom::FastMathIsExact && !fast_math_is_exact) return false;
  if ((a == Axiom::GeluErfForm || a == Axiom::GeluTanhForm) && !gelu_forms) return false;
  if (a == Axiom::SnapConstants && !gelu_forms && !fast_math_is_exact) return false;
  return enabled[static_cast<size_t>(a)];
}

uint64_t AxiomOptions::fingerprint() const {
  uint64_t h = 0;
  for (size_t i = 0; i < enabled.size(); ++i) h |= uint64_t{on(static_cast<Axiom>(i))} << i;
  return h;
}

// ---- sign facts (depth-bounded: a shallow look suffices for the rules that use it)
namespace {
bool sign_fact(Expr e, bool strict, int depth) {
  if (depth > 8) return false;
  switch (e->op) {
    case Op::ConstReal: return strict ? e->rational() > 0 : e->rational() >= 0;
    case Op::Abs: return !strict;
    case Op::Call:
      switch (e->fn()) {
        case Fn::Exp: return true;
        case Fn::Sigmoid: return true;
        case Fn::Softplus: return true;
        case Fn::Sqrt: return !strict;
        case Fn::Recip: return sign_fact(e->arg(0), true, depth + 1);
        default: return false;
      }
    case Op::Add: {
      bool any_pos = false;
      for (Expr t : e->args()) {
        if (!sign_fact(t, false, depth + 1)) return false;
        any_pos = any_pos || sign_fact(t, true, depth + 1);
      }
      return !strict || any_pos;
    }
    case Op::Mul: {
      // every factor of the right sign, or a factor repeated an even number of times (x*x)
      auto args = e->args();
      for (size_t i = 0; i < args.size();) {
        size_t j = i;
        while (j < args.size() && args[j] == args[i]) ++j;
        bool even = (j - i) % 2 == 0;
        if (!(even && !strict) && !sign_fact(args[i], strict, depth + 1)) return false;
        i = j;
      }
      return true;
    }
    case Op::Max:
      for (Expr t : e->args())
        if (sign_fact(t, strict, depth + 1)) return true;
      return false;
    case Op::Min:
      for (Expr t : e->args())
        if (!sign_fact(t, strict, depth + 1)) return false;
      return true;
    default: return false;
  }
}

// Coefficient of the first non-constant term of a sum or product (1 if none).
mpq_class leading_coefficient(Expr t) {
  if (t->op == Op::Add) {
    for (Expr s : t->args())
      if (!s->is_const()) return leading_coefficient(s);
    return 1;
  }
  if (t->op == Op::Mul && t->arg(0)->op == Op::ConstReal) return t->arg(0)->rational();
  return 1;
}

bool near(const mpq_class& c, double target) {
  double d = c.get_d();
  return std::fabs(d / target - 1) < 1e-6;
}

const mpq_class& f32_log2e() {
  static const mpq_class q(static_cast<double>(static_cast<float>(1.4426950408889634)));
  return q;
}
const mpq_class& f32_ln2() {
  static const mpq_class q(static_cast<double>(static_cast<float>(0.6931471805599453)));
  return q;
}

// Canonical rationals of the irrationals kernels and PyTorch spell with
// different roundings (f32 vs f64). Related values are exact functions of
// one another (sqrt2 = 2/sqrt2, log2e = 1/ln2, the GELU-tanh cubic
// coefficient = sqrt(2/pi)*0.044715) so that canonical products cancel.
const mpq_class& inv_sqrt2() { static const mpq_class q(0.7071067811865476); return q; }
const mpq_class& sqrt_2_over_pi() { static const mpq_class q(0.7978845608028654); return q; }
const mpq_class& gelu_tanh_cubic() { static const mpq_class q(0.044715); return q; }
const mpq_class& ln2_q() { static const mpq_class q(0.6931471805599453); return q; }

struct KnownConstant {
  double value;
  mpq_class canonical;
};
const std::vector<KnownConstant>& known_constants() {
  static const std::vector<KnownConstant> table = {
      {0.7071067811865476, inv_sqrt2()},
      {0.7978845608028654, sqrt_2_over_pi()},
      {0.044715, gelu_tanh_cubic()},
      {0.7978845608028654 * 0.044715, mpq_class(sqrt_2_over_pi() * gelu_tanh_cubic())},
      {0.6931471805599453, ln2_q()},
      {1.4426950408889634, mpq_class(1 / ln2_q())},
      {3.141592653589793, mpq_class(3.141592653589793)},
      // last: plain small rationals. A kernel's 0.16666667f (hardswish's 1/6), 0.1f or 1.0000001f and
      // PyTorch's double 1/6 are one constant; left apart, Z3 finds their 10^-8 difference and the
      // location is a SUSPECT no witness can show
      {1.0, mpq_class(1)},
  };
  return table;
}

constexpr double kF32RelTol = 0x1p-22;  // f32 rounding of a constant, with a little slack

// n/d with small n, d that v approximates within f32 relative error.
std::optional<mpq_class> small_rational_near(double v) {
  double d = std::fabs(v);
  if (d == 0 || !std::isfinite(d)) return std::nullopt;
  // and decimal scales: a norm's eps, 1e-5f against PyTorch's double 1e-5
  for (long den : {1L, 2L, 3L, 4L, 5L, 6L, 8L, 10L, 100L, 1000L, 10000L, 100000L, 1000000L, 10000000L, 100000000L,
                   1000000000L, 10000000000L, 100000000000L, 1000000000000L}) {
    double scaled = d * static_cast<double>(den);
    double num = std::round(scaled);
    if (num < 1 || num > 64 || std::fabs(scaled / num - 1) >= kF32RelTol) continue;
    return mpq_class(static_cast<long>(v < 0 ? -num : num), den);
  }
  return std::nullopt;
}

// The scale a of a GELU form a*0.5*s*(1 + erf(s/sqrt(2))): a small rational n/d, or 1/n (a mean's
// 1/900 folded into every term of the pooled sum). Any other value would match too (t == k*s is
// checked for the k it implies) but would name erf(c*x) with a c far from 1/sqrt(2) a GELU of a
// rescaled argument: the scale is the guard.
std::optional<mpq_class> form_scale(double v) {
  if (auto r = small_rational_near(v)) return r;
  double inv = 1 / std::fabs(v), n = std::round(inv);
  if (n >= 1 && n <= double(1 << 24) && std::fabs(inv / n - 1) < kF32RelTol)
    return mpq_class(1, static_cast<unsigned long>(n)) * (v < 0 ? -1 : 1);
  return std::nullopt;
}

// The canonical rational that c approximates, if any: (n/d) * a known
// constant (canonicalization folds small scales into coefficients:
// 0.70710678f*2 = sqrt(2), 3*sqrt(2/pi)*0.044715 in (x+y)^3).
std::optional<mpq_class> snapped(const mpq_class& c) {
  double d = c.get_d();
  for (const KnownConstant& k : known_constants())
    if (auto r = small_rational_near(d / k.value)) {
      mpq_class q = *r * k.canonical;
      if (q == c) return std::nullopt;
      return q;
    }
  return std::nullopt;
}

bool near_f32(const mpq_class& c, const mpq_class& target) {
  return std::fabs(c.get_d() / target.get_d() - 1) < kF32RelTol;
}
}  // namespace

bool provably_nonneg(Expr e) { return sign_fact(e, false, 0); }
bool provably_positive(Expr e) { return sign_fact(e, true, 0); }

// ---- the normalizer

Normalizer::Normalizer(ir::Context& ctx, AxiomOptions opt) : ctx_(ctx), opt_(opt) {}

uint64_t Normalizer::total_applications() const {
  uint64_t n = 0;
  for (uint64_t c : counts_) n += c;
  return n;
}

bool Normalizer::fire(Axiom a) {
  if (!opt_.on(a)) return false;
  ++counts_[static_cast<size_t>(a)];
  return true;
}

Expr Normalizer::ln2() { return ctx_.var(kLn2Var, ir::Sort::Real); }

Expr Normalizer::small_power(Expr base, int64_t n) {
  if (n == 0) return ctx_.real_const(1);
  std::vector<Expr> xs(static_cast<size_t>(n < 0 ? -n : n), base);
  Expr p = ctx_.mul(xs);
  return n < 0 ? ctx_.call(Fn::Recip, p) : p;
}

Expr Normalizer::operator()(Expr root) {
  if (auto it = memo_.find(root); it != memo_.end()) return it->second;
  Expr named = walk(root, forms_memo_, &Normalizer::recognize_forms);
  Expr out = walk(named, memo_, &Normalizer::rewrite);
  memo_[root] = out;
  return out;
}

Expr Normalizer::walk(Expr root, std::unordered_map<Expr, Expr>& memo, Expr (Normalizer::*step)(Expr)) {
  if (auto it = memo.find(root); it != memo.end()) return it->second;
  struct Frame {
    Expr e;
    int state;       // 0: push children; 1: rebuild+rewrite; 2: waiting for `pending`
    Expr pending;
  };
  std::vector<Frame> stack{{root, 0, nullptr}};
  // node size saturates; the limit only guards against a rule cycle
  uint64_t steps = 0, limit = 64 * std::min<uint64_t>(root->size, uint64_t{1} << 40) + (1u << 20);
  while (!stack.empty()) {
    if (++steps > limit) throw std::runtime_error("axiom normalization did not terminate (rule cycle)");
    if (ticker_) ticker_->tick("while normalizing both sides (axioms)");
    Frame& f = stack.back();
    if (f.state == 0) {
      if (memo.count(f.e)) { stack.pop_back(); continue; }
      f.state = 1;
      Expr e = f.e;
      for (Expr c : e->args())
        if (!memo.count(c)) stack.push_back({c, 0, nullptr});
      continue;
    }
    if (f.state == 1) {
      Expr e = f.e;
      Expr r = ir::rebuild_from_children(ctx_, e, memo);
      Expr r2 = (this->*step)(r);
      if (r2 == r) {
        memo[e] = r;
        memo[r] = r;
        stack.pop_back();
        continue;
      }
      if (auto it = memo.find(r2); it != memo.end()) {
        memo[e] = it->second;
        stack.pop_back();
        continue;
      }
      // the rewrite may expose further rules: normalize its result, then come back
      f.state = 2;
      f.pending = r2;
      stack.push_back({r2, 0, nullptr});
      continue;
    }
    memo[f.e] = memo.at(f.pending);
    stack.pop_back();
  }
  return memo.at(root);
}

// ---- expanded GELU formulas

namespace {
std::span<const Expr> terms_of(const Expr& e);

// A factor's scale: max(0, c*x) = c * max(0, x) for c > 0, and (c*x + c*y) = c * (x + y). The ir rules
// move a product's positive constant into its first min/max factor (MulDistributeMinMax), so a GELU's
// cubic term k*0.044715*s^3 reads s*s*max(0, k*0.044715*x) for a ReLU output s; sums among
// other factors are primitive (MulSumContent), but a sum built before that holds its scale: the scale is
// read back out of the factor either way.
std::pair<mpq_class, Expr> unscale_factor(ir::Context& ctx, Expr f) {
  if (f->op == Op::Add) {
    Expr first = nullptr;
    for (Expr t : f->args())
      if (!t->is_const()) { first = t; break; }
    if (!first || first->op != Op::Mul || first->arg(0)->op != Op::ConstReal) return {1, f};
    mpq_class c = first->arg(0)->rational();
    if (c == 0 || c == 1) return {1, f};
    return {c, ctx.mul(ctx.real_const(mpq_class(1 / c)), f)};
  }
  if (f->op != Op::Min && f->op != Op::Max) return {1, f};
  std::optional<mpq_class> c;  // the first non-constant argument's lead coefficient
  for (Expr a : f->args()) {
    if (a->is_const()) continue;
    if (a->op == Op::Min || a->op == Op::Max) {  // a clamp: max(lo, k*x) inside min(hi, ...)
      c = unscale_factor(ctx, a).first;
      break;
    }
    Expr first = terms_of(a)[0]->is_const() && terms_of(a).size() > 1 ? terms_of(a)[1] : terms_of(a)[0];
    c = first->op == Op::Mul && first->arg(0)->op == Op::ConstReal ? first->arg(0)->rational() : mpq_class(1);
    break;
  }
  if (!c || *c <= 0 || *c == 1) return {1, f};
  std::vector<Expr> args;
  for (Expr a : f->args()) args.push_back(ctx.mul(ctx.real_const(mpq_class(1 / *c)), a));
  return {*c, f->op == Op::Max ? ctx.max(args) : ctx.min(args)};
}

// term = coefficient * monomial, with the scales of its min/max and sum factors in the coefficient
std::pair<mpq_class, Expr> split_coefficient(ir::Context& ctx, Expr t) {
  if (t->op == Op::ConstReal) return {t->rational(), ctx.real_const(1)};
  mpq_class c = 1;
  std::vector<Expr> factors;
  for (Expr f : t->op == Op::Mul ? t->args() : std::span<const Expr>(&t, 1)) {
    if (f->op == Op::ConstReal) { c *= f->rational(); continue; }
    auto [scale, g] = unscale_factor(ctx, f);
    c *= scale;
    factors.push_back(g);
  }
  return {c, factors.size() == 1 ? factors[0] : ctx.mul(factors)};
}

std::span<const Expr> terms_of(const Expr& e) { return e->op == Op::Add ? e->args() : std::span<const Expr>(&e, 1); }

// Coefficient of monomial m in the canonical sum t (0 if absent).
mpq_class coefficient_of(ir::Context& ctx, Expr t, Expr m) {
  for (Expr term : terms_of(t)) {
    auto [c, mono] = split_coefficient(ctx, term);
    if (mono == m) return c;
  }
  return 0;
}

// The first non-constant term's (coefficient, monomial) of a canonical sum.
std::optional<std::pair<mpq_class, Expr>> lead(ir::Context& ctx, Expr s) {
  for (Expr term : terms_of(s))
    if (!term->is_const()) return split_coefficient(ctx, term);
  return std::nullopt;
}

}  // namespace

Expr Normalizer::snap_constant(Expr e) {
  if (!opt_.on(Axiom::SnapConstants)) return e;
  auto q = snapped(e->rational());
  if (!q) return e;
  fire(Axiom::SnapConstants);
  return ctx_.real_const(*q);
}

// One GELU form in the sum e: f (an erf/tanh factor) with the terms carrying it. Returns
// (a, s) when those terms and f's argument spell a*0.5*s*(1 + f(k*s ...)), else nullopt.
std::optional<std::pair<mpq_class, Expr>> Normalizer::gelu_form(Expr f, const std::vector<Expr>& carriers) {
  // the terms carrying f sum to s*f/2
  std::vector<Expr> quotients;
  for (Expr term : carriers) {
    if (term == f) { quotients.push_back(ctx_.real_const(1)); continue; }
    std::vector<Expr> rest;
    bool removed = false;
    for (Expr a : term->args()) {
      if (a == f && !removed) { removed = true; continue; }
      rest.push_back(a);
    }
    quotients.push_back(ctx_.mul(rest));
  }
  if (quotients.empty()) return std::nullopt;
  // The terms carrying f sum to q*f with q = a*s/2 for some small rational
  // scale a, and f's argument is k*s (+ the cubic) with k ~ 1/sqrt(2) (resp.
  // sqrt(2/pi)) as the program spelled it. On q's lead monomial m:
  // coef(t, m) = k * lead(s) = k * 2*lead(q)/a fixes a (rounded to n/d),
  // then s = 2q/a exactly, and t is checked exactly against k*s.
  Expr q = ctx_.add(quotients);
  auto q_lead = lead(ctx_, q);
  if (!q_lead) return std::nullopt;
  Expr t = f->arg(0);
  bool is_erf = f->fn() == Fn::Erf;
  const mpq_class& k_ideal = is_erf ? inv_sqrt2() : sqrt_2_over_pi();
  mpq_class ct = coefficient_of(ctx_, t, q_lead->second);
  if (ct == 0) return std::nullopt;
  double a_value = mpq_class(2 * k_ideal * q_lead->first / ct).get_d();
  if (a_value == 0 || !std::isfinite(a_value)) return std::nullopt;
  auto a_near = form_scale(a_value);
  if (!a_near) return std::nullopt;
  const mpq_class a = *a_near;
  Expr s = ctx_.mul(ctx_.real_const(mpq_class(2 / a)), q);
  // q's lead monomial in s (not s's own lead: a scale inside min/max factors reorders the terms)
  const mpq_class s_coef = coefficient_of(ctx_, s, q_lead->second);
  if (s_coef == 0) return std::nullopt;
  const mpq_class k = ct / s_coef;  // the program's constant
  if (!near_f32(k, k_ideal)) return std::nullopt;
  Expr ks = ctx_.mul(ctx_.real_const(k), s);
  if (is_erf) {  // erf(s/sqrt(2))
    if (ks != t) return std::nullopt;
  } else {  // tanh(sqrt(2/pi) * (s + 0.044715 s^3))
    // s^3 as the product, or as pow(s, 3) (a kernel's powf(x, 3.0f): this pass runs before PowSmallInt)
    Expr cubic = ctx_.sub(t, ks);
    auto cubic_is = [&](Expr s3) {
      auto c_lead = lead(ctx_, s3);
      if (!c_lead) return false;
      mpq_class kc = coefficient_of(ctx_, cubic, c_lead->second) / c_lead->first;
      if (!near(kc / k, 0.044715)) return false;
      if (terms_of(s3).size() == 1)
        // one term: cubic must be kc*s^3 up to where the scales sit (split_coefficient reads them out of
        // min/max and sum factors exactly; rebuilt, kc may land in another factor than the program's)
        return terms_of(cubic).size() == 1 && split_coefficient(ctx_, cubic).second == c_lead->second;
      return ctx_.add(ks, ctx_.mul(ctx_.real_const(kc), s3)) == t;
    };
    if (!cubic_is(ctx_.mul(std::vector<Expr>{s, s, s})) && !cubic_is(ctx_.call(Fn::Pow, s, ctx_.real_const(3))))
      return std::nullopt;
  }
  if (!opt_.on(is_erf ? Axiom::GeluErfForm : Axiom::GeluTanhForm)) return std::nullopt;
  return std::make_pair(a, s);
}

// Every GELU form of a sum in ONE pass: e - a*(s/2 + s*f/2) + a*gelu(s) for each form found,
// accepted when every such f is gone and the sum shrank. A pooled sum of 900 expanded GELUs
// (50,000 terms) must not be rescanned per candidate and rebuilt per form: that was cubic.
Expr Normalizer::recognize_forms(Expr e) {
  if (!opt_.gelu_forms) return e;
  Expr original = e;
  if (Expr expanded = expand_binomial_forms(e)) e = expanded;
  if (e->op != Op::Add) return original;
  std::vector<Expr> candidates;  // erf/tanh factors in order of first appearance
  std::unordered_map<Expr, std::vector<Expr>> carriers;  // factor -> the terms carrying it
  for (Expr term : e->args()) {
    if (ticker_) ticker_->tick("while recognizing GELU forms (axioms)");
    std::span<const Expr> factors = term->op == Op::Mul ? term->args() : std::span<const Expr>(&term, 1);
    for (Expr f : factors) {
      if (f->op != Op::Call || (f->fn() != Fn::Erf && f->fn() != Fn::Tanh)) continue;
      auto [it, fresh] = carriers.try_emplace(f);
      if (fresh) candidates.push_back(f);
      if (it->second.empty() || it->second.back() != term) it->second.push_back(term);
    }
  }
  const mpq_class half(1, 2);
  struct Found {
    Expr f, expanded, named;
    size_t carrying;
  };
  std::vector<Found> found;
  for (Expr f : candidates) {
    if (ticker_) ticker_->check("while recognizing GELU forms (axioms)");
    const auto& carrying = carriers.at(f);
    auto form = gelu_form(f, carrying);
    if (!form) continue;
    auto [a, s] = *form;
    Expr ha = ctx_.real_const(mpq_class(half * a));
    Expr expanded = ctx_.add(ctx_.mul(ha, s), ctx_.mul(std::vector<Expr>{ha, s, f}));
    Fn named = f->fn() == Fn::Erf ? Fn::GeluErf : Fn::GeluTanh;
    found.push_back({f, expanded, ctx_.mul(ctx_.real_const(a), ctx_.call(named, s)), carrying.size()});
  }
  if (found.empty()) return original;
  // Whether `replaced` is free of the forms' factors and no longer than e (plus one term per form).
  auto accept = [&](Expr replaced, std::span<const Found> forms) {
    std::unordered_set<Expr> fs;
    size_t carrying = 0;
    for (const Found& x : forms) fs.insert(x.f), carrying += x.carrying;
    for (Expr term : terms_of(replaced)) {
      std::span<const Expr> factors = term->op == Op::Mul ? term->args() : std::span<const Expr>(&term, 1);
      for (Expr g : factors)
        if (fs.count(g)) return false;
    }
    return terms_of(replaced).size() + carrying <= terms_of(e).size() + forms.size();
  };
  auto replace = [&](std::span<const Found> forms) {
    std::vector<Expr> parts{e};
    for (const Found& x : forms) parts.push_back(ctx_.neg(x.expanded)), parts.push_back(x.named);
    return ctx_.add(parts);
  };
  auto fire_all = [&](std::span<const Found> forms) {
    for (const Found& x : forms) fire(x.f->fn() == Fn::Erf ? Axiom::GeluErfForm : Axiom::GeluTanhForm);
  };
  if (Expr all = replace(found); accept(all, found)) {
    fire_all(found);
    return all;  // walked again: forms that only show after these are found then
  }
  for (size_t i = 0; i < found.size(); ++i) {  // together they do not fit: one at a time
    std::span<const Found> one(&found[i], 1);
    if (Expr r = replace(one); accept(r, one)) {
      fire_all(one);
      return r;
    }
  }
  return original;
}

// A GELU of a long sum S stays factored: 0.5*S*(1 + tanh(u)) has 2|S| terms distributed, past
// MulDistributeSmall's limit (e.g. S a sum of 128 minima). Such products — a product with a
// factor of at most 4 terms one of which carries erf/tanh — are expanded over that factor so that
// recognize_forms sees the terms it matches; nullptr when there is none.
Expr Normalizer::expand_binomial_forms(Expr e) {
  auto carries = [](Expr x) {
    std::span<const Expr> fs = x->op == Op::Mul ? x->args() : std::span<const Expr>(&x, 1);
    return std::any_of(fs.begin(), fs.end(),
                       [](Expr f) { return f->op == Op::Call && (f->fn() == Fn::Erf || f->fn() == Fn::Tanh); });
  };
  auto binomial = [&](Expr f) {
    return f->op == Op::Add && f->nargs <= 4 && std::any_of(f->args().begin(), f->args().end(), carries);
  };
  std::vector<Expr> terms;
  bool any = false;
  for (Expr t : terms_of(e)) {
    if (ticker_) ticker_->tick("while recognizing GELU forms (axioms)");
    auto fs = t->op == Op::Mul ? t->args() : std::span<const Expr>();
    auto b = std::find_if(fs.begin(), fs.end(), binomial);
    if (b == fs.end()) {
      terms.push_back(t);
      continue;
    }
    any = true;
    std::vector<Expr> rest;
    for (auto it = fs.begin(); it != fs.end(); ++it)
      if (it != b) rest.push_back(*it);
    for (Expr g : (*b)->args()) {
      std::vector<Expr> xs = rest;
      xs.push_back(g);
      terms.push_back(ctx_.mul(xs));
    }
  }
  return any ? ctx_.add(terms) : nullptr;
}

Expr Normalizer::rewrite(Expr e) {
  if (e->op == Op::ConstReal) return snap_constant(e);  // constants the rules below create
  if (e->op == Op::Call) return rewrite_call(e);
  if (e->op == Op::Mul) return rewrite_mul(e);
  if (e->op == Op::Ite && e->sort == ir::Sort::Real) return softplus_threshold(e);
  return e;
}

// PyTorch's softplus returns x itself where b*x passes its threshold t (20), and so does every kernel
// that copies it; there x and softplus(b*x)/b differ by log1p(exp(-b*x))/b, relatively at most
// exp(-t)/t: less than half an fp32 ulp of x once exp(-t) <= t * 2^-24 (t >= 15). Children are
// normalized, so softplus, log1p(exp) and log(1 + exp) all read log(1 + exp(y)) here.
Expr Normalizer::softplus_threshold(Expr e) {
  Expr c = e->arg(0), hi = e->arg(1), lo = e->arg(2);
  if (c->op == Op::Not) c = c->arg(0), std::swap(hi, lo);
  Expr t, y, x, s;  // t < y ? x : s
  if (c->op == Op::Lt && c->arg(0)->op == Op::ConstReal)
    t = c->arg(0), y = c->arg(1), x = hi, s = lo;
  else if (c->op == Op::Le && c->arg(1)->op == Op::ConstReal)  // y <= t ? s : x
    t = c->arg(1), y = c->arg(0), x = lo, s = hi;
  else
    return e;
  double td = t->rational().get_d();
  if (!(td > 0) || std::exp(-td) > td * 0x1p-24) return e;
  Expr sp = ctx_.call(Fn::Log, ctx_.add(ctx_.real_const(1), ctx_.call(Fn::Exp, y)));
  if (y == x) return s == sp && fire(Axiom::SoftplusThreshold) ? s : e;
  // b != 1: y = b*x, s = sp/b; b read off the leading coefficients, then checked by building b*x
  auto coefficient = [](Expr z) -> mpq_class {
    if (z->op == Op::Add) z = z->arg(z->nargs - 1);
    return z->op == Op::Mul && z->arg(0)->op == Op::ConstReal ? z->arg(0)->rational() : mpq_class(1);
  };
  mpq_class b = coefficient(y) / coefficient(x);
  if (b <= 0 || ctx_.mul(ctx_.real_const(b), x) != y) return e;
  Expr scaled = ctx_.mul(ctx_.real_const(mpq_class(1 / b)), sp);
  return s == scaled && fire(Axiom::SoftplusThreshold) ? s : e;
}

Expr Normalizer::rewrite_call(Expr e) {
  Expr x = e->arg(0);
  auto one = [&] { return ctx_.real_const(1); };
  switch (e->fn()) {
    case Fn::Sigmoid:
      if (fire(Axiom::SigmoidToExp)) return ctx_.call(Fn::Recip, ctx_.add(one(), ctx_.call(Fn::Exp, ctx_.neg(x))));
      break;
    case Fn::Tanh:
      if (fire(Axiom::TanhToExp)) {
        Expr two_x = ctx_.mul(ctx_.real_const(2), x);
        return ctx_.sub(ctx_.mul(ctx_.real_const(2), ctx_.call(Fn::Sigmoid, two_x)), one());
      }
      break;
    case Fn::Softplus:
      if (fire(Axiom::SoftplusToLog)) return ctx_.call(Fn::Log, ctx_.add(one(), ctx_.call(Fn::Exp, x)));
      break;
    case Fn::Log1p:
      if (fire(Axiom::Log1pToLog)) return ctx_.call(Fn::Log, ctx_.add(one(), x));
      break;
    case Fn::Expm1:
      if (fire(Axiom::Expm1ToExp)) return ctx_.sub(ctx_.call(Fn::Exp, x), one());
      break;
    case Fn::Exp2: {
      // Fast-math: ex2(c*x) with c ~ log2(e) is the usual lowering of exp(x).
      if (opt_.on(Axiom::FastMathIsExact) && fire(Axiom::FastMathIsExact)) {
        mpq_class c = leading_coefficient(x);
        mpq_class k = near(c, 1.4426950408889634) ? c : f32_log2e();
        return ctx_.call(Fn::Exp, ctx_.mul(ctx_.real_const(mpq_class(1 / k)), x));
      }
      if (fire(Axiom::Exp2ToExp)) return ctx_.call(Fn::Exp, ctx_.mul(x, ln2()));
      break;
    }
    case Fn::Log2:
      if (opt_.on(Axiom::FastMathIsExact) && fire(Axiom::FastMathIsExact))
        return ctx_.mul(ctx_.real_const(mpq_class(1 / f32_ln2())), ctx_.call(Fn::Log, x));
      if (fire(Axiom::Log2ToLog)) return ctx_.mul(ctx_.call(Fn::Log, x), ctx_.call(Fn::Recip, ln2()));
      break;
    case Fn::Rsqrt:
      if (fire(Axiom::RsqrtToRecip)) return ctx_.call(Fn::Recip, ctx_.call(Fn::Sqrt, x));
      break;
    case Fn::Silu:
      if (fire(Axiom::SiluToSigmoid)) return ctx_.mul(x, ctx_.call(Fn::Sigmoid, x));
      break;
    case Fn::Mish:
      if (fire(Axiom::MishToTanh)) return ctx_.mul(x, ctx_.call(Fn::Tanh, ctx_.call(Fn::Softplus, x)));
      break;
    case Fn::Elu:
      if (fire(Axiom::EluToExp)) return ctx_.ite(ctx_.lt(ctx_.real_const(0), x), x, ctx_.call(Fn::Expm1, x));
      break;
    case Fn::Erfc:
      if (fire(Axiom::ErfcToErf)) return ctx_.sub(one(), ctx_.call(Fn::Erf, x));
      break;
    case Fn::Sinh:
    case Fn::Cosh:
      if (fire(Axiom::SinhCoshToExp)) {
        Expr p = ctx_.call(Fn::Exp, x), m = ctx_.call(Fn::Exp, ctx_.neg(x));
        Expr s = e->fn() == Fn::Sinh ? ctx_.sub(p, m) : ctx_.add(p, m);
        return ctx_.mul(ctx_.real_const(mpq_class(1, 2)), s);
      }
      break;
    case Fn::Pow: {
      Expr n = e->arg(1);
      if (n->op != Op::ConstReal) break;
      const mpq_class& q = n->rational();
      if (q.get_den() == 1 && abs(q.get_num()) <= 8 && fire(Axiom::PowSmallInt))
        return small_power(x, q.get_num().get_si());
      if (q == mpq_class(1, 2) && fire(Axiom::PowSmallInt)) return ctx_.call(Fn::Sqrt, x);
      if (q == mpq_class(-1, 2) && fire(Axiom::PowSmallInt)) return ctx_.call(Fn::Recip, ctx_.call(Fn::Sqrt, x));
      break;
    }
    case Fn::GeluTanh:
      if (fire(Axiom::GeluTanhIsErf)) return ctx_.call(Fn::GeluErf, x);
      break;
    case Fn::Recip:
      if (x->op == Op::Call && x->fn() == Fn::Exp && fire(Axiom::RecipExp))
        return ctx_.call(Fn::Exp, ctx_.neg(x->arg(0)));
      if (auto shifted = exp_shift(x); shifted && fire(Axiom::ExpShift))
        return ctx_.mul(ctx_.call(Fn::Exp, ctx_.neg(shifted->first)), ctx_.call(Fn::Recip, shifted->second));
      break;
    case Fn::Log:
      if (auto shifted = exp_shift(x); shifted && fire(Axiom::ExpShift))
        return ctx_.add(shifted->first, ctx_.call(Fn::Log, shifted->second));
      break;
    case Fn::Exp: {
      // exp(k*log(y)) -> y^k for y > 0
      Expr lg = nullptr;
      int64_t k = 0;
      if (x->op == Op::Call && x->fn() == Fn::Log) {
        lg = x, k = 1;
      } else if (x->op == Op::Mul && x->nargs == 2 && x->arg(0)->op == Op::ConstReal &&
                 x->arg(1)->op == Op::Call && x->arg(1)->fn() == Fn::Log) {
        const mpq_class& c = x->arg(0)->rational();
        if (c.get_den() == 1 && abs(c.get_num()) <= 8) lg = x->arg(1), k = c.get_num().get_si();
      }
      if (lg && provably_positive(lg->arg(0)) && fire(Axiom::ExpLog)) return small_power(lg->arg(0), k);
      break;
    }
    default: break;
  }
  return e;
}

// S = sum_j exp(T + b_j) * r_j with T the summands every term's exp argument shares (a softmax's
// -max, or log-sum-exp's): (T, sum_j exp(b_j) * r_j), so 1/S and log(S) drop the shift exactly as
// the unshifted forms read. Every term must carry exactly one exp factor (ExpSum merged the rest).
std::optional<std::pair<Expr, Expr>> Normalizer::exp_shift(Expr s) {
  if ((s->op != Op::Add && s->op != Op::Reduce) || !opt_.on(Axiom::ExpShift)) return std::nullopt;
  auto exp_of = [](Expr term) -> Expr {
    Expr found = nullptr;
    for (Expr f : term->op == Op::Mul ? term->args() : std::span<const Expr>(&term, 1))
      if (f->op == Op::Call && f->fn() == Fn::Exp) {
        if (found) return nullptr;
        found = f;
      }
    return found;
  };
  if (s->op == Op::Reduce) {  // sum_k exp(T + b(k)) * r(k) with T independent of k: the same shift, once
    if (s->reduce_op() != ir::ReduceOp::Sum || s->has_free_bound()) return std::nullopt;
    Expr body = s->reduce_body();
    Expr f = exp_of(body);
    if (!f) return std::nullopt;
    Expr arg = f->arg(0);
    std::vector<Expr> common;
    for (Expr x : terms_of(arg))
      if (!x->is_const() && !x->has_free_bound()) common.push_back(x);
    if (common.empty()) return std::nullopt;
    Expr shift = ctx_.add(common);
    std::vector<Expr> factors;
    for (Expr g : body->op == Op::Mul ? body->args() : std::span<const Expr>(&body, 1))
      factors.push_back(g == f ? ctx_.call(Fn::Exp, ctx_.sub(f->arg(0), shift)) : g);
    std::vector<std::pair<int64_t, int64_t>> box;
    for (unsigned d = 0; d < s->reduce_rank(); ++d) box.emplace_back(s->reduce_lo(d), s->reduce_hi(d));
    return std::make_pair(shift, ctx_.reduce_abstracted(ir::ReduceOp::Sum, box, ctx_.mul(factors)));
  }
  std::vector<Expr> common;  // summands of the first term's argument found in every other one
  for (Expr term : s->args()) {
    if (ticker_) ticker_->tick("while shifting sums of exponentials (axioms)");
    Expr f = exp_of(term);
    if (!f) return std::nullopt;
    Expr arg = f->arg(0);  // terms_of spans a lone summand in place: keep it alive
    std::span<const Expr> summands = terms_of(arg);
    if (term == s->arg(0)) {
      for (Expr x : summands)
        if (!x->is_const()) common.push_back(x);
    } else {
      std::erase_if(common, [&](Expr x) { return std::find(summands.begin(), summands.end(), x) == summands.end(); });
    }
    if (common.empty()) return std::nullopt;
  }
  Expr shift = ctx_.add(common);
  std::vector<Expr> terms;
  for (Expr term : s->args()) {
    Expr f = exp_of(term);
    std::vector<Expr> factors;
    for (Expr g : term->op == Op::Mul ? term->args() : std::span<const Expr>(&term, 1))
      factors.push_back(g == f ? ctx_.call(Fn::Exp, ctx_.sub(f->arg(0), shift)) : g);
    terms.push_back(ctx_.mul(factors));
  }
  return std::make_pair(shift, ctx_.add(terms));
}

Expr Normalizer::rewrite_mul(Expr e) {
  auto args = e->args();
  // exp(a)*exp(b) -> exp(a+b)
  size_t n_exp = 0;
  for (Expr t : args) n_exp += t->op == Op::Call && t->fn() == Fn::Exp;
  if (n_exp >= 2 && opt_.on(Axiom::ExpSum)) {
    fire(Axiom::ExpSum);
    std::vector<Expr> exps, factors;
    for (Expr t : args) {
      if (t->op == Op::Call && t->fn() == Fn::Exp) exps.push_back(t->arg(0));
      else factors.push_back(t);
    }
    factors.push_back(ctx_.call(Fn::Exp, ctx_.add(exps)));
    return ctx_.mul(factors);
  }
  // sqrt(x)*sqrt(x) -> x when x >= 0
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    Expr t = args[i];
    if (t->op == Op::Call && t->fn() == Fn::Sqrt && args[i + 1] == t && provably_nonneg(t->arg(0)) &&
        opt_.on(Axiom::SqrtSquare)) {
      fire(Axiom::SqrtSquare);
      std::vector<Expr> factors(args.begin(), args.end());
      factors.erase(factors.begin() + static_cast<long>(i), factors.begin() + static_cast<long>(i) + 2);
      factors.push_back(t->arg(0));
      return ctx_.mul(factors);
    }
  }
  return e;
}

}  // namespace dirigo::smt
