// dirigo._core.IrContext / IrExpr: a tiny builder, printer and evaluator for the
// canonical expression DAG, for experiments and tests from Python:
//   c = IrContext(); x = c.var("x"); (x*2 + x).same(c.mul(c.real(3), x)) -> True
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>
#include <stdexcept>

#include "ir/eval.h"
#include "ir/expr.h"
#include "ir/print.h"
#include "registry.h"

namespace nb = nanobind;
using namespace dirigo::ir;

namespace {

struct PyCtx {
  std::shared_ptr<Context> ptr;
};

struct PyExpr {
  std::shared_ptr<Context> ctx;
  Expr e;
};

Sort parse_sort(const std::string& s) {
  for (Sort x : {Sort::Bool, Sort::BV8, Sort::BV16, Sort::BV32, Sort::BV64, Sort::Real})
    if (sort_name(x) == s) return x;
  throw nb::value_error(("unknown sort '" + s + "' (bool, bv8, bv16, bv32, bv64, real)").c_str());
}

Fn parse_fn(const std::string& s) {
  for (unsigned i = 0; i < static_cast<unsigned>(Fn::Count_); ++i)
    if (fn_name(static_cast<Fn>(i)) == s) return static_cast<Fn>(i);
  throw nb::value_error(("unknown function '" + s + "'").c_str());
}

Expr unwrap(const std::shared_ptr<Context>& ctx, const PyExpr& x) {
  if (x.ctx != ctx) throw nb::value_error("expression belongs to another IrContext");
  return x.e;
}

std::vector<Expr> unwrap_all(const std::shared_ptr<Context>& ctx, const std::vector<PyExpr>& xs) {
  std::vector<Expr> es;
  for (const auto& x : xs) es.push_back(unwrap(ctx, x));
  return es;
}

// The node build() makes in ctx; the IR's std::invalid_argument (a bad sort, bound or operand)
// raised in Python as ValueError.
template <class F>
PyExpr built(const std::shared_ptr<Context>& ctx, F build) {
  try {
    return {ctx, build(*ctx)};
  } catch (const std::invalid_argument& err) {
    throw nb::value_error(err.what());
  }
}

// Arithmetic dispatching on the sort: reals use add/mul/..., bit-vectors bv_add/...
template <class F>
PyExpr binary(const PyExpr& a, const PyExpr& b, F f) {
  Expr y = unwrap(a.ctx, b);
  return built(a.ctx, [&](Context& c) { return f(c, a.e, y); });
}

}  // namespace

