// Protocol rules, the validity gate, witnessing and miss rates on small kill matrices written into
// a real SQLite store and read back through load_matrix. Expected numbers are worked out by hand
// in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "score/load.h"
#include "score/options.h"
#include "score/protocol.h"
#include "score/report.h"
#include "score/score.h"
#include "store_builder.h"

using namespace dirigo::score;
using dirigo::score::testing::StoreBuilder;

namespace {

const ProtocolScore& of(const Scores& s, const std::string& name) {
  for (const auto& p : s.protocols)
    if (p.protocol.name == name) return p;
  throw std::runtime_error("no protocol " + name);
}

// Problem `name` with the five KernelBench inputs (seeds 0..4); the substrate passes all at 1e-6.
struct Kb {
  long long sid;
  long long in[5];
};
Kb kernelbench_problem(StoreBuilder& b, const std::string& name) {
  Kb k{b.substrate(name + ".py"), {}};
  for (int s = 0; s < 5; ++s) k.in[s] = b.input(k.sid, name, "kernelbench_randn", s);
  return k;
}
// A mutant with t_eq 1e-6 everywhere except `at`, where it is `t`.
long long mutant_on(StoreBuilder& b, const Kb& k, const std::string& family, int at, double t,
                    const std::string& verdict = "") {
  long long m = b.mutant(k.sid, family, verdict);
  for (int s = 0; s < 5; ++s) b.run(k.sid, m, k.in[s], s == at ? t : 1e-6);
  return m;
}

}  // namespace

TEST(Outcome, KillIsStrictlyAboveTolerance) {
  Outcome o{Status::Ok, 1e-2};
  EXPECT_FALSE(fails(o, 1e-2));  // allclose accepts |d| <= atol + rtol|ref|
  EXPECT_TRUE(passes(o, 1e-2));
  o.t_eq = 1.0000001e-2;
  EXPECT_TRUE(fails(o, 1e-2));
  EXPECT_FALSE(passes(o, 1e-2));
  o.t_eq = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(fails(o, 1e-2));
}

TEST(Outcome, NonfiniteMismatchKillsWhateverTheError) {
  Outcome o{Status::Ok, 0.0};
  o.nonfinite_mismatch = true;
  EXPECT_TRUE(fails(o, 1e-2));
  EXPECT_FALSE(passes(o, 1e-2));
}

TEST(Outcome, CrashAndTimeoutNeverKill) {
  for (Status s : {Status::Crash, Status::Timeout, Status::NotRun}) {
    Outcome o{s, 1.0};
    o.nonfinite_mismatch = true;
    EXPECT_FALSE(fails(o, 1e-2)) << status_name(s);
    EXPECT_FALSE(passes(o, 1e-2)) << status_name(s);
  }
}

TEST(Outcome, NoComparisonNeitherKillsNorPasses) {
  Outcome o{Status::Nonfinite, std::nan("")};
  EXPECT_FALSE(fails(o, 1e-2));
  EXPECT_FALSE(passes(o, 1e-2));
}

TEST(Outcome, Fp32ReferenceUsesTeq32) {
  Outcome o{Status::Ok, 1e-3};
  o.t_eq32 = 1e-6;
  EXPECT_TRUE(fails(o, 1e-4));
  EXPECT_FALSE(fails(o, 1e-4, /*fp32_reference=*/true));
}

