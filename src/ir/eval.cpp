// Concrete evaluation: iterative post-order over the DAG with a memo.
#include "ir/eval.h"

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"
#include "ir/walk.h"

namespace dirigo::ir {

double apply_fn(Fn f, double x, double y) {
  constexpr double kSqrt2 = 1.41421356237309504880;
  constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
  auto softplus = [](double v) { return std::max(v, 0.0) + std::log1p(std::exp(-std::fabs(v))); };
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  switch (f) {
    case Fn::Exp: return std::exp(x);
    case Fn::Exp2: return std::exp2(x);
    case Fn::Log: return std::log(x);
    case Fn::Log2: return std::log2(x);
    case Fn::Log1p: return std::log1p(x);
    case Fn::Expm1: return std::expm1(x);
    case Fn::Tanh: return std::tanh(x);
    case Fn::Erf: return std::erf(x);
    case Fn::Erfc: return std::erfc(x);
    case Fn::Sqrt: return std::sqrt(x);
    case Fn::Rsqrt: return 1.0 / std::sqrt(x);
    case Fn::Pow: return std::pow(x, y);
    case Fn::Sigmoid: return sigmoid(x);
    case Fn::GeluErf: return x * 0.5 * (1.0 + std::erf(x / kSqrt2));
    case Fn::GeluTanh: return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
    case Fn::Softplus: return softplus(x);  // log1p(exp x), without overflow
    case Fn::Silu: return x * sigmoid(x);
    case Fn::Mish: return x * std::tanh(softplus(x));
    case Fn::Elu: return x > 0 ? x : std::expm1(x);  // alpha = 1
    case Fn::Selu: {
      constexpr double alpha = 1.6732632423543772848170429916717;
      constexpr double scale = 1.0507009873554804934193349852946;
      return scale * (x > 0 ? x : alpha * std::expm1(x));
    }
    case Fn::Sin: return std::sin(x);
    case Fn::Cos: return std::cos(x);
    case Fn::Tan: return std::tan(x);
    case Fn::Atan: return std::atan(x);
    case Fn::Asin: return std::asin(x);
    case Fn::Acos: return std::acos(x);
    case Fn::Sinh: return std::sinh(x);
    case Fn::Cosh: return std::cosh(x);
    case Fn::Asinh: return std::asinh(x);
    case Fn::Acosh: return std::acosh(x);
    case Fn::Atanh: return std::atanh(x);
    case Fn::Floor: return std::floor(x);
    case Fn::Ceil: return std::ceil(x);
    case Fn::Round: {  // half to even, independent of the FP environment
      double r = std::round(x);
      if (std::fabs(x - std::trunc(x)) == 0.5) r = 2.0 * std::round(x / 2.0);
      return r;
    }
    case Fn::Trunc: return std::trunc(x);
    case Fn::Sign: return std::isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    case Fn::Recip: return 1.0 / x;
    case Fn::Count_: break;
  }
  throw std::invalid_argument("apply_fn: unknown function");
}

namespace {
// Nearest double / float to an exact rational (ties to even), independent of mpq_get_d's truncation.
template <class F>
bool even_mantissa(F f) {
  if constexpr (sizeof(F) == 4) return (std::bit_cast<uint32_t>(f) & 1) == 0;
  else return (std::bit_cast<uint64_t>(f) & 1) == 0;
}
template <class F>
F nearest(const mpq_class& q) {
  F best = static_cast<F>(q.get_d());  // get_d truncates: the nearest is this or a neighbour
  mpq_class berr = abs(q - mpq_class(static_cast<double>(best)));
  const F inf = std::numeric_limits<F>::infinity();
  for (F c : {std::nextafter(best, inf), std::nextafter(best, -inf)}) {
    if (!std::isfinite(c)) continue;
    mpq_class err = abs(q - mpq_class(static_cast<double>(c)));
    if (err < berr || (err == berr && even_mantissa(c))) {
      best = c;
      berr = err;
    }
  }
  return best;
}
}  // namespace

struct Evaluator::Impl {
  Env env;
  Precision prec;
  detail::NodeMap<Value> memo;
  uint64_t computed = 0;  // nodes evaluated, for env.tick

  double rnd(double d) const { return prec == Precision::F32 ? static_cast<double>(static_cast<float>(d)) : d; }

