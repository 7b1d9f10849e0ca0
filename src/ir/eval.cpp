// Concrete evaluation: iterative post-order over the DAG with a memo.
#include "ir/eval.h"

#include <array>
#include <bit>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <unordered_map>

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

  Value compute(Expr x, std::span<const Value* const> a) {
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

  // A reduction body's open part (the nodes that read enclosing indices) as straight-line steps in
  // post order, built once per Reduce node: at each point every step computes its slot from slots
  // and from the closed operands' values (constant for this evaluator, copied in once), with no
  // allocation or memo lookup per node. The same nodes in the same order as a walk of the body, so
  // the same numbers.
  struct Tape {
    struct Step {
      Expr node;
      uint32_t args_at, nargs;  // operands: args[args_at, args_at + nargs)
      // A nested reduction: the enclosing indices it reads (0 = the innermost), when at most
      // kMaxReadIndices; its value is kept per their values (open_memo).
      std::vector<uint32_t> reads;
      bool memoized = false;
    };
    std::vector<Step> steps;
    std::vector<const Value*> args;  // into slots or closed
    std::vector<Value> slots;        // one per step; the body's value is the last
    std::deque<Value> closed;        // stable addresses
    const Value* result = nullptr;   // a closed body: its value
  };
  std::unordered_map<Expr, std::unique_ptr<Tape>> tapes;

  // A reduction nested in a body reads few enclosing indices (a GEMM row's sum reads the row): its
  // value is the same wherever they repeat, in every body it sits in and on both sides of a pair,
  // so it is computed once per (node, their values).
  static constexpr size_t kMaxReadIndices = 4, kOpenMemoEntries = size_t(1) << 21;
  struct OpenKey {
    Expr node;
    std::array<int64_t, kMaxReadIndices> at{};
    bool operator==(const OpenKey&) const = default;
  };
  struct OpenKeyHash {
    size_t operator()(const OpenKey& k) const {
      uint64_t h = reinterpret_cast<uint64_t>(k.node) * 0x9e3779b97f4a7c15ULL;
      for (int64_t v : k.at) h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ULL;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  std::unordered_map<OpenKey, Value, OpenKeyHash> open_memo;

  // The enclosing indices (relative to the body x sits in) that x reads; nullopt past kMaxReadIndices.
  static std::optional<std::vector<uint32_t>> read_indices(Expr x) {
    std::vector<uint32_t> out;
    std::set<std::pair<Expr, uint32_t>> seen;
    std::vector<std::pair<Expr, uint32_t>> st{{x, 0}};
    while (!st.empty()) {
      auto [e, depth] = st.back();
      st.pop_back();
      if (!e->has_free_bound() || !seen.emplace(e, depth).second) continue;
      if (e->op == Op::Bound) {
        if (e->u >= depth && std::find(out.begin(), out.end(), uint32_t(e->u - depth)) == out.end()) {
          out.push_back(uint32_t(e->u - depth));
          if (out.size() > kMaxReadIndices) return std::nullopt;
        }
        continue;
      }
      uint32_t inner = e->op == Op::Reduce ? depth + e->reduce_rank() : depth;
      for (Expr c : e->args()) st.emplace_back(c, e->op == Op::Reduce && c == e->reduce_body() ? inner : depth);
    }
    return out;
  }

  Tape& tape_of(Expr r) {
    auto& t = tapes[r];
    if (t) return *t;
    t = std::make_unique<Tape>();
    Tape& tp = *t;
    Expr body = r->reduce_body();
    if (!body->has_free_bound()) {
      tp.closed.push_back(eval(body));
      tp.result = &tp.closed.back();
      return tp;
    }
    // Operand references are kept as (is_slot, index) until the slots' vector has its final size.
    std::vector<std::pair<bool, size_t>> refs;
    detail::NodeMap<uint32_t> slot_of;
    detail::NodeMap<size_t> closed_of;
    std::function<std::pair<bool, size_t>(Expr)> visit = [&](Expr x) -> std::pair<bool, size_t> {
      if (!x->has_free_bound()) {
        if (auto it = closed_of.find(x); it != closed_of.end()) return {false, it->second};
        tp.closed.push_back(eval(x));
        closed_of.emplace(x, tp.closed.size() - 1);
        return {false, tp.closed.size() - 1};
      }
      if (auto it = slot_of.find(x); it != slot_of.end()) return {true, it->second};
      std::vector<std::pair<bool, size_t>> ops;
      if (x->op != Op::Bound && x->op != Op::Reduce)  // a Reduce's body has a tape of its own
        for (Expr c : x->args()) ops.push_back(visit(c));
      Tape::Step st{x, uint32_t(refs.size()), uint32_t(ops.size()), {}, false};
      if (x->op == Op::Reduce)
        if (auto r = read_indices(x)) st.reads = std::move(*r), st.memoized = true;
      refs.insert(refs.end(), ops.begin(), ops.end());
      tp.steps.push_back(st);
      slot_of.emplace(x, uint32_t(tp.steps.size() - 1));
      return {true, tp.steps.size() - 1};
    };
    visit(body);
    tp.slots.resize(tp.steps.size());
    for (auto [is_slot, i] : refs) tp.args.push_back(is_slot ? &tp.slots[i] : &tp.closed[i]);
    tp.result = &tp.slots.back();
    return tp;
  }

  // Values of the enclosing reductions' indices while a body is evaluated (back = Bound(0)).
  std::vector<int64_t> bound_values;

  // The body of the reduction the tape is of, at the current point.
  const Value& run(Tape& tp) {
    for (size_t k = 0; k < tp.steps.size(); ++k) {
      const Tape::Step& st = tp.steps[k];
      Expr x = st.node;
      if (env.tick && (++computed & 0xFFFF) == 0) env.tick();  // a body's nodes, at every point
      if (x->op == Op::Bound) {
        if (x->u >= bound_values.size()) throw std::runtime_error("evaluate: a bound index outside every reduction");
        tp.slots[k] = Value::of_bv(Sort::BV64, static_cast<uint64_t>(bound_values[bound_values.size() - 1 - x->u]));
      } else if (x->op == Op::Reduce) {
        if (!st.memoized) {
          tp.slots[k] = reduce_value(x);
          continue;
        }
        OpenKey key{x, {}};
        for (size_t q = 0; q < st.reads.size(); ++q) {
          if (st.reads[q] >= bound_values.size()) throw std::runtime_error("evaluate: a bound index outside every reduction");
          key.at[q] = bound_values[bound_values.size() - 1 - st.reads[q]];
        }
        if (auto it = open_memo.find(key); it != open_memo.end()) {
          tp.slots[k] = it->second;
        } else {
          tp.slots[k] = reduce_value(x);
          if (open_memo.size() < kOpenMemoEntries) open_memo.emplace(key, tp.slots[k]);
        }
      } else {
        tp.slots[k] = compute(x, std::span<const Value* const>(tp.args.data() + st.args_at, st.nargs));
      }
    }
    return *tp.result;
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
    Tape& tp = tape_of(r);
    size_t base = bound_values.size();
    bound_values.resize(base + n);
    bool first = true, undef = false;
    for (;;) {
      for (unsigned d = 0; d < n; ++d) bound_values[base + d] = p[d];
      const Value& v = run(tp);
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
void Evaluator::clear() {
  impl_->memo.clear();
  impl_->tapes.clear();  // their closed operands came from the memo
  impl_->open_memo.clear();
}

}  // namespace dirigo::ir
