// Tables (Markdown, also what the CLI prints) and JSON for scores and suites.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "score/score.h"
#include "score/suite.h"

namespace dirigo::score {

std::string percent(int part, int whole);  // "12.5% (1/8)"; "–" when whole = 0
std::string population_table(const Scores& s);  // family x {witnessed, unwitnessed, quarantined, ...}
std::string family_table(const Scores& s);      // protocol x family miss rate, plus false rejections
std::string problem_table(const Scores& s);     // problem x protocol miss rate
std::string verdict_lines(const Scores& s);     // dirigo check verdicts over witnessed / unwitnessed mutants
std::string suite_table(const SuiteReport& r);  // detection vs budget, full pool and held out
std::string suite_problem_table(const SuiteReport& r);

nlohmann::json to_json(const Scores& s);
nlohmann::json to_json(const SuiteReport& r);

}  // namespace dirigo::score
