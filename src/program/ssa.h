// The SSA program model (paper §3.2): a traced program (mutable storages,
// views, in-place ops, kernels writing into their arguments) as a sequence of
// operations over immutable storage VERSIONS.
//
// Every write to a storage (an in-place or out= aten op, a fresh aten output, a
// copy, a library call, a kernel launch through a non-const pointer) makes a new
// version of the whole storage: the old contents with the written region
// replaced. Every read names the version current at that point. A tensor is a
// View: (storage version, offset, shape, strides, dtype). Version 0 of a storage
// is its contents when the program starts: an input's values, or, for any other
// storage, data from outside the trace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle.h"

namespace dirigo::program {

using ValueId = int32_t;  // index into SsaProgram::values
inline constexpr ValueId kNoValue = -1;

// One version of one storage.
struct Value {
  int32_t storage = 0;   // index into SsaProgram::storages
  int32_t version = 0;   // 0 = contents at program start
  int32_t producer = -1; // index into SsaProgram::ops of the op that wrote it; -1 for version 0
};

struct View {
  std::string tensor;    // the bundle tensor id it was read through
  ValueId value = kNoValue;
  int64_t offset = 0;    // elements
  std::vector<int64_t> shape, strides;
  bundle::DType dtype = bundle::DType::Float32;

  bool same_geometry(const View& o) const {
    return offset == o.offset && shape == o.shape && strides == o.strides && dtype == o.dtype;
  }
  bundle::Extent extent() const { return bundle::view_extent(offset, shape, strides); }
};

// A tensor operand of an op, read at the version current before the op.
struct Operand {
  std::string path;                    // where in the op: "args[2]", "args[1].list[0]", "kwargs.other", "src", "args.A"
  View view;
  std::optional<int64_t> byte_offset;  // launches, copies, library calls
  bool writable = false;               // launch: a pointer the kernel may write through
};

// A new version of one storage made by one op.
struct Write {
  int32_t storage = 0;
  ValueId before = kNoValue, after = kNoValue;
  std::vector<View> regions;  // the tensors (views of `after`) through which the op writes
  bool potential = false;     // a launch through a non-const pointer: exec decides if it really writes
  bool fresh = false;         // an aten output in a storage no earlier op touched and that is no input
};

struct SsaOp {
  size_t index = 0;            // position in the bundle program's ops
  bundle::Op op;               // the traced op (names, scalars, raw arguments)
  std::vector<Operand> reads;  // tensor operands in argument order (lists flattened, then kwargs)
  std::vector<Write> writes;   // at most one per storage
  std::vector<View> results;   // aten outputs, at their versions after the op

  const bundle::AtenOp* aten() const { return std::get_if<bundle::AtenOp>(&op); }
  std::string_view kind() const { return bundle::op_kind_name(op); }
};

struct SsaInput {
  std::string name;
  bundle::InputKind kind = bundle::InputKind::Input;
  View view;            // at version 0
  bool constant = false;
  std::string sha256;   // of its traced values, when recorded
};
struct SsaOutput {
  std::string name;
  View view;  // at the final version of its storage
};

// Tensors of the interface that share a storage.
struct AliasFact {
  enum class Kind { InputInput, OutputInput, OutputOutput } kind;
  std::string a, b;  // input/output names
  bool overlap;      // their element extents intersect
};

// A read of version 0 of a storage that is no input: data from outside the trace.
struct ExternalRead {
  size_t op;         // SsaProgram::ops index
  std::string path;  // operand path
  std::string tensor;
};

struct SsaProgram {
  std::string name;
  bundle::Role role = bundle::Role::Other;
  std::vector<bundle::Storage> storages;
  std::vector<Value> values;       // values[s] is version 0 of storage s
  std::vector<SsaOp> ops;
  std::vector<SsaInput> inputs;
  std::vector<SsaOutput> outputs;
  std::vector<ValueId> final_value;       // per storage: its version after the last op
  std::vector<std::vector<std::string>> storage_tensors;  // per storage: the tensor ids that view it
  std::vector<AliasFact> aliasing;
  std::vector<std::string> mutated_inputs;  // names of inputs whose storage some op writes (or may write)
  std::vector<ExternalRead> external_reads;

  const Value& value(ValueId v) const { return values.at(size_t(v)); }
  bool is_input_storage(int32_t storage) const;
};

// Builds the SSA form of `program` (which must belong to `b` and validate).
// Throws std::runtime_error naming what it cannot model.
SsaProgram to_ssa(const bundle::Bundle& b, const bundle::Program& program);

// "s3@v2" style names, for messages and dumps.
std::string value_name(const SsaProgram& p, ValueId v);
std::string describe(const SsaProgram& p);  // one line per op: reads and writes with versions

}  // namespace dirigo::program
