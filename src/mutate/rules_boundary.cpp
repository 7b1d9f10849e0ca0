// Boundary family: guard deletion, < vs <= in guards and loop conditions, loop bounds +-1,
// loop start shifts, loop step doubling, tail drops, and host-side launch configuration
// faults (ceil -> floor grid division, grid/block/shared-memory sizes).
#include <fmt/format.h>

#include "mutate/rules_util.h"

namespace dirigo::mutate::rules {
namespace {

bool is_cmp(std::string_view s) { return s == "<" || s == "<=" || s == ">" || s == ">="; }

Finder header_cmp(HeaderPart part, std::string from, std::string to) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i)
      if (m.header_part(i) == part && m.text(i) == from && device_binary(m, i)) out.push_back(replace_token(m, i, to));
  };
}

// RHS of each comparison in a header part gets `delta` appended: `e` -> `e - 1`.
Finder header_bound(HeaderPart part, std::string delta) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i) {
      if (m.header_part(i) != part || !is_cmp(m.text(i)) || !device_binary(m, i)) continue;
      auto [b, e] = comparison_rhs(m, i);
      if (e <= b) continue;
      out.push_back(replace_tokens(m, b, e, with_delta(m, b, e, delta)));
    }
  };
}

// Host code: `(X + Y - 1) / Y` or `(X + C) / D` with C = D - 1.
void ceil_div_sites(const SourceModel& m, std::vector<Site>& out) {
  for (int i = 0; i < m.size(); ++i) {
    if (!m.is(i, "(") || !m.in_host_function(i) || m.match(i) < 0 || !m.is(m.match(i) + 1, "/")) continue;
    int close = m.match(i), div = close + 1;
    int dend = m.operand_end(div);
    if (dend < 0) continue;
    std::string d = str(m, div + 1, dend);
    // find the last top-level + inside the parens
    int plus = -1;
    for (int k = i + 1; k < close; ++k) {
      if ((m.is(k, "(") || m.is(k, "[")) && m.match(k) > k) { k = m.match(k); continue; }
      if (m.is(k, "+")) plus = k;
    }
    if (plus < 0) continue;
    std::string tail = str(m, plus + 1, close);
    std::string x;
    if (m.is(close - 2, "-") && m.is(close - 1, "1") && str(m, plus + 1, close - 2) == d) {
      x = str(m, i + 1, plus);  // (X + D - 1) / D
    } else if (close - plus == 2 && is_int_literal(m, plus + 1) && dend == div + 2 && is_int_literal(m, div + 1) &&
               literal_value(m, plus + 1) + 1 == literal_value(m, div + 1)) {
      x = str(m, i + 1, plus);  // (X + 255) / 256
    } else {
      continue;
    }
    out.push_back(replace_tokens(m, i, dend, "(" + x + ") / " + d));
  }
}

// Launch argument k (0 grid, 1 block, 2 shared bytes) rewritten; dim3 values are left alone.
Finder launch_arg(size_t k, std::string fmt_text) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& l : m.launches()) {
      if (l.args.size() <= k) continue;
      auto [b, e] = l.args[k];
      if (e - b == 1 && m.ident(b)) {
        const Decl* d = m.decl_of(m.text(b), m.function_of(b), b);
        if (d && d->type == "dim3") continue;
      }
      if (m.is(b, "dim3")) continue;
      if (str(m, b, e) == "0") continue;
      out.push_back(replace_tokens(m, b, e, fmt::format(fmt::runtime(fmt_text), paren(m, b, e))));
    }
  };
}

// The comparison flips of one header part (`prefix-lt2le` ...), then its bound shifts
// (`prefix-bound-minus1`, `prefix-bound-plus1`).
void add_header_rules(RuleList& r, HeaderPart part, const std::string& prefix, const std::string& what,
                      std::initializer_list<const char*> flips) {
  add_cmp_flips(r, prefix + "-", what + " ", "", flips,
                [part](std::string from, std::string to) { return header_cmp(part, std::move(from), std::move(to)); });
  for (const auto& [suffix, delta] : {std::pair{"minus1", "- 1"}, std::pair{"plus1", "+ 1"}})
    r.add(prefix + "-bound-" + suffix, prefix + " bound e becomes e " + delta, header_bound(part, delta));
}

}  // namespace

