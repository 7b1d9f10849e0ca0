// Human-readable one-line renderings of bundle parts (for `dirigo bundle show`,
// error messages and logs). Not a serialization: use io.h for that.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "bundle/bundle.h"

namespace dirigo::bundle {

std::string join_ints(std::span<const int64_t> v);  // "4, 256": a shape, strides or an index
std::string describe_arg(const Arg& a);        // t3, 1.5, [1, None], float32, "mean", t5+16, 0x7f00(unbound)
std::string describe_tensor(const Tensor& t);  // t0: float32[4, 256] strides [256, 1] @ s0+0 (contiguous)
std::string describe_op(const Op& op);         // aten::add_.Tensor(t2, t4, alpha=1.5) -> t2 mutates t2

struct BundleSummary {
  size_t programs = 0, ops = 0, tensors = 0, storages = 0;
  std::map<std::string, size_t> ops_by_kind;   // "aten" -> n, ...
  size_t launches = 0;
  size_t kernels = 0;                          // distinct (module, kernel) pairs launched
  size_t modules = 0;
};
BundleSummary summarize(const Bundle& b);
std::string describe_summary(const BundleSummary& s);  // "2 programs, 6 ops (aten 3, ...), 1 kernel, ..."

}  // namespace dirigo::bundle
