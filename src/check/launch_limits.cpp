#include "check/launch_limits.h"

#include <fmt/format.h>

namespace dirigo::check {

std::optional<std::string> impossible_launch(const bundle::Program& p) {
  bool output_elements = false;  // a zero grid is only wrong when something should have been written
  auto tensors = p.tensor_index();
  for (const auto& o : p.outputs)
    if (auto it = tensors.find(o.tensor); it != tensors.end() && p.tensors[it->second].numel() > 0)
      output_elements = true;
  for (size_t k = 0; k < p.ops.size(); ++k) {
    const auto* l = std::get_if<bundle::LaunchOp>(&p.ops[k]);
    if (!l) continue;
    auto where = fmt::format("kernel {} (op {}, grid [{}, {}, {}], block [{}, {}, {}])", l->kernel, k, l->grid[0],
                             l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2]);
    // each dimension is below 2^32 (validated), so the product of three fits in 128 bits
    auto threads = static_cast<__int128>(l->block[0]) * l->block[1] * l->block[2];
    if (threads > kMaxThreadsPerBlock || l->block[0] > 1024 || l->block[1] > 1024 || l->block[2] > 64)
      return fmt::format("{}: {} threads per block, at most 1024 (x, y ≤ 1024, z ≤ 64): the launch fails and the "
                         "kernel never runs", where, static_cast<double>(threads));
    if (l->shared_bytes > kMaxDynamicSharedBytes)
      return fmt::format("{}: {} bytes of dynamic shared memory, more than any GPU gives one block ({}): the launch "
                         "fails and the kernel never runs", where, l->shared_bytes, kMaxDynamicSharedBytes);
    if (l->grid[1] > 65535 || l->grid[2] > 65535)
      return fmt::format("{}: grid y and z are at most 65535: the launch fails and the kernel never runs", where);
    if ((threads == 0 || l->grid[0] == 0 || l->grid[1] == 0 || l->grid[2] == 0) && output_elements)
      return fmt::format("{}: a zero-sized {} while the program's output has elements: the kernel never runs",
                         where, threads == 0 ? "block" : "grid");
  }
  return std::nullopt;
}

}  // namespace dirigo::check
