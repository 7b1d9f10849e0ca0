// Concrete evaluation: iterative post-order over the DAG with a memo.
#include "ir/eval.h"

#include <algorithm>
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

  // ---- sparse points (Env::support)
  // A body's nonzero set as a disjunction of conjunctions of reads: the body can be nonzero at a
  // point only where, for some conjunct, every read's element is in its tensor's support. Reads are
  // of supported tensors at an index affine in the bound indices (`coef`: Bound(u) -> factor, with
  // u relative to the body: below the reduction's rank its own dims, above them enclosing ones).
  struct Affine {
    int64_t c = 0;
    std::vector<std::pair<uint32_t, int64_t>> coef;
  };
  struct Atom {
    int32_t tensor;
    Affine idx;
    // dims of reductions nested in the body that the read sits in: (lo, extent, factor); the body
    // can be nonzero where some value of them puts the read on its support
    std::vector<std::array<int64_t, 3>> exists;
  };
  struct Nonzero {
    bool anywhere = true;  // no restriction known
    std::vector<std::vector<Atom>> conj;  // !anywhere: an empty list is "nowhere"
  };
  static constexpr size_t kMaxConjuncts = 16;
  static constexpr uint64_t kMaxSparsePoints = uint64_t(1) << 20;
  static constexpr size_t kMaxFilterSupport = 64;  // a read that constrains no own dim is a filter up to this
  static constexpr int64_t kAffineLimit = int64_t(1) << 61;
  std::unordered_map<Expr, std::unique_ptr<Nonzero>> nonzero_plans;

  static int64_t signed64(uint64_t b) { return static_cast<int64_t>(b); }
  static bool add_ok(int64_t a, int64_t b, int64_t& out) {
    __int128 v = static_cast<__int128>(a) + b;
    if (v > kAffineLimit || v < -kAffineLimit) return false;
    out = static_cast<int64_t>(v);
    return true;
  }

  // e as c + Σ coef·Bound over BV64 (a closed part evaluated once); nullopt for any other form.
  std::optional<Affine> affine(Expr e) {
    if (e->sort != Sort::BV64) return std::nullopt;
    if (!e->has_free_bound()) {
      Affine a;
      a.c = signed64(eval(e).bits);
      if (a.c > kAffineLimit || a.c < -kAffineLimit) return std::nullopt;
      return a;
    }
    auto scaled = [&](Affine a, int64_t k) -> std::optional<Affine> {
      __int128 c = static_cast<__int128>(a.c) * k;
      if (c > kAffineLimit || c < -kAffineLimit) return std::nullopt;
      a.c = static_cast<int64_t>(c);
      for (auto& [u, f] : a.coef) {
        __int128 v = static_cast<__int128>(f) * k;
        if (v > kAffineLimit || v < -kAffineLimit) return std::nullopt;
        f = static_cast<int64_t>(v);
      }
      return a;
    };
    switch (e->op) {
      case Op::Bound: {
        Affine a;
        a.coef.emplace_back(static_cast<uint32_t>(e->u), 1);
        return a;
      }
      case Op::BvAdd: {
        Affine sum;
        for (Expr x : e->args()) {
          auto a = affine(x);
          if (!a || !add_ok(sum.c, a->c, sum.c)) return std::nullopt;
          for (auto [u, f] : a->coef) {
            auto it = std::find_if(sum.coef.begin(), sum.coef.end(), [u = u](auto& p) { return p.first == u; });
            if (it == sum.coef.end()) sum.coef.emplace_back(u, f);
            else if (!add_ok(it->second, f, it->second)) return std::nullopt;
          }
        }
        return sum;
      }
      case Op::BvMul: {
        int64_t k = 1;
        Expr open = nullptr;
        for (Expr x : e->args()) {
          if (x->op == Op::ConstBV) {
            __int128 v = static_cast<__int128>(k) * signed64(x->u);
            if (v > kAffineLimit || v < -kAffineLimit) return std::nullopt;
            k = static_cast<int64_t>(v);
          } else if (!open) {
            open = x;
          } else {
            return std::nullopt;
          }
        }
        if (!open) return std::nullopt;  // closed: taken above
        auto a = affine(open);
        return a ? scaled(*a, k) : std::nullopt;
      }
      case Op::BvShl: {
        if (e->arg(1)->op != Op::ConstBV || e->arg(1)->u >= 61) return std::nullopt;
        auto a = affine(e->arg(0));
        return a ? scaled(*a, int64_t(1) << e->arg(1)->u) : std::nullopt;
      }
      default:
        return std::nullopt;
    }
  }

  // Finite wherever its leaves are (finite, moderate): a product with such a factor and one zero
  // read is exactly zero. No division, exp, log, pow, square root or variable (the ±inf Vars).
  bool finite_factor(Expr e) {
    if (e->sort != Sort::Real) return true;
    switch (e->op) {
      case Op::ConstReal: case Op::TensorElem: case Op::Load: case Op::BvToReal: return true;
      case Op::Add: case Op::Mul: case Op::Min: case Op::Max: case Op::Abs: case Op::Reduce:
        if (e->op == Op::Reduce && e->reduce_op() == ReduceOp::Prod) return false;
        for (Expr x : e->args()) if (!finite_factor(x)) return false;
        return true;
      case Op::Ite: return finite_factor(e->arg(1)) && finite_factor(e->arg(2));
      case Op::Call:
        switch (e->fn()) {
          case Fn::Tanh: case Fn::Sigmoid: case Fn::Erf: case Fn::Erfc: case Fn::Sin: case Fn::Cos: case Fn::Atan:
          case Fn::GeluErf: case Fn::GeluTanh: case Fn::Silu: case Fn::Softplus: case Fn::Mish: case Fn::Elu:
          case Fn::Selu: case Fn::Floor: case Fn::Ceil: case Fn::Round: case Fn::Trunc: case Fn::Sign:
            return finite_factor(e->arg(0));
          case Fn::Pow:  // a square of a finite value (an overflow aside)
            return e->arg(1)->op == Op::ConstReal && e->arg(1)->rational() > 0 &&
                   e->arg(1)->rational().get_den() == 1 && finite_factor(e->arg(0));
          default: return false;
        }
      default: return false;
    }
  }

  // f(0) = 0 in IEEE arithmetic (and x^c at x = 0 for a constant c > 0).
  static bool zero_at_zero(Expr e) {
    switch (e->fn()) {
      case Fn::Tanh: case Fn::Erf: case Fn::Sin: case Fn::Tan: case Fn::Atan: case Fn::Asin: case Fn::Sinh:
      case Fn::Asinh: case Fn::Atanh: case Fn::GeluErf: case Fn::GeluTanh: case Fn::Silu: case Fn::Mish:
      case Fn::Elu: case Fn::Selu: case Fn::Expm1: case Fn::Log1p: case Fn::Sqrt: case Fn::Floor: case Fn::Ceil:
      case Fn::Round: case Fn::Trunc: case Fn::Sign:
        return true;
      case Fn::Pow: return e->arg(1)->op == Op::ConstReal && e->arg(1)->rational() > 0;
      default: return false;
    }
  }

  // Where e (a body's sub-expression) can be nonzero.
  Nonzero nonzero(Expr e) {
    Nonzero any;
    if (e->sort != Sort::Real) return any;
    switch (e->op) {
      case Op::ConstReal: {
        if (e->rational() != 0) return any;
        return Nonzero{false, {}};
      }
      case Op::TensorElem: case Op::Load: {
        const std::vector<int64_t>* sup = env.support ? env.support(e->tensor()) : nullptr;
        if (!sup) return any;
        std::optional<Affine> idx = e->op == Op::Load ? affine(e->arg(0)) : std::optional<Affine>(Affine{e->index(), {}});
        if (!idx) return any;
        return Nonzero{false, {{Atom{e->tensor(), *idx, {}}}}};
      }
      case Op::Abs: return nonzero(e->arg(0));
      case Op::Reduce: {  // nonzero where its body is at some point of its box
        if (e->reduce_op() == ReduceOp::Prod) return any;
        Nonzero in = nonzero(e->reduce_body());
        if (in.anywhere) return any;
        const uint32_t m = e->reduce_rank();
        for (auto& conj : in.conj)
          for (Atom& at : conj) {
            std::vector<std::pair<uint32_t, int64_t>> coef;
            for (auto [u, f] : at.idx.coef) {
              if (u >= m) { coef.emplace_back(u - m, f); continue; }
              unsigned d = m - 1 - u;
              at.exists.push_back({e->reduce_lo(d), e->reduce_hi(d) - e->reduce_lo(d), f});
            }
            at.idx.coef = std::move(coef);
          }
        return in;
      }
      case Op::Call:  // f(0) = 0 exactly: 0 wherever its argument is (gelu of a convolution's zeros)
        return zero_at_zero(e) ? nonzero(e->arg(0)) : any;
      case Op::Ite: return either({e->arg(1), e->arg(2)});
      case Op::Add: case Op::Max: case Op::Min: {
        std::vector<Expr> xs(e->args().begin(), e->args().end());
        return either(xs);
      }
      case Op::Mul: {
        for (Expr f : e->args()) if (!finite_factor(f)) return any;
        Nonzero out{false, {{}}};  // one empty conjunct: every point so far
        bool restricted = false;
        for (Expr f : e->args()) {
          Nonzero n = nonzero(f);
          if (n.anywhere) continue;
          restricted = true;
          std::vector<std::vector<Atom>> prod;
          for (const auto& a : out.conj)
            for (const auto& b : n.conj) {
              if (prod.size() >= kMaxConjuncts) return any;
              prod.push_back(a);
              prod.back().insert(prod.back().end(), b.begin(), b.end());
            }
          out.conj = std::move(prod);
        }
        return restricted ? out : any;
      }
      default:
        return any;
    }
  }
  Nonzero either(const std::vector<Expr>& xs) {
    Nonzero out{false, {}};
    for (Expr x : xs) {
      Nonzero n = nonzero(x);
      if (n.anywhere || out.conj.size() + n.conj.size() > kMaxConjuncts) return Nonzero{};
      out.conj.insert(out.conj.end(), n.conj.begin(), n.conj.end());
    }
    return out;
  }

  // The points of r (row-major offsets, ascending) where its body can be nonzero, given the
  // enclosing indices in bound_values; nullopt: no restriction found (or too many points).
  std::optional<std::vector<uint64_t>> sparse_points(Expr r) {
    auto& plan = nonzero_plans[r];
    if (!plan) plan = std::make_unique<Nonzero>(nonzero(r->reduce_body()));
    if (plan->anywhere) return std::nullopt;
    const unsigned n = r->reduce_rank();
    std::vector<int64_t> lo(n), ext(n);
    for (unsigned d = 0; d < n; ++d) lo[d] = r->reduce_lo(d), ext[d] = r->reduce_hi(d) - r->reduce_lo(d);
    // own dim d is Bound(n-1-d); an enclosing index Bound(u >= n) is bound_values[size-1-(u-n)]
    auto outer = [&](uint32_t u) -> std::optional<int64_t> {
      size_t j = u - n;
      if (j >= bound_values.size()) return std::nullopt;
      return bound_values[bound_values.size() - 1 - j];
    };
    // one read at this point of the enclosing indices: Σ over its dims of factor·k = s - c
    struct Dim { int64_t lo, ext, a; int own; };  // own: the reduction's dim, -1: a nested one's
    struct Read { const std::vector<int64_t>* sup; int64_t c; std::vector<Dim> dims; uint64_t free_points; bool own; };
    std::vector<uint64_t> points;
    bool overflow = false;
    // the solutions of one read for one support element, own dims recorded (`record`), nested ones
    // only required to exist
    auto solve_read = [&](const Read& rd, int64_t s, bool record) -> bool {
      std::vector<const Dim*> order;
      for (const Dim& d : rd.dims) if (d.a != 0) order.push_back(&d);
      std::sort(order.begin(), order.end(), [](const Dim* x, const Dim* y) { return std::llabs(x->a) > std::llabs(y->a); });
      std::vector<__int128> rest_min(order.size() + 1, 0), rest_max(order.size() + 1, 0);
      for (size_t i = order.size(); i-- > 0;) {
        __int128 a = order[i]->a, x0 = a * order[i]->lo, x1 = a * (order[i]->lo + order[i]->ext - 1);
        rest_min[i] = rest_min[i + 1] + std::min(x0, x1);
        rest_max[i] = rest_max[i + 1] + std::max(x0, x1);
      }
      // the index as an integer stays inside int64 over the box, so it is the element read (no wrap)
      if (rd.c + rest_min[0] < std::numeric_limits<int64_t>::min() || rd.c + rest_max[0] > std::numeric_limits<int64_t>::max()) {
        overflow = true;
        return false;
      }
      std::vector<int64_t> k(n, 0);
      std::vector<unsigned> fr;  // own dims the read does not constrain: every value
      for (unsigned d = 0; d < n; ++d)
        if (std::none_of(rd.dims.begin(), rd.dims.end(), [&](const Dim& x) { return x.own == int(d) && x.a != 0; }))
          fr.push_back(d);
      uint64_t visits = 0;
      bool found = false;
      auto floor_div = [](__int128 x, __int128 y) { __int128 q = x / y; return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q; };
      std::function<void(size_t, __int128)> go = [&](size_t i, __int128 target) {
        if (overflow || (found && !record)) return;
        if (++visits > kMaxSparsePoints) { overflow = true; return; }
        if (env.tick && (++computed & 0xFFFF) == 0) env.tick();  // the deadline also binds while solving
        if (i == order.size()) {
          if (target != 0) return;
          found = true;
          if (!record) return;
          for (unsigned d : fr) k[d] = lo[d];
          for (;;) {
            uint64_t off = 0;
            for (unsigned d = 0; d < n; ++d) off = off * uint64_t(ext[d]) + uint64_t(k[d] - lo[d]);
            if (points.size() >= kMaxSparsePoints) { overflow = true; return; }
            points.push_back(off);
            size_t f = fr.size();
            while (f-- > 0) {
              if (++k[fr[f]] < lo[fr[f]] + ext[fr[f]]) break;
              k[fr[f]] = lo[fr[f]];
            }
            if (f == size_t(-1)) return;
          }
        }
        const Dim& d = *order[i];
        __int128 a = d.a, lo_v = target - rest_max[i + 1], hi_v = target - rest_min[i + 1], k0, k1;
        // a·k in [lo_v, hi_v]
        if (a > 0) k0 = -floor_div(-lo_v, a), k1 = floor_div(hi_v, a);
        else k0 = -floor_div(-hi_v, a), k1 = floor_div(lo_v, a);
        k0 = std::max<__int128>(k0, d.lo);
        k1 = std::min<__int128>(k1, d.lo + d.ext - 1);
        for (__int128 v = k0; v <= k1 && !overflow && !(found && !record); ++v) {
          if (d.own >= 0) k[size_t(d.own)] = static_cast<int64_t>(v);
          go(i + 1, target - a * v);
        }
      };
      go(0, static_cast<__int128>(s) - rd.c);
      return found;
    };
    for (const auto& conj : plan->conj) {
      std::vector<Read> reads;
      bool nowhere = false;
      for (const Atom& at : conj) {
        Read rd{env.support(at.tensor), at.idx.c, {}, 1, false};
        std::vector<int64_t> own(n, 0);
        for (auto [u, f] : at.idx.coef) {
          if (u < n) { own[n - 1 - u] += f; continue; }
          auto v = outer(u);
          if (!v) return std::nullopt;
          __int128 c = static_cast<__int128>(rd.c) + static_cast<__int128>(f) * *v;
          if (c > kAffineLimit || c < -kAffineLimit) return std::nullopt;
          rd.c = static_cast<int64_t>(c);
        }
        for (unsigned d = 0; d < n; ++d) {
          if (own[d] != 0) rd.own = true, rd.dims.push_back({lo[d], ext[d], own[d], int(d)});
          else rd.free_points = rd.free_points > kMaxSparsePoints ? rd.free_points : rd.free_points * uint64_t(ext[d]);
        }
        for (const auto& [elo, eext, ea] : at.exists) rd.dims.push_back({elo, eext, ea, -1});
        if (!rd.own && rd.sup->size() <= kMaxFilterSupport) {  // a filter: no element of the support in reach is nowhere
          bool reach = false;
          for (int64_t s : *rd.sup)
            if ((reach = solve_read(rd, s, false)) || overflow) break;
          if (overflow) return std::nullopt;
          if (!reach) nowhere = true;
        }
        reads.push_back(std::move(rd));
      }
      if (nowhere) continue;
      const Read* best = nullptr;
      for (const Read& rd : reads)
        if (rd.own && (!best || rd.free_points < best->free_points)) best = &rd;
      if (!best || best->free_points > kMaxSparsePoints) return std::nullopt;
      // as many support elements as points: every point is cheaper than solving for each element
      uint64_t count = 1;
      for (unsigned d = 0; d < n; ++d) count = count > kMaxSparsePoints ? count : count * uint64_t(ext[d]);
      if (uint64_t(best->sup->size()) * best->free_points >= count) return std::nullopt;
      for (int64_t s : *best->sup) {
        solve_read(*best, s, true);
        if (overflow) return std::nullopt;
      }
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    return points;
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
    if (env.support && op != ReduceOp::Prod) {
      if (auto pts = sparse_points(r)) return sparse_value(r, tp, *pts);
      if (env.max_dense_points) {
        uint64_t count = 1;
        for (unsigned d = 0; d < n; ++d)
          count = count > env.max_dense_points ? count : count * uint64_t(r->reduce_hi(d) - r->reduce_lo(d));
        if (count > env.max_dense_points)
          throw std::runtime_error(fmt::format("evaluate: a reduction of {}+ points that no zero read restricts", count));
      }
    }
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

  // r at the given points only (row-major offsets, ascending): its body is exactly 0 elsewhere, so a
  // sum is the same number (x + 0 is x, also rounded) and a max or min takes one 0 for the rest.
  Value sparse_value(Expr r, Tape& tp, const std::vector<uint64_t>& points) {
    const unsigned n = r->reduce_rank();
    ReduceOp op = r->reduce_op();
    uint64_t count = 1;
    for (unsigned d = 0; d < n; ++d) count *= uint64_t(r->reduce_hi(d) - r->reduce_lo(d));
    Value acc = Value::of_real(0.0);
    bool first = true, undef = false;
    auto combine = [&](const Value& v) {
      undef |= v.undef;
      switch (op) {
        case ReduceOp::Sum: acc.real = rnd(acc.real + v.real); break;
        case ReduceOp::Max: acc.real = first || v.real > acc.real ? v.real : acc.real; break;
        case ReduceOp::Min: acc.real = first || v.real < acc.real ? v.real : acc.real; break;
        case ReduceOp::Prod: throw std::logic_error("sparse_value: a product");
      }
      first = false;
    };
    size_t base = bound_values.size();
    bound_values.resize(base + n);
    for (uint64_t off : points) {
      for (unsigned d = n; d-- > 0;) {
        uint64_t e = uint64_t(r->reduce_hi(d) - r->reduce_lo(d));
        bound_values[base + d] = r->reduce_lo(d) + int64_t(off % e);
        off /= e;
      }
      combine(run(tp));
      if (env.tick && (++computed & 0xFFFF) == 0) env.tick();
    }
    bound_values.resize(base);
    if (points.size() < count && op != ReduceOp::Sum) combine(Value::of_real(0.0));
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
