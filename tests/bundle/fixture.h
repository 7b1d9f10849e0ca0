// A small, valid two-program bundle written by hand, plus helpers to write a
// manifest (possibly broken on purpose) into a fresh directory.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "bundle/sha256.h"

namespace dirigo::bundle::testing {

using J = nlohmann::ordered_json;

inline const char* kPtx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry _Z9fused_minPKfPfii(
  .param .u64 p0, .param .u64 p1, .param .u32 p2, .param .u32 p3)
{
  ret;
}
)";

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dirigo-bundle-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// programs[0] "ref": x -> relu -> out. programs[1] "new": a launch, a copy, a
// library call and aten ops; programs[1].ops[4].args[2] is a tensor argument.
inline J valid_manifest() {
  J ref = J::parse(R"({
    "name": "ref", "role": "reference", "source": "ref.py",
    "storages": [{"id": "s0", "nbytes": 4096, "device": "cuda"}, {"id": "s1", "nbytes": 4096, "device": "cuda"}],
    "tensors": [
      {"id": "t0", "storage": "s0", "offset": 0, "shape": [4, 256], "strides": [256, 1], "dtype": "float32"},
      {"id": "t1", "storage": "s1", "offset": 0, "shape": [4, 256], "strides": [256, 1], "dtype": "float32"}],
    "inputs": [{"name": "x", "tensor": "t0", "kind": "input"}],
    "outputs": [{"name": "out0", "tensor": "t1"}],
    "ops": [{"kind": "aten", "name": "aten::relu", "overload": "default", "schema": "relu(Tensor self) -> Tensor",
             "args": [{"tensor": "t0"}], "kwargs": {}, "outputs": ["t1"], "mutates": [], "from": "python"}]
  })");
  J cand = J::parse(R"({
    "name": "new", "role": "candidate", "source": "new.py",
    "storages": [{"id": "s0", "nbytes": 4096}, {"id": "s1", "nbytes": 4096}, {"id": "s2", "nbytes": 4096},
                 {"id": "s3", "nbytes": 1024}],
    "tensors": [
      {"id": "t0", "storage": "s0", "shape": [4, 256], "strides": [256, 1], "dtype": "float32"},
      {"id": "t1", "storage": "s1", "shape": [4, 256], "strides": [256, 1], "dtype": "float32"},
      {"id": "t2", "storage": "s2", "shape": [4, 256], "strides": [256, 1], "dtype": "float32"},
      {"id": "t3", "storage": "s3", "shape": [256], "strides": [1], "dtype": "float32"},
      {"id": "t4", "storage": "s0", "offset": 256, "shape": [256], "strides": [1], "dtype": "float32"}],
    "inputs": [{"name": "x", "tensor": "t0", "kind": "input"}, {"name": "w", "tensor": "t3", "kind": "parameter"}],
    "outputs": [{"name": "out0", "tensor": "t2"}],
    "ops": [
      {"kind": "aten", "name": "aten::empty_like", "args": [{"tensor": "t0"}],
       "kwargs": {"dtype": {"dtype": "float32"}, "memory_format": {"memory_format": "contiguous_format"}},
       "outputs": ["t1"], "from": "extension"},
      {"kind": "launch", "module": "m0", "kernel": "_Z9fused_minPKfPfii", "grid": [4, 1, 1], "block": [256, 1, 1],
       "shared_bytes": 0, "args": [{"tensor": "t0", "byte_offset": 0}, {"tensor": "t1", "byte_offset": 0},
                                   {"scalar": 4, "type": "s32"}, {"scalar": 256, "type": "u32"}],
       "stream": 0, "source_lines": true},
      {"kind": "copy", "dst": {"tensor": "t2", "byte_offset": 0}, "src": {"tensor": "t1", "byte_offset": 0}, "nbytes": 4096},
      {"kind": "library", "library": "cublas", "name": "cublasSgemm_v2",
       "args": {"transa": "N", "m": 4, "alpha": 1.0, "A": {"tensor": "t1", "byte_offset": 0}}, "writes": ["t2"]},
      {"kind": "aten", "name": "aten::add_", "overload": "Tensor",
       "args": [{"tensor": "t2"}, {"list": [{"scalar": 1, "type": "int"}, {"none": true}]}, {"tensor": "t4"}],
       "kwargs": {"alpha": {"scalar": 1.5, "type": "float"}}, "outputs": ["t2"], "mutates": ["t2"]}]
  })");
  J m;
  m["format"] = "dirigo-bundle";
  m["version"] = 1;
  m["created_by"] = J{{"tool", "dirigo 0.1.0"}, {"torch", "2.13.0"}};
  m["modules"] = J::array({J{{"id", "m0"}, {"path", "ptx/m0.ptx"}, {"sha256", sha256_hex(kPtx)},
                             {"compile", J{{"arch", "sm_90a"}, {"flags", J::array({"-O3"})}}}}});
  m["programs"] = J::array({ref, cand});
  m["match"] = J{{"inputs", J::array({J::array({"ref.x", "new.x"})})},
                 {"outputs", J::array({J::array({"ref.out0", "new.out0"})})}};
  m["tolerance"] = J{{"atol", 1e-2}, {"rtol", 1e-2}};
  return m;
}

// Writes `manifest` (and the fixture's PTX) into `dir`.
inline void write_bundle_dir(const std::filesystem::path& dir, const J& manifest, bool with_ptx = true) {
  write_text(dir / "manifest.json", manifest.dump(1));
  if (with_ptx) write_text(dir / "ptx" / "m0.ptx", kPtx);
}

}  // namespace dirigo::bundle::testing
