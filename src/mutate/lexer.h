// A lexer for CUDA C++ source that keeps every byte: whitespace, comments and preprocessor
// lines are trivia tokens, so concatenating all token texts gives back the source exactly.
// Mutation rules look only at significant tokens, so a '+' inside a comment or a string
// literal can never be a mutation site.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dirigo::mutate {

enum class TokKind : uint8_t {
  Ident,
  Number,
  String,   // "..." (with prefix u8/L/u/U, raw strings R"d(...)d")
  Char,     // '...'
  Punct,    // operators and punctuation, longest match; `<<<` and `>>>` for launches
  // trivia:
  Space,    // whitespace, newlines, backslash-newline
  Comment,  // // ... and /* ... */
  Preproc,  // a whole preprocessor line (with continuations)
};

struct Token {
  TokKind kind;
  uint32_t offset;  // byte offset in the source
  uint32_t length;
  uint32_t line;    // 1-based
  uint32_t col;     // 1-based, in bytes
  bool trivia() const { return kind == TokKind::Space || kind == TokKind::Comment || kind == TokKind::Preproc; }
};

// Lexes all of `src`; never throws (an unknown byte becomes a one-byte Punct).
std::vector<Token> lex(std::string_view src);

inline std::string_view token_text(std::string_view src, const Token& t) { return src.substr(t.offset, t.length); }

}  // namespace dirigo::mutate
