// `dirigo reproduce BUNDLE`: evaluates dirigo's model of both programs at the inputs recorded in a
// bundle traced with data and compares it with the outputs recorded on the device
// (src/check/reproduce.h). Exit 0 when every compared location agrees, 1 when some differ, 4 when
// nothing could be compared (UNSUPPORTED, or no recorded data), 64 on a usage error.
#include <iostream>

#include "check/reproduce.h"
#include "cli/command.h"

namespace dirigo::cli {
namespace {

struct ReproduceCliOptions {
  std::string bundle;
  check::ReproduceOptions opt;
  bool json = false;
};

int run_reproduce(const ReproduceCliOptions& o) {
  check::Reproduction r = check::reproduce(o.bundle, o.opt);
  std::cout << (o.json ? check::to_json(r) + "\n" : check::to_text(r));
  if (r.reproduced()) return 0;
  for (const auto& out : r.outputs)
    if (out.mismatched) return 1;
  return 4;
}

Register register_reproduce(options_command<ReproduceCliOptions>(
    "reproduce", "Compare dirigo's model of a traced program with the outputs recorded on the device", run_reproduce,
    [](CLI::App& sub, ReproduceCliOptions& o) {
      sub.add_option("bundle", o.bundle, "bundle directory (or .tar) traced with data")->required();
      sub.add_option("--locations", o.opt.max_locations, "locations per output (default 256; all when fewer)");
      sub.add_option("--seed", o.opt.seed, "seed of the location sample");
      sub.add_option("--atol", o.opt.atol, "absolute tolerance (default 1e-3)");
      sub.add_option("--rtol", o.opt.rtol, "relative tolerance (default 1e-3)");
      sub.add_option("--budget", o.opt.budget_s, "seconds (default 60)");
      sub.add_flag("--json", o.json, "print JSON");
    }));

}  // namespace
}  // namespace dirigo::cli