  Value leaf(Expr x) {
    switch (x->op) {
      case Op::ConstBool: return Value::of_bool(x->u);
      case Op::ConstBV: return Value::of_bv(x->sort, x->u);
      case Op::ConstReal:
        return Value::of_real(prec == Precision::F32 ? static_cast<double>(nearest<float>(x->rational()))
                                                     : nearest<double>(x->rational()));
      case Op::Var: {
        if (!env.var) throw std::runtime_error(fmt::format("evaluate: no value for variable {}", x->name()));
        return normalize(env.var(x->name(), x->sort), x->sort);
      }
      case Op::TensorElem: {
        if (!env.elem)
          throw std::runtime_error(fmt::format("evaluate: no value for tensor element {}[{}]",
                                               detail::TensorRegistry::get().name(x->tensor()), x->index()));
        return normalize(env.elem(x->tensor(), x->index(), x->sort), x->sort);
      }
      case Op::Undef: {
        Value v;
        v.sort = x->sort;
        v.undef = true;
        return v;
      }
      default: break;
    }
    throw std::runtime_error("evaluate: not a leaf");
  }
  Value normalize(Value v, Sort s) {
    v.sort = s;
    if (is_bv(s)) v.bits &= width_mask(bv_width(s));
    if (s == Sort::Bool) v.bits = v.bits != 0;
    if (s == Sort::Real) v.real = rnd(v.real);
    return v;
  }

