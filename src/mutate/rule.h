// Mutation rules: each is a small, named, deterministic rewrite with a family and a one-line
// description. A rule enumerates its sites in a SourceModel (in token order) and each site
// becomes one mutant: a set of byte edits on the unit's source.
//
// Scope: Device rules touch only tokens inside __global__/__device__ function bodies; Host
// rules touch only launch-configuration expressions in host code (e.g. ceil->floor grid).
// Comments and string literals are never touched: they are not significant tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "mutate/source_model.h"

namespace dirigo::mutate {

struct Edit {
  uint32_t begin = 0, end = 0;  // byte range replaced in the unit source
  std::string text;
};

struct Site {
  uint32_t line = 0, col = 0;  // of the first edited token
  std::vector<Edit> edits;
  bool needs_fp16 = false;     // the mutant uses __half: make sure cuda_fp16.h is included
  bool needs_bf16 = false;
};

enum class Scope : uint8_t { Device, Host };

struct Rule {
  std::string name, family, description;
  Scope scope = Scope::Device;
  std::function<void(const SourceModel&, std::vector<Site>&)> find;
};

// The six families, in the paper's order.
const std::vector<std::string>& families();
// Every rule, sorted by family then name; names are unique.
const std::vector<Rule>& all_rules();
const Rule* find_rule(std::string_view name);

// Sites of `rule` in `model` (deterministic order, no two identical mutants).
std::vector<Site> find_sites(const Rule& rule, const SourceModel& model);
// The unit source with the site's edits applied (and the fp16/bf16 header added if needed).
std::string apply_site(const SourceModel& model, const Site& site);

}  // namespace dirigo::mutate
