// A per-kernel summary of a parsed module: what `dirigo execute FILE.ptx` lists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptx/ast.h"

namespace dirigo::ptx {

struct KernelSummary {
  std::string name;
  int line = 0;
  struct ParamInfo {
    std::string name;
    std::string type;        // "u64", "b8[16]" for by-value aggregates
    std::string ptr_space;   // from `.ptr .global`, else empty
    uint64_t size_bytes = 0;
    int align = 0;
  };
  std::vector<ParamInfo> params;
  uint64_t static_shared_bytes = 0;       // .shared variables the kernel (or an inlined callee) names
  std::vector<std::string> dynamic_shared; // `.extern .shared ... name[]` it names
  uint64_t local_bytes = 0;               // .local variables (stack frame)
  size_t register_count = 0;              // declared registers, ranges counted in full
  std::vector<std::pair<std::string, size_t>> registers_by_type;  // {"f32", 63}, ...
  size_t instruction_count = 0;
  size_t call_count = 0;                  // `call`s left (to functions without a body)
};

// Summaries of the .entry functions of `m`, in file order. Call inline_calls(m) first to count
// inlined callees' instructions and shared memory.
std::vector<KernelSummary> summarize(const Module& m);

nlohmann::json to_json(const Module& m, const std::vector<KernelSummary>& kernels);
std::string to_text(const std::vector<KernelSummary>& kernels);

}  // namespace dirigo::ptx
