// Lexer and recursive-descent parser for PTX (see parser.h, docs/ptx.md).
#include "ptx/parser.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <type_traits>
#include <unordered_set>

namespace dirigo::ptx {
namespace {

// ---------------------------------------------------------------- lexer
enum class Tok : uint8_t { Word, Number, String, Punct, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  int line = 0, col = 0;
};

bool word_start(char c) { return std::isalpha((unsigned char)c) || c == '_' || c == '$' || c == '%' || c == '.'; }
bool word_char(char c) { return std::isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.'; }

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space_and_comments();
      Token t;
      t.line = line_;
      t.col = col();
      if (pos_ >= s_.size()) {
        t.kind = Tok::End;
        out.push_back(t);
        return out;
      }
      char c = s_[pos_];
      if (std::isdigit((unsigned char)c)) {
        t.kind = Tok::Number;
        t.text = number();
      } else if (word_start(c)) {
        t.kind = Tok::Word;
        t.text = word();
      } else if (c == '"') {
        t.kind = Tok::String;
        t.text = string_literal();
      } else if (std::strchr(",;:{}[]()<>+-!|@=*", c)) {
        t.kind = Tok::Punct;
        t.text = std::string(1, c);
        ++pos_;
      } else {
        throw ParseError(line_, col(), "unexpected character", std::string(1, c));
      }
      out.push_back(std::move(t));
    }
  }

 private:
  int col() const { return int(pos_ - line_start_) + 1; }

  void newline() {
    ++line_;
    line_start_ = pos_ + 1;
  }

  void skip_space_and_comments() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '\n') {
        newline();
        ++pos_;
      } else if (std::isspace((unsigned char)c)) {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '/') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else if (c == '/' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '*') {
        int l = line_, cl = col();
        pos_ += 2;
        while (pos_ + 1 < s_.size() && !(s_[pos_] == '*' && s_[pos_ + 1] == '/')) {
          if (s_[pos_] == '\n') newline();
          ++pos_;
        }
        if (pos_ + 1 >= s_.size()) throw ParseError(l, cl, "unterminated /* comment", "/*");
        pos_ += 2;
      } else {
        return;
      }
    }
  }

  std::string word() {
    size_t b = pos_;
    ++pos_;
    while (pos_ < s_.size()) {
      if (word_char(s_[pos_])) {
        ++pos_;
      } else if (s_[pos_] == ':' && pos_ + 1 < s_.size() && s_[pos_ + 1] == ':') {
        pos_ += 2;  // ld.global.L1::evict_last, .shared::cta
      } else {
        break;
      }
    }
    return std::string(s_.substr(b, pos_ - b));
  }

  std::string number() {
    size_t b = pos_;
    bool hex = pos_ + 1 < s_.size() && s_[pos_] == '0' &&
               std::strchr("xXfFdD", s_[pos_ + 1]) != nullptr;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (std::isalnum((unsigned char)c) || c == '.') {
        ++pos_;
      } else if (!hex && (c == '+' || c == '-') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E')) {
        ++pos_;  // 1.5e-3
      } else {
        break;
      }
    }
    return std::string(s_.substr(b, pos_ - b));
  }

  std::string string_literal() {
    int l = line_, cl = col();
    size_t b = ++pos_;
    while (pos_ < s_.size() && s_[pos_] != '"' && s_[pos_] != '\n') {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      ++pos_;
    }
    if (pos_ >= s_.size() || s_[pos_] != '"') throw ParseError(l, cl, "unterminated string", "\"");
    std::string out(s_.substr(b, pos_ - b));
    ++pos_;
    return out;
  }

  std::string_view s_;
  size_t pos_ = 0, line_start_ = 0;
  int line_ = 1;
};

// ---------------------------------------------------------------- modifier words
// A modifier word may belong to several categories (`.lo` is a comparison on setp and a
// multiply mode on mul); the opcode's allowed categories decide, in the order flags, enum
// fields (this table's order), then the odd words.
struct FlagWord {
  std::string_view word;
  uint32_t cat;
  bool Modifiers::*field;
};
const FlagWord kFlagWords[] = {
    {"ftz", MC_FTZ, &Modifiers::ftz}, {"sat", MC_SAT, &Modifiers::sat},
    {"approx", MC_APPROX, &Modifiers::approx}, {"full", MC_APPROX, &Modifiers::full},
    {"sync", MC_SYNC, &Modifiers::sync}, {"aligned", MC_SYNC, &Modifiers::aligned},
    {"uni", MC_UNI, &Modifiers::uni}, {"cc", MC_CC, &Modifiers::cc}, {"to", MC_TO, &Modifiers::to},
    {"NaN", MC_NAN, &Modifiers::nan}, {"xorsign", MC_NAN, &Modifiers::xorsign},
    {"abs", MC_NAN, &Modifiers::abs}, {"l", MC_SHIFT, &Modifiers::shift_left},
    {"r", MC_SHIFT, &Modifiers::shift_right}, {"clamp", MC_SHIFT, &Modifiers::clamp},
    {"wrap", MC_SHIFT, &Modifiers::wrap}, {"shiftamt", MC_SHIFT, &Modifiers::shiftamt},
};