void add_boundary(std::vector<Rule>& out) {
  RuleList r{out, "boundary"};
  r.add("guard-to-true", "guard deletion: an if condition with a comparison becomes true", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& f : m.ifs()) {
      if (!m.in_device(f.if_tok)) continue;
      bool cmp = false;
      for (int k = f.lparen + 1; k < f.rparen; ++k) cmp = cmp || (is_cmp(m.text(k)) && m.binary_op(k) && !m.template_angle(k));
      if (cmp) out.push_back(replace_tokens(m, f.lparen + 1, f.rparen, "true"));
    }
  });
  r.add("early-return-delete", "guard deletion: `if (c) return;` is removed", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& f : m.ifs())
      if (m.in_device(f.if_tok) && m.is(f.rparen + 1, "return") && m.is(f.rparen + 2, ";") && !m.is(f.rparen + 3, "else"))
        out.push_back(replace_tokens(m, f.if_tok, f.rparen + 3, ""));
  });
  add_header_rules(r, HeaderPart::IfCond, "guard", "guard", {"lt2le", "le2lt", "ge2gt", "gt2ge"});
  r.add("guard-conjunct-drop", "one conjunct of an if (a && b) guard is dropped", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& f : m.ifs()) {
      if (!m.in_device(f.if_tok)) continue;
      std::vector<int> ands;
      for (int k = f.lparen + 1; k < f.rparen; ++k) {
        if ((m.is(k, "(") || m.is(k, "[")) && m.match(k) > k) { k = m.match(k); continue; }
        if (m.is(k, "||") || m.is(k, "?")) { ands.clear(); break; }
        if (m.is(k, "&&")) ands.push_back(k);
      }
      if (ands.empty()) continue;
      std::vector<int> bounds = {f.lparen};
      bounds.insert(bounds.end(), ands.begin(), ands.end());
      bounds.push_back(f.rparen);
      for (size_t c = 0; c + 1 < bounds.size(); ++c) {
        // conjunct c spans (bounds[c], bounds[c+1]); drop it together with one && beside it
        if (c == 0) out.push_back(make_site(m, f.lparen + 1, {Edit{m.tok(f.lparen + 1).offset, m.tok(bounds[1] + 1).offset, ""}}));
        else out.push_back(make_site(m, bounds[c], {Edit{m.end_offset(bounds[c] - 1), m.end_offset(bounds[c + 1] - 1), ""}}));
      }
    }
  });
  add_header_rules(r, HeaderPart::ForCond, "loop", "loop condition", {"lt2le", "le2lt", "gt2ge", "ge2gt"});
  auto init_value = [](const SourceModel& m, const ForLoop& f) -> TokRange {
    int eq = -1;
    for (int k = f.lparen + 1; k < f.semi1; ++k)
      if (m.is(k, "=")) { eq = k; break; }
    if (eq < 0) return {-1, -1};
    int e = eq + 1;
    for (; e < f.semi1; ++e) {
      if ((m.is(e, "(") || m.is(e, "[")) && m.match(e) > e) { e = m.match(e); continue; }
      if (m.is(e, ",")) break;
    }
    return {eq + 1, e};
  };
  r.add("loop-start-plus1", "loop start s becomes s + 1 (skips the first iteration)", [init_value](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& f : m.for_loops()) {
      if (!m.in_device(f.for_tok)) continue;
      auto [b, e] = init_value(m, f);
      if (b < 0 || e <= b) continue;
      out.push_back(replace_tokens(m, b, e, with_delta(m, b, e, "+ 1")));
    }
  });
  r.add("loop-start-zero", "loop start s (not 0) becomes 0", [init_value](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& f : m.for_loops()) {
      if (!m.in_device(f.for_tok)) continue;
      auto [b, e] = init_value(m, f);
      if (b < 0 || e <= b || (e - b == 1 && is_number(m, b) && literal_value(m, b) == 0)) continue;
      out.push_back(replace_tokens(m, b, e, "0"));
    }
  });
  r.add("loop-step-double", "loop step doubled: i++ becomes i += 2, i += s becomes i += 2 * (s)", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& f : m.for_loops()) {
      if (!m.in_device(f.for_tok)) continue;
      int b = f.semi2 + 1, e = f.rparen;
      if (e - b == 2 && m.ident(b) && (m.is(b + 1, "++"))) out.push_back(replace_tokens(m, b, e, str(m, b, b + 1) + " += 2"));
      else if (e - b == 2 && m.ident(b + 1) && m.is(b, "++")) out.push_back(replace_tokens(m, b, e, str(m, b + 1, e) + " += 2"));
      else if (e - b >= 3 && m.ident(b) && m.is(b + 1, "+=")) out.push_back(replace_tokens(m, b + 2, e, "2 * (" + str(m, b + 2, e) + ")"));
    }
  });
  r.add("tail-drop", "loop bound e rounded down to a multiple of 4: e / 4 * 4 (drops the tail)", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i) {
      if (m.header_part(i) != HeaderPart::ForCond || !(m.is(i, "<") || m.is(i, "<=")) || !device_binary(m, i)) continue;
      auto [b, e] = comparison_rhs(m, i);
      if (e <= b) continue;
      out.push_back(replace_tokens(m, b, e, paren(m, b, e) + " / 4 * 4"));
    }
  });
  r.add("tail-loop-delete", "a remainder loop right after a main loop over the same bound is removed", [](const SourceModel& m, std::vector<Site>& out) {
    const auto& fs = m.for_loops();
    auto bound = [&](const ForLoop& f) { return str(m, f.semi1 + 1, f.semi2); };
    auto rhs = [&](const ForLoop& f) {
      for (int k = f.semi1 + 1; k < f.semi2; ++k)
        if (is_cmp(m.text(k))) return str(m, k + 1, f.semi2);
      return std::string();
    };
    for (size_t a = 0; a < fs.size(); ++a)
      for (size_t b = 0; b < fs.size(); ++b) {
        if (fs[b].for_tok != fs[a].body_last + 1 || !m.in_device(fs[b].for_tok)) continue;
        bool tail = fs[b].semi1 == fs[b].lparen + 1 || (!rhs(fs[b]).empty() && rhs(fs[b]) == rhs(fs[a]));
        if (!tail || bound(fs[b]).empty()) continue;
        out.push_back(replace_tokens(m, fs[b].for_tok, fs[b].body_last + 1, ""));
      }
  });
  r.add("ceil2floor-grid", "host: grid size (n + b - 1) / b becomes n / b", ceil_div_sites, Scope::Host);
  r.add("launch-grid-minus1", "host: launch grid g becomes g - 1", launch_arg(0, "{} - 1"), Scope::Host);
  r.add("launch-block-halve", "host: launch block size b becomes b / 2", launch_arg(1, "{} / 2"), Scope::Host);
  r.add("launch-shmem-halve", "host: dynamic shared memory bytes s becomes s / 2", launch_arg(2, "{} / 2"), Scope::Host);
}

}  // namespace dirigo::mutate::rules
