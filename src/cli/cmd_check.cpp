// `dirigo check BUNDLE` — the product: is the candidate equivalent to the reference?
// (Tracing REF.py NEW.py first is done by the Python front end: `python -m dirigo check`.)
#include <unistd.h>

#include <iostream>

#include "check/check.h"
#include "cli/command.h"

namespace {

struct CheckArgs {
  std::string bundle;
  double budget = 30;
  uint64_t seed = 0;
  bool full = false, json = false, verbose = false, no_trim = false;
  size_t min_locations = 5, max_locations = 0;
  double atol = -1, rtol = -1;
};

dirigo::cli::Register reg({"check", "check a trace bundle: BUG / SUSPECT / CHECKED / VERIFIED / TIMEOUT / UNSUPPORTED",
                           [](CLI::App& sub) {
  auto a = std::make_shared<CheckArgs>();
  sub.add_option("bundle", a->bundle, "trace bundle directory (or .tar)")->required();
  sub.add_option("--budget", a->budget, "seconds for the location search (default 30)");
  sub.add_option("--seed", a->seed, "seed of the random part of the search order");
  sub.add_option("--min-locations", a->min_locations, "locations needed before anything but BUG is reported");
  sub.add_option("--max-locations", a->max_locations, "stop after this many locations");
  sub.add_option("--atol", a->atol, "absolute tolerance for witnesses (default: the bundle's, else 1e-2)");
  sub.add_option("--rtol", a->rtol, "relative tolerance for witnesses");
  sub.add_flag("--full", a->full, "check every output location (VERIFIED when all are equal)");
  sub.add_flag("--no-prefix-trim", a->no_trim, "do not trim the common prefix of pure operations");
  sub.add_flag("--json", a->json, "machine-readable report");
  sub.add_flag("-v,--verbose", a->verbose, "list every location checked");
  return [a]() {
    dirigo::check::Options opt;
    opt.budget_s = a->budget;
    opt.seed = a->seed;
    opt.full = a->full;
    opt.min_locations = a->min_locations;
    opt.max_locations = a->max_locations;
    opt.trim_prefix = !a->no_trim;
    opt.progress = !a->json && isatty(2);
    if (a->atol >= 0 || a->rtol >= 0)
      opt.tolerance = dirigo::smt::Tolerance{a->atol >= 0 ? a->atol : 1e-2, a->rtol >= 0 ? a->rtol : 1e-2};
    auto report = dirigo::check::check_path(a->bundle, opt);
    std::cout << (a->json ? dirigo::check::to_json(report) + "\n" : dirigo::check::to_text(report, a->verbose));
    return dirigo::check::exit_code(report.outcome);
  };
}});

}  // namespace
