// The CPU kill matrix: run a substrate's launch plan (python/dirigo/killmatrix.py writes it:
// spec.json + per-input binaries) with the substrate's PTX or a mutant's PTX through the concrete
// interpreter (src/exec run_concrete), and compare the output with the fp64 and fp32 PyTorch
// references. The numbers go into the store's `runs` table (docs/mutation.md, "Kill-matrix
// store"); deciding kills is `dirigo score`'s job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/exec.h"
#include "ptx/ast.h"

namespace dirigo::mutate {

struct KmTensor {
  int64_t numel = 0;
  exec::DType dtype = exec::DType::F32;
};

struct KmArg {
  int tensor = -1;        // >= 0: a tensor argument
  std::string type;       // scalar: s32, s64, u32, u64, f32, f64
  double value = 0;
};

struct KmLaunch {
  std::string kernel;     // the source name; matched to a PTX entry (mangled or not)
  exec::Dim3 grid, block;
  uint64_t shared_bytes = 0;
  std::vector<KmArg> args;
};

struct KmInput {
  int index = 0;
  std::string name, distribution, family;
  int64_t seed = 0;
};

struct KmSpec {
  std::string dir, substrate, problem;
  std::vector<KmTensor> tensors;
  std::vector<KmLaunch> launches;
  int output = 0;
  int64_t output_numel = 0;
  std::vector<KmInput> inputs;
};

struct KmData {
  std::vector<std::vector<double>> tensors;  // initial contents, per tensor
  std::vector<double> ref64, ref32;
};

// Reads DIR/spec.json; throws std::runtime_error naming what is wrong.
KmSpec read_spec(const std::string& dir);
// Reads a host-side mutant's launch plan (python/dirigo/killmatrix_host.py: {"launches": [...]}, one
// per launch of the spec, same arguments). A dimension may be 0 (a launch CUDA rejects); throws
// std::runtime_error naming the file on anything malformed.
std::vector<KmLaunch> read_launches(const std::string& path, const KmSpec& spec);
// Reads the binaries of input `k`; throws on a missing or short file.
KmData read_input(const KmSpec& spec, int k);

struct RunMetrics {
  std::string status = "crash";  // ok | crash | timeout | nonfinite
  double t_eq = 0, t_eq32 = 0, max_abs = 0;
  int64_t nonfinite_mismatch = 0;
  double ms = 0;
  std::string detail;
};

// The error columns of a run: t_eq against ref64, t_eq32 against ref32 (docs/mutation.md).
RunMetrics compare_output(const std::vector<double>& out, const std::vector<double>& ref64,
                          const std::vector<double>& ref32);

// The PTX entry for a source kernel name: exact, or a C++ mangling `_Z<len><name>...`.
// Empty when none (or several) match.
std::string find_entry(const std::vector<std::string>& entries, const std::string& kernel);

// Runs every launch of the plan on the input's data through the concrete interpreter and
// compares the output. Never throws: a PTX that does not parse is a crash with the reason.
RunMetrics run_cpu(const std::string& ptx_text, const KmSpec& spec, const KmData& data,
                   const exec::ExecOptions& opt = {});
// The same with a module already parsed and inlined (one parse serves every input).
RunMetrics run_cpu(const ptx::Module& module, const KmSpec& spec, const KmData& data,
                   const exec::ExecOptions& opt = {});
// Parses and inlines; throws ptx's error on bad PTX.
ptx::Module parse_for_run(const std::string& ptx_text);

}  // namespace dirigo::mutate

namespace dirigo::mutate {

// One kernel launch of a replayed bundle (python/dirigo/bundle_run.py, docs/mutation.md "Launching
// mutants from a traced bundle"): buffers are whole storages as float64 files, rewritten in place.
//   {"ptx": PATH, "kernel": ENTRY, "grid": [x,y,z], "block": [x,y,z], "shared_bytes": N,
//    "buffers": [{"path": P, "dtype": "f32"|"f64"|"i32"|"i64"|..., "numel": N}],
//    "args": [{"buffer": i, "byte_offset": k} | {"scalar": v, "type": "u32"|"s64"|"f32"|...}],
//    "max_ms": MS}
// Returns {"status": ok|crash|timeout|nonfinite, "detail", "ms", "findings": [schedule findings]}.
// Never throws: a malformed job is a crash whose detail says why.
struct LaunchJobCache;  // parsed PTX modules by path (one server serves many launches)
std::string run_launch_job(const std::string& job_json, LaunchJobCache* cache = nullptr);
LaunchJobCache* new_launch_job_cache();
void free_launch_job_cache(LaunchJobCache* c);

}  // namespace dirigo::mutate
