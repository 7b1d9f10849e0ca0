// The CPU kill matrix pieces: the error columns, entry lookup, spec reading, and one real run of a
// compiled kernel (and a mutant of it) through the concrete interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mutate/compiler.h"
#include "mutate/killmatrix.h"
#include "mutate/store.h"

namespace dirigo::mutate {
namespace {

namespace fs = std::filesystem;

TEST(KillMatrix, TeqIsTheSmallestAtolRtolThatAccepts) {
  // |out - ref| / (1 + |ref|): 0.5 / 2 = 0.25 at the second element
  auto m = compare_output({1.0, 1.5, -3.0}, {1.0, 1.0, -3.1}, {1.0, 1.0, -3.1});
  EXPECT_EQ(m.status, "ok");
  EXPECT_DOUBLE_EQ(m.t_eq, 0.25);
  EXPECT_DOUBLE_EQ(m.max_abs, 0.5);
  EXPECT_NEAR(m.t_eq32, 0.25, 1e-12);
  EXPECT_EQ(m.nonfinite_mismatch, 0);
}

TEST(KillMatrix, Fp32ReferenceIsSeparate) {
  auto m = compare_output({2.0}, {2.0}, {2.5});
  EXPECT_DOUBLE_EQ(m.t_eq, 0.0);
  EXPECT_DOUBLE_EQ(m.t_eq32, 0.5 / 3.5);
}

TEST(KillMatrix, NonFiniteWhereReferenceIsFiniteIsInfinite) {
  auto m = compare_output({NAN, 1.0, INFINITY}, {0.0, 1.0, INFINITY}, {0.0, 1.0, INFINITY});
  EXPECT_EQ(m.nonfinite_mismatch, 1);  // the inf matches an inf reference
  EXPECT_TRUE(std::isinf(m.t_eq));
  EXPECT_THROW(compare_output({1.0}, {1.0, 2.0}, {1.0, 2.0}), std::invalid_argument);
}

TEST(KillMatrix, EntryByNameOrMangling) {
  std::vector<std::string> e = {"_Z13softmax_kernelPKfPfi", "_Z11gemm_kernelIfEvPKT_S2_PS0_iii", "plain"};
  EXPECT_EQ(find_entry(e, "gemm_kernel"), "_Z11gemm_kernelIfEvPKT_S2_PS0_iii");
  EXPECT_EQ(find_entry(e, "plain"), "plain");
  EXPECT_EQ(find_entry(e, "softmax"), "");          // a prefix of another name is not a match
  EXPECT_EQ(find_entry({"_Z1kPf", "_Z1kPfi"}, "k"), "");  // overloads are ambiguous
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("dirigo_km_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_doubles(const fs::path& p, const std::vector<double>& v) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 8));
}

// y[i] = 2 * x[i] for i < n over 3 blocks of 4 threads; n = 10.
const char* kSpec = R"({"substrate": "s.py", "problem": "double_it",
  "tensors": [{"numel": 10, "dtype": "f32", "shape": [10]}, {"numel": 10, "dtype": "f32", "shape": [10]}],
  "launches": [{"kernel": "double_it", "grid": [3, 1, 1], "block": [4, 1, 1], "shared_bytes": 0,
                "args": [{"tensor": 0}, {"tensor": 1}, {"scalar": 10, "type": "s32"}]}],
  "output": 1, "output_numel": 10,
  "inputs": [{"index": 0, "name": "kernelbench_randn/0", "distribution": "kernelbench_randn", "seed": 0,
              "family": "kernelbench"}]})";

TEST(KillMatrix, SpecErrorsNameTheProblem) {
  auto d = temp_dir("bad");
  EXPECT_THROW(read_spec(d.string()), std::runtime_error);
  std::ofstream(d / "spec.json") << "{ not json";
  try {
    read_spec(d.string());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("spec.json"), std::string::npos);
  }
  std::string bad = kSpec;
  bad.replace(bad.find("\"tensor\": 1"), 11, "\"tensor\": 7");
  std::ofstream(d / "spec.json") << bad;
  EXPECT_THROW(read_spec(d.string()), std::runtime_error);
  std::ofstream(d / "spec.json") << kSpec;
  auto s = read_spec(d.string());
  EXPECT_EQ(s.launches.at(0).grid.x, 3u);
  EXPECT_THROW(read_input(s, 0), std::runtime_error);  // no binaries
  fs::remove_all(d);
}

