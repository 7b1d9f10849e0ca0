// Golden verdict suite (issue #3 item 6): every tests/golden/cuda/*.cu is one kernel we wrote,
// compiled by nvcc during the build (tests/exec/CMakeLists.txt). Its header gives the expected
// verdict, the launch and the parameter bindings:
//   // EXPECT: OK | BUG <kind> [<consequence kind> ...] | UNSUPPORTED <text the reason must contain>
//   // KERNEL: name
//   // LAUNCH: grid=X,Y,Z block=X,Y,Z [shared=BYTES]
//   // PARAMS: x=f32[1024] idx=i32[64]{0,63} n=i32:1000 alpha=f32:0.5   (one per .param, in order)
//   // NVCC: flags (default -lineinfo)
//   // EXEC: ifconvert_thread_after=N [merges]   (optional ExecOptions, to exercise the many-bundle
//   //       paths on small launches; `merges`: some split must merge again, ExecResult::merged > 0;
//   //       `summaries`: some loop must be summarized, ExecResult::loops_summarized > 0)
// and the source lines of the bug (the first kind) carry the marker "@bug".
// OK kernels: no finding, not UNSUPPORTED, and the symbolic write sets (inverted per element and
// evaluated) equal the concrete interpreter on random inputs for every element of every tensor.
// BUG kernels: exactly the expected finding kinds, each naming the kernel, a PTX line, the
// marked source line (when compiled with -lineinfo), the thread, and for two-access kinds the
// other access and the other thread.
#include <algorithm>
#include <cstdio>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "exec_test_util.h"

