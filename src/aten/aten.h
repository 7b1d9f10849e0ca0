// Per-element semantics of ATen operators (paper §3.3.5, §3.4 "Per-element
// equations"): for an op call and a concrete location of one of its outputs,
// the ir expression over the elements of its input tensors that PyTorch stores
// there. Reals model every float dtype; see docs/aten.md for the conventions.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "aten/op_call.h"
#include "ir/expr.h"

namespace dirigo::aten {

// Thrown for an unknown operator or an argument value the semantics do not
// model. what() is "UNSUPPORTED: aten op <name> (<reason>)".
class Unsupported : public std::runtime_error {
 public:
  Unsupported(std::string op, std::string reason);
  const std::string& op() const { return op_; }
  const std::string& reason() const { return reason_; }
 private:
  std::string op_, reason_;
};

// "aten::add" + "Tensor" / "aten.add.Tensor" / "add.Tensor" -> "add.Tensor";
// the default overload has no suffix ("aten.relu.default" -> "relu").
std::string canonical_name(std::string_view name, std::string_view overload = "");

// The value of outputs[output_index] at multi-index out_index (logical, in that
// output's shape). Throws Unsupported (see above) and std::invalid_argument for
// malformed calls (missing argument, wrong kind, index out of range).
ir::Expr element(ir::Context& ctx, const OpCall& call, int output_index, std::span<const int64_t> out_index);
// The value of a pointwise op's output at a symbolic multi-index (BV64 expressions, typically over
// a reduction's Bound indices), its operands read through call.read_sym; nullptr when the op is not
// pointwise or an operand cannot be read symbolically.
ir::Expr element_sym(ir::Context& ctx, const OpCall& call, int output_index, std::span<const ir::Expr> out_index);
// Same with a row-major flat index into the output's logical shape.
ir::Expr element_flat(ir::Context& ctx, const OpCall& call, int output_index, int64_t flat_index);

bool is_supported(std::string_view name, std::string_view overload = "");
// Canonical names of every registered overload, sorted.
std::vector<std::string> supported_ops();
// The registered overload a call resolves to ("relu_" -> "relu", "add.out" -> "add.Tensor"); "" if none.
std::string resolved_name(std::string_view name, std::string_view overload = "");

// Arguments an op writes in place without returning them (native_batch_norm in training mode
// updates running_mean and running_var), in schema order. Their new values are outputs
// `returns + k` of element(): describe them in call.outputs after the returned tensors.
// Ops without such arguments give {returns = 0, names = {}}. Throws Unsupported for unknown ops.
struct WrittenArguments {
  int returns = 0;
  std::vector<std::string> names;
};
WrittenArguments written_arguments(std::string_view name, std::string_view overload = "");

// The schema parameter names an overload's handler reads arguments by (positional
// order, kwarg-only ones last); throws Unsupported for unknown ops.
std::vector<std::string> op_parameters(std::string_view name, std::string_view overload = "");

}  // namespace dirigo::aten
