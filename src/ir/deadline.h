// A wall-clock deadline for loops whose length grows with the input (thread enumerations, sums of
// millions of terms, normalization passes): one class for every module that must stop on time, each
// with its own exception, so that code catching one module's refusal never swallows a timeout.
#pragma once
#include <chrono>
#include <cstdint>

namespace dirigo::ir {

// Timeout is constructed from the name of what ran out of time; tick() reads the clock once every
// Every calls (a clock read costs ~20 ns, a loop step can cost less).
template <class Timeout, unsigned Every>
class BasicDeadline {
 public:
  using Clock = std::chrono::steady_clock;
  BasicDeadline() = default;
  explicit BasicDeadline(Clock::time_point at) : at_(at) {}
  bool set() const { return at_ != Clock::time_point::max(); }
  Clock::time_point at() const { return at_; }
  bool passed() const { return set() && Clock::now() > at_; }
  // Throws Timeout(what) once the deadline passed.
  void check(const char* what) const {
    if (passed()) throw Timeout(what);
  }
  // For inner loops.
  void tick(const char* what) {
    if (set() && ++ticks_ % Every == 0) check(what);
  }

 private:
  Clock::time_point at_ = Clock::time_point::max();
  uint64_t ticks_ = 0;
};

}  // namespace dirigo::ir
