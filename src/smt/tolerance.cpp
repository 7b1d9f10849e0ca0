#include "smt/tolerance.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "ir/eval.h"  // apply_fn
#include "ir/walk.h"
#include "smt/translate.h"  // kLn2Var

namespace dirigo::smt {

using ir::Expr;
using ir::Fn;
using ir::Op;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const Interval kAll{-kInf, kInf};

// Outward slack for double rounding: every computed bound grows by a relative 1e-12 per operand.
Interval widen(Interval v, size_t operands = 1) {
  double r = 1e-12 * double(operands + 1);
  double m = std::max(std::fabs(v.lo), std::fabs(v.hi));
  if (!std::isfinite(m)) return std::isnan(v.lo) || std::isnan(v.hi) ? kAll : v;
  return {v.lo - r * m, v.hi + r * m};
}
double up(double x, size_t operands = 1) { return std::isfinite(x) ? x * (1 + 1e-12 * double(operands + 1)) : kInf; }

Interval mul_iv(Interval a, Interval b) {
  if (a.lo == 0 && a.hi == 0) return {0, 0};
  if (b.lo == 0 && b.hi == 0) return {0, 0};
  double p[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  double lo = kInf, hi = -kInf;
  for (double x : p) {
    if (std::isnan(x)) return kAll;  // 0 * inf
    lo = std::min(lo, x), hi = std::max(hi, x);
  }
  return {lo, hi};
}
Interval square_iv(Interval a) {
  double m = a.mag();
  double l = a.lo <= 0 && a.hi >= 0 ? 0 : std::min(std::fabs(a.lo), std::fabs(a.hi));
  return {l * l, m * m};
}

double const_value(Expr c) { return c->rational().get_d(); }

// Image of a monotone or bounded function over [lo, hi].
Interval fn_image(Fn f, Interval x) {
  auto inc = [&](double (*g)(double)) { return Interval{g(x.lo), g(x.hi)}; };
  switch (f) {
    case Fn::Exp: return inc([](double v) { return std::exp(v); });
    case Fn::Exp2: return inc([](double v) { return std::exp2(v); });
    case Fn::Expm1: return inc([](double v) { return std::expm1(v); });
    case Fn::Tanh: return inc([](double v) { return std::tanh(v); });
    case Fn::Erf: return inc([](double v) { return std::erf(v); });
    case Fn::Erfc: return {std::erfc(x.hi), std::erfc(x.lo)};
    case Fn::Atan: return inc([](double v) { return std::atan(v); });
    case Fn::Asinh: return inc([](double v) { return std::asinh(v); });
    case Fn::Sinh: return inc([](double v) { return std::sinh(v); });
    case Fn::Sigmoid: return inc([](double v) { return 1 / (1 + std::exp(-v)); });
    case Fn::Softplus: return {std::max(0.0, ir::apply_fn(Fn::Softplus, x.lo)), ir::apply_fn(Fn::Softplus, x.hi)};
    case Fn::Elu: return inc([](double v) { return ir::apply_fn(Fn::Elu, v); });
    case Fn::Selu: return inc([](double v) { return ir::apply_fn(Fn::Selu, v); });
    case Fn::Log: return x.lo > 0 ? inc([](double v) { return std::log(v); }) : kAll;
    case Fn::Log2: return x.lo > 0 ? inc([](double v) { return std::log2(v); }) : kAll;
    case Fn::Log1p: return x.lo > -1 ? inc([](double v) { return std::log1p(v); }) : kAll;
    case Fn::Sqrt: return x.lo >= 0 ? inc([](double v) { return std::sqrt(v); }) : kAll;
    case Fn::Rsqrt: return x.lo > 0 ? Interval{1 / std::sqrt(x.hi), 1 / std::sqrt(x.lo)} : kAll;
    case Fn::Recip:
      if (x.lo > 0 || x.hi < 0) return {1 / x.hi, 1 / x.lo};
      return kAll;
    // not monotone, bounded below by their minimum, above by max(x, 0)
    case Fn::GeluErf:
    case Fn::GeluTanh: return {-0.1701, std::max(0.0, x.hi)};
    case Fn::Silu: return {-0.2785, std::max(0.0, x.hi)};
    case Fn::Mish: return {-0.3089, std::max(0.0, x.hi)};
    case Fn::Sin:
    case Fn::Cos:
    case Fn::Sign: return {-1, 1};
    case Fn::Floor:
    case Fn::Ceil:
    case Fn::Round:
    case Fn::Trunc: return {std::floor(x.lo) - 1, std::ceil(x.hi) + 1};
    default: return kAll;
  }
}

// sup |f'| over [lo, hi] (inf when unknown or unbounded).
double lipschitz(Fn f, Interval x) {
  switch (f) {
    case Fn::Tanh:
    case Fn::Softplus:
    case Fn::Atan:
    case Fn::Asinh:
    case Fn::Sin:
    case Fn::Cos:
    case Fn::Elu: return 1;
    case Fn::Sigmoid: return 0.25;
    case Fn::Erf:
    case Fn::Erfc: return 1.1284;   // 2/sqrt(pi)
    case Fn::GeluErf:
    case Fn::GeluTanh: return 1.14;  // max gelu' ~ 1.129
    case Fn::Silu: return 1.11;      // max silu' ~ 1.0998
    case Fn::Mish: return 1.2;       // max mish' ~ 1.09
    case Fn::Selu: return 1.76;      // 1.0507 * 1.6733 * e^0
    case Fn::Exp:
    case Fn::Expm1: return std::exp(x.hi);
    case Fn::Exp2: return 0.6931471805599454 * std::exp2(x.hi);
    case Fn::Sinh: return std::cosh(std::max(std::fabs(x.lo), std::fabs(x.hi)));
    case Fn::Log: return x.lo > 0 ? 1 / x.lo : kInf;
    case Fn::Log2: return x.lo > 0 ? 1 / (x.lo * 0.6931471805599453) : kInf;
    case Fn::Log1p: return x.lo > -1 ? 1 / (1 + x.lo) : kInf;
    case Fn::Sqrt: return x.lo > 0 ? 0.5 / std::sqrt(x.lo) : kInf;
    case Fn::Rsqrt: return x.lo > 0 ? 0.5 / (x.lo * std::sqrt(x.lo)) : kInf;
    case Fn::Recip: {
      if (!(x.lo > 0 || x.hi < 0)) return kInf;
      double m = std::min(std::fabs(x.lo), std::fabs(x.hi));
      return 1 / (m * m);
    }
    default: return kInf;
  }
}

class IntervalEval {
 public:
  // The walks tick `ticker`: a difference of 10^7 nodes is walked for seconds.
  explicit IntervalEval(double bound, Ticker* ticker = nullptr) : bound_(bound), ticker_(ticker) {}

  Interval operator()(Expr root) {
    ir::post_order(root, [&](Expr e) { return memo_.count(e) > 0; }, [&](Expr e) {
      if (ticker_) ticker_->tick("while bounding the difference (tolerance)");
      memo_[e] = node(e);
    });
    return memo_.at(root);
  }
  Interval at(Expr e) { return (*this)(e); }

 private:
  Interval node(Expr e) {
    if (e->sort != ir::Sort::Real) return kAll;
    switch (e->op) {
      case Op::ConstReal: {
        double d = const_value(e);
        return widen({d, d}, 0);
      }
      case Op::TensorElem: return {-bound_, bound_};
      case Op::Var:
        if (e->name() == kLn2Var) return {0.6931471805599, 0.6931471805600};
        return {-bound_, bound_};
      case Op::Add: {
        Interval s{0, 0};
        for (Expr c : e->args()) {
          Interval x = memo_.at(c);
          s = {s.lo + x.lo, s.hi + x.hi};
        }
        return widen(s, e->nargs);
      }
      case Op::Mul: {
        Interval p{1, 1};
        auto args = e->args();
        for (size_t i = 0; i < args.size();) {
          if (i + 1 < args.size() && args[i + 1] == args[i]) {  // x*x >= 0
            p = mul_iv(p, square_iv(memo_.at(args[i])));
            i += 2;
          } else {
            p = mul_iv(p, memo_.at(args[i]));
            i += 1;
          }
        }
        return widen(p, e->nargs);
      }
      case Op::Min:
      case Op::Max: {
        bool mn = e->op == Op::Min;
        Interval r = memo_.at(e->arg(0));
        for (Expr c : e->args().subspan(1)) {
          Interval x = memo_.at(c);
          r = mn ? Interval{std::min(r.lo, x.lo), std::min(r.hi, x.hi)} : Interval{std::max(r.lo, x.lo), std::max(r.hi, x.hi)};
        }
        return r;
      }
      case Op::Abs: {
        Interval x = memo_.at(e->arg(0));
        return {x.lo <= 0 && x.hi >= 0 ? 0 : std::min(std::fabs(x.lo), std::fabs(x.hi)), x.mag()};
      }
      case Op::Ite: {
        Interval t = memo_.at(e->arg(1)), f = memo_.at(e->arg(2));
        return {std::min(t.lo, f.lo), std::max(t.hi, f.hi)};
      }
      case Op::Call:
        if (e->nargs != 1) return kAll;
        return widen(fn_image(e->fn(), memo_.at(e->arg(0))));
      default: return kAll;
    }
  }

  double bound_;
  Ticker* ticker_;
  std::unordered_map<Expr, Interval> memo_;
};

// A hash of the shape of an expression that ignores constant values (and constant operands of
// sums, products, min and max): the two sides of a rounding-only difference have equal skeletons
// node for node, so n-ary operands can be paired by it.
class Skeleton {
 public:
  explicit Skeleton(Ticker* ticker = nullptr) : ticker_(ticker) {}
  uint64_t operator()(Expr root) {
    ir::post_order(root, [&](Expr e) { return memo_.count(e) > 0; }, [&](Expr e) {
      if (ticker_) ticker_->tick("while bounding the difference (tolerance)");
      memo_[e] = node(e);
    });
    return memo_.at(root);
  }

 private:
  static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
  }
  uint64_t node(Expr e) {
    if (e->op == Op::ConstReal) return 0x5bd1e995ull;
    if (e->is_leaf()) return e->hash;
    uint64_t tag = mix(uint64_t(e->op) * 131 + uint64_t(e->sort) * 7 + (e->op == Op::Call ? uint64_t(e->fn()) << 16 : 0) +
                       uint64_t(e->flags) * 977);
    bool commutative = e->op == Op::Add || e->op == Op::Mul || e->op == Op::Min || e->op == Op::Max;
    if (!commutative) {
      uint64_t h = tag;
      for (Expr c : e->args()) h = mix(h ^ memo_.at(c)) + 0x9e3779b97f4a7c15ull;
      return h;
    }
    uint64_t sum = 0, n = 0, last = 0;
    for (Expr c : e->args()) {
      if (c->op == Op::ConstReal) continue;
      last = memo_.at(c);
      sum += mix(last);
      ++n;
    }
    if (e->op == Op::Mul && n == 1) return last;  // c*x has the skeleton of x
    return mix(tag ^ sum) + n;
  }
  Ticker* ticker_;
  std::unordered_map<Expr, uint64_t> memo_;
};

// The constant factor of a term, or of a sum's first non-constant term (1 when there is none).
double lead_coefficient(Expr e) {
  if (e->op == Op::Add)
    for (Expr t : e->args())
      if (t->op != Op::ConstReal) return lead_coefficient(t);
  return e->op == Op::Mul && e->arg(0)->op == Op::ConstReal ? e->arg(0)->rational().get_d() : 1.0;
}

// c * atoms of a product (c = 1 for a non-product)
struct Factors {
  Expr coef = nullptr;  // nullptr: 1
  std::vector<Expr> atoms;
};
Factors factors(Expr e) {
  Factors f;
  if (e->op != Op::Mul) {
    f.atoms.push_back(e);
    return f;
  }
  auto args = e->args();
  size_t i = 0;
  if (args[0]->op == Op::ConstReal) f.coef = args[0], i = 1;
  f.atoms.assign(args.begin() + i, args.end());
  return f;
}

// c*max(x, y) -> max(c*x, c*y) for c > 0 and -> min(c*x, c*y) for c < 0 (and min alike): a
// kernel that negates or scales before a clamp and PyTorch scaling after it then have one shape,
// which the min/max rule (1-Lipschitz) bounds; otherwise only intervals would. One memoized
// post-order pass; a pass that rewrote something runs again for min/max nested inside.
Expr scale_into_minmax(ir::Context& ctx, Expr root, Ticker* ticker) {
  for (int pass = 0; pass < 4; ++pass) {
    bool changed_any = false;
    std::unordered_map<Expr, Expr> memo;
    std::vector<Expr> kids;
    ir::post_order(
        root, [&](Expr e) { return memo.count(e) > 0; },
        [&](Expr e) {
          if (ticker) ticker->tick("while bounding the difference (tolerance)");
          kids.clear();
          bool changed = false;
          for (Expr c : e->args()) {
            kids.push_back(memo.at(c));
            changed = changed || kids.back() != c;
          }
          Expr r = changed ? ctx.rebuild(e, kids) : e;
          if (r->op == Op::Mul && r->nargs == 2 && r->arg(0)->op == Op::ConstReal &&
              (r->arg(1)->op == Op::Min || r->arg(1)->op == Op::Max) && r->arg(0)->rational() != 0) {
            Expr c = r->arg(0), m = r->arg(1);
            std::vector<Expr> scaled;
            for (Expr x : m->args()) scaled.push_back(ctx.mul(c, x));
            bool flip = c->rational() < 0;
            r = (m->op == Op::Max) != flip ? ctx.max(scaled) : ctx.min(scaled);
            changed_any = true;
          }
          memo[e] = r;
        });
    root = memo.at(root);
    if (!changed_any) break;
  }
  return root;
}

class DiffBound {
 public:
  DiffBound(IntervalEval& iv, Skeleton& sk, Ticker* ticker) : iv_(iv), sk_(sk), ticker_(ticker) {}

