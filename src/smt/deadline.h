// The decision's wall-clock deadline, seen by every stage of smt::decide (paper §4.4: the budget
// is a hard bound). Each stage whose work grows with the expressions (normalization, the
// tolerance bound, random points, cut points, translation) ticks it in its inner loop; past the
// deadline the stage throws StageTimeout naming itself, and decide() answers Verdict::Timeout
// with that stage in the reason, instead of finishing minutes of work nobody waits for.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ir/deadline.h"

namespace dirigo::smt {

struct StageTimeout : std::runtime_error {
  explicit StageTimeout(const std::string& stage) : std::runtime_error("the budget ran out " + stage) {}
};

using Ticker = ir::BasicDeadline<StageTimeout, 1024>;

}  // namespace dirigo::smt
