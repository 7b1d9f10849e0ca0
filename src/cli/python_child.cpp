#include "cli/python_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

namespace dirigo::cli {

namespace fs = std::filesystem;

namespace {

// run_python's children in progress, each the leader of its process group (0: a free slot).
std::atomic<pid_t> running_children[8];

void note_running(pid_t pid) {
  for (auto& slot : running_children) {
    pid_t free = 0;
    if (slot.compare_exchange_strong(free, pid)) return;
  }
}

void note_gone(pid_t pid) {
  for (auto& slot : running_children) {
    pid_t mine = pid;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

bool is_running_child(pid_t pid) {
  for (auto& slot : running_children)
    if (slot.load() == pid) return true;
  return false;
}

// The children of this process that are alive (not zombies), from /proc/PID/stat: "pid (comm) S ppid ...".
std::vector<pid_t> live_children() {
  std::vector<pid_t> out;
  pid_t self = getpid();
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    int fd = open(("/proc/" + name + "/stat").c_str(), O_RDONLY);
    if (fd < 0) continue;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    const char* close_paren = strrchr(buf, ')');  // the command name may hold spaces and parentheses
    if (!close_paren) continue;
    char state = 0;
    int ppid = 0;
    if (sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2 || ppid != self || state == 'Z' || state == 'X') continue;
    out.push_back(pid_t(std::stol(name)));
  }
  return out;
}

}  // namespace

void kill_child_processes(bool running_too) {
  int subreaper = 0;  // else nothing is reparented here, and other children are someone else's to end
  if (!running_too && (prctl(PR_GET_CHILD_SUBREAPER, &subreaper) != 0 || !subreaper)) return;
  if (running_too)
    for (auto& slot : running_children)
      if (pid_t p = slot.load(); p > 0) kill(-p, SIGKILL);
  // A killed child's descendants are reparented here one generation at a time: look again until none is left.
  for (int round = 0; round < 40; ++round) {
    bool any = false;
    for (pid_t p : live_children()) {
      if (!running_too && is_running_child(p)) continue;
      kill(-p, SIGKILL);  // its group, when it leads one (a worker in its own session)
      kill(p, SIGKILL);
      any = true;
    }
    if (!any) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string python_package_root(const std::string& exe) {
  std::error_code ec;
  fs::path self = fs::weakly_canonical(exe.empty() ? fs::read_symlink("/proc/self/exe", ec) : fs::path(exe), ec);
  if (ec || self.empty()) return "";
  fs::path dir = self.parent_path();
  // Installed from a wheel: <site-packages>/dirigo/bin/dirigo.
  if (fs::exists(dir.parent_path() / "__init__.py", ec) && dir.filename() == "bin" &&
      dir.parent_path().filename() == "dirigo")
    return dir.parent_path().parent_path().string();
  // A build directory of a source tree: <tree>/build[/sub]/dirigo next to <tree>/python/dirigo.
  fs::path up = dir;
  for (int i = 0; i < 4 && !up.empty(); ++i, up = up.parent_path()) {
    if (fs::exists(up / "python" / "dirigo" / "__init__.py", ec)) return (up / "python").string();
    if (up == up.parent_path()) break;
  }
  return "";  // the interpreter's own sys.path must hold an installed `dirigo`
}

std::string python_interpreter() {
  if (const char* p = std::getenv("DIRIGO_PYTHON"); p && *p) return p;
  return "python3";
}

int run_python(const std::string& module, const std::vector<std::string>& args, const std::string& stdout_file,
               double timeout_s) {
  std::string py = python_interpreter();
  std::vector<std::string> argv = {py, "-m", module};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string root = python_package_root();  // before fork: nothing but async-signal-safe calls after it
  std::string path = root;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) path += (path.empty() ? "" : ":") + std::string(old);
  pid_t pid = fork();
  if (pid < 0) return 70;
  if (pid == 0) {
    setpgid(0, 0);  // its own process group: a timeout kills what it started too (extension builds)
    if (!path.empty()) setenv("PYTHONPATH", path.c_str(), 1);
    int fd = stdout_file.empty() ? 2 : open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) _exit(127);
    dup2(fd, 1);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execvp(py.c_str(), cargv.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here: whichever of the two runs first
  note_running(pid);  // a hard stop kills it (cli/hard_stop.h)
  int status = 0;
  auto exit_status = [&](int rc) {
    note_gone(pid);
    return rc;
  };
  if (timeout_s <= 0) {
    if (waitpid(pid, &status, 0) < 0) return exit_status(70);
    return exit_status(WIFEXITED(status) ? WEXITSTATUS(status) : 70);
  }
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return exit_status(WIFEXITED(status) ? WEXITSTATUS(status) : 70);
    if (r < 0) return exit_status(70);
    if (std::chrono::steady_clock::now() >= end) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      note_gone(pid);
      kill_child_processes(false);  // what it started in sessions of its own, reparented here
      return 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int exec_python(const std::string& module, const std::vector<std::string>& args) {
  std::string py = python_interpreter();
  std::vector<std::string> argv = {py, "-m", module};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string path = python_package_root();
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) path += (path.empty() ? "" : ":") + std::string(old);
  if (!path.empty()) setenv("PYTHONPATH", path.c_str(), 1);
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  execvp(py.c_str(), cargv.data());
  return 70;
}

}  // namespace dirigo::cli
