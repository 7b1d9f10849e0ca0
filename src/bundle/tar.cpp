// A plain .tar reader (ustar, GNU long names, pax "path" records): enough for
// bundles written by Python's tarfile or GNU tar. Compressed archives are left
// to the Python reader.
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "bundle/detail.h"
#include "bundle/io.h"

namespace dirigo::bundle {
namespace {

struct Entry { size_t offset, size; };

std::optional<uint64_t> tar_number(std::string_view field) {
  if (!field.empty() && (static_cast<unsigned char>(field[0]) & 0x80)) {  // GNU base-256
    uint64_t v = 0;
    for (size_t i = 1; i < field.size(); ++i) {
      if (v >> 56) return std::nullopt;
      v = v << 8 | static_cast<unsigned char>(field[i]);
    }
    return v;
  }
  uint64_t v = 0;
  bool any = false;
  for (char c : field) {
    if (c == 0 || c == ' ') {
      if (any) break;
      continue;
    }
    if (c < '0' || c > '7' || (v >> 60)) return std::nullopt;
    v = v * 8 + uint64_t(c - '0');
    any = true;
  }
  return v;
}

std::string cstr(std::string_view field) { return std::string(field.substr(0, field.find('\0'))); }

// "path" from a pax extended header body: records "<len> key=value\n".
std::optional<std::string> pax_path(std::string_view body) {
  while (!body.empty()) {
    size_t sp = body.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    size_t n = 0;  // the record length, decimal
    for (char c : body.substr(0, sp)) {
      if (c < '0' || c > '9' || n > body.size()) return std::nullopt;
      n = n * 10 + size_t(c - '0');
    }
    if (n <= sp + 1 || n > body.size()) return std::nullopt;
    std::string_view rec = body.substr(sp + 1, n - sp - 2);  // without the trailing newline
    if (rec.starts_with("path=")) return std::string(rec.substr(5));
    body.remove_prefix(n);
  }
  return std::nullopt;
}

[[noreturn]] void bad_tar(const std::string& name, const std::string& msg) {
  throw BundleError({Issue{name, "", msg}});
}

}  // namespace

FileSource tar_source(const std::filesystem::path& tar_file) {
  std::string label = tar_file.filename().string();
  std::ifstream in(tar_file, std::ios::binary);
  if (!in) bad_tar(label, "cannot open the archive");
  std::ostringstream ss;
  ss << in.rdbuf();
  auto data = std::make_shared<std::string>(ss.str());
  const std::string& d = *data;

  std::map<std::string, Entry> entries;
  std::optional<std::string> next_name;
  size_t pos = 0;
  while (pos + 512 <= d.size()) {
    std::string_view h(d.data() + pos, 512);
    if (h.find_first_not_of('\0') == std::string_view::npos) break;  // end-of-archive block
    auto size = tar_number(h.substr(124, 12));
    if (!size || *size > d.size() - pos - 512) bad_tar(label, "corrupt header at byte " + std::to_string(pos));
    char type = h[156];
    std::string name = cstr(h.substr(0, 100));
    if (h.substr(257, 5) == "ustar") {
      std::string prefix = cstr(h.substr(345, 155));
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    std::string_view body(d.data() + pos + 512, *size);
    if (type == 'L') {
      next_name = cstr(body);
    } else if (type == 'x') {
      if (auto p = pax_path(body)) next_name = *p;
    } else {
      if (next_name) name = *next_name;
      next_name.reset();
      while (name.starts_with("./")) name.erase(0, 2);
      if (type == '0' || type == '\0') entries[name] = Entry{pos + 512, size_t(*size)};
    }
    pos += 512 + (*size + 511) / 512 * 512;
  }
  // Bundles are usually archived as one folder: strip it.
  if (!entries.count(std::string(kManifestName))) {
    std::string prefix;
    for (const auto& [name, e] : entries) {
      size_t slash = name.find('/');
      if (slash != std::string::npos && name.substr(slash + 1) == kManifestName) prefix = name.substr(0, slash + 1);
    }
    if (!prefix.empty()) {
      std::map<std::string, Entry> stripped;
      for (const auto& [name, e] : entries)
        if (name.starts_with(prefix)) stripped[name.substr(prefix.size())] = e;
      entries = std::move(stripped);
    }
  }
  auto index = std::make_shared<std::map<std::string, Entry>>(std::move(entries));
  FileSource fs;
  fs.read = [data, index](const std::string& rel) -> std::optional<std::string> {
    auto it = index->find(rel);
    if (it == index->end()) return std::nullopt;
    return data->substr(it->second.offset, it->second.size);
  };
  fs.size = [index](const std::string& rel) -> std::optional<uint64_t> {
    auto it = index->find(rel);
    if (it == index->end()) return std::nullopt;
    return it->second.size;
  };
  return fs;
}

}  // namespace dirigo::bundle
