#include "cli/python_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace dirigo::cli {

int run_python(const std::string& module, const std::vector<std::string>& args, const std::string& stdout_file,
               double timeout_s) {
  std::string py = std::getenv("DIRIGO_PYTHON") ? std::getenv("DIRIGO_PYTHON") : "python3";
  std::vector<std::string> argv = {py, "-m", module};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid = fork();
  if (pid < 0) return 70;
  if (pid == 0) {
    setpgid(0, 0);  // its own process group: a timeout kills what it started too (extension builds)
    std::string path = DIRIGO_PYTHON_DIR;
    if (const char* old = std::getenv("PYTHONPATH")) path += std::string(":") + old;
    setenv("PYTHONPATH", path.c_str(), 1);
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
  int status = 0;
  if (timeout_s <= 0) {
    if (waitpid(pid, &status, 0) < 0) return 70;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 70;
  }
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 70;
    if (r < 0) return 70;
    if (std::chrono::steady_clock::now() >= end) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace dirigo::cli
