// Execute's wall-clock limit (internal to exec). Not only the instruction loop watches it: every
// loop whose length grows with the launch (thread enumerations in range proofs, satisfiability,
// epoch checks, global read-after-write checks) ticks it, so execute() stops within milliseconds
// of ExecOptions::max_ms / ExecOptions::deadline instead of finishing a multi-second enumeration.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>

namespace dirigo::exec {

// Thrown when the deadline passes; execute() turns it into ExecResult::unsupported with
// ExecResult::out_of_time set. Deliberately not an Unsupported, so that code which catches
// Unsupported to try an alternative never swallows it.
struct TimeLimit : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  Deadline() = default;
  explicit Deadline(Clock::time_point at) : at_(at), set_(true) {}
  bool set() const { return set_; }
  Clock::time_point at() const { return at_; }
  bool passed() const { return set_ && Clock::now() > at_; }
  // Throws TimeLimit naming `phase` once the deadline passed.
  void check(const char* phase) const {
    if (passed()) throw TimeLimit(phase);
  }
  // For inner loops: reads the clock once every 4096 calls.
  void tick(const char* phase) {
    if (set_ && (++ticks_ & 4095) == 0) check(phase);
  }

 private:
  Clock::time_point at_{};
  bool set_ = false;
  uint64_t ticks_ = 0;
};

}  // namespace dirigo::exec
