// `dirigo reproduce BUNDLE`: evaluates dirigo's model of both programs at the inputs recorded in a
// bundle traced with data and compares it with the outputs recorded on the device
// (src/check/reproduce.h). Exit 0 when every compared location agrees, 1 when some differ, 4 when
// nothing could be compared (UNSUPPORTED, or no recorded data), 64 on a usage error.
#include <iostream>

#include "check/reproduce.h"
#include "cli/command.h"

namespace dirigo::cli {

DIRIGO_CLI_MEMBERS(check::ReproduceOptions, max_locations, seed, atol, rtol, budget_s)

namespace {

struct ReproduceCliOptions {
  std::string bundle;
  check::ReproduceOptions opt;
  bool json = false;
};
DIRIGO_CLI_MEMBERS(ReproduceCliOptions, bundle, opt, json)

int run_reproduce(const ReproduceCliOptions& o) {
  check::Reproduction r = check::reproduce(o.bundle, o.opt);
  std::cout << (o.json ? check::to_json(r) + "\n" : check::to_text(r));
  if (r.reproduced()) return 0;
  for (const auto& out : r.outputs)
    if (out.mismatched) return 1;
  return 4;
}

Register register_reproduce(options_command<ReproduceCliOptions>(
    "reproduce", "Compare dirigo's model of a traced program with the outputs recorded on the device", run_reproduce));

}  // namespace
}  // namespace dirigo::cli
