// Execute's wall-clock limit (internal to exec). Not only the instruction loop watches it: every
// loop whose length grows with the launch (thread enumerations in range proofs, satisfiability,
// epoch checks, global read-after-write checks) ticks it, so execute() stops within milliseconds
// of ExecOptions::max_ms / ExecOptions::deadline instead of finishing a multi-second enumeration.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>

#include "ir/deadline.h"

namespace dirigo::exec {

// Thrown when the deadline passes; execute() turns it into ExecResult::unsupported with
// ExecResult::out_of_time set. Deliberately not an Unsupported, so that code which catches
// Unsupported to try an alternative never swallows it.
struct TimeLimit : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Deadline = ir::BasicDeadline<TimeLimit, 4096>;

}  // namespace dirigo::exec
