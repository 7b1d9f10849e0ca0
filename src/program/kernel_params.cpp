#include "program/kernel_params.h"

#include <cctype>

namespace dirigo::program {
namespace {

// What we need to know of a type: is it a pointer, and is what it points to const.
struct TypeInfo {
  bool pointer = false;
  bool pointee_const = false;
  bool is_const = false;  // the type itself is const-qualified
};

class Demangler {
 public:
  explicit Demangler(std::string_view s) : s_(s) {}

  std::optional<std::vector<KernelParam>> run() {
    if (!eat("_Z")) return std::nullopt;
    eat('L');  // internal linkage
    bool templated = false;
    if (!function_name(templated)) return std::nullopt;
    if (templated && !type()) return std::nullopt;  // template functions encode their return type
    std::vector<KernelParam> params;
    if (peek() == 'v' && pos_ + 1 == s_.size()) return params;  // (void)
    while (pos_ < s_.size() && s_[pos_] != '.') {  // ".constprop.0"-style clone suffixes end the list
      auto t = type();
      if (!t) return std::nullopt;
      params.push_back({t->pointer, t->pointee_const});
    }
    return params;
  }

 private:
  static constexpr int kMaxDepth = 32;

  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  bool eat(std::string_view p) {
    if (s_.substr(pos_, p.size()) != p) return false;
    pos_ += p.size();
    return true;
  }

  bool source_name() {
    size_t len = 0;
    if (!std::isdigit(static_cast<unsigned char>(peek()))) return false;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      len = len * 10 + size_t(peek() - '0');
      if (len > s_.size()) return false;
      ++pos_;
    }
    if (pos_ + len > s_.size()) return false;
    pos_ += len;
    return true;
  }

  // S_ = 0, S0_ = 1, S1_ = 2, ... (base 36, digits then capitals)
  std::optional<TypeInfo> substitution() {
    if (!eat('S')) return std::nullopt;
    size_t index = 0;
    if (!eat('_')) {
      size_t seq = 0;
      bool any = false;
      while (std::isdigit(static_cast<unsigned char>(peek())) || std::isupper(static_cast<unsigned char>(peek()))) {
        char c = s_[pos_++];
        seq = seq * 36 + size_t(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : c - 'A' + 10);
        if (seq > subs_.size()) return std::nullopt;
        any = true;
      }
      if (!any || !eat('_')) return std::nullopt;
      index = seq + 1;
    }
    if (index >= subs_.size()) return std::nullopt;
    return subs_[index];
  }

  bool template_args() {  // after 'I', through the matching 'E'
    if (++depth_ > kMaxDepth) return false;
    while (!eat('E')) {
      if (pos_ >= s_.size()) return false;
      if (eat('L')) {  // literal: L <type> <value> E
        if (peek() == '_') return false;  // L_Z <encoding> E: not needed for kernels
        if (!type()) return false;
        while (peek() != 'E' && pos_ < s_.size()) ++pos_;
        if (!eat('E')) return false;
      } else if (eat('J')) {  // argument pack: J <args> E
        if (!template_args()) return false;
      } else if (peek() == 'X') {
        return false;  // expressions
      } else if (!type()) {
        return false;
      }
    }
    --depth_;
    return true;
  }

  // Unscoped or nested name. `as_type`: the full name is itself a substitution
  // candidate (class types); for a function name it is not.
  bool name(bool as_type, bool& templated) {
    templated = false;
    if (eat('N')) {
      while (peek() == 'r' || peek() == 'V' || peek() == 'K') ++pos_;  // member-function cv
      bool pending = false;  // the prefix so far is not yet a candidate
      bool any = false;
      while (!eat('E')) {
        if (pos_ >= s_.size()) return false;
        if (peek() == 'S' && !any) {
          if (eat("St")) {
            pending = false;
          } else if (!substitution()) {
            return false;
          }
          any = true;
          continue;
        }
        if (peek() == 'I') {
          if (!any) return false;
          if (pending) subs_.push_back({});
          ++pos_;
          if (!template_args()) return false;
          pending = true;
          templated = true;
          continue;
        }
        if (pending) subs_.push_back({});
        if (!source_name()) return false;  // ctor/dtor/operator names do not occur in kernel entries
        pending = true;
        templated = false;
        any = true;
      }
      if (as_type && pending) subs_.push_back({});
      return any;
    }
    if (eat("St")) {
      if (!source_name()) return false;
    } else if (!source_name()) {
      return false;
    }
    if (peek() == 'I') {
      subs_.push_back({});  // the unscoped template name
      ++pos_;
      if (!template_args()) return false;
      templated = true;
      if (as_type) subs_.push_back({});
      return true;
    }
    if (as_type) subs_.push_back({});
    return true;
  }

  bool function_name(bool& templated) { return name(false, templated); }

  std::optional<TypeInfo> type() {
    if (++depth_ > kMaxDepth) return std::nullopt;
    auto t = type_inner();
    --depth_;
    return t;
  }

  std::optional<TypeInfo> type_inner() {
    char c = peek();
    if (c == 'r' || c == 'V' || c == 'K') {
      bool is_const = false;
      while (peek() == 'r' || peek() == 'V' || peek() == 'K') is_const |= s_[pos_++] == 'K';
      auto inner = type();
      if (!inner) return std::nullopt;
      TypeInfo q = *inner;
      q.is_const = q.is_const || is_const;
      subs_.push_back(q);
      return q;
    }
    if (c == 'P' || c == 'R' || c == 'O') {
      ++pos_;
      auto inner = type();
      if (!inner) return std::nullopt;
      TypeInfo p{true, inner->is_const, false};
      subs_.push_back(p);
      return p;
    }
    if (std::string_view("vwbcahstijlmxynofdegz").find(c) != std::string_view::npos && c != '\0') {
      ++pos_;
      return TypeInfo{};
    }
    if (c == 'D') {  // Dh (half), Dn (nullptr_t), DF16_ / DF16b (float16, bfloat16), Di/Ds/Du (charN_t)
      ++pos_;
      char d = peek();
      if (d == 'h' || d == 'n' || d == 'i' || d == 's' || d == 'u' || d == 'f' || d == 'd' || d == 'e') {
        ++pos_;
        return TypeInfo{};
      }
      if (d == 'F') {
        ++pos_;
        while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
        if (eat('_') || eat('b')) return TypeInfo{};
      }
      return std::nullopt;
    }
    if (c == 'T') {  // template parameter T_, T0_, ...: some type we do not see
      ++pos_;
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
      if (!eat('_')) return std::nullopt;
      subs_.push_back({});
      return TypeInfo{};
    }
    if (c == 'S' && peek(1) != 't') {
      auto t = substitution();
      if (!t) return std::nullopt;
      if (peek() == 'I') {  // a substituted template name with arguments
        ++pos_;
        if (!template_args()) return std::nullopt;
        subs_.push_back({});
        return TypeInfo{};
      }
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == 'N' || c == 'S') {
      bool templated = false;
      if (!name(true, templated)) return std::nullopt;
      return TypeInfo{};
    }
    return std::nullopt;  // function types, arrays, member pointers, vendor types: not in kernel entries we handle
  }

  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<TypeInfo> subs_;
};

}  // namespace

std::optional<std::vector<KernelParam>> kernel_params_from_mangled(std::string_view mangled) {
  return Demangler(mangled).run();
}

}  // namespace dirigo::program
