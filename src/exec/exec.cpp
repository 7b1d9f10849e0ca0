#include "exec/exec.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "exec/machine.h"
#include "ir/print.h"
#include "ptx/matrix.h"

namespace dirigo::exec {

unsigned dtype_bytes(DType d) {
  switch (d) {
    case DType::F64: case DType::I64: return 8;
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: case DType::I16: return 2;
    default: return 1;
  }
}
bool dtype_is_float(DType d) { return d == DType::F32 || d == DType::F64 || d == DType::F16 || d == DType::BF16; }
ir::Sort dtype_sort(DType d) { return dtype_is_float(d) ? ir::Sort::Real : ir::bv_sort(dtype_bytes(d) * 8); }

std::string_view write_op_name(WriteOp o) {
  switch (o) {
    case WriteOp::Store: return "store";
    case WriteOp::Add: return "atomic-add";
    case WriteOp::Min: return "atomic-min";
    case WriteOp::Max: return "atomic-max";
    case WriteOp::Exch: return "atomic-exch";
    default: return "atomic-other";
  }
}

std::string ThreadCoord::str() const {
  return fmt::format("tid=({},{},{}) ctaid=({},{},{})", tid.x, tid.y, tid.z, ctaid.x, ctaid.y, ctaid.z);
}

ThreadVars::ThreadVars(ir::Context& ctx, const Dim3& b, const Dim3& g) : block(b), grid(g) {
  const char* axes = "xyz";
  uint32_t bd[3] = {b.x, b.y, b.z}, gd[3] = {g.x, g.y, g.z};
  for (int i = 0; i < 3; ++i) {
    // a dimension of extent 1 is the constant 0, so it never shows up in expressions
    tid[i] = bd[i] == 1 ? ctx.bv_const(ir::Sort::BV32, 0)
                        : ctx.var(std::string("tid.") + axes[i], ir::Sort::BV32, {0, uint64_t(bd[i]) - 1});
    ctaid[i] = gd[i] == 1 ? ctx.bv_const(ir::Sort::BV32, 0)
                          : ctx.var(std::string("ctaid.") + axes[i], ir::Sort::BV32, {0, uint64_t(gd[i]) - 1});
  }
}

ir::Expr ThreadVars::block_linear(ir::Context& ctx) const {
  auto z = [&](ir::Expr v) { return ctx.zext(v, ir::Sort::BV64); };
  return ctx.bv_add(std::vector<ir::Expr>{z(ctaid[0]), ctx.bv_mul(z(ctaid[1]), ctx.bv_const(ir::Sort::BV64, grid.x)),
                                          ctx.bv_mul(z(ctaid[2]), ctx.bv_const(ir::Sort::BV64, uint64_t(grid.x) * grid.y))});
}

namespace {
template <class Fn>
void guarded(const ptx::Module& m, const std::string& kernel, std::optional<std::string>& unsupported, bool& out_of_time,
             Fn&& fn) {
  const ptx::Function* f = m.find_function(kernel);
  if (!f || !f->is_entry || !f->has_body) {
    unsupported = "no kernel named " + kernel;
    return;
  }
  std::optional<ptx::Function> lowered;  // stmatrix/ldmatrix as shuffles and shared accesses
  if (std::any_of(f->body.begin(), f->body.end(), [](const ptx::Instruction& in) {
        return in.op == ptx::Opcode::Stmatrix || in.op == ptx::Opcode::Ldmatrix;
      })) {
    lowered = *f;
    if (ptx::lower_matrix_moves(*lowered)) f = &*lowered;
  }
  try {
    fn(*f);
  } catch (const Unsupported& e) {
    unsupported = e.what();
  } catch (const TimeLimit& e) {
    unsupported = e.what();
    out_of_time = true;
  } catch (const std::exception& e) {
    unsupported = std::string("internal: ") + e.what();
  }
}
}  // namespace

ExecResult execute(ir::Context& ctx, const ptx::Module& m, const std::string& kernel, const Launch& launch,
                   const ExecOptions& opt) {
  ExecResult r;
  r.kernel = kernel;
  r.launch = launch;
  guarded(m, kernel, r.unsupported, r.out_of_time, [&](const ptx::Function& f) {
    try {
      Machine mach(ctx, m, f, launch, opt, r, nullptr);
      mach.run();
    } catch (const SummaryConflict&) {
      r = ExecResult{};
      r.kernel = kernel;
      r.launch = launch;
      r.summaries_retracted = true;
      ExecOptions stepped = opt;
      stepped.summarize_loops = false;
      Machine mach(ctx, m, f, launch, stepped, r, nullptr);
      mach.run();
    }
  });
  return r;
}

ConcreteResult run_concrete(ir::Context& ctx, const ptx::Module& m, const std::string& kernel, const Launch& launch,
                            const ConcreteMemory& input, const ExecOptions& opt) {
  ConcreteResult cr;
  ExecResult r;
  bool out_of_time = false;
  guarded(m, kernel, cr.unsupported, out_of_time, [&](const ptx::Function& f) {
    Machine mach(ctx, m, f, launch, opt, r, &input);
    mach.run();
    cr.memory = std::move(mach.memory());
  });
  cr.findings = std::move(r.findings);
  return cr;
}

// Printing with elision can index missing operands in ir::to_string (elided ite arms), so
// print in full and cut the text instead.
std::string short_string(const ir::Context& ctx, ir::Expr e, size_t max_chars) {
  ir::PrintOptions po;
  po.max_nodes = SIZE_MAX;
  std::string s = ir::to_string(ctx, e, po);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + fmt::format("…({} more chars)", s.size() - max_chars);
  return s;
}

std::string to_text(const ir::Context& ctx, const ExecResult& r, size_t max_writes) {
  std::ostringstream os;
  const auto& L = r.launch;
  os << fmt::format("kernel {} grid=({},{},{}) block=({},{},{}) shared={}B: {} bundle(s), {} write record(s), {} epoch(s), "
                    "{} steps, {:.1f} ms\n",
                    r.kernel, L.grid.x, L.grid.y, L.grid.z, L.block.x, L.block.y, L.block.z, r.smem_bytes, r.bundles.size(),
                    r.writes.size(), r.smem_tensor.size(), r.steps, r.ms);
  if (r.loops_summarized) os << fmt::format("  loops summarized: {}\n", r.loops_summarized);
  if (r.summaries_retracted) os << "  loop summaries retracted (the launch writes a tensor they read)\n";
  if (!r.idioms.empty()) {
    os << "  math idioms:";
    for (auto& i : r.idioms) os << " " << i;
    os << "\n";
  }
  for (size_t i = 0; i < r.bundles.size(); ++i)
    os << fmt::format("  bundle {}: {} ({} writes) [{}]\n", i, short_string(ctx, r.bundles[i].pred),
                      r.bundles[i].writes.size(), r.bundles[i].end);
  for (size_t i = 0; i < r.writes.size() && i < max_writes; ++i) {
    const auto& w = r.writes[i];
    os << fmt::format("  write {} line {}: {}[{}] {} {}\n", i, w.where.ptx_line, ctx.tensor_name(w.tensor),
                      short_string(ctx, w.index), w.op == WriteOp::Store ? "=" : std::string(write_op_name(w.op)) + " ",
                      short_string(ctx, w.value));
  }
  if (r.writes.size() > max_writes) os << fmt::format("  ... {} more write records\n", r.writes.size() - max_writes);
  for (const auto& f : r.findings) {
    os << fmt::format("BUG {} in {} at PTX line {}{}: {}", f.kind, f.kernel, f.where.ptx_line,
                      f.where.source.empty() ? "" : " (" + f.where.source + ")", f.message);
    if (f.thread) os << " [" << f.thread->str() << "]";
    if (f.other.ptx_line)
      os << fmt::format(" conflicting with PTX line {}{}", f.other.ptx_line, f.other.source.empty() ? "" : " (" + f.other.source + ")");
    if (f.other_thread) os << " [" << f.other_thread->str() << "]";
    os << "\n";
  }
  if (r.unsupported) os << "UNSUPPORTED: " << *r.unsupported << "\n";
  return os.str();
}

}  // namespace dirigo::exec
