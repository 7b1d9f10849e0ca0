#include "mutate/lexer.h"

#include <array>
#include <cctype>

namespace dirigo::mutate {
namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80; }
bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

// Longest punctuators first.
constexpr std::array<std::string_view, 31> kMultiPunct = {
    "<<<", ">>>", "<<=", ">>=", "...", "->*", "<=>", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==",
    "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*", "##", "<:", ":>"};

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    bool line_start = true;  // only whitespace so far on this line: a '#' starts a directive
    int open_launches = 0;   // `>>>` is one token only while a `<<<` is open
    while (pos_ < s_.size()) {
      size_t begin = pos_;
      uint32_t line = line_, col = col_;
      TokKind kind;
      char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v' ||
          (c == '\\' && (peek(1) == '\n' || (peek(1) == '\r' && peek(2) == '\n')))) {
        kind = TokKind::Space;
        while (pos_ < s_.size()) {
          char d = s_[pos_];
          if (d == '\n') { line_start = true; advance(1); continue; }
          if (d == ' ' || d == '\t' || d == '\r' || d == '\f' || d == '\v') { advance(1); continue; }
          if (d == '\\' && peek(1) == '\n') { advance(2); continue; }
          if (d == '\\' && peek(1) == '\r' && peek(2) == '\n') { advance(3); continue; }
          break;
        }
        out.push_back(make(kind, begin, line, col));
        continue;
      }
      if (c == '/' && peek(1) == '/') {
        kind = TokKind::Comment;
        while (pos_ < s_.size() && s_[pos_] != '\n') {
          if (s_[pos_] == '\\' && peek(1) == '\n') advance(2);
          else advance(1);
        }
        out.push_back(make(kind, begin, line, col));
        continue;
      }
      if (c == '/' && peek(1) == '*') {
        kind = TokKind::Comment;
        advance(2);
        while (pos_ < s_.size() && !(s_[pos_] == '*' && peek(1) == '/')) advance(1);
        advance(pos_ < s_.size() ? 2 : 0);
        out.push_back(make(kind, begin, line, col));
        continue;
      }
      if (c == '#' && line_start) {
        kind = TokKind::Preproc;
        // to end of line, honouring continuations; comments inside stay part of the directive
        while (pos_ < s_.size() && s_[pos_] != '\n') {
          if (s_[pos_] == '\\' && peek(1) == '\n') advance(2);
          else if (s_[pos_] == '\\' && peek(1) == '\r' && peek(2) == '\n') advance(3);
          else if (s_[pos_] == '/' && peek(1) == '*') {
            advance(2);
            while (pos_ < s_.size() && !(s_[pos_] == '*' && peek(1) == '/')) advance(1);
            advance(pos_ < s_.size() ? 2 : 0);
          } else advance(1);
        }
        out.push_back(make(kind, begin, line, col));
        continue;
      }
      line_start = false;
      if (raw_string_start()) {
        lex_raw_string();
        out.push_back(make(TokKind::String, begin, line, col));
        continue;
      }
      if (ident_start(c)) {
        while (pos_ < s_.size() && ident_char(s_[pos_])) advance(1);
        // encoding prefix directly followed by a quote: part of the literal
        if (pos_ < s_.size() && (s_[pos_] == '"' || s_[pos_] == '\'')) {
          std::string_view word = s_.substr(begin, pos_ - begin);
          if (word == "u8" || word == "L" || word == "u" || word == "U") {
            char q = s_[pos_];
            lex_quoted(q);
            out.push_back(make(q == '"' ? TokKind::String : TokKind::Char, begin, line, col));
            continue;
          }
        }
        out.push_back(make(TokKind::Ident, begin, line, col));
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && std::isdigit(static_cast<unsigned char>(peek(1))))) {
        // pp-number: digits, letters, '.', '_', exponent signs, digit separators
        advance(1);
        while (pos_ < s_.size()) {
          char d = s_[pos_];
          char prev = s_[pos_ - 1];
          if ((d == '+' || d == '-') && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P')) { advance(1); continue; }
          if (ident_char(d) || d == '.' || (d == '\'' && ident_char(peek(1)))) { advance(1); continue; }
          break;
        }
        out.push_back(make(TokKind::Number, begin, line, col));
        continue;
      }
      if (c == '"' || c == '\'') {
        lex_quoted(c);
        out.push_back(make(c == '"' ? TokKind::String : TokKind::Char, begin, line, col));
        continue;
      }
      size_t len = 1;
      for (auto p : kMultiPunct) {
        if (s_.substr(pos_, p.size()) == p) {
          if (p == ">>>" && open_launches == 0) continue;
          len = p.size();
          break;
        }
      }
      std::string_view p = s_.substr(pos_, len);
      if (p == "<<<") ++open_launches;
      if (p == ">>>") --open_launches;
      advance(len);
      out.push_back(make(TokKind::Punct, begin, line, col));
    }
    return out;
  }

 private:
  char peek(size_t k) const { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; }
  void advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < s_.size(); ++i) {
      if (s_[pos_] == '\n') { ++line_; col_ = 1; }
      else ++col_;
      ++pos_;
    }
  }
  Token make(TokKind k, size_t begin, uint32_t line, uint32_t col) const {
    return Token{k, static_cast<uint32_t>(begin), static_cast<uint32_t>(pos_ - begin), line, col};
  }
  void lex_quoted(char q) {
    advance(1);
    while (pos_ < s_.size() && s_[pos_] != q && s_[pos_] != '\n') {
      if (s_[pos_] == '\\') advance(2);
      else advance(1);
    }
    if (pos_ < s_.size() && s_[pos_] == q) advance(1);
  }
  bool raw_string_start() const {
    // R"  u8R"  LR"  uR"  UR"
    for (std::string_view pre : {"R\"", "u8R\"", "LR\"", "uR\"", "UR\""})
      if (s_.substr(pos_, pre.size()) == pre) return true;
    return false;
  }
  void lex_raw_string() {
    while (s_[pos_] != '"') advance(1);
    advance(1);
    size_t d0 = pos_;
    while (pos_ < s_.size() && s_[pos_] != '(' && s_[pos_] != '\n' && pos_ - d0 < 16) advance(1);
    std::string close = ")" + std::string(s_.substr(d0, pos_ - d0)) + "\"";
    size_t end = s_.find(close, pos_);
    advance(end == std::string_view::npos ? s_.size() - pos_ : end + close.size() - pos_);
  }

  std::string_view s_;
  size_t pos_ = 0;
  uint32_t line_ = 1, col_ = 1;
};

}  // namespace

std::vector<Token> lex(std::string_view src) { return Lexer(src).run(); }

}  // namespace dirigo::mutate
