// Precision family: fp16/bf16 accumulators, stores and loads, removed softmax stabilizer,
// fast-math intrinsics, double -> float, unfused or expanded special functions, dropped
// epsilons, rounding-mode changes, truncated constants, half-precision shuffles and shared memory.
#include <cmath>

#include <fmt/format.h>

#include "mutate/rules_util.h"

namespace dirigo::mutate::rules {
namespace {

// Scalar local `float` variables that are accumulated into with +=.
std::vector<const Decl*> float_accumulators(const SourceModel& m) {
  std::vector<const Decl*> out;
  for (const auto& d : m.decls()) {
    if (d.type != "float" || d.param || d.pointer || d.array || d.shared || !m.in_device(d.name_tok)) continue;
    for (int k = d.name_tok + 1; k <= m.functions()[d.fn].body_close; ++k)
      if (m.is(k, d.name) && m.is(k + 1, "+=") && !m.is(k - 1, ".")) { out.push_back(&d); break; }
  }
  return out;
}

Finder acc_type(std::string type, bool fp16, bool bf16) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (const Decl* d : float_accumulators(m)) {
      Site s = replace_token(m, d->type_tok, type);
      s.needs_fp16 = fp16;
      s.needs_bf16 = bf16;
      out.push_back(std::move(s));
    }
  };
}

// Is `name` (at token i) a pointer declared with base type float?
const Decl* float_pointer(const SourceModel& m, int i) {
  const Decl* d = m.decl_of(m.text(i), m.function_of(i), i);
  return (d && d->type == "float" && (d->pointer || d->array) && d->name_tok != i) ? d : nullptr;
}

// Stores `a[...] = e;` into float memory: e rewritten as wrap(e).
Finder store_round(std::string to, std::string back, bool fp16, bool bf16) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 1; i < m.size(); ++i) {
      if (!m.is(i, "[") || !m.in_device(i) || !m.ident(i - 1) || !float_pointer(m, i - 1) || !is_store_target(m, i)) continue;
      if (float_pointer(m, i - 1)->shared) continue;  // shared scratch is not an output
      int eq = m.match(i) + 1, end = m.next_semicolon(eq + 1);
      if (end < 0) continue;
      Site s = replace_tokens(m, eq + 1, end, back + "(" + to + "(" + std::string(m.range_text(eq + 1, end)) + "))");
      s.needs_fp16 = fp16;
      s.needs_bf16 = bf16;
      out.push_back(std::move(s));
    }
  };
}

// Loads from `const float*` parameters rounded through a narrower type.
Finder load_round(std::string to, std::string back, bool fp16, bool bf16) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 1; i < m.size(); ++i) {
      if (!m.is(i, "[") || !m.in_device(i) || !m.ident(i - 1) || m.match(i) < 0) continue;
      const Decl* d = float_pointer(m, i - 1);
      if (!d || !d->param || !d->is_const || is_assign_op(m.text(m.match(i) + 1))) continue;
      if (m.is(i - 2, ".") || m.is(i - 2, "&")) continue;
      Site s = replace_tokens(m, i - 1, m.match(i) + 1, back + "(" + to + "(" + str(m, i - 1, m.match(i) + 1) + "))");
      s.needs_fp16 = fp16;
      s.needs_bf16 = bf16;
      out.push_back(std::move(s));
    }
  };
}

std::string float_text(double v, bool f_suffix) {
  std::string s = fmt::format("{:.3g}", v);
  if (s.find('.') == std::string::npos && s.find('e') == std::string::npos) s += ".0";
  return f_suffix ? s + "f" : s;
}

size_t significant_digits(std::string_view s) {
  size_t n = 0;
  bool started = false;
  for (char c : s) {
    if (c == 'e' || c == 'E') break;
    if (!std::isdigit(static_cast<unsigned char>(c))) continue;
    if (c != '0') started = true;
    if (started) ++n;
  }
  return n;
}

}  // namespace