  Value compute(Expr x, std::vector<const Value*>& a) {
    Value r;
    r.sort = x->sort;
    bool undef = false;
    for (const Value* v : a) undef |= v->undef;
    unsigned w = bv_width(x->sort);
    uint64_t m = width_mask(w);
    auto sgn = [](const Value& v) {
      unsigned ww = bv_width(v.sort);
      uint64_t b = v.bits;
      if (ww < 64 && ((b >> (ww - 1)) & 1)) b |= ~width_mask(ww);
      return static_cast<int64_t>(b);
    };
    switch (x->op) {
      case Op::Not: r.bits = !a[0]->bits; break;
      case Op::And: r.bits = 1; for (auto* v : a) r.bits &= v->bits; break;
      case Op::Or: r.bits = 0; for (auto* v : a) r.bits |= v->bits; break;
      case Op::Eq:
        r.bits = a[0]->sort == Sort::Real ? a[0]->real == a[1]->real : a[0]->bits == a[1]->bits;
        break;
      case Op::Ult: r.bits = a[0]->bits < a[1]->bits; break;
      case Op::Ule: r.bits = a[0]->bits <= a[1]->bits; break;
      case Op::Slt: r.bits = sgn(*a[0]) < sgn(*a[1]); break;
      case Op::Sle: r.bits = sgn(*a[0]) <= sgn(*a[1]); break;
      case Op::Lt: r.bits = a[0]->real < a[1]->real; break;
      case Op::Le: r.bits = a[0]->real <= a[1]->real; break;
      case Op::Ite: {
        const Value* chosen = a[0]->bits ? a[1] : a[2];
        r = *chosen;
        undef = a[0]->undef || chosen->undef;
        break;
      }
      case Op::BvAdd: r.bits = 0; for (auto* v : a) r.bits += v->bits; break;
      case Op::BvMul: r.bits = 1; for (auto* v : a) r.bits *= v->bits; break;
      case Op::BvUDiv: r.bits = a[1]->bits ? a[0]->bits / a[1]->bits : m; break;
      case Op::BvURem: r.bits = a[1]->bits ? a[0]->bits % a[1]->bits : a[0]->bits; break;
      case Op::BvSDiv: {
        int64_t p = sgn(*a[0]), q = sgn(*a[1]);
        r.bits = q == 0 ? (p < 0 ? 1 : m) : q == -1 ? 0 - static_cast<uint64_t>(p) : static_cast<uint64_t>(p / q);
        break;
      }
      case Op::BvSRem: {
        int64_t p = sgn(*a[0]), q = sgn(*a[1]);
        r.bits = q == 0 ? static_cast<uint64_t>(p) : q == -1 ? 0 : static_cast<uint64_t>(p % q);
        break;
      }
      case Op::BvShl: r.bits = a[1]->bits >= w ? 0 : a[0]->bits << a[1]->bits; break;
      case Op::BvLShr: r.bits = a[1]->bits >= w ? 0 : a[0]->bits >> a[1]->bits; break;
      case Op::BvAShr: {
        int64_t p = sgn(*a[0]);
        r.bits = static_cast<uint64_t>(a[1]->bits >= w ? (p < 0 ? -1 : 0) : p >> a[1]->bits);
        break;
      }
      case Op::BvAnd: r.bits = m; for (auto* v : a) r.bits &= v->bits; break;
      case Op::BvOr: r.bits = 0; for (auto* v : a) r.bits |= v->bits; break;
      case Op::BvXor: r.bits = 0; for (auto* v : a) r.bits ^= v->bits; break;
      case Op::BvNot: r.bits = ~a[0]->bits; break;
      case Op::BvSMin: case Op::BvSMax: {
        r.bits = a[0]->bits;
        for (auto* v : a) {
          bool lt = sgn(*v) < sgn(Value::of_bv(x->sort, r.bits));
          if (x->op == Op::BvSMin ? lt : sgn(*v) > sgn(Value::of_bv(x->sort, r.bits))) r.bits = v->bits;
        }
        break;
      }
      case Op::BvUMin: r.bits = a[0]->bits; for (auto* v : a) r.bits = std::min(r.bits, v->bits); break;
      case Op::BvUMax: r.bits = a[0]->bits; for (auto* v : a) r.bits = std::max(r.bits, v->bits); break;
      case Op::BvMulHiU:
        r.bits = static_cast<uint64_t>((static_cast<unsigned __int128>(a[0]->bits) * a[1]->bits) >> w);
        break;
      case Op::BvMulHiS: {
        __int128 p = static_cast<__int128>(sgn(*a[0])) * sgn(*a[1]);
        r.bits = static_cast<uint64_t>(static_cast<unsigned __int128>(p >> w));
        break;
      }
      case Op::ZExt: r.bits = a[0]->bits; break;
      case Op::SExt: r.bits = static_cast<uint64_t>(sgn(*a[0])); break;
      case Op::Trunc: r.bits = a[0]->bits; break;
      case Op::Add: {
        double s = 0;
        for (auto* v : a) s = rnd(s + v->real);
        r.real = s;
        break;
      }
      case Op::Mul: {
        double p = 1;
        for (auto* v : a) p = rnd(p * v->real);
        r.real = p;
        break;
      }
      case Op::Min: r.real = a[0]->real; for (auto* v : a) r.real = v->real < r.real ? v->real : r.real; break;
      case Op::Max: r.real = a[0]->real; for (auto* v : a) r.real = v->real > r.real ? v->real : r.real; break;
      case Op::Abs: r.real = std::fabs(a[0]->real); break;
      case Op::Call: r.real = rnd(apply_fn(x->fn(), a[0]->real, a.size() > 1 ? a[1]->real : 0)); break;
      case Op::BvToReal:
        r.real = rnd(x->is_signed() ? static_cast<double>(sgn(*a[0])) : static_cast<double>(a[0]->bits));
        break;
      case Op::RealToBv: {
        double d = a[0]->real;
        switch (x->round_mode()) {
          case RoundMode::NearestEven: d = apply_fn(Fn::Round, d); break;
          case RoundMode::Zero: d = std::trunc(d); break;
          case RoundMode::Down: d = std::floor(d); break;
          case RoundMode::Up: d = std::ceil(d); break;
        }
        if (std::isnan(d)) { r.bits = 0; break; }  // PTX cvt: NaN -> 0
        if (x->is_signed()) {
          double lo = -std::ldexp(1.0, w - 1), hi = std::ldexp(1.0, w - 1);
          int64_t v = d <= lo ? (w == 64 ? INT64_MIN : -(int64_t(1) << (w - 1)))
                      : d >= hi ? (w == 64 ? INT64_MAX : (int64_t(1) << (w - 1)) - 1)
                                : static_cast<int64_t>(d);
          r.bits = static_cast<uint64_t>(v);
        } else {
          double hi = std::ldexp(1.0, w);
          r.bits = d <= 0 ? 0 : d >= hi ? m : static_cast<uint64_t>(d);
        }
        break;
      }
      case Op::Load: {
        int64_t idx = a[0]->sort == Sort::BV64 ? sgn(*a[0]) : static_cast<int64_t>(a[0]->bits);
        if (!env.elem)
          throw std::runtime_error(fmt::format("evaluate: no value for tensor element {}[{}]",
                                               detail::TensorRegistry::get().name(x->tensor()), idx));
        r = normalize(env.elem(x->tensor(), idx, x->sort), x->sort);
        break;
      }
      default:
        throw std::runtime_error(fmt::format("evaluate: unsupported op {}", op_name(x->op)));
    }
    r.sort = x->sort;
    if (is_bv(x->sort)) r.bits &= m;
    r.undef = undef;
    return r;
  }