// The gate: input 4's substrate error 5e-3 is within 1e-2 but not 1e-4. Mutant A differs only on
// input 4 (5e-2): kernelbench_v0 kills it there; kernelbench_fp32 must not use input 4, so it
// misses A — an ungated 1e-4 protocol would "kill" it. Mutant B (5e-4 on input 0) is caught only at 1e-4.
TEST(Score, ValidityGateDropsInputsTheSubstrateFails) {
  StoreBuilder b("gate");
  Kb k = kernelbench_problem(b, "p");
  for (int s = 0; s < 5; ++s) b.run(k.sid, -1, k.in[s], s == 4 ? 5e-3 : 1e-6);
  mutant_on(b, k, "arithmetic", 4, 5e-2);
  mutant_on(b, k, "precision", 0, 5e-4);
  auto protocols = builtin_protocols();
  protocols.push_back(parse_protocols(R"([{"name": "ungated", "tol": 1e-4, "gate": false,
      "inputs": [{"distribution": "kernelbench_randn", "draws": 5}]}])")[0]);
  Scores s = score(load_matrix(b.path()), protocols);
  EXPECT_EQ(s.population.witnessed, 2);
  const auto& v0 = of(s, "kernelbench_v0");
  EXPECT_EQ(v0.total.missed, 1);
  EXPECT_EQ(v0.by_family.at("precision").missed, 1);
  EXPECT_EQ(v0.by_family.at("arithmetic").missed, 0);
  EXPECT_EQ(v0.inputs_rejecting, 0);
  const auto& fp32 = of(s, "kernelbench_fp32");
  EXPECT_EQ(fp32.total.missed, 1);
  EXPECT_EQ(fp32.by_family.at("arithmetic").missed, 1);
  EXPECT_EQ(fp32.by_family.at("precision").missed, 0);
  EXPECT_EQ(fp32.inputs_selected, 5);
  EXPECT_EQ(fp32.inputs_rejecting, 1);
  EXPECT_EQ(fp32.problems_rejecting, 1);
  EXPECT_EQ(of(s, "ungated").total.missed, 0);
}

// A mutant that only fails where the substrate fails too has no witness.
TEST(Score, KillOnlyOnInvalidInputIsNoWitness) {
  StoreBuilder b("nowitness");
  Kb k = kernelbench_problem(b, "p");
  for (int s = 0; s < 5; ++s) b.run(k.sid, -1, k.in[s], s == 0 ? 0.5 : 1e-6);
  mutant_on(b, k, "boundary", 0, 0.9);
  Scores s = score(load_matrix(b.path()), builtin_protocols());
  EXPECT_EQ(s.population.unwitnessed, 1);
  EXPECT_EQ(s.population.witnessed, 0);
  EXPECT_EQ(of(s, "kernelbench_v0").total.witnessed, 0);
  EXPECT_EQ(of(s, "kernelbench_v0").inputs_rejecting, 1);
}

// A crash or timeout on one input quarantines the mutant, even when another input would kill it.
TEST(Score, CrashAndTimeoutQuarantine) {
  StoreBuilder b("quarantine");
  Kb k = kernelbench_problem(b, "p");
  for (int s = 0; s < 5; ++s) b.run(k.sid, -1, k.in[s], 1e-6);
  long long c = mutant_on(b, k, "indexing", 1, 1.0);
  b.exec("UPDATE runs SET status = 'crash', t_eq = NULL WHERE mutant_id = " + std::to_string(c) +
         " AND input_id = " + std::to_string(k.in[0]));
  long long t = mutant_on(b, k, "synchronization", 1, 1.0);
  b.exec("UPDATE runs SET status = 'timeout', t_eq = NULL WHERE mutant_id = " + std::to_string(t) +
         " AND input_id = " + std::to_string(k.in[3]));
  mutant_on(b, k, "indexing", 1, 1.0);  // the control: witnessed, killed
  Scores s = score(load_matrix(b.path()), builtin_protocols());
  EXPECT_EQ(s.population.quarantined, 2);
  EXPECT_EQ(s.population.witnessed, 1);
  EXPECT_EQ(of(s, "kernelbench_v0").total.witnessed, 1);
  EXPECT_EQ(of(s, "kernelbench_v0").total.missed, 0);
  EXPECT_EQ(s.population_by_family.at("synchronization").quarantined, 1);
}

