// The option specs of src/cli/options, embedded at build time (embed_specs.cmake): the binary reads
// no spec file when it runs.
#include "cli/option_spec.h"

namespace dirigo::cli {

const Spec& option_spec(std::string_view command) {
  static const auto specs = parse_specs({
#include "option_specs.inc"
  });
  auto it = specs.find(command);
  if (it == specs.end())
    throw std::invalid_argument("no option spec for '" + std::string(command) + "' (src/cli/options/" +
                                std::string(command) + ".json)");
  return it->second;
}

}  // namespace dirigo::cli
