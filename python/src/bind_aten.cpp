// dirigo._core.aten_*: build the per-element equation of an ATen op at given
// output locations and evaluate it concretely (ir::Evaluator, fp64). Used by
// the property tests that compare every equation with PyTorch on the CPU.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "aten/aten.h"
#include "ir/eval.h"
#include "ir/print.h"
#include "registry.h"

namespace nb = nanobind;

namespace dirigo::py {
namespace {

using aten::Arg;
using aten::TensorRef;

// Python storage keys -> ir tensor ids of one Context.
struct TensorIds {
  ir::Context& ctx;
  std::map<int64_t, int32_t> ids;
  int32_t of(int64_t key) {
    auto it = ids.find(key);
    if (it != ids.end()) return it->second;
    int32_t id = ctx.tensor("s" + std::to_string(key));
    ids.emplace(key, id);
    return id;
  }
};

std::vector<int64_t> int_list(nb::handle h, const char* what) {
  std::vector<int64_t> r;
  for (nb::handle x : h) r.push_back(nb::cast<int64_t>(x));
  (void)what;
  return r;
}

TensorRef tensor_ref(nb::dict d, TensorIds& ids) {
  TensorRef t;
  t.tensor_id = d.contains("tensor") ? ids.of(nb::cast<int64_t>(d["tensor"])) : 0;
  t.shape = int_list(d["shape"], "shape");
  if (d.contains("strides")) t.strides = int_list(d["strides"], "strides");
  if (d.contains("offset")) t.offset = nb::cast<int64_t>(d["offset"]);
  t.dtype = aten::parse_dtype(nb::cast<std::string>(nb::str(d["dtype"])));
  return t;
}

// None | bool | int | float | str | list/tuple | {"tensor": key, "shape", "strides", "offset", "dtype"} | {"dtype": name}
Arg to_arg(nb::handle h, TensorIds& ids) {
  if (h.is_none()) return Arg::none();
  if (nb::isinstance<nb::bool_>(h)) return Arg::of_bool(nb::cast<bool>(h));
  if (nb::isinstance<nb::int_>(h)) return Arg::of_int(nb::cast<int64_t>(h));
  if (nb::isinstance<nb::float_>(h)) return Arg::of_real(nb::cast<double>(h));
  if (nb::isinstance<nb::str>(h)) return Arg::of_string(nb::cast<std::string>(h));
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    std::vector<Arg> xs;
    for (nb::handle x : h) xs.push_back(to_arg(x, ids));
    return Arg::of_list(std::move(xs));
  }
  if (nb::isinstance<nb::dict>(h)) {
    nb::dict d = nb::borrow<nb::dict>(h);
    if (d.contains("tensor")) return Arg::of(tensor_ref(d, ids));
    if (d.contains("dtype")) return Arg::of_dtype(aten::parse_dtype(nb::cast<std::string>(nb::str(d["dtype"]))));
  }
  throw std::invalid_argument("aten argument of unsupported Python type: " + nb::cast<std::string>(nb::repr(h)));
}

aten::OpCall make_call(const std::string& name, nb::list args, nb::dict kwargs, nb::list outputs, TensorIds& ids) {
  aten::OpCall call;
  call.name = name;
  for (nb::handle a : args) call.args.push_back(to_arg(a, ids));
  for (auto [k, v] : kwargs) call.kwargs.emplace_back(nb::cast<std::string>(k), to_arg(v, ids));
  for (nb::handle o : outputs) call.outputs.push_back(tensor_ref(nb::borrow<nb::dict>(o), ids));
  return call;
}

using Storage = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Locations = nb::ndarray<const int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

std::vector<double> aten_eval(const std::string& name, nb::list args, nb::dict kwargs, nb::list outputs,
                              nb::dict storages, int output_index, Locations locations) {
  ir::Context ctx;
  TensorIds ids{ctx, {}};
  aten::OpCall call = make_call(name, args, kwargs, outputs, ids);
  std::vector<Storage> data(ctx.num_tensors() + storages.size() + 1);
  std::vector<bool> have(data.size(), false);
  for (auto [k, v] : storages) {
    int32_t id = ids.of(nb::cast<int64_t>(k));
    if (static_cast<size_t>(id) >= data.size()) { data.resize(id + 1); have.resize(id + 1, false); }
    data[id] = nb::cast<Storage>(v);
    have[id] = true;
  }
  ir::Env env;
  env.elem = [&](int32_t t, int64_t i, ir::Sort s) {
    if (t < 0 || static_cast<size_t>(t) >= data.size() || !have[t])
      throw std::runtime_error("no values for tensor " + std::string(ctx.tensor_name(t)));
    const Storage& st = data[t];
    if (i < 0 || static_cast<size_t>(i) >= st.shape(0))
      throw std::runtime_error("element " + std::to_string(i) + " outside tensor " + std::string(ctx.tensor_name(t)));
    double v = st(i);
    if (s == ir::Sort::Real) return ir::Value::of_real(v);
    if (s == ir::Sort::Bool) return ir::Value::of_bool(v != 0);
    unsigned w = ir::bv_width(s);
    uint64_t bits = static_cast<uint64_t>(static_cast<int64_t>(std::llround(v)));
    if (w < 64) bits &= (uint64_t{1} << w) - 1;
    return ir::Value::of_bv(s, bits);
  };
  ir::Evaluator ev(env);
  std::vector<double> out;
  size_t n = locations.shape(0), rank = locations.shape(1);
  for (size_t r = 0; r < n; ++r) {
    std::vector<int64_t> loc(rank);
    for (size_t k = 0; k < rank; ++k) loc[k] = locations(r, k);
    ir::Expr e = aten::element(ctx, call, output_index, loc);
    ir::Value v = ev(e);
    if (v.undef) { out.push_back(std::nan("")); continue; }
    switch (v.sort) {
      case ir::Sort::Real: out.push_back(v.real); break;
      case ir::Sort::Bool: out.push_back(v.bits ? 1 : 0); break;
      default: {
        unsigned w = ir::bv_width(v.sort);
        if (!aten::is_signed_int(call.outputs[output_index].dtype)) {  // uint8: unsigned view
          out.push_back(static_cast<double>(v.bits));
          break;
        }
        int64_t sv = w == 64 ? static_cast<int64_t>(v.bits)
                             : static_cast<int64_t>(v.bits << (64 - w)) >> (64 - w);  // signed view
        out.push_back(static_cast<double>(sv));
      }
    }
  }
  return out;
}

// The expression at one location, printed, and its DAG size (for inspection).
nb::tuple aten_expr(const std::string& name, nb::list args, nb::dict kwargs, nb::list outputs, int output_index,
                    std::vector<int64_t> location) {
  ir::Context ctx;
  TensorIds ids{ctx, {}};
  aten::OpCall call = make_call(name, args, kwargs, outputs, ids);
  ir::Expr e = aten::element(ctx, call, output_index, location);
  return nb::make_tuple(ir::to_string(ctx, e), ir::dag_size(e));
}

}  // namespace

