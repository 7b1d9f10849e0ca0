#include "registry.h"

namespace dirigo::py {
std::vector<Binder>& binders() {
  static std::vector<Binder> all;
  return all;
}
}  // namespace dirigo::py

NB_MODULE(_core, m) {
  m.doc() = "dirigo core (C++), bound with nanobind";
  m.attr("__version__") = "0.1.0";
  for (auto& b : dirigo::py::binders()) b(m);
}
