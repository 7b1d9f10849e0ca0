#include "score/score.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "mutate/rule.h"

namespace dirigo::score {

std::vector<double> witness_tolerances(const std::vector<Protocol>& protocols) {
  std::set<double> tols;
  for (const auto& p : protocols)
    if (!p.dirigo) tols.insert(p.tol);
  return {tols.begin(), tols.end()};
}

bool witnessed(const Problem& p, size_t m, const std::vector<double>& witness_tols) {
  if (quarantined(p, m)) return false;
  for (double tol : witness_tols)
    for (size_t i = 0; i < p.inputs.size(); ++i)
      if (valid_input(p, i, tol) && fails(p.runs[m][i], tol)) return true;
  return false;
}

Bucket classify(const Problem& p, size_t m, const std::vector<double>& witness_tols) {
  if (p.mutants[m].equivalent) return Bucket::Equivalent;
  const auto& runs = p.runs[m];
  if (std::all_of(runs.begin(), runs.end(), [](const Outcome& o) { return o.status == Status::NotRun; }))
    return Bucket::NotRun;
  if (quarantined(p, m)) return Bucket::Quarantined;
  return witnessed(p, m, witness_tols) ? Bucket::Witnessed : Bucket::Unwitnessed;
}

std::vector<std::vector<bool>> witness_sets(const Matrix& matrix, const std::vector<double>& witness_tols) {
  std::vector<std::vector<bool>> out;
  for (const auto& p : matrix.problems) {
    std::vector<bool> w(p.mutants.size());
    for (size_t m = 0; m < p.mutants.size(); ++m) w[m] = classify(p, m, witness_tols) == Bucket::Witnessed;
    out.push_back(std::move(w));
  }
  return out;
}

namespace {

bool stopped_where_substrate_compares(const Problem& p, size_t m) {
  for (size_t i = 0; i < p.inputs.size(); ++i)
    if (p.runs[m][i].status == Status::Nonfinite && std::isnan(p.runs[m][i].t_eq) && !std::isnan(p.substrate[i].t_eq) &&
        (p.substrate[i].status == Status::Ok || p.substrate[i].status == Status::Nonfinite))
      return true;
  return false;
}

void count(Population& pop, Bucket b, bool stopped) {
  ++pop.mutants;
  pop.unwitnessed_nonfinite += b == Bucket::Unwitnessed && stopped;
  switch (b) {
    case Bucket::Equivalent: ++pop.equivalent; break;
    case Bucket::NotRun: ++pop.not_run; break;
    case Bucket::Quarantined: ++pop.quarantined; break;
    case Bucket::Unwitnessed: ++pop.unwitnessed; break;
    case Bucket::Witnessed: ++pop.witnessed; break;
  }
}

}  // namespace

Scores score(const Matrix& matrix, const std::vector<Protocol>& protocols, std::vector<double> witness_tols,
             const std::function<void(size_t, size_t)>& progress) {
  Scores s;
  s.witness_tols = witness_tols.empty() ? witness_tolerances(protocols) : std::move(witness_tols);
  for (const auto& p : protocols) {
    ProtocolScore ps;
    ps.protocol = p;
    s.protocols.push_back(std::move(ps));
  }
  std::set<std::string> seen;
  for (size_t pi = 0; pi < matrix.problems.size(); ++pi) {
    const Problem& prob = matrix.problems[pi];
    s.problems.push_back(prob.name);
    std::vector<std::vector<size_t>> admitted, selected;
    for (auto& ps : s.protocols) {
      admitted.push_back(ps.protocol.dirigo ? std::vector<size_t>{} : admitted_inputs(ps.protocol, prob));
      selected.push_back(ps.protocol.dirigo ? std::vector<size_t>{} : selected_inputs(ps.protocol, prob));
      if (ps.protocol.dirigo) {
        ps.substrates_checked += ps.protocol.harness.empty() ? !prob.substrate_verdict.empty()
                                                             : prob.harness_substrate.count(ps.protocol.harness) > 0;
        ps.problems_rejecting += rejects_substrate(ps.protocol, prob);
        continue;
      }
      int rejecting = 0;
      for (size_t i : selected.back()) {
        if (fails(ps.protocol, prob.substrate[i])) ++rejecting;
        else if (!valid_input(prob, i, ps.protocol.tol, ps.protocol.fp32_reference)) ++ps.inputs_uncompared;
      }
      ps.inputs_selected += static_cast<int>(selected.back().size());
      ps.inputs_rejecting += rejecting;
      ps.problems_rejecting += rejecting > 0;
      ps.problems_without_inputs += admitted.back().empty();
    }
    Population& prob_pop = s.population_by_problem[prob.name];
    for (size_t m = 0; m < prob.mutants.size(); ++m) {
      const Mutant& mu = prob.mutants[m];
      seen.insert(mu.family);
      Bucket b = classify(prob, m, s.witness_tols);
      bool stopped = b == Bucket::Unwitnessed && stopped_where_substrate_compares(prob, m);
      count(s.population, b, stopped);
      count(s.population_by_family[mu.family], b, stopped);
      count(prob_pop, b, stopped);
      if (b == Bucket::Unwitnessed) ++s.verdicts_unwitnessed[mu.verdict.empty() ? "none" : mu.verdict];
      if (b != Bucket::Witnessed) continue;
      s.witnessed_mutants.push_back(mu.id);
      ++s.verdicts_witnessed[mu.verdict.empty() ? "none" : mu.verdict];
      for (size_t k = 0; k < s.protocols.size(); ++k) {
        auto& ps = s.protocols[k];
        bool missed = !detects(ps.protocol, prob, m, admitted[k]);
        bool unrun = !complete(ps.protocol, prob, m, selected[k]);
        for (Tally* t : {&ps.total, &ps.by_family[mu.family], &ps.by_problem[prob.name]}) {
          t->unrun += unrun;
          if (unrun) continue;
          ++t->witnessed;
          t->missed += missed;
        }
        if (unrun) ps.unrun_mutants.push_back(mu.id);
        else if (missed) ps.missed_mutants.push_back(mu.id);
        if (ps.protocol.dirigo && !verdict_of(ps.protocol, prob, m).empty()) {
          ++ps.checked.witnessed;
          ps.checked.missed += missed;
        }
      }
    }
    if (progress) progress(pi + 1, matrix.problems.size());
  }
  for (const auto& f : mutate::families())
    if (seen.erase(f)) s.families.push_back(f);
  s.families.insert(s.families.end(), seen.begin(), seen.end());
  return s;
}

}  // namespace dirigo::score
