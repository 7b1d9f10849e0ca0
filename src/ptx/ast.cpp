// Out-of-line members of the AST (ast.h).
#include "ptx/ast.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace dirigo::ptx {

ParseError::ParseError(int line, int col, std::string reason, std::string token)
    : std::runtime_error(std::to_string(line) + ":" + std::to_string(col) + ": " + reason +
                         (token.empty() ? std::string() : " (at '" + token + "')")),
      line_(line), col_(col), reason_(std::move(reason)), token_(std::move(token)) {}

namespace {
uint64_t element_count(const std::vector<uint64_t>& dims) {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;  // an unsized dimension (0) makes the size 0
  return n;
}
uint64_t element_bytes(Type t, int vector_width) {
  unsigned bits = t == Type::Pred ? 8 : type_bits(t);
  return uint64_t(bits / 8) * uint64_t(vector_width);
}
}  // namespace

uint64_t Variable::size_bytes() const { return element_bytes(type, vector_width) * element_count(dims); }
uint64_t Param::size_bytes() const { return element_bytes(type, 1) * element_count(dims); }

std::optional<Type> Function::register_type(std::string_view reg) const {
  for (const auto& d : regs) {
    if (d.count < 0) {
      if (d.name == reg) return d.type;
      continue;
    }
    if (reg.size() <= d.name.size() || reg.substr(0, d.name.size()) != d.name) continue;
    std::string_view digits = reg.substr(d.name.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit((unsigned char)c); }))
      continue;
    if (digits.size() > 1 && digits[0] == '0') continue;  // %r01 is not %r1
    if (digits.size() > 9) continue;
    if (std::stol(std::string(digits)) < d.count) return d.type;
  }
  return std::nullopt;
}

size_t Function::register_count() const {
  size_t n = 0;
  for (const auto& d : regs) n += d.count < 0 ? 1 : size_t(d.count);
  return n;
}

const Function* Module::find_function(std::string_view name) const {
  for (const auto& f : functions)
    if (f.name == name) return &f;
  return nullptr;
}
Function* Module::find_function(std::string_view name) {
  return const_cast<Function*>(std::as_const(*this).find_function(name));
}
const Variable* Module::find_global(std::string_view name) const {
  for (const auto& v : globals)
    if (v.name == name) return &v;
  return nullptr;
}
std::vector<const Function*> Module::kernels() const {
  std::vector<const Function*> out;
  for (const auto& f : functions)
    if (f.is_entry) out.push_back(&f);
  return out;
}

}  // namespace dirigo::ptx
