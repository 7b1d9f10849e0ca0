// `dirigo sweep PAIRS --out RESULTS [...]`: a dataset of (reference, candidate) pairs checked as Ray
// tasks, results appended so that an interrupted sweep resumes (python/dirigo/sweep.py; every
// argument, --help included, goes to `python -m dirigo.sweep`).
#include "cli/command.h"
#include "cli/python_child.h"

namespace dirigo::cli {
namespace {

Register register_sweep({"sweep", "check every pair of a dataset as Ray tasks; results resumable (python -m dirigo.sweep --help)",
              [](CLI::App& sub) -> std::function<int()> {
                sub.set_help_flag();  // the sweep's own --help
                sub.allow_extras();
                sub.prefix_command();
                return [&sub] { return exec_python("dirigo.sweep", sub.remaining()); };
              }});

}  // namespace
}  // namespace dirigo::cli