TEST(KillMatrix, RunsCompiledKernelAndMutantConcretely) {
  CompilerOptions co;
  std::string why;
  auto c = make_compiler(co, &why);
  if (!c) GTEST_SKIP() << why;
  const std::string good = "extern \"C\" __global__ void double_it(const float* x, float* y, int n) {\n"
                           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2.0f * x[i];\n}\n";
  std::string bad = good;
  bad.replace(bad.find("2.0f"), 4, "3.0f");
  std::string oob = good;
  oob.replace(oob.find("if (i < n) "), 11, "");
  auto d = temp_dir("run");
  std::ofstream(d / "spec.json") << kSpec;
  std::vector<double> x = {1, -2, 3, 0.5, 4, 5, 6, 7, 8, -9}, zeros(10, 0.0), ref(10);
  for (int i = 0; i < 10; ++i) ref[i] = 2 * x[i];
  std::vector<double> init = x;
  init.insert(init.end(), zeros.begin(), zeros.end());
  write_doubles(d / "0.in", init);
  write_doubles(d / "0.ref64", ref);
  write_doubles(d / "0.ref32", ref);
  auto spec = read_spec(d.string());
  auto data = read_input(spec, 0);

  auto rg = c->compile(good, {});
  ASSERT_TRUE(rg.ok) << rg.log;
  auto mg = run_cpu(rg.ptx, spec, data);
  EXPECT_EQ(mg.status, "ok") << mg.detail;
  EXPECT_EQ(mg.t_eq, 0.0);

  auto rb = c->compile(bad, {});
  ASSERT_TRUE(rb.ok) << rb.log;
  auto mb = run_cpu(rb.ptx, spec, data);
  EXPECT_EQ(mb.status, "ok") << mb.detail;
  EXPECT_DOUBLE_EQ(mb.max_abs, 9.0);          // |3 * -9 - 2 * -9|
  EXPECT_DOUBLE_EQ(mb.t_eq, 9.0 / 19.0);

  auto ro = c->compile(oob, {});
  ASSERT_TRUE(ro.ok) << ro.log;
  auto mo = run_cpu(ro.ptx, spec, data);       // 12 threads, 10 elements: out-of-bounds access
  EXPECT_EQ(mo.status, "crash");
  EXPECT_NE(mo.detail.find("out-of-bounds"), std::string::npos) << mo.detail;

  auto mp = run_cpu(std::string(".version 8.0\n.target sm_90\n garbage"), spec, data);
  EXPECT_EQ(mp.status, "crash");
  EXPECT_EQ(mp.detail.rfind("PTX: ", 0), 0u);
  fs::remove_all(d);
}

// One launch of a replayed bundle (`dirigo launch-job`): buffers rewritten in place, a scalar bound
// by value, the job's grid as recorded or overridden; a malformed job is a crash with its reason.
TEST(KillMatrix, LaunchJobRewritesBuffers) {
  CompilerOptions co;
  std::string why;
  auto c = make_compiler(co, &why);
  if (!c) GTEST_SKIP() << why;
  auto r = c->compile("extern \"C\" __global__ void scale(const float* x, float* y, float a, int n) {\n"
                      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = a * x[i];\n}\n", {});
  ASSERT_TRUE(r.ok) << r.log;
  auto d = temp_dir("job");
  std::ofstream(d / "k.ptx") << r.ptx;
  write_doubles(d / "x.f64", {1, 2, 3, 4});
  write_doubles(d / "y.f64", {0, 0, 0, 0});
  auto job = [&](const std::string& grid, const std::string& kernel) {
    return fmt::format(R"({{"ptx": "{}", "kernel": "{}", "grid": {}, "block": [2, 1, 1], "shared_bytes": 0,
      "buffers": [{{"path": "{}", "dtype": "float32", "numel": 4}}, {{"path": "{}", "dtype": "f32", "numel": 4}}],
      "args": [{{"buffer": 0, "byte_offset": 0}}, {{"buffer": 1, "byte_offset": 4}}, {{"scalar": 2.5, "type": "f32"}},
               {{"scalar": 3, "type": "u32"}}]}})",
                       (d / "k.ptx").string(), kernel, grid, (d / "x.f64").string(), (d / "y.f64").string());
  };
  auto res = nlohmann::json::parse(run_launch_job(job("[2, 1, 1]", "scale")));
  EXPECT_EQ(res["status"], "ok") << res.dump();
  std::ifstream in(d / "y.f64", std::ios::binary);
  std::vector<double> y(4);
  in.read(reinterpret_cast<char*>(y.data()), 32);
  EXPECT_EQ(y, (std::vector<double>{0, 2.5, 5, 7.5}));  // y + 1 element: three outputs shifted by one
  res = nlohmann::json::parse(run_launch_job(job("[0, 1, 1]", "scale")));
  EXPECT_EQ(res["status"], "crash");
  EXPECT_NE(res["detail"].get<std::string>().find("zero dimension"), std::string::npos);
  res = nlohmann::json::parse(run_launch_job(job("[2, 1, 1]", "nope")));
  EXPECT_NE(res["detail"].get<std::string>().find("no PTX entry"), std::string::npos);
  res = nlohmann::json::parse(run_launch_job("{not json"));
  EXPECT_EQ(res["status"], "crash");
  EXPECT_EQ(res["detail"].get<std::string>().rfind("launch job: ", 0), 0u);
  fs::remove_all(d);
}

