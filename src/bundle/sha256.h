// SHA-256 (FIPS 180-4), for checking module files against the manifest. Small
// and dependency-free on purpose: the bundle reader must not pull in a crypto library.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace dirigo::bundle {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  std::array<uint8_t, 32> finish();  // the object must not be updated afterwards

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view bytes);  // lowercase hex, 64 characters

}  // namespace dirigo::bundle
