// Internals of the Context shared by the ir sources (not part of the public API).
#pragma once

#include <array>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/expr.h"

namespace dirigo::ir::detail {

inline uint64_t mix64(uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}
inline uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) { h ^= c; h *= 0x100000001b3ULL; }
  return h;
}
inline uint64_t mask_of(unsigned w) { return w >= 64 ? ~0ULL : ((1ULL << w) - 1); }

// Process-wide tensor names: ids are shared by every Context so that import()
// and cross-worker comparisons need no remapping.
struct TensorRegistry {
  mutable std::shared_mutex mu;
  std::deque<std::string> names;
  std::vector<uint64_t> hashes;
  std::unordered_map<std::string, int32_t> ids;
  static TensorRegistry& get();
  int32_t intern(std::string_view name);
  std::string_view name(int32_t id) const;
  uint64_t hash(int32_t id) const;
  size_t size() const;
};

// Everything needed to find or create one node.
struct Key {
  Op op;
  Sort sort;
  uint8_t flags = 0;
  std::span<const Expr> args = {};
  uint64_t u = 0, v = 0;
  int32_t tensor = -1;
  const mpq_class* q = nullptr;  // ConstReal
  std::string_view name = {};    // Var
};

uint64_t rational_hash(const mpq_class& q);
uint64_t key_hash(const Key& k);

// Simple per-thread memo keyed on node pointers.
template <class V>
using NodeMap = std::unordered_map<Expr, V>;

}  // namespace dirigo::ir::detail
