// Lowering and back-projection (paper §3.4): the value of one element of one SSA storage
// version as an ir expression over the merged obligation's shared inputs only.
//
// Element identity: every SSA value (storage version) of a program is an ir tensor
// "<prog>:<s>@v<k>" whose flat index is the element index within the storage. Shared inputs
// (matched program inputs and the outputs of trimmed prefix ops) are the ir tensors
// "in:<name>" indexed by their row-major logical index, so both programs' expressions
// mention the same leaves. Each op's per-element equation (aten) or inverted kernel write
// (exec) is expanded, then its leaves are replaced by their own back-projections,
// memoized per (value, element): neighbouring locations share most of the work.
#pragma once

#include <chrono>
#include <functional>
#include <stdexcept>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "aten/op_call.h"
#include "exec/exec.h"
#include "ir/expr.h"
#include "program/merge.h"

namespace dirigo::blas {
struct Call;
}
namespace dirigo::aten {
struct Products;
}

namespace dirigo::check {

// Something the lowering cannot model; what() starts with "UNSUPPORTED: ".
class Unsupported : public std::runtime_error {
 public:
  explicit Unsupported(const std::string& what) : std::runtime_error("UNSUPPORTED: " + what) {}
};

// Two threads of one launch store different values to one element: an Execute BUG
// found while inverting writes (the executor's own checks cover shared memory).
class WriteRace : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Row-major logical index of storage element `j` in `view`, or -1 when the view does not
// contain it.
int64_t logical_of_storage(const program::View& v, int64_t j);
// Storage element of a logical row-major index.
int64_t storage_of_logical(const program::View& v, int64_t logical);
std::vector<int64_t> unravel(std::span<const int64_t> shape, int64_t flat);

// One executed launch of the candidate (or reference) program.
struct LaunchInfo {
  size_t op = 0;                        // SsaProgram::ops index
  std::string kernel;
  std::shared_ptr<exec::ExecResult> result;
  std::shared_ptr<exec::Resolver> resolver;
  // ir tensor id (per storage the launch writes) -> the SSA value after the launch
  std::unordered_map<int32_t, program::ValueId> after;
  // By written tensor and element: its writers (exec::writers_of without values), found once for
  // every point the numeric path evaluates it at (check/kernel_numeric.cpp).
  std::unordered_map<int32_t, std::unordered_map<int64_t, std::vector<exec::Writer>>> writers;
};

// Thrown when building one location's expression runs past the check's deadline (a location of a
// today's-shape program can depend on ~10^9 input elements; the budget must still hold).
struct OutOfTime : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The executor's element type for a bundle dtype (also used by bench/exec_corpus).
exec::DType exec_dtype(bundle::DType d);

class Lowering {
 public:
  Lowering(ir::Context& ctx, const bundle::Bundle& b, const program::Merged& m, bool reference,
           const exec::ExecOptions& eopt);
  ~Lowering();

  // Value of `view` (of this program) at a logical row-major index.
  ir::Expr element(const program::View& view, int64_t logical);
  // Value of `view` at a symbolic multi-index (one BV64 expression per dim, each within the dim's
  // range), equal to element(view, l) at every location l the coordinates can take; nullptr where
  // something on the way has no symbolic form (kernel writes, copies, non-contiguous inputs, ops
  // without a symbolic location).
  // `why_not` (optional) receives the first reason a read on the way had no symbolic form.
  ir::Expr element_symbolic(const program::View& view, std::span<const ir::Expr> coords,
                            std::string* why_not = nullptr);
  // Value of storage version `v` at storage element `j`.
  ir::Expr storage_element(program::ValueId v, int64_t j);
  // Execute's loop summaries read launch tensors at indices over a reduction's bound indices: those
  // become the program input's reads when the launch tensor is an input read whole, else the
  // reductions are expanded (at most this many points each).
  ir::Expr summarized_reads(ir::Expr e);
  bool input_read(ir::Expr load) const;  // a program input's element at an index over bound indices
  static constexpr uint64_t kMaxExpandedSummaryPoints = uint64_t(1) << 26;
  static constexpr uint64_t kExpandedSummaryBelow = 4096;  // summaries of at most this many points always
  bool any_summary_ = false;  // some launch summarized a loop (only its values can hold reductions)

