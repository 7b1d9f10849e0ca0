// Activation functions. Named ir functions (Sigmoid, GeluErf, Silu, Mish, ...)
// are used for the standard parameterizations so that the ptx math-idiom
// rollup and these equations meet on the same node; other parameter values are
// written out.
#include "aten/internal.h"

namespace dirigo::aten::detail {
namespace {

using ir::Fn;

void act(Registry& r, const std::string& key, std::string_view params, std::function<Expr(Env&, Expr)> f) {
  r.adding_pointwise = key != "prelu";  // prelu reads its slope by channel, not by broadcast
  r.add(key, params, [f](Env& e) { return f(e, e.operand("self")); });
  r.adding_pointwise = false;
}

Expr relu(ir::Context& cx, Expr x) { return cx.max(x, cx.real_const(0)); }
Expr clamp(ir::Context& cx, Expr x, Expr lo, Expr hi) { return cx.min(cx.max(x, lo), hi); }
// relu6(x + 3) / 6, the core of hardsigmoid/hardswish
Expr hard_sigmoid(ir::Context& cx, Expr x) {
  return cx.div(clamp(cx, cx.add(x, cx.real_const(3)), cx.real_const(0), cx.real_const(6)), cx.real_const(6));
}
Expr elu(Env& e, Expr x, double alpha, double scale, double input_scale) {
  auto& cx = e.cx;
  if (alpha == 1 && scale == 1 && input_scale == 1) return cx.call(Fn::Elu, x);
  Expr neg = cx.mul(e.num(alpha * scale), cx.sub(cx.call(Fn::Exp, cx.mul(e.num(input_scale), x)), cx.real_const(1)));
  return cx.ite(cx.lt(cx.real_const(0), x), cx.mul(e.num(scale), x), neg);
}
// softplus with PyTorch's linear region above the threshold
Expr softplus(Env& e, Expr x, double beta, double threshold) {
  auto& cx = e.cx;
  Expr bx = cx.mul(e.num(beta), x);
  Expr sp = cx.div(cx.call(Fn::Softplus, bx), e.num(beta));
  return cx.ite(cx.lt(e.num(threshold), bx), x, sp);
}

}  // namespace

void register_activation(Registry& r) {
  act(r, "relu", "self", [](Env& e, Expr x) { return relu(e.cx, x); });
  act(r, "relu6", "self", [](Env& e, Expr x) { return clamp(e.cx, x, e.cx.real_const(0), e.cx.real_const(6)); });
  act(r, "leaky_relu", "self negative_slope", [](Env& e, Expr x) {
    return e.cx.ite(e.cx.lt(e.cx.real_const(0), x), x, e.cx.mul(e.num(e.real("negative_slope", 0.01)), x));
  });
  act(r, "rrelu", "self lower upper training generator", [](Env& e, Expr x) {
    if (e.flag("training", false)) e.unsupported("nondeterministic: rrelu in training mode");
    double slope = (e.real("lower", 1.0 / 8) + e.real("upper", 1.0 / 3)) / 2;
    return e.cx.ite(e.cx.lt(e.cx.real_const(0), x), x, e.cx.mul(e.num(slope), x));
  });
  // _prelu_kernel gets the weight already shaped to broadcast against the input
  act(r, "_prelu_kernel", "self weight", [](Env& e, Expr x) {
    return e.cx.ite(e.cx.lt(e.cx.real_const(0), x), x, e.cx.mul(e.operand("weight"), x));
  });
  // prelu: one slope per channel (dim 1), or a single one
  act(r, "prelu", "self weight", [](Env& e, Expr x) {
    const TensorRef& w = e.tensor("weight");
    int64_t c = (e.idx.size() >= 2 && w.numel() > 1) ? e.idx[1] : 0;
    Expr slope = e.real_at(w, Index{c});
    return e.cx.ite(e.cx.lt(e.cx.real_const(0), x), x, e.cx.mul(slope, x));
  });
  act(r, "elu", "self alpha scale input_scale", [](Env& e, Expr x) {
    return elu(e, x, e.real("alpha", 1.0), e.real("scale", 1.0), e.real("input_scale", 1.0));
  });
  act(r, "selu", "self", [](Env& e, Expr x) { return e.cx.call(Fn::Selu, x); });
  act(r, "celu", "self alpha", [](Env& e, Expr x) {
    double a = e.real("alpha", 1.0);
    if (a == 1) return e.cx.call(Fn::Elu, x);
    return elu(e, x, a, 1.0, 1.0 / a);
  });
  act(r, "gelu", "self approximate", [](Env& e, Expr x) -> Expr {
    std::string approx = e.str("approximate", "none");
    if (approx == "none") return e.cx.call(Fn::GeluErf, x);
    if (approx == "tanh") return e.cx.call(Fn::GeluTanh, x);
    e.unsupported("gelu approximate='" + approx + "'");
  });
  act(r, "silu", "self", [](Env& e, Expr x) { return e.cx.call(Fn::Silu, x); });
  act(r, "mish", "self", [](Env& e, Expr x) { return e.cx.call(Fn::Mish, x); });
  act(r, "hardsigmoid", "self", [](Env& e, Expr x) { return hard_sigmoid(e.cx, x); });
  act(r, "hardswish", "self", [](Env& e, Expr x) { return e.cx.mul(x, hard_sigmoid(e.cx, x)); });
  act(r, "hardtanh", "self min_val max_val", [](Env& e, Expr x) {
    return clamp(e.cx, x, e.num(e.real("min_val", -1.0)), e.num(e.real("max_val", 1.0)));
  });
  act(r, "softplus", "self beta threshold", [](Env& e, Expr x) {
    return softplus(e, x, e.real("beta", 1.0), e.real("threshold", 20.0));
  });
  act(r, "hardshrink", "self lambd", [](Env& e, Expr x) {
    auto& cx = e.cx;
    Expr l = e.num(e.real("lambd", 0.5));
    return cx.ite(cx.le(cx.abs(x), l), cx.real_const(0), x);
  });
  act(r, "softshrink", "self lambd", [](Env& e, Expr x) {
    auto& cx = e.cx;
    Expr l = e.num(e.real("lambd", 0.5));
    return cx.ite(cx.lt(l, x), cx.sub(x, l), cx.ite(cx.lt(x, cx.neg(l)), cx.add(x, l), cx.real_const(0)));
  });
  act(r, "threshold", "self threshold value", [](Env& e, Expr x) {
    auto& cx = e.cx;
    return cx.ite(cx.le(x, e.num(e.real("threshold"))), e.num(e.real("value")), x);
  });
  // log(sigmoid(x)) = -softplus(-x); the forward op also returns a buffer (output 1) we do not model.
  for (const char* k : {"log_sigmoid", "log_sigmoid_forward"})
    r.add(k, "self", [](Env& e) -> Expr {
      if (e.out != 0) e.unsupported("log_sigmoid_forward buffer output");
      return e.cx.neg(e.cx.call(Fn::Softplus, e.cx.neg(e.operand("self"))));
    });
  r.add("glu", "self dim", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    e.require(in.rank() >= 1, "glu of a 0-d tensor");
    int64_t d = wrap_dim(e.integer("dim", -1), in.rank());
    e.require_rank(in.rank());
    Index a = e.idx, b = e.idx;
    b[d] += in.shape[d] / 2;
    return e.cx.mul(e.real_at(in, a), e.cx.call(Fn::Sigmoid, e.real_at(in, b)));
  });
}

}  // namespace dirigo::aten::detail
