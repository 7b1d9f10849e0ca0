#include "score/report.h"

#include <fmt/format.h>

namespace dirigo::score {
namespace {

std::string rate(double r) { return fmt::format("{:.1f}%", 100 * r); }

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string header(const std::vector<std::string>& cols) {
  std::string h = "| " + join(cols, " | ") + " |\n|";
  for (size_t i = 0; i < cols.size(); ++i) h += i ? "---:|" : "---|";
  return h + "\n";
}

std::string row(const std::vector<std::string>& cells) { return "| " + join(cells, " | ") + " |\n"; }

nlohmann::json tally_json(const Tally& t) {
  return {{"witnessed", t.witnessed}, {"missed", t.missed}, {"unrun", t.unrun}, {"miss_rate", t.miss_rate()}};
}

}  // namespace

// The JSON of these is their fields under their own names.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Population, mutants, equivalent, not_run, quarantined, unwitnessed, witnessed,
                                   unwitnessed_nonfinite)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ProblemSuite, problem, witnessed, coverable, suite, dev_suite, killed_full, dev,
                                   held_out, killed_held_out, baseline_full, baseline_held_out)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SuiteReport, baseline, witnessed, held_out, detection_full, detection_held_out,
                                   baseline_full, baseline_held_out, median_full_cover, max_full_cover, problems)

std::string percent(int part, int whole) {
  if (whole == 0) return "–";
  return fmt::format("{} ({}/{})", rate(static_cast<double>(part) / whole), part, whole);
}

std::string population_table(const Scores& s) {
  std::string out = header({"family", "mutants", "equivalent", "not run", "quarantined", "unwitnessed",
                             "of which stopped at NaN/inf", "witnessed"});
  auto line = [&](const std::string& name, const Population& p) {
    out += row({name, std::to_string(p.mutants), std::to_string(p.equivalent), std::to_string(p.not_run),
                std::to_string(p.quarantined), std::to_string(p.unwitnessed), std::to_string(p.unwitnessed_nonfinite),
                std::to_string(p.witnessed)});
  };
  for (const auto& f : s.families) line(f, s.population_by_family.at(f));
  line("**total**", s.population);
  return out;
}

std::string family_table(const Scores& s) {
  std::vector<std::string> cols{"protocol"};
  for (const auto& f : s.families) cols.push_back(f);
  cols.insert(cols.end(), {"total", "not run in full", "checked mutants only", "false rejections"});
  std::string out = header(cols);
  for (const auto& ps : s.protocols) {
    std::vector<std::string> cells{ps.protocol.name};
    for (const auto& f : s.families) {
      auto it = ps.by_family.find(f);
      cells.push_back(it == ps.by_family.end() ? "–" : percent(it->second.missed, it->second.witnessed));
    }
    cells.push_back("**" + percent(ps.total.missed, ps.total.witnessed) + "**");
    cells.push_back(std::to_string(ps.total.unrun));
    cells.push_back(ps.protocol.dirigo ? percent(ps.checked.missed, ps.checked.witnessed) : "–");
    cells.push_back(ps.protocol.dirigo ? fmt::format("{} of {} substrates", ps.problems_rejecting, ps.substrates_checked)
                                       : fmt::format("{} of {} inputs ({} problems){}", ps.inputs_rejecting,
                                                     ps.inputs_selected, ps.problems_rejecting,
                                                     ps.inputs_uncompared
                                                         ? fmt::format("; {} not compared", ps.inputs_uncompared)
                                                         : ""));
    out += row(cells);
  }
  return out;
}

std::string problem_table(const Scores& s) {
  std::vector<std::string> cols{"problem", "witnessed"};
  for (const auto& ps : s.protocols) cols.push_back(ps.protocol.name);
  std::string out = header(cols);
  for (const auto& name : s.problems) {
    std::vector<std::string> cells{name, std::to_string(s.population_by_problem.at(name).witnessed)};
    for (const auto& ps : s.protocols) {
      auto it = ps.by_problem.find(name);
      cells.push_back(it == ps.by_problem.end() ? "–" : percent(it->second.missed, it->second.witnessed));
    }
    out += row(cells);
  }
  return out;
}

