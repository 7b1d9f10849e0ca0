// dirigo._core: the check stage on a bundle directory (check_bundle), and the verdict rules the CLI applies
// after it (fold_answers, candidate_crash), all returning the JSON report; the CLI's exit codes (EXIT_CODES).
#include <nanobind/stl/string.h>

#include "check/check.h"
#include "registry.h"

namespace nb = nanobind;

static dirigo::py::RegisterBinder reg([](nb::module_& m) {
  m.def(
      "check_bundle",
      [](const std::string& path, double budget_s, uint64_t seed, bool full, size_t min_locations,
         size_t max_locations, double atol, double rtol, bool trim_prefix, size_t jobs) {
        dirigo::check::Options opt;
        opt.budget_s = budget_s;
        opt.seed = seed;
        opt.full = full;
        opt.min_locations = min_locations;
        opt.max_locations = max_locations;
        opt.trim_prefix = trim_prefix;
        opt.jobs = jobs;
        if (atol >= 0 || rtol >= 0)
          opt.tolerance = dirigo::smt::Tolerance{atol >= 0 ? atol : 1e-2, rtol >= 0 ? rtol : 1e-2};
        dirigo::check::Report r;
        {
          nb::gil_scoped_release release;  // checking can take the whole budget
          r = dirigo::check::check_path(path, opt);
        }
        return dirigo::check::to_json(r);
      },
      nb::arg("path"), nb::arg("budget_s") = 30.0, nb::arg("seed") = 0, nb::arg("full") = false,
      nb::arg("min_locations") = 5, nb::arg("max_locations") = 0, nb::arg("atol") = -1.0, nb::arg("rtol") = -1.0,
      nb::arg("trim_prefix") = true, nb::arg("jobs") = 1,
      "Check a trace bundle directory; returns the report as JSON text (see dirigo.check for the object form).");
  m.def("fold_answers", &dirigo::check::fold_answers, nb::arg("report"), nb::arg("replay") = "",
        nb::arg("state") = "",
        "The report (JSON text) with a dirigo-replay and/or dirigo-state answer (JSON text, '' for none) folded "
        "in by the CLI's verdict rules (docs/check.md).");
  // verdict name -> exit status of `dirigo check` (check::exit_code, docs/cli.md): the one table, for
  // dirigo.api.EXIT_CODES. Outcome's values run from Bug to Error.
  nb::dict codes;
  for (int o = 0; o <= static_cast<int>(dirigo::check::Outcome::Error); ++o) {
    auto outcome = static_cast<dirigo::check::Outcome>(o);
    codes[nb::str(std::string(dirigo::check::outcome_name(outcome)).c_str())] = dirigo::check::exit_code(outcome);
  }
  m.attr("EXIT_CODES") = codes;
  m.def(
      "candidate_crash", [](const std::string& message) { return to_json(dirigo::check::candidate_crash(message)); },
      nb::arg("message"), "The report (JSON text) of a candidate that faulted on the GPU where the reference ran.");
  m.def(
      "candidate_failure",
      [](const std::string& message, const std::string& evidence) {
        return to_json(dirigo::check::candidate_failure(message, evidence));
      },
      nb::arg("message"), nb::arg("evidence"),
      "The report (JSON text) of a candidate that failed where the reference ran: evidence exception / timeout / "
      "crash / crash-gpu.");
  m.def(
      "internal_error", [](const std::string& what) { return to_json(dirigo::check::internal_error(what)); },
      nb::arg("what"), "The report (JSON text) of dirigo's own failure (ERROR, exit 70).");
  m.def(
      "trace_unsupported", [](const std::string& message) { return to_json(dirigo::check::trace_unsupported(message)); },
      nb::arg("message"), "The report (JSON text) of a trace that gave no bundle through no fault of the candidate.");
});
