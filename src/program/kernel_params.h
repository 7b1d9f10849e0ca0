// Which launch arguments a kernel can write, from its mangled entry name.
//
// A CUDA entry `_Z9fused_minPKfPfii` says its first pointer is `const float*`:
// the kernel cannot write through it. Every other pointer is a potential write
// target (exec later tells which are actually written). This is a small
// Itanium-ABI parser for parameter lists: builtin types, cv-qualifiers,
// pointers/references, class names, nested names, templates and substitutions.
// Anything it does not understand yields nullopt, and callers must then treat
// every pointer as writable.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace dirigo::program {

struct KernelParam {
  bool pointer = false;        // a pointer or reference parameter
  bool pointee_const = false;  // ... to const data: the kernel cannot write through it
};

// nullopt for extern "C" names (no parameter types to read) and for manglings
// this parser does not cover.
std::optional<std::vector<KernelParam>> kernel_params_from_mangled(std::string_view mangled);

}  // namespace dirigo::program