std::string verdict_lines(const Scores& s) {
  auto line = [](const char* what, const std::map<std::string, int>& counts) {
    std::vector<std::string> parts;
    for (const auto& [v, n] : counts) parts.push_back(fmt::format("{} {}", v, n));
    return fmt::format("dirigo check verdicts on {} mutants: {}\n", what, parts.empty() ? "–" : join(parts, ", "));
  };
  return line("witnessed", s.verdicts_witnessed) + line("unwitnessed", s.verdicts_unwitnessed);
}

std::string suite_table(const SuiteReport& r) {
  std::vector<std::string> cols{"scored on"};
  for (int b = r.options.min_budget; b <= r.options.max_budget; ++b) cols.push_back(fmt::format("b={}", b));
  cols.push_back(r.baseline);
  std::string out = header(cols);
  std::vector<std::string> full{fmt::format("full pool ({})", r.witnessed)},
      held{fmt::format("held-out mutants ({})", r.held_out)};
  for (double d : r.detection_full) full.push_back(rate(d));
  for (double d : r.detection_held_out) held.push_back(rate(d));
  full.push_back(rate(r.baseline_full));
  held.push_back(rate(r.baseline_held_out));
  return out + row(full) + row(held);
}

std::string suite_problem_table(const SuiteReport& r) {
  std::string out = header({"problem", "witnessed", "coverable", "greedy suite (full pool)", "b=max, full", "held-out"});
  for (const auto& p : r.problems)
    out += row({p.problem, std::to_string(p.witnessed), std::to_string(p.coverable),
                p.suite.empty() ? "–" : join(p.suite, ", "),
                p.killed_full.empty() ? "–" : percent(p.killed_full.back(), p.witnessed),
                p.killed_held_out.empty() ? "–" : percent(p.killed_held_out.back(), p.held_out)});
  return out;
}

nlohmann::json to_json(const Scores& s) {
  nlohmann::json j;
  j["witness_tolerances"] = s.witness_tols;
  j["families"] = s.families;
  j["problems"] = s.problems;
  j["population"] = s.population;
  for (const auto& [k, v] : s.population_by_family) j["population_by_family"][k] = v;
  for (const auto& [k, v] : s.population_by_problem) j["population_by_problem"][k] = v;
  j["verdicts_witnessed"] = s.verdicts_witnessed;
  j["verdicts_unwitnessed"] = s.verdicts_unwitnessed;
  j["witnessed_mutants"] = s.witnessed_mutants;
  j["protocols"] = nlohmann::json::array();
  for (const auto& ps : s.protocols) {
    nlohmann::json p{{"name", ps.protocol.name},
                     {"description", ps.protocol.description},
                     {"dirigo", ps.protocol.dirigo},
                     {"total", tally_json(ps.total)},
                     {"checked", tally_json(ps.checked)},
                     {"inputs_selected", ps.inputs_selected},
                     {"inputs_rejecting", ps.inputs_rejecting},
                     {"inputs_uncompared", ps.inputs_uncompared},
                     {"problems_rejecting", ps.problems_rejecting},
                     {"problems_without_inputs", ps.problems_without_inputs},
                     {"substrates_checked", ps.substrates_checked}};
    if (!ps.protocol.dirigo) p["tol"] = ps.protocol.tol;
    if (!ps.protocol.harness.empty()) p["harness"] = ps.protocol.harness;
    p["missed_mutants"] = ps.missed_mutants;
    p["unrun_mutants"] = ps.unrun_mutants;
    p["by_family"] = nlohmann::json::object();
    p["by_problem"] = nlohmann::json::object();
    for (const auto& [k, v] : ps.by_family) p["by_family"][k] = tally_json(v);
    for (const auto& [k, v] : ps.by_problem) p["by_problem"][k] = tally_json(v);
    j["protocols"].push_back(p);
  }
  return j;
}

nlohmann::json to_json(const SuiteReport& r) {
  nlohmann::json j = r;
  j["tol"] = r.options.tol;
  j["seed"] = r.options.seed;
  j["budgets"] = nlohmann::json::array();
  for (int b = r.options.min_budget; b <= r.options.max_budget; ++b) j["budgets"].push_back(b);
  return j;
}

}  // namespace dirigo::score