// nonfinite_mismatch kills with t_eq 0; a CPU run that stopped at a non-finite intermediate
// (status nonfinite, t_eq NULL) is no comparison: neither a kill nor, for the substrate, valid.
TEST(Score, NonfiniteRows) {
  StoreBuilder b("nonfinite");
  Kb k = kernelbench_problem(b, "p");
  for (int s = 0; s < 5; ++s) b.run(k.sid, -1, k.in[s], s == 2 ? std::nan("") : 1e-6, s == 2 ? "nonfinite" : "ok");
  long long e = b.mutant(k.sid, "arithmetic");
  for (int s = 0; s < 5; ++s) b.run(k.sid, e, k.in[s], 0.0, "ok", s == 1 ? 3 : 0);
  long long f = b.mutant(k.sid, "precision");
  for (int s = 0; s < 5; ++s) b.run(k.sid, f, k.in[s], s == 0 ? std::nan("") : 1e-6, s == 0 ? "nonfinite" : "ok");
  mutant_on(b, k, "semantic", 2, 1.0);  // fails only where the substrate had no comparison
  Matrix m = load_matrix(b.path());
  EXPECT_TRUE(m.problems[0].runs[0][1].nonfinite_mismatch);
  Scores s = score(m, builtin_protocols());
  EXPECT_EQ(s.population.witnessed, 1);
  EXPECT_EQ(s.population.unwitnessed, 2);
  EXPECT_EQ(s.population.unwitnessed_nonfinite, 1);  // F stopped on input 0, where the substrate compares
  EXPECT_EQ(of(s, "kernelbench_v0").by_family.at("arithmetic").missed, 0);
  EXPECT_EQ(of(s, "kernelbench_v0").inputs_rejecting, 0);  // no comparison is no false rejection
  EXPECT_EQ(of(s, "kernelbench_v0").inputs_uncompared, 1);
}

// Draws come in seed order (rows inserted out of order), the first 5 only; selectors by
// distribution and by input family. G: killed only by randn seed 5; H: only by the hardened
// input; I: only by the fuzz draw (distribution uniform01, family fuzz).
TEST(Score, ProtocolInputSelection) {
  StoreBuilder b("select");
  long long sid = b.substrate("p.py");
  std::vector<long long> in;
  in.push_back(b.input(sid, "p", "kernelbench_randn", 5));
  for (int s = 4; s >= 0; --s) in.push_back(b.input(sid, "p", "kernelbench_randn", s));
  long long hard = b.input(sid, "p", "large", 0, "hardened");
  long long fz = b.input(sid, "p", "uniform01", 100, "fuzz");
  in.push_back(hard);
  in.push_back(fz);
  for (long long i : in) b.run(sid, -1, i, 0.0);
  for (long long killer : {in[0], hard, fz}) {
    long long m = b.mutant(sid, "semantic");
    for (long long i : in) b.run(sid, m, i, i == killer ? 0.3 : 0.0);
  }
  auto protocols = builtin_protocols();
  Matrix mx = load_matrix(b.path());
  auto picked = selected_inputs(select_protocols(protocols, "kernelbench_v0")[0], mx.problems[0]);
  ASSERT_EQ(picked.size(), 5u);
  for (size_t i : picked) EXPECT_LT(mx.problems[0].inputs[i].seed, 5);
  Scores s = score(mx, protocols);
  EXPECT_EQ(s.population.witnessed, 3);
  EXPECT_EQ(of(s, "kernelbench_v0").total.missed, 3);
  EXPECT_EQ(of(s, "hardened_inputs").total.missed, 2);  // kills H only
  EXPECT_EQ(of(s, "fuzz").total.missed, 2);             // kills I only
  EXPECT_EQ(of(s, "fuzz").inputs_selected, 1);
}

