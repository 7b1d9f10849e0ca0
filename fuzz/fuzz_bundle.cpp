// libFuzzer target for the manifest parser and validator, and for SSA conversion
// and merge of whatever validates (scripts/fuzz.sh runs it).
// Properties: no input crashes parse_manifest/validate/describe_*/to_ssa/merge
// (merge may only refuse with MergeError), and a manifest that parses and
// validates survives write -> parse unchanged.
// FUZZ_DEPS: dirigo_bundle dirigo_program
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "bundle/io.h"
#include "bundle/print.h"
#include "program/merge.h"
#include "program/ssa.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dirigo::bundle;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Bundle b;
  try {
    b = parse_manifest(text);
  } catch (const BundleError& e) {
    if (e.issues().empty()) std::abort();  // every error must say what was wrong
    return 0;
  }
  auto issues = validate(b);
  describe_summary(summarize(b));
  for (const auto& p : b.programs) {
    for (const auto& op : p.ops) describe_op(op);
    for (const auto& t : p.tensors) describe_tensor(t);
  }
  if (!issues.empty()) return 0;
  Bundle again = parse_manifest(to_manifest_json(b));  // must not throw: b is valid
  if (!(again == b)) {
    std::fprintf(stderr, "round trip changed the bundle\n");
    std::abort();
  }
  for (const auto& p : b.programs) dirigo::program::describe(dirigo::program::to_ssa(b, p));
  for (bool suffix : {false, true}) {
    try {
      dirigo::program::describe(dirigo::program::merge(b, {true, suffix}));
    } catch (const dirigo::program::MergeError&) {
    }
  }
  return 0;
}
