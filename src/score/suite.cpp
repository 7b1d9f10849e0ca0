#include "score/suite.h"

#include <algorithm>
#include <random>
#include <stdexcept>

namespace dirigo::score {

std::vector<size_t> greedy_cover(const std::vector<std::vector<size_t>>& covers, const std::vector<bool>& universe,
                                 size_t budget) {
  std::vector<bool> covered(universe.size(), false);
  std::vector<size_t> picks;
  std::vector<bool> used(covers.size(), false);
  while (picks.size() < budget) {
    size_t best = covers.size(), best_gain = 0;
    for (size_t c = 0; c < covers.size(); ++c) {
      if (used[c]) continue;
      size_t gain = 0;
      for (size_t e : covers[c]) gain += universe.at(e) && !covered[e];
      if (gain > best_gain) best = c, best_gain = gain;  // strict: ties keep the lower index
    }
    if (best_gain == 0) break;
    used[best] = true;
    picks.push_back(best);
    for (size_t e : covers[best]) covered[e] = true;
  }
  return picks;
}

uint64_t name_salt(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<bool> dev_split(size_t n, uint64_t seed, uint64_t salt) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed ^ salt);
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);  // not std::shuffle: its draws vary by library
  std::vector<bool> dev(n, false);
  for (size_t k = 0; k < n / 2; ++k) dev[order[k]] = true;
  return dev;
}

namespace {

int killed_by(const std::vector<size_t>& picks, size_t budget, const std::vector<std::vector<size_t>>& covers,
              const std::vector<bool>& scored) {
  std::vector<bool> hit(scored.size(), false);
  for (size_t k = 0; k < std::min(budget, picks.size()); ++k)
    for (size_t e : covers[picks[k]]) hit[e] = true;
  int n = 0;
  for (size_t e = 0; e < scored.size(); ++e) n += scored[e] && hit[e];
  return n;
}

}  // namespace

SuiteReport synthesize(const Matrix& matrix, const std::vector<std::vector<bool>>& witnessed, const Protocol& baseline,
                       const SuiteOptions& o, const std::function<void(size_t, size_t)>& progress) {
  if (o.min_budget < 1 || o.max_budget < o.min_budget) throw std::runtime_error("suite: budgets must satisfy 1 <= min <= max");
  if (witnessed.size() != matrix.problems.size()) throw std::runtime_error("suite: witness sets do not match the matrix");
  SuiteReport r;
  r.options = o;
  r.baseline = baseline.name;
  const size_t nb = o.max_budget - o.min_budget + 1;
  std::vector<int> killed_full(nb, 0), killed_held(nb, 0);
  int base_full = 0, base_held = 0;
  std::vector<int> cover_sizes;
  for (size_t pi = 0; pi < matrix.problems.size(); ++pi) {
    const Problem& p = matrix.problems[pi];
    const std::vector<bool>& w = witnessed[pi];
    ProblemSuite ps;
    ps.problem = p.name;
    // Candidates: inputs valid at the suite's tolerance; each covers the witnessed mutants it kills.
    std::vector<size_t> candidates;
    std::vector<std::vector<size_t>> covers;
    std::vector<bool> coverable(p.mutants.size(), false);
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      if (!valid_input(p, i, o.tol)) continue;
      std::vector<size_t> c;
      for (size_t m = 0; m < p.mutants.size(); ++m)
        if (w[m] && fails(p.runs[m][i], o.tol)) c.push_back(m), coverable[m] = true;
      candidates.push_back(i);
      covers.push_back(std::move(c));
    }
    // Split: the k-th witnessed mutant goes to the dev half iff split[k].
    std::vector<size_t> wit;
    for (size_t m = 0; m < w.size(); ++m)
      if (w[m]) wit.push_back(m);
    std::vector<bool> split = dev_split(wit.size(), o.seed, name_salt(p.name));
    std::vector<bool> dev(w.size(), false), held(w.size(), false);
    for (size_t k = 0; k < wit.size(); ++k) (split[k] ? dev : held)[wit[k]] = true;
    ps.witnessed = static_cast<int>(wit.size());
    ps.coverable = static_cast<int>(std::count(coverable.begin(), coverable.end(), true));
    ps.dev = static_cast<int>(wit.size() / 2);
    ps.held_out = ps.witnessed - ps.dev;

    auto full_picks = greedy_cover(covers, w, covers.size());
    auto dev_picks = greedy_cover(covers, dev, static_cast<size_t>(o.max_budget));
    for (size_t k : full_picks) ps.suite.push_back(p.inputs[candidates[k]].name);
    for (size_t k : dev_picks) ps.dev_suite.push_back(p.inputs[candidates[k]].name);
    if (ps.coverable > 0) cover_sizes.push_back(static_cast<int>(full_picks.size()));
    for (size_t b = 0; b < nb; ++b) {
      size_t budget = o.min_budget + b;
      ps.killed_full.push_back(killed_by(full_picks, budget, covers, w));
      ps.killed_held_out.push_back(killed_by(dev_picks, budget, covers, held));
      killed_full[b] += ps.killed_full.back();
      killed_held[b] += ps.killed_held_out.back();
    }
    auto admitted = baseline.dirigo ? std::vector<size_t>{} : admitted_inputs(baseline, p);
    for (size_t m : wit) {
      bool d = detects(baseline, p, m, admitted);
      ps.baseline_full += d;
      ps.baseline_held_out += d && held[m];
    }
    base_full += ps.baseline_full;
    base_held += ps.baseline_held_out;
    r.witnessed += ps.witnessed;
    r.held_out += ps.held_out;
    r.problems.push_back(std::move(ps));
    if (progress) progress(pi + 1, matrix.problems.size());
  }
  auto rate = [](int a, int b) { return b ? static_cast<double>(a) / b : 0.0; };
  for (size_t b = 0; b < nb; ++b) {
    r.detection_full.push_back(rate(killed_full[b], r.witnessed));
    r.detection_held_out.push_back(rate(killed_held[b], r.held_out));
  }
  r.baseline_full = rate(base_full, r.witnessed);
  r.baseline_held_out = rate(base_held, r.held_out);
  if (!cover_sizes.empty()) {
    std::sort(cover_sizes.begin(), cover_sizes.end());
    size_t n = cover_sizes.size();
    r.median_full_cover = n % 2 ? cover_sizes[n / 2] : (cover_sizes[n / 2 - 1] + cover_sizes[n / 2]) / 2.0;
    r.max_full_cover = cover_sizes.back();
  }
  return r;
}

}  // namespace dirigo::score
