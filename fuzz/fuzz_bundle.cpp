// libFuzzer target for the manifest parser and validator (scripts/fuzz.sh runs it).
// Properties: no input crashes parse_manifest/validate/describe_*, and a manifest
// that parses and validates survives write -> parse unchanged.
// FUZZ_DEPS: dirigo_bundle
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "bundle/io.h"
#include "bundle/print.h"

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
  return 0;
}
