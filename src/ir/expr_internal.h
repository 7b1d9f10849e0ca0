// Internals of the Context shared by the ir sources (not part of the public API).
#pragma once

#include <array>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
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
bool commutative(Op o);
uint64_t child_mix(Expr c);  // contribution of one operand to a commutative node's hash

// Memo keyed on node pointers: open addressing with Fibonacci hashing, far
// cheaper than std::unordered_map on million-node DAGs. The subset of the
// std::unordered_map API used here (find/end/count/emplace/at/operator[]).
// Entry pointers are invalidated by inserts.
template <class V>
class NodeMap {
 public:
  struct Entry {
    Expr first = nullptr;
    V second{};
  };
  NodeMap() { slots_.resize(16); }
  Entry* end() const { return nullptr; }
  Entry* find(Expr k) {
    size_t i = slot(k);
    while (slots_[i].first) {
      if (slots_[i].first == k) return &slots_[i];
      i = (i + 1) & mask();
    }
    return nullptr;
  }
  const Entry* find(Expr k) const { return const_cast<NodeMap*>(this)->find(k); }
  size_t count(Expr k) const { return find(k) ? 1 : 0; }
  template <class T>
  std::pair<Entry*, bool> emplace(Expr k, T&& v) {
    if (Entry* e = find(k)) return {e, false};
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = slot(k);
    while (slots_[i].first) i = (i + 1) & mask();
    slots_[i].first = k;
    slots_[i].second = std::forward<T>(v);
    ++size_;
    return {&slots_[i], true};
  }
  V& operator[](Expr k) { return emplace(k, V{}).first->second; }
  V& at(Expr k) {
    Entry* e = find(k);
    if (!e) throw std::out_of_range("NodeMap::at: node not present");
    return e->second;
  }
  const V& at(Expr k) const { return const_cast<NodeMap*>(this)->at(k); }
  size_t size() const { return size_; }
  void clear() {
    slots_.assign(16, Entry{});
    size_ = 0;
  }

 private:
  std::vector<Entry> slots_;
  size_t size_ = 0;
  size_t mask() const { return slots_.size() - 1; }
  size_t slot(Expr k) const {
    uint64_t h = (reinterpret_cast<uint64_t>(k) >> 4) * 0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>(h >> 20) & mask();
  }
  void grow() {
    std::vector<Entry> old(slots_.size() * 2);
    old.swap(slots_);
    for (Entry& e : old)
      if (e.first) {
        size_t i = slot(e.first);
        while (slots_[i].first) i = (i + 1) & mask();
        slots_[i] = std::move(e);
      }
  }
};

// A set of nodes with the same representation.
class NodeSet {
 public:
  bool insert(Expr k) { return map_.emplace(k, true).second; }
  size_t count(Expr k) const { return map_.count(k); }
  size_t size() const { return map_.size(); }

 private:
  NodeMap<bool> map_;
};

}  // namespace dirigo::ir::detail