  // The element's own equation (aten), inverted kernel write, copy or library equation, built in
  // `cx` with its operands as leaves instead of their back-projections: T[i] of a value tensor or a
  // launch tensor, resolved by operand() (check/numeric.h evaluates these templates numerically, one
  // small expression per element, where the back-projected expression would be tens of millions).
  // `products` (optional) receives the sums of products of matrix products and convolutions whole
  // (aten::OpCall::sum_of_products) instead of their terms.
  using ProductsHook = std::function<ir::Expr(const aten::Products&)>;
  ir::Expr element_template(ir::Context& cx, program::ValueId v, int64_t j, const ProductsHook& products = {});
  // Normalization statistics are built once per Context (aten::StatsMemo); a caller that destroys a
  // Context it built templates in says so first.
  void forget_context(const ir::Context& cx);
  struct Operand {
    program::ValueId value = program::kNoValue;
    int64_t index = 0;
  };
  // What a template's TensorElem leaf stands for (nullopt: no value of this program).
  std::optional<Operand> operand(int32_t tensor, int64_t index) const;
  // How a value's elements are leaves (shared inputs, data from outside the trace, captured
  // constants) rather than computed: the tensor name that keys a random draw and its index.
  struct Source {
    enum class Kind : uint8_t { Computed, Shared, External, Constant } kind = Kind::Computed;
    int32_t tensor = -1;   // the leaf's ir tensor ("in:<shared name>" / "<prog>:<value>")
    int64_t index = 0;     // logical (Shared) or storage (External) index
    ir::Sort sort = ir::Sort::Real;
    double constant = 0;   // Constant
  };
  Source source(program::ValueId v, int64_t j);
  // A shared input's leaf tensor and where its elements lie in the value's storage (fast draws).
  struct SharedView {
    int32_t tensor = -1;
    ir::Sort sort = ir::Sort::Real;
    int64_t offset = 0, numel = 0;
    bool contiguous = false;  // logical index = storage index - offset
  };
  std::optional<SharedView> shared_view(program::ValueId v);

  // How a value is written by a kernel launch (nullopt: it is not): the launch (executed on demand;
  // Unsupported when it could not be), the launch tensor of the written storage (writers_of's), the
  // value before the launch (kNoValue: none) and the element sort. The numeric path evaluates the
  // writers' values under their threads (check/kernel_numeric.h) instead of building them.
  struct KernelWrite {
    LaunchInfo* launch = nullptr;
    int32_t tensor = -1;
    program::ValueId before = program::kNoValue;
    ir::Sort sort = ir::Sort::Real;
  };
  std::optional<KernelWrite> kernel_write(program::ValueId v);
  // The context launches are executed in: their write records' nodes live there.
  ir::Context& launch_context() { return ctx_; }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }

  // Kernel-written elements read at a symbolic index so far (kernel_read_symbolic's answers).
  size_t threads_solved() const { return kernel_reads_.size(); }

  // Executes every launch of the (trimmed) program up front: safety findings and
  // UNSUPPORTED reasons surface before any location is checked.
  void execute_all();
  void set_deadline(std::chrono::steady_clock::time_point t) { deadline_ = t; }
  const std::vector<LaunchInfo>& launches() const { return launches_; }
  std::vector<exec::Finding> findings() const;
  const program::SsaProgram& program() const { return prog_; }