// An enum field's words, in the enum's declaration order after None: the n-th word (from 1)
// sets the field to the enum value n.
template <auto Field>
void set_nth(Modifiers& m, int n) {
  using E = std::remove_reference_t<decltype(m.*Field)>;
  m.*Field = E(n);
}
struct EnumWords {
  uint32_t cat;
  std::string_view words;
  void (*set)(Modifiers&, int);
};
// multiply modes before comparisons (both have lo/hi), bool ops before atomics (and/or/xor)
const EnumWords kEnumWords[] = {
    {MC_RND, "rn rz rm rp rna rs rni rzi rmi rpi", set_nth<&Modifiers::rounding>},
    {MC_MUL, "lo hi wide", set_nth<&Modifiers::mul>},
    {MC_CMP, "eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan", set_nth<&Modifiers::cmp>},
    {MC_BOOL, "and or xor", set_nth<&Modifiers::bool_op>},
    {MC_ATOM, "and or xor cas exch add inc dec min max", set_nth<&Modifiers::atom>},
    {MC_SHFL, "up down bfly idx", set_nth<&Modifiers::shfl>},
    {MC_VOTE, "all any uni ballot", set_nth<&Modifiers::vote>},
    {MC_CACHE, "ca cg cs lu cv wb wt nc", set_nth<&Modifiers::cache>},
    {MC_ORDER, "weak relaxed acquire release acq_rel sc volatile mmio", set_nth<&Modifiers::order>},
    {MC_SCOPE, "cta cluster gpu sys", set_nth<&Modifiers::scope>},
};

// The 1-based position of `w` among the space-separated `words`, or 0.
int word_position(std::string_view words, std::string_view w) {
  int n = 1;
  for (size_t at = 0; at <= words.size(); ++n) {
    size_t end = std::min(words.find(' ', at), words.size());
    if (words.substr(at, end - at) == w) return n;
    at = end + 1;
  }
  return 0;
}

struct OddWord {
  std::string_view word;
  uint32_t cat;
  void (*apply)(Modifiers&);
};
const OddWord kOddWords[] = {
    {"satfinite", MC_SAT, [](Modifiers& m) { m.sat = true, m.misc.push_back("satfinite"); }},
    {"v2", MC_VEC, [](Modifiers& m) { m.vector_width = 2; }},
    {"v4", MC_VEC, [](Modifiers& m) { m.vector_width = 4; }},
    {"v8", MC_VEC, [](Modifiers& m) { m.vector_width = 8; }},
    {"gl", MC_SCOPE, [](Modifiers& m) { m.scope = Scope::Gpu; }},  // membar.gl
};

// Applies the modifier word `w` if one of the `allowed` categories has it.
bool apply_mod_word(Modifiers& m, std::string_view w, uint32_t allowed) {
  for (const FlagWord& f : kFlagWords) {
    if (f.word == w && (allowed & f.cat)) {
      m.*f.field = true;
      return true;
    }
  }
  for (const EnumWords& e : kEnumWords) {
    if (!(allowed & e.cat)) continue;
    if (int n = word_position(e.words, w)) {
      e.set(m, n);
      return true;
    }
  }
  for (const OddWord& o : kOddWords) {
    if (o.word == w && (allowed & o.cat)) {
      o.apply(m);
      return true;
    }
  }
  return false;
}

std::optional<StateSpace> space_word(std::string_view w) {
  if (w == "global") return StateSpace::Global;
  if (w == "shared" || w == "shared::cta") return StateSpace::Shared;
  if (w == "shared::cluster") return StateSpace::SharedCluster;
  if (w == "local") return StateSpace::Local;
  if (w == "param" || w == "param::entry" || w == "param::func") return StateSpace::Param;
  if (w == "const") return StateSpace::Const;
  if (w == "generic") return StateSpace::Generic;
  return std::nullopt;
}

