#include <map>
// One test per mutation rule: a snippet where it applies, compared with the exact expected
// mutant text (the rule's first site), and a near miss where it must not apply (the same
// token in a comment or string, host code, or a context the rule excludes).
#include <set>

#include <gtest/gtest.h>

#include "mutate/rule.h"

namespace dirigo::mutate {
namespace {

std::string K(const std::string& body) {
  return "__global__ void k(const float* x, float* y, int n, int m) {\n" + body + "\n}\n";
}

std::set<std::string>& tested_rules() {
  static std::set<std::string> s;
  return s;
}

bool register_case(const char* rule) { return tested_rules().insert(rule).second; }

void check_rule(const std::string& rule_name, const std::string& applies, const std::string& expected,
                const std::string& miss) {
  const Rule* rule = find_rule(rule_name);
  ASSERT_NE(rule, nullptr) << rule_name;
  SourceModel hit(applies);
  auto sites = find_sites(*rule, hit);
  ASSERT_GE(sites.size(), 1u) << rule_name << " does not apply to\n" << applies;
  EXPECT_EQ(apply_site(hit, sites[0]), expected);
  EXPECT_GT(sites[0].line, 0u);
  SourceModel near(miss);
  auto none = find_sites(*rule, near);
  EXPECT_EQ(none.size(), 0u) << rule_name << " applies to the near miss\n"
                             << miss << "\nfirst mutant:\n"
                             << (none.empty() ? "" : apply_site(near, none[0]));
}

#define RULE_CASE(ident, rule, applies, expected, miss)        \
  [[maybe_unused]] static const bool reg_##ident = register_case(rule); \
  TEST(Rule, ident) { check_rule(rule, applies, expected, miss); }

#include "rule_cases.inc"

TEST(Rules, EveryRuleHasItsOwnTest) {
  std::set<std::string> all;
  for (const auto& r : all_rules()) all.insert(r.name);
  for (const auto& name : all) EXPECT_TRUE(tested_rules().count(name)) << "rule without a test: " << name;
  for (const auto& name : tested_rules()) EXPECT_TRUE(all.count(name)) << "test for an unknown rule: " << name;
}

TEST(Rules, InventoryCoversSixFamiliesAndAtLeast100Rules) {
  EXPECT_GE(all_rules().size(), 100u);
  std::map<std::string, int> per_family;
  for (const auto& r : all_rules()) {
    EXPECT_FALSE(r.description.empty()) << r.name;
    ++per_family[r.family];
  }
  EXPECT_EQ(per_family.size(), 6u);
  for (const auto& f : families()) EXPECT_GE(per_family[f], 10) << f;
}

TEST(Rules, NeverInsideCommentsOrStrings) {
  // Every operator, name and call a rule looks for, only inside trivia and literals.
  std::string src = K(
      "  // a + b - c * d / e % f += -= *= /= << >> & | ^ < <= > >= == != && || ! ? :\n"
      "  /* threadIdx.x blockIdx.y __syncthreads(); __shfl_down_sync(0xffffffff, v, 16) expf(a - b)\n"
      "     fmaxf(a, 0.0f) atomicAdd(p, v) volatile __shared__ float s[32]; 1e-5f 0.7978845608f */\n"
      "  const char* s = \"for (int i = 0; i < n; ++i) if (a < b) x[i] = y[i] + 1;\";\n"
      "  const char c = '+';");
  SourceModel m(src);
  for (const auto& r : all_rules()) EXPECT_EQ(find_sites(r, m).size(), 0u) << r.name;
}

TEST(Rules, HostCodeIsLeftAloneByDeviceRules) {
  std::string src =
      "torch::Tensor f(torch::Tensor x, int n) {\n"
      "  float s = 0.0f;\n  for (int i = 0; i < n; ++i) { if (i > 2 && s >= 0.5f) s += expf(x[i] - 1.0f); }\n"
      "  __syncthreads(); float v = fmaxf(s, 0.0f) * threadIdx.x;\n  return x;\n}\n";
  SourceModel m(src);
  for (const auto& r : all_rules())
    if (r.scope == Scope::Device) EXPECT_EQ(find_sites(r, m).size(), 0u) << r.name;
}

TEST(Rules, SitesAreDeterministicAndDistinct) {
  std::string src = K(
      "  __shared__ float s[256];\n  int t = threadIdx.x;\n  float acc = 0.0f;\n"
      "  for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x) acc += x[i] * x[i];\n"
      "  s[t] = acc;\n  __syncthreads();\n"
      "  for (int st = blockDim.x / 2; st > 0; st >>= 1) { if (t < st) s[t] += s[t + st]; __syncthreads(); }\n"
      "  if (t == 0) atomicAdd(y, s[0]);");
  SourceModel a(src), b(src);
  size_t total = 0;
  for (const auto& r : all_rules()) {
    auto sa = find_sites(r, a), sb = find_sites(r, b);
    ASSERT_EQ(sa.size(), sb.size()) << r.name;
    std::set<std::string> texts;
    for (size_t i = 0; i < sa.size(); ++i) {
      std::string t = apply_site(a, sa[i]);
      EXPECT_EQ(t, apply_site(b, sb[i])) << r.name;
      EXPECT_NE(t, src) << r.name;
      EXPECT_TRUE(texts.insert(t).second) << r.name << " produced the same mutant twice";
    }
    total += sa.size();
  }
  EXPECT_GT(total, 60u);
}

}  // namespace
}  // namespace dirigo::mutate

namespace dirigo::mutate {
namespace {

std::string first_mutant(const char* rule, const std::string& src) {
  SourceModel m(src);
  auto sites = find_sites(*find_rule(rule), m);
  return sites.empty() ? "" : apply_site(m, sites[0]);
}

TEST(Rules, DeltasKeepOperatorPrecedence) {
  // `e >> 1 + 1` would shift by 2: the bound is parenthesized
  EXPECT_EQ(first_mutant("loop-start-plus1", K("  for (int s = blockDim.x >> 1; s > 0; s >>= 1) y[s] = 0.0f;")),
            K("  for (int s = (blockDim.x >> 1) + 1; s > 0; s >>= 1) y[s] = 0.0f;"));
  EXPECT_EQ(first_mutant("index-plus1", K("  y[n >> 1] = 0.0f;")), K("  y[(n >> 1) + 1] = 0.0f;"));
  EXPECT_EQ(first_mutant("loop-bound-minus1", K("  for (int i = 0; i < n & m; ++i) y[i] = 0.0f;")),
            K("  for (int i = 0; i < (n & m) - 1; ++i) y[i] = 0.0f;"));
  EXPECT_EQ(first_mutant("tail-drop", K("  for (int i = 0; i < n + m; ++i) y[i] = 0.0f;")),
            K("  for (int i = 0; i < (n + m) / 4 * 4; ++i) y[i] = 0.0f;"));
}

}  // namespace
}  // namespace dirigo::mutate
