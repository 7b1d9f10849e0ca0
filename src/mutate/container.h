// Substrates: a .cu/.cuh file (one unit: the whole file) or a KernelBench-style .py whose CUDA
// source sits in Python string literals (one unit per literal that defines a __global__).
// Python escapes are decoded for compilation and a map keeps decoded offsets -> file offsets,
// so a mutant is written back into the same container form, touching only the edited bytes.
#pragma once

#include <string>
#include <vector>

#include "mutate/rule.h"

namespace dirigo::mutate {

struct Unit {
  std::string text;             // decoded CUDA source
  std::vector<uint32_t> raw;    // raw[i] = file offset of decoded byte i; raw[text.size()] = end
  uint32_t begin = 0, end = 0;  // file range of the literal's contents
  bool triple = true;           // Python: triple-quoted (newlines may stay literal)
  bool raw_string = false;      // Python: r"..." (no escapes)
  char quote = '"';
};

struct Substrate {
  enum class Kind { Cuda, Python };
  std::string path, file;  // file = the container's bytes
  Kind kind = Kind::Cuda;
  std::vector<Unit> units;
};

// Throws std::runtime_error naming the file when it cannot be read or holds no CUDA kernel.
Substrate load_substrate(const std::string& path);
Substrate substrate_from_text(const std::string& path, std::string file);

// The container's bytes with `site` applied to unit `unit` (including an added header line).
std::string mutant_file(const Substrate& s, size_t unit, const Site& site);

}  // namespace dirigo::mutate
