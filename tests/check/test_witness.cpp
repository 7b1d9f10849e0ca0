// Witness documents and the verdict rules for replays (docs/check.md).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include <nlohmann/json.hpp>

#include "check/check.h"
#include "ir/eval.h"

using namespace dirigo;
using nlohmann::json;

namespace {
std::string example(const char* name) { return std::string(DIRIGO_SOURCE_DIR) + "/examples/running_example/" + name; }

const check::Report& buggy_report() {
  static check::Report r = [] {
    check::Options opt;
    opt.budget_s = 60;
    return check::check_path(example("bundle-buggy"), opt);
  }();
  return r;
}

check::Replay replayed(bool exceeds) {
  return check::parse_replay(json{{"format", "dirigo-replay"}, {"version", 1}, {"status", "replayed"},
                                  {"device", "cpu"}, {"evidence", "replay-cpu"}, {"reference", 1.0},
                                  {"candidate", exceeds ? 3.0 : 1.001}, {"difference", exceeds ? 2.0 : 0.001},
                                  {"allowed", 0.02}, {"exceeds", exceeds}, {"carried_back", nullptr}}
                                 .dump());
}
}  // namespace

TEST(Witness, DocumentNamesLocationAndEveryLeaf) {
  const auto& r = buggy_report();
  ASSERT_EQ(r.outcome, check::Outcome::Bug) << r.reason;
  check::WitnessSource src{"/p/ref.py", "/p/new.py", "", 42, std::nullopt};
  json w = json::parse(check::witness_json(r, src));
  EXPECT_EQ(w["format"], "dirigo-witness");
  EXPECT_EQ(w["version"], 1);
  EXPECT_EQ(w["ref"], "/p/ref.py");
  EXPECT_TRUE(w["bundle"].is_null());
  const auto& l = r.locations[*r.first_differ];
  EXPECT_EQ(w["location"].get<std::vector<int64_t>>(), l.loc.index);
  EXPECT_EQ(w["leaves"].size(), l.leaves.size());
  ASSERT_FALSE(l.leaves.empty());
  for (const auto& leaf : w["leaves"]) {
    std::string kind = leaf["kind"];
    EXPECT_TRUE(kind == "input" || kind == "parameter" || kind == "buffer" || kind == "trimmed") << leaf.dump();
    if (kind == "trimmed") {  // enough to re-find the prefix result: op, tensor, its shape
      EXPECT_GE(leaf["op"].get<int64_t>(), 0);
      EXPECT_EQ(leaf["index"].size(), leaf["shape"].size());
      EXPECT_FALSE(leaf["tensor"].get<std::string>().empty());
    }
  }
  // The fp32 values in the document are those the BUG was judged by.
  EXPECT_DOUBLE_EQ(w["symbolic"]["reference"].get<double>(), l.ref_value_f32);
}

TEST(Witness, NoDifferNoDocument) {
  check::Report r;
  r.outcome = check::Outcome::Checked;
  EXPECT_EQ(check::witness_json(r), "");
}

TEST(Replay, ReproducedWitnessIsBugBackedByTheReplay) {
  check::Report r = buggy_report();
  check::apply_replay(r, replayed(true));
  EXPECT_EQ(r.outcome, check::Outcome::Bug);
  EXPECT_EQ(r.evidence, "replay-cpu");
  EXPECT_NE(r.reason.find("real programs"), std::string::npos) << r.reason;
  EXPECT_NE(check::to_text(r).find("replayed on the CPU"), std::string::npos);
}

TEST(Replay, WitnessThatDoesNotReplayIsSuspect) {
  check::Report r = buggy_report();
  check::apply_replay(r, replayed(false));
  EXPECT_EQ(r.outcome, check::Outcome::Suspect);
  EXPECT_EQ(r.evidence, "");
  EXPECT_EQ(check::exit_code(r.outcome), 2);
}

TEST(Replay, ImpossibleReplayKeepsTheFp32EvidenceLabelled) {
  check::Report r = buggy_report();
  check::apply_replay(r, check::parse_replay(R"({"format":"dirigo-replay","version":1,"status":"unsupported","message":"needs a GPU"})"));
  EXPECT_EQ(r.outcome, check::Outcome::Bug);
  EXPECT_EQ(r.evidence, "fp32-evaluation");
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("needs a GPU"), std::string::npos);
}

TEST(Replay, MalformedAnswerIsAnErrorNamingIt) {
  auto rp = check::parse_replay("{\"format\": \"dirigo-replay\", \"status\": \"replayed\"}");
  EXPECT_EQ(rp.status, "error");
  EXPECT_NE(rp.message.find("malformed"), std::string::npos);
  EXPECT_EQ(check::parse_replay("not json").status, "error");
}

