// The executor's machine (internal to exec): bundles, scheduler, instruction semantics.
// One class serves both modes:
//   symbolic  one bundle for the whole launch, split on thread-identity predicates; memory is
//             symbolic (Load nodes, write records, epoch-versioned shared memory);
//   concrete  one bundle per thread with constant identity; memory holds concrete contents
//             and updates in place (run_concrete). The instruction semantics are the same code.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "exec/deadline.h"
#include "exec/exec.h"
#include "exec/ifconv.h"
#include "exec/interval.h"
#include "exec/sat.h"
#include "ptx/rollup.h"

namespace dirigo::exec {

// The names the machine's translation units (alu, collective, machine, memory) all use.
using ir::Expr;
using ir::Op;
using ir::Sort;
using ptx::Opcode;
using ptx::Operand;
using ptx::Type;

// Address windows for the non-global spaces (global pointers are the symbolic "&tensor" Vars).
constexpr uint64_t kSharedBase = 0x01000000;            // shared window, fits 32-bit addresses
constexpr uint64_t kLocalBase = 0x00007F0000000000ull;  // per-thread .local / call .param scratch
constexpr uint64_t kConstBase = 0x00007E0000000000ull;  // initialized .const module variables (read-only)

struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Inside a loop summary's symbolic iteration: something the summary cannot take (the loop is then
// stepped as before).
struct SummaryAbort : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The launch writes a tensor that a summarized loop read: run it again without summaries.
struct SummaryConflict : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `a op b` of an add/sub/mov/setp on width-bit words (as unsigned values); nullopt: not decided here
std::optional<uint64_t> native_word(ptx::Opcode op, ptx::CmpOp cmp, unsigned width, bool is_signed, uint64_t a, uint64_t b);

struct Bundle {
  ir::Expr pred;
  std::vector<ir::Expr> regs;
  size_t pc = 0;
  enum class State : uint8_t { Running, AtBarrier, AtWarp, Exited, AtMerge } state = State::Running;
  int info = 0;                           // index into ExecResult::bundles
  std::optional<ThreadCoord> coord;       // concrete mode
  std::map<uint64_t, std::pair<ir::Expr, unsigned>> local;   // per-thread memory: addr -> (value, bytes)
  std::vector<SharedWrite> pending;       // own shared stores in the current epoch (forwarding)
  struct GlobalStore { int32_t tensor; ir::Expr index, value; };
  std::vector<GlobalStore> own_global;    // own global stores (read-after-write forwarding)
  // Float accumulators (`acc += x` / `acc = fma(a, b, acc)` in a loop, also a chain through
  // different registers `f2 = fma(a, b, f1); f3 = fma(c, d, f2)` as unrolled loops emit): register
  // slot -> its sum as a prefix (the first `n` terms) of a shared append-only term list, turned into
  // one n-ary node only when something else reads the register. Building the sum one term at a
  // time would copy it every step: O(n^2) nodes. Appending to a list whose prefix another register
  // still names is safe: that register keeps its own length.
  // The same for running maxima/minima (`m = fmaxf(m, x)`): op is Max or Min, the list leaves out
  // the identity (-inf / +inf) and is empty until the first finite term.
  struct PendingSum {
    std::shared_ptr<std::vector<ir::Expr>> terms;
    size_t n = 0;
    ir::Op op = ir::Op::Add;
  };
  std::unordered_map<int, PendingSum> sums;
  // inside an if-converted region (ifconv.h): the predicate of the paths reaching pc, and the
  // predicates of paths waiting at labels ahead (merged when pc gets there)
  // start: the region's branch; written: registers some guarded write of the region has set
  // (Machine::merge_register)
  struct IfConv { size_t end = 0; ir::Expr guard; std::map<size_t, ir::Expr> incoming; size_t start = 0; std::set<int> written; };
  std::optional<IfConv> conv;
  // split halves of a thread-identity branch that wait at its reconvergence point to become one
  // bundle again (merge.cpp); innermost split last
  struct MergeFrame { size_t end = 0; uint64_t id = 0; ir::Expr cond, pred_before; bool yes = false; };
  std::vector<MergeFrame> merges;
  uint64_t dry_run_until = 0;  // predict_step_limit: no new dry run before the step count gets here
  // loop summaries (loopsum.cpp): the state at the entry or last back edge of the loop being
  // watched, and the loop headers this bundle no longer tries to summarize
  struct LoopWatch {
    size_t header = 0;
    uint64_t steps = 0;
    std::vector<ir::Expr> regs;
    std::unordered_map<int, PendingSum> sums;
  };
  std::optional<LoopWatch> watch;
  std::set<size_t> unsummarized;
};

struct SharedAccess {
  ir::Expr pred, addr;
  unsigned bytes;
  bool write;
  uint64_t seq;
  Where where;
  bool atomic = false;  // two atomics on one cell do not race
};

class Machine {
 public:
  Machine(ir::Context& ctx, const ptx::Module& m, const ptx::Function& f, const Launch& launch, const ExecOptions& opt,
          ExecResult& out, const ConcreteMemory* concrete);
  void run();  // throws Unsupported, or TimeLimit with the full message
  ConcreteMemory& memory() { return mem_; }