// dirigo: a kill iff the verdict is BUG (dirigo_suspect: BUG or SUSPECT); only witnessed mutants
// count, so a BUG on an unwitnessed mutant is reported apart.
TEST(Score, DirigoVerdictProtocol) {
  StoreBuilder b("dirigo");
  Kb k = kernelbench_problem(b, "p");
  for (int s = 0; s < 5; ++s) b.run(k.sid, -1, k.in[s], 1e-6);
  for (const char* v : {"BUG", "SUSPECT", "CHECKED", ""}) mutant_on(b, k, "boundary", 0, 1.0, v);
  mutant_on(b, k, "boundary", 0, 1e-6, "BUG");  // unwitnessed
  Scores s = score(load_matrix(b.path()), builtin_protocols());
  EXPECT_EQ(s.population.witnessed, 4);
  EXPECT_EQ(of(s, "dirigo").total.missed, 3);
  EXPECT_EQ(of(s, "dirigo_suspect").total.missed, 2);
  EXPECT_EQ(of(s, "dirigo").checked.witnessed, 3);  // the mutant without a verdict is left out
  EXPECT_EQ(of(s, "dirigo").checked.missed, 2);
  EXPECT_EQ(of(s, "kernelbench_v0").checked.witnessed, 0);
  EXPECT_EQ(s.verdicts_unwitnessed.at("BUG"), 1);
  EXPECT_EQ(s.verdicts_witnessed.at("none"), 1);
}

// The verdict protocols' gate: when `dirigo check` already answers BUG on the correct substrate
// (table substrate_check), its BUG verdicts on that problem's mutants detect nothing; a SUSPECT
// substrate closes only dirigo_suspect; the rejection is counted per substrate.
TEST(Score, DirigoGateOnTheSubstratesVerdict) {
  StoreBuilder b("dirigo_gate");
  b.exec("CREATE TABLE substrate_check(substrate_id INTEGER PRIMARY KEY, verdict TEXT, reason TEXT, check_s REAL)");
  Kb bug = kernelbench_problem(b, "racy"), ok = kernelbench_problem(b, "fine"), sus = kernelbench_problem(b, "sus");
  for (const Kb* k : {&bug, &ok, &sus}) {
    for (int s = 0; s < 5; ++s) b.run(k->sid, -1, k->in[s], 1e-6);
    mutant_on(b, *k, "synchronization", 0, 1.0, "BUG");
  }
  b.exec(fmt::format("INSERT INTO substrate_check VALUES({}, 'BUG', 'warp-sync race', 0.2), ({}, 'VERIFIED', '', 0.1), "
                     "({}, 'SUSPECT', '', 0.1)", bug.sid, ok.sid, sus.sid));
  Scores s = score(load_matrix(b.path()), builtin_protocols());
  EXPECT_EQ(s.population.witnessed, 3);
  EXPECT_EQ(of(s, "dirigo").total.missed, 1);  // racy: gated out
  EXPECT_EQ(of(s, "dirigo").by_problem.at("racy").missed, 1);
  EXPECT_EQ(of(s, "dirigo").by_problem.at("fine").missed, 0);
  EXPECT_EQ(of(s, "dirigo").problems_rejecting, 1);
  EXPECT_EQ(of(s, "dirigo").substrates_checked, 3);
  EXPECT_EQ(of(s, "dirigo_suspect").total.missed, 2);  // racy and sus
  EXPECT_EQ(of(s, "dirigo_suspect").problems_rejecting, 2);
  EXPECT_EQ(of(s, "kernelbench_v0").total.missed, 0);  // input protocols do not look at verdicts
}

