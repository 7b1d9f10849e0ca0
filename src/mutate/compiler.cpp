#include "mutate/compiler.h"

#include <dlfcn.h>
#include <glob.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bundle/sha256.h"

namespace fs = std::filesystem;

namespace dirigo::mutate {
namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

std::vector<std::string> glob_paths(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

std::vector<std::string> nvrtc_candidates() {
  std::vector<std::string> c;
  if (const char* e = std::getenv("DIRIGO_NVRTC")) c.emplace_back(e);
  std::vector<std::string> roots;
  if (const char* e = std::getenv("CUDA_HOME")) roots.emplace_back(e);
  roots.emplace_back("/usr/local/cuda");
  for (const auto& r : roots)
    for (const char* sub : {"/lib64/libnvrtc.so*", "/targets/x86_64-linux/lib/libnvrtc.so*", "/lib/libnvrtc.so*"})
      for (auto& p : glob_paths(r + sub)) c.push_back(p);
  // NVIDIA's Python wheels (pip install nvidia-cuda-nvrtc)
  std::vector<std::string> site = {"/usr/local/lib/python3*/dist-packages", "/usr/lib/python3/dist-packages",
                                   "/usr/local/lib/python3*/site-packages"};
  if (const char* h = std::getenv("HOME")) {
    site.push_back(std::string(h) + "/.local/lib/python3*/site-packages");
    site.push_back(std::string(h) + "/.pyenv/versions/*/lib/python3*/site-packages");
  }
  site.push_back("/opt/conda/lib/python3*/site-packages");
  for (const auto& s : site)
    for (const char* sub : {"/nvidia/cu13/lib/libnvrtc.so.*", "/nvidia/cuda_nvrtc/lib/libnvrtc.so.*"})
      for (auto& p : glob_paths(s + sub))
        if (p.find("builtins") == std::string::npos && p.find(".alt.") == std::string::npos) c.push_back(p);
  return c;
}

// The NVRTC C API, resolved with dlsym.
struct NvrtcApi {
  using Prog = void*;
  int (*create)(Prog*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*compile)(Prog, int, const char* const*) = nullptr;
  int (*ptx_size)(Prog, size_t*) = nullptr;
  int (*get_ptx)(Prog, char*) = nullptr;
  int (*log_size)(Prog, size_t*) = nullptr;
  int (*get_log)(Prog, char*) = nullptr;
  int (*destroy)(Prog*) = nullptr;
  int (*add_name)(Prog, const char*) = nullptr;
  int (*version)(int*, int*) = nullptr;
  const char* (*error_string)(int) = nullptr;
  std::string path;
};

const NvrtcApi* load_nvrtc(std::string* why) {
  static std::once_flag once;
  static NvrtcApi api;
  static std::string error;
  static bool ok = false;
  std::call_once(once, [] {
    auto cands = nvrtc_candidates();
    cands.emplace_back("libnvrtc.so");  // LD_LIBRARY_PATH / ld.so.cache
    for (const auto& p : cands) {
      // libnvrtc dlopens its builtins by soname: load them first from the same folder
      fs::path dir = fs::path(p).parent_path();
      if (!dir.empty())
        for (auto& b : glob_paths((dir / "libnvrtc-builtins.so.*").string()))
          if (b.find(".alt.") == std::string::npos) dlopen(b.c_str(), RTLD_NOW | RTLD_GLOBAL);
      void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      auto sym = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name)); };
      sym(api.create, "nvrtcCreateProgram");
      sym(api.compile, "nvrtcCompileProgram");
      sym(api.ptx_size, "nvrtcGetPTXSize");
      sym(api.get_ptx, "nvrtcGetPTX");
      sym(api.log_size, "nvrtcGetProgramLogSize");
      sym(api.get_log, "nvrtcGetProgramLog");
      sym(api.destroy, "nvrtcDestroyProgram");
      sym(api.add_name, "nvrtcAddNameExpression");
      sym(api.version, "nvrtcVersion");
      sym(api.error_string, "nvrtcGetErrorString");
      if (api.create && api.compile && api.get_ptx && api.ptx_size && api.destroy && api.log_size && api.get_log) {
        api.path = p;
        ok = true;
        return;
      }
      dlclose(h);
    }
    error = "NVRTC not found (set DIRIGO_NVRTC to libnvrtc.so, install the CUDA toolkit, or pip install nvidia-cuda-nvrtc)";
  });
  if (!ok && why) *why = error;
  return ok ? &api : nullptr;
}

std::string compute_arch(const std::string& arch) {
  // PTX only: a virtual architecture skips ptxas
  if (arch.rfind("sm_", 0) == 0) return "compute_" + arch.substr(3);
  return arch;
}

