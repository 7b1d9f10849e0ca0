// The process-level hard stop of a command with a time budget (`dirigo check --budget`): a watchdog
// thread that ends the process at a stated time even when a stage ignores its own deadline (a solver
// call that does not return, a child that outlives its limit). When it fires, it writes the verdict the
// command prepared for that moment, kills every child process with what they started, and _exits with
// the verdict's exit status. The command's own verdict and the hard stop's cannot both be written: the
// first to claim stdout writes (claim_verdict).
#pragma once

#include <functional>
#include <string>

namespace dirigo::cli {

// What the hard stop writes when it ends the command in `stage`, `at_s` seconds after arm(): the
// verdict for stdout and one line for stderr. Called whenever the stage or the end changes, on the
// thread that changed it, never on the firing path (which only writes prepared bytes).
struct HardStopText {
  std::string out, err;
};
using HardStopRender = std::function<HardStopText(const std::string& stage, double at_s)>;

// Arms the watchdog: the command ends `limit_s` seconds from now, with `exit_code`, unless a stage with
// its own limit moves the end later (enter_stage). Makes this process the subreaper of its descendants,
// so that what a killed child started in a session of its own (the tracer's workers) can still be killed.
void arm_hard_stop(double limit_s, int exit_code, HardStopRender render);

// The command is now in `stage`; `own_limit_s` > 0: the stage has its own limit (a child process that
// runs the programs' code, killed at that limit), by which the end moves later — to at least
// kChildReapS past that kill; what the previous child stage left of its own limit comes off again as
// this one starts. No-op when not armed.
constexpr double kChildReapS = 5;
void enter_stage(const std::string& stage, double own_limit_s = 0);

// The stage enter_stage last named ("" when not armed).
std::string current_stage();

// The command's own verdict: true when it may write it (then call verdict_written after flushing);
// false when the hard stop has fired: the caller must then write nothing and wait_for_hard_stop().
bool claim_verdict();
// The verdict is written and flushed: past the end the watchdog now only _exits with `exit_code`.
void verdict_written(int exit_code);
[[noreturn]] void wait_for_hard_stop();

// A fresh $TMPDIR/dirigo-XXXXXX (/tmp without TMPDIR) for one command: removed with what it holds when this goes out of scope,
// and by the hard stop when it fires first (after the children that write into it are killed).
class ScratchDir {
 public:
  ScratchDir();  // throws std::runtime_error when /tmp has no room for it
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace dirigo::cli