// A harness run on every mutant (table harness_runs, `dirigo score --protocol`): a kill iff it
// rejects the mutant; it counts on a problem only where it accepts the correct substrate; a mutant
// it did not run on or errored on is a miss (one it never ran on is left out of the "checked" tally).
TEST(Score, HarnessVerdictProtocol) {
  StoreBuilder b("harness");
  b.exec("CREATE TABLE harness_runs(protocol TEXT NOT NULL, substrate_id INTEGER NOT NULL, mutant_id INTEGER, "
         "verdict TEXT NOT NULL, compiled INTEGER, ms REAL, detail TEXT)");
  Kb ok = kernelbench_problem(b, "ok"), picky = kernelbench_problem(b, "picky");
  for (const Kb* k : {&ok, &picky})
    for (int s = 0; s < 5; ++s) b.run(k->sid, -1, k->in[s], 1e-6);
  long long rej = mutant_on(b, ok, "boundary", 0, 1.0);
  long long acc = mutant_on(b, ok, "boundary", 1, 1.0);
  long long err = mutant_on(b, ok, "precision", 2, 1.0);
  mutant_on(b, ok, "precision", 3, 1.0);  // the harness never ran on it
  long long p_rej = mutant_on(b, picky, "boundary", 0, 1.0);
  b.exec(fmt::format("INSERT INTO harness_runs VALUES('mine', {0}, NULL, 'accept', 1, 1, ''), "
                     "('mine', {0}, {1}, 'reject', 1, 1, ''), ('mine', {0}, {2}, 'accept', 1, 1, ''), "
                     "('mine', {0}, {3}, 'error', NULL, 1, 'boom'), "
                     "('mine', {4}, NULL, 'reject', 1, 1, ''), ('mine', {4}, {5}, 'reject', 1, 1, '')",
                     ok.sid, rej, acc, err, picky.sid, p_rej));
  Matrix m = load_matrix(b.path());
  ASSERT_EQ(m.harnesses, std::vector<std::string>{"mine"});
  MatrixSource src;
  src.store = b.path();
  auto protocols = protocols_for(src, m.harnesses);
  Scores s = score(m, protocols);
  EXPECT_EQ(s.population.witnessed, 5);
  const auto& h = of(s, "mine");
  EXPECT_EQ(h.total.missed, 4);                     // only `rej` of ok is detected; picky is gated out
  EXPECT_EQ(h.by_problem.at("picky").missed, 1);   // it rejects the correct substrate there
  EXPECT_EQ(h.problems_rejecting, 1);
  EXPECT_EQ(h.substrates_checked, 2);
  EXPECT_EQ(h.checked.witnessed, 4);               // the mutant without a row is left out
  EXPECT_EQ(of(s, "dirigo").total.missed, 5);      // dirigo's verdicts are not the harness's
  src.only = "mine,kernelbench_v0";
  EXPECT_EQ(protocols_for(src, m.harnesses).size(), 2u);
  b.exec("INSERT INTO harness_runs VALUES('mine', 1, 1, 'maybe', 1, 1, '')");
  EXPECT_THROW(load_matrix(b.path()), std::runtime_error);
}

// kernelbench_verified: the four hidden distributions against the fp32 reference at 1e-3.
TEST(Score, KernelbenchVerifiedProtocol) {
  StoreBuilder b("verified");
  long long sid = b.substrate("p.py");
  long long kb = b.input(sid, "p", "kernelbench_randn", 0);
  long long rn = b.input(sid, "p", "randn", 100, "fuzz");
  long long un = b.input(sid, "p", "uniform01", 0, "hardened");
  long long ti = b.input(sid, "p", "tiny", 0, "hardened");
  for (long long i : {kb, rn, un, ti}) b.run(sid, -1, i, 1e-6, "ok", 0, "cpu", 1e-6);
  long long only_kb = b.mutant(sid, "precision");
  long long on_uniform = b.mutant(sid, "precision");
  long long on_tiny = b.mutant(sid, "precision");
  for (long long i : {kb, rn, un, ti}) {
    b.run(sid, only_kb, i, i == kb ? 1.0 : 1e-6, "ok", 0, "cpu", i == kb ? 1.0 : 1e-6);
    b.run(sid, on_uniform, i, i == un ? 5e-3 : 1e-6, "ok", 0, "cpu", i == un ? 5e-3 : 1e-6);
    b.run(sid, on_tiny, i, i == ti ? 1.0 : 1e-6, "ok", 0, "cpu", i == ti ? 1.0 : 1e-6);
  }
  Scores s = score(load_matrix(b.path()), builtin_protocols());
  const auto& v = of(s, "kernelbench_verified");
  EXPECT_EQ(v.protocol.tol, 1e-3);
  EXPECT_TRUE(v.protocol.fp32_reference);
  EXPECT_EQ(s.population.witnessed, 3);
  EXPECT_EQ(v.total.missed, 2);  // kills on_uniform (5e-3 > 1e-3); kernelbench_randn and tiny are not its inputs
  EXPECT_EQ(of(s, "kernelbench_v0").total.missed, 2);  // 5e-3 is inside v0's 1e-2
}