 private:
  // ---- setup
  int slot(const std::string& reg);
  ptx::Type reg_type(const std::string& reg);
  void layout_variables();

  // ---- scheduling
  void run_all();
  void run_bundle(size_t bi);
  bool step(size_t bi);  // false: bundle stopped (blocked/exited)
  // throws the step-limit Unsupported now when replaying the bundle's concrete counters (dryrun.cpp)
  // shows that it runs into max_steps before anything it cannot decide
  void predict_step_limit(Bundle& b);
  struct DryInstr {  // one instruction decoded for the dry run (name lookups would be its cost)
    // Native: add/sub/mov/setp on 32/64-bit integers, evaluated on machine words (interning the
    // counters' constants was 90 % of the dry run)
    // Param: ld.param (the launch's scalars, side-effect free)
    enum Kind : uint8_t { Forget, Alu, Native, Param, Branch, Stop, Skip } kind = Forget;
    int guard = -1;  // predicate slot, -1: unguarded
    bool guard_negated = false;
    size_t target = 0;         // Branch
    std::vector<int> dests;    // Forget/Alu: registers written
    std::vector<int> sources;  // Alu: registers read (all must hold constants)
    bool special = false;      // Alu: also reads a special register (%tid.x, ...)
    // Native: the operation, width, signedness; a source is a register slot or an immediate
    ptx::Opcode op = ptx::Opcode::Add;
    ptx::CmpOp cmp = ptx::CmpOp::None;
    unsigned width = 0;
    bool is_signed = false;
    struct Src { int slot = -1; uint64_t imm = 0; };
    std::vector<Src> args;
  };
  std::vector<DryInstr> dry_;
  void decode_dry_run();

  // ---- loop summaries (loopsum.cpp)
  // true: the loop whose back edge at `branch` goes to `header` was summarized; the bundle now
  // stands after its last iteration
  bool summarize_loop(size_t bi, size_t header, size_t branch);
  struct LoopShape {
    size_t header = 0, branch = 0;
    std::vector<int> written;  // slots the body writes
    std::set<int> temps;       // of those, the ones it writes before reading
  };
  // a body of loads and arithmetic with no guard but the back edge's; nullptr otherwise
  const LoopShape* loop_shape(size_t header, size_t branch);
  std::unordered_map<uint64_t, std::optional<LoopShape>> loop_shapes_;
  // iterations left, the next one included, replaying the counters natively; nullopt: not decided
  // by concrete counters within `cap`
  // `words`: values of slots whose register is not a constant (one thread's, thread_trips)
  std::optional<uint64_t> loop_trips(const std::vector<ir::Expr>& regs,
                                     const std::unordered_map<int, Bundle::PendingSum>& sums, const LoopShape& shape,
                                     uint64_t cap, std::span<const std::pair<int, uint64_t>> words = {});
  // The trip count when the counters depend on the thread (a block-stride loop from tid): replayed
  // for every thread point of the Vars they mention (at most kTripThreads): the count every thread
  // runs (the least), and whether they all stop there; nullopt when some point is not decided.
  struct ThreadTrips {
    uint64_t common = 0;
    bool uniform = true;
  };
  std::optional<ThreadTrips> thread_trips(const Bundle& b, const std::vector<ir::Expr>& regs,
                                       const std::unordered_map<int, Bundle::PendingSum>& sums, const LoopShape& shape,
                                       uint64_t cap);
  // An unrolled iteration's terms t_0..t_{u-1} (loads at a + s·i, s a multiple of u) as one function
  // g of the source counter k = u·i + j, proven by t_j(i) == g(u·i + j): (the Var k, g); nullopt
  // when they are not of that form.
  std::optional<std::pair<ir::Expr, ir::Expr>> fold_unrolled(std::span<const ir::Expr> terms, ir::Expr iv, uint64_t T);
  // the loop headers (targets of backward branches) whose body loop_shape accepts: a bundle
  // arriving at one from outside the loop takes a snapshot there (Bundle::watch)
  std::vector<uint8_t> summary_header_;
  void note_loop_entry(Bundle& b);

