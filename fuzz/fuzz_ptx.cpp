// libFuzzer target for the PTX front end: any byte string must either parse (and inline, and
// summarize) or raise ptx::ParseError — never crash, hang or raise anything else.
// Links against dirigo_ptx only:
// FUZZ_DEPS: dirigo_ptx
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ptx/inline.h"
#include "ptx/parser.h"
#include "ptx/summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    dirigo::ptx::Module m = dirigo::ptx::parse(text);
    dirigo::ptx::inline_calls(m);
    (void)dirigo::ptx::summarize(m);
  } catch (const dirigo::ptx::ParseError&) {
    // expected for malformed input
  }
  return 0;
}
