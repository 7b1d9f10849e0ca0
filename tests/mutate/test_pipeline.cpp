// Containers (.cu / .py), device-source extraction, PTX normalization, the results store and
// the pipeline's status/de-duplication logic (with a stand-in compiler, and with NVRTC when
// it is installed).
#include <filesystem>

#include <gtest/gtest.h>

#include "mutate/container.h"
#include "mutate/device_source.h"
#include "mutate/pipeline.h"
#include "mutate/store.h"

namespace dirigo::mutate {
namespace {

const char* kPy =
    "import torch\n"
    "# a comment with a \"quote\"\n"
    "src = \"\"\"\n"
    "#include <torch/extension.h>\n"
    "__global__ void k(const float* x, float* y, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = x[i] + 1.0f;  // \\\"done\\\"\\n\n"
    "}\n"
    "torch::Tensor f(torch::Tensor x) {\n"
    "    int n = x.numel();\n"
    "    k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), x.data_ptr<float>(), n);\n"
    "    return x;\n"
    "}\n"
    "\"\"\"\n"
    "cpp = \"torch::Tensor f(torch::Tensor x);\"\n";

const Rule& rule(const char* name) {
  const Rule* r = find_rule(name);
  if (!r) throw std::runtime_error(name);
  return *r;
}

TEST(Container, PythonStringIsDecodedAndWrittenBack) {
  Substrate s = substrate_from_text("m.py", kPy);
  ASSERT_EQ(s.units.size(), 1u);  // the cpp string has no kernel
  const Unit& u = s.units[0];
  EXPECT_NE(u.text.find("// \"done\"\n"), std::string::npos);  // escapes decoded
  SourceModel m(u.text);
  auto sites = find_sites(rule("plus2minus"), m);
  ASSERT_EQ(sites.size(), 2u);  // the block offset and `x[i] + 1.0f`; the launch's `+` is host code
  std::string file = mutant_file(s, 0, sites[1]);
  std::string expected = kPy;
  expected.replace(expected.find("x[i] + 1.0f"), 11, "x[i] - 1.0f");
  EXPECT_EQ(file, expected);
  // the written-back file decodes to exactly the mutated unit
  Substrate again = substrate_from_text("m.py", file);
  EXPECT_EQ(again.units[0].text, apply_site(m, sites[1]));
}

TEST(Container, HeaderInsertedInsideTheString) {
  Substrate s = substrate_from_text("m.py", kPy);
  SourceModel m(s.units[0].text);
  auto sites = find_sites(rule("store-fp16"), m);
  ASSERT_EQ(sites.size(), 1u);
  std::string file = mutant_file(s, 0, sites[0]);
  EXPECT_NE(file.find("src = \"\"\"#include <cuda_fp16.h>\n\n#include <torch/extension.h>"), std::string::npos);
  EXPECT_EQ(substrate_from_text("m.py", file).units[0].text, apply_site(m, sites[0]));
}

TEST(Container, SingleQuotedAndRawStrings) {
  std::string py = "a = 'x'\nsrc = \"__global__ void k(float* y) { y[0] = 1.0f * 2.0f; }\\n\"\nb = r'''__global__ void q(float* y) { y[0] = 3.0f * 4.0f; }\\n'''\n";
  Substrate s = substrate_from_text("m.py", py);
  ASSERT_EQ(s.units.size(), 2u);
  EXPECT_FALSE(s.units[0].triple);
  EXPECT_TRUE(s.units[1].raw_string);
  EXPECT_EQ(s.units[0].text.back(), '\n');
  EXPECT_EQ(s.units[1].text.substr(s.units[1].text.size() - 2), "\\n");  // raw: not an escape
  SourceModel m(s.units[0].text);
  auto sites = find_sites(rule("store-fp16"), m);
  ASSERT_EQ(sites.size(), 1u);
  std::string file = mutant_file(s, 0, sites[0]);
  // a newline cannot be written literally into a one-line string: it is escaped
  EXPECT_NE(file.find("src = \"#include <cuda_fp16.h>\\n__global__"), std::string::npos);
  EXPECT_EQ(substrate_from_text("m.py", file).units[0].text, apply_site(m, sites[0]));
}

TEST(Container, ErrorsNameTheFile) {
  EXPECT_THROW(substrate_from_text("none.py", "x = 'no kernels here'\n"), std::runtime_error);
  EXPECT_THROW(substrate_from_text("none.cu", "int main() {}\n"), std::runtime_error);
  try {
    load_substrate("/nonexistent/k.cu");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/k.cu"), std::string::npos);
  }
}

TEST(DeviceSource, HostCodeBlankedLinesKept) {
  Substrate s = substrate_from_text("m.py", kPy);
  SourceModel m(s.units[0].text);
  DeviceSource d = device_source(m);
  auto body = d.text.substr(d.text.find("#line 1\n") + 8);
  EXPECT_EQ(std::count(body.begin(), body.end(), '\n'), std::count(m.source().begin(), m.source().end(), '\n'));
  EXPECT_EQ(body.find("torch"), std::string::npos);
  EXPECT_EQ(body.find("<<<"), std::string::npos);
  EXPECT_NE(body.find("__global__ void k("), std::string::npos);
  EXPECT_NE(d.host_text.find("<<<"), std::string::npos);
  EXPECT_EQ(d.host_text.find("__global__"), std::string::npos);
}

TEST(DeviceSource, TemplateKernelsGetNameExpressions) {
  SourceModel m(
      "#include <cuda_fp16.h>\n#include <vector>\n"
      "template <typename scalar_t> __global__ void k(scalar_t* y) { y[0] = scalar_t(1); }\n"
      "template <typename T> __global__ void unlaunched(T* y) { y[0] = T(2); }\n"
      "template <int N> __global__ void fixed(float* y) { y[0] = N; }\n"
      "void go(float* y) { k<scalar_t><<<1, 1>>>(y); }\n");
  DeviceSource d = device_source(m);
  EXPECT_EQ(d.name_expressions, (std::vector<std::string>{"&k<float>", "&unlaunched<float>"}));
  EXPECT_NE(d.text.find("#include <cuda_fp16.h>"), std::string::npos);
  EXPECT_EQ(d.text.find("#include <vector>"), std::string::npos);
}

TEST(Ptx, NormalizationDropsNoise) {
  std::string a = "//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n.target sm_90\n.address_size 64\n"
                  "\t.file\t1 \"/tmp/a.cu\"\n.visible .entry k(\n\t.loc 1 5 3\n\tadd.f32 %f1, %f2, %f3; // x\n}\n";
  std::string b = ".version 8.0\n.target sm_80\n.visible .entry k(\n  add.f32 %f1, %f2, %f3;\n\n}\n";
  EXPECT_EQ(normalize_ptx(a), normalize_ptx(b));
  EXPECT_EQ(normalize_ptx(a), ".visible .entry k(\nadd.f32 %f1, %f2, %f3;\n}\n");
  EXPECT_NE(normalize_ptx(a), normalize_ptx("add.f32 %f1, %f2, %f4;\n"));
}

// Stand-in compiler: "PTX" is the source without whitespace; sources using __half fail.
class FakeCompiler : public Compiler {
 public:
  std::string id() const override { return "fake"; }
  CompileResult compile(const std::string& src, const std::vector<std::string>&) override {
    CompileResult r;
    ++calls;
    if (src.find("__half") != std::string::npos) {
      r.log = "error: __half is not allowed here";
      return r;
    }
    r.ok = true;
    for (char c : src)
      if (!std::isspace(static_cast<unsigned char>(c))) r.ptx.push_back(c);
    r.ms = 1;
    return r;
  }
  int calls = 0;
};

TEST(Pipeline, StatusesAndDeduplication) {
  Substrate s = substrate_from_text("m.py", kPy);
  FakeCompiler fake;
  PipelineOptions opt;
  opt.jobs = 2;
  SubstrateResult r = run_pipeline(s, opt, &fake);
  ASSERT_EQ(r.status, "ok") << r.message;
  ASSERT_GT(r.mutants.size(), 20u);
  std::map<std::string, int> first;
  int host_mutants = 0;
  for (const auto& m : r.mutants) {
    const Rule* rule = find_rule(m.rule);
    ASSERT_NE(rule, nullptr);
    EXPECT_EQ(m.family, rule->family);
    EXPECT_GT(m.line, 0u);
    if (m.status == "non-compiling") {
      EXPECT_NE(m.message.find("__half"), std::string::npos);
      EXPECT_TRUE(m.ptx_hash.empty());
      continue;
    }
    ASSERT_FALSE(m.image_hash.empty());
    if (m.status == "unique") {
      EXPECT_TRUE(first.emplace(m.image_hash, m.ordinal).second);
      EXPECT_NE(m.image_hash, r.image_hash);
    } else {
      ASSERT_EQ(m.status, "duplicate");
      if (m.duplicate_of == 0) EXPECT_EQ(m.image_hash, r.image_hash);
      else EXPECT_EQ(first.at(m.image_hash), m.duplicate_of);
    }
    if (rule->scope == Scope::Host) {
      ++host_mutants;
      EXPECT_EQ(m.status, "unique");  // same device code, different launch configuration
    }
  }
  EXPECT_EQ(host_mutants, 3);  // ceil2floor-grid, launch-grid-minus1, launch-block-halve
  auto fam = r.by_family();
  int total = 0;
  for (const auto& [f, c] : fam) {
    EXPECT_EQ(c.generated, c.non_compiling + c.duplicate_original + c.duplicate + c.unique) << f;
    total += c.generated;
  }
  EXPECT_EQ(total, static_cast<int>(r.mutants.size()));
  EXPECT_GT(fam["precision"].non_compiling, 0);  // the __half mutants
}

TEST(Pipeline, RuleAndFamilySelection) {
  Substrate s = substrate_from_text("m.py", kPy);
  PipelineOptions opt;
  opt.compile = false;
  opt.families = {"boundary"};
  auto r = run_pipeline(s, opt, nullptr);
  ASSERT_FALSE(r.mutants.empty());
  for (const auto& m : r.mutants) {
    EXPECT_EQ(m.family, "boundary");
    EXPECT_EQ(m.status, "generated");
  }
  opt.families = {};
  opt.rules = {"plus2minus"};
  EXPECT_EQ(run_pipeline(s, opt, nullptr).mutants.size(), 2u);
  opt.rules = {"no-such-rule"};
  EXPECT_THROW(run_pipeline(s, opt, nullptr), std::runtime_error);
  opt.rules = {};
  opt.families = {"numerics"};
  EXPECT_THROW(run_pipeline(s, opt, nullptr), std::runtime_error);
}

TEST(Pipeline, SubstrateThatDoesNotCompileIsUnsupported) {
  Substrate s = substrate_from_text("k.cu", "__global__ void k(__half* y) { y[0] = y[1] + y[2]; }\n");
  FakeCompiler fake;
  auto r = run_pipeline(s, PipelineOptions{}, &fake);
  EXPECT_EQ(r.status.rfind("UNSUPPORTED", 0), 0u);
  EXPECT_NE(r.message.find("__half"), std::string::npos);
  for (const auto& m : r.mutants) EXPECT_EQ(m.status, "skipped");
}

TEST(Store, RoundTripAndReplace) {
  auto path = std::filesystem::temp_directory_path() / ("dirigo-store-" + std::to_string(::getpid()) + ".sqlite");
  std::filesystem::remove(path);
  Substrate s = substrate_from_text("m.py", kPy);
  FakeCompiler fake;
  auto r = run_pipeline(s, PipelineOptions{}, &fake);
  {
    Store st(path.string());
    st.put_rules();
    int id = st.put_result(r);
    EXPECT_GT(id, 0);
    auto rows = st.query("SELECT COUNT(*) FROM mutants");
    EXPECT_EQ(std::stoi(rows[0][0]), static_cast<int>(r.mutants.size()));
    EXPECT_EQ(std::stoi(st.query("SELECT COUNT(*) FROM rules")[0][0]), static_cast<int>(all_rules().size()));
    auto sum = st.summary();
    for (const auto& [f, c] : r.by_family()) {
      EXPECT_EQ(sum[f].generated, c.generated) << f;
      EXPECT_EQ(sum[f].unique, c.unique) << f;
      EXPECT_EQ(sum[f].non_compiling, c.non_compiling) << f;
    }
    st.put_result(r);  // same path again: replaced, not doubled
    EXPECT_EQ(std::stoi(st.query("SELECT COUNT(*) FROM mutants")[0][0]), static_cast<int>(r.mutants.size()));
    // the kill-matrix tables exist and reference mutants
    st.query("INSERT INTO inputs(substrate_id, name, distribution, seed, family) "
             "VALUES((SELECT MAX(id) FROM substrates), 'kernelbench_randn/0', 'kernelbench_randn', 0, 'kernelbench')");
    // foreign keys are enforced: an input of a substrate that does not exist is refused
    EXPECT_THROW(st.query("INSERT INTO inputs(substrate_id, name) VALUES(999, 'x')"), std::runtime_error);
    EXPECT_THROW(st.query("SELECT nope FROM mutants"), std::runtime_error);
  }
  std::filesystem::remove(path);
  EXPECT_THROW(Store("/nonexistent-dir/x.sqlite"), std::runtime_error);
}

TEST(Nvrtc, CompilesDeduplicatesAndQuarantines) {
  std::string why;
  CompilerOptions co;
  co.backend = Backend::Nvrtc;
  auto c = make_compiler(co, &why);
  if (!c) {
    EXPECT_NE(why.find("NVRTC not found"), std::string::npos);
    GTEST_SKIP() << why;
  }
  // 4 * 2 folds: mul2plus (4 + 2) and int-const-minus1 (3 * 2) both give 6 -> same PTX.
  Substrate s = substrate_from_text("k.cu",
      "__device__ float unused_helper(float v) { return v * 3.0f; }\n"
      "__global__ void k(const float* x, float* y, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = x[i] * (4 * 2);\n}\n");
  PipelineOptions opt;
  opt.rules = {"mul2plus", "int-const-minus1", "mul2div", "acc-float2int", "store-fp16", "load-fp16"};
  opt.jobs = 2;
  auto r = run_pipeline(s, opt, c.get());
  ASSERT_EQ(r.status, "ok") << r.message;
  std::map<std::string, std::vector<const MutantRecord*>> by_rule;
  for (const auto& m : r.mutants) by_rule[m.rule].push_back(&m);
  // mutants inside the unused helper compile to the original image
  bool dup_original = false, dup_mutant = false;
  for (const auto& m : r.mutants) {
    dup_original |= (m.status == "duplicate" && m.duplicate_of == 0);
    if (m.status == "duplicate" && m.duplicate_of > 0) {
      dup_mutant = true;
      const auto& first = r.mutants[m.duplicate_of - 1];
      EXPECT_EQ(first.image_hash, m.image_hash);
      EXPECT_EQ(first.ptx_hash, m.ptx_hash);
    }
    if (m.status != "non-compiling") EXPECT_NE(m.ptx.find(".entry _Z1kPKfPfi("), std::string::npos);
  }
  EXPECT_TRUE(dup_original);
  EXPECT_TRUE(dup_mutant);
  ASSERT_FALSE(by_rule["store-fp16"].empty());
  EXPECT_EQ(by_rule["store-fp16"][0]->status, "unique");
}

TEST(Nvrtc, CompileErrorIsQuarantinedWithMessage) {
  std::string why;
  CompilerOptions co;
  co.backend = Backend::Nvrtc;
  auto c = make_compiler(co, &why);
  if (!c) GTEST_SKIP() << why;
  auto r = c->compile("__global__ void k(float* y) { y[0] = 1.0f % 2.0f; }\n", {});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("error"), std::string::npos);
  auto ok = c->compile("__global__ void k(float* y) { y[0] = 1.0f; }\n", {});
  EXPECT_TRUE(ok.ok) << ok.log;
  EXPECT_NE(ok.ptx.find(".visible .entry"), std::string::npos);
}

}  // namespace
}  // namespace dirigo::mutate

