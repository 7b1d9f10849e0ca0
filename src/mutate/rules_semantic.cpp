// Semantic family: tie-breaking (> vs >=) and direction flips in selections, max<->min,
// wrong or dropped activations, swapped arguments of non-commutative calls (fused-op
// reordering), logical and flag flips, wrong running-max initialization.
#include "mutate/rules_util.h"

namespace dirigo::mutate::rules {
namespace {

// Comparison `from` -> `to` inside the condition of a ternary selection in device code.
Finder ternary_cmp(std::string from, std::string to) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    auto cond = ternary_conditions(m);
    for (int i = 0; i < m.size(); ++i)
      if (cond[i] && m.text(i) == from && device_binary(m, i)) out.push_back(replace_token(m, i, to));
  };
}

// Comparison `from` -> `to` in ternary or if conditions (selection direction).
Finder select_cmp(std::string from, std::string to) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    auto cond = ternary_conditions(m);
    for (int i = 0; i < m.size(); ++i)
      if ((cond[i] || m.header_part(i) == HeaderPart::IfCond) && m.text(i) == from && device_binary(m, i))
        out.push_back(replace_token(m, i, to));
  };
}

bool is_zero_literal(std::string_view a) {
  return a == "0.0f" || a == "0.f" || a == "0.0" || a == "0" || a == "0.0F";
}

bool is_one_literal(const SourceModel& m, int i) { return is_number(m, i) && literal_value(m, i) == 1.0; }

}  // namespace

