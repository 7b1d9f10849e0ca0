// A light structural layer over the significant tokens of one CUDA translation unit:
// matching brackets, function definitions (which are __global__/__device__), for-loop
// headers, if-conditions, kernel launches <<<...>>>, calls, declarations with their types,
// and template angle brackets (so `static_cast<float>` is never mistaken for a comparison).
// Everything is computed once, iteratively; rules only query it.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mutate/lexer.h"

namespace dirigo::mutate {

using TokRange = std::pair<int, int>;  // [first, last) significant-token indices

struct Function {
  std::string name;
  int first_tok = -1;  // first token of the definition (template, specifiers, return type)
  int name_tok = -1, lparen = -1, rparen = -1, body_open = -1, body_close = -1;
  bool is_global = false, is_device = false, is_host = false, is_template = false;
  bool device_code() const { return is_global || is_device; }
};

struct ForLoop { int for_tok, lparen, semi1, semi2, rparen, body_first, body_last; };  // body inclusive
struct IfStmt { int if_tok, lparen, rparen; };
struct Launch { int name_tok, open, close; std::vector<TokRange> args; };  // open = `<<<`, close = `>>>`
struct Call { int name_tok, lparen, rparen; std::vector<TokRange> args; };

struct Decl {
  std::string name, type;  // type: the base type word, e.g. "float"
  int type_tok, name_tok;
  int fn;                  // function index
  bool pointer = false, array = false, shared = false, param = false, is_const = false;
};

// Where a token sits, innermost header first.
enum class HeaderPart : uint8_t { None, ForInit, ForCond, ForStep, IfCond, WhileCond };

class SourceModel {
 public:
  explicit SourceModel(std::string source);

  const std::string& source() const { return src_; }
  const std::vector<Token>& all_tokens() const { return all_; }
  int size() const { return static_cast<int>(t_.size()); }
  const Token& tok(int i) const { return t_[i]; }
  std::string_view text(int i) const {
    return (i < 0 || i >= size()) ? std::string_view() : std::string_view(src_).substr(t_[i].offset, t_[i].length);
  }
  bool is(int i, std::string_view s) const { return text(i) == s; }
  TokKind kind(int i) const { return t_[i].kind; }
  bool ident(int i) const { return i >= 0 && i < size() && t_[i].kind == TokKind::Ident; }
  int match(int i) const { return (i < 0 || i >= size()) ? -1 : match_[i]; }
  // Source text spanning significant tokens [first, last) including trivia between them.
  std::string_view range_text(int first, int last) const;
  uint32_t end_offset(int i) const { return t_[i].offset + t_[i].length; }

  const std::vector<Function>& functions() const { return functions_; }
  int function_of(int i) const { return (i < 0 || i >= size()) ? -1 : fn_[i]; }  // body tokens only
  bool in_device(int i) const { int f = function_of(i); return f >= 0 && functions_[f].device_code(); }
  bool in_host_function(int i) const { int f = function_of(i); return f >= 0 && !functions_[f].device_code(); }

  const std::vector<ForLoop>& for_loops() const { return fors_; }
  const std::vector<IfStmt>& ifs() const { return ifs_; }
  const std::vector<Launch>& launches() const { return launches_; }
  const std::vector<Decl>& decls() const { return decls_; }
  HeaderPart header_part(int i) const { return part_[i]; }
  bool template_angle(int i) const { return angle_[i]; }
  bool is_type_name(std::string_view s) const;
  bool is_keyword(std::string_view s) const;

  // All calls `name(...)` (any scope); args split at top-level commas.
  std::vector<Call> calls(std::string_view name) const;
  std::vector<TokRange> split_args(int lparen, int rparen) const;
  // The declaration of `name` visible in function `fn` (last one before token `at`), or nullptr.
  const Decl* decl_of(std::string_view name, int fn, int at) const;

  // Expression helpers. A binary operator has an operand before it.
  bool binary_op(int i) const;
  int operand_begin(int op) const;  // first token of the (postfix) operand ending just before op, or -1
  int operand_end(int op) const;    // one past the last token of the (unary) operand right after op, or -1
  // Index of the `;` ending the statement that starts at token i (handles blocks and
  // unbraced if/for/while bodies), or -1.
  int statement_end(int i) const;
  // Index of the `;` at the same nesting after token i, or -1 when a closing bracket comes first.
  int next_semicolon(int i) const;

 private:
  void build_matches();
  void build_types();
  void build_functions();
  void build_headers();
  void build_launches();
  void build_decls();
  int statement_end_depth(int i, int depth) const;

  std::string src_;
  std::vector<Token> all_, t_;
  std::vector<int> match_, fn_;
  std::vector<bool> angle_;
  std::vector<HeaderPart> part_;
  std::vector<Function> functions_;
  std::vector<ForLoop> fors_;
  std::vector<IfStmt> ifs_;
  std::vector<Launch> launches_;
  std::vector<Decl> decls_;
  std::unordered_set<std::string> types_, templates_;
};

}  // namespace dirigo::mutate
