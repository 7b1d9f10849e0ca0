// Recorded tensor values ("data/<program>.<name>.bin"): what the traced program read and wrote on
// the device, used to compare dirigo's model of a program with the real run (check/reproduce.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "bundle/io.h"

namespace dirigo::bundle {

// The `numel` elements of a data file, row-major, decoded from `dtype` (little-endian; fp16/bf16
// widened exactly, integers and bools as their values). Throws std::runtime_error naming the file
// when it is missing or its size is not numel * element_size(dtype).
std::vector<double> read_values(const FileSource& files, const std::string& rel_path, DType dtype, int64_t numel);

// IEEE binary16 / bfloat16 bit patterns to their exact values.
double half_to_double(uint16_t bits);
double bfloat16_to_double(uint16_t bits);

}  // namespace dirigo::bundle