// Equivalent mutants (mutant_class.equivalent) and mutants without runs are in no denominator;
// duplicate / non-compiling mutants are not rows of the matrix at all.
TEST(Score, EquivalentNotRunAndNonUniqueMutants) {
  StoreBuilder b("population");
  Kb k = kernelbench_problem(b, "p");
  for (int s = 0; s < 5; ++s) b.run(k.sid, -1, k.in[s], 1e-6);
  long long eq = b.mutant(k.sid, "semantic", "VERIFIED", "unique", /*equivalent=*/true);
  for (int s = 0; s < 5; ++s) b.run(k.sid, eq, k.in[s], 1.0);
  b.mutant(k.sid, "boundary");  // unique, never run (a host-side mutant on the CPU)
  long long dup = b.mutant(k.sid, "arithmetic", "", "duplicate");
  b.run(k.sid, dup, k.in[0], 1.0);
  Scores s = score(load_matrix(b.path()), builtin_protocols());
  EXPECT_EQ(s.population.mutants, 2);
  EXPECT_EQ(s.population.equivalent, 1);
  EXPECT_EQ(s.population.not_run, 1);
  EXPECT_EQ(s.population.witnessed, 0);
}

// Pooled by family and per problem. P1: three arithmetic mutants, v0 misses one (error 1e-3, only
// fp32 sees it). P2: one arithmetic (killed) and two boundary mutants (both missed).
// v0: arithmetic 1/4, boundary 2/2, total 3/6; P1 1/3, P2 2/3.
TEST(Score, MissRatesByFamilyAndProblem) {
  StoreBuilder b("rates");
  Kb p1 = kernelbench_problem(b, "P1"), p2 = kernelbench_problem(b, "P2");
  for (const Kb* k : {&p1, &p2})
    for (int s = 0; s < 5; ++s) b.run(k->sid, -1, k->in[s], 1e-6);
  mutant_on(b, p1, "arithmetic", 0, 1.0);
  mutant_on(b, p1, "arithmetic", 1, 1.0);
  mutant_on(b, p1, "arithmetic", 2, 1e-3);
  mutant_on(b, p2, "arithmetic", 3, 1.0);
  mutant_on(b, p2, "boundary", 3, 1e-3);
  mutant_on(b, p2, "boundary", 4, 2e-3);
  Scores s = score(load_matrix(b.path()), builtin_protocols());
  const auto& v0 = of(s, "kernelbench_v0");
  EXPECT_EQ(v0.by_family.at("arithmetic").missed, 1);
  EXPECT_EQ(v0.by_family.at("arithmetic").witnessed, 4);
  EXPECT_DOUBLE_EQ(v0.by_family.at("boundary").miss_rate(), 1.0);
  EXPECT_DOUBLE_EQ(v0.total.miss_rate(), 0.5);
  EXPECT_EQ(v0.by_problem.at("P1").missed, 1);
  EXPECT_EQ(v0.by_problem.at("P2").missed, 2);
  EXPECT_EQ(of(s, "kernelbench_fp32").total.missed, 0);
  EXPECT_EQ(s.families, (std::vector<std::string>{"arithmetic", "boundary"}));
}

