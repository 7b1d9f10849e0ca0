// Numeric values of kernel-written elements for check/numeric.h, without building their expressions.
//
// A candidate kernel that computes a big reduction itself (a hand-written GEMM, a column sum, a
// convolution loop, a block reduction through shared memory) gives each element it writes an
// expression of 10^5-10^7 nodes once its writer's value is specialized to the thread and its lazy
// shared-memory reads are resolved (exec::Resolver): building one per element cost the numeric path
// its whole budget. Here the writer's record value is evaluated as it is, thread-symbolic, under an
// environment that binds the thread identity to the writer's coordinates; its reads of tensor data
// are the numeric values of the operand elements (the caller's memo), and its lazy shared-memory
// reads are the values of the cells they name, each evaluated the same way from the stores that
// gave it its value (Resolver::cell_writes) and memoized per (epoch, block, address) and point. A
// loop of K iterations per thread is then K evaluation steps per thread, never K hash-consed nodes
// per element.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "check/lower.h"
#include "smt/falsify.h"

namespace dirigo::check {

class KernelNumeric {
 public:
  // An element to evaluate: (SSA value, storage element), or a shared-memory cell: (-2 - the epoch's
  // state tensor, flat index * 8 + the sort it is read as).
  using Key = std::pair<int32_t, int64_t>;
  static bool is_cell(Key k) { return k.first <= -2; }
  // The values of an element at every lane (nullptr: not evaluated yet); `buf` (one double per
  // lane) may hold them. Reals as doubles, integers as their unsigned value, NaN when undefined.
  using Reader = std::function<const double*(Key key, double* buf)>;

  // A value whose elements are a shared input's draws (contiguous reals): where they lie in its
  // storage and the draw key (smt::name_key of the input). Read directly (smt::PointSampler at each
  // lane's point, as numeric.cpp draws them): a kernel's scattered reads of its inputs are most of
  // its leaves.
  struct SharedDraws {
    int64_t offset = 0, numel = 0;
    uint64_t key = 0;
  };
  using SharedOf = std::function<std::optional<SharedDraws>(program::ValueId)>;

  struct Options {
    uint64_t seed = 1;            // the points' draws, as NumericOptions gives them
    std::vector<unsigned> points;  // one lane per point
    double bound = 10;
    std::vector<uint8_t> f32;      // per lane: IEEE fp32 (ir::Evaluator's F32 mode)
    SharedOf shared_of;            // unset: every read through the Reader
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    bool tape = true;              // false: every record value by ir::Evaluator (cross-checks of the tapes)
  };
  KernelNumeric(Lowering& low, Options opt);
  ~KernelNumeric();

  enum class Outcome : uint8_t {
    NotHere,  // not written by a kernel launch, or left to the template path: no writer, several threads
              // storing (a race check compares their expressions), a mix of stores and atomics
    Missing,  // reads elements without values yet: appended to `missing`; evaluate those, then ask again
    Done,     // `out` (one per lane) holds the element's values
  };
  // Throws Unsupported (a memory index read from tensor data), OutOfTime (past the deadline) and
  // std::runtime_error (the Resolver's: a shared cell stored and read with different types, ...).
  Outcome evaluate(Key key, const Reader& read, std::vector<Key>& missing, double* out);

  struct Stats {
    uint64_t writers = 0;  // (record, thread) values evaluated, shared stores included
    uint64_t cells = 0;    // shared-memory cells evaluated
  };
  const Stats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dirigo::check