static RegisterBinder reg([](nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const aten::Unsupported& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    }
  });
  m.def("aten_eval", &aten_eval, nb::arg("name"), nb::arg("args"), nb::arg("kwargs"), nb::arg("outputs"),
        nb::arg("storages"), nb::arg("output_index"), nb::arg("locations"),
        "Evaluate the per-element equation of an ATen op at output locations (rows of an int64 array) "
        "with input storages given as float64 arrays keyed by the tensor keys used in args.");
  m.def("aten_expr", &aten_expr, nb::arg("name"), nb::arg("args"), nb::arg("kwargs"), nb::arg("outputs"),
        nb::arg("output_index"), nb::arg("location"), "The per-element expression at one location: (text, dag size).");
  m.def("aten_supported_ops", &aten::supported_ops, "Canonical names of every ATen overload with semantics.");
  m.def("aten_op_parameters", [](const std::string& n) { return aten::op_parameters(n); }, nb::arg("name"));
  m.def("aten_resolved_name", [](const std::string& n) { return aten::resolved_name(n); }, nb::arg("name"),
        "The registered overload a call resolves to (in-place and out= forms map to the functional one); '' if none.");
  m.def("aten_written_arguments", [](const std::string& n) {
          auto w = aten::written_arguments(n);
          return std::make_pair(w.returns, w.names);
        }, nb::arg("name"), "(returns, names): arguments written in place, outputs returns+k of aten_eval.");
  m.def("aten_canonical_name", [](const std::string& n, const std::string& o) { return aten::canonical_name(n, o); },
        nb::arg("name"), nb::arg("overload") = "");
});

}  // namespace dirigo::py
