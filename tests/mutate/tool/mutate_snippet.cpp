// mutate_snippet RULE FILE: prints the number of sites, then the first mutant (used to write
// and review the expected texts of tests/mutate/test_rules.cpp).
#include <fstream>
#include <iostream>
#include <sstream>

#include "mutate/rule.h"

int main(int argc, char** argv) {
  if (argc != 3) { std::cerr << "usage: mutate_snippet RULE FILE\n"; return 64; }
  const auto* rule = dirigo::mutate::find_rule(argv[1]);
  if (!rule) { std::cerr << "no rule " << argv[1] << "\n"; return 64; }
  std::ifstream in(argv[2]);
  std::stringstream ss;
  ss << in.rdbuf();
  dirigo::mutate::SourceModel m(ss.str());
  auto sites = dirigo::mutate::find_sites(*rule, m);
  std::cout << sites.size() << "\n";
  if (!sites.empty()) std::cout << dirigo::mutate::apply_site(m, sites[0]);
  return 0;
}