const std::unordered_set<std::string_view>& special_registers() {
  static const std::unordered_set<std::string_view> s = {
      "%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid",
      "%gridid", "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt",
      "%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi",
      "%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size", "%clusterid", "%nclusterid",
      "%cluster_ctaid", "%cluster_nctaid", "%cluster_ctarank", "%cluster_nctarank",
      "%is_explicit_cluster", "%reserved_smem_offset_begin", "%reserved_smem_offset_end",
      "%reserved_smem_offset_cap", "%reserved_smem_offset_0", "%reserved_smem_offset_1",
      "%current_graph_exec"};
  return s;
}

bool is_special_register(std::string_view name) {
  if (name.rfind("%envreg", 0) == 0 || name.rfind("%pm", 0) == 0) return true;
  std::string_view base = name.substr(0, name.find('.'));
  return special_registers().count(base) > 0;
}

// ---------------------------------------------------------------- literals
uint64_t parse_uint(std::string_view s, const Token& t) {
  int base = 10;
  size_t i = 0;
  if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, i = 2;
  else if (s.size() > 1 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) base = 2, i = 2;
  else if (s.size() > 1 && s[0] == '0') base = 8, i = 1;
  if (i >= s.size()) throw ParseError(t.line, t.col, "malformed integer literal", t.text);
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    int d = std::isdigit((unsigned char)c) ? c - '0'
            : std::isxdigit((unsigned char)c) ? std::tolower(c) - 'a' + 10 : 99;
    if (d >= base) throw ParseError(t.line, t.col, "malformed integer literal", t.text);
    if (v > (UINT64_MAX - uint64_t(d)) / uint64_t(base))
      throw ParseError(t.line, t.col, "integer literal out of range", t.text);
    v = v * uint64_t(base) + uint64_t(d);
  }
  return v;
}

// Number token -> Int or Float operand.
Operand number_operand(const Token& t, bool negative) {
  Operand o;
  const std::string& s = t.text;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
    bool f32 = s[1] == 'f' || s[1] == 'F';
    size_t want = f32 ? 8 : 16;
    std::string hex = s.substr(2);
    if (hex.size() != want) throw ParseError(t.line, t.col, "hex float literal needs " + std::to_string(want) + " hex digits", s);
    uint64_t bits = parse_uint("0x" + hex, t);
    o.kind = Operand::Kind::Float;
    o.float_width = f32 ? 32 : 64;
    if (negative) bits ^= f32 ? 0x80000000ull : 0x8000000000000000ull;
    o.float_bits = bits;
    if (f32) {
      uint32_t b32 = uint32_t(bits);
      float f;
      std::memcpy(&f, &b32, 4);
      o.float_value = f;
    } else {
      std::memcpy(&o.float_value, &bits, 8);
    }
    return o;
  }
  bool is_decimal_float = s.find('.') != std::string::npos ||
                          (s.find_first_of("eE") != std::string::npos && s.find_first_of("xX") == std::string::npos);
  if (is_decimal_float) {
    size_t used = 0;
    double v;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      throw ParseError(t.line, t.col, "malformed float literal", s);
    }
    if (used != s.size()) throw ParseError(t.line, t.col, "malformed float literal", s);
    if (negative) v = -v;
    o.kind = Operand::Kind::Float;
    o.float_width = 64;  // PTX decimal float literals are f64
    o.float_value = v;
    std::memcpy(&o.float_bits, &v, 8);
    return o;
  }
  std::string digits = s;
  if (!digits.empty() && (digits.back() == 'U' || digits.back() == 'u')) {
    o.int_unsigned = true;
    digits.pop_back();
  }
  uint64_t v = parse_uint(digits, t);
  o.kind = Operand::Kind::Int;
  o.int_value = negative ? int64_t(0 - v) : int64_t(v);
  if (!negative && v > uint64_t(INT64_MAX)) o.int_unsigned = true;
  return o;
}

