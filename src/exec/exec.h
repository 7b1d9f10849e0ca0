// Symbolic execution of one PTX kernel launch (paper §3.3; docs/exec.md).
//
// Thread identity (%tid.{x,y,z}, %ctaid.{x,y,z}) is a set of ir Vars ("tid.x", ...) whose
// Bounds come from the concrete launch dims. A BUNDLE is one logical symbolic thread: a
// predicate over those Vars (its domain), a register environment and a pc. A guard or branch
// on a predicate that depends only on thread identity splits the bundle into its satisfiable
// halves; a predicate on tensor data becomes an ite value, and a branch on one is
// UNSUPPORTED "data-dependent control flow". Loops run concretely (step limit).
//
// Global memory: every pointer parameter bound to a tensor is the BV64 Var "&<tensor>"; an
// access resolves to ir Load(tensor, element index). Stores and atomics become WriteRecords.
// Shared memory is versioned by barrier epoch: a read in epoch k of memory not written by the
// reading thread itself in epoch k is a LAZY cross-thread read, the ir node
// Load(<launch>.smem.e<k>, ctaid_linear * smem_bytes + byte_offset) over the pseudo-tensor
// "state of shared memory at the start of epoch k". Substituting tid/ctaid (a shuffle
// partner, write inversion) just rebuilds that index; resolve() later replaces a concrete
// element by the value its writer stored, found by evaluating the epoch's shared writes over
// the threads of that one block. No launch-wide thread enumeration happens anywhere.
//
// Satisfiability of thread predicates is decided exactly: interval bounds first, then
// enumeration over the thread-identity Vars that the question mentions (launch dims are
// concrete), using independence of conjuncts over disjoint Vars.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/expr.h"
#include "ptx/ast.h"