class NvrtcCompiler : public Compiler {
 public:
  NvrtcCompiler(const NvrtcApi* api, CompilerOptions opt) : api_(api), opt_(std::move(opt)) {
    int major = 0, minor = 0;
    if (api_->version) api_->version(&major, &minor);
    id_ = fmt::format("nvrtc {}.{}", major, minor);
    options_.push_back("-arch=" + compute_arch(opt_.arch));
    options_.push_back("-std=c++17");
    std::string inc = cuda_include_dir();
    if (!inc.empty()) options_.push_back("-I" + inc);
    for (const auto& e : opt_.extra) options_.push_back(e);
    if (opt_.minimal) options_.push_back("--minimal");
  }
  bool relax() override {
    auto it = std::find(options_.begin(), options_.end(), "--minimal");
    if (it == options_.end()) return false;
    options_.erase(it);
    return true;
  }
  std::string id() const override {
    std::string s = id_;
    for (const auto& o : options_) s += " " + o;
    return s;
  }
  CompileResult compile(const std::string& source, const std::vector<std::string>& names) override {
    CompileResult r;
    NvrtcApi::Prog prog = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    double c0 = thread_cpu_ms();
    int rc = api_->create(&prog, source.c_str(), "mutant.cu", 0, nullptr, nullptr);
    if (rc != 0) {
      r.log = fmt::format("nvrtcCreateProgram failed ({})", api_->error_string ? api_->error_string(rc) : "?");
      return r;
    }
    if (api_->add_name)
      for (const auto& n : names) api_->add_name(prog, n.c_str());
    std::vector<const char*> opts;
    for (const auto& o : options_) opts.push_back(o.c_str());
    rc = api_->compile(prog, static_cast<int>(opts.size()), opts.data());
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    r.cpu_ms = thread_cpu_ms() - c0;
    size_t n = 0;
    api_->log_size(prog, &n);
    if (n > 1) {
      r.log.resize(n);
      api_->get_log(prog, r.log.data());
      r.log.resize(n - 1);
    }
    if (rc == 0) {
      api_->ptx_size(prog, &n);
      r.ptx.resize(n);
      api_->get_ptx(prog, r.ptx.data());
      if (!r.ptx.empty() && r.ptx.back() == '\0') r.ptx.pop_back();
      r.ok = true;
    } else if (r.log.empty()) {
      r.log = api_->error_string ? api_->error_string(rc) : "compilation failed";
    }
    api_->destroy(&prog);
    return r;
  }

 private:
  const NvrtcApi* api_;
  CompilerOptions opt_;
  std::string id_;
  std::vector<std::string> options_;
};

std::string find_nvcc() {
  std::vector<std::string> c;
  if (const char* e = std::getenv("CUDA_HOME")) c.push_back(std::string(e) + "/bin/nvcc");
  c.emplace_back("/usr/local/cuda/bin/nvcc");
  for (const auto& p : c)
    if (access(p.c_str(), X_OK) == 0) return p;
  return "";
}

