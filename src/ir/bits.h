// Bit patterns of bit-vector values, shared by every module that computes on them.
#pragma once

#include <cstdint>

namespace dirigo::ir {

// The mask of a w-bit bit-vector's values: the w low bits set (all 64 for w >= 64, none for 0).
constexpr uint64_t width_mask(unsigned w) { return w >= 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1; }

}  // namespace dirigo::ir