namespace dirigo::exec {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

enum class DType : uint8_t { F32, F64, F16, BF16, I8, I16, I32, I64, U8, Bool };
unsigned dtype_bytes(DType d);
bool dtype_is_float(DType d);
ir::Sort dtype_sort(DType d);  // Real for floats, BV of the width otherwise (bool: BV8)

// One kernel argument.
struct ParamBinding {
  enum class Kind : uint8_t { Tensor, Scalar } kind = Kind::Scalar;
  // Tensor: pointer to element `byte_offset / dtype_bytes` of tensor `tensor`.
  int32_t tensor = -1;
  DType dtype = DType::F32;
  uint64_t extent = 0;        // elements the pointer may reach from the tensor's start; 0 = unknown
  uint64_t byte_offset = 0;
  // Scalar: raw bits (ints) or value (floats), per the .param type.
  uint64_t bits = 0;
  double real = 0;
  bool scalar_is_float = false;
  static ParamBinding tensor_arg(int32_t t, DType d, uint64_t extent, uint64_t byte_offset = 0) {
    ParamBinding b; b.kind = Kind::Tensor; b.tensor = t; b.dtype = d; b.extent = extent; b.byte_offset = byte_offset; return b;
  }
  static ParamBinding int_arg(int64_t v) { ParamBinding b; b.bits = uint64_t(v); return b; }
  static ParamBinding float_arg(double v) { ParamBinding b; b.real = v; b.scalar_is_float = true; return b; }
};

struct Launch {
  Dim3 grid, block;
  uint64_t dynamic_shared_bytes = 0;
  std::vector<ParamBinding> params;  // one per kernel .param, in order
};

struct ExecOptions {
  uint64_t max_steps = 20'000'000;          // instructions over all bundles
  // at a loop's back edge, replay the concrete counters alone and report the step limit at once when
  // they run into it (dryrun.cpp); off: step until it is reached (same message, same line)
  bool predict_step_limit = true;
  double max_ms = 60'000;                   // wall-clock budget of one execute(); 0 = none
  // An absolute deadline as well (a caller's budget shared by several launches); the earlier wins.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  uint64_t max_bundles = 16384;
  uint64_t max_enumeration = uint64_t(1) << 24;  // thread points per satisfiability question
  unsigned check_blocks = 3;                // blocks sampled by shared-memory checks when addresses depend on ctaid
  // Once a launch has this many bundles, a thread-identity branch whose region is short (<= 256
  // instructions) and free of stores is if-converted instead of splitting (docs/exec.md).
  uint64_t ifconvert_thread_after = 32;
  // A per-thread loop of loads and arithmetic whose counters are concrete becomes one Reduce per
  // accumulator (loopsum.cpp, docs/exec.md "Loop summaries") when it runs at least min_trips
  // iterations; off: every iteration is stepped (shorter loops are cheaper stepped).
  bool summarize_loops = true;
  uint64_t summarize_min_trips = 16;
  uint64_t summarize_max_trips = uint64_t(1) << 32;
};

// Where a finding or record comes from.
struct Where {
  int ptx_line = 0;
  std::string source;  // "file.cu:12" when .loc exists
};

struct ThreadCoord {
  Dim3 tid, ctaid;
  std::string str() const;
};

struct Finding {
  std::string kind;     // shared-race, barrier-divergence, shuffle-inactive-lane, shuffle-outside-block,
                        // global-out-of-bounds, shared-out-of-bounds, uninitialized-shared-read, undef-store,
                        // undef-address, undef-branch
  std::string kernel;
  Where where, other;   // the access and (for races) the conflicting access
  std::optional<ThreadCoord> thread, other_thread;
  std::string message;
};

enum class WriteOp : uint8_t { Store, Add, Min, Max, Exch, Other };
std::string_view write_op_name(WriteOp o);

struct WriteRecord {
  int bundle = 0;         // index into ExecResult::bundles
  ir::Expr pred;          // path predicate over thread identity (Bool)
  int32_t tensor = -1;
  ir::Expr index;         // BV64 element index over thread identity (and maybe data)
  ir::Expr value;         // value (Real or BV); may contain lazy shared reads
  WriteOp op = WriteOp::Store;
  bool is_signed = false; // integer min/max
  Where where;
  uint64_t seq = 0;       // issue order (program order within a thread)
};

struct BundleInfo {
  ir::Expr pred;          // domain over thread identity
  std::string end;        // "exit" or why it stopped
  std::vector<size_t> writes;  // indices into ExecResult::writes
};

// Shared-memory store performed in some epoch, kept for lazy-read resolution.
struct SharedWrite {
  ir::Expr pred, addr, value;  // addr: BV64 byte offset within the block's shared memory
  unsigned bytes = 4;
  uint64_t seq = 0;
  Where where;
  WriteOp op = WriteOp::Store;  // atomics (atom.shared.*) accumulate onto the cell instead
  bool is_signed = false;       // integer min/max
};

struct ExecResult {
  std::string kernel;
  Launch launch;
  std::vector<BundleInfo> bundles;
  std::vector<WriteRecord> writes;
  std::vector<Finding> findings;
  std::optional<std::string> unsupported;  // "data-dependent control flow at line 42", ...
  // The reason is that the wall-clock limit (max_ms / deadline) ran out, not a missing feature.
  bool out_of_time = false;
  // Safety checks that could be neither proven nor refuted (too many threads to enumerate, and no
  // sampled thread violates them): reported as notes, never as findings without a witness thread.
  std::vector<std::string> undecided;
  std::vector<std::string> idioms;         // math idioms rolled up
  uint64_t steps = 0;
  double ms = 0;
  uint64_t ifconverted = 0;  // branch regions run under a predicate instead of splitting (ifconv.h)
  uint64_t merged = 0;       // split bundles merged again at their branch's reconvergence point
  uint64_t loops_summarized = 0;  // loop runs turned into reductions (ExecOptions::summarize_loops)
  bool summaries_retracted = false;  // the launch writes a tensor a summarized loop read: run again without

  // Shared memory epochs: smem_tensor[k] is the pseudo-tensor of epoch k's initial state;
  // epoch_writes[k] the stores performed during epoch k.
  uint64_t smem_bytes = 0;
  std::vector<int32_t> smem_tensor;
  std::vector<std::vector<SharedWrite>> epoch_writes;

