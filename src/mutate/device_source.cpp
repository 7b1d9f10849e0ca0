#include "mutate/device_source.h"

#include <algorithm>
#include <set>

namespace dirigo::mutate {
namespace {

constexpr const char* kPrelude =
    "#ifndef FLT_MAX\n#define FLT_MAX 3.402823466e+38F\n#endif\n"
    "#ifndef FLT_MIN\n#define FLT_MIN 1.175494351e-38F\n#endif\n"
    "#ifndef FLT_EPSILON\n#define FLT_EPSILON 1.192092896e-07F\n#endif\n"
    "#ifndef INFINITY\n#define INFINITY (__int_as_float(0x7f800000))\n#endif\n"
    "#ifndef NAN\n#define NAN (__int_as_float(0x7fffffff))\n#endif\n"
    "#ifndef M_PI\n#define M_PI 3.14159265358979323846\n#endif\n"
    "#ifndef M_SQRT1_2\n#define M_SQRT1_2 0.70710678118654752440\n#endif\n"
    "#ifndef M_2_SQRTPI\n#define M_2_SQRTPI 1.12837916709551257390\n#endif\n"
    "#ifdef __CUDACC_RTC__\n"  // NVRTC has no <stdint.h>; nvcc does
    "typedef long long int64_t; typedef unsigned long long uint64_t;\n"
    "typedef int int32_t; typedef unsigned int uint32_t;\n"
    "#endif\n";

// Headers NVRTC can find with -I<cuda>/include and that compile as device code.
bool device_header(std::string_view name) {
  static const std::set<std::string, std::less<>> ok = {
      "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "mma.h", "cooperative_groups.h", "cuda_pipeline.h",
      "cuda/barrier", "cooperative_groups/reduce.h", "cooperative_groups/memcpy_async.h", "math_constants.h",
      "cuda_awbarrier.h", "crt/math_functions.h"};
  return ok.count(name) > 0;
}

void blank(std::string& s, size_t b, size_t e) {
  for (size_t i = b; i < e && i < s.size(); ++i)
    if (s[i] != '\n') s[i] = ' ';
}

bool host_only_word(std::string_view w) {
  return w == "torch" || w == "at" || w == "c10" || w == "std" || w == "pybind11" || w == "py" || w == "Tensor" ||
         w == "PYBIND11_MODULE" || w == "TORCH_LIBRARY" || w == "TORCH_CHECK" || w == "AT_DISPATCH_FLOATING_TYPES";
}

}  // namespace

DeviceSource device_source(const SourceModel& m) {
  DeviceSource out;
  std::string text = m.source();
  std::vector<bool> device_tok(m.size(), false), removed(m.size(), false);
  for (const auto& f : m.functions()) {
    if (f.body_close < 0) continue;
    int first = std::max(f.first_tok, 0);
    for (int i = first; i <= f.body_close; ++i) {
      if (f.device_code()) device_tok[i] = true;
      else removed[i] = true;
    }
  }
  // top-level statements (outside every function) that mention host-only names
  int start = 0;
  int depth = 0;  // brace depth outside functions (namespaces, structs)
  for (int i = 0; i < m.size(); ++i) {
    if (device_tok[i] || removed[i]) { start = i + 1; continue; }
    if (m.is(i, "{")) ++depth;
    if (m.is(i, "}")) { --depth; start = i + 1; continue; }
    if (m.is(i, ";")) {
      bool host = false;
      for (int k = start; k <= i; ++k) host = host || (m.ident(k) && host_only_word(m.text(k)));
      if (host)
        for (int k = start; k <= i; ++k) removed[k] = true;
      start = i + 1;
    }
  }
  for (int i = 0; i < m.size(); ++i)
    if (removed[i]) blank(text, m.tok(i).offset, m.end_offset(i));
  // preprocessor lines: keep macros, keep only includes NVRTC can resolve
  for (const auto& t : m.all_tokens()) {
    if (t.kind != TokKind::Preproc) continue;
    std::string_view line = std::string_view(m.source()).substr(t.offset, t.length);
    size_t p = line.find_first_not_of(" \t#");
    if (p == std::string_view::npos || line.substr(p, 7) != "include") continue;
    size_t a = line.find_first_of("<\"", p), b = line.find_last_of(">\"");
    std::string_view name = (a != std::string_view::npos && b > a) ? line.substr(a + 1, b - a - 1) : std::string_view();
    if (!device_header(name)) blank(text, t.offset, t.offset + t.length);
  }
  out.text = std::string(kPrelude) + "#line 1\n" + text;
  // name expressions for templated kernels, from their launches in host code
  std::set<std::string> exprs;
  for (const auto& l : m.launches()) {
    if (l.name_tok < 0 || !m.is(l.name_tok + 1, "<")) continue;
    std::string name(m.text(l.name_tok));
    bool is_template_kernel = false;
    for (const auto& f : m.functions()) is_template_kernel |= (f.is_global && f.is_template && f.name == name);
    if (!is_template_kernel) continue;
    std::string args;
    for (int k = l.name_tok + 1; k < l.open; ++k) {
      std::string w(m.text(k));
      if (w == "scalar_t" || w == "T" || w == "accscalar_t") w = "float";
      args += w;
    }
    exprs.insert("&" + name + args);
  }
  for (const auto& f : m.functions()) {
    if (!f.is_global || !f.is_template) continue;
    bool launched = false;
    for (const auto& e : exprs) launched |= e.rfind("&" + f.name + "<", 0) == 0;
    if (launched) continue;
    // not launched with explicit arguments: instantiate typename parameters with float
    std::vector<std::string> params;
    bool all_types = true;
    for (int k = f.first_tok; k < f.name_tok; ++k) {
      if (!m.is(k, "template")) continue;
      for (int j = k + 2; j < f.name_tok && !m.is(j, ">"); ++j) {
        if (m.is(j, "typename") || m.is(j, "class")) params.push_back("float");
        else if (m.is(j, ",") || m.ident(j)) continue;
        else all_types = false;
      }
      for (int j = k + 2; j < f.name_tok && !m.is(j, ">"); ++j)
        if (m.ident(j) && !m.is(j, "typename") && !m.is(j, "class") && (m.is(j + 1, ",") || m.is(j + 1, ">")) &&
            !(m.is(j - 1, "typename") || m.is(j - 1, "class")))
          all_types = false;
      break;
    }
    if (!all_types || params.empty()) continue;
    std::string e = "&" + f.name + "<";
    for (size_t i = 0; i < params.size(); ++i) e += (i ? "," : "") + params[i];
    exprs.insert(e + ">");
  }
  out.name_expressions.assign(exprs.begin(), exprs.end());
  for (int i = 0; i < m.size(); ++i)
    if (!device_tok[i]) {
      out.host_text += m.text(i);
      out.host_text += ' ';
    }
  return out;
}

}  // namespace dirigo::mutate
