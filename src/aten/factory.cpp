// Constants: zeros/ones/full (and *_like, new_*), fill, arange, eye,
// scalar_tensor. Uninitialized memory (empty*) is an Undef value; random
// factories are nondeterministic and unsupported.
#include <cmath>

#include "aten/internal.h"

namespace dirigo::aten::detail {
namespace {

// A constant in the output's sort.
Expr constant(const Env& e, double v) {
  DType d = e.out_dtype();
  if (is_floating(d)) return e.num(v);
  if (d == DType::Bool) return e.cx.bv_const(ir::Sort::BV8, v != 0);
  return e.cx.bv_const(elem_sort(d), static_cast<uint64_t>(static_cast<int64_t>(std::trunc(v))));
}

}  // namespace

void register_factory(Registry& r) {
  // the value depends only on the output dtype; the parameter lists name the schema's leading arguments
  for (auto [k, params] : {std::pair{"zeros", "size"}, {"zeros_like", "self"}, {"new_zeros", "self size"},
                           {"zero", "self"}, {"zero_", "self"}})
    r.add(k, params, [](Env& e) { return constant(e, 0); });
  for (auto [k, params] : {std::pair{"ones", "size"}, {"ones_like", "self"}, {"new_ones", "self size"}})
    r.add(k, params, [](Env& e) { return constant(e, 1); });
  r.add("full", "size fill_value", [](Env& e) { return constant(e, e.real("fill_value")); });
  r.add("full_like", "self fill_value", [](Env& e) { return constant(e, e.real("fill_value")); });
  r.add("new_full", "self size fill_value", [](Env& e) { return constant(e, e.real("fill_value")); });
  r.add("scalar_tensor", "s", [](Env& e) { return constant(e, e.real("s")); });
  r.add("fill.Scalar", "self value", [](Env& e) { return constant(e, e.real("value")); });
  r.add("fill.Tensor", "self value", [](Env& e) {
    const TensorRef& v = e.tensor("value");
    return e.convert(e.at(v, Index(v.rank(), 0)), v.dtype, e.out_dtype());
  });
  for (auto [k, params] : {std::pair{"empty.memory_format", "size"}, {"empty_like", "self"}, {"empty_strided", "size"},
                           {"new_empty", "self"}, {"new_empty_strided", "self"}})
    r.add(k, params, [](Env& e) { return e.cx.undef(elem_sort(e.out_dtype())); });
  // arange: start + i * step
  r.add("arange", "end", [](Env& e) {
    e.require_rank(1);
    return constant(e, static_cast<double>(e.idx[0]));
  });
  r.add("arange.start", "start end", [](Env& e) {
    e.require_rank(1);
    return constant(e, e.real("start") + static_cast<double>(e.idx[0]));
  });
  r.add("arange.start_step", "start end step", [](Env& e) -> Expr {
    e.require_rank(1);
    double start = e.real("start"), step = e.real("step", 1.0);
    if (!is_floating(e.out_dtype())) return constant(e, start + static_cast<double>(e.idx[0]) * step);
    // exact: start + i*step over the reals (PyTorch computes it in double before rounding to the dtype)
    return e.cx.add(e.num(start), e.cx.mul(e.cx.real_const(e.idx[0]), e.num(step)));
  });
  auto eye = [](Env& e) {
    e.require_rank(2);
    return constant(e, e.idx[0] == e.idx[1] ? 1 : 0);
  };
  r.add("eye", "n", eye);
  r.add("eye.m", "n m", eye);
  for (const char* k : {"rand", "randn", "randint", "randint.low", "rand_like", "randn_like", "randint_like",
                        "bernoulli", "bernoulli.p", "bernoulli.float", "bernoulli.Tensor", "normal_", "uniform_", "randperm", "multinomial"})
    r.add(k, "", [](Env& e) -> Expr { e.unsupported("nondeterministic: random values"); });
}

}  // namespace dirigo::aten::detail
