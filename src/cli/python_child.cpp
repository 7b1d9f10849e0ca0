#include "cli/python_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace dirigo::cli {

namespace fs = std::filesystem;

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