  double operator()(Expr a, Expr b) {
    struct Frame {
      Expr a, b;
      bool expanded = false;
      Plan plan;
    };
    std::vector<Frame> stack;
    stack.push_back({a, b});
    while (!stack.empty()) {
      if (ticker_) ticker_->tick("while bounding the difference (tolerance)");
      Frame& f = stack.back();
      Key k{f.a, f.b};
      if (memo_.count(k)) { stack.pop_back(); continue; }
      if (!f.expanded) {
        f.expanded = true;
        f.plan = plan(f.a, f.b);
        std::vector<std::pair<Expr, Expr>> kids = f.plan.pairs;  // f may move when pushing
        for (auto& [x, y] : kids)
          if (!memo_.count(Key{x, y})) stack.push_back({x, y});
        continue;
      }
      double r = combine(f.a, f.b, f.plan);
      memo_[k] = r;
      stack.pop_back();
    }
    return memo_.at(Key{a, b});
  }

 private:
  enum class Kind { Done, Sum, Product, MinMax, Lipschitz, Ite };
  struct Plan {
    Kind kind = Kind::Done;
    double value = 0;                         // Done: the bound; Sum: constant and unmatched part
    std::vector<std::pair<Expr, Expr>> pairs; // child pairs whose bounds combine
    std::vector<double> amag, bmag;           // Product: sup of the aligned factors
  };
  struct Key {
    Expr a, b;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.a) * 0x9e3779b97f4a7c15ull ^ std::hash<const void*>()(k.b);
    }
  };

  // sup |a - b| from intervals alone
  double fallback(Expr a, Expr b) {
    Interval x = iv_.at(a), y = iv_.at(b);
    return up(std::max(std::fabs(x.hi - y.lo), std::fabs(x.lo - y.hi)));
  }
  static double const_diff(Expr a, Expr b) {
    mpq_class d = (a ? a->rational() : mpq_class(0)) - (b ? b->rational() : mpq_class(0));
    return up(std::fabs(d.get_d()));
  }
  // Pairs xs with ys by skeleton (first unused match); the rest are unmatched.
  void align(std::span<const Expr> xs, std::span<const Expr> ys, std::vector<std::pair<Expr, Expr>>& pairs,
             std::vector<Expr>& only_x, std::vector<Expr>& only_y) {
    std::unordered_map<uint64_t, std::vector<Expr>> by_skel;
    for (auto it = ys.rbegin(); it != ys.rend(); ++it) by_skel[sk_(*it)].push_back(*it);
    for (Expr x : xs) {
      auto it = by_skel.find(sk_(x));
      if (it == by_skel.end() || it->second.empty()) {
        only_x.push_back(x);
        continue;
      }
      // Several with x's skeleton (a skeleton ignores constants: max(2S, S/5) has two): the same node,
      // else the one whose leading coefficient is closest to x's — pairing 2S with S/5 bounds nothing.
      auto& cands = it->second;
      size_t best = cands.size() - 1;
      if (cands.size() > 1 && cands.size() <= 64) {  // (a scan per term: bounded, as sums can be 10^5 long)
        double cx = lead_coefficient(x), best_d = kInf;
        for (size_t i = cands.size(); i-- > 0;) {
          double d = cands[i] == x ? -1 : std::fabs(lead_coefficient(cands[i]) - cx) / std::max(std::fabs(cx), 1e-300);
          if (d < best_d) best_d = d, best = i;
        }
      }
      pairs.push_back({x, cands[best]});
      cands.erase(cands.begin() + std::ptrdiff_t(best));
    }
    for (auto& [h, rest] : by_skel) only_y.insert(only_y.end(), rest.begin(), rest.end());
  }

  Plan plan(Expr a, Expr b) {
    Plan p;
    if (a == b) return p;
    if (a->op == Op::ConstReal && b->op == Op::ConstReal) {
      p.value = const_diff(a, b);
      return p;
    }
    bool prod = a->op == Op::Mul || b->op == Op::Mul;
    if (a->op == Op::Add || b->op == Op::Add) {  // a lone term is a one-term sum
      auto split = [](Expr s, Expr& c, std::vector<Expr>& terms) {
        if (s->op != Op::Add) {
          if (s->op == Op::ConstReal) c = s;
          else terms.push_back(s);
          return;
        }
        for (Expr t : s->args())
          if (t->op == Op::ConstReal) c = t;
          else terms.push_back(t);
      };
      Expr ca = nullptr, cb = nullptr;
      std::vector<Expr> ta, tb, oa, ob;
      split(a, ca, ta);
      split(b, cb, tb);
      align(ta, tb, p.pairs, oa, ob);
      double rest = const_diff(ca, cb);
      for (Expr t : oa) rest += iv_.at(t).mag();
      for (Expr t : ob) rest += iv_.at(t).mag();
      p.kind = Kind::Sum;
      p.value = rest;
      return p;
    }
    if (prod) {
      Factors fa = factors(a), fb = factors(b);
      std::vector<Expr> oa, ob;
      std::vector<std::pair<Expr, Expr>> pairs;
      align(fa.atoms, fb.atoms, pairs, oa, ob);
      if (!oa.empty() || !ob.empty()) return done(p, fallback(a, b));
      // factor 0: the coefficients (1 when absent)
      mpq_class qa = fa.coef ? fa.coef->rational() : mpq_class(1), qb = fb.coef ? fb.coef->rational() : mpq_class(1);
      p.kind = Kind::Product;
      p.value = up(std::fabs(mpq_class(qa - qb).get_d()));
      p.amag.push_back(up(std::fabs(qa.get_d())));
      p.bmag.push_back(up(std::fabs(qb.get_d())));
      for (auto& [x, y] : pairs) {
        p.amag.push_back(iv_.at(x).mag());
        p.bmag.push_back(iv_.at(y).mag());
      }
      p.pairs = std::move(pairs);
      return p;
    }
    if (a->op != b->op) return done(p, fallback(a, b));
    switch (a->op) {
      case Op::Min:
      case Op::Max: {
        // constant operands that no other operand's interval lets win are irrelevant
        bool mn = a->op == Op::Min;
        auto relevant = [&](Expr e, Expr& c, std::vector<Expr>& xs) {
          double best = mn ? kInf : -kInf;
          for (Expr x : e->args())
            if (x->op == Op::ConstReal) c = x;
            else {
              xs.push_back(x);
              Interval v = iv_.at(x);
              best = mn ? std::min(best, v.hi) : std::max(best, v.lo);
            }
          if (c && !xs.empty() && (mn ? const_value(c) >= best : const_value(c) <= best)) c = nullptr;
        };
        Expr ca = nullptr, cb = nullptr;
        std::vector<Expr> xa, xb, oa, ob;
        relevant(a, ca, xa);
        relevant(b, cb, xb);
        if ((ca == nullptr) != (cb == nullptr)) return done(p, fallback(a, b));
        align(xa, xb, p.pairs, oa, ob);
        if (!oa.empty() || !ob.empty()) return done(p, fallback(a, b));
        p.kind = Kind::MinMax;
        p.value = ca ? const_diff(ca, cb) : 0;
        return p;
      }
      case Op::Abs:
        p.kind = Kind::MinMax;
        p.pairs.push_back({a->arg(0), b->arg(0)});
        return p;
      case Op::Call: {
        if (a->fn() != b->fn() || a->nargs != 1) return done(p, fallback(a, b));
        Interval x = iv_.at(a->arg(0)), y = iv_.at(b->arg(0));
        double L = lipschitz(a->fn(), {std::min(x.lo, y.lo), std::max(x.hi, y.hi)});
        if (!std::isfinite(L)) return done(p, fallback(a, b));
        p.kind = Kind::Lipschitz;
        p.value = up(L);
        p.pairs.push_back({a->arg(0), b->arg(0)});
        return p;
      }
      case Op::Ite:
        if (a->arg(0) != b->arg(0)) return done(p, fallback(a, b));
        p.kind = Kind::Ite;
        p.pairs.push_back({a->arg(1), b->arg(1)});
        p.pairs.push_back({a->arg(2), b->arg(2)});
        return p;
      default: return done(p, fallback(a, b));
    }
  }
  static Plan& done(Plan& p, double v) {
    p.kind = Kind::Done;
    p.value = v;
    p.pairs.clear();
    return p;
  }

  double combine(Expr a, Expr b, const Plan& p) {
    auto child = [&](size_t i) { return memo_.at(Key{p.pairs[i].first, p.pairs[i].second}); };
    double r = 0;
    switch (p.kind) {
      case Kind::Done: return p.value;
      case Kind::Sum:
        r = p.value;
        for (size_t i = 0; i < p.pairs.size(); ++i) r += child(i);
        r = up(r, p.pairs.size());
        break;
      case Kind::Product: {
        // telescoping over factors 0 (coefficient) .. n: D_i * prod_{j<i} |b_j| * prod_{j>i} |a_j|
        size_t n = p.amag.size();
        std::vector<double> d(n);
        d[0] = p.value;
        for (size_t i = 1; i < n; ++i) d[i] = child(i - 1);
        std::vector<double> suffix(n + 1, 1.0);
        for (size_t i = n; i-- > 0;) suffix[i] = suffix[i + 1] * p.amag[i];
        double prefix = 1;
        for (size_t i = 0; i < n; ++i) {
          if (d[i] != 0) r += d[i] * prefix * suffix[i + 1];
          prefix *= p.bmag[i];
        }
        r = up(r, n);
        break;
      }
      case Kind::MinMax:
      case Kind::Ite:
        r = p.value;
        for (size_t i = 0; i < p.pairs.size(); ++i) r = std::max(r, child(i));
        break;
      case Kind::Lipschitz: {
        double c = child(0);
        r = c == 0 ? 0 : up(p.value * c);
        break;
      }
    }
    if (std::isnan(r)) r = kInf;
    return std::min(r, fallback(a, b));
  }

  IntervalEval& iv_;
  Skeleton& sk_;
  std::unordered_map<Key, double, KeyHash> memo_;
  Ticker* ticker_ = nullptr;
};

}  // namespace

