#include "mutate/source_model.h"

#include <algorithm>

namespace dirigo::mutate {
namespace {

const std::unordered_set<std::string>& builtin_types() {
  static const std::unordered_set<std::string> s = {
      "void", "bool", "char", "short", "int", "long", "unsigned", "signed", "float", "double", "half", "__half",
      "__half2", "half2", "__nv_bfloat16", "__nv_bfloat162", "nv_bfloat16", "size_t", "int64_t", "int32_t",
      "uint32_t", "uint64_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "float2", "float3", "float4", "int2",
      "int3", "int4", "uint2", "uint3", "uint4", "double2", "double4", "dim3", "auto", "scalar_t", "accscalar_t",
      "index_t", "c10::Half", "at::Half", "ptrdiff_t"};
  return s;
}

const std::unordered_set<std::string>& keywords() {
  static const std::unordered_set<std::string> s = {
      "if", "else", "for", "while", "do", "switch", "case", "default", "return", "break", "continue", "goto",
      "sizeof", "new", "delete", "throw", "try", "catch", "const", "constexpr", "static", "extern", "volatile",
      "inline", "__forceinline__", "__inline__", "__global__", "__device__", "__host__", "__shared__",
      "__constant__", "__restrict__", "template", "typename", "class", "struct", "union", "enum", "namespace",
      "using", "typedef", "operator", "public", "private", "protected", "virtual", "true", "false", "nullptr",
      "this", "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "decltype", "alignas",
      "__launch_bounds__", "register", "mutable", "noexcept", "override", "final", "#pragma"};
  return s;
}

const std::unordered_set<std::string>& known_templates() {
  static const std::unordered_set<std::string> s = {
      "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "numeric_limits", "data_ptr", "vector",
      "array", "tuple", "pair", "min", "max", "is_same", "enable_if", "accessor", "packed_accessor32",
      "packed_accessor64", "make_tuple", "get", "unique_ptr", "shared_ptr", "optional", "integral_constant"};
  return s;
}

bool is_open(std::string_view s) { return s == "(" || s == "[" || s == "{" || s == "<<<"; }
bool is_close(std::string_view s) { return s == ")" || s == "]" || s == "}" || s == ">>>"; }

}  // namespace

SourceModel::SourceModel(std::string source) : src_(std::move(source)) {
  all_ = lex(src_);
  for (const auto& tk : all_)
    if (!tk.trivia()) t_.push_back(tk);
  fn_.assign(t_.size(), -1);
  angle_.assign(t_.size(), false);
  part_.assign(t_.size(), HeaderPart::None);
  build_matches();
  build_types();
  build_functions();
  build_headers();
  build_launches();
  build_decls();
}

std::string_view SourceModel::range_text(int first, int last) const {
  if (first < 0 || last <= first || last > size()) return {};
  return std::string_view(src_).substr(t_[first].offset, end_offset(last - 1) - t_[first].offset);
}

bool SourceModel::is_type_name(std::string_view s) const {
  std::string k(s);
  if (builtin_types().count(k) || types_.count(k)) return true;
  return s.size() > 2 && s.ends_with("_t");
}

bool SourceModel::is_keyword(std::string_view s) const { return keywords().count(std::string(s)) > 0; }

void SourceModel::build_matches() {
  match_.assign(t_.size(), -1);
  std::vector<int> stack;
  for (int i = 0; i < size(); ++i) {
    auto s = text(i);
    if (t_[i].kind != TokKind::Punct) continue;
    if (is_open(s)) {
      stack.push_back(i);
    } else if (is_close(s)) {
      // pop until the matching kind (tolerates stray brackets without crashing)
      std::string_view want = s == ")" ? "(" : s == "]" ? "[" : s == "}" ? "{" : "<<<";
      for (int k = static_cast<int>(stack.size()) - 1; k >= 0; --k) {
        if (text(stack[k]) == want) {
          match_[i] = stack[k];
          match_[stack[k]] = i;
          stack.resize(k);
          break;
        }
        if (want == "}" && text(stack[k]) != "{") continue;  // skip unclosed ( [ inside a block
        if (want != "}") break;
      }
    }
  }
}

void SourceModel::build_types() {
  for (int i = 0; i + 1 < size(); ++i) {
    auto s = text(i);
    if ((s == "typename" || s == "class" || s == "struct" || s == "union" || s == "enum") && ident(i + 1) &&
        !is_keyword(text(i + 1)))
      types_.insert(std::string(text(i + 1)));
    if (s == "using" && ident(i + 1) && is(i + 2, "=")) types_.insert(std::string(text(i + 1)));
    if (s == "typedef") {
      int j = i + 1;
      while (j < size() && !is(j, ";")) ++j;
      if (j < size() && ident(j - 1)) types_.insert(std::string(text(j - 1)));
    }
  }
  // names declared as templates: `template <...> ... name (` or `struct name`
  for (int i = 0; i < size(); ++i) {
    if (!is(i, "template") || !is(i + 1, "<")) continue;
    int depth = 0, j = i + 1;
    for (; j < size(); ++j) {
      if (is(j, "<")) ++depth;
      else if (is(j, ">")) { if (--depth == 0) break; }
      else if (is(j, ">>")) { depth -= 2; if (depth <= 0) break; }
      else if (is(j, ";") || is(j, "{")) break;
    }
    angle_[i + 1] = true;
    if (j < size()) angle_[j] = true;
    for (int k = j + 1; k < size() && k < j + 40; ++k) {
      if (is(k, "(") || is(k, "{") || is(k, ";") || is(k, "=")) {
        if (ident(k - 1)) templates_.insert(std::string(text(k - 1)));
        break;
      }
    }
  }
  // template argument lists after known template names
  for (int i = 0; i + 1 < size(); ++i) {
    if (!ident(i) || !is(i + 1, "<")) continue;
    std::string name(text(i));
    if (!known_templates().count(name) && !templates_.count(name)) continue;
    int depth = 0;
    for (int j = i + 1; j < size() && j < i + 64; ++j) {
      auto s = text(j);
      if (s == "(" || s == "[") { if (match_[j] > j) j = match_[j]; continue; }
      if (s == ";" || s == "{" || s == "}" || s == "&&" || s == "||") break;
      if (s == "<") { ++depth; angle_[j] = true; }
      else if (s == ">") { angle_[j] = true; if (--depth == 0) break; }
      else if (s == ">>") { angle_[j] = true; depth -= 2; if (depth <= 0) break; }
    }
  }
}

void SourceModel::build_functions() {
  // Context stack: one entry per open '{': the function index it opens, or -1.
  std::vector<int> stack;
  int current_fn = -1;
  for (int i = 0; i < size(); ++i) {
    auto s = text(i);
    if (current_fn >= 0 && stack.size() > 0) fn_[i] = current_fn;
    if (s == "{") {
      int opened = -1;
      if (current_fn < 0) {
        int j = i - 1;
        while (j >= 0 && (is(j, "const") || is(j, "noexcept") || is(j, "override") || is(j, "final") ||
                          is(j, "volatile")))
          --j;
        if (j >= 0 && is(j, ")") && match_[j] >= 0 && ident(match_[j] - 1) &&
            !is_keyword(text(match_[j] - 1)) && !is(match_[j] - 2, "=")) {
          // a __launch_bounds__(...) or attribute right before '{' is not the parameter list
          Function f;
          f.rparen = j;
          f.lparen = match_[j];
          f.name_tok = f.lparen - 1;
          f.name = std::string(text(f.name_tok));
          f.body_open = i;
          f.first_tok = f.name_tok;
          for (int k = f.name_tok - 1; k >= 0; --k) {
            auto w = text(k);
            if (w == ";" || w == "}" || w == "{") break;
            f.first_tok = k;
            if (w == "__global__") f.is_global = true;
            if (w == "__device__") f.is_device = true;
            if (w == "__host__") f.is_host = true;
            if (w == "template") f.is_template = true;
            if (w == ")" && match_[k] >= 0) { k = match_[k]; f.first_tok = k; }
          }
          opened = static_cast<int>(functions_.size());
          functions_.push_back(f);
          current_fn = opened;
        }
      }
      stack.push_back(opened);
    } else if (s == "}") {
      if (!stack.empty()) {
        int opened = stack.back();
        stack.pop_back();
        if (opened >= 0) {
          functions_[opened].body_close = i;
          fn_[i] = -1;
          current_fn = -1;
        }
      }
    }
  }
  for (int f = 0; f < static_cast<int>(functions_.size()); ++f)
    if (functions_[f].body_close < 0) {  // unterminated body: no tokens belong to it
      for (int i = functions_[f].body_open; i < size(); ++i)
        if (fn_[i] == f) fn_[i] = -1;
    }
  for (int f = 0; f < static_cast<int>(functions_.size()); ++f)
    if (functions_[f].body_open >= 0) fn_[functions_[f].body_open] = -1;
}

void SourceModel::build_headers() {
  for (int i = 0; i < size(); ++i) {
    if (function_of(i) < 0 || !ident(i)) continue;
    auto s = text(i);
    if ((s == "for" || s == "if" || s == "while") && is(i + 1, "(") && match_[i + 1] > i + 1) {
      int lp = i + 1, rp = match_[lp];
      if (s == "if") {
        ifs_.push_back({i, lp, rp});
        for (int k = lp + 1; k < rp; ++k) part_[k] = HeaderPart::IfCond;
        continue;
      }
      if (s == "while") {
        for (int k = lp + 1; k < rp; ++k) part_[k] = HeaderPart::WhileCond;
        continue;
      }
      std::vector<int> semis;
      for (int k = lp + 1; k < rp; ++k) {
        if (is(k, "(") || is(k, "[") || is(k, "{")) { k = std::max(k, match_[k]); continue; }
        if (is(k, ";")) semis.push_back(k);
      }
      if (semis.size() != 2) continue;  // range-for or malformed
      int body_first = rp + 1;
      int body_last = is(body_first, "{") ? match_[body_first] : statement_end(body_first);
      if (body_last < 0) continue;
      fors_.push_back({i, lp, semis[0], semis[1], rp, body_first, body_last});
      for (int k = lp + 1; k < semis[0]; ++k) part_[k] = HeaderPart::ForInit;
      for (int k = semis[0] + 1; k < semis[1]; ++k) part_[k] = HeaderPart::ForCond;
      for (int k = semis[1] + 1; k < rp; ++k) part_[k] = HeaderPart::ForStep;
    }
  }
}

void SourceModel::build_launches() {
  for (int i = 0; i < size(); ++i) {
    if (!is(i, "<<<") || match_[i] < 0) continue;
    Launch l;
    l.open = i;
    l.close = match_[i];
    int n = i - 1;
    if (is(n, ">")) {  // kernel<T><<<...>>>
      int depth = 0;
      for (; n >= 0; --n) {
        if (is(n, ">")) ++depth;
        else if (is(n, "<") && --depth == 0) { --n; break; }
      }
    }
    l.name_tok = n;
    l.args = split_args(l.open, l.close);
    launches_.push_back(l);
  }
}

void SourceModel::build_decls() {
  for (int f = 0; f < static_cast<int>(functions_.size()); ++f) {
    const auto& fn = functions_[f];
    if (fn.body_close < 0) continue;
    auto scan = [&](int first, int last, bool param) {
      for (int i = first; i < last; ++i) {
        if (!ident(i) || !is_type_name(text(i))) continue;
        if (is(i - 1, "::") || (is(i - 1, "(") && is(i + 1, ")"))) continue;  // casts, qualified names
        Decl d;
        d.type_tok = i;
        d.type = std::string(text(i));
        d.fn = f;
        d.param = param;
        int j = i + 1;
        // multi-word builtin types: unsigned int, long long
        while (ident(j) && (is(j, "int") || is(j, "long") || is(j, "short") || is(j, "char") || is(j, "double")))
          ++j;
        for (;; ++j) {
          if (is(j, "*")) d.pointer = true;
          else if (is(j, "&") || is(j, "__restrict__") || is(j, "const") || is(j, "volatile")) {}
          else break;
        }
        if (!ident(j) || is_keyword(text(j)) || is_type_name(text(j))) continue;
        if (!(is(j + 1, ",") || is(j + 1, ")") || is(j + 1, "=") || is(j + 1, ";") || is(j + 1, "[") ||
              (!param && is(j + 1, "(") && d.type == "dim3")))
          continue;
        d.name_tok = j;
        d.name = std::string(text(j));
        d.array = is(j + 1, "[");
        for (int k = i - 1; k >= first && k >= i - 6; --k) {
          if (is(k, "__shared__")) d.shared = true;
          if (is(k, "const")) d.is_const = true;
          if (is(k, ";") || is(k, "{") || is(k, "}") || is(k, ",") || is(k, "(")) break;
        }
        decls_.push_back(d);
        i = j;
      }
    };
    scan(fn.lparen + 1, fn.rparen, true);
    scan(fn.body_open + 1, fn.body_close, false);
  }
}

const Decl* SourceModel::decl_of(std::string_view name, int fn, int at) const {
  const Decl* best = nullptr;
  for (const auto& d : decls_)
    if (d.fn == fn && d.name == name && d.name_tok <= at) best = &d;
  return best;
}

std::vector<TokRange> SourceModel::split_args(int lparen, int rparen) const {
  std::vector<TokRange> args;
  if (lparen < 0 || rparen <= lparen) return args;
  int start = lparen + 1;
  for (int k = lparen + 1; k < rparen; ++k) {
    if (is_open(text(k)) && match_[k] > k) { k = match_[k]; continue; }
    if (is(k, "<") && angle_[k]) {  // template args may hold commas
      int depth = 0;
      for (; k < rparen; ++k) {
        if (is(k, "<") && angle_[k]) ++depth;
        else if (is(k, ">") && angle_[k] && --depth == 0) break;
      }
      continue;
    }
    if (is(k, ",")) { args.push_back({start, k}); start = k + 1; }
  }
  if (start < rparen) args.push_back({start, rparen});
  return args;
}

std::vector<Call> SourceModel::calls(std::string_view name) const {
  std::vector<Call> out;
  for (int i = 0; i + 1 < size(); ++i) {
    if (!ident(i) || text(i) != name || !is(i + 1, "(") || match_[i + 1] < 0) continue;
    if (is(i - 1, ".") || is(i - 1, "->")) continue;  // a member, not the free function
    if (i > 0 && ident(i - 1) && is_type_name(text(i - 1))) continue;  // a declaration of it
    Call c{i, i + 1, match_[i + 1], {}};
    c.args = split_args(c.lparen, c.rparen);
    out.push_back(std::move(c));
  }
  return out;
}

bool SourceModel::binary_op(int i) const {
  if (i <= 0) return false;
  int p = i - 1;
  auto s = text(p);
  const auto k = t_[p].kind;
  if (k == TokKind::Number || k == TokKind::String || k == TokKind::Char) return true;
  if (s == ")" || s == "]") return true;
  if (s == ">" && angle_[p]) return false;
  if (k == TokKind::Ident) {
    if (is_keyword(s) && s != "this" && s != "true" && s != "false" && s != "nullptr") return false;
    if (is_type_name(s)) {
      // `float * p` is a declarator, except a variable that happens to end in _t... prefer declarator
      return false;
    }
    return true;
  }
  if (s == "++" || s == "--") return p > 0 && (ident(p - 1) || is(p - 1, "]") || is(p - 1, ")"));
  return false;
}

int SourceModel::operand_begin(int op) const {
  int j = op - 1;
  if (j < 0) return -1;
  int begin = -1;
  for (;;) {
    if (j < 0) break;
    auto s = text(j);
    if ((s == ")" || s == "]") && match_[j] >= 0) {
      begin = match_[j];
      j = begin - 1;
      if (s == ")" && ident(j) && !is_keyword(text(j))) { begin = j; j = begin - 1; }  // call
      else if (s == "]") continue;   // subscript: keep collecting the array expression
      else if (s == ")" && is(j, ">") && angle_[j]) {  // static_cast<T>(x)
        int d = 0;
        for (; j >= 0; --j) {
          if (is(j, ">")) ++d;
          else if (is(j, "<") && --d == 0) break;
        }
        begin = j - 1;
        j = begin - 1;
      }
    } else if (t_[j].kind == TokKind::Ident || t_[j].kind == TokKind::Number) {
      if (t_[j].kind == TokKind::Ident && is_keyword(s) && s != "this" && s != "true" && s != "false") break;
      begin = j;
      j = j - 1;
    } else {
      break;
    }
    if (j >= 0 && (is(j, ".") || is(j, "->") || is(j, "::"))) { --j; continue; }
    break;
  }
  return begin;
}

int SourceModel::operand_end(int op) const {
  int j = op + 1;
  while (j < size() && (is(j, "-") || is(j, "+") || is(j, "!") || is(j, "~") || is(j, "*") || is(j, "&") ||
                        is(j, "++") || is(j, "--")))
    ++j;
  if (j >= size()) return -1;
  if (is(j, "(")) {
    if (match_[j] < 0) return -1;
    int close = match_[j];
    // a cast `(float) x` continues with its operand
    if (close == j + 2 && ident(j + 1) && is_type_name(text(j + 1))) return operand_end(close);
    j = close + 1;
  } else if (t_[j].kind == TokKind::Number || t_[j].kind == TokKind::Char) {
    return j + 1;
  } else if (t_[j].kind == TokKind::Ident) {
    ++j;
  } else {
    return -1;
  }
  for (;;) {
    if (j < size() && (is(j, "(") || is(j, "[")) && match_[j] > j) { j = match_[j] + 1; continue; }
    if (j + 1 < size() && (is(j, ".") || is(j, "->") || is(j, "::")) && ident(j + 1)) { j += 2; continue; }
    if (j < size() && is(j, "<") && angle_[j]) {
      int d = 0;
      for (; j < size(); ++j) {
        if (is(j, "<")) ++d;
        else if (is(j, ">") && --d == 0) break;
      }
      ++j;
      continue;
    }
    if (j < size() && (is(j, "++") || is(j, "--"))) { ++j; continue; }
    break;
  }
  return j;
}

int SourceModel::next_semicolon(int i) const {
  for (int k = i; k < size(); ++k) {
    auto s = text(k);
    if (is_open(s)) {
      if (match_[k] < 0) return -1;
      k = match_[k];
      continue;
    }
    if (is_close(s)) return -1;
    if (s == ";") return k;
  }
  return -1;
}

int SourceModel::statement_end(int i) const { return statement_end_depth(i, 0); }

int SourceModel::statement_end_depth(int i, int depth) const {
  if (i < 0 || i >= size() || depth > 64) return -1;
  auto s = text(i);
  if (s == "{") return match_[i];
  if ((s == "if" || s == "for" || s == "while" || s == "switch") && is(i + 1, "(") && match_[i + 1] > 0) {
    int end = statement_end_depth(match_[i + 1] + 1, depth + 1);
    if (s == "if" && end >= 0 && is(end + 1, "else")) end = statement_end_depth(end + 2, depth + 1);
    return end;
  }
  if (s == "do") {
    int body = statement_end_depth(i + 1, depth + 1);
    return body < 0 ? -1 : next_semicolon(body + 1);
  }
  return next_semicolon(i);
}

}  // namespace dirigo::mutate
