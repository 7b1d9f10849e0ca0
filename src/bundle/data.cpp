#include "bundle/data.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace dirigo::bundle {

double half_to_double(uint16_t bits) {
  int sign = bits >> 15, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double magnitude;
  if (exponent == 0) magnitude = std::ldexp(mantissa, -24);  // subnormal
  else if (exponent == 31) magnitude = mantissa ? std::nan("") : INFINITY;
  else magnitude = std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -magnitude : magnitude;
}

double bfloat16_to_double(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

namespace {
template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // data files are little-endian, as is every host dirigo runs on
  return v;
}
}  // namespace

std::vector<double> read_values(const FileSource& files, const std::string& rel_path, DType dtype, int64_t numel) {
  static_assert(std::endian::native == std::endian::little);
  if (rel_path.empty()) throw std::runtime_error("no data file recorded");
  auto bytes = files.read(rel_path);
  if (!bytes) throw std::runtime_error(fmt::format("data file {} not found in the bundle", rel_path));
  size_t size = element_size(dtype);
  if (numel < 0 || bytes->size() != size_t(numel) * size)
    throw std::runtime_error(fmt::format("data file {} has {} bytes, {} elements of {} need {}", rel_path,
                                         bytes->size(), numel, dtype_name(dtype), size_t(std::max<int64_t>(numel, 0)) * size));
  std::vector<double> values(static_cast<size_t>(numel));
  const char* p = bytes->data();
  for (int64_t i = 0; i < numel; ++i, p += size) {
    switch (dtype) {
      case DType::Float64: values[i] = load<double>(p); break;
      case DType::Float32: values[i] = load<float>(p); break;
      case DType::Float16: values[i] = half_to_double(load<uint16_t>(p)); break;
      case DType::BFloat16: values[i] = bfloat16_to_double(load<uint16_t>(p)); break;
      case DType::Int64: values[i] = double(load<int64_t>(p)); break;
      case DType::Int32: values[i] = load<int32_t>(p); break;
      case DType::Int16: values[i] = load<int16_t>(p); break;
      case DType::Int8: values[i] = load<int8_t>(p); break;
      case DType::UInt8: values[i] = load<uint8_t>(p); break;
      case DType::Bool: values[i] = load<uint8_t>(p) != 0; break;
    }
  }
  return values;
}

}  // namespace dirigo::bundle