double Interval::mag() const { return std::max(std::fabs(lo), std::fabs(hi)); }

Interval interval_of(Expr e, double bound) {
  IntervalEval iv(bound);
  return iv(e);
}

double difference_bound(ir::Context& ctx, Expr a, Expr b, double bound, const AxiomOptions& axioms, Ticker* deadline) {
  if (a == b) return 0;
  if (a->sort != ir::Sort::Real || b->sort != ir::Sort::Real) return kInf;
  // Keep tanh, sigmoid, softplus, log1p, expm1 ... as functions: their Lipschitz constants are
  // small, while their exp forms blow up on intervals.
  AxiomOptions opt = axioms;
  for (Axiom x : {Axiom::SigmoidToExp, Axiom::TanhToExp, Axiom::SoftplusToLog, Axiom::Log1pToLog, Axiom::Expm1ToExp,
                  Axiom::Exp2ToExp, Axiom::Log2ToLog, Axiom::EluToExp, Axiom::SinhCoshToExp, Axiom::ExpSum,
                  Axiom::RecipExp, Axiom::ExpLog})
    opt.set(x, false);
  Normalizer norm(ctx, opt);
  norm.set_deadline(deadline);
  Expr na = scale_into_minmax(ctx, norm(a), deadline), nb = scale_into_minmax(ctx, norm(b), deadline);
  if (na == nb) return 0;
  IntervalEval iv(bound, deadline);
  Skeleton sk(deadline);
  DiffBound db(iv, sk, deadline);
  return db(na, nb);
}

}  // namespace dirigo::smt