  void collective_warp(std::vector<size_t> group);
  void barrier(std::vector<size_t> group);

  // ---- values
  ir::Expr read(Bundle& b, const ptx::Operand& o, ptx::Type ty);
  bool accumulate(Bundle& b, const ptx::Instruction& in, ptx::Type ty);  // the lazy `acc += x` path
  // o is dst itself or a register holding a (pending) list of list_op (Add/Max/Min)
  bool holds_list(Bundle& b, const ptx::Operand& o, const ptx::Operand& dst, ir::Op list_op);
  // dst := src's list + term; cur is src's value when src holds no pending list
  void append_to_list(Bundle& b, int src, int dst, ir::Expr cur, ir::Expr term, ir::Op list_op);
  ir::Expr read_raw(Bundle& b, const ptx::Operand& o, ptx::Type ty);
  ir::Expr list_value(const Bundle::PendingSum& p);  // a pending list as one n-ary node
  ir::Expr special(Bundle& b, const std::string& name);
  void write(Bundle& b, const ptx::Operand& o, ir::Expr v);
  ir::Expr as_real(ir::Expr v);
  ir::Expr as_bv(ir::Expr v, unsigned width);
  ir::Expr pred_value(Bundle& b, const std::string& reg, bool negated);
  ir::Expr const_of(ptx::Type ty, const ptx::Operand& o);
  ir::Sort sort_of(ptx::Type ty);

  // ---- instruction groups
  void exec_alu(Bundle& b, const ptx::Instruction& in);
  void exec_int(Bundle& b, const ptx::Instruction& in, ptx::Type ty);
  void exec_float(Bundle& b, const ptx::Instruction& in, ptx::Type ty);
  void exec_cvt(Bundle& b, const ptx::Instruction& in);
  void exec_setp(Bundle& b, const ptx::Instruction& in);
  void exec_mem(Bundle& b, const ptx::Instruction& in, ir::Expr data_guard);
  void exec_atom(Bundle& b, const ptx::Instruction& in, ir::Expr data_guard);