// Which witnessed mutants each protocol misses, by store id (the report's miss patterns). Mutant a
// is killed at 1e-2 on a KernelBench input (every input protocol detects it), b only at 1e-4; c is
// never witnessed and d crashes (quarantined): neither is listed anywhere. No verdicts, so dirigo
// misses both witnessed mutants.
TEST(Score, MissedMutantIdsPerProtocol) {
  StoreBuilder b("missedids");
  Kb k = kernelbench_problem(b, "p");
  for (int s = 0; s < 5; ++s) b.run(k.sid, -1, k.in[s], 1e-6);
  long long a = mutant_on(b, k, "arithmetic", 0, 1.0);
  long long m_b = mutant_on(b, k, "precision", 1, 1e-3);
  mutant_on(b, k, "arithmetic", 0, 1e-6);
  long long d = b.mutant(k.sid, "boundary");
  b.run(k.sid, d, k.in[0], 1.0, "crash");
  Scores s = score(load_matrix(b.path()), builtin_protocols());
  using Ids = std::vector<long long>;
  EXPECT_EQ(s.witnessed_mutants, (Ids{a, m_b}));
  EXPECT_EQ(of(s, "kernelbench_v0").missed_mutants, (Ids{m_b}));
  EXPECT_EQ(of(s, "kernelbench_fp32").missed_mutants, Ids{});
  EXPECT_EQ(of(s, "dirigo").missed_mutants, (Ids{a, m_b}));
  auto j = to_json(s);
  EXPECT_EQ(j["witnessed_mutants"].get<Ids>(), (Ids{a, m_b}));
  for (const auto& p : j["protocols"])
    if (p["name"] == "kernelbench_v0") EXPECT_EQ(p["missed_mutants"].get<Ids>(), (Ids{m_b}));
}

// The witness tolerances are those of the scored protocols: scoring only kernelbench_v0, a mutant
// visible only at 1e-4 is not witnessed.
TEST(Score, WitnessToleranceFollowsProtocols) {
  StoreBuilder b("witnesstol");
  Kb k = kernelbench_problem(b, "p");
  for (int s = 0; s < 5; ++s) b.run(k.sid, -1, k.in[s], 1e-6);
  mutant_on(b, k, "precision", 0, 1e-3);
  auto all = builtin_protocols();
  EXPECT_EQ(score(load_matrix(b.path()), all).population.witnessed, 1);
  EXPECT_EQ(score(load_matrix(b.path()), select_protocols(all, "kernelbench_v0")).population.witnessed, 0);
  EXPECT_EQ(score(load_matrix(b.path()), select_protocols(all, "kernelbench_v0"), {1e-4}).population.witnessed, 1);
}

TEST(Score, Fp32ReferenceProtocol) {
  StoreBuilder b("ref32");
  Kb k = kernelbench_problem(b, "p");
  for (int s = 0; s < 5; ++s) b.run(k.sid, -1, k.in[s], 1e-6);
  long long m = b.mutant(k.sid, "precision");
  for (int s = 0; s < 5; ++s) b.run(k.sid, m, k.in[s], s == 0 ? 1e-3 : 1e-6, "ok", 0, "cpu", 1e-6);
  auto ps = parse_protocols(R"([{"name": "kb32", "tol": 1e-4, "reference": "fp32",
      "inputs": [{"distribution": "kernelbench_randn"}]}, {"name": "kb64", "tol": 1e-4,
      "inputs": [{"distribution": "kernelbench_randn"}]}])");
  Scores s = score(load_matrix(b.path()), ps);
  EXPECT_EQ(of(s, "kb32").total.missed, 1);
  EXPECT_EQ(of(s, "kb64").total.missed, 0);
}

// auto: gpu runs when the substrate has them (the cpu rows of the same mutant are ignored).
TEST(Load, SourcePreference) {
  StoreBuilder b("source");
  Kb k = kernelbench_problem(b, "p");
  long long m = b.mutant(k.sid, "indexing");
  for (const char* src : {"cpu", "gpu"})
    for (int s = 0; s < 5; ++s) {
      b.run(k.sid, -1, k.in[s], 1e-6, "ok", 0, src);
      b.run(k.sid, m, k.in[s], std::string(src) == "cpu" && s == 0 ? 1.0 : 1e-6, "ok", 0, src);
    }
  Matrix gpu = load_matrix(b.path());
  EXPECT_EQ(gpu.problems[0].source, "gpu");
  EXPECT_EQ(score(gpu, builtin_protocols()).population.witnessed, 0);
  LoadOptions cpu;
  cpu.source = "cpu";
  EXPECT_EQ(score(load_matrix(b.path(), cpu), builtin_protocols()).population.witnessed, 1);
  cpu.source = "tpu";
  EXPECT_THROW(load_matrix(b.path(), cpu), std::runtime_error);
}

