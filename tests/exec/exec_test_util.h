// Helpers for the exec tests: load nvcc output, bind tensors, and cross-check the symbolic
// write set (inverted per element, evaluated with ir::Evaluator) against the concrete
// interpreter and a hand reference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "exec/exec.h"
#include "ir/eval.h"
#include "ptx/inline.h"
#include "ptx/parser.h"

namespace dirigo::exec::test {

// Wall-clock budgets in these tests are sized for a Release build; AddressSanitizer's instrumentation
// runs the same work several times slower (scripts/sanitize.sh), so budgets scale by this factor there.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr double kBudgetScale = 10;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr double kBudgetScale = 10;
#else
inline constexpr double kBudgetScale = 1;
#endif
#else
inline constexpr double kBudgetScale = 1;
#endif

inline std::string ptx_path(const std::string& stem, bool fast = false) {
  return std::string(DIRIGO_EXEC_PTX_DIR) + "/" + stem + (fast ? ".fast.ptx" : ".plain.ptx");
}

// Parsed + inlined module, or nullptr (the test skips) when nvcc output is absent.
inline std::shared_ptr<ptx::Module> load_module(const std::string& stem, bool fast = false) {
  std::string p = ptx_path(stem, fast);
  if (!std::filesystem::exists(p)) return nullptr;
  auto m = std::make_shared<ptx::Module>(ptx::parse_file(p));
  ptx::inline_calls(*m);
  return m;
}

#define DIRIGO_LOAD(var, stem)                                              \
  auto var = ::dirigo::exec::test::load_module(stem);                       \
  if (!var) GTEST_SKIP() << "no nvcc output " << ::dirigo::exec::test::ptx_path(stem)

struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<double> data;
};

// A launch whose tensors have concrete contents for the cross-check.
struct Harness {
  ir::Context ctx;
  Launch launch;
  ConcreteMemory input;
  std::map<std::string, int32_t> ids;
  static inline int counter = 0;

  int32_t tensor(const std::string& name, DType d, std::vector<double> data) {
    // unique names per harness so tests do not share tensor ids by accident
    int32_t id = ctx.tensor(name + "#" + std::to_string(counter));
    ids[name] = id;
    launch.params.push_back(ParamBinding::tensor_arg(id, d, data.size()));
    input.tensors[id] = std::move(data);
    return id;
  }
  void scalar(int64_t v) { launch.params.push_back(ParamBinding::int_arg(v)); }
  void scalar_f(double v) { launch.params.push_back(ParamBinding::float_arg(v)); }
  Harness() { ++counter; }
};

inline std::vector<double> random_vec(size_t n, unsigned seed, double lo = -2, double hi = 2) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = double(float(u(g)));
  return v;
}

// Value of tensor[flat] after the launch according to the symbolic result.
inline double symbolic_value(Harness& h, const ExecResult& r, int32_t t, int64_t flat, Resolver& res) {
  auto ws = writers_of(h.ctx, r, t, flat, &res);
  double v = h.input.tensors.at(t)[flat];
  ir::Env env;
  env.elem = [&](int32_t tensor, int64_t i, ir::Sort s) {
    const auto& d = h.input.tensors.at(tensor);
    if (i < 0 || size_t(i) >= d.size()) throw std::runtime_error("element outside the input");
    return s == ir::Sort::Real ? ir::Value::of_real(d[i]) : ir::Value::of_bv(s, uint64_t(int64_t(d[i])));
  };
  ir::Evaluator ev(env);
  for (const auto& w : ws) {
    ir::Value x = ev(w.value);
    if (x.undef) throw std::runtime_error("undefined value written");
    double d = x.sort == ir::Sort::Real ? x.real : double(int64_t(x.bits << (64 - ir::bv_width(x.sort))) >> (64 - ir::bv_width(x.sort)));
    switch (r.writes[w.write].op) {
      case WriteOp::Store: case WriteOp::Exch: v = d; break;
      case WriteOp::Add: v += d; break;
      case WriteOp::Max: v = std::max(v, d); break;
      case WriteOp::Min: v = std::min(v, d); break;
      default: throw std::runtime_error("unmodeled atomic");
    }
  }
  return v;
}

inline bool close(double a, double b, double tol = 1e-9) { return std::fabs(a - b) <= tol * (1 + std::fabs(b)); }

// Symbolic (inverted + evaluated) == concrete interpreter == reference, for every element of `out`.
inline void cross_check(Harness& h, const ptx::Module& m, const std::string& kernel, const std::string& out,
                        const std::vector<double>& reference, double tol = 1e-9) {
  auto r = execute(h.ctx, m, kernel, h.launch);
  ASSERT_FALSE(r.unsupported) << *r.unsupported;
  ASSERT_TRUE(r.findings.empty()) << to_text(h.ctx, r);
  auto c = run_concrete(h.ctx, m, kernel, h.launch, h.input);
  ASSERT_FALSE(c.unsupported) << *c.unsupported;
  ASSERT_TRUE(c.findings.empty()) << c.findings[0].kind << " " << c.findings[0].message;
  int32_t t = h.ids.at(out);
  Resolver res(h.ctx, r);
  const auto& conc = c.memory.tensors.at(t);
  ASSERT_EQ(conc.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    double s = symbolic_value(h, r, t, int64_t(i), res);
    ASSERT_TRUE(close(s, reference[i], tol)) << kernel << " " << out << "[" << i << "]: symbolic " << s << " reference "
                                             << reference[i];
    ASSERT_TRUE(close(conc[i], reference[i], tol)) << kernel << " " << out << "[" << i << "]: concrete " << conc[i]
                                                   << " reference " << reference[i];
  }
}

inline bool has_finding(const ExecResult& r, const std::string& kind) {
  for (const auto& f : r.findings) if (f.kind == kind) return true;
  return false;
}

}  // namespace dirigo::exec::test
