// Reading the option specs (format: options/README.md): a refusal names the spec, the option and the key.
#include "cli/option_spec.h"

#include <algorithm>

namespace dirigo::cli {
namespace {

using nlohmann::json;

const std::vector<std::string> kSpecKeys = {"options", "subcommands", "groups"};
const std::vector<std::string> kSubcommandKeys = {"name", "help", "options"};
const std::vector<std::string> kOptionKeys = {"names", "member", "help", "required", "expected", "check", "delimiter"};
const std::vector<std::string> kGroupUseKeys = {"group", "member", "help"};

std::string joined(const std::vector<std::string>& words) {
  std::string all;
  for (const auto& w : words) all += (all.empty() ? "" : ", ") + w;
  return all;
}

void only_keys(const json& j, const std::vector<std::string>& known, const std::string& where) {
  if (!j.is_object()) throw std::invalid_argument(where + ": not a JSON object");
  for (const auto& [key, value] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw std::invalid_argument(where + ": unknown key '" + key + "' (known: " + joined(known) + ")");
}

// j[key] as a T; the message names the key and says what it should have been.
template <class T>
T value(const json& j, const char* key, const std::string& where) {
  try {
    return j.at(key).get<T>();
  } catch (const json::exception& e) {
    std::string why = e.what();
    throw std::invalid_argument(where + ": '" + key + "': " + why.substr(why.find("] ") + 2));
  }
}

OptionSpec parse_option(const json& j, const std::string& where) {
  OptionSpec o;
  o.names = value<std::string>(j, "names", where);
  std::string at = where + ": " + o.names;
  only_keys(j, kOptionKeys, at);
  o.member = value<std::string>(j, "member", at);
  if (j.contains("help")) o.help = value<std::string>(j, "help", at);
  if (j.contains("required")) o.required = value<bool>(j, "required", at);
  if (j.contains("check")) o.check = value<std::vector<std::string>>(j, "check", at);
  if (j.contains("expected")) {
    auto n = value<std::vector<int>>(j, "expected", at);
    if (n.size() != 2 || n[0] < 0 || n[1] < n[0])
      throw std::invalid_argument(at + ": 'expected' must be [at least, at most], 0 <= at least <= at most");
    o.expected = {n[0], n[1]};
  }
  if (j.contains("delimiter")) {
    auto d = value<std::string>(j, "delimiter", at);
    if (d.size() != 1) throw std::invalid_argument(at + ": 'delimiter' must be one character, not \"" + d + "\"");
    o.delimiter = d[0];
  }
  return o;
}

std::vector<std::string> keys_of(const json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}

// The options of a {"group": …} entry: the group's, their members inside the entry's "member" when it
// names one, and their help taken from the entry's "help" (by an option's names) where it gives it.
std::vector<OptionSpec> group_options(const json& use, const json& groups, const std::string& where) {
  only_keys(use, kGroupUseKeys, where);
  auto name = value<std::string>(use, "group", where);
  std::string at = where + " group " + name;
  if (!groups.contains(name)) throw std::invalid_argument(at + ": no such group (there are: " + joined(keys_of(groups)) + ")");
  if (!groups[name].is_array()) throw std::invalid_argument(at + ": a group is a JSON array of options");
  std::vector<OptionSpec> options;
  for (const auto& j : groups[name]) options.push_back(parse_option(j, at));
  if (use.contains("member")) {
    auto outer = value<std::string>(use, "member", at);
    for (auto& o : options) o.member = outer + "." + o.member;
  }
  if (use.contains("help"))
    for (const auto& entry : value<std::map<std::string, std::string>>(use, "help", at)) {
      const std::string& names = entry.first;  // not a structured binding: clang before 16 cannot capture one
      auto it = std::find_if(options.begin(), options.end(), [&](const OptionSpec& o) { return o.names == names; });
      if (it == options.end()) throw std::invalid_argument(at + ": help for " + names + ", which the group does not have");
      it->help = entry.second;
    }
  return options;
}

std::vector<OptionSpec> parse_options(const json& list, const json& groups, const std::string& where) {
  if (!list.is_array()) throw std::invalid_argument(where + ": 'options' must be a JSON array");
  std::vector<OptionSpec> options;
  for (const auto& j : list) {
    auto more = j.is_object() && j.contains("group") ? group_options(j, groups, where)
                                                     : std::vector<OptionSpec>{parse_option(j, where)};
    options.insert(options.end(), more.begin(), more.end());
  }
  for (const auto& o : options)
    if (o.help.empty()) throw std::invalid_argument(where + ": " + o.names + " has no help");
  return options;
}

json parse_json(const std::string& name, std::string_view text) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw std::invalid_argument("option spec '" + name + "': not JSON: " + e.what());
  }
}

Spec spec_from(const std::string& name, const json& j, const json& shared_groups) {
  std::string where = "option spec '" + name + "'";
  only_keys(j, kSpecKeys, where);
  json groups = shared_groups.is_object() ? shared_groups : json::object();
  if (j.contains("groups")) {
    if (!j["groups"].is_object()) throw std::invalid_argument(where + ": 'groups' must be a JSON object");
    for (const auto& [group, options] : j["groups"].items()) groups[group] = options;
  }
  Spec spec{name, "", {}, {}};
  if (j.contains("options")) spec.options = parse_options(j["options"], groups, where);
  if (j.contains("subcommands")) {
    for (const auto& sub : value<std::vector<json>>(j, "subcommands", where)) {
      Spec s{name + " " + value<std::string>(sub, "name", where + " subcommand"), "", {}, {}};
      std::string at = "option spec '" + s.name + "'";
      only_keys(sub, kSubcommandKeys, at);
      s.help = value<std::string>(sub, "help", at);
      if (sub.contains("options")) s.options = parse_options(sub["options"], groups, at);
      spec.subcommands.push_back(std::move(s));
    }
  }
  return spec;
}

}  // namespace

Spec parse_spec(const std::string& name, std::string_view text, const nlohmann::json& shared_groups) {
  return spec_from(name, parse_json(name, text), shared_groups);
}

std::map<std::string, Spec, std::less<>> parse_specs(const std::vector<std::pair<std::string, std::string_view>>& texts) {
  json shared;
  for (const auto& [name, text] : texts) {
    if (name != "shared") continue;
    auto j = parse_json(name, text);
    only_keys(j, {"groups"}, "option spec 'shared'");
    shared = j["groups"];
  }
  std::map<std::string, Spec, std::less<>> specs;
  for (const auto& [name, text] : texts)
    if (name != "shared") specs.emplace(name, parse_spec(name, text, shared));
  return specs;
}

std::invalid_argument unknown_member(const Spec& spec, const OptionSpec& o, const std::vector<std::string>& members) {
  return std::invalid_argument("option spec '" + spec.name + "': " + o.names + " fills member '" + o.member +
                               "', which is not one of " + joined(members));
}

CLI::Option* finish_option(CLI::Option* opt, const OptionSpec& o) {
  if (o.required) opt->required();
  if (o.expected) opt->expected(o.expected->first, o.expected->second);
  if (!o.check.empty()) opt->check(CLI::IsMember(o.check));
  if (o.delimiter) opt->delimiter(*o.delimiter);
  return opt;
}

}  // namespace dirigo::cli