namespace dirigo::exec::test {
namespace {

namespace fs = std::filesystem;

struct ParamSpec {
  std::string name;
  bool tensor = false;
  DType dtype = DType::F32;
  uint64_t elems = 0;
  double lo = -2, hi = 2;
  bool has_range = false;
  double scalar = 0;
};

struct Golden {
  std::string stem, path;
  std::string expect;                 // OK, BUG, UNSUPPORTED
  std::set<std::string> kinds;        // BUG kinds
  std::string primary;                // the first BUG kind: the root cause, reported at an @bug line
  std::string reason;                 // UNSUPPORTED substring
  std::string kernel;
  Dim3 grid, block;
  uint64_t shared = 0;
  std::vector<ParamSpec> params;
  std::set<int> bug_lines;
  ExecOptions options;
  bool expect_merges = false;
  bool expect_summaries = false;
};

std::string trim(std::string s) {
  while (!s.empty() && isspace((unsigned char)s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && isspace((unsigned char)s[i])) ++i;
  return s.substr(i);
}

DType parse_dtype(const std::string& s) {
  static const std::map<std::string, DType> m = {{"f32", DType::F32}, {"f64", DType::F64}, {"f16", DType::F16},
                                                 {"bf16", DType::BF16}, {"i8", DType::I8}, {"i16", DType::I16},
                                                 {"i32", DType::I32}, {"i64", DType::I64}, {"u8", DType::U8}};
  auto it = m.find(s);
  if (it == m.end()) throw std::runtime_error("unknown dtype " + s);
  return it->second;
}

Dim3 parse_dim(const std::string& s) {
  Dim3 d;
  uint32_t v[3] = {1, 1, 1};
  std::stringstream ss(s);
  std::string part;
  for (int i = 0; i < 3 && std::getline(ss, part, ','); ++i) v[i] = uint32_t(std::stoul(part));
  d.x = v[0]; d.y = v[1]; d.z = v[2];
  return d;
}

Golden parse_golden(const fs::path& p) {
  Golden g;
  g.stem = p.stem().string();
  g.path = p.string();
  std::ifstream in(p);
  std::string line;
  int lineno = 0;
  static const std::regex tensor_re(R"((\w+)=(\w+)\[(\d+)\](?:\{([-0-9.eE]+),([-0-9.eE]+)\})?)");
  static const std::regex scalar_re(R"((\w+)=(\w+):([-0-9.eE]+))");
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find("@bug") != std::string::npos && line.rfind("// EXPECT", 0) != 0) g.bug_lines.insert(lineno);
    auto field = [&](const char* key) -> std::optional<std::string> {
      std::string k = std::string("// ") + key + ":";
      if (line.rfind(k, 0) != 0) return std::nullopt;
      return trim(line.substr(k.size()));
    };
    if (auto v = field("EXPECT")) {
      std::stringstream ss(*v);
      ss >> g.expect;
      if (g.expect == "BUG") {
        std::string k;
        while (ss >> k) { if (g.primary.empty()) g.primary = k; g.kinds.insert(k); }
      }
      if (g.expect == "UNSUPPORTED") { std::getline(ss, g.reason); g.reason = trim(g.reason); }
    } else if (auto v = field("KERNEL")) {
      g.kernel = *v;
    } else if (auto v = field("EXEC")) {
      std::stringstream ss(*v);
      std::string tok;
      while (ss >> tok) {
        if (tok == "merges") { g.expect_merges = true; continue; }
        if (tok == "summaries") { g.expect_summaries = true, g.options.summarize_min_trips = 16; continue; }
        auto eq = tok.find('=');
        if (tok.substr(0, eq) != "ifconvert_thread_after" || eq == std::string::npos)
          throw std::runtime_error(g.stem + ": bad EXEC token " + tok);
        g.options.ifconvert_thread_after = std::stoull(tok.substr(eq + 1));
      }
    } else if (auto v = field("LAUNCH")) {
      std::stringstream ss(*v);
      std::string tok;
      while (ss >> tok) {
        auto eq = tok.find('=');
        std::string k = tok.substr(0, eq), val = tok.substr(eq + 1);
        if (k == "grid") g.grid = parse_dim(val);
        else if (k == "block") g.block = parse_dim(val);
        else if (k == "shared") g.shared = std::stoull(val);
        else throw std::runtime_error(g.stem + ": bad LAUNCH token " + tok);
      }
    } else if (auto v = field("PARAMS")) {
      std::stringstream ss(*v);
      std::string tok;
      while (ss >> tok) {
        std::smatch mt;
        ParamSpec ps;
        if (std::regex_match(tok, mt, tensor_re)) {
          ps.name = mt[1];
          ps.tensor = true;
          ps.dtype = parse_dtype(mt[2]);
          ps.elems = std::stoull(mt[3]);
          if (mt[4].matched) { ps.lo = std::stod(mt[4]); ps.hi = std::stod(mt[5]); ps.has_range = true; }
        } else if (std::regex_match(tok, mt, scalar_re)) {
          ps.name = mt[1];
          ps.dtype = parse_dtype(mt[2]);
          ps.scalar = std::stod(mt[3]);
        } else {
          throw std::runtime_error(g.stem + ": bad PARAMS token " + tok);
        }
        g.params.push_back(ps);
      }
    }
  }
  return g;
}

std::vector<std::string> golden_files() {
  std::vector<std::string> out;
  fs::path dir(DIRIGO_GOLDEN_CU_DIR);
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".cu") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Binds every parameter; tensors get random contents (integers within their range).
void bind(Harness& h, const Golden& g, unsigned seed) {
  for (size_t i = 0; i < g.params.size(); ++i) {
    const auto& p = g.params[i];
    if (p.tensor) {
      std::vector<double> data;
      if (dtype_is_float(p.dtype)) {
        data = random_vec(p.elems, seed * 131 + unsigned(i), p.lo, p.hi);
      } else {
        std::mt19937 gen(seed * 131 + unsigned(i));
        int64_t lo = p.has_range ? int64_t(p.lo) : 0, hi = p.has_range ? int64_t(p.hi) : 9;
        std::uniform_int_distribution<int64_t> u(lo, hi);
        data.resize(p.elems);
        for (auto& x : data) x = double(u(gen));
      }
      h.tensor(p.name, p.dtype, data);
    } else if (dtype_is_float(p.dtype)) {
      h.scalar_f(p.scalar);
    } else {
      h.scalar(int64_t(p.scalar));
    }
  }
  h.launch.grid = g.grid;
  h.launch.block = g.block;
  h.launch.dynamic_shared_bytes = g.shared;
}

bool two_access(const std::string& kind) {
  return kind == "shared-race" || kind == "warp-sync-race" || kind == "barrier-divergence";
}

int source_line(const std::string& src) {
  auto c = src.rfind(':');
  return c == std::string::npos ? -1 : std::atoi(src.c_str() + c + 1);
}

uint64_t linear(const Dim3& t, const Dim3& b) { return t.x + uint64_t(b.x) * (t.y + uint64_t(b.y) * t.z); }

// The final contents of tensor t per the symbolic write set, by enumerating every thread of the
// launch for every record (for data-dependent indices, which writers_of cannot invert).
std::vector<double> symbolic_by_enumeration(Harness& h, const ExecResult& r, int32_t t, Resolver& res) {
  std::vector<double> v = h.input.tensors.at(t);
  ir::Env env;
  env.elem = [&](int32_t tensor, int64_t i, ir::Sort s) {
    const auto& d = h.input.tensors.at(tensor);
    if (i < 0 || size_t(i) >= d.size()) throw std::runtime_error("element outside the input");
    return s == ir::Sort::Real ? ir::Value::of_real(d[i]) : ir::Value::of_bv(s, uint64_t(int64_t(d[i])));
  };
  ir::Evaluator ev(env);
  const Dim3 &B = r.launch.block, &G = r.launch.grid;
  for (const auto& w : r.writes) {  // records are in issue order
    if (w.tensor != t) continue;
    for (uint64_t bl = 0; bl < G.count(); ++bl)
      for (uint64_t tl = 0; tl < B.count(); ++tl) {
        ThreadCoord c{{uint32_t(tl % B.x), uint32_t(tl / B.x % B.y), uint32_t(tl / (uint64_t(B.x) * B.y))},
                      {uint32_t(bl % G.x), uint32_t(bl / G.x % G.y), uint32_t(bl / (uint64_t(G.x) * G.y))}};
        ir::Value p = ev(res.specialize(w.pred, c));
        if (p.undef || !p.bits) continue;
        ir::Value iv = ev(res.specialize(w.index, c)), x = ev(res.specialize(w.value, c));
        if (iv.undef || x.undef) throw std::runtime_error("undefined index or value written");
        size_t i = size_t(iv.bits);
        if (i >= v.size()) throw std::runtime_error("write outside the tensor");
        double d = x.sort == ir::Sort::Real ? x.real : double(int64_t(x.bits << (64 - ir::bv_width(x.sort))) >> (64 - ir::bv_width(x.sort)));
        switch (w.op) {
          case WriteOp::Store: case WriteOp::Exch: v[i] = d; break;
          case WriteOp::Add: v[i] += d; break;
          case WriteOp::Max: v[i] = std::max(v[i], d); break;
          case WriteOp::Min: v[i] = std::min(v[i], d); break;
          default: throw std::runtime_error("unmodeled atomic");
        }
      }
  }
  return v;
}

bool data_dependent_index(const ExecResult& r, int32_t t) {
  for (const auto& w : r.writes) if (w.tensor == t && w.index->has_data()) return true;
  return false;
}

class GoldenCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCuda, Verdict) {
  fs::path cu = fs::path(DIRIGO_GOLDEN_CU_DIR) / (GetParam() + ".cu");
  fs::path ptxp = fs::path(DIRIGO_GOLDEN_PTX_DIR) / (GetParam() + ".ptx");
  if (!fs::exists(ptxp)) GTEST_SKIP() << "no nvcc output " << ptxp;
  Golden g = parse_golden(cu);
  ASSERT_FALSE(g.expect.empty()) << cu << " has no EXPECT line";
  ASSERT_FALSE(g.kernel.empty()) << cu << " has no KERNEL line";
  auto m = std::make_shared<ptx::Module>(ptx::parse_file(ptxp.string()));
  ptx::inline_calls(*m);
  std::string ptx_text;
  { std::ifstream f(ptxp); std::stringstream ss; ss << f.rdbuf(); ptx_text = ss.str(); }
  bool lineinfo = ptx_text.find(".loc") != std::string::npos;
  size_t ptx_lines = size_t(std::count(ptx_text.begin(), ptx_text.end(), '\n')) + 1;

