// Internals shared by the reader, writer and validator (not part of the API).
#pragma once

#include <string>
#include <string_view>

namespace dirigo::bundle::detail {

inline std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
inline std::string elem(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// A quoted, length-capped rendering of untrusted text for error messages.
std::string quote(std::string_view s);

// True for a relative path that stays inside the bundle ("ptx/m0.ptx"): no
// absolute paths, no "..", no empty components, no backslashes or control bytes.
bool is_safe_relative_path(std::string_view p);

}  // namespace dirigo::bundle::detail
