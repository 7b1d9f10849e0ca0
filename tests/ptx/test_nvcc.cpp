// Every PTX file nvcc produced from tests/ptx/cuda/*.cu (see CMakeLists.txt) parses and inlines.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "ptx/inline.h"
#include "ptx/parser.h"

namespace dirigo::ptx {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> nvcc_outputs() {
  std::vector<fs::path> out;
  fs::path dir = DIRIGO_PTX_NVCC_DIR;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".ptx") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Kernels each test source defines (mangled names contain the plain name).
const std::map<std::string, std::vector<std::string>> kKernels = {
    {"elementwise", {"vector_add", "grid_stride_scale", "add_float4", "gelu_erf", "gelu_tanh", "misc_math",
                     "sigmoid_double", "half_convert", "int_ops"}},
    {"reduction", {"tree_reduce", "shuffle_reduce", "atomics", "softmax_rows", "warp_ops"}},
    {"gemm", {"tiled_gemm", "call_func", "local_array", "use_constant", "matmul_2d_double"}},
    {"tensorcore", {"wmma_gemm_16x16", "async_copy_scale", "inline_asm_and_cg"}},
    {"hopper", {"cluster_exchange", "fp8_roundtrip", "block_barrier", "warp_intrinsics"}},
    {"mathfns", {"m_powf", "m_powf_const", "m_powf_intrinsic", "m_exp2f", "m_log2f", "m_sqrtf", "m_rsqrtf", "m_fdividef",
                 "m_div", "m_rcp", "m_expf", "m_logf", "m_tanhf", "m_sigmoid", "m_sigmoid_intrinsic", "m_silu",
                 "m_not_silu", "m_softplus", "m_softplus_logf", "m_bits", "m_sum_exp", "m_tanh_via_exp"}},
};

TEST(NvccOutput, EveryFileParsesAndInlines) {
  auto files = nvcc_outputs();
  if (files.empty()) GTEST_SKIP() << "no nvcc output in " << DIRIGO_PTX_NVCC_DIR;
  // sources x 2 architectures x 4 flag sets
  EXPECT_EQ(files.size(), kKernels.size() * 2 * 4);
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    Module m;
    ASSERT_NO_THROW(m = parse_file(path.string()));
    ASSERT_NO_THROW(inline_calls(m));
    std::string stem = path.filename().string().substr(0, path.filename().string().find('.'));
    ASSERT_TRUE(kKernels.count(stem));
    auto kernels = m.kernels();
    EXPECT_EQ(kernels.size(), kKernels.at(stem).size());
    for (const std::string& want : kKernels.at(stem)) {
      bool found = std::any_of(kernels.begin(), kernels.end(),
                               [&](const Function* f) { return f->name.find(want) != std::string::npos; });
      EXPECT_TRUE(found) << want;
    }
    for (const Function* k : kernels) {
      EXPECT_FALSE(k->body.empty()) << k->name;
      for (const Instruction& ins : k->body) EXPECT_NE(ins.op, Opcode::Call) << k->name << " line " << ins.loc.ptx_line;
    }
    bool lineinfo = path.string().find("lineinfo") != std::string::npos;
    EXPECT_EQ(!m.files.empty(), lineinfo);
    if (lineinfo) {  // most instructions carry a source line
      size_t with_line = 0, total = 0;
      for (const Function* k : kernels)
        for (const Instruction& ins : k->body) total++, with_line += ins.loc.file >= 0 && ins.loc.line > 0;
      EXPECT_GT(with_line * 10, total * 8);
    }
  }
}

// sm_90a-only lowering: cluster barriers and distributed shared memory, fp8 conversions, mbarrier.
TEST(NvccOutput, HopperInstructions) {
  auto files = nvcc_outputs();
  if (files.empty()) GTEST_SKIP();
  Module m = parse_file((fs::path(DIRIGO_PTX_NVCC_DIR) / "hopper.sm_90a.plain.ptx").string());
  std::set<Opcode> ops;
  bool fp8 = false;
  for (const Function& f : m.functions)
    for (const Instruction& i : f.body) {
      ops.insert(i.op);
      if (i.op == Opcode::Cvt && i.mod.types.size() == 2 && i.mod.types[0] == Type::E4M3x2 && i.mod.sat)
        fp8 = true;  // cvt.rn.satfinite.e4m3x2.f32
    }
  EXPECT_TRUE(ops.count(Opcode::Mapa));
  EXPECT_TRUE(ops.count(Opcode::Barrier));
  EXPECT_TRUE(ops.count(Opcode::Mbarrier));
  EXPECT_TRUE(ops.count(Opcode::Redux));
  EXPECT_TRUE(ops.count(Opcode::Match));
  EXPECT_TRUE(fp8);
}

// Fast math changes the lowering: expf -> ex2.approx without the range-reduction fma chain.
TEST(NvccOutput, FastMathAndDefaultDiffer) {
  auto files = nvcc_outputs();
  if (files.empty()) GTEST_SKIP();
  auto opcodes_of = [](const fs::path& p, const std::string& kernel) {
    Module m = parse_file(p.string());
    std::multiset<std::string> texts;
    for (const Function* k : m.kernels())
      if (k->name.find(kernel) != std::string::npos)
        for (const Instruction& i : k->body) texts.insert(i.text);
    return texts;
  };
  fs::path dir = DIRIGO_PTX_NVCC_DIR;
  auto plain = opcodes_of(dir / "elementwise.sm_90a.plain.ptx", "gelu_tanh");
  auto fast = opcodes_of(dir / "elementwise.sm_90a.fast.ptx", "gelu_tanh");
  EXPECT_EQ(fast.count("tanh.approx.f32"), 1u);
  EXPECT_EQ(plain.count("tanh.approx.f32"), 0u);
  EXPECT_GE(plain.count("ex2.approx.ftz.f32"), 1u);
}

// The .func call in gemm.cu is inlined: scaled_relu's selp and store_pair's two stores appear.
TEST(NvccOutput, FuncCallInlinedIntoKernel) {
  auto files = nvcc_outputs();
  if (files.empty()) GTEST_SKIP();
  Module m = parse_file((fs::path(DIRIGO_PTX_NVCC_DIR) / "gemm.sm_80.plain.ptx").string());
  const Function* k = nullptr;
  for (const Function* f : m.kernels())
    if (f->name.find("call_func") != std::string::npos) k = f;
  ASSERT_NE(k, nullptr);
  size_t calls_before = std::count_if(k->body.begin(), k->body.end(), [](auto& i) { return i.op == Opcode::Call; });
  EXPECT_EQ(calls_before, 2u);
  inline_calls(m);
  for (const Function* f : m.kernels())
    if (f->name.find("call_func") != std::string::npos) k = f;
  size_t global_stores = std::count_if(k->body.begin(), k->body.end(), [](auto& i) {
    return i.op == Opcode::St && i.mod.space == StateSpace::Global;
  });
  EXPECT_EQ(global_stores, 2u);
}

}  // namespace
}  // namespace dirigo::ptx