void add_semantic(std::vector<Rule>& out) {
  RuleList r{out, "semantic"};
  add_call_renames(r, {{"fmaxf", "fminf"}, {"fminf", "fmaxf"}, {"fmax", "fmin"}, {"fmin", "fmax"}, {"max", "min"},
                       {"min", "max"}});
  add_cmp_flips(r, "tie-", "tie-breaking: ", " in a selection c ? a : b", {"gt2ge", "ge2gt", "lt2le", "le2lt"},
                ternary_cmp);
  add_cmp_flips(r, "cmp-flip-", "selection direction: ", " in an if or ?: condition", {"gt2lt", "lt2gt"}, select_cmp);
  r.add("ternary-swap", "c ? a : b becomes c ? b : a", [](const SourceModel& m, std::vector<Site>& out) {
    for (int q = 0; q < m.size(); ++q) {
      if (!m.is(q, "?") || !m.in_device(q)) continue;
      int colon = -1, k = q + 1;
      for (; k < m.size(); ++k) {
        if ((m.is(k, "(") || m.is(k, "[")) && m.match(k) > k) { k = m.match(k); continue; }
        if (m.is(k, "?")) break;  // nested selection: skip this one
        if (m.is(k, ":")) { colon = k; break; }
        if (m.is(k, ";") || m.is(k, ")") || m.is(k, ",")) break;
      }
      if (colon < 0) continue;
      int e = colon + 1;
      for (; e < m.size(); ++e) {
        if ((m.is(e, "(") || m.is(e, "[")) && m.match(e) > e) { e = m.match(e); continue; }
        if (m.is(e, ";") || m.is(e, ",") || m.is(e, ")") || m.is(e, "]") || m.is(e, "}") || m.is(e, "?") || m.is(e, ":")) break;
      }
      if (m.is(e, "?") || m.is(e, ":") || e == colon + 1) continue;
      std::string a = str(m, q + 1, colon), b = str(m, colon + 1, e);
      out.push_back(make_site(m, q + 1, {replace_edit(m, q + 1, colon, b), replace_edit(m, colon + 1, e, a)}));
    }
  });
  r.add("and2or", "logical && becomes ||", token_swap("&&", "||", false));
  r.add("or2and", "logical || becomes &&", token_swap("||", "&&", false));
  r.add("eq2ne", "== becomes !=", token_swap("==", "!=", false));
  r.add("ne2eq", "!= becomes ==", token_swap("!=", "==", false));
  r.add("if-negate", "flag flip: if (c) becomes if (!(c))", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& f : m.ifs())
      if (m.in_device(f.if_tok) && f.rparen > f.lparen + 1)
        out.push_back(replace_tokens(m, f.lparen + 1, f.rparen, "!(" + str(m, f.lparen + 1, f.rparen) + ")"));
  });
  r.add("bool-flip", "flag flip: true <-> false", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i)
      if (m.in_device(i) && (m.is(i, "true") || m.is(i, "false"))) out.push_back(replace_token(m, i, m.is(i, "true") ? "false" : "true"));
  });
  r.add("not-drop", "flag flip: a logical !x becomes x", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 1 < m.size(); ++i)
      if (m.is(i, "!") && m.in_device(i)) out.push_back(make_site(m, i, {Edit{m.tok(i).offset, m.tok(i + 1).offset, ""}}));
  });
  auto relu_drop = [](const SourceModel& m, std::vector<Site>& out) {
    for (std::string fn : {"fmaxf", "fmax", "max"})
      for (const auto& c : m.calls(fn)) {
        if (!m.in_device(c.name_tok) || c.args.size() != 2) continue;
        auto a0 = str(m, c.args[0].first, c.args[0].second), a1 = str(m, c.args[1].first, c.args[1].second);
        int keep = is_zero_literal(a1) ? 0 : is_zero_literal(a0) ? 1 : -1;
        if (keep < 0) continue;
        out.push_back(replace_tokens(m, c.name_tok, c.rparen + 1, "(" + str(m, c.args[keep].first, c.args[keep].second) + ")"));
      }
  };
  r.add("relu-drop", "wrong activation: ReLU fmaxf(x, 0.0f) becomes x", relu_drop);
  r.add("tanh2sigmoid", "wrong activation: tanhf(x) becomes a sigmoid", call_rewrite("tanhf", [](const std::vector<std::string>& a) {
          return "(1.0f / (1.0f + expf(-(" + a[0] + "))))";
        }, 1, 1));
  r.add("sigmoid2tanh", "wrong activation: 1 / (1 + expf(-x)) becomes tanhf(x)", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& c : m.calls("expf")) {
      int i = c.name_tok;
      if (!m.in_device(i) || c.args.size() != 1 || !m.is(c.args[0].first, "-")) continue;
      // 1.0f / ( 1.0f + expf ( - x ) )
      if (!m.is(i - 1, "+") || !is_one_literal(m, i - 2) || !m.is(i - 3, "(") || !m.is(i - 4, "/") || !is_one_literal(m, i - 5)) continue;
      if (m.match(i - 3) != c.rparen + 1) continue;
      out.push_back(replace_tokens(m, i - 5, c.rparen + 2, "tanhf(" + str(m, c.args[0].first + 1, c.args[0].second) + ")"));
    }
  });
  r.add("expf2exp2f", "wrong base: expf becomes exp2f", call_rename("expf", "exp2f"));
  r.add("erff2tanhf", "wrong activation: erff (exact GELU) becomes tanhf", call_rename("erff", "tanhf"));
  r.add("sqrtf2rsqrtf", "sqrtf becomes rsqrtf", call_rename("sqrtf", "rsqrtf"));
  r.add("rsqrtf2sqrtf", "rsqrtf becomes sqrtf", call_rename("rsqrtf", "sqrtf"));
  r.add("fabsf-drop", "fabsf(x) becomes (x)", call_rewrite("fabsf", [](const std::vector<std::string>& a) { return "(" + a[0] + ")"; }, 1, 1));
  r.add("fminf-drop", "clamp dropped: fminf(a, b) becomes (a)", call_rewrite("fminf", [](const std::vector<std::string>& a) { return "(" + a[0] + ")"; }, 2, 2));
  r.add("powf-arg-swap", "fused-op reordering: powf(a, b) becomes powf(b, a)", call_rewrite("powf", [](const std::vector<std::string>& a) {
          return "powf(" + a[1] + ", " + a[0] + ")";
        }, 2, 2));
  r.add("fma-reorder", "fused-op reordering: fmaf(a, b, c) becomes fmaf(a, c, b)", call_rewrite("fmaf", [](const std::vector<std::string>& a) {
          return "fmaf(" + a[0] + ", " + a[2] + ", " + a[1] + ")";
        }, 3, 3));
  r.add("max-init-zero", "running max initialized to 0 instead of -FLT_MAX / -INFINITY", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 1 < m.size(); ++i)
      if (m.is(i, "-") && m.in_device(i) && !m.binary_op(i) &&
          (m.is(i + 1, "FLT_MAX") || m.is(i + 1, "INFINITY") || m.is(i + 1, "CUDART_INF_F") || m.is(i + 1, "HUGE_VALF")))
        out.push_back(replace_tokens(m, i, i + 2, "0.0f"));
  });
  r.add("acc-init-one", "an accumulator initialized to 0 starts at 1", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& d : m.decls()) {
      if (d.param || d.pointer || d.array || !m.in_device(d.name_tok) || !m.is(d.name_tok + 1, "=")) continue;
      int v = d.name_tok + 2;
      if (!is_number(m, v) || literal_value(m, v) != 0.0 || !m.is(v + 1, ";")) continue;
      bool accumulated = false;
      for (int k = v; k <= m.functions()[d.fn].body_close; ++k)
        if (m.is(k, d.name) && m.is(k + 1, "+=")) accumulated = true;
      if (!accumulated) continue;
      out.push_back(replace_token(m, v, is_float_literal(m, v) ? "1.0f" : "1"));
    }
  });
}

}  // namespace dirigo::mutate::rules
