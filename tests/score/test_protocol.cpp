#include <gtest/gtest.h>

#include "score/protocol.h"

using namespace dirigo::score;

namespace {
std::string error_of(const std::string& json) {
  try {
    parse_protocols(json);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Protocol, Builtins) {
  auto ps = builtin_protocols();
  std::vector<std::string> names;
  for (const auto& p : ps) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"kernelbench_v0", "kernelbench_fp32", "hardened_inputs", "hardened",
                                             "fuzz", "kernelbench_verified", "dirigo", "dirigo_suspect"}));
  EXPECT_DOUBLE_EQ(ps[0].tol, 1e-2);
  EXPECT_DOUBLE_EQ(ps[1].tol, 1e-4);
  ASSERT_EQ(ps[0].inputs.size(), 1u);
  EXPECT_EQ(ps[0].inputs[0].draws, 5);
  EXPECT_TRUE(ps[0].gate);
  EXPECT_DOUBLE_EQ(ps[5].tol, 1e-3);
  EXPECT_TRUE(ps[5].fp32_reference);
  EXPECT_EQ(ps[5].inputs.size(), 4u);
  EXPECT_TRUE(ps[6].dirigo);
  EXPECT_EQ(ps[6].verdicts, std::vector<std::string>{"BUG"});
}

TEST(Protocol, AtolEqualRtolAccepted) {
  auto ps = parse_protocols(R"([{"name": "a", "atol": 1e-3, "rtol": 1e-3, "inputs": [{"family": "fuzz"}]}])");
  EXPECT_DOUBLE_EQ(ps[0].tol, 1e-3);
}

TEST(Protocol, ErrorsNameTheFault) {
  EXPECT_NE(error_of(R"([{"name": "a", "atol": 1e-3, "rtol": 1e-2, "inputs": [{"family": "fuzz"}]}])").find("atol != rtol"),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"name": "a", "tol": 1e-3, "inputs": [{"family": "fuzz", "draw": 3}]}])").find("'draw'"),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"name": "a", "inputs": [{"family": "fuzz"}]}])").find("no tolerance"), std::string::npos);
  EXPECT_NE(error_of(R"([{"name": "a", "tol": 1e-3, "inputs": [{"draws": 3}]}])").find("distribution or a family"),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"name": "a", "verdicts": ["BUG"]}, {"name": "a", "verdicts": ["BUG"]}])").find("twice"),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"name": "a", "verdicts": ["BUG"], "tol": 1e-2}])").find("verdict protocol"), std::string::npos);
  EXPECT_NE(error_of(R"([{"name": "a", "tol": -1, "inputs": [{"family": "fuzz"}]}])").find(">= 0"), std::string::npos);
  EXPECT_NE(error_of(R"([{"name": "a", "tol": "x", "inputs": [{"family": "fuzz"}]}])").find("wrong type"),
            std::string::npos);
  EXPECT_NE(error_of("{not json").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"name": "a"})").find("array"), std::string::npos);
  EXPECT_THROW(select_protocols(builtin_protocols(), "kernelbench_v0,nope"), std::runtime_error);
}

TEST(Protocol, SelectorPrefixAndFamily) {
  InputSelector prefix{"kernelbench_*", "", 0};
  EXPECT_TRUE(prefix.matches(Input{"x", "kernelbench_randn", "kernelbench", 0}));
  EXPECT_FALSE(prefix.matches(Input{"x", "large", "hardened", 0}));
  InputSelector fam{"", "fuzz", 0};
  EXPECT_TRUE(fam.matches(Input{"fuzz/1", "large", "fuzz", 101}));
  EXPECT_FALSE(fam.matches(Input{"large/0", "large", "hardened", 0}));
  InputSelector both{"large", "hardened", 0};
  EXPECT_FALSE(both.matches(Input{"fuzz/1", "large", "fuzz", 101}));
}

TEST(Protocol, SelectPreservesOrder) {
  auto ps = select_protocols(builtin_protocols(), "dirigo,kernelbench_v0");
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].name, "dirigo");
  EXPECT_EQ(ps[1].name, "kernelbench_v0");
}

#include "score/options.h"

TEST(Options, Budget) {
  EXPECT_EQ(parse_budget("3"), (std::pair<int, int>{3, 3}));
  EXPECT_EQ(parse_budget("1..5"), (std::pair<int, int>{1, 5}));
  for (const char* bad : {"0", "5..1", "1..", "x", "2.5", "1...3", ""}) EXPECT_THROW(parse_budget(bad), std::runtime_error) << bad;
}
