// The hard stop's scratch directories (cli/hard_stop.h): gone when the command's scope ends, and gone when
// the hard stop ends the process first (each case in a child process: the hard stop _exits).
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/hard_stop.h"

namespace {
// Runs `body` in a child process; returns what it wrote to the pipe and its exit status.
std::pair<std::string, int> in_child(void (*body)(int fd)) {
  int fds[2];
  if (pipe(fds) != 0) return {"", -1};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    body(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

void tell(int fd, const std::string& s) {
  if (write(fd, s.data(), s.size()) != ssize_t(s.size())) _exit(90);
}
}  // namespace

TEST(ScratchDir, IsRemovedWithWhatItHoldsAtTheEndOfItsScope) {
  std::string path;
  {
    dirigo::cli::ScratchDir d;
    path = d.path();
    ASSERT_TRUE(std::filesystem::is_directory(path));
    std::filesystem::create_directories(path + "/bundle/ptx");
    std::ofstream(path + "/bundle/manifest.json") << "{}";
  }
  EXPECT_FALSE(std::filesystem::exists(path)) << path;
}

TEST(HardStop, TakesTheScratchDirectoriesAlongWhenItFires) {
  auto [path, code] = in_child([](int fd) {
    dirigo::cli::arm_hard_stop(0.3, 3, [](const std::string&, double) {
      return dirigo::cli::HardStopText{"TIMEOUT\n", ""};
    });
    dirigo::cli::ScratchDir d;
    std::filesystem::create_directories(d.path() + "/bundle");
    std::ofstream(d.path() + "/bundle/data.bin") << "x";
    tell(fd, d.path());
    close(fd);
    for (;;) pause();  // a stage that never returns: only the hard stop ends this
  });
  EXPECT_EQ(code, 3);
  ASSERT_FALSE(path.empty());
  EXPECT_FALSE(std::filesystem::exists(path)) << path;
}