TEST(Load, TwoSubstratesOfOneProblemStayApart) {
  StoreBuilder b("names");
  long long a = b.substrate("runA/4_x.py"), c = b.substrate("runB/4_x.py");
  b.input(a, "4_x", "kernelbench_randn", 0);
  b.input(c, "4_x", "kernelbench_randn", 0);
  Matrix m = load_matrix(b.path());
  ASSERT_EQ(m.problems.size(), 2u);
  EXPECT_NE(m.problems[0].name, m.problems[1].name);
  EXPECT_EQ(m.problems[0].name.rfind("4_x#", 0), 0u);
}

TEST(Load, ErrorsNameTheFault) {
  EXPECT_THROW(load_matrix("/nonexistent/store.sqlite"), std::runtime_error);
  StoreBuilder empty("empty");
  try {
    load_matrix(empty.path());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no inputs"), std::string::npos) << e.what();
  }
  StoreBuilder bad("badstatus");
  Kb k = kernelbench_problem(bad, "p");
  bad.run(k.sid, -1, k.in[0], 0.0, "exploded");
  try {
    load_matrix(bad.path());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exploded"), std::string::npos) << e.what();
  }
  StoreBuilder old("oldschema");
  old.exec("DROP TABLE runs; CREATE TABLE runs(id INTEGER PRIMARY KEY, mutant_id INTEGER, input_id INTEGER, outcome TEXT)");
  kernelbench_problem(old, "p");
  EXPECT_THROW(load_matrix(old.path()), std::runtime_error);
}

// A matrix cut short by a deadline: a protocol with some of its inputs never run on a mutant has no
// answer on it (unrun, outside its denominator, whatever the runs that did happen show); one that ran
// in full on a mutant it did not detect misses it.
TEST(Score, ProtocolNotRunInFullOnAMutantHasNoAnswerOnIt) {
  StoreBuilder b("unrun");
  Kb k = kernelbench_problem(b, "p");
  long long extra = b.input(k.sid, "p", "large", 10, "hardened");  // an input the mutants may not reach
  for (int s = 0; s < 5; ++s) b.run(k.sid, -1, k.in[s], 1e-6);
  b.run(k.sid, -1, extra, 1e-6);
  long long cut = b.mutant(k.sid, "arithmetic", "");  // killed by `large`, KernelBench draws 2..4 not run
  b.run(k.sid, cut, k.in[0], 1e-6);
  b.run(k.sid, cut, k.in[1], 1e-6);
  b.run(k.sid, cut, extra, 0.5);
  mutant_on(b, k, "arithmetic", 1, 1e-3);  // ran in full; v0 misses it, fp32 detects it
  auto protocols = builtin_protocols();
  protocols.push_back(parse_protocols(R"([{"name": "large_only", "tol": 1e-2,
      "inputs": [{"distribution": "large"}]}])")[0]);
  Scores s = score(load_matrix(b.path()), protocols);
  EXPECT_EQ(s.population.witnessed, 2);
  const auto& v0 = of(s, "kernelbench_v0");
  EXPECT_EQ(v0.total.unrun, 1);      // the cut mutant: draws 2..4 never ran on it
  EXPECT_EQ(v0.total.witnessed, 1);  // only the one it ran in full on
  EXPECT_EQ(v0.total.missed, 1);
  EXPECT_EQ(v0.by_family.at("arithmetic").unrun, 1);
  const auto& fp32 = of(s, "kernelbench_fp32");
  EXPECT_EQ(fp32.total.unrun, 1);
  EXPECT_EQ(fp32.total.missed, 0);
  const auto& large = of(s, "large_only");  // ran in full on the cut mutant (and detects it), not on the other
  EXPECT_EQ(large.total.unrun, 1);
  EXPECT_EQ(large.total.witnessed, 1);
  EXPECT_EQ(large.total.missed, 0);
  EXPECT_EQ(of(s, "dirigo").total.unrun, 0);  // verdict protocols are always complete
}
