// The order in which output locations are checked (paper §4.3): corners of each launch,
// one thread per distinct path condition, tensor boundaries, then a seeded random
// permutation of the rest (or every location in order, for --full).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "check/check.h"
#include "check/lower.h"
#include "exec/deadline.h"

namespace dirigo::check {

class LocationOrder {
 public:
  // `outputs` are the compared views of the candidate (same shapes as the reference's). Past
  // `deadline` no more corner / path-condition locations are derived (the rest of the order, tensor
  // boundaries and random locations, costs nothing); stopped() then says where it stopped.
  LocationOrder(ir::Context& ctx, const std::vector<program::OutputPair>& outputs, const Lowering& cand,
                uint64_t seed, bool full,
                std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
                const std::vector<std::pair<size_t, int64_t>>& only = {});
  std::optional<Location> next();
  int64_t total() const { return total_; }
  const std::string& stopped() const { return stopped_; }  // "" when every launch was looked at

 private:
  void add_prefix(size_t output, int64_t flat, Tier tier);
  void add_launch_locations(ir::Context& ctx, const std::vector<program::OutputPair>& outputs, const Lowering& cand,
                            std::chrono::steady_clock::time_point deadline);
  void add_launch(ir::Context& ctx, const std::vector<program::OutputPair>& outputs, const Lowering& cand,
                  const LaunchInfo& L, const program::SsaProgram& prog, exec::Deadline& dl);
  std::string stopped_;
  std::vector<int64_t> numel_;
  std::vector<std::vector<int64_t>> shapes_;
  int64_t total_ = 0;
  std::vector<Location> prefix_;
  size_t prefix_pos_ = 0;
  std::unordered_set<int64_t> seen_;  // global location ids (output offset + flat)
  std::vector<int64_t> offsets_;
  // Sparse Fisher-Yates over [0, total): a deterministic permutation in O(locations drawn) memory.
  std::unordered_map<int64_t, int64_t> swapped_;
  int64_t drawn_ = 0;
  bool full_;
  bool only_ = false;  // the caller named the locations: nothing past prefix_
  std::mt19937_64 rng_;
};

// A hash of a (reference, candidate) pair of expressions that is the same for pairs identical up
// to a renaming of their tensor-element leaves (and of the tensors symbolic loads read): leaves
// are numbered in first-occurrence order of an operand-order post-order walk over both DAGs
// (iterative, memoized per node). 128 bits, so two different queries colliding is not a
// practical concern. --full decides such queries once. Operand order that depends on leaf
// identity only makes fewer pairs match, never wrong ones.
struct PairKey {
  uint64_t a = 0, b = 0;
  bool operator==(const PairKey&) const = default;
};
struct PairKeyHash {
  size_t operator()(const PairKey& k) const { return size_t(k.a ^ (k.b * 0x9e3779b97f4a7c15ull)); }
};
PairKey renamed_pair_key(ir::Expr ea, ir::Expr eb);

}  // namespace dirigo::check
