#include "mutate/container.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dirigo::mutate {
namespace {

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

// Decodes the body of a non-raw Python string literal, recording where each byte came from.
void decode_python(const std::string& f, uint32_t b, uint32_t e, Unit& u) {
  for (uint32_t i = b; i < e;) {
    char c = f[i];
    if (c != '\\' || u.raw_string || i + 1 >= e) {
      u.text.push_back(c);
      u.raw.push_back(i);
      ++i;
      continue;
    }
    char n = f[i + 1];
    auto put = [&](char out, uint32_t len) {
      u.text.push_back(out);
      u.raw.push_back(i);
      i += len;
    };
    switch (n) {
      case '\n': i += 2; break;  // line continuation inside the string: removed
      case 'n': put('\n', 2); break;
      case 't': put('\t', 2); break;
      case 'r': put('\r', 2); break;
      case '\\': put('\\', 2); break;
      case '\'': put('\'', 2); break;
      case '"': put('"', 2); break;
      case 'a': put('\a', 2); break;
      case 'b': put('\b', 2); break;
      case 'f': put('\f', 2); break;
      case 'v': put('\v', 2); break;
      case '0': put('\0', 2); break;
      default:  // unknown escapes stay as written (Python keeps the backslash)
        u.text.push_back('\\');
        u.raw.push_back(i);
        ++i;
    }
  }
  u.raw.push_back(e);
}

// Python tokenizer just good enough to find string literals (skips comments).
std::vector<Unit> python_units(const std::string& f) {
  std::vector<Unit> units;
  size_t i = 0;
  while (i < f.size()) {
    char c = f[i];
    if (c == '#') {
      while (i < f.size() && f[i] != '\n') ++i;
      continue;
    }
    if (c != '"' && c != '\'') { ++i; continue; }
    // prefix letters just before the quote
    size_t p = i;
    while (p > 0 && std::isalpha(static_cast<unsigned char>(f[p - 1]))) --p;
    std::string prefix = f.substr(p, i - p);
    bool is_prefix = prefix.size() <= 2 && (p == 0 || !(std::isalnum(static_cast<unsigned char>(f[p - 1])) || f[p - 1] == '_'));
    bool raw = false, fstr = false, bytes = false;
    if (is_prefix)
      for (char pc : prefix) {
        raw |= (pc == 'r' || pc == 'R');
        fstr |= (pc == 'f' || pc == 'F');
        bytes |= (pc == 'b' || pc == 'B');
      }
    bool triple = f.compare(i, 3, std::string(3, c)) == 0;
    size_t body = i + (triple ? 3 : 1);
    size_t j = body;
    std::string close = triple ? std::string(3, c) : std::string(1, c);
    for (; j < f.size(); ++j) {
      if (f[j] == '\\') { ++j; continue; }
      if (!triple && f[j] == '\n') break;
      if (f.compare(j, close.size(), close) == 0) break;
    }
    if (j >= f.size()) break;  // unterminated: stop scanning
    if (!fstr && !bytes) {
      std::string_view content(f.data() + body, j - body);
      if (content.find("__global__") != std::string_view::npos) {
        Unit u;
        u.begin = static_cast<uint32_t>(body);
        u.end = static_cast<uint32_t>(j);
        u.triple = triple;
        u.raw_string = raw;
        u.quote = c;
        decode_python(f, u.begin, u.end, u);
        units.push_back(std::move(u));
      }
    }
    i = j + close.size();
  }
  return units;
}

// Text as it must be written inside the Python literal.
std::string encode_for(const Unit& u, const std::string& text) {
  if (u.raw_string) return text;
  std::string out;
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == u.quote) out += std::string("\\") + c;
    else if (c == '\n' && !u.triple) out += "\\n";
    else out.push_back(c);
  }
  return out;
}

}  // namespace

Substrate substrate_from_text(const std::string& path, std::string file) {
  Substrate s;
  s.path = path;
  s.file = std::move(file);
  if (ends_with(path, ".py")) {
    s.kind = Substrate::Kind::Python;
    s.units = python_units(s.file);
    if (s.units.empty()) throw std::runtime_error(path + ": no Python string literal with a __global__ kernel");
  } else {
    s.kind = Substrate::Kind::Cuda;
    Unit u;
    u.text = s.file;
    u.begin = 0;
    u.end = static_cast<uint32_t>(s.file.size());
    u.raw.resize(s.file.size() + 1);
    for (uint32_t i = 0; i <= s.file.size(); ++i) u.raw[i] = i;
    if (u.text.find("__global__") == std::string::npos) throw std::runtime_error(path + ": no __global__ kernel");
    s.units.push_back(std::move(u));
  }
  return s;
}

Substrate load_substrate(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return substrate_from_text(path, ss.str());
}

std::string mutant_file(const Substrate& s, size_t unit, const Site& site) {
  const Unit& u = s.units.at(unit);
  std::string out = s.file;
  auto edits = site.edits;
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin > b.begin; });
  for (const auto& e : edits) {
    uint32_t rb = u.raw.at(e.begin), re = u.raw.at(e.end);
    out.replace(rb, re - rb, encode_for(u, e.text));
  }
  std::string prefix;
  if (site.needs_fp16 && u.text.find("cuda_fp16.h") == std::string::npos) prefix += "#include <cuda_fp16.h>\n";
  if (site.needs_bf16 && u.text.find("cuda_bf16.h") == std::string::npos) prefix += "#include <cuda_bf16.h>\n";
  if (!prefix.empty()) out.insert(u.begin, encode_for(u, prefix));
  return out;
}

}  // namespace dirigo::mutate
