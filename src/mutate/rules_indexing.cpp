// Indexing family: swapped thread/block axes, blockIdx/threadIdx confusion, axis swaps and
// stride confusion in linearized subscripts, transposed 2-D access, off-by-one subscripts,
// lane/warp index confusion, dropped block offsets and grid strides.
#include <fmt/format.h>

#include "mutate/rules_util.h"

namespace dirigo::mutate::rules {
namespace {

// Matches `A . X` at i (e.g. blockIdx.x); returns the axis token or -1.
int builtin_axis(const SourceModel& m, int i, std::string_view obj) {
  return (m.is(i, obj) && m.is(i + 1, ".") && (m.is(i + 2, "x") || m.is(i + 2, "y") || m.is(i + 2, "z"))) ? i + 2 : -1;
}

// Subscripts whose whole content is `P * S + Q` with simple operands: calls f(open, P, S, Q ranges).
struct Linear { int open; TokRange p, s, q; };
std::vector<Linear> linear_subscripts(const SourceModel& m) {
  std::vector<Linear> out;
  for (int i = 0; i < m.size(); ++i) {
    if (!m.is(i, "[") || !m.in_device(i) || m.match(i) < 0 || !(m.ident(i - 1) || m.is(i - 1, "]"))) continue;
    int close = m.match(i);
    int mul = -1, plus = -1;
    for (int k = i + 1; k < close; ++k) {
      if ((m.is(k, "(") || m.is(k, "[")) && m.match(k) > k) { k = m.match(k); continue; }
      if (m.is(k, "*") && mul < 0 && plus < 0) mul = k;
      else if (m.is(k, "+") && mul > 0 && plus < 0) plus = k;
      else if (m.is(k, "+") || m.is(k, "-") || m.is(k, "*") || m.is(k, "/") || m.is(k, "%") || m.is(k, "?")) { mul = -1; break; }
    }
    if (mul < 0 || plus < 0) continue;
    TokRange p{i + 1, mul}, s{mul + 1, plus}, q{plus + 1, close};
    if (!simple_operand(m, p.first, p.second) || !simple_operand(m, s.first, s.second) || !simple_operand(m, q.first, q.second))
      continue;
    out.push_back({i, p, s, q});
  }
  return out;
}

Finder builtin_swap(std::string obj, std::string from_axis, std::string to_obj, std::string to_axis) {
  return [=](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 2 < m.size(); ++i) {
      if (!m.in_device(i) || builtin_axis(m, i, obj) < 0 || !m.is(i + 2, from_axis)) continue;
      out.push_back(replace_tokens(m, i, i + 3, to_obj + "." + to_axis));
    }
  };
}

// Subscripts a[e] of declared pointers/arrays in device code.
template <typename F>
void each_subscript(const SourceModel& m, F&& f) {
  for (int i = 1; i < m.size(); ++i) {
    if (!m.is(i, "[") || !m.in_device(i) || !m.ident(i - 1) || m.match(i) <= i + 1) continue;
    const Decl* d = m.decl_of(m.text(i - 1), m.function_of(i), i);
    if (!d || !(d->pointer || d->array) || d->name_tok == i - 1) continue;
    f(i, m.match(i));
  }
}

}  // namespace