 private:
  ir::Expr compute(program::ValueId v, int64_t j);
  ir::Expr from_aten(const program::SsaOp& op, const program::Write& w, program::ValueId v, int64_t j);
  aten::OpCall make_aten_call(const program::SsaOp& op);
  // make_aten_call's result, kept per op for the context and hook it was made for: the numeric path
  // builds one template per element of a 10^5-10^6-element value, and converting the op's arguments
  // each time cost as much as the equation itself.
  const aten::OpCall& aten_call(const program::SsaOp& op);
  ir::Expr read_symbolic(const aten::TensorRef& t, std::span<const ir::Expr> idx, ir::Sort s);
  ir::Expr from_launch(size_t op_index, const program::Write& w, int64_t j);
  // Symbolic reads for read_symbolic and the summaries' reads of intermediate values (nullptr, with
  // why_not_ set, where there is none): storage version v at a BV64 storage index over bounded Vars
  // (in_storage: a kernel's read, which Execute proved inside the storage).
  ir::Expr storage_read_symbolic(program::ValueId v, ir::Expr index, ir::Sort s, bool in_storage);
  // A kernel-written value there: the one thread that stores to the index, solved from it (an affine,
  // digit-by-digit injective store index), its stored value with the thread substituted.
  ir::Expr kernel_read_symbolic(program::ValueId v, ir::Expr index, ir::Sort s);
  // e (launch context) with every read of a launch or value tensor replaced by what it reads: Loads by
  // storage_read_symbolic, elements by their back-projection; reductions on the way are opened over
  // fresh bounded Vars and closed again. nullptr when some read has no symbolic form.
  ir::Expr resolve_reads_symbolic(ir::Expr e);
  bool reads_deferred(ir::Expr e);  // e holds a deferred read (read_symbolic inside a reduction)
  bool outside_data(program::ValueId v);
  bool input_is_its_storage(program::ValueId v);
  uint64_t deferred_reads_ = 0;  // deferred reads read_symbolic has made (reads_deferred looks only then)
  ir::Expr no_symbolic(const std::string& why);  // nullptr, recording why for element_symbolic
  std::map<std::pair<program::ValueId, ir::Expr>, ir::Expr> kernel_reads_;  // kernel_read_symbolic's answers
  uint64_t opened_reductions_ = 0;  // names the Vars resolve_reads_symbolic opens reductions over
  // Fills each writer's specialized value (writers_of without specialization).
  void write_values(LaunchInfo& L, std::vector<exec::Writer>& writers);
  // Atomics of one thread position from at least this many blocks are built for a symbolic block once.
  static constexpr size_t kBlockTemplateWriters = 8;
  ir::Expr from_copy(const program::SsaOp& op, const program::Write& w, int64_t j);
  ir::Expr from_library(size_t op_index, const program::Write& w, int64_t j);  // cuBLAS calls (src/blas)
  const blas::Call& library_call(size_t op_index);
  ir::Expr project_leaves(ir::Expr e);  // replace leaves by their back-projections
  ir::Context& cx() { return template_ctx_ ? *template_ctx_ : ctx_; }
  // An operand element: its back-projection, or (building a template) the leaf T[j] of its value tensor.
  ir::Expr operand_element(program::ValueId v, int64_t j, ir::Sort s);
  ir::Context* template_ctx_ = nullptr;  // set: element_template() is building (operands stay leaves)
  std::string* why_not_ = nullptr;        // set: element_symbolic() is building
  const ProductsHook* products_ = nullptr;
  // How an equation is built (call_mode): over back-projections with kernel-written elements at symbolic
  // indices as deferred reads (0), a template over operand leaves (1), back-projections with those
  // elements expanded (2: where the deferred reads had no symbolic form). Statistics and calls are kept per mode.
  int call_mode() const { return template_ctx_ ? 1 : defer_kernel_reads_ ? 0 : 2; }
  bool defer_kernel_reads_ = true;
  std::map<std::pair<const ir::Context*, int>, aten::StatsMemo> stats_memos_;
  struct CallKey {
    const program::SsaOp* op;
    const ir::Context* ctx;
    int mode;
    const ProductsHook* products;
    bool operator<(const CallKey& o) const {
      return std::tie(op, ctx, mode, products) < std::tie(o.op, o.ctx, o.mode, o.products);
    }
  };
  std::map<CallKey, aten::OpCall> aten_calls_;
  LaunchInfo& launch(size_t op_index);
  int32_t value_tensor(program::ValueId v);
  struct SharedLeaf {  // how a value's elements map to a shared input's leaves (shared < 0: they do not)
    int shared = -1;
    const program::View* view = nullptr;
    int32_t tensor = -1;
    ir::Sort sort = ir::Sort::Real;
    int64_t numel = 0;
    bool contiguous = false;
  };
  const SharedLeaf& shared_leaf(program::ValueId v);
  std::unordered_map<program::ValueId, SharedLeaf> shared_leaves_;

  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  uint32_t computes_since_clock_ = 0;
  ir::Context& ctx_;
  const bundle::Bundle& bundle_;
  const program::Merged& merged_;
  const program::SsaProgram& prog_;
  bool reference_;
  exec::ExecOptions eopt_;
  std::string prefix_;  // "ref" / "new"
  std::vector<LaunchInfo> launches_;
  std::unordered_map<size_t, size_t> launch_of_op_;
  std::unordered_map<int32_t, program::ValueId> tensor_value_;  // ir tensor -> SSA value
  std::unordered_map<program::ValueId, int32_t> value_tensor_;
  std::unordered_map<int32_t, std::pair<size_t, program::ValueId>> launch_tensor_;  // ir tensor -> (launch, before)
  struct KeyHash { size_t operator()(const std::pair<int32_t, int64_t>& k) const { return std::hash<int64_t>()(k.second * 1000003 + k.first); } };
  std::unordered_map<std::pair<int32_t, int64_t>, ir::Expr, KeyHash> memo_;
  std::vector<std::unique_ptr<struct ParsedModule>> modules_;
  std::unordered_map<std::string, size_t> module_index_;
  std::unordered_map<size_t, std::shared_ptr<const blas::Call>> library_calls_;  // by op index
  std::vector<exec::Finding> library_findings_;  // out-of-bounds ranges implied by ld / strides
};

// The reduction size past which ATen equations emit one ir Reduce node; negative: never.
int64_t reduce_above();

}  // namespace dirigo::check