// A host-side mutant's plan (killmatrix_host.py): same launches, other grid/block/shared; a zero
// dimension is allowed in the file (CUDA rejects the launch: a crash row, not a spec error).
TEST(KillMatrix, HostMutantLaunchPlan) {
  auto d = temp_dir("host");
  std::ofstream(d / "spec.json") << kSpec;
  auto spec = read_spec(d.string());
  const std::string plan = (d / "m0007_launch-grid-minus1.launch.json").string();
  std::ofstream(plan) << R"({"launches": [{"kernel": "double_it", "grid": [2, 1, 1], "block": [4, 1, 1],
    "shared_bytes": 0, "args": [{"tensor": 0}, {"tensor": 1}, {"scalar": 10, "type": "s32"}]}]})";
  auto launches = read_launches(plan, spec);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].grid.x, 2u);
  EXPECT_EQ(launches[0].args.size(), 3u);
  std::ofstream(plan) << R"({"launches": [{"kernel": "double_it", "grid": [0, 1, 1], "block": [4, 1, 1],
    "shared_bytes": 0, "args": [{"tensor": 0}, {"tensor": 1}, {"scalar": 10, "type": "s32"}]}]})";
  auto zero = read_launches(plan, spec);
  EXPECT_EQ(zero[0].grid.count(), 0u);
  std::vector<double> init(20, 0.0), ref(10, 0.0);
  write_doubles(d / "0.in", init);
  write_doubles(d / "0.ref64", ref);
  write_doubles(d / "0.ref32", ref);
  KmSpec mutated = spec;
  mutated.launches = zero;
  auto m = run_cpu(std::string(".version 8.0\n.target sm_90\n.address_size 64\n"
                               ".visible .entry double_it(.param .u64 a, .param .u64 b, .param .u32 n) { ret; }\n"),
                   mutated, read_input(spec, 0));
  EXPECT_EQ(m.status, "crash");
  EXPECT_NE(m.detail.find("zero dimension"), std::string::npos) << m.detail;
  std::ofstream(plan) << R"({"launches": []})";  // not one plan per launch
  EXPECT_THROW(read_launches(plan, spec), std::runtime_error);
  std::ofstream(plan) << "{ broken";
  try {
    read_launches(plan, spec);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(".launch.json"), std::string::npos);
  }
  fs::remove_all(d);
}

TEST(KillMatrix, StoreHasTheContractColumns) {
  auto d = temp_dir("store");
  Store s((d / "km.sqlite").string());
  for (const char* col : {"t_eq", "t_eq32", "max_abs", "nonfinite_mismatch", "source", "status", "mutant_id"})
    EXPECT_FALSE(s.query(std::string("SELECT 1 FROM pragma_table_info('runs') WHERE name = '") + col + "'").empty()) << col;
  for (const char* col : {"problem", "distribution", "seed", "family"})
    EXPECT_FALSE(s.query(std::string("SELECT 1 FROM pragma_table_info('inputs') WHERE name = '") + col + "'").empty()) << col;
  EXPECT_FALSE(s.query("SELECT 1 FROM pragma_table_info('mutant_class') WHERE name = 'equivalent'").empty());
  fs::remove_all(d);
}

}  // namespace
}  // namespace dirigo::mutate