  // Values of the enclosing reductions' indices while a body is evaluated (back = Bound(0)).
  std::vector<int64_t> bound_values;

  // A node that reads enclosing indices, at the current point (evaluated afresh at every point;
  // its closed operands come from the memo).
  Value eval_open(Expr x, detail::NodeMap<Value>& local) {
    if (!x->has_free_bound()) return eval(x);
    if (x->op == Op::Bound) {
      if (x->u >= bound_values.size()) throw std::runtime_error("evaluate: a bound index outside every reduction");
      return Value::of_bv(Sort::BV64, static_cast<uint64_t>(bound_values[bound_values.size() - 1 - x->u]));
    }
    if (auto it = local.find(x); it != local.end()) return it->second;
    if (env.tick && (++computed & 0xFFFF) == 0) env.tick();  // a body's nodes, at every point
    Value v;
    if (x->op == Op::Reduce) {
      v = reduce_value(x);
    } else {
      std::vector<Value> vals;
      vals.reserve(x->nargs);
      for (Expr c : x->args()) vals.push_back(eval_open(c, local));
      std::vector<const Value*> a;
      for (const Value& c : vals) a.push_back(&c);
      v = compute(x, a);
    }
    local.emplace(x, v);
    return v;
  }

  // A reduction, its points in row-major order, combined sequentially (rounded per step in F32).
  Value reduce_value(Expr r) {
    const unsigned n = r->reduce_rank();
    std::vector<int64_t> p(n);
    bool empty = false;
    for (unsigned d = 0; d < n; ++d) {
      p[d] = r->reduce_lo(d);
      empty |= r->reduce_lo(d) >= r->reduce_hi(d);
    }
    ReduceOp op = r->reduce_op();
    Value acc = Value::of_real(op == ReduceOp::Prod ? 1.0 : 0.0);
    if (empty) {
      if (op == ReduceOp::Max || op == ReduceOp::Min) throw std::runtime_error("evaluate: max/min over an empty domain");
      return acc;
    }
    size_t base = bound_values.size();
    bound_values.resize(base + n);
    bool first = true, undef = false;
    detail::NodeMap<Value> local;
    for (;;) {
      for (unsigned d = 0; d < n; ++d) bound_values[base + d] = p[d];
      local.clear();
      Value v = eval_open(r->reduce_body(), local);
      undef |= v.undef;
      switch (op) {
        case ReduceOp::Sum: acc.real = rnd(acc.real + v.real); break;
        case ReduceOp::Prod: acc.real = rnd(acc.real * v.real); break;
        case ReduceOp::Max: acc.real = first || v.real > acc.real ? v.real : acc.real; break;
        case ReduceOp::Min: acc.real = first || v.real < acc.real ? v.real : acc.real; break;
      }
      first = false;
      if (env.tick && (++computed & 0xFFFF) == 0) env.tick();
      unsigned d = n;
      while (d-- > 0) {
        if (++p[d] < r->reduce_hi(d)) break;
        p[d] = r->reduce_lo(d);
      }
      if (d == unsigned(-1)) break;
    }
    bound_values.resize(base);
    acc.undef = undef;
    return acc;
  }

  Value eval(Expr e) {
    if (auto it = memo.find(e); it != memo.end()) return it->second;
    if (e->has_free_bound()) throw std::runtime_error("evaluate: the expression reads a bound index of no reduction");
    std::vector<const Value*> args;
    auto has = [&](Expr x) { return memo.count(x) > 0; };
    auto stop = [&](Expr x) {
      if (x->op == Op::Reduce) {  // its body is evaluated per point, never through the memo
        Value v = reduce_value(x);
        memo.emplace(x, v);
        return true;
      }
      if (x->nargs == 0) {
        memo.emplace(x, leaf(x));
        return true;
      }
      return false;
    };
    post_order(e, has, stop, [&](Expr x) {
      args.clear();
      for (Expr c : x->args()) args.push_back(&memo.at(c));
      Value v = compute(x, args);
      memo.emplace(x, v);
      if (env.tick && (++computed & 0xFFFF) == 0) env.tick();
    });
    return memo.at(e);
  }
};

Evaluator::Evaluator(const Env& env, Precision p) : impl_(std::make_shared<Impl>(Impl{env, p, {}})) {}
Value Evaluator::operator()(Expr e) { return impl_->eval(e); }
void Evaluator::clear() { impl_->memo.clear(); }

}  // namespace dirigo::ir