// Runs argv, capturing stdout+stderr; returns the exit status.
int run_capture(const std::vector<std::string>& argv, std::string& output, double* cpu_ms) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(pipefd[1], 1);
    dup2(pipefd[1], 2);
    close(pipefd[0]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  char buf[4096];
  ssize_t k;
  while ((k = read(pipefd[0], buf, sizeof buf)) > 0) output.append(buf, static_cast<size_t>(k));
  close(pipefd[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  if (cpu_ms)  // user + system time of the compiler process tree
    *cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class NvccCompiler : public Compiler {
 public:
  NvccCompiler(std::string nvcc, CompilerOptions opt) : nvcc_(std::move(nvcc)), opt_(std::move(opt)) {}
  std::string id() const override { return "nvcc " + nvcc_ + " -arch=" + opt_.arch; }
  CompileResult compile(const std::string& source, const std::vector<std::string>& names) override {
    CompileResult r;
    static std::atomic<int> counter{0};
    fs::path dir = fs::temp_directory_path() / fmt::format("dirigo-mutate-{}-{}", getpid(), counter++);
    fs::create_directories(dir);
    std::string src = source;
    // nvcc has no name expressions: take the addresses in host code to instantiate
    if (!names.empty()) {
      src += "\n__attribute__((used)) static void* dirigo_instances[] = {";
      for (const auto& n : names) src += "(void*)" + n + ",";
      src += "};\n";
    }
    { std::ofstream(dir / "mutant.cu") << src; }
    std::vector<std::string> argv = {nvcc_, "-ptx", "-arch=" + opt_.arch, "-std=c++17", "-o",
                                     (dir / "mutant.ptx").string(), (dir / "mutant.cu").string()};
    for (const auto& e : opt_.extra) argv.push_back(e);
    auto t0 = std::chrono::steady_clock::now();
    int rc = run_capture(argv, r.log, &r.cpu_ms);
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (rc == 0) {
      std::ifstream in(dir / "mutant.ptx");
      std::ostringstream ss;
      ss << in.rdbuf();
      r.ptx = ss.str();
      r.ok = true;
    } else if (r.log.empty()) {
      r.log = fmt::format("nvcc exited with {}", rc);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return r;
  }

 private:
  std::string nvcc_;
  CompilerOptions opt_;
};

// Cache wrapper: one JSON file per (compiler id, names, source) hash.
class CachedCompiler : public Compiler {
 public:
  CachedCompiler(std::unique_ptr<Compiler> inner, std::string dir) : inner_(std::move(inner)), dir_(std::move(dir)) {
    fs::create_directories(dir_);
  }
  std::string id() const override { return inner_->id(); }
  bool relax() override { return inner_->relax(); }
  CompileResult compile(const std::string& source, const std::vector<std::string>& names) override {
    std::string key_text = inner_->id() + "\n";
    for (const auto& n : names) key_text += n + "\n";
    key_text += source;
    std::string key = bundle::sha256_hex(key_text);
    fs::path file = fs::path(dir_) / key.substr(0, 2) / (key + ".json");
    {
      std::ifstream in(file);
      if (in) {
        try {
          auto j = nlohmann::json::parse(in);
          CompileResult r;
          r.ok = j.at("ok").get<bool>();
          r.ptx = j.at("ptx").get<std::string>();
          r.log = j.at("log").get<std::string>();
          r.ms = j.at("ms").get<double>();
          r.cpu_ms = j.value("cpu_ms", 0.0);
          r.cached = true;
          return r;
        } catch (const std::exception&) {
          // a damaged cache entry: compile again and overwrite it
        }
      }
    }
    CompileResult r = inner_->compile(source, names);
    fs::create_directories(file.parent_path());
    fs::path tmp = file;
    tmp += fmt::format(".tmp{}", getpid());
    {
      std::ofstream out(tmp);
      out << nlohmann::json{{"ok", r.ok}, {"ptx", r.ptx}, {"log", r.log}, {"ms", r.ms}, {"cpu_ms", r.cpu_ms}, {"compiler", inner_->id()}}.dump();
    }
    std::error_code ec;
    fs::rename(tmp, file, ec);
    return r;
  }

 private:
  std::unique_ptr<Compiler> inner_;
  std::string dir_;
};

}  // namespace

std::string find_nvrtc() {
  std::string why;
  const NvrtcApi* api = load_nvrtc(&why);
  return api ? api->path : "";
}

std::string cuda_include_dir() {
  std::vector<std::string> c;
  if (const char* e = std::getenv("CUDA_HOME")) c.push_back(std::string(e) + "/include");
  c.emplace_back("/usr/local/cuda/include");
  for (const auto& p : c)
    if (fs::exists(fs::path(p) / "cuda_fp16.h")) return p;
  return "";
}

std::unique_ptr<Compiler> make_compiler(const CompilerOptions& opt, std::string* why) {
  std::unique_ptr<Compiler> c;
  std::string reason;
  if (opt.backend == Backend::Auto || opt.backend == Backend::Nvrtc) {
    if (const NvrtcApi* api = load_nvrtc(&reason)) c = std::make_unique<NvrtcCompiler>(api, opt);
  }
  if (!c && (opt.backend == Backend::Auto || opt.backend == Backend::Nvcc)) {
    std::string nvcc = find_nvcc();
    if (!nvcc.empty()) c = std::make_unique<NvccCompiler>(nvcc, opt);
    else reason += (reason.empty() ? "" : "; ") + std::string("nvcc not found");
  }
  if (!c) {
    if (why) *why = reason.empty() ? "no compiler" : reason;
    return nullptr;
  }
  if (!opt.cache_dir.empty()) c = std::make_unique<CachedCompiler>(std::move(c), opt.cache_dir);
  return c;
}

std::string normalize_ptx(const std::string& ptx) {
  std::istringstream in(ptx);
  std::string line, out;
  while (std::getline(in, line)) {
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    std::string_view t(line);
    t.remove_prefix(b);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
    if (t.starts_with("//") || t.starts_with(".file") || t.starts_with(".loc") || t.starts_with(".version") ||
        t.starts_with(".target") || t.starts_with(".address_size") || t.starts_with("@@DWARF"))
      continue;
    size_t c = t.find("//");  // trailing comments
    if (c != std::string_view::npos) {
      t = t.substr(0, c);
      while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    }
    out.append(t);
    out.push_back('\n');
  }
  return out;
}

}  // namespace dirigo::mutate
