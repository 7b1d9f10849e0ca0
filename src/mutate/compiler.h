// Device-code compilation to PTX. NVRTC is loaded at run time with dlopen (so dirigo builds
// and runs without CUDA; `find_nvrtc()` says why it is missing), nvcc is the fallback.
// Results are cached under a directory keyed by sha256(compiler id + options + source).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace dirigo::mutate {

struct CompileResult {
  bool ok = false;
  std::string ptx;     // when ok
  std::string log;     // compiler messages (the reason when !ok)
  double ms = 0;       // wall time of the compilation itself (as first measured, also when cached)
  double cpu_ms = 0;   // CPU time of the compiling thread (robust on a loaded machine)
  bool cached = false;
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  virtual std::string id() const = 0;  // e.g. "nvrtc 13.0"; part of the cache key
  // `name_expressions` force template instantiation (NVRTC name expressions).
  virtual CompileResult compile(const std::string& source, const std::vector<std::string>& name_expressions) = 0;
  // Drops a speed option (NVRTC --minimal) that a source may need; false if nothing changed.
  virtual bool relax() { return false; }
};

enum class Backend { Auto, Nvrtc, Nvcc };

struct CompilerOptions {
  Backend backend = Backend::Auto;
  std::string arch = "sm_90";          // PTX for compute_<N>
  std::string cache_dir;               // "" = no cache
  std::vector<std::string> extra;      // extra compiler options
  bool minimal = true;                 // NVRTC --minimal (no texture/cudadevrt/driver types: faster)
};

// Where libnvrtc was found ("" when not found). Search: $DIRIGO_NVRTC, $CUDA_HOME and
// /usr/local/cuda lib64 + targets, Python wheels (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib), LD path.
std::string find_nvrtc();
std::string cuda_include_dir();  // "" when no CUDA headers are installed

// Returns nullptr and sets *why (e.g. "NVRTC not found (searched ...)") when no backend works.
std::unique_ptr<Compiler> make_compiler(const CompilerOptions& opt, std::string* why);

// PTX with comments, .file/.loc debug lines, the version/target header and blank lines removed.
std::string normalize_ptx(const std::string& ptx);

}  // namespace dirigo::mutate
