// Pointwise arithmetic, comparisons and math functions, with broadcasting.
// Type promotion: the output dtype (recorded by the tracer) decides the domain;
// float results are computed in the reals, integer add/sub/mul/neg wrap around
// as bitvectors, predicates are Bool (stored as 0/1 bytes).
#include <cmath>
#include <optional>

#include "aten/internal.h"

namespace dirigo::aten::detail {
namespace {

using ir::Fn;

// Argument as a bitvector of the output's sort (integer results).
Expr int_operand(const Env& e, std::string_view name) {
  const Arg* a = e.arg(name);
  ir::Sort s = elem_sort(e.out_dtype());
  if (!a) e.malformed("missing argument '" + std::string(name) + "'");
  if (a->kind == Arg::Kind::Tensor)
    return e.convert(e.at(a->tensor, broadcast_index(a->tensor, e.idx)), a->tensor.dtype, e.out_dtype());
  if (a->kind == Arg::Kind::Int || a->kind == Arg::Kind::Bool) return e.cx.bv_const(s, static_cast<uint64_t>(a->integer));
  e.unsupported("float scalar in an integer-typed result");
}

Expr truth(const Env& e, Expr v) {
  if (v->sort == ir::Sort::Bool) return v;
  if (v->sort == ir::Sort::Real) return e.cx.not_(e.cx.eq(v, e.cx.real_const(0)));
  return e.cx.not_(e.cx.eq(v, e.cx.bv_const(v->sort, 0)));
}

// A tensor-or-scalar argument as a truth value (where's condition, masks).
Expr truth_operand(const Env& e, std::string_view name) {
  const Arg* a = e.arg(name);
  if (a && a->kind == Arg::Kind::Tensor) return truth(e, e.at(a->tensor, broadcast_index(a->tensor, e.idx)));
  return truth(e, e.operand(name));
}

bool int_result(const Env& e) { return !is_floating(e.out_dtype()) && e.out_dtype() != DType::Bool; }

// x ** c for a constant exponent: small integer powers are products, as PyTorch computes them.
Expr pow_const(ir::Context& cx, Expr x, double c) {
  if (c == 0) return cx.real_const(1);
  if (c == 0.5) return cx.call(Fn::Sqrt, x);
  if (c == -0.5) return cx.call(Fn::Rsqrt, x);
  if (c == std::floor(c) && std::fabs(c) <= 64) {
    std::vector<Expr> f(static_cast<size_t>(std::fabs(c)), x);
    Expr p = cx.mul(f);
    return c > 0 ? p : cx.div(cx.real_const(1), p);
  }
  return cx.call(Fn::Pow, x, cx.real_const_from_double(c));
}

void unary(Registry& r, const std::string& name, std::function<Expr(ir::Context&, Expr)> f) {
  r.add(name, "self", [f](Env& e) { return f(e.cx, e.operand("self")); });
}

void add_sub(Registry& r, const std::string& key, std::string_view params, bool subtract, bool reversed) {
  r.add(key, params, [=](Env& e) -> Expr {
    auto& cx = e.cx;
    if (int_result(e)) {
      Expr a = int_operand(e, "self"), b = int_operand(e, "other");
      if (reversed) std::swap(a, b);  // rsub: other - alpha * self
      int64_t alpha = e.integer("alpha", 1);
      if (alpha != 1) b = cx.bv_mul(cx.bv_const(b->sort, static_cast<uint64_t>(alpha)), b);
      return subtract ? cx.bv_sub(a, b) : cx.bv_add(a, b);
    }
    Expr a = e.operand("self"), b = e.operand("other");
    double alpha = e.real("alpha", 1.0);
    // PyTorch scales the tensor whose factor alpha is: other for add/sub, self for rsub.
    if (reversed) {
      Expr sa = alpha == 1 ? a : cx.mul(e.num(alpha), a);
      return cx.sub(b, sa);
    }
    Expr sb = alpha == 1 ? b : cx.mul(e.num(alpha), b);
    return subtract ? cx.sub(a, sb) : cx.add(a, sb);
  });
}

Expr divide(const Env& e, Expr a, Expr b) {
  auto& cx = e.cx;
  std::string mode = e.has_param("rounding_mode") && e.given("rounding_mode") ? e.str("rounding_mode") : "";
  Expr q = cx.div(a, b);
  if (mode.empty()) return q;
  if (mode == "trunc") return cx.call(Fn::Trunc, q);
  if (mode == "floor") return cx.call(Fn::Floor, q);
  e.unsupported("rounding_mode '" + mode + "'");
}

// A comparison with a non-finite scalar (`x == inf`, `x < inf`, `x != nan`: core ATen's logsumexp
// masks an infinite max with `abs(amax) == inf`): the elements are reals, so every real lies strictly
// between -inf and +inf and compares false with NaN except for `ne`. The answer, by the comparison's
// name: eq ne lt le gt ge.
std::optional<bool> against_non_finite(const std::string& name, double c) {
  if (std::isnan(c)) return name == "ne";
  bool above = c > 0;  // x < +inf; x > -inf
  if (name == "eq") return false;
  if (name == "ne") return true;
  if (name == "lt" || name == "le") return above;
  return !above;  // gt, ge
}

void compare(Registry& r, const std::string& name, std::function<Expr(ir::Context&, Expr, Expr)> f) {
  r.add(name + ".Tensor", "self other", [f](Env& e) { return f(e.cx, e.operand("self"), e.operand("other")); });
  r.add(name + ".Scalar", "self other", [f, name](Env& e) {
    if (!e.is_tensor("other"))
      if (auto c = e.opt_real("other"); c && !std::isfinite(*c))
        if (auto v = against_non_finite(name, *c)) {
          e.operand("self");  // still read: an unsupported operand stays unsupported
          return e.cx.bool_const(*v);
        }
    return f(e.cx, e.operand("self"), e.operand("other"));
  });
}

}  // namespace

void register_elementwise(Registry& r) {
  // every op here reads its tensor operands at the broadcast of the location (element_sym)
  r.adding_pointwise = true;
  struct Reset {
    Registry& r;
    ~Reset() { r.adding_pointwise = false; }
  } reset{r};
  // ---- + - * /
  add_sub(r, "add.Tensor", "self other alpha", false, false);
  add_sub(r, "add.Scalar", "self other alpha", false, false);
  add_sub(r, "sub.Tensor", "self other alpha", true, false);
  add_sub(r, "sub.Scalar", "self other alpha", true, false);
  add_sub(r, "rsub.Tensor", "self other alpha", true, true);
  add_sub(r, "rsub.Scalar", "self other alpha", true, true);
  for (const char* k : {"mul.Tensor", "mul.Scalar", "multiply.Tensor", "multiply.Scalar"})
    r.add(k, "self other", [](Env& e) -> Expr {
      if (int_result(e)) return e.cx.bv_mul(int_operand(e, "self"), int_operand(e, "other"));
      return e.cx.mul(e.operand("self"), e.operand("other"));
    });
  for (const char* k : {"div.Tensor", "div.Scalar", "divide.Tensor", "divide.Scalar", "true_divide.Tensor",
                        "true_divide.Scalar"})
    r.add(k, "self other", [](Env& e) { return divide(e, e.operand("self"), e.operand("other")); });
  for (const char* k : {"div.Tensor_mode", "div.Scalar_mode", "divide.Tensor_mode", "divide.Scalar_mode"})
    r.add(k, "self other rounding_mode", [](Env& e) { return divide(e, e.operand("self"), e.operand("other")); });
  for (const char* k : {"floor_divide", "floor_divide.Scalar"})
    r.add(k, "self other", [](Env& e) {
      return e.cx.call(Fn::Floor, e.cx.div(e.operand("self"), e.operand("other")));
    });
  // Python-style remainder (sign of the divisor) and C-style fmod (sign of the dividend).
  for (const char* k : {"remainder.Tensor", "remainder.Scalar"})
    r.add(k, "self other", [](Env& e) {
      Expr a = e.operand("self"), b = e.operand("other");
      return e.cx.sub(a, e.cx.mul(b, e.cx.call(Fn::Floor, e.cx.div(a, b))));
    });
  for (const char* k : {"fmod.Tensor", "fmod.Scalar"})
    r.add(k, "self other", [](Env& e) {
      Expr a = e.operand("self"), b = e.operand("other");
      return e.cx.sub(a, e.cx.mul(b, e.cx.call(Fn::Trunc, e.cx.div(a, b))));
    });
  r.add("neg", "self", [](Env& e) -> Expr {
    if (int_result(e)) return e.cx.bv_neg(int_operand(e, "self"));
    return e.cx.neg(e.operand("self"));
  });
  r.add("negative", "self", [](Env& e) { return e.cx.neg(e.operand("self")); });
  for (const char* k : {"addcmul", "addcdiv"}) {
    bool is_div = k[4] == 'd';  // addc[d]iv
    r.add(k, "self tensor1 tensor2 value", [is_div](Env& e) {
      auto& cx = e.cx;
      Expr t1 = e.operand("tensor1"), t2 = e.operand("tensor2");
      Expr p = is_div ? cx.div(t1, t2) : cx.mul(t1, t2);
      return cx.add(e.operand("self"), cx.mul(e.num(e.real("value", 1.0)), p));
    });
  }
  for (const char* k : {"lerp.Scalar", "lerp.Tensor"})
    r.add(k, "self end weight", [](Env& e) {
      Expr a = e.operand("self"), b = e.operand("end"), w = e.operand("weight");
      return e.cx.add(a, e.cx.mul(w, e.cx.sub(b, a)));
    });
  for (const char* k : {"xlogy.Tensor", "xlogy.Scalar_Other", "xlogy.Scalar_Self"})
    r.add(k, "self other", [](Env& e) {
      auto& cx = e.cx;
      Expr x = e.operand("self"), y = e.operand("other");
      return cx.ite(cx.eq(x, cx.real_const(0)), cx.real_const(0), cx.mul(x, cx.call(Fn::Log, y)));
    });

  // ---- powers and roots
  r.add("pow.Tensor_Scalar", "self exponent", [](Env& e) {
    return pow_const(e.cx, e.operand("self"), e.real("exponent"));
  });
  r.add("pow.Tensor_Tensor", "self exponent", [](Env& e) {
    return e.cx.call(Fn::Pow, e.operand("self"), e.operand("exponent"));
  });
  r.add("pow.Scalar", "self exponent", [](Env& e) {
    return e.cx.call(Fn::Pow, e.operand("self"), e.operand("exponent"));
  });
  r.add("float_power.Tensor_Scalar", "self exponent", [](Env& e) {
    return pow_const(e.cx, e.operand("self"), e.real("exponent"));
  });
  unary(r, "square", [](ir::Context& cx, Expr x) { return cx.mul(x, x); });
  unary(r, "reciprocal", [](ir::Context& cx, Expr x) { return cx.div(cx.real_const(1), x); });

  // ---- named functions
  struct Named { const char* name; Fn f; };
  static constexpr Named kNamed[] = {
      {"exp", Fn::Exp},     {"exp2", Fn::Exp2},   {"expm1", Fn::Expm1}, {"log", Fn::Log},     {"log2", Fn::Log2},
      {"log1p", Fn::Log1p}, {"sqrt", Fn::Sqrt},   {"rsqrt", Fn::Rsqrt}, {"tanh", Fn::Tanh},   {"erf", Fn::Erf},
      {"erfc", Fn::Erfc},   {"sin", Fn::Sin},     {"cos", Fn::Cos},     {"tan", Fn::Tan},     {"atan", Fn::Atan},
      {"asin", Fn::Asin},   {"acos", Fn::Acos},   {"sinh", Fn::Sinh},   {"cosh", Fn::Cosh},   {"asinh", Fn::Asinh},
      {"acosh", Fn::Acosh}, {"atanh", Fn::Atanh}, {"floor", Fn::Floor}, {"ceil", Fn::Ceil},   {"round", Fn::Round},
      {"trunc", Fn::Trunc}, {"fix", Fn::Trunc},   {"sign", Fn::Sign},   {"sgn", Fn::Sign},    {"sigmoid", Fn::Sigmoid},
      {"arctan", Fn::Atan}};
  for (const auto& n : kNamed) unary(r, n.name, [f = n.f](ir::Context& cx, Expr x) { return cx.call(f, x); });
  unary(r, "log10", [](ir::Context& cx, Expr x) {
    return cx.div(cx.call(Fn::Log, x), cx.call(Fn::Log, cx.real_const(10)));
  });
  unary(r, "abs", [](ir::Context& cx, Expr x) { return cx.abs(x); });
  unary(r, "absolute", [](ir::Context& cx, Expr x) { return cx.abs(x); });
  // round(x, decimals=d) = round(x * 10^d) / 10^d
  r.add("round.decimals", "self decimals", [](Env& e) {
    auto& cx = e.cx;
    int64_t d = e.integer("decimals", 0);
    if (d > 18 || d < -18) e.unsupported("round with |decimals| > 18");
    Expr scale = d >= 0 ? cx.real_const(mpq_class(static_cast<long>(std::pow(10, d))))
                        : cx.real_const(mpq_class(1, static_cast<unsigned long>(std::pow(10, -d))));
    return cx.div(cx.call(Fn::Round, cx.mul(e.operand("self"), scale)), scale);
  });

  // ---- min / max / clamp
  for (const char* k : {"maximum", "max.other", "fmax"})
    r.add(k, "self other", [](Env& e) { return e.cx.max(e.operand("self"), e.operand("other")); });
  for (const char* k : {"minimum", "min.other", "fmin"})
    r.add(k, "self other", [](Env& e) { return e.cx.min(e.operand("self"), e.operand("other")); });
  auto clamp = [](Env& e) {
    Expr x = e.operand("self");
    // clamp applies min first, then max: clamp(x, lo, hi) = min(max(x, lo), hi), also when lo > hi.
    if (e.has_param("min") && e.given("min")) x = e.cx.max(x, e.operand("min"));
    if (e.has_param("max") && e.given("max")) x = e.cx.min(x, e.operand("max"));
    return x;
  };
  for (const char* k : {"clamp", "clamp.Tensor", "clip", "clip.Tensor"}) r.add(k, "self min max", clamp);
  for (const char* k : {"clamp_min", "clamp_min.Tensor"}) r.add(k, "self min", clamp);
  for (const char* k : {"clamp_max", "clamp_max.Tensor"}) r.add(k, "self max", clamp);

  // ---- selection
  for (const char* k : {"where.self", "where.ScalarSelf", "where.ScalarOther", "where.Scalar"})
    r.add(k, "condition self other", [](Env& e) -> Expr {
      Expr c = truth_operand(e, "condition");
      if (int_result(e)) return e.cx.ite(c, int_operand(e, "self"), int_operand(e, "other"));
      return e.cx.ite(c, e.operand("self"), e.operand("other"));
    });
  for (const char* k : {"masked_fill.Scalar", "masked_fill.Tensor"})
    r.add(k, "self mask value", [](Env& e) {
      return e.cx.ite(truth_operand(e, "mask"), e.operand("value"), e.operand("self"));
    });

  // ---- comparisons and logic (Bool results)
  compare(r, "eq", [](ir::Context& cx, Expr a, Expr b) { return cx.eq(a, b); });
  compare(r, "ne", [](ir::Context& cx, Expr a, Expr b) { return cx.not_(cx.eq(a, b)); });
  compare(r, "lt", [](ir::Context& cx, Expr a, Expr b) { return cx.lt(a, b); });
  compare(r, "le", [](ir::Context& cx, Expr a, Expr b) { return cx.le(a, b); });
  compare(r, "gt", [](ir::Context& cx, Expr a, Expr b) { return cx.lt(b, a); });
  compare(r, "ge", [](ir::Context& cx, Expr a, Expr b) { return cx.le(b, a); });
  r.add("logical_not", "self", [](Env& e) { return e.cx.not_(truth_operand(e, "self")); });
  r.add("logical_and", "self other", [](Env& e) { return e.cx.and_(truth_operand(e, "self"), truth_operand(e, "other")); });
  r.add("logical_or", "self other", [](Env& e) { return e.cx.or_(truth_operand(e, "self"), truth_operand(e, "other")); });
  r.add("logical_xor", "self other", [](Env& e) {
    return e.cx.not_(e.cx.eq(truth_operand(e, "self"), truth_operand(e, "other")));
  });

  // ---- bitwise ops: on bool tensors they are the logical ones (`~mask` in Mamba2's segsum),
  // on integers bitvector operations of the output's width; floats have none (PyTorch rejects them).
  auto bool_result = [](const Env& e) {
    if (is_floating(e.out_dtype())) e.malformed("bitwise op on a floating-point tensor");
    return e.out_dtype() == DType::Bool;
  };
  r.add("bitwise_not", "self", [bool_result](Env& e) {
    if (bool_result(e)) return e.cx.not_(truth_operand(e, "self"));
    return e.cx.bv_not(int_operand(e, "self"));
  });
  using BinOp = Expr (ir::Context::*)(Expr, Expr);
  struct Bitwise { const char* name; BinOp logical; BinOp bits; };
  for (const Bitwise& b : {Bitwise{"bitwise_and", &ir::Context::and_, &ir::Context::bv_and},
                           Bitwise{"bitwise_or", &ir::Context::or_, &ir::Context::bv_or},
                           Bitwise{"bitwise_xor", nullptr, &ir::Context::bv_xor}})
    for (const char* ov : {".Tensor", ".Scalar"})
      r.add(std::string(b.name) + ov, "self other", [b, bool_result](Env& e) -> Expr {
        auto& cx = e.cx;
        if (bool_result(e)) {
          Expr x = truth_operand(e, "self"), y = truth_operand(e, "other");
          return b.logical ? (cx.*b.logical)(x, y) : cx.not_(cx.eq(x, y));
        }
        return (cx.*b.bits)(int_operand(e, "self"), int_operand(e, "other"));
      });
}

}  // namespace dirigo::aten::detail
