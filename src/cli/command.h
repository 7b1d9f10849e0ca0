// Subcommand registry: each cmd_<name>.cpp registers itself, so adding a
// subcommand never edits a shared file. A command's run() returns the exit status.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dirigo::cli {

struct Command {
  std::string name;
  std::string help;
  // Adds options to `sub` and returns the function to run when it is chosen.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& commands();

struct Register {
  explicit Register(Command c) { commands().push_back(std::move(c)); }
};

}  // namespace dirigo::cli
