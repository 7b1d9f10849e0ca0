// dirigo._core.validate_bundle(path): reads and validates a bundle with the C++
// reader; raises ValueError whose message names the file and JSON path.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "bundle/io.h"
#include "bundle/print.h"
#include "registry.h"

namespace nb = nanobind;

static dirigo::py::RegisterBinder reg([](nb::module_& m) {
  m.def(
      "validate_bundle",
      [](const std::string& path) -> std::string {
        try {
          auto b = dirigo::bundle::read_bundle(path);
          return dirigo::bundle::describe_summary(dirigo::bundle::summarize(b));
        } catch (const dirigo::bundle::BundleError& e) {
          throw nb::value_error(e.what());
        }
      },
      nb::arg("path"),
      "Validate a trace bundle (directory or .tar) with the C++ reader. Returns a one-line summary; "
      "raises ValueError naming the file and JSON path of the first problems.");
});