  Harness h;
  bind(h, g, 7);
  auto r = execute(h.ctx, *m, g.kernel, h.launch, g.options);
  std::string listing = to_text(h.ctx, r);
  std::printf("[ exec ] %s: %s, execute %.1f ms, %llu steps, %zu bundles, %llu merged\n", g.stem.c_str(), g.expect.c_str(),
              r.ms, (unsigned long long)r.steps, r.bundles.size(), (unsigned long long)r.merged);

  if (g.expect_merges) EXPECT_GT(r.merged, 0u) << "no split merged again";
  if (g.expect_summaries) EXPECT_GT(r.loops_summarized, 0u) << "no loop summarized";
  if (g.expect == "UNSUPPORTED") {
    ASSERT_TRUE(r.unsupported) << listing;
    EXPECT_NE(r.unsupported->find(g.reason), std::string::npos) << *r.unsupported;
    EXPECT_NE(r.unsupported->find("PTX line"), std::string::npos) << *r.unsupported;
    EXPECT_NE(r.unsupported->find(g.kernel), std::string::npos) << *r.unsupported;
    return;
  }
  if (g.expect == "OK") {
    ASSERT_FALSE(r.unsupported) << listing;
    ASSERT_TRUE(r.findings.empty()) << listing;
    ASSERT_FALSE(r.writes.empty()) << "kernel writes nothing: " << listing;
    // symbolic write sets == concrete interpreter, on two random inputs
    for (unsigned seed : {1u, 2u}) {
      Harness hc;
      bind(hc, g, seed);
      auto rs = execute(hc.ctx, *m, g.kernel, hc.launch, g.options);
      ASSERT_FALSE(rs.unsupported) << *rs.unsupported;
      auto c = run_concrete(hc.ctx, *m, g.kernel, hc.launch, hc.input);
      ASSERT_FALSE(c.unsupported) << *c.unsupported;
      ASSERT_TRUE(c.findings.empty()) << c.findings[0].kind << ": " << c.findings[0].message;
      Resolver res(hc.ctx, rs);
      size_t compared = 0;
      for (const auto& p : g.params) {
        if (!p.tensor) continue;
        int32_t t = hc.ids.at(p.name);
        const auto& conc = c.memory.tensors.at(t);
        ASSERT_EQ(conc.size(), p.elems);
        std::vector<double> enumerated;
        if (data_dependent_index(rs, t)) enumerated = symbolic_by_enumeration(hc, rs, t, res);
        for (size_t i = 0; i < p.elems; ++i) {
          double s = enumerated.empty() ? symbolic_value(hc, rs, t, int64_t(i), res) : enumerated[i];
          ASSERT_TRUE(close(s, conc[i], 1e-6)) << g.kernel << " " << p.name << "[" << i << "]: symbolic " << s
                                               << " concrete " << conc[i] << " (seed " << seed << ")";
          ++compared;
        }
      }
      EXPECT_GT(compared, 0u);
    }
    return;
  }
  ASSERT_EQ(g.expect, "BUG") << cu;
  std::set<std::string> got;
  for (const auto& f : r.findings) got.insert(f.kind);
  ASSERT_EQ(got, g.kinds) << listing;
  for (const auto& f : r.findings) {
    SCOPED_TRACE(f.kind + ": " + f.message);
    EXPECT_EQ(f.kernel, g.kernel);
    EXPECT_GT(f.where.ptx_line, 0);
    EXPECT_LE(size_t(f.where.ptx_line), ptx_lines);
    ASSERT_TRUE(f.thread) << "no thread coordinates";
    EXPECT_LT(linear(f.thread->tid, g.block), g.block.count());
    EXPECT_LT(linear(f.thread->ctaid, g.grid), g.grid.count());
    if (lineinfo) {
      EXPECT_NE(f.where.source.find(g.stem + ".cu:"), std::string::npos) << f.where.source;
      if (!g.bug_lines.empty() && f.kind == g.primary)
        EXPECT_TRUE(g.bug_lines.count(source_line(f.where.source))) << "reported at " << f.where.source << listing;
    }
    if (two_access(f.kind)) {
      EXPECT_GT(f.other.ptx_line, 0) << "the second access is missing";
      ASSERT_TRUE(f.other_thread) << "the second thread is missing";
      EXPECT_FALSE(f.thread->tid.x == f.other_thread->tid.x && f.thread->tid.y == f.other_thread->tid.y &&
                   f.thread->tid.z == f.other_thread->tid.z && linear(f.thread->ctaid, g.grid) == linear(f.other_thread->ctaid, g.grid));
      if (lineinfo && !g.bug_lines.empty())
        EXPECT_TRUE(g.bug_lines.count(source_line(f.other.source))) << "other access at " << f.other.source << listing;
      bool same_warp = linear(f.thread->ctaid, g.grid) == linear(f.other_thread->ctaid, g.grid) &&
                       linear(f.thread->tid, g.block) / 32 == linear(f.other_thread->tid, g.block) / 32;
      if (f.kind == "shared-race") EXPECT_FALSE(same_warp) << "a cross-warp race names two threads of one warp";
      if (f.kind == "warp-sync-race") EXPECT_TRUE(same_warp) << "a warp-synchronous race names two warps";
    }
    if (f.kind == "shuffle-inactive-lane") EXPECT_TRUE(f.other_thread) << "the inactive lane is not named";
  }
}