namespace dirigo::mutate {
namespace {

TEST(Nvcc, FallbackCompilesDeviceSourceWithTemplates) {
  CompilerOptions co;
  co.backend = Backend::Nvcc;
  std::string why;
  auto c = make_compiler(co, &why);
  if (!c) GTEST_SKIP() << why;
  SourceModel m(
      "#include <torch/extension.h>\n#include <float.h>\n"
      "template <typename scalar_t> __global__ void k(scalar_t* y, int64_t n) { if (n > 0) y[0] = FLT_MAX; }\n"
      "void go(torch::Tensor t) { k<scalar_t><<<1, 1>>>(t.data_ptr<scalar_t>(), 1); }\n");
  auto ds = device_source(m);
  auto r = c->compile(ds.text, ds.name_expressions);
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_NE(r.ptx.find(".entry _Z1kIfEvPT_"), std::string::npos) << r.ptx.substr(0, 2000);  // k<float>
  EXPECT_GT(r.cpu_ms, 0);
}

}  // namespace
}  // namespace dirigo::mutate

namespace dirigo::mutate {
namespace {

// Every rule over our substrates: many sites, every mutant is a well-formed container again.
TEST(Substrates, AllRulesGenerateWellFormedMutants) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(DIRIGO_SOURCE_DIR) / "examples" / "substrates";
  int files = 0;
  std::map<std::string, int> per_family;
  for (const auto& e : fs::directory_iterator(dir)) {
    Substrate s = load_substrate(e.path().string());
    PipelineOptions opt;
    opt.compile = false;
    auto r = run_pipeline(s, opt, nullptr);
    EXPECT_GT(r.mutants.size(), 20u) << e.path();  // the smallest elementwise substrates have ~45 sites
    for (const auto& m : r.mutants) {
      ++per_family[m.family];
      Substrate again = substrate_from_text(s.path, m.file_text);
      ASSERT_EQ(again.units.size(), s.units.size()) << m.rule << " broke the container of " << e.path();
      EXPECT_NE(m.file_text, s.file);
    }
    ++files;
  }
  EXPECT_GE(files, 6);
  for (const auto& f : families()) EXPECT_GT(per_family[f], 20) << f;
}

}  // namespace
}  // namespace dirigo::mutate
