// Subcommand registry: each cmd_<name>.cpp registers itself, so adding a
// subcommand never edits a shared file. A command's run() returns the exit status.
#pragma once

#include <functional>
#include <memory>
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

// A command whose options are one struct: `add(sub, options)` declares them on `sub`, and the
// command runs `run(options)` with what was parsed into them.
template <class Options, class Add, class Run>
Command options_command(std::string name, std::string help, Add add, Run run) {
  return {std::move(name), std::move(help), [add, run](CLI::App& sub) -> std::function<int()> {
            auto o = std::make_shared<Options>();
            add(sub, *o);
            return [o, run] { return run(*o); };
          }};
}

struct Register {
  explicit Register(Command c) { commands().push_back(std::move(c)); }
};

}  // namespace dirigo::cli
