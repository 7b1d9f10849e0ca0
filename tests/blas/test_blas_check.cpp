// cuBLAS calls through the whole check: a reference `x @ w` (aten::mm) against candidates that compute it
// with cublasSgemm, written as a tracer would write them (library ops over the candidate's tensors).
// The row-major trick is VERIFIED, the row/column-major confusion is a BUG with a confirmed witness,
// a leading dimension that reaches past the tensor is a global-out-of-bounds BUG, and an unmodeled
// cuBLAS function is UNSUPPORTED naming it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "check/check.h"

using namespace dirigo;
using nlohmann::json;

namespace {

constexpr int M = 3, K = 4, N = 5;

json program(const std::string& name, const std::string& role, json ops) {
  json storages = json::array(), tensors = json::array();
  int shapes[3][2] = {{M, K}, {K, N}, {M, N}};
  for (int i = 0; i < 3; ++i) {
    storages.push_back({{"id", "s" + std::to_string(i)}, {"nbytes", shapes[i][0] * shapes[i][1] * 4}});
    tensors.push_back({{"id", "t" + std::to_string(i)}, {"storage", "s" + std::to_string(i)},
                       {"shape", {shapes[i][0], shapes[i][1]}}, {"strides", {shapes[i][1], 1}}, {"dtype", "float32"}});
  }
  return {{"name", name}, {"role", role}, {"storages", storages}, {"tensors", tensors},
          {"inputs", {{{"name", "x"}, {"tensor", "t0"}}, {{"name", "w"}, {"tensor", "t1"}}}},
          {"outputs", {{{"name", "out0"}, {"tensor", "t2"}}}}, {"ops", ops}};
}

json sgemm(const char* ta, const char* tb, int m, int n, int k, const char* a, int lda, const char* b, int ldb, int ldc,
           const char* name = "cublasSgemm_v2") {
  return {{"kind", "library"}, {"library", "cublas"}, {"name", name},
          {"args", {{"pointer_mode", "host"}, {"math_mode", 0}, {"transa", ta}, {"transb", tb}, {"m", m}, {"n", n},
                    {"k", k}, {"alpha", 1.0}, {"A", {{"tensor", a}, {"byte_offset", 0}}}, {"lda", lda},
                    {"B", {{"tensor", b}, {"byte_offset", 0}}}, {"ldb", ldb}, {"beta", 0.0},
                    {"C", {{"tensor", "t2"}, {"byte_offset", 0}}}, {"ldc", ldc}}},
          {"writes", {"t2"}}};
}

check::Report check_candidate(const std::string& tag, json cand_op) {
  json mm = {{"kind", "aten"}, {"name", "aten::mm"}, {"overload", "default"},
             {"schema", "mm(Tensor self, Tensor mat2) -> Tensor"}, {"args", {{{"tensor", "t0"}}, {{"tensor", "t1"}}}},
             {"kwargs", json::object()}, {"outputs", {"t2"}}, {"mutates", json::array()}, {"from", "python"}};
  json manifest = {{"format", "dirigo-bundle"}, {"version", 1}, {"modules", json::array()},
                   // json::array: a one-element brace list is the element itself under clang (CWG 2137)
                   {"programs", {program("ref", "reference", json::array({mm})),
                                 program("new", "candidate", json::array({cand_op}))}},
                   {"match", {{"inputs", json::array({json::array({"ref.x", "new.x"}), json::array({"ref.w", "new.w"})})},
                              {"outputs", json::array({json::array({"ref.out0", "new.out0"})})}}}};
  auto dir = std::filesystem::temp_directory_path() / ("dirigo-blas-check-" + tag);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "manifest.json") << manifest.dump(1);
  check::Options opt;
  opt.full = true;
  opt.budget_s = 60;
  return check::check_path(dir.string(), opt);
}

}  // namespace

TEST(BlasCheck, RowMajorTrickIsVerified) {
  // row-major out = x w  <=>  column-major out^T (N x M) = w^T x^T, w^T being w's buffer read as N x K
  auto r = check_candidate("ok", sgemm("N", "N", N, M, K, "t1", N, "t0", K, N));
  ASSERT_EQ(r.outcome, check::Outcome::Verified) << r.reason;
  EXPECT_EQ(r.total_locations, M * N);
}

TEST(BlasCheck, RowColumnConfusionIsABugWithAConfirmedWitness) {
  // treats the row-major x and w as column-major: every access in bounds, values wrong
  auto r = check_candidate("rowcol", sgemm("N", "N", M, N, K, "t0", M, "t1", K, M));
  ASSERT_EQ(r.outcome, check::Outcome::Bug) << r.reason;
  EXPECT_EQ(r.evidence, "fp32-evaluation");
  ASSERT_TRUE(r.first_differ.has_value());
  EXPECT_TRUE(r.locations[*r.first_differ].confirmed_f32);
}

TEST(BlasCheck, LeadingDimensionPastTheTensorIsGlobalOutOfBounds) {
  auto r = check_candidate("oob", sgemm("N", "N", N, M, K, "t1", N + 3, "t0", K, N));
  ASSERT_EQ(r.outcome, check::Outcome::Bug) << r.reason;
  EXPECT_EQ(r.evidence, "execute-safety");
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, "global-out-of-bounds");
  EXPECT_NE(r.findings[0].kernel.find("cublasSgemm_v2"), std::string::npos);
  EXPECT_NE(r.findings[0].message.find("argument A"), std::string::npos) << r.findings[0].message;
}

TEST(BlasCheck, UnmodeledFunctionIsUnsupportedNamingIt) {
  json op = {{"kind", "library"}, {"library", "cublas"}, {"name", "cublasDgemm_v2"},
             {"args", {{"modeled", false}}}, {"writes", json::array()}};
  auto r = check_candidate("unmodeled", op);
  ASSERT_EQ(r.outcome, check::Outcome::Unsupported);
  EXPECT_NE(r.reason.find("cublasDgemm_v2 is not modeled"), std::string::npos) << r.reason;
}
