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

namespace dirigo::smt {

struct StageTimeout : std::runtime_error {
  explicit StageTimeout(const std::string& stage) : std::runtime_error("the budget ran out " + stage) {}
};

class Ticker {
 public:
  using Clock = std::chrono::steady_clock;
  Ticker() = default;
  explicit Ticker(Clock::time_point at) : at_(at) {}
  bool set() const { return at_ != Clock::time_point::max(); }
  Clock::time_point at() const { return at_; }
  // Reads the clock now; throws StageTimeout("<stage>") once the deadline passed.
  void check(const char* stage) const {
    if (set() && Clock::now() > at_) throw StageTimeout(stage);
  }
  // For inner loops: reads the clock once every 1024 calls.
  void tick(const char* stage) {
    if (set() && (++ticks_ & 1023) == 0) check(stage);
  }

 private:
  Clock::time_point at_ = Clock::time_point::max();
  uint64_t ticks_ = 0;
};

}  // namespace dirigo::smt