// The concrete interpreter against the hardware: tests/golden/gpu/<stem>.json holds the inputs of
// every tensor and what an H200 left in it (scripts/gpu/golden.sh). The symbolic mode is checked
// against the interpreter above; this is the oracle that shares no code with either.
double read_number(const nlohmann::json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s == "nan") return std::nan("");
    return s == "inf" ? INFINITY : -INFINITY;
  }
  return v.get<double>();
}

// The interpreter computes floats on reals (fp64) where the GPU rounds every operation to the dtype,
// and atomics may add in another order: a few units in the last place of the output's dtype.
double hardware_tol(DType d) {
  switch (d) {
    case DType::F16: return 2e-3;
    case DType::BF16: return 1.6e-2;
    case DType::F32: return 1e-5;
    case DType::F64: return 1e-12;
    default: return 0;
  }
}

bool same_value(double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= tol * (1 + std::fabs(b));
}

TEST_P(GoldenCuda, Hardware) {
  fs::path cu = fs::path(DIRIGO_GOLDEN_CU_DIR) / (GetParam() + ".cu");
  fs::path ptxp = fs::path(DIRIGO_GOLDEN_PTX_DIR) / (GetParam() + ".ptx");
  fs::path fix = fs::path(DIRIGO_GOLDEN_GPU_DIR) / (GetParam() + ".json");
  Golden g = parse_golden(cu);
  if (g.expect != "OK") GTEST_SKIP() << "only OK kernels have hardware outputs";
  if (!fs::exists(fix)) GTEST_SKIP() << "no GPU fixture " << fix << " (scripts/gpu/golden.sh)";
  if (!fs::exists(ptxp)) GTEST_SKIP() << "no nvcc output " << ptxp;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(fix));
  ASSERT_TRUE(j.value("gpu", false)) << fix << " is a dry run (no GPU outputs)";
  ASSERT_EQ(j.at("kernel").get<std::string>(), g.kernel);
  ASSERT_EQ(j.at("params").size(), g.params.size()) << "the PARAMS line changed since the fixture was recorded";
  auto m = std::make_shared<ptx::Module>(ptx::parse_file(ptxp.string()));
  ptx::inline_calls(*m);

  Harness h;
  for (size_t i = 0; i < g.params.size(); ++i) {
    const auto& p = g.params[i];
    const auto& q = j["params"][i];
    ASSERT_EQ(q.at("name").get<std::string>(), p.name);
    if (!p.tensor) {
      ASSERT_EQ(q.at("scalar").get<double>(), p.scalar) << p.name;
      if (dtype_is_float(p.dtype)) h.scalar_f(p.scalar); else h.scalar(int64_t(p.scalar));
      continue;
    }
    std::vector<double> data;
    for (const auto& v : q.at("input")) data.push_back(read_number(v));
    ASSERT_EQ(data.size(), p.elems) << p.name;
    h.tensor(p.name, p.dtype, std::move(data));
  }
  h.launch.grid = g.grid;
  h.launch.block = g.block;
  h.launch.dynamic_shared_bytes = g.shared;
  auto c = run_concrete(h.ctx, *m, g.kernel, h.launch, h.input, g.options);
  ASSERT_FALSE(c.unsupported) << *c.unsupported;
  ASSERT_TRUE(c.findings.empty()) << c.findings[0].kind << ": " << c.findings[0].message;
  size_t compared = 0, exact = 0;
  double worst = 0;
  for (size_t i = 0; i < g.params.size(); ++i) {
    const auto& p = g.params[i];
    if (!p.tensor) continue;
    const auto& out = j["params"][i].at("output");
    const auto& conc = c.memory.tensors.at(h.ids.at(p.name));
    ASSERT_EQ(out.size(), conc.size()) << p.name;
    for (size_t k = 0; k < conc.size(); ++k) {
      double hw = read_number(out[k]);
      ASSERT_TRUE(same_value(conc[k], hw, hardware_tol(p.dtype)))
          << g.kernel << " " << p.name << "[" << k << "]: interpreter " << conc[k] << ", GPU " << hw;
      if (conc[k] == hw || (std::isnan(conc[k]) && std::isnan(hw))) ++exact;
      else worst = std::max(worst, std::fabs(conc[k] - hw) / (1 + std::fabs(hw)));
      ++compared;
    }
  }
  std::printf("[ hw ] %s: %zu elements, %zu bit-equal, worst relative difference %.3g\n", g.stem.c_str(), compared,
              exact, worst);
}

INSTANTIATE_TEST_SUITE_P(Kernels, GoldenCuda, ::testing::ValuesIn(golden_files()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// The suite itself: enough kernels, every category represented at least three times.
TEST(GoldenCudaSuite, CoversEveryCategory) {
  auto files = golden_files();
  ASSERT_GE(files.size(), 60u);
  std::map<std::string, int> per_kind;
  int ok = 0;
  for (const auto& f : files) {
    Golden g = parse_golden(fs::path(DIRIGO_GOLDEN_CU_DIR) / (f + ".cu"));
    if (g.expect == "OK") ++ok;
    for (const auto& k : g.kinds) ++per_kind[k];
  }
  EXPECT_GE(ok, 30);
  for (const char* k : {"shared-race", "warp-sync-race", "barrier-divergence", "shuffle-inactive-lane",
                        "shuffle-outside-block", "global-out-of-bounds", "uninitialized-shared-read"})
    EXPECT_GE(per_kind[k], 3) << k;
  EXPECT_GE(per_kind["undef-store"] + per_kind["undef-address"] + per_kind["undef-branch"], 3);
}

}  // namespace
}  // namespace dirigo::exec::test
