// dirigo._core.blas_*: the cuBLAS equations of src/blas evaluated concretely (fp64) over named flat
// float32 buffers, for the tests that compare them with a numpy implementation of the cuBLAS conventions
// and with real-cuBLAS fixtures (tests/python/test_cublas*.py).
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "blas/blas.h"
#include "registry.h"

namespace nb = nanobind;

namespace dirigo::py {
namespace {

blas::Buffers evaluate(const std::string& op_json, const blas::Buffers& before) {
  try {
    return blas::evaluate(blas::library_op_from_json(op_json), before);
  } catch (const blas::Unsupported& u) {
    throw nb::value_error(u.what());
  } catch (const std::out_of_range& e) {
    throw nb::index_error(e.what());
  } catch (const std::exception& e) {  // malformed JSON
    throw nb::value_error(e.what());
  }
}

std::vector<std::tuple<std::string, int64_t, int64_t, bool>> extents(const std::string& op_json) {
  try {
    std::vector<std::tuple<std::string, int64_t, int64_t, bool>> r;
    for (const auto& e : blas::extents(blas::parse(blas::library_op_from_json(op_json)))) r.emplace_back(e.key, e.lo, e.hi, e.write);
    return r;
  } catch (const std::exception& e) {
    throw nb::value_error(e.what());
  }
}

RegisterBinder reg([](nb::module_& m) {
  m.def("blas_evaluate", &evaluate, nb::arg("op_json"), nb::arg("buffers"),
        "The buffers a cuBLAS library op writes, after the call, from dirigo's equations (fp64). Raises "
        "ValueError with the UNSUPPORTED reason for a call dirigo does not model, IndexError for an access "
        "outside a buffer.");
  m.def("blas_extents", &extents, nb::arg("op_json"),
        "[(argument, lo, hi, write)]: element ranges the call touches, relative to each argument's pointer.");
});

}  // namespace
}  // namespace dirigo::py
