// The device-only translation unit that NVRTC compiles: host function definitions (torch
// wrappers, PYBIND11_MODULE) and host-only declarations are blanked out (newlines kept, so
// compiler messages keep their line numbers), includes NVRTC cannot resolve are dropped, a
// small prelude supplies FLT_MAX / INFINITY & co., and templated kernels get name expressions
// taken from their host launches (`k<scalar_t><<<...>>>` instantiates `k<float>`).
#pragma once

#include <string>
#include <vector>

#include "mutate/source_model.h"

namespace dirigo::mutate {

struct DeviceSource {
  std::string text;                           // what the compiler sees
  std::vector<std::string> name_expressions;  // e.g. "&kernel<float>", to force instantiation
  std::string host_text;                      // host-side tokens, space-joined (launch configuration)
};

DeviceSource device_source(const SourceModel& m);

}  // namespace dirigo::mutate
