// Helpers shared by the ptx tests: wrap instruction snippets into a parseable module.
#pragma once

#include <string>

#include "ptx/ast.h"
#include "ptx/parser.h"

namespace dirigo::ptx::test {

// A module with one kernel `k` whose body is `body`, with the usual register banks declared
// (%p, %rs, %r, %f, %rd, %fd, each <20>) and a shared array `sm`. The body starts on line 12.
inline std::string kernel_text(const std::string& body) {
  return ".version 8.5\n"
         ".target sm_90a\n"
         ".address_size 64\n"
         ".shared .align 4 .b8 sm[1024];\n"
         ".visible .entry k(.param .u64 k_p0, .param .u32 k_p1)\n"
         "{\n"
         ".reg .pred %p<20>;\n"
         ".reg .b16 %rs<20>;\n"
         ".reg .b32 %r<20>;\n"
         ".reg .f32 %f<20>;\n"
         ".reg .b64 %rd<20>; .reg .f64 %fd<20>;\n" +
         body + "\n}\n";
}

inline Module parse_kernel(const std::string& body) { return parse(kernel_text(body)); }

// The single instruction of a one-instruction snippet.
inline Instruction parse_one(const std::string& instruction) {
  Module m = parse_kernel(instruction);
  const auto& body = m.functions.at(0).body;
  if (body.size() != 1) throw std::runtime_error("expected one instruction");
  return body[0];
}

}  // namespace dirigo::ptx::test
