// Arithmetic family: operator replacement (AOR), compound-assignment swaps, constant
// off-by-one, negated stores, dropped unary minus, swapped operands of non-commutative ops.
#include <fmt/format.h>

#include "mutate/rules_util.h"

namespace dirigo::mutate::rules {
namespace {

// Number formatting for literal mutations: integers stay integers.
std::string int_plus(const SourceModel& m, int i, long delta) {
  std::string s(m.text(i));
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  long v = std::strtol(s.substr(0, digits).c_str(), nullptr, 10);
  return std::to_string(v + delta) + s.substr(digits);
}

bool outside_decl_size(const SourceModel& m, int i) {
  // `float buf[256]` sizes are constants of the declaration, not of the computation
  return !(m.is(i - 1, "[") && m.ident(i - 2) && m.decl_of(m.text(i - 2), m.function_of(i), i) &&
           m.decl_of(m.text(i - 2), m.function_of(i), i)->name_tok == i - 2);
}

// `a OP b` -> `b OP a` for simple operands.
Finder operand_swap(std::string op) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i) {
      if (m.text(i) != op || !device_binary(m, i)) continue;
      int lb = m.operand_begin(i), re = m.operand_end(i);
      if (lb < 0 || re < 0) continue;
      // the operator must bind its operands (not `a * b - c` where b belongs to `*`)
      auto before = m.text(lb - 1), after = m.text(re);
      auto tight = [](std::string_view s) { return s == "*" || s == "/" || s == "%" || s == "." || s == "->"; };
      if (tight(before) || tight(after)) continue;
      if (op == "-" && (before == "-" || before == "+")) continue;  // a - b - c: left-assoc chain
      std::string l = str(m, lb, i), r = str(m, i + 1, re);
      out.push_back(make_site(m, lb, {replace_edit(m, lb, i, r), replace_edit(m, i + 1, re, l)}));
    }
  };
}

}  // namespace

void add_arithmetic(std::vector<Rule>& out) {
  RuleList r{out, "arithmetic"};
  struct TokenSwap {
    const char* name;
    const char* description;
    const char* from;
    const char* to;
    bool binary_only;
  };
  const TokenSwap swaps[] = {
      {"plus2minus", "AOR: binary + becomes -", "+", "-", true},
      {"minus2plus", "AOR: binary - becomes +", "-", "+", true},
      {"mul2div", "AOR: binary * becomes /", "*", "/", true},
      {"div2mul", "AOR: / becomes *", "/", "*", true},
      {"mul2plus", "AOR: binary * becomes +", "*", "+", true},
      {"plus2mul", "AOR: binary + becomes *", "+", "*", true},
      {"mod2div", "AOR: % becomes /", "%", "/", true},
      {"div2mod", "AOR: / becomes % (integer index arithmetic)", "/", "%", true},
      {"plus-assign2minus-assign", "compound assignment += becomes -=", "+=", "-=", false},
      {"minus-assign2plus-assign", "compound assignment -= becomes +=", "-=", "+=", false},
      {"mul-assign2div-assign", "compound assignment *= becomes /=", "*=", "/=", false},
      {"div-assign2mul-assign", "compound assignment /= becomes *=", "/=", "*=", false},
      {"plus-assign2assign", "accumulation += becomes plain = (keeps only the last term)", "+=", "=", false},
      {"shl2shr", "shift << becomes >>", "<<", ">>", true},
      {"shr2shl", "shift >> becomes <<", ">>", "<<", true},
      {"bitand2bitor", "bitwise & becomes |", "&", "|", true},
      {"bitor2bitand", "bitwise | becomes &", "|", "&", true},
      {"xor2and", "bitwise ^ becomes &", "^", "&", true},
  };
  for (const TokenSwap& t : swaps) r.add(t.name, t.description, token_swap(t.from, t.to, t.binary_only));
  r.add("int-const-plus1", "decimal integer constant n becomes n+1", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i)
      if (is_int_literal(m, i) && m.in_device(i) && outside_decl_size(m, i)) out.push_back(replace_token(m, i, int_plus(m, i, 1)));
  });
  r.add("int-const-minus1", "nonzero decimal integer constant n becomes n-1", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i)
      if (is_int_literal(m, i) && m.in_device(i) && literal_value(m, i) != 0 && outside_decl_size(m, i))
        out.push_back(replace_token(m, i, int_plus(m, i, -1)));
  });
  r.add("float-const-plus1", "floating constant c becomes (c + 1)", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i) {
      if (!is_float_literal(m, i) || !m.in_device(i)) continue;
      auto s = m.text(i);
      bool f = s.back() == 'f' || s.back() == 'F';
      out.push_back(replace_token(m, i, fmt::format("({} + 1.0{})", s, f ? "f" : "")));
    }
  });
  r.add("negate-store", "UOI: a stored value a[i] = e becomes a[i] = -(e)", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i) {
      if (!m.is(i, "=") || !m.in_device(i) || !m.is(i - 1, "]")) continue;
      int end = m.next_semicolon(i + 1);
      if (end < 0 || end == i + 1) continue;
      out.push_back(replace_tokens(m, i + 1, end, "-(" + str(m, i + 1, end) + ")"));
    }
  });
  r.add("unary-minus-drop", "a unary minus -x becomes x", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 1 < m.size(); ++i) {
      if (!m.is(i, "-") || !m.in_device(i) || m.binary_op(i)) continue;
      int e = m.operand_end(i);
      if (e < 0) continue;
      out.push_back(make_site(m, i, {Edit{m.tok(i).offset, m.tok(i + 1).offset, ""}}));
    }
  });
  r.add("sub-operand-swap", "non-commutative a - b becomes b - a", operand_swap("-"));
  r.add("div-operand-swap", "non-commutative a / b becomes b / a", operand_swap("/"));
}

}  // namespace dirigo::mutate::rules
