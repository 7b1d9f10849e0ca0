// Subcommand registry: each cmd_<name>.cpp registers itself, so adding a
// subcommand never edits a shared file. A command's run() returns the exit status.
#pragma once

#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/option_spec.h"

namespace dirigo::cli {

struct Command {
  std::string name;
  std::string help;
  // Adds options to `sub` and returns the function to run when it is chosen.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& commands();

// A command whose options are one struct: its spec (options/<name>.json) declares them on `sub`, and
// the command runs `run(options)` with what was parsed into them.
template <class Options, class Run>
Command options_command(std::string name, std::string help, Run run) {
  return {name, std::move(help), [name, run](CLI::App& sub) -> std::function<int()> {
            auto o = std::make_shared<Options>();
            add_spec_options(sub, option_spec(name), *o);
            return [o, run] { return run(*o); };
          }};
}

// Runs `body` (which returns the exit status); an exception from it is reported on stderr as
// "dirigo <command>: <what>", and the status is then `status`.
template <class Body>
int reporting_errors(const char* command, int status, Body body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::cerr << "dirigo " << command << ": " << e.what() << "\n";
    return status;
  }
}

struct Register {
  explicit Register(Command c) { commands().push_back(std::move(c)); }
};

}  // namespace dirigo::cli