// The running example trims its transposed convolution (both programs start with it). A BUG's
// witness must be over program inputs: one over the trimmed result may be out of its reach.
TEST(Witness, BugWitnessIsOverProgramInputsNotTrimmedResults) {
  const auto& r = buggy_report();
  ASSERT_EQ(r.outcome, check::Outcome::Bug) << r.reason;
  ASSERT_GT(r.prefix_trimmed, 0u);
  const auto& l = r.locations[*r.first_differ];
  ASSERT_FALSE(l.leaves.empty());
  for (const auto& leaf : l.leaves) EXPECT_NE(leaf.kind, "trimmed") << leaf.input;
}

// A softmax share exp(20x) / (exp(20x) + exp(20y)) against 0: at the solver's corner x = 10, y = -10
// fp64 shows the difference and fp32 overflows (exp(200)). Refining in fp32 too finds a point where
// both precisions show it and agree (pair 089: BUG with fp32 evidence instead of SUSPECT).
TEST(Witness, RefinementInFp32TooLeavesTheOverflowingCorner) {
  ir::Context cx;
  int32_t t = cx.tensor("refine_softmax_x");
  ir::Expr x = cx.elem(t, 0), y = cx.elem(t, 1);
  ir::Expr ex = cx.call(ir::Fn::Exp, cx.mul(cx.real_const(20), x));
  ir::Expr ey = cx.call(ir::Fn::Exp, cx.mul(cx.real_const(20), y));
  ir::Expr share = cx.mul(ex, cx.recip(cx.add(ex, ey)));
  ir::Expr zero = cx.real_const(0);
  smt::Tolerance tol{1e-2, 1e-2};
  std::vector<ir::Expr> leaves{x, y};
  std::vector<double> corner{10, -10};
  auto at = [&](const std::vector<double>& v, ir::Precision p) {
    ir::Env e;
    e.elem = [&](int32_t, int64_t i, ir::Sort) { return ir::Value::of_real(v[size_t(i)]); };
    return ir::Evaluator(e, p).real(share);
  };
  ASSERT_FALSE(std::isfinite(at(corner, ir::Precision::F32)));  // inf * recip(inf + 0)
  // fp64 alone: the corner already differs beyond tolerance, nothing to refine
  EXPECT_EQ(check::refine_witness(share, zero, leaves, corner, tol, 1, check::kRefineWork), corner);
  auto v = check::refine_witness(share, zero, leaves, corner, tol, 1, check::kRefineWork, /*also_f32=*/true);
  double a32 = at(v, ir::Precision::F32), a64 = at(v, ir::Precision::F64);
  ASSERT_TRUE(std::isfinite(a32));
  EXPECT_GT(a32, tol.atol);
  EXPECT_LT(std::fabs(a32 - a64), a64 / 2);
  for (double c : v) EXPECT_LE(std::fabs(c), tol.bound);
}

// Refinement is bounded by work, not by the clock: the same start and seed give the same point
// whether or not the machine is busy (here: a thread spinning on every other core while it runs),
// and no work leaves the start as it was.
TEST(Witness, RefinementIsTheSameUnderACpuHog) {
  ir::Context cx;
  int32_t t = cx.tensor("refine_hog_x");
  std::vector<ir::Expr> leaves;
  ir::Expr sum = cx.real_const(0);
  for (int i = 0; i < 16; ++i) {
    leaves.push_back(cx.elem(t, i));
    sum = cx.add(sum, cx.mul(cx.real_const(i + 1), cx.call(ir::Fn::Tanh, leaves.back())));
  }
  ir::Expr shifted = cx.add(sum, cx.real_const(0.5));  // 0.5 apart: beyond tolerance only where |sum| < 2
  smt::Tolerance tol{0.4, 0.05};
  std::vector<double> start(16, 0.0);  // sum = 0: beyond tolerance already, nothing to refine
  std::vector<double> start2(16, 3.0);  // |sum| ~ 135: rtol hides 0.5, refinement must move
  // a work limit that binds (40 points): where a clock would cut the search, work cuts it the same way
  uint64_t work = 40 * (ir::dag_size(sum) + ir::dag_size(shifted) + 1);
  auto quiet = check::refine_witness(sum, shifted, leaves, start2, tol, 7, work);
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency()); ++i)
    hogs.emplace_back([&] { volatile double x = 1; while (!stop) x = x * 1.0000001 + 1e-9; });
  auto busy = check::refine_witness(sum, shifted, leaves, start2, tol, 7, work);
  stop = true;
  for (auto& h : hogs) h.join();
  EXPECT_EQ(quiet, busy);
  EXPECT_NE(quiet, start2);
  EXPECT_EQ(check::refine_witness(sum, shifted, leaves, start2, tol, 7, 0), start2);
  EXPECT_EQ(check::refine_witness(sum, shifted, leaves, start, tol, 7, check::kRefineWork), start);
}
