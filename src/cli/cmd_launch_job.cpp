// `dirigo launch-job [JOB.json] [--serve]`: one kernel launch of a replayed bundle through the
// concrete interpreter (python/dirigo/bundle_run.py's CPU backend; job format in
// mutate/killmatrix.h). --serve: one job per stdin line, one result line each on stdout (parsed
// PTX modules are kept between jobs). Exit: 0 (the job's own status is in its result line), 64 usage.
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "mutate/killmatrix.h"

namespace dirigo::cli {
namespace {

struct LaunchJobOptions {
  std::string file;
  bool serve = false;
};
DIRIGO_CLI_MEMBERS(LaunchJobOptions, file, serve)

int run_launch_job_cmd(const LaunchJobOptions& o) {
  if (o.serve) {
    auto* cache = mutate::new_launch_job_cache();
    for (std::string line; std::getline(std::cin, line);) {
      if (line.empty()) continue;
      std::cout << mutate::run_launch_job(line, cache) << std::endl;
    }
    mutate::free_launch_job_cache(cache);
    return 0;
  }
  if (o.file.empty()) {
    std::cerr << "dirigo launch-job: give JOB.json or --serve\n";
    return 64;
  }
  std::ifstream in(o.file);
  if (!in) {
    std::cerr << "dirigo launch-job: cannot read " << o.file << "\n";
    return 64;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::cout << mutate::run_launch_job(ss.str()) << "\n";
  return 0;
}

Register register_launch_job(options_command<LaunchJobOptions>(
    "launch-job", "Run one kernel launch of a replayed bundle on the concrete interpreter (docs/mutation.md)", run_launch_job_cmd));

}  // namespace
}  // namespace dirigo::cli
