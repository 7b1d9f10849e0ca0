// Running this source tree's Python package from a subcommand (the tracer, replay, kill-matrix inputs).
#pragma once
#include <string>
#include <vector>

namespace dirigo::cli {

// Runs `python3 -m <module> ARGS...` (DIRIGO_PYTHON overrides the interpreter) with the package of
// this source tree first on PYTHONPATH; its stdout goes to `stdout_file`, or to our stderr (our
// stdout carries only reports). Returns the child's exit status (70 when it could not run). With
// `timeout_s` > 0 the child (it runs user code, which may hang) and everything it started are
// killed after that many seconds, and the answer is 124, as timeout(1) says.
int run_python(const std::string& module, const std::vector<std::string>& args, const std::string& stdout_file = "",
               double timeout_s = 0);

}  // namespace dirigo::cli
