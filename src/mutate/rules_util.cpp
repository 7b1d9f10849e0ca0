#include "mutate/rules_util.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <stdexcept>

namespace dirigo::mutate {

const std::vector<std::string>& families() {
  static const std::vector<std::string> f = {"arithmetic", "indexing", "semantic", "boundary", "synchronization",
                                             "precision"};
  return f;
}

const std::vector<Rule>& all_rules() {
  static const std::vector<Rule> rules = [] {
    std::vector<Rule> r;
    rules::add_arithmetic(r);
    rules::add_indexing(r);
    rules::add_semantic(r);
    rules::add_boundary(r);
    rules::add_synchronization(r);
    rules::add_precision(r);
    std::set<std::string> seen;
    for (const auto& x : r)
      if (!seen.insert(x.name).second) throw std::logic_error("duplicate mutation rule name " + x.name);
    std::stable_sort(r.begin(), r.end(), [](const Rule& a, const Rule& b) {
      auto fa = std::find(families().begin(), families().end(), a.family);
      auto fb = std::find(families().begin(), families().end(), b.family);
      return fa != fb ? fa < fb : a.name < b.name;
    });
    return r;
  }();
  return rules;
}

const Rule* find_rule(std::string_view name) {
  for (const auto& r : all_rules())
    if (r.name == name) return &r;
  return nullptr;
}

std::vector<Site> find_sites(const Rule& rule, const SourceModel& model) {
  std::vector<Site> raw, out;
  rule.find(model, raw);
  std::set<std::vector<std::tuple<uint32_t, uint32_t, std::string>>> seen;
  for (auto& s : raw) {
    if (s.edits.empty()) continue;
    std::sort(s.edits.begin(), s.edits.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
    bool ok = true;
    for (size_t i = 0; i + 1 < s.edits.size(); ++i)
      if (s.edits[i].end > s.edits[i + 1].begin) ok = false;  // overlapping edits: drop the site
    bool noop = true;
    for (const auto& e : s.edits)
      if (model.source().compare(e.begin, e.end - e.begin, e.text) != 0) noop = false;
    if (!ok || noop) continue;
    std::vector<std::tuple<uint32_t, uint32_t, std::string>> key;
    for (const auto& e : s.edits) key.emplace_back(e.begin, e.end, e.text);
    if (!seen.insert(key).second) continue;
    out.push_back(std::move(s));
  }
  return out;
}

std::string apply_site(const SourceModel& model, const Site& site) {
  std::string s = model.source();
  auto edits = site.edits;
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin > b.begin; });
  for (const auto& e : edits) s.replace(e.begin, e.end - e.begin, e.text);
  std::string prefix;
  if (site.needs_fp16 && s.find("cuda_fp16.h") == std::string::npos) prefix += "#include <cuda_fp16.h>\n";
  if (site.needs_bf16 && s.find("cuda_bf16.h") == std::string::npos) prefix += "#include <cuda_bf16.h>\n";
  return prefix + s;
}