  // ---- memory
  enum class Space { Global, Shared, Local, Param, Const };
  struct Addr {
    Space space;
    ir::Expr expr;      // Global: byte offset from the tensor start; Shared: offset in the block; Local: absolute
    int param = -1;     // Global: kernel param index
    int32_t tensor = -1;
  };
  // the loads of a loop summary's symbolic iteration, checked once the summary holds
  struct SummaryLoad {
    size_t pc;
    Addr addr;
    ir::Expr index;
    unsigned bytes, align;  // align: the whole vector's bytes (first element of a vector access), else 0
  };
  struct SummaryMode {
    std::vector<SummaryLoad> loads;
    unsigned align = 0;  // set by exec_mem_at for the vector access under way
  };
  SummaryMode* summary_ = nullptr;
  std::set<int32_t> summary_tensors_;  // tensors summarized loops read (SummaryConflict)
  // `base`: the address register's value when the caller already chose it (one arm of a pointer ite)
  Addr address(Bundle& b, const ptx::Instruction& in, const ptx::Operand& o, ir::Expr base = nullptr);
  // An address register that selects between tensors (`p = c ? a : b`): the (condition, value)
  // arms, each naming at most one tensor; empty when the register names at most one.
  std::vector<std::pair<ir::Expr, ir::Expr>> pointer_arms(Bundle& b, const ptx::Instruction& in, const ptx::Operand& o);
  void exec_mem_at(Bundle& b, const ptx::Instruction& in, const Addr& a, ir::Expr guard);
  // A guarded global load that does not run for the bundle's threads: destination registers that
  // hold an integer constant (Triton's `mov.u32 %r, other; @%p ld.global.b32 {%r}`) take it as the
  // float the load would have given, when the tensor holds floats (the same bits)
  void retype_skipped_load(Bundle& b, const ptx::Instruction& in);
  ir::Expr inf_arith(const ptx::Instruction& in, const std::vector<ir::Expr>& xs);
  ir::Expr load(Bundle& b, const ptx::Instruction& in, const Addr& a, unsigned bytes, ptx::Type ty, unsigned k);
  void store(Bundle& b, const ptx::Instruction& in, const Addr& a, unsigned bytes, ptx::Type ty, ir::Expr v, unsigned k,
             ir::Expr data_guard);
  ir::Expr element_index(Bundle& b, const ptx::Instruction& in, const Addr& a, unsigned bytes, unsigned k);
  void check_global_bounds(Bundle& b, const ptx::Instruction& in, const Addr& a, ir::Expr index);
  // A vector access (ld/st .v2/.v4) must be aligned to its whole size: a float4 load of a row of
  // 103 floats faults on the GPU (misaligned address) where element-wise reads would not.
  void check_vector_alignment(Bundle& b, const ptx::Instruction& in, const Addr& a, unsigned align);
  // (line, predicate) -> an offset proven aligned there: a later offset that differs from it by a
  // constant multiple of the alignment (a loop stepping in whole vectors) needs no new proof
  std::unordered_map<uint64_t, ir::Expr> aligned_proven_;
  void record_write(Bundle& b, const ptx::Instruction& in, int32_t tensor, ir::Expr index, ir::Expr value, WriteOp op,
                    bool is_signed);
  ir::Expr smem_index(Bundle& b, ir::Expr off);
  // the aligned local cells a (possibly thread-dependent) local address can name, ≤ 64 of them
  // inside the local window (a private array indexed by thread identity or a loop counter)
  std::vector<uint64_t> local_cells(Bundle& b, const ptx::Instruction& in, ir::Expr addr, unsigned bytes);
  void shared_atomic(Bundle& b, const ptx::Instruction& in, const Addr& a, unsigned bytes, ptx::Type ty, ir::Expr v,
                     ir::Expr data_guard);

  // ---- packed half2 / bf16x2 (alu.cpp): a packed register holds a marker Var whose two
  // halves (Reals) live in packed_; integer operations on a marker are UNSUPPORTED
  ir::Expr pack_half2(ir::Expr lo, ir::Expr hi);
  std::pair<ir::Expr, ir::Expr> unpack_half2(const ptx::Instruction& in, ir::Expr v, bool bf16);
  void exec_packed(Bundle& b, const ptx::Instruction& in, ptx::Type ty);
  std::unordered_map<ir::Expr, std::pair<ir::Expr, ir::Expr>> packed_;

  // ---- if-conversion (ifconv.cpp)
  bool begin_ifconv(Bundle& b, const ptx::Instruction& in, ir::Expr taken, bool thread_branch);
  bool ifconv_enter(Bundle& b);  // merges paths arriving at b.pc; true: no path reaches it (skipped)
  void ifconv_branch(Bundle& b, const ptx::Instruction& in, ir::Expr own_guard);
  ir::Expr guarded_domain(Bundle& b, ir::Expr guard);  // threads of b that some input lets run under guard
  ir::Expr undef_domain(Bundle& b, ir::Expr v);        // threads of b for which v can be undefined here
  ir::Expr drop_unreachable_undef(Bundle& b, ir::Expr v);
  // false for every assignment of its atoms taken as free propositions (an atom and its negation
  // one variable): unsatisfiable for every thread and input, decided without enumerating threads
  bool propositionally_false(ir::Expr cond);
  ir::Expr drop_unreachable_undef_uncached(Bundle& b, ir::Expr v);
  struct UndefKey {
    ir::Expr v, pred, guard;
    bool operator==(const UndefKey&) const = default;
  };
  struct UndefKeyHash {
    size_t operator()(const UndefKey& k) const {
      std::hash<ir::Expr> h;
      return h(k.v) * 1000003u ^ h(k.pred) * 8191u ^ h(k.guard);
    }
  };
  std::unordered_map<UndefKey, ir::Expr, UndefKeyHash> undef_memo_;
  ir::Expr merge_guarded(Bundle& b, ir::Expr guard, ir::Expr now, ir::Expr old);  // ite(guard, now, old)
  // The same for register operand d inside an if-converted region: `now` alone for the region's
  // first write of d when d is dead at the region's start (every path from there writes d before
  // reading it): a thread that skips this write has not written d yet, so it writes d again before
  // reading it and never observes `old`. A loop-local temporary would otherwise become a chain
  // ite(g_k, v_k, ite(g_k-1, v_k-1, ...)) over every iteration (061's conv kernel).
  ir::Expr merge_register(Bundle& b, const ptx::Operand& d, ir::Expr guard, ir::Expr now, ir::Expr old);
  bool unmerged_write_ = false;  // exec_alu of a guarded instruction: write() leaves `written` to merge_register
  std::unordered_map<size_t, IfRegion> regions_;

