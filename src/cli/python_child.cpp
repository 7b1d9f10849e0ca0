#include "cli/python_child.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace dirigo::cli {

int run_python(const std::string& module, const std::vector<std::string>& args, const std::string& stdout_file) {
  std::string py = std::getenv("DIRIGO_PYTHON") ? std::getenv("DIRIGO_PYTHON") : "python3";
  std::vector<std::string> argv = {py, "-m", module};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid = fork();
  if (pid < 0) return 70;
  if (pid == 0) {
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
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 70;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 70;
}

}  // namespace dirigo::cli