namespace rules {

std::string str(const SourceModel& m, int first, int last) { return std::string(m.range_text(first, last)); }

Edit replace_edit(const SourceModel& m, int first, int last, std::string text) {
  return Edit{m.tok(first).offset, m.end_offset(last - 1), std::move(text)};
}

Site make_site(const SourceModel& m, int first, std::vector<Edit> edits) {
  Site s;
  s.line = m.tok(first).line;
  s.col = m.tok(first).col;
  s.edits = std::move(edits);
  return s;
}

Site replace_tokens(const SourceModel& m, int first, int last, std::string text) {
  return make_site(m, first, {replace_edit(m, first, last, std::move(text))});
}

bool simple_operand(const SourceModel& m, int first, int last) {
  if (last - first == 1) return true;
  if (m.is(first, "(") && m.match(first) == last - 1) return true;
  // a postfix chain: ident ( . ident | [..] | (..) )*
  if (!m.ident(first)) return false;
  int j = first + 1;
  while (j < last) {
    if ((m.is(j, "[") || m.is(j, "(")) && m.match(j) > j && m.match(j) < last) { j = m.match(j) + 1; continue; }
    if ((m.is(j, ".") || m.is(j, "->")) && m.ident(j + 1)) { j += 2; continue; }
    return false;
  }
  return true;
}

std::string with_delta(const SourceModel& m, int first, int last, const std::string& delta) {
  bool loose = false;
  for (int k = first; k < last; ++k) {
    if ((m.is(k, "(") || m.is(k, "[")) && m.match(k) > k) { k = m.match(k); continue; }
    auto s = m.text(k);
    if (s == "<<" || s == ">>" || s == "&" || s == "|" || s == "^" || s == "<" || s == "<=" || s == ">" ||
        s == ">=" || s == "==" || s == "!=" || s == "&&" || s == "||" || s == "?" || s == ":" || is_assign_op(s))
      loose = true;
  }
  std::string t = str(m, first, last);
  return (loose ? "(" + t + ")" : t) + " " + delta;
}

std::string paren(const SourceModel& m, int first, int last) {
  std::string t = str(m, first, last);
  return simple_operand(m, first, last) ? t : "(" + t + ")";
}

bool is_number(const SourceModel& m, int i) { return i >= 0 && i < m.size() && m.kind(i) == TokKind::Number; }

bool is_float_literal(const SourceModel& m, int i) {
  if (!is_number(m, i)) return false;
  auto s = m.text(i);
  if (s.starts_with("0x") || s.starts_with("0X")) return false;
  return s.find('.') != std::string_view::npos || s.find('e') != std::string_view::npos ||
         s.find('E') != std::string_view::npos || s.back() == 'f' || s.back() == 'F';
}

bool is_int_literal(const SourceModel& m, int i) {
  if (!is_number(m, i) || is_float_literal(m, i)) return false;
  auto s = m.text(i);
  if (s.size() > 1 && s[0] == '0') return false;  // hex, octal, binary
  return std::isdigit(static_cast<unsigned char>(s[0])) != 0;
}

double literal_value(const SourceModel& m, int i) {
  std::string s(m.text(i));
  s.erase(std::remove(s.begin(), s.end(), '\''), s.end());
  return std::strtod(s.c_str(), nullptr);
}

bool is_full_mask(const SourceModel& m, int first, int last) {
  if (last - first != 1) return false;
  std::string s(m.text(first));
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  while (!s.empty() && (s.back() == 'u' || s.back() == 'l')) s.pop_back();
  return s == "0xffffffff" || s == "full_mask" || s == "4294967295";
}

bool is_assign_op(std::string_view s) {
  return s == "=" || s == "+=" || s == "-=" || s == "*=" || s == "/=" || s == "%=" || s == "&=" || s == "|=" ||
         s == "^=" || s == "<<=" || s == ">>=";
}

bool device_binary(const SourceModel& m, int i) { return m.in_device(i) && m.binary_op(i) && !m.template_angle(i); }

std::vector<bool> ternary_conditions(const SourceModel& m) {
  std::vector<bool> in(m.size(), false);
  for (int q = 0; q < m.size(); ++q) {
    if (!m.is(q, "?") || !m.in_device(q)) continue;
    int j = q - 1;
    for (; j >= 0; --j) {
      auto s = m.text(j);
      if ((s == ")" || s == "]") && m.match(j) >= 0) { j = m.match(j); continue; }
      if (s == "(" || s == "[" || s == "{" || s == "}" || s == ";" || s == "," || s == "?" || s == ":" ||
          s == "return" || is_assign_op(s))
        break;
    }
    for (int k = j + 1; k < q; ++k) in[k] = true;
  }
  return in;
}

TokRange comparison_rhs(const SourceModel& m, int op) {
  int k = op + 1;
  for (; k < m.size(); ++k) {
    auto s = m.text(k);
    if ((s == "(" || s == "[") && m.match(k) > k) { k = m.match(k); continue; }
    if (s == "&&" || s == "||" || s == "?" || s == ";" || s == "," || s == ")" || s == "]" || s == "}" || s == ":")
      break;
  }
  return {op + 1, k};
}

bool is_store_target(const SourceModel& m, int open_bracket) {
  int close = m.match(open_bracket);
  return close > 0 && m.is(close + 1, "=");
}

Finder token_swap(std::string from, std::string to, bool binary_only, TokPred pred) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i) {
      if (m.text(i) != from || !m.in_device(i) || m.template_angle(i)) continue;
      if (binary_only && !m.binary_op(i)) continue;
      if (pred && !pred(m, i)) continue;
      out.push_back(replace_token(m, i, to));
    }
  };
}

Finder call_rename(std::string from, std::string to) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& c : m.calls(from))
      if (m.in_device(c.name_tok)) out.push_back(replace_token(m, c.name_tok, to));
  };
}

void add_cmp_flips(RuleList& r, const std::string& prefix, const std::string& lead, const std::string& tail,
                   std::initializer_list<const char*> flips,
                   const std::function<Finder(std::string, std::string)>& make) {
  auto op = [](std::string_view word) -> std::string {
    if (word == "lt") return "<";
    if (word == "le") return "<=";
    if (word == "gt") return ">";
    if (word == "ge") return ">=";
    throw std::logic_error("no comparison named " + std::string(word));
  };
  for (std::string_view flip : flips) {
    size_t two = flip.find('2');
    std::string from = op(flip.substr(0, two)), to = op(flip.substr(two + 1));
    r.add(prefix + std::string(flip), lead + from + " becomes " + to + tail, make(from, to));
  }
}

void add_call_renames(RuleList& r, std::initializer_list<std::pair<const char*, const char*>> renames) {
  for (const auto& [from, to] : renames)
    r.add(std::string(from) + "2" + to, std::string(from) + " becomes " + to, call_rename(from, to));
}

Finder member_swap(std::string obj, std::string field, std::string to_field) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 2 < m.size(); ++i)
      if (m.is(i, obj) && m.is(i + 1, ".") && m.is(i + 2, field) && m.in_device(i))
        out.push_back(replace_token(m, i + 2, to_field));
  };
}

Finder call_rewrite(std::string name, std::function<std::string(const std::vector<std::string>&)> to,
                    size_t min_args, size_t max_args, bool fp16, bool bf16) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& c : m.calls(name)) {
      if (!m.in_device(c.name_tok) || c.args.size() < min_args || c.args.size() > max_args) continue;
      std::vector<std::string> args;
      for (auto [b, e] : c.args) args.push_back(str(m, b, e));
      std::string text = to(args);
      if (text.empty()) continue;
      Site s = replace_tokens(m, c.name_tok, c.rparen + 1, text);
      s.needs_fp16 = fp16;
      s.needs_bf16 = bf16;
      out.push_back(std::move(s));
    }
  };
}

Finder call_remove(std::string name) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& c : m.calls(name)) {
      if (!m.in_device(c.name_tok) || !m.is(c.rparen + 1, ";")) continue;
      auto p = m.text(c.name_tok - 1);
      if (!(p == ";" || p == "{" || p == "}" || p == ")" || p == "else")) continue;  // a whole statement only
      out.push_back(replace_tokens(m, c.name_tok, c.rparen + 1, ""));
    }
  };
}

}  // namespace rules
}  // namespace dirigo::mutate
