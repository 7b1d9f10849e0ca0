// Running dirigo's Python package from a subcommand (the tracer, replay, kill-matrix inputs).
#pragma once
#include <string>
#include <vector>

namespace dirigo::cli {

// Where this binary's Python package lives, found from the binary's own location (`exe`, default
// /proc/self/exe): the directory holding `dirigo/` when installed from a wheel
// (<site-packages>/dirigo/bin/dirigo), <tree>/python for a build directory inside a source tree; empty
// when neither: then the interpreter must find an installed `dirigo` itself.
std::string python_package_root(const std::string& exe = "");

// The interpreter children run under: $DIRIGO_PYTHON (the console entry point sets it to the Python that
// launched it), else python3 from PATH.
std::string python_interpreter();

// Runs `<interpreter> -m <module> ARGS...` with python_package_root() first on PYTHONPATH; its stdout
// goes to `stdout_file`, or to our stderr (our stdout carries only reports). Returns the child's exit status (70 when it could not run). With
// `timeout_s` > 0 the child (it runs user code, which may hang) and everything it started are
// killed after that many seconds, and the answer is 124, as timeout(1) says.
int run_python(const std::string& module, const std::vector<std::string>& args, const std::string& stdout_file = "",
               double timeout_s = 0);

// Kills this process's children with their process groups and waits (about 2 s at most) until none is
// left running: with `running_too`, also run_python's children in progress; without, only what was
// reparented here (arm_hard_stop makes this process a subreaper: the descendants of a killed child
// that run in sessions of their own, such as the tracer's workers, land here).
void kill_child_processes(bool running_too);

// Replaces this process with `<interpreter> -m <module> ARGS...` (python_package_root() first on
// PYTHONPATH): for a subcommand that is all Python, so that signals (Ctrl-C), stdout and the exit status
// are the module's own. Returns only when the interpreter cannot be started (then 70).
int exec_python(const std::string& module, const std::vector<std::string>& args);

}  // namespace dirigo::cli
