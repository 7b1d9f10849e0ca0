// The `dirigo` command line: dispatches to the registered subcommands.
// Exit status: 0 = no problem found, 1 = BUG, 2 = SUSPECT, 3 = TIMEOUT/unknown,
// 4 = UNSUPPORTED, 64 = usage error, 70 = internal error (see docs/cli.md).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/command.h"
#include "cli/python_child.h"
#include "smt/decide.h"

namespace dirigo::cli {
std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}
}  // namespace dirigo::cli

int main(int argc, char** argv) {
  using namespace dirigo::cli;
  CLI::App app{"dirigo: equivalence checking of PyTorch+CUDA programs, one output location at a time"};
  // The second line says where the Python children (tracer, replay, state stage) come from.
  std::string root = python_package_root();
  app.set_version_flag("--version", std::string("dirigo " DIRIGO_VERSION "\npython package: ") +
                                        (root.empty() ? "the interpreter's installed dirigo" : root + "/dirigo") +
                                        " (interpreter: " + python_interpreter() + ")");
  app.require_subcommand(1);
  auto& cmds = commands();
  std::sort(cmds.begin(), cmds.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  std::function<int()> chosen;
  try {
    for (auto& c : cmds) {
      CLI::App* sub = app.add_subcommand(c.name, c.help);
      auto run = c.setup(*sub);
      sub->callback([&chosen, run] { chosen = run; });
    }
  } catch (const std::exception& e) {  // an option spec (options/*.json) that cannot be declared
    std::cerr << "dirigo: internal error: " << e.what() << "\n";
    return 70;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 64;
  }
  int rc;
  try {
    rc = chosen ? chosen() : 64;
  } catch (const std::exception& e) {
    std::cerr << "dirigo: internal error: " << e.what() << "\n";
    rc = 70;
  }
  // A Z3 check left running (smt::abandoned_checks) would meet exit's static destructors.
  if (dirigo::smt::abandoned_checks() > 0) {
    std::cout.flush(), std::cerr.flush(), std::fflush(nullptr);
    _exit(rc);
  }
  return rc;
}
