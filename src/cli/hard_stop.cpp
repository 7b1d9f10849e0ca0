#include "cli/hard_stop.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "cli/python_child.h"

namespace dirigo::cli {

namespace {

using WatchClock = std::chrono::steady_clock;

// One moment's prepared answer: immutable once published, kept until exit (the watchdog may hold it).
struct Prepared {
  WatchClock::time_point end;
  std::string stage;
  HardStopText text;
};

enum class Writer { None, Command, HardStop };

// Never destroyed: the watchdog thread is detached and may run while static destructors do.
struct Watch {
  std::mutex mu;  // held only to swap `current` or claim `writer`: no allocation, no I/O under it
  const Prepared* current = nullptr;
  std::deque<Prepared> kept;
  Writer writer = Writer::None;
  bool written = false;  // the command's verdict is flushed
  int command_exit = 0, hard_exit = 3;
  WatchClock::time_point start;
  // The child stage running now (own limit > 0): what it did not use of its limit comes off the end
  // when the next stage starts, so that only the time a child stage took moves the hard stop later.
  WatchClock::time_point child_start;
  double child_limit_s = 0;
  WatchClock::duration child_reap{0};  // what the reap margin added to the end for the running child
  HardStopRender render;
  // The scratch directories alive now, as `rm -rf -- DIR...` ready to exec: the firing path may not
  // allocate (another thread can hold the allocator's lock when it fires).
  static constexpr size_t kMaxDirs = 8;
  std::array<std::array<char, 256>, kMaxDirs> dirs{};
  std::array<bool, kMaxDirs> used{};
};
Watch& watch() {
  static Watch* w = new Watch;
  return *w;
}

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= size_t(n);
  }
}

// The scratch directories go with the command: `rm -rf` in a child of ours (fork and exec only, no
// allocation), waited for at most a few seconds.
void remove_scratch_dirs(Watch& w) {
  std::array<std::array<char, 256>, Watch::kMaxDirs> dirs;
  const char* argv[Watch::kMaxDirs + 4] = {"rm", "-rf", "--"};
  size_t n = 3;
  {
    std::lock_guard lock(w.mu);
    for (size_t i = 0; i < Watch::kMaxDirs; ++i)
      if (w.used[i]) {
        dirs[n - 3] = w.dirs[i];
        argv[n] = dirs[n - 3].data();
        ++n;
      }
  }
  if (n == 3) return;
  argv[n] = nullptr;
  pid_t pid = fork();
  if (pid == 0) {
    execv("/bin/rm", const_cast<char* const*>(argv));
    _exit(127);
  }
  for (int i = 0; pid > 0 && i < 250; ++i) {  // 5 s
    if (waitpid(pid, nullptr, WNOHANG) == pid) return;
    usleep(20000);
  }
}

// Children first: once the verdict is out, nothing the command started is left running.
[[noreturn]] void fire(const Prepared& p, int code) {
  kill_child_processes(true);
  write_all(2, p.text.err);
  write_all(1, p.text.out);
  remove_scratch_dirs(watch());
  _exit(code);
}

void run_watchdog() {
  Watch& w = watch();
  for (;;) {
    const Prepared* p = nullptr;
    int exit_now = -1;
    {
      std::lock_guard lock(w.mu);
      auto now = WatchClock::now();
      if (now >= w.current->end) {
        if (w.writer == Writer::None) {
          w.writer = Writer::HardStop;
          p = w.current;
        } else if (w.written) {
          exit_now = w.command_exit;  // the verdict is out; what is left (freeing, exit handlers) is cut
        }
      }
    }
    if (p) fire(*p, w.hard_exit);
    if (exit_now >= 0) {
      kill_child_processes(true);
      remove_scratch_dirs(w);
      _exit(exit_now);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Prepares the answer for `stage` ending at `end` (outside the lock), then publishes it.
void publish(Watch& w, const std::string& stage, WatchClock::time_point end) {
  Prepared next{end, stage, w.render(stage, std::chrono::duration<double>(end - w.start).count())};
  std::lock_guard lock(w.mu);
  w.kept.push_back(std::move(next));
  w.current = &w.kept.back();
}

}  // namespace

void arm_hard_stop(double limit_s, int exit_code, HardStopRender render) {
  Watch& w = watch();
  if (w.render) return;  // armed once per process
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  w.start = WatchClock::now();
  w.hard_exit = exit_code;
  w.render = std::move(render);
  publish(w, "start", w.start + std::chrono::duration_cast<WatchClock::duration>(std::chrono::duration<double>(limit_s)));
  std::thread(run_watchdog).detach();
}

void enter_stage(const std::string& stage, double own_limit_s) {
  Watch& w = watch();
  if (!w.render) return;
  WatchClock::time_point end;
  {
    std::lock_guard lock(w.mu);
    end = w.current->end;
    auto now = WatchClock::now();
    if (w.child_limit_s > 0) {  // the child ended: neither what it left of its limit nor its reap margin stays
      auto unused = std::chrono::duration<double>(w.child_limit_s) - (now - w.child_start);
      if (unused.count() > 0) end -= std::chrono::duration_cast<WatchClock::duration>(unused) + w.child_reap;
    }
    w.child_limit_s = own_limit_s > 0 ? own_limit_s : 0;
    w.child_start = now;
    w.child_reap = WatchClock::duration{0};
    if (own_limit_s > 0) {
      auto own = std::chrono::duration_cast<WatchClock::duration>(std::chrono::duration<double>(own_limit_s));
      // the child is killed at its own limit from now; killing a process of many GB and reaping it can
      // take seconds, and stages before it that ended inside their grace must not shorten its window
      auto reap = std::chrono::duration_cast<WatchClock::duration>(std::chrono::duration<double>(kChildReapS));
      auto latest = std::max(end + own, now + own + reap);
      w.child_reap = latest - (end + own);
      end = latest;
    }
  }
  publish(w, stage, end);
}

std::string current_stage() {
  Watch& w = watch();
  std::lock_guard lock(w.mu);
  return w.current ? w.current->stage : "";
}

bool claim_verdict() {
  Watch& w = watch();
  std::lock_guard lock(w.mu);
  if (w.writer == Writer::HardStop) return false;
  w.writer = Writer::Command;
  return true;
}

void verdict_written(int exit_code) {
  Watch& w = watch();
  std::lock_guard lock(w.mu);
  w.command_exit = exit_code;
  w.written = true;
}

void wait_for_hard_stop() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

ScratchDir::ScratchDir() {
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);  // $TMPDIR, else /tmp
  if (ec) base = "/tmp";
  std::string templ = (base / "dirigo-XXXXXX").string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("cannot create a temporary directory in " + base.string());
  path_ = templ;
  Watch& w = watch();
  std::lock_guard lock(w.mu);
  if (path_.size() >= w.dirs[0].size()) return;  // too long to register: the destructor's alone
  for (size_t i = 0; i < Watch::kMaxDirs; ++i)
    if (!w.used[i]) {
      std::memcpy(w.dirs[i].data(), path_.c_str(), path_.size() + 1);
      w.used[i] = true;
      break;
    }
}

ScratchDir::~ScratchDir() {
  {
    Watch& w = watch();
    std::lock_guard lock(w.mu);
    for (size_t i = 0; i < Watch::kMaxDirs; ++i)
      if (w.used[i] && path_ == w.dirs[i].data()) w.used[i] = false;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace dirigo::cli