void add_indexing(std::vector<Rule>& out) {
  RuleList r{out, "indexing"};
  r.add("threadIdx-x2y", "threadIdx.x becomes threadIdx.y", builtin_swap("threadIdx", "x", "threadIdx", "y"));
  r.add("threadIdx-y2x", "threadIdx.y becomes threadIdx.x", builtin_swap("threadIdx", "y", "threadIdx", "x"));
  r.add("threadIdx-z2x", "threadIdx.z becomes threadIdx.x", builtin_swap("threadIdx", "z", "threadIdx", "x"));
  r.add("blockIdx-x2y", "blockIdx.x becomes blockIdx.y", builtin_swap("blockIdx", "x", "blockIdx", "y"));
  r.add("blockIdx-y2x", "blockIdx.y becomes blockIdx.x", builtin_swap("blockIdx", "y", "blockIdx", "x"));
  r.add("blockIdx-z2x", "blockIdx.z becomes blockIdx.x", builtin_swap("blockIdx", "z", "blockIdx", "x"));
  r.add("blockDim-x2y", "blockDim.x becomes blockDim.y", builtin_swap("blockDim", "x", "blockDim", "y"));
  r.add("gridDim2blockDim", "gridDim.x becomes blockDim.x (stride confusion)", builtin_swap("gridDim", "x", "blockDim", "x"));
  for (std::string ax : {"x", "y"}) {
    r.add("blockIdx2threadIdx-" + ax, fmt::format("blockIdx.{0} becomes threadIdx.{0}", ax), builtin_swap("blockIdx", ax, "threadIdx", ax));
    r.add("threadIdx2blockIdx-" + ax, fmt::format("threadIdx.{0} becomes blockIdx.{0}", ax), builtin_swap("threadIdx", ax, "blockIdx", ax));
  }
  r.add("drop-block-offset", "blockIdx.x * blockDim.x + threadIdx.x becomes threadIdx.x", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 10 < m.size(); ++i) {
      if (!m.in_device(i)) continue;
      bool a = builtin_axis(m, i, "blockIdx") > 0 && m.is(i + 3, "*") && builtin_axis(m, i + 4, "blockDim") > 0;
      bool b = builtin_axis(m, i, "blockDim") > 0 && m.is(i + 3, "*") && builtin_axis(m, i + 4, "blockIdx") > 0;
      if (!(a || b) || !m.is(i + 7, "+") || builtin_axis(m, i + 8, "threadIdx") < 0) continue;
      if (m.text(i + 2) != m.text(i + 6) || m.text(i + 2) != m.text(i + 10)) continue;
      if (m.is(i - 1, "*") || m.is(i - 1, "/") || m.is(i - 1, "%")) continue;
      out.push_back(make_site(m, i, {Edit{m.tok(i).offset, m.tok(i + 8).offset, ""}}));
    }
  });
  r.add("grid-stride2block-stride", "blockDim.x * gridDim.x becomes blockDim.x", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 6 < m.size(); ++i) {
      if (!m.in_device(i)) continue;
      if (builtin_axis(m, i, "blockDim") > 0 && m.is(i + 3, "*") && builtin_axis(m, i + 4, "gridDim") > 0)
        out.push_back(make_site(m, i + 3, {Edit{m.end_offset(i + 2), m.end_offset(i + 6), ""}}));
      else if (builtin_axis(m, i, "gridDim") > 0 && m.is(i + 3, "*") && builtin_axis(m, i + 4, "blockDim") > 0)
        out.push_back(make_site(m, i, {Edit{m.tok(i).offset, m.tok(i + 4).offset, ""}}));
    }
  });
  r.add("index-axis-swap", "a[p * S + q] becomes a[q * S + p]", [](const SourceModel& m, std::vector<Site>& out) {
    for (const auto& l : linear_subscripts(m)) {
      std::string p = str(m, l.p.first, l.p.second), q = str(m, l.q.first, l.q.second);
      out.push_back(make_site(m, l.p.first, {replace_edit(m, l.p.first, l.p.second, q), replace_edit(m, l.q.first, l.q.second, p)}));
    }
  });
  r.add("stride-confusion", "a[p * S + q] uses another stride T of the same kernel: a[p * T + q]", [](const SourceModel& m, std::vector<Site>& out) {
    auto ls = linear_subscripts(m);
    for (const auto& l : ls) {
      std::string s = str(m, l.s.first, l.s.second);
      for (const auto& o : ls) {
        std::string t = str(m, o.s.first, o.s.second);
        if (m.function_of(o.open) != m.function_of(l.open) || t == s) continue;
        out.push_back(replace_tokens(m, l.s.first, l.s.second, t));
        break;
      }
    }
  });
  r.add("transposed-access", "a[i][j] becomes a[j][i]", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 1; i < m.size(); ++i) {
      if (!m.is(i, "[") || !m.in_device(i) || !m.ident(i - 1) || m.is(i - 2, "]")) continue;
      int c1 = m.match(i);
      if (c1 < 0 || !m.is(c1 + 1, "[") || m.match(c1 + 1) < 0 || m.is(m.match(c1 + 1) + 1, "[")) continue;
      const Decl* d = m.decl_of(m.text(i - 1), m.function_of(i), i);
      if (d && d->name_tok == i - 1) continue;  // the declaration itself
      int o2 = c1 + 1, c2 = m.match(o2);
      std::string a = str(m, i + 1, c1), b = str(m, o2 + 1, c2);
      if (a == b) continue;
      out.push_back(make_site(m, i + 1, {replace_edit(m, i + 1, c1, b), replace_edit(m, o2 + 1, c2, a)}));
    }
  });
  r.add("index-plus1", "subscript a[e] becomes a[e + 1]", [](const SourceModel& m, std::vector<Site>& out) {
    each_subscript(m, [&](int open, int close) { out.push_back(replace_tokens(m, open + 1, close, with_delta(m, open + 1, close, "+ 1"))); });
  });
  r.add("index-minus1", "subscript a[e] becomes a[(e) - 1]", [](const SourceModel& m, std::vector<Site>& out) {
    each_subscript(m, [&](int open, int close) { out.push_back(replace_tokens(m, open + 1, close, paren(m, open + 1, close) + " - 1")); });
  });
  r.add("lane2warp", "lane index x % 32 becomes x / 32", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 1 < m.size(); ++i)
      if (m.is(i, "%") && device_binary(m, i) && (m.is(i + 1, "32") || m.is(i + 1, "warpSize"))) out.push_back(replace_token(m, i, "/"));
  });
  r.add("warp2lane", "warp index x / 32 becomes x % 32", [](const SourceModel& m, std::vector<Site>& out) {
    for (int i = 0; i + 1 < m.size(); ++i)
      if (m.is(i, "/") && device_binary(m, i) && (m.is(i + 1, "32") || m.is(i + 1, "warpSize"))) out.push_back(replace_token(m, i, "%"));
  });
}

}  // namespace dirigo::mutate::rules