// ---------------------------------------------------------------- parser
class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  Module run() {
    while (!at_end()) module_statement();
    return std::move(m_);
  }

 private:
  // ---- token helpers
  const Token& peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  bool at_end() const { return peek().kind == Tok::End; }
  const Token& next() {
    const Token& t = peek();
    if (i_ < t_.size() - 1) ++i_;
    return t;
  }
  bool is(std::string_view text, size_t k = 0) const {
    const Token& t = peek(k);
    return t.kind != Tok::End && t.kind != Tok::String && t.text == text;
  }
  bool accept(std::string_view text) {
    if (!is(text)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(const Token& t, const std::string& reason) const {
    throw ParseError(t.line, t.col, reason, t.kind == Tok::End ? "end of file" : t.text);
  }
  const Token& expect(std::string_view text) {
    if (!is(text)) fail(peek(), "expected '" + std::string(text) + "'");
    return next();
  }
  const Token& expect_word(const char* what) {
    if (peek().kind != Tok::Word) fail(peek(), std::string("expected ") + what);
    return next();
  }
  int64_t expect_int(const char* what) {
    bool neg = accept("-");
    const Token& t = peek();
    if (t.kind != Tok::Number) fail(t, std::string("expected ") + what);
    Operand o = number_operand(next(), neg);
    if (o.kind != Operand::Kind::Int) fail(t, std::string("expected integer ") + what);
    return o.int_value;
  }
  // Skips to the end of the current statement (a `;`), stepping over balanced brackets.
  void skip_statement() {
    int depth = 0;
    while (!at_end()) {
      const Token& t = next();
      if (t.kind != Tok::Punct) continue;
      if (t.text == "(" || t.text == "{" || t.text == "[") ++depth;
      else if (t.text == ")" || t.text == "}" || t.text == "]") --depth;
      else if (t.text == ";" && depth <= 0) return;
    }
  }
  // Skips every token on the line of token `line` (line-terminated directives: .loc, .file).
  void skip_line(int line) {
    while (!at_end() && peek().line == line) next();
  }

  // Operands and initializers nest ({...}, (...), !x); bound the recursion on hostile input.
  static constexpr int kMaxNesting = 64;
  struct NestGuard {
    Parser& p;
    NestGuard(Parser& parser, const Token& at) : p(parser) {
      if (++p.nesting_ > kMaxNesting) p.fail(at, "nesting deeper than 64 levels");
    }
    ~NestGuard() { --p.nesting_; }
  };

  // ---- module scope
  void module_statement() {
    const Token& t = peek();
    if (t.kind != Tok::Word) fail(t, "expected a directive at module scope");
    const std::string& w = t.text;
    if (w == ".version") {
      next();
      m_.version = next().text;
    } else if (w == ".target") {
      int line = next().line;
      do m_.target.push_back(expect_word("target name").text);
      while (peek().line == line && accept(","));
    } else if (w == ".address_size") {
      next();
      m_.address_size = int(expect_int("address size"));
    } else if (w == ".file") {
      file_directive();
    } else if (w == ".loc") {
      skip_line(next().line);
    } else if (w == ".section") {
      next();
      expect_word("section name");
      skip_nested("{", "}");
    } else if (w == ".pragma" || w == ".alias") {
      skip_statement();
    } else if (w == ".visible" || w == ".extern" || w == ".weak" || w == ".common" || w == ".entry" ||
               w == ".func" || w == ".global" || w == ".const" || w == ".shared" || w == ".local") {
      linkage_statement();
    } else {
      fail(t, "unknown module-scope directive");
    }
  }

  // Skips a balanced `open ... close` group, nested ones included.
  void skip_nested(std::string_view open, std::string_view close) {
    expect(open);
    int depth = 1;
    while (depth > 0) {
      if (at_end()) fail(peek(), "unterminated '" + std::string(open) + "'");
      const Token& t = next();
      if (t.kind == Tok::Punct && t.text == open) ++depth;
      if (t.kind == Tok::Punct && t.text == close) --depth;
    }
  }

  void file_directive() {
    const Token& d = next();
    int idx = int(expect_int("file index"));
    if (peek().kind != Tok::String) fail(peek(), "expected file name string");
    m_.files[idx] = next().text;
    skip_line(d.line);  // optional timestamp, size
  }

  struct Linkage { bool is_extern = false, is_visible = false, is_weak = false; };

  void linkage_statement() {
    Linkage lk;
    for (;;) {
      if (accept(".visible")) lk.is_visible = true;
      else if (accept(".extern")) lk.is_extern = true;
      else if (accept(".weak") || accept(".common")) lk.is_weak = true;
      else break;
    }
    if (is(".entry") || is(".func")) {
      function(lk);
      return;
    }
    for (Variable& v : variable_decl(lk)) m_.globals.push_back(std::move(v));
  }

  // `[.align N] [.v2|.v4] .type name[dims] [= init] {, name...} ;` after the state space.
  std::vector<Variable> variable_decl(const Linkage& lk) {
    const Token& sp = expect_word("state space");
    auto space = space_word(std::string_view(sp.text).substr(sp.text.empty() ? 0 : 1));
    if (!space || sp.text[0] != '.') fail(sp, "expected a state space (.global, .shared, ...)");
    Variable proto;
    proto.space = *space;
    proto.is_extern = lk.is_extern;
    proto.is_visible = lk.is_visible;
    proto.is_weak = lk.is_weak;
    proto.line = sp.line;
    for (;;) {
      if (accept(".align")) {
        proto.align = int(expect_int("alignment"));
      } else if (accept(".v2")) {
        proto.vector_width = 2;
      } else if (accept(".v4")) {
        proto.vector_width = 4;
      } else if (accept(".ptr") || accept(".attribute")) {
        if (is("(")) skip_nested("(", ")");
      } else {
        break;
      }
    }
    const Token& ty = expect_word("a type");
    auto type = ty.text.size() > 1 ? type_from_name(std::string_view(ty.text).substr(1)) : std::nullopt;
    if (!type || ty.text[0] != '.') fail(ty, "expected a type (.b8, .f32, ...)");
    proto.type = *type;
    std::vector<Variable> out;
    do {
      Variable v = proto;
      v.name = expect_word("variable name").text;
      array_dims(v.dims);
      if (accept("=")) {
        v.has_init = true;
        initializer(v.init);
      }
      out.push_back(std::move(v));
    } while (accept(","));
    expect(";");
    return out;
  }

  // `[N]...` after a name, appended to dims; `[]` (size left to the linker or the launch) is 0.
  void array_dims(std::vector<uint64_t>& dims) {
    while (accept("[")) {
      if (accept("]")) {
        dims.push_back(0);
        continue;
      }
      dims.push_back(uint64_t(expect_int("array size")));
      expect("]");
    }
  }

  // Flattens `{1, {2, 3}}`, `7`, `0f3F800000`, `generic(sym)`, `sym`, `sym+4`.
  void initializer(std::vector<Operand>& out) {
    NestGuard guard(*this, peek());
    if (accept("{")) {
      if (!accept("}")) {
        do initializer(out);
        while (accept(","));
        expect("}");
      }
      return;
    }
    bool neg = accept("-");
    const Token& t = peek();
    if (t.kind == Tok::Number) {
      out.push_back(number_operand(next(), neg));
      return;
    }
    if (t.kind == Tok::Word && !neg) {
      next();
      Operand o;
      o.kind = Operand::Kind::Symbol;
      if ((t.text == "generic" || t.text == "global" || t.text == "shared") && accept("(")) {
        o.name = expect_word("symbol").text;
        expect(")");
      } else {
        o.name = t.text;
      }
      if (accept("+")) o.offset = expect_int("offset");
      out.push_back(std::move(o));
      return;
    }
    fail(t, "malformed initializer");
  }

  // ---- functions
  Param param_decl() {
    const Token& kw = peek();
    if (!accept(".param")) fail(kw, "expected .param");
    Param p;
    for (;;) {
      if (accept(".align")) {
        (p.is_ptr ? p.ptr_align : p.align) = int(expect_int("alignment"));
      } else if (accept(".ptr")) {
        p.is_ptr = true;
      } else if (peek().kind == Tok::Word && peek().text.size() > 1 && peek().text[0] == '.' &&
                 space_word(std::string_view(peek().text).substr(1)) && p.is_ptr) {
        p.ptr_space = *space_word(std::string_view(next().text).substr(1));
      } else if (peek().kind == Tok::Word && peek().text.size() > 1 && peek().text[0] == '.' &&
                 type_from_name(std::string_view(peek().text).substr(1))) {
        p.type = *type_from_name(std::string_view(next().text).substr(1));
      } else {
        break;
      }
    }
    if (p.type == Type::None) fail(peek(), "parameter without a type");
    p.name = expect_word("parameter name").text;
    array_dims(p.dims);
    return p;
  }

  std::vector<Param> param_list() {
    std::vector<Param> out;
    expect("(");
    if (accept(")")) return out;
    do out.push_back(param_decl());
    while (accept(","));
    expect(")");
    return out;
  }

  void function(const Linkage& lk) {
    const Token& kw = next();
    Function f;
    f.is_entry = kw.text == ".entry";
    f.is_visible = lk.is_visible;
    f.is_extern = lk.is_extern;
    f.is_weak = lk.is_weak;
    f.line = kw.line;
    if (!f.is_entry && is("(")) f.returns = param_list();
    f.name = expect_word("function name").text;
    if (is("(")) f.params = param_list();
    // performance tuning directives and .noreturn
    while (peek().kind == Tok::Word && peek().text[0] == '.') {
      const Token& d = next();
      if (d.text == ".pragma") {
        skip_statement();
        continue;
      }
      auto& vals = f.directives[d.text.substr(1)];
      while (peek().kind == Tok::Number) {
        vals.push_back(expect_int("directive value"));
        if (!accept(",")) break;
      }
    }
    if (accept(";")) {
      add_function(std::move(f), kw);
      return;
    }
    function_body(f);
    f.has_body = true;
    add_function(std::move(f), kw);
  }

  void add_function(Function f, const Token& at) {
    if (Function* prev = m_.find_function(f.name)) {
      if (prev->has_body && f.has_body) fail(at, "function '" + f.name + "' defined twice");
      if (f.has_body) *prev = std::move(f);  // a definition replaces its prototype
      return;
    }
    m_.functions.push_back(std::move(f));
  }

  // ---- function bodies: scopes for block-local names
  struct Scope {
    int id = 0;                                                  // 0: the function's own scope
    std::unordered_map<std::string, std::string> names;          // declared name -> final name
    std::vector<std::pair<std::string, int>> ranges;             // %r<N> declared in this scope
    std::unordered_set<std::string> registers;                   // final names that are registers
  };

  // Resolves a name through the block scopes; returns the final name and whether it is a register.
  std::pair<std::string, bool> resolve(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto n = it->names.find(name);
      if (n != it->names.end()) return {n->second, it->registers.count(n->second) > 0};
      for (const auto& [prefix, count] : it->ranges) {
        if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
        std::string_view digits = std::string_view(name).substr(prefix.size());
        if (digits.size() > 9 || (digits.size() > 1 && digits[0] == '0')) continue;
        bool all = true;
        for (char c : digits) all &= bool(std::isdigit((unsigned char)c));
        if (!all || std::stol(std::string(digits)) >= count) continue;
        return {it->id == 0 ? name : name + "$" + std::to_string(it->id), true};
      }
    }
    return {name, false};
  }

  std::string declare(const std::string& name, bool is_register) {
    Scope& s = scopes_.back();
    std::string final_name = s.id == 0 ? name : name + "$" + std::to_string(s.id);
    s.names[name] = final_name;
    if (is_register) s.registers.insert(final_name);
    return final_name;
  }

  void function_body(Function& f) {
    expect("{");
    scopes_.clear();
    scopes_.push_back(Scope{});
    for (const Param& p : f.params) declare(p.name, false);
    for (const Param& p : f.returns) declare(p.name, false);
    loc_ = SourceLoc{};
    int next_block = 1;
    while (!scopes_.empty()) {
      const Token& t = peek();
      if (at_end()) fail(t, "unterminated function body of '" + f.name + "'");
      if (t.kind == Tok::Punct && t.text == "{") {
        if (scopes_.size() > kMaxNesting) fail(t, "blocks nested deeper than 64 levels");
        next();
        Scope s;
        s.id = next_block++;
        scopes_.push_back(std::move(s));
        continue;
      }
      if (t.kind == Tok::Punct && t.text == "}") {
        next();
        scopes_.pop_back();
        continue;
      }
      body_statement(f);
    }
    check_function(f);
  }

  void body_statement(Function& f) {
    const Token& t = peek();
    if (t.kind == Tok::Punct && t.text == "@") {
      instruction(f);
      return;
    }
    if (t.kind != Tok::Word) fail(t, "expected an instruction, label or directive");
    const std::string& w = t.text;
    if (is(":", 1)) {  // label, or `proto: .callprototype ...` / `ts: .branchtargets ...`
      next();
      next();
      if (is(".callprototype") || is(".branchtargets") || is(".calltargets")) {
        skip_statement();
        return;
      }
      if (f.labels.count(w)) fail(t, "label '" + w + "' defined twice");
      f.labels[w] = f.body.size();
      return;
    }
    if (w == ".reg") {
      reg_decl(f);
    } else if (w == ".loc") {
      loc_directive();
    } else if (w == ".file") {
      file_directive();
    } else if (w == ".pragma") {
      skip_statement();
    } else if (w == ".shared" || w == ".local" || w == ".const" || w == ".param" || w == ".global") {
      for (Variable& v : variable_decl(Linkage{})) {
        v.name = declare(v.name, false);
        f.locals.push_back(std::move(v));
      }
    } else if (w[0] == '.') {
      fail(t, "unknown directive in function body");
    } else {
      instruction(f);
    }
  }

  void reg_decl(Function& f) {
    next();
    int vw = 1;
    if (accept(".v2")) vw = 2;
    else if (accept(".v4")) vw = 4;
    const Token& ty = expect_word("register type");
    auto type = ty.text.size() > 1 ? type_from_name(std::string_view(ty.text).substr(1)) : std::nullopt;
    if (!type || ty.text[0] != '.') fail(ty, "expected a register type");
    do {
      const Token& n = expect_word("register name");
      RegDecl d;
      d.type = *type;
      d.vector_width = vw;
      if (accept("<")) {
        int64_t count = expect_int("register count");
        expect(">");
        if (count < 0 || count > (1 << 24)) fail(n, "register count out of range");
        if (scopes_.back().id == 0) {
          d.name = n.text;
          d.count = int(count);
          scopes_.back().ranges.emplace_back(n.text, int(count));
          f.regs.push_back(d);
        } else {  // block-local range: expand so every name can carry the block suffix
          scopes_.back().ranges.emplace_back(n.text, int(count));
          for (int64_t k = 0; k < count; ++k) {
            d.name = n.text + std::to_string(k) + "$" + std::to_string(scopes_.back().id);
            f.regs.push_back(d);
          }
        }
      } else {
        d.name = declare(n.text, true);
        f.regs.push_back(d);
      }
    } while (accept(","));
    expect(";");
  }

  // `.loc file line col [, function_name label [+off]] [, inlined_at file line col]` (one line)
  void loc_directive() {
    const Token& d = next();
    std::vector<int64_t> nums;
    while (peek().line == d.line && peek().kind == Tok::Number && nums.size() < 3)
      nums.push_back(expect_int("line info"));
    if (nums.size() < 2) fail(peek(), "malformed .loc");
    loc_.file = int(nums[0]);
    loc_.line = int(nums[1]);
    loc_.col = nums.size() > 2 ? int(nums[2]) : 0;
    // the call site of an inlined function (lets findings name the user's line, not a header's)
    loc_.inlined_file = -1;
    loc_.inlined_line = 0;
    while (!at_end() && peek().line == d.line) {
      const Token& t = next();
      if (t.text != "inlined_at") continue;
      std::vector<int64_t> at;
      while (!at_end() && peek().line == d.line && peek().kind == Tok::Number && at.size() < 3)
        at.push_back(expect_int("inlined_at"));
      if (at.size() >= 2) { loc_.inlined_file = int(at[0]); loc_.inlined_line = int(at[1]); }
    }
    skip_line(d.line);
  }

  Operand operand(const Token& op_tok) {
    const Token& t = peek();
    NestGuard guard(*this, t);
    Operand o;
    if (accept("[")) {
      o.kind = Operand::Kind::Address;
      if (peek().kind == Tok::Number) {  // absolute address [0x100]
        o.offset = expect_int("address");
      } else {
        const Token& b = expect_word("address base");
        auto [name, is_reg] = resolve(b.text);
        o.name = name;
        o.base_is_register = is_reg || b.text[0] == '%';
        if (accept("+")) o.offset = accept("-") ? -expect_int("offset") : expect_int("offset");
        else if (accept("-")) o.offset = -expect_int("offset");
      }
      expect("]");
      return o;
    }
    if (accept("{")) {
      o.kind = Operand::Kind::Vector;
      do o.elements.push_back(operand(op_tok));
      while (accept(","));
      expect("}");
      return o;
    }
    if (accept("(")) {
      o.kind = Operand::Kind::List;
      if (!accept(")")) {
        do o.elements.push_back(operand(op_tok));
        while (accept(","));
        expect(")");
      }
      return o;
    }
    bool neg = false;
    if (accept("!")) {
      o = operand(op_tok);
      if (o.kind != Operand::Kind::Register) fail(t, "'!' applies only to a predicate register");
      o.negated = true;
      return o;
    }
    if (accept("-")) neg = true;
    if (peek().kind == Tok::Number) return number_operand(next(), neg);
    if (neg) fail(peek(), "expected a number after '-'");
    if (peek().kind != Tok::Word) fail(peek(), "expected an operand");
    const Token& w = next();
    if (w.text == "_") {
      o.kind = Operand::Kind::Sink;
      o.name = "_";
    } else {
      auto [name, is_reg] = resolve(w.text);
      o.name = name;
      o.kind = (is_reg || w.text[0] == '%') ? Operand::Kind::Register : Operand::Kind::Symbol;
    }
    if (accept("|")) {
      Operand pair;
      pair.kind = Operand::Kind::Pair;
      pair.elements.push_back(std::move(o));
      pair.elements.push_back(operand(op_tok));
      return pair;
    }
    return o;
  }

  void instruction(Function& f) {
    Instruction ins;
    const Token& first = peek();
    ins.loc = loc_;
    ins.loc.ptx_line = first.line;
    ins.loc.ptx_col = first.col;
    if (accept("@")) {
      Guard g;
      g.negated = accept("!");
      const Token& p = expect_word("guard predicate");
      auto [name, is_reg] = resolve(p.text);
      if (!is_reg && p.text[0] != '%') fail(p, "expected a guard predicate register");
      g.reg = name;
      ins.guard = g;
    }
    const Token& op_tok = expect_word("an opcode");
    ins.text = op_tok.text;
    decode_opcode(op_tok, ins);
    const OpcodeInfo& info = opcode_info(ins.op);
    if (!is(";")) {
      do ins.operands.push_back(operand(op_tok));
      while (accept(","));
    }
    if (!is(";")) fail(peek(), "expected ',' or ';' after operand of '" + ins.text + "'");
    next();
    int n = int(ins.operands.size());
    if (n < info.min_operands || n > info.max_operands) {
      std::string want = info.min_operands == info.max_operands
                             ? std::to_string(info.min_operands)
                             : std::to_string(info.min_operands) + ".." + std::to_string(info.max_operands);
      fail(op_tok, "'" + std::string(info.name) + "' takes " + want + " operands, got " + std::to_string(n));
    }
    f.body.push_back(std::move(ins));
  }

  // "ld.global.nc.v4.f32" -> opcode Ld + modifiers; the longest dotted prefix naming an opcode wins.
  void decode_opcode(const Token& tok, Instruction& ins) {
    std::vector<std::string> parts;
    size_t b = 0;
    const std::string& s = tok.text;
    for (size_t i = 0; i <= s.size(); ++i) {
      if (i == s.size() || s[i] == '.') {
        if (i == b) fail(tok, "empty modifier in opcode");
        parts.push_back(s.substr(b, i - b));
        b = i + 1;
      }
    }
    size_t used = 0;
    for (size_t k = std::min<size_t>(parts.size(), 4); k >= 1 && !used; --k) {
      std::string name = parts[0];
      for (size_t j = 1; j < k; ++j) name += "." + parts[j];
      if (auto op = opcode_from_name(name)) {
        ins.op = *op;
        used = k;
      }
    }
    if (!used) fail(tok, "unknown opcode '" + parts[0] + "'");
    uint32_t allowed = opcode_info(ins.op).allowed_mods;
    Modifiers& m = ins.mod;
    for (size_t j = used; j < parts.size(); ++j) {
      const std::string& w = parts[j];
      m.words.push_back(w);
      if (allowed & MC_TYPE) {
        if (auto t = type_from_name(w)) {
          m.types.push_back(*t);
          continue;
        }
      }
      if (allowed & MC_SPACE) {
        if (auto sp = space_word(w)) {
          (m.space == StateSpace::None ? m.space : m.space2) = *sp;
          continue;
        }
      }
      if (apply_mod_word(m, w, allowed)) continue;
      if (allowed & MC_MISC) {
        m.misc.push_back(w);
        continue;
      }
      fail(tok, "modifier '." + w + "' is not valid on '" + std::string(opcode_name(ins.op)) + "'");
    }
  }

  // Branch targets must be labels of this function; registers must be declared.
  void check_function(const Function& f) {
    for (const Instruction& ins : f.body) {
      if (ins.op == Opcode::Bra) {
        const Operand& target = ins.operands[0];
        if (target.kind != Operand::Kind::Symbol || !f.labels.count(target.name))
          throw ParseError(ins.loc.ptx_line, ins.loc.ptx_col, "branch to unknown label", target.name);
      }
      for (const Operand& o : ins.operands) check_registers(f, ins, o);
      if (ins.guard && !f.register_type(ins.guard->reg))
        throw ParseError(ins.loc.ptx_line, ins.loc.ptx_col, "undeclared guard predicate", ins.guard->reg);
    }
  }

  void check_registers(const Function& f, const Instruction& ins, const Operand& o) {
    std::vector<const Operand*> stack{&o};
    while (!stack.empty()) {
      const Operand* x = stack.back();
      stack.pop_back();
      for (const Operand& e : x->elements) stack.push_back(&e);
      bool is_reg = x->kind == Operand::Kind::Register ||
                    (x->kind == Operand::Kind::Address && x->base_is_register);
      if (is_reg && !is_special_register(x->name) && !f.register_type(x->name))
        throw ParseError(ins.loc.ptx_line, ins.loc.ptx_col, "undeclared register", x->name);
    }
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  Module m_;
  std::vector<Scope> scopes_;
  SourceLoc loc_;
  int nesting_ = 0;
};

}  // namespace

Module parse(std::string_view text) { return Parser(Lexer(text).run()).run(); }

Module parse_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse(ss.str());
}

}  // namespace dirigo::ptx