static dirigo::py::RegisterBinder reg([](nb::module_& m) {
  nb::class_<PyExpr>(m, "IrExpr", "A node of the canonical expression DAG (hash-consed: equal means identical).")
      .def("same", [](const PyExpr& a, const PyExpr& b) { return a.ctx == b.ctx && a.e == b.e; },
           "True if both are the same canonical node.")
      .def_prop_ro("sort", [](const PyExpr& a) { return std::string(sort_name(a.e->sort)); })
      .def_prop_ro("op", [](const PyExpr& a) { return std::string(op_name(a.e->op)); })
      .def_prop_ro("hash", [](const PyExpr& a) { return a.e->hash; }, "Structural hash (same in every context).")
      .def_prop_ro("num_args", [](const PyExpr& a) { return a.e->nargs; })
      .def("__hash__", [](const PyExpr& a) { return a.e->hash; })
      .def("__eq__", [](const PyExpr& a, const PyExpr& b) { return a.ctx == b.ctx && a.e == b.e; })
      .def("__str__", [](const PyExpr& a) { return to_string(*a.ctx, a.e); })
      .def("__repr__", [](const PyExpr& a) { return "IrExpr(" + to_string(*a.ctx, a.e) + ")"; })
      .def("__add__", [](const PyExpr& a, const PyExpr& b) {
        return binary(a, b, [](Context& c, Expr x, Expr y) { return is_bv(x->sort) ? c.bv_add(x, y) : c.add(x, y); });
      })
      .def("__sub__", [](const PyExpr& a, const PyExpr& b) {
        return binary(a, b, [](Context& c, Expr x, Expr y) { return is_bv(x->sort) ? c.bv_sub(x, y) : c.sub(x, y); });
      })
      .def("__mul__", [](const PyExpr& a, const PyExpr& b) {
        return binary(a, b, [](Context& c, Expr x, Expr y) { return is_bv(x->sort) ? c.bv_mul(x, y) : c.mul(x, y); });
      })
      .def("__truediv__", [](const PyExpr& a, const PyExpr& b) {
        return binary(a, b, [](Context& c, Expr x, Expr y) { return c.div(x, y); });
      })
      .def("__neg__", [](const PyExpr& a) {
        return PyExpr{a.ctx, is_bv(a.e->sort) ? a.ctx->bv_neg(a.e) : a.ctx->neg(a.e)};
      });

  nb::class_<PyCtx>(m, "IrContext", "Owns canonical expressions (dirigo::ir::Context).")
      .def("__init__", [](PyCtx* self) { new (self) PyCtx{std::make_shared<Context>()}; })
      .def("var",
           [](const PyCtx& self, const std::string& name, const std::string& sort, std::optional<uint64_t> lo,
              std::optional<uint64_t> hi) {
        const auto& c = self.ptr;
             Bounds b;
             if (lo) b.lo = *lo;
             if (hi) b.hi = *hi;
             return built(c, [&](Context& cx) { return cx.var(name, parse_sort(sort), b); });
           },
           nb::arg("name"), nb::arg("sort") = "real", nb::arg("lo") = nb::none(), nb::arg("hi") = nb::none())
      .def("real", [](const PyCtx& self, double v) {
        const auto& c = self.ptr;
        return built(c, [&](Context& cx) { return cx.real_const_from_double(v); });
      })
      .def("bv", [](const PyCtx& self, const std::string& sort, uint64_t v) {
        const auto& c = self.ptr; return PyExpr{c, c->bv_const(parse_sort(sort), v)}; })
      .def("elem", [](const PyCtx& self, const std::string& tensor, int64_t i) {
        const auto& c = self.ptr; return PyExpr{c, c->elem(c->tensor(tensor), i)}; })
      .def("call", [](const PyCtx& self, const std::string& fn, const PyExpr& x) {
        const auto& c = self.ptr;
        return built(c, [&](Context& cx) { return cx.call(parse_fn(fn), unwrap(c, x)); });
      })
      .def("min", [](const PyCtx& self, const std::vector<PyExpr>& xs) {
        const auto& c = self.ptr;
        std::vector<Expr> es = unwrap_all(c, xs);
        return built(c, [&](Context& cx) { return cx.min(es); });
      })
      .def("max", [](const PyCtx& self, const std::vector<PyExpr>& xs) {
        const auto& c = self.ptr;
        std::vector<Expr> es = unwrap_all(c, xs);
        return built(c, [&](Context& cx) { return cx.max(es); });
      })
      .def("to_smtlib", [](const PyCtx& self, const PyExpr& a, std::optional<PyExpr> b) {
        const auto& c = self.ptr;
        return to_smtlib(*c, unwrap(c, a), b ? unwrap(c, *b) : nullptr);
      }, nb::arg("a"), nb::arg("b") = nb::none())
      .def("evaluate",
           [](const PyCtx& self, const PyExpr& x, const std::map<std::string, double>& vars, bool f32) {
        const auto& c = self.ptr;
             Env env;
             env.var = [&](std::string_view n, Sort s) {
               auto it = vars.find(std::string(n));
               if (it == vars.end()) throw std::runtime_error("no value for variable " + std::string(n));
               return is_bv(s) ? Value::of_bv(s, static_cast<uint64_t>(it->second)) : Value::of_real(it->second);
             };
             Evaluator ev(env, f32 ? Precision::F32 : Precision::F64);
             try {
               Value v = ev(unwrap(c, x));
               return is_bv(v.sort) || v.sort == Sort::Bool ? static_cast<double>(v.bits) : v.real;
             } catch (const std::runtime_error& err) {
               throw nb::value_error(err.what());
             }
           },
           nb::arg("e"), nb::arg("vars"), nb::arg("f32") = false,
           "Evaluate in fp64 (or fp32 with f32=True); bit-vector results as their unsigned value.")
      .def_prop_ro("num_nodes", [](const PyCtx& self) {
        const auto& c = self.ptr; return c->num_nodes(); });
});