  // ---- state merging at the reconvergence point of a thread-identity split (merge.cpp)
  // Marks the two halves of a split at branch `in` (b: taken side, clone: other) to merge again at
  // the branch's reconvergence point; false when the region does not qualify.
  bool mark_merge(Bundle& yes, Bundle& no, const ptx::Instruction& in, ir::Expr cond, ir::Expr pred_before);
  bool at_merge_point(Bundle& b);  // true: b stopped (AtMerge)
  bool merge_waiting(bool force);  // merges complete groups; true when some bundle can run again
  bool merge_pair(Bundle& yes, Bundle& no, ir::Expr cond);
  std::unordered_map<size_t, IfRegion> merge_regions_;
  // registers (slots) that some path from pc reads before writing; computed once per launch
  bool live_at(size_t pc, int slot);
  std::vector<std::vector<uint64_t>> live_in_;
  uint64_t next_merge_id_ = 0;
  std::unordered_map<ir::Expr, ir::Expr> exists_memo_;  // guard -> exists_data(guard)
  std::unordered_map<ir::Expr, bool> prop_false_memo_;  // cond -> propositionally_false(cond)
  std::unordered_map<ir::Expr, ir::Expr> undef_cond_memo_;  // undef_condition's memo, kept for the run
  std::unordered_map<ir::Expr, ir::Expr> lift_memo_;
  ir::Expr arm_cond_ = nullptr;  // while one arm of a pointer select runs: its condition        // lift_ite_atoms' memo, kept for the run
  std::unordered_map<ir::Expr, std::optional<ThreadCoord>> witness_memo_;  // bundle predicate -> one of its threads

  // ---- checks and helpers
  bool sat(ir::Expr e) { return sat_.sat(e); }
  ir::Expr tighten(ir::Expr pred);
  // false: no thread could be exhibited (recorded as undecided). `holds`, when given, must
  // evaluate to true at the witness thread (an over-approximated domain proposes it); `thread`,
  // when given, is a witness the caller already evaluated
  bool finding(const std::string& kind, const ptx::Instruction& in, Bundle& b, ir::Expr where_pred, std::string msg,
               ir::Expr holds = nullptr, std::optional<ThreadCoord> thread = std::nullopt);
  void undef_sink(Bundle& b, const ptx::Instruction& in, ir::Expr v, const char* kind, const char* what);
  ir::Expr undef_holds(Bundle& b, ir::Expr v);  // where v is undefined here (the witness check of undef-*)
  Where where(const ptx::Instruction& in) const;
  [[noreturn]] void unsupported(const ptx::Instruction& in, const std::string& why) const;
  ir::Expr linear_tid(ir::Expr tx, ir::Expr ty, ir::Expr tz);
  std::vector<ir::Expr> tid_of_linear(ir::Expr lin);
  // tid Vars -> the given expressions; memoized across calls (reuse it for one partner thread)
  ir::Substituter tid_substituter(std::vector<ir::Expr> tid);
  ir::Expr ctaid_linear();
  void check_shared_epoch();
  void check_global_reads();
  std::vector<ThreadCoord> sample_blocks(bool depends_on_ctaid);
  // The blocks the shared-memory epoch check runs on: one per class of blocks whose accesses (exprs) are the
  // same functions of tid (every ctaid atom of every access decided alike over the class's block
  // range, or a class of one block), refined epoch by epoch; nullopt when the accesses see ctaid
  // other than through comparisons, or the classes outgrow kMaxBlockClasses (then sampled, and
  // reported undecided).
  // The same classes serve the barrier-divergence check over the bundles' predicates (fresh each
  // time, no bytes to inherit).
  struct BlockClass { Dim3 lo, hi; uint64_t rep; };  // ctaid ranges (inclusive), representative's linear id
  std::optional<std::vector<ThreadCoord>> block_classes(const std::vector<ir::Expr>& exprs,
                                                        std::vector<BlockClass>& classes, bool& failed, bool inherit);
  static constexpr size_t kMaxBlockClasses = 64;
  // block classes of the live bundles' predicates (barrier and warp-collective checks), memoized by them
  const std::optional<std::vector<ThreadCoord>>& bundle_block_classes();
  std::map<std::vector<ir::Expr>, std::optional<std::vector<ThreadCoord>>> bundle_classes_memo_;
  std::vector<BlockClass> shared_classes_;
  bool shared_classes_failed_ = false;
  ThreadCoord coord_of(uint64_t lin_tid, const Dim3& ctaid) const;
  bool is_thread_pred(ir::Expr e) { return sat_.thread_only(e); }
  bool is_concrete() const { return concrete_; }