void add_precision(std::vector<Rule>& out) {
  RuleList r{out, "precision"};
  r.add("acc-float2half", "a float accumulator (+=) becomes __half", acc_type("__half", true, false));
  r.add("acc-float2bf16", "a float accumulator (+=) becomes __nv_bfloat16", acc_type("__nv_bfloat16", false, true));
  r.add("store-fp16", "a float store out[i] = e rounds e through fp16", store_round("__float2half", "__half2float", true, false));
  r.add("store-bf16", "a float store out[i] = e rounds e through bf16", store_round("__float2bfloat16", "__bfloat162float", false, true));
  r.add("load-fp16", "a load from a const float* input rounds through fp16", load_round("__float2half", "__half2float", true, false));
  r.add("load-bf16", "a load from a const float* input rounds through bf16", load_round("__float2bfloat16", "__bfloat162float", false, true));
  r.add("no-max-subtraction", "softmax stabilizer removed: expf(x - m) becomes expf(x)", [](const SourceModel& m, std::vector<Site>& out) {
    for (std::string fn : {"expf", "__expf", "exp"})
      for (const auto& c : m.calls(fn)) {
        if (!m.in_device(c.name_tok) || c.args.size() != 1) continue;
        auto [b, e] = c.args[0];
        int minus = -1;
        for (int k = b; k < e; ++k) {
          if ((m.is(k, "(") || m.is(k, "[")) && m.match(k) > k) { k = m.match(k); continue; }
          if (m.is(k, "-") && m.binary_op(k)) { minus = k; break; }
        }
        if (minus < 0) continue;
        out.push_back(make_site(m, minus, {Edit{m.end_offset(minus - 1), m.end_offset(e - 1), ""}}));
      }
  });
  r.add("expf2fast", "fast math: expf becomes __expf", call_rename("expf", "__expf"));
  r.add("logf2fast", "fast math: logf becomes __logf", call_rename("logf", "__logf"));
  r.add("sinf2fast", "fast math: sinf becomes __sinf", call_rename("sinf", "__sinf"));
  r.add("cosf2fast", "fast math: cosf becomes __cosf", call_rename("cosf", "__cosf"));
  r.add("powf2fast", "fast math: powf becomes __powf", call_rename("powf", "__powf"));
  r.add("tanhf2fast", "fast math: tanhf(x) becomes 2 / (1 + __expf(-2x)) - 1", call_rewrite("tanhf", [](const std::vector<std::string>& a) {
          return "(2.0f / (1.0f + __expf(-2.0f * (" + a[0] + "))) - 1.0f)";
        }, 1, 1));
  r.add("div2fdividef", "fast math: float a / b becomes __fdividef(a, b)", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i) {
      if (!m.is(i, "/") || !device_binary(m, i)) continue;
      int lb = m.operand_begin(i), re = m.operand_end(i);
      if (lb < 0 || re < 0) continue;
      auto tight = [](std::string_view s) { return s == "*" || s == "/" || s == "%" || s == "." || s == "->"; };
      if (tight(m.text(lb - 1))) continue;
      bool is_float = false;
      for (int k = lb; k < re; ++k) {
        if (is_float_literal(m, k)) is_float = true;
        if (m.ident(k)) {
          const Decl* d = m.decl_of(m.text(k), m.function_of(k), k);
          if (d && d->type == "float" && d->name_tok != k) is_float = true;
        }
      }
      if (!is_float) continue;
      out.push_back(replace_tokens(m, lb, re, "__fdividef(" + str(m, lb, i) + ", " + str(m, i + 1, re) + ")"));
    }
  });
  r.add("rsqrt-fast", "1.0f / sqrtf(x) becomes rsqrtf(x)", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& c : m.calls("sqrtf"))
      if (m.in_device(c.name_tok) && m.is(c.name_tok - 1, "/") && is_number(m, c.name_tok - 2) && literal_value(m, c.name_tok - 2) == 1.0 &&
          c.args.size() == 1 && !m.is(c.name_tok - 3, "/") && !m.is(c.name_tok - 3, "*"))
        out.push_back(replace_tokens(m, c.name_tok - 2, c.rparen + 1, "rsqrtf(" + str(m, c.args[0].first, c.args[0].second) + ")"));
  });
  r.add("double2float", "a double variable becomes float", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& d : m.decls())
      if (d.type == "double" && m.in_device(d.name_tok) && !d.param) out.push_back(replace_token(m, d.type_tok, "float"));
  });
  r.add("double-literal2float", "a double literal c becomes the float literal cf", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i) {
      if (!is_float_literal(m, i) || !m.in_device(i)) continue;
      auto s = m.text(i);
      if (s.back() == 'f' || s.back() == 'F' || s.back() == 'l' || s.back() == 'L') continue;
      out.push_back(replace_token(m, i, std::string(s) + "f"));
    }
  });
  r.add("log1p-expand", "log1pf(x) becomes logf(1.0f + x) (cancellation)", call_rewrite("log1pf", [](const std::vector<std::string>& a) {
          return "logf(1.0f + (" + a[0] + "))";
        }, 1, 1));
  r.add("expm1-expand", "expm1f(x) becomes expf(x) - 1.0f (cancellation)", call_rewrite("expm1f", [](const std::vector<std::string>& a) {
          return "(expf(" + a[0] + ") - 1.0f)";
        }, 1, 1));
  r.add("fma-unfuse", "fmaf(a, b, c) becomes a separately rounded multiply and add", call_rewrite("fmaf", [](const std::vector<std::string>& a) {
          return "__fadd_rn(__fmul_rn(" + a[0] + ", " + a[1] + "), " + a[2] + ")";
        }, 3, 3));
  r.add("eps-drop", "an epsilon constant (0 < c < 1e-3) becomes 0", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i) {
      if (!is_float_literal(m, i) || !m.in_device(i)) continue;
      double v = literal_value(m, i);
      if (v > 0 && v < 1e-3) out.push_back(replace_token(m, i, m.text(i).back() == 'f' || m.text(i).back() == 'F' ? "0.0f" : "0.0"));
    }
  });
  r.add("round-rn2rz", "rounding mode: an *_rn intrinsic becomes *_rz", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 1 < m.size(); ++i) {
      auto s = m.text(i);
      if (m.ident(i) && m.in_device(i) && m.is(i + 1, "(") && s.starts_with("__") && s.ends_with("_rn"))
        out.push_back(replace_token(m, i, std::string(s.substr(0, s.size() - 3)) + "_rz"));
    }
  });
  r.add("const-trunc", "a float constant with 5+ significant digits keeps only 3", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i < m.size(); ++i) {
      if (!is_float_literal(m, i) || !m.in_device(i) || significant_digits(m.text(i)) < 5) continue;
      auto s = m.text(i);
      out.push_back(replace_token(m, i, float_text(literal_value(m, i), s.back() == 'f' || s.back() == 'F')));
    }
  });
  r.add("shfl-value-half", "a shuffled value travels as __half", [](const SourceModel& m, std::vector<Site>& out) {
    for (std::string fn : {"__shfl_down_sync", "__shfl_xor_sync", "__shfl_up_sync", "__shfl_sync"})
      for (const auto& c : m.calls(fn)) {
        if (!m.in_device(c.name_tok) || c.args.size() < 3) continue;
        std::string args;
        for (size_t k = 0; k < c.args.size(); ++k) {
          std::string a = str(m, c.args[k].first, c.args[k].second);
          args += (k ? ", " : "") + (k == 1 ? "__float2half(" + a + ")" : a);
        }
        Site s = replace_tokens(m, c.name_tok, c.rparen + 1, "__half2float(" + fn + "(" + args + "))");
        s.needs_fp16 = true;
        out.push_back(std::move(s));
      }
  });
  r.add("shared-float2half", "a __shared__ float buffer becomes __half", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& d : m.decls())
      if (d.shared && d.type == "float" && m.in_device(d.type_tok)) {
        Site s = replace_token(m, d.type_tok, "__half");
        s.needs_fp16 = true;
        out.push_back(std::move(s));
      }
  });
  r.add("exp-half", "expf(x) is evaluated in half precision", call_rewrite("expf", [](const std::vector<std::string>& a) {
          return "__half2float(hexp(__float2half(" + a[0] + ")))";
        }, 1, 1, true));
  r.add("rsqrt-expand", "rsqrtf(x) becomes 1.0f / sqrtf(x)", call_rewrite("rsqrtf", [](const std::vector<std::string>& a) {
          return "(1.0f / sqrtf(" + a[0] + "))";
        }, 1, 1));
  r.add("acc-float2int", "a float accumulator (+=) becomes int (truncation)", acc_type("int", false, false));
}

}  // namespace dirigo::mutate::rules
