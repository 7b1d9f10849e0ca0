// add_spec_options (cli/option_spec.h): a spec's options fill the members they name, groups fill a
// struct inside, and a spec that names a member the struct lacks, or holds a wrong value, is refused
// when the command is set up, by name.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/option_spec.h"

namespace {

using dirigo::cli::add_spec_options;
using dirigo::cli::parse_spec;
using dirigo::cli::Spec;

struct Mode {
  std::string mode = "a";
};
DIRIGO_CLI_MEMBERS(Mode, mode)

struct Opts {
  int x = 0;
  bool verbose = false;
  std::vector<std::string> files;
  Mode inner;
};
DIRIGO_CLI_MEMBERS(Opts, x, verbose, files, inner)

// `args` parsed by an app with the options of `spec` declared on it; what they filled.
Opts parsed(const Spec& spec, std::vector<std::string> args) {
  Opts o;
  CLI::App app;
  add_spec_options(app, spec, o);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  return o;
}

// What `setup` refused with; empty when it did not.
std::string refusal(const std::function<void()>& setup) {
  try {
    setup();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

const char* kShared = R"({"groups": {"mode": [
  {"names": "--mode", "member": "mode", "check": ["a", "b"], "help": "a or b"}]}})";

TEST(OptionSpec, AnOptionFillsItsMember) {
  auto spec = parse_spec("t", R"({"options": [{"names": "--x", "member": "x", "help": "a number"},
                                              {"names": "-v,--verbose", "member": "verbose", "help": "more"}]})");
  Opts o = parsed(spec, {"--x", "3", "-v"});
  EXPECT_EQ(o.x, 3);
  EXPECT_TRUE(o.verbose);
}

TEST(OptionSpec, AGroupFillsTheStructItsEntryNames) {
  auto specs = dirigo::cli::parse_specs({{"shared", kShared}, {"t", R"({"options": [{"group": "mode", "member": "inner"},
    {"names": "files", "member": "files", "expected": [1, 2], "required": true, "help": "one or two"}]})"}});
  const Spec& spec = specs.at("t");
  EXPECT_EQ(parsed(spec, {"--mode", "b", "f"}).inner.mode, "b");
  EXPECT_EQ(parsed(spec, {"f", "g"}).files, (std::vector<std::string>{"f", "g"}));
  EXPECT_THROW(parsed(spec, {"--mode", "c", "f"}), CLI::ValidationError);
  EXPECT_THROW(parsed(spec, {"--mode", "a"}), CLI::RequiredError);
}

TEST(OptionSpec, AMemberTheStructLacksIsRefusedByName) {
  auto spec = parse_spec("t", R"({"options": [{"names": "--y", "member": "why", "help": "h"}]})");
  Opts o;
  CLI::App app;
  std::string why = refusal([&] { add_spec_options(app, spec, o); });
  EXPECT_NE(why.find("option spec 't': --y fills member 'why'"), std::string::npos) << why;
  EXPECT_NE(why.find("inner.mode"), std::string::npos) << why;  // what it could have named
}

TEST(OptionSpec, AWrongValueIsRefusedNamingTheOptionAndTheKey) {
  auto refused = [](const char* text) { return refusal([&] { parse_spec("t", text); }); };
  EXPECT_NE(refused(R"({"options": [{"names": "--x", "member": "x", "help": "h", "required": "yes"}]})")
                .find("option spec 't': --x: 'required': type must be boolean"),
            std::string::npos);
  EXPECT_NE(refused(R"({"options": [{"names": "--x", "member": "x", "help": "h", "requird": true}]})")
                .find("--x: unknown key 'requird'"),
            std::string::npos);
  EXPECT_NE(refused(R"({"options": [{"names": "--x", "member": "x"}]})").find("--x has no help"), std::string::npos);
  EXPECT_NE(refused(R"({"options": [{"group": "nope"}]})").find("group nope: no such group"), std::string::npos);
  EXPECT_NE(refused("{").find("option spec 't': not JSON"), std::string::npos);
}

TEST(OptionSpec, AFlagTakesNoValueChecks) {
  auto spec = parse_spec("t", R"({"options": [{"names": "--verbose", "member": "verbose", "help": "h", "check": ["a"]}]})");
  std::string why = refusal([&] { parsed(spec, {}); });
  EXPECT_NE(why.find("option spec 't': --verbose fills the bool verbose, a flag"), std::string::npos) << why;
}

}  // namespace
