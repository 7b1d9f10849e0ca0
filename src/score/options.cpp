#include "score/options.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "score/load.h"
#include "score/progress.h"

namespace dirigo::score {

std::vector<Protocol> protocols_for(const MatrixSource& s, const std::vector<std::string>& harnesses) {
  std::vector<Protocol> all;
  if (s.protocols_file.empty()) {
    all = builtin_protocols();
  } else {
    std::ifstream f(s.protocols_file);
    if (!f) throw std::runtime_error("cannot read protocols file " + s.protocols_file);
    std::stringstream ss;
    ss << f.rdbuf();
    try {
      all = parse_protocols(ss.str());
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(s.protocols_file + ": " + e.what());
    }
  }
  for (const auto& h : harnesses) {
    bool have = false;
    for (const auto& p : all) have |= p.name == h;
    if (!have) all.push_back(harness_protocol(h));
  }
  return select_protocols(all, s.only);
}

Matrix matrix_for(const MatrixSource& s) {
  if (s.store.empty()) throw std::runtime_error("no results store given (--store DB)");
  LoadOptions o;
  o.source = s.source;
  ProgressLine line("loading runs", s.progress);
  o.progress = [&](long long d, long long t) { line(d, t); };
  return load_matrix(s.store, o);
}

std::pair<int, int> parse_budget(const std::string& text) {
  auto number = [&](const std::string& t) {
    size_t used = 0;
    int v = -1;
    try {
      v = std::stoi(t, &used);
    } catch (const std::exception&) {
    }
    if (used != t.size() || v < 1) throw std::runtime_error("budget must be N or A..B with 1 <= A <= B, not '" + text + "'");
    return v;
  };
  size_t dots = text.find("..");
  if (dots == std::string::npos) {
    int b = number(text);
    return {b, b};
  }
  int a = number(text.substr(0, dots)), b = number(text.substr(dots + 2));
  if (a > b) throw std::runtime_error("budget must be N or A..B with 1 <= A <= B, not '" + text + "'");
  return {a, b};
}

}  // namespace dirigo::score