  ir::Context& ctx_;
  // the Vars +inf / -inf (looked up once: float instructions test against them every step)
  ir::Expr ninf_ = ctx_.var("-inf", ir::Sort::Real), pinf_ = ctx_.var("+inf", ir::Sort::Real);
  const ptx::Module& m_;
  const ptx::Function& f_;
  Launch launch_;
  ExecOptions opt_;
  ExecResult& out_;
  ThreadVars tv_;
  ThreadSat sat_;
  std::unordered_set<uint64_t> checked_epochs_;  // shared-access patterns already race-checked
  RangeCache ranges_;  // exact index ranges for bounds checks, one enumeration per loop-invariant part
  ptx::Rollup rollup_;
  bool concrete_ = false;
  ConcreteMemory mem_;

  std::unordered_map<std::string, int> slots_;
  std::vector<ptx::Type> slot_types_;
  std::map<std::string, uint64_t> var_addr_;   // shared / local / param-scratch symbol -> address
  std::map<std::string, uint64_t> var_size_;
  std::vector<uint8_t> const_bytes_;            // the .const window's contents
  ir::Expr load_const(const ptx::Instruction& in, ir::Expr off, unsigned bytes, ptx::Type ty);
  uint64_t static_shared_ = 0, local_bytes_ = 0;
  std::vector<Bundle> bundles_;
  uint64_t seq_ = 0;
  uint64_t steps_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  Deadline deadline_;  // max_ms / ExecOptions::deadline; ticked by every launch-sized loop
  int epoch_ = 0;
  std::vector<SharedAccess> epoch_access_;  // since the last block barrier
  // epoch_access_ indices where a bar.warp.sync committed a warp epoch: __syncwarp orders the lanes
  // of one warp only, so accesses of two warps on either side of it still race.
  std::vector<size_t> warp_sync_marks_;
  size_t warp_epoch_of(size_t access) const {
    return size_t(std::upper_bound(warp_sync_marks_.begin(), warp_sync_marks_.end(), access) - warp_sync_marks_.begin());
  }
  std::map<uint64_t, std::vector<bool>> initialized_;  // sampled block -> initialized shared bytes
  std::map<uint64_t, std::map<uint64_t, ir::Expr>> concrete_shared_;  // concrete mode: block -> byte addr -> value
  std::map<uint64_t, unsigned> concrete_shared_bytes_;
  std::set<std::string> reported_;
  struct GlobalRead { int32_t tensor; ir::Expr index, pred; Where where; };
  std::vector<GlobalRead> global_reads_;  // symbolic loads of pre-launch contents (check_global_reads)
  // a + l with l the only tensor pointer leaf, a direct summand: the pointer l, and a without it
  // (nullptr: another shape; the caller takes the general path; !with_rest: the pointer only). Per access of every loop step,
  // so the pointer-free summands' test is memoized (they recur; only the constant changes).
  std::pair<ir::Expr, ir::Expr> single_pointer_summand(ir::Expr a, bool with_rest = true);
  std::unordered_map<ir::Expr, bool> pointer_free_;
  // the last address base pointer_arms found to name one tensor: base = pointer + offset
  struct PointerSplit { ir::Expr base, pointer, offset; } last_split_{};
  std::unordered_map<ir::Expr, int> ptr_param_;  // "&tensor" Var -> kernel param index  // de-duplicate findings by kind+line
};

}  // namespace dirigo::exec
