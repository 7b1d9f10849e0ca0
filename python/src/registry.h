// Each bind_<module>.cpp registers a function that adds its bindings to the
// `dirigo._core` module, so modules never edit a shared binding file.
#pragma once

#include <functional>
#include <vector>

#include <nanobind/nanobind.h>

namespace dirigo::py {
using Binder = std::function<void(nanobind::module_&)>;
std::vector<Binder>& binders();
struct RegisterBinder {
  explicit RegisterBinder(Binder b) { binders().push_back(std::move(b)); }
};
}  // namespace dirigo::py
