// A command's options are data: a JSON spec (src/cli/options/<command>.json, format in the README there)
// that add_spec_options declares on the command, each option bound by name to a member of the command's
// options struct. A struct names the members options may fill once, with DIRIGO_CLI_MEMBERS.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace dirigo::cli {

struct OptionSpec {
  std::string names;   // as CLI11 takes them: "--jobs,-j", "!--no-trim-prefix", a positional "inputs"
  std::string member;  // the member it fills; "a.b": member b of the struct that member a holds
  std::string help;
  bool required = false;
  std::optional<std::pair<int, int>> expected;  // how many values: at least, at most
  std::vector<std::string> check;               // the values allowed; empty: any
  std::optional<char> delimiter;                // one argument splits at it into several values
};

struct Spec {
  std::string name;  // the command it is for; a subcommand's, after its command's ("bundle show")
  std::string help;  // a subcommand's
  std::vector<OptionSpec> options;
  std::vector<Spec> subcommands;
};

// The spec `name` written as `text`; its {"group": …} entries are filled from its own "groups" and then
// from `shared_groups`. Throws std::invalid_argument naming the spec and the entry that is wrong.
Spec parse_spec(const std::string& name, std::string_view text, const nlohmann::json& shared_groups = {});

// The specs written as `texts` (name, JSON), those of "shared" giving every other its shared groups.
std::map<std::string, Spec, std::less<>> parse_specs(const std::vector<std::pair<std::string, std::string_view>>& texts);

// The spec of `command` embedded from src/cli/options (its shared groups from shared.json there).
const Spec& option_spec(std::string_view command);

// The error for an option of `spec` whose member is none of `members`, those its struct lists.
std::invalid_argument unknown_member(const Spec& spec, const OptionSpec& o, const std::vector<std::string>& members);

// Applies what `o` asks of an option beyond its names and help (required, expected, check, delimiter).
CLI::Option* finish_option(CLI::Option* opt, const OptionSpec& o);

// A bool member is a flag; any other takes a value of its type (which --help names).
template <class T>
CLI::Option* declare_member(CLI::App& app, T& target, const std::string& member, const OptionSpec& o) {
  if constexpr (std::is_same_v<T, bool>) {
    if (o.expected || !o.check.empty() || o.delimiter)
      throw std::invalid_argument(o.names + " fills the bool " + member +
                                  ", a flag: it takes no expected, check or delimiter");
    return finish_option(app.add_flag(o.names, target, o.help), o);
  } else {
    return finish_option(app.add_option(o.names, target, o.help), o);
  }
}

template <class S>
class Members;

// A struct whose members options fill: it declares them with DIRIGO_CLI_MEMBERS.
template <class T>
concept HasMembers = std::is_class_v<T> && requires(Members<T>& m) { cli_members(m); };

// The members of S that options may fill, by name; a member whose type has members of its own lends
// them as "member.inner".
template <class S>
class Members {
 public:
  using Declare = std::function<CLI::Option*(CLI::App&, S&, const OptionSpec&)>;

  template <class T>
  void add(const std::string& name, T S::*member) {
    if constexpr (HasMembers<T>) {
      Members<T> inner;
      cli_members(inner);
      for (const auto& entry : inner.table()) {
        auto declare = entry.second;  // not a structured binding: clang before 16 cannot capture one
        table_[name + "." + entry.first] = [member, declare](CLI::App& app, S& s, const OptionSpec& o) {
          return declare(app, s.*member, o);
        };
      }
    } else {
      table_[name] = [member, name](CLI::App& app, S& s, const OptionSpec& o) {
        return declare_member(app, s.*member, name, o);
      };
    }
  }
  const std::map<std::string, Declare>& table() const { return table_; }

 private:
  std::map<std::string, Declare> table_;
};

// Declares the options of `spec` (and its subcommands, with theirs) on `app`, each filling its member of
// `target`. Throws std::invalid_argument for an option whose member S does not have.
template <class S>
void add_spec_options(CLI::App& app, const Spec& spec, S& target) {
  Members<S> members;
  cli_members(members);
  for (const auto& o : spec.options) {
    auto it = members.table().find(o.member);
    if (it == members.table().end()) {
      std::vector<std::string> names;
      for (const auto& entry : members.table()) names.push_back(entry.first);
      throw unknown_member(spec, o, names);
    }
    try {
      it->second(app, target, o);
    } catch (const std::exception& e) {  // also CLI11's, for names it cannot take
      throw std::invalid_argument("option spec '" + spec.name + "': " + e.what());
    }
  }
  for (const auto& sub : spec.subcommands)
    add_spec_options(*app.add_subcommand(sub.name.substr(sub.name.rfind(' ') + 1), sub.help), sub, target);
}

}  // namespace dirigo::cli

// The members of `Type` that options may fill, each named as written. It reuses nlohmann's
// one-macro-per-argument expansion, the one NLOHMANN_DEFINE_TYPE_INTRUSIVE is made of.
#define DIRIGO_CLI_MEMBER(m) members.add(#m, &Self::m);
#define DIRIGO_CLI_MEMBERS(Type, ...)                                                  \
  [[maybe_unused]] inline void cli_members(::dirigo::cli::Members<Type>& members) {   \
    using Self = Type;                                                                 \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(DIRIGO_CLI_MEMBER, __VA_ARGS__))          \
  }