  bool ok() const { return !unsupported && findings.empty(); }
};

// Thread-identity variables of a launch: "tid.x".. with Bounds [0, dim-1].
struct ThreadVars {
  ir::Expr tid[3], ctaid[3];
  Dim3 block, grid;
  ThreadVars(ir::Context& ctx, const Dim3& block, const Dim3& grid);
  std::vector<ir::Expr> all() const { return {tid[0], tid[1], tid[2], ctaid[0], ctaid[1], ctaid[2]}; }
  // The block's linear index as a BV64 (the shared-memory window of a lazy read starts at it · smem_bytes).
  ir::Expr block_linear(ir::Context& ctx) const;
};

// Runs one launch. The module must be parsed and inlined. Never throws on bad PTX: problems
// become ExecResult::unsupported naming the PTX line.
ExecResult execute(ir::Context& ctx, const ptx::Module& m, const std::string& kernel, const Launch& launch,
                   const ExecOptions& opt = {});

// ---- results for the check stage (resolve.cpp)

// The nodes of `root` children first (`post`), each marked whether it is a bitvector/Boolean over
// the thread Vars and constants only (`thread_only`): what a specialization evaluates per thread on
// machine words (a BvProgram) instead of building. Used by the Resolver and the check's numeric path.
struct ThreadOnlySplit {
  std::unordered_map<ir::Expr, bool> thread_only;
  std::vector<ir::Expr> post;
};
ThreadOnlySplit split_thread_only(ir::Expr root, const std::vector<ir::Expr>& thread_vars);

// Replaces thread identity by a concrete thread and resolves every lazy shared-memory read
// (recursively through epochs). Unwritten shared memory becomes Undef.
class Resolver {
 public:
  Resolver(ir::Context& ctx, const ExecResult& r);
  ~Resolver();
  ir::Expr specialize(ir::Expr e, const ThreadCoord& t);
  ir::Expr resolve(ir::Expr e);  // e already free of thread identity
  // The value e of thread position `tid` in every block at once: the block's coordinates stay
  // symbolic, each lazy shared read resolved within that block. nullopt where the shared stores
  // depend on the block (or a read is not at blocklin·smem_bytes + offset): specialize per thread.
  std::optional<ir::Expr> specialize_tid(ir::Expr e, const Dim3& tid);
  // specialize_tid's value at t's block: specialize(e, t) for a block-uniform kernel.
  ir::Expr specialize_block(ir::Expr v, const ThreadCoord& t);
  // Past this deadline specialize / resolve throw TimeLimit (a caller's budget; default none).
  void set_deadline(std::chrono::steady_clock::time_point t);
  // The epoch whose initial shared-memory state `tensor` is (ExecResult::smem_tensor), or -1.
  int epoch_of(int32_t tensor) const;
  // The shared stores that give element `index` of epoch `epoch`'s initial state its value, in the
  // order resolve() folds them: the last plain store of the latest earlier epoch that has one (plain),
  // then the atomic updates of that epoch and the later ones. Empty: never written (Undef).
  // check/kernel_numeric.cpp evaluates these numerically instead of building the cell's expression.
  struct CellWrite {
    int epoch = 0;
    size_t write = 0;  // index into ExecResult::epoch_writes[epoch]
    ThreadCoord thread;
    bool plain = false;
  };
  std::vector<CellWrite> cell_writes(int epoch, uint64_t index);
 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  // writers_of's per-record inversion (compiled predicate and index, affine forms), built once
  struct WritePlan;
  WritePlan& plan(size_t write);
  friend std::vector<struct Writer> writers_of(ir::Context&, const ExecResult&, int32_t, int64_t, Resolver*, bool);
};

struct Writer {
  size_t write;           // index into ExecResult::writes
  ThreadCoord thread;
  ir::Expr value;         // specialized and resolved (nullptr when not asked for)
};

// All (record, thread) pairs whose write lands on tensor[flat_index], in issue order.
// Inversion: affine solve of index == flat_index over the thread variables when possible,
// bounded enumeration otherwise. specialize = false: the writers alone (a numeric caller
// evaluates the record's value under the thread instead of building it).
std::vector<Writer> writers_of(ir::Context& ctx, const ExecResult& r, int32_t tensor, int64_t flat_index,
                               Resolver* resolver = nullptr, bool specialize = true);

// ---- concrete interpreter (concrete.cpp): the same instruction semantics with every thread
// as its own bundle and concrete memory. Tensor contents: per tensor id, values as doubles
// (ints stored exactly). Returns the final contents of every tensor touched.
struct ConcreteMemory {
  std::map<int32_t, std::vector<double>> tensors;
};
struct ConcreteResult {
  ConcreteMemory memory;
  std::vector<Finding> findings;
  std::optional<std::string> unsupported;
};
ConcreteResult run_concrete(ir::Context& ctx, const ptx::Module& m, const std::string& kernel, const Launch& launch,
                            const ConcreteMemory& input, const ExecOptions& opt = {});

std::string to_text(const ir::Context& ctx, const ExecResult& r, size_t max_writes = 20);
std::string short_string(const ir::Context& ctx, ir::Expr e, size_t max_chars = 400);

}  // namespace dirigo::exec
