// Launches no GPU runs: more than 1024 threads per block, more dynamic shared memory than any block can
// have, a zero-sized grid or block while the program has a non-empty output. CUDA refuses such a launch
// (cudaErrorInvalidConfiguration, reported only to a caller that asks), the kernel never executes and the
// output is whatever the memory held: a BUG of the candidate, an unusable reference.
#pragma once

#include <optional>
#include <string>

#include "bundle/bundle.h"

namespace dirigo::check {

// The most dynamic shared memory one block may have on any GPU dirigo models (sm_90's opt-in limit,
// 227 KiB); a launch asking more fails on every device.
inline constexpr int64_t kMaxDynamicSharedBytes = 232448;
inline constexpr int64_t kMaxThreadsPerBlock = 1024;

// The program's first launch that cannot run, described ("kernel K (op 3): 2048 threads per block, at
// most 1024"), or nothing.
std::optional<std::string> impossible_launch(const bundle::Program& p);

}  // namespace dirigo::check
