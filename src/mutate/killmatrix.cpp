#include "mutate/killmatrix.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ptx/inline.h"
#include "ptx/parser.h"

namespace dirigo::mutate {
namespace {

exec::DType dtype_of(const std::string& s) {
  if (s == "f32") return exec::DType::F32;
  if (s == "f64") return exec::DType::F64;
  if (s == "i32") return exec::DType::I32;
  if (s == "i64") return exec::DType::I64;
  throw std::runtime_error("kill-matrix spec: unknown tensor dtype '" + s + "'");
}

exec::Dim3 dim3_of(const nlohmann::json& j, bool allow_zero = false) {
  if (!j.is_array() || j.size() != 3) throw std::runtime_error("kill-matrix spec: grid/block must be [x, y, z]");
  exec::Dim3 d{j[0].get<uint32_t>(), j[1].get<uint32_t>(), j[2].get<uint32_t>()};
  if (d.count() == 0 && !allow_zero) throw std::runtime_error("kill-matrix spec: launch dimension 0");
  return d;
}

KmLaunch launch_of(const nlohmann::json& l, size_t n_tensors, bool allow_zero = false) {
  KmLaunch L;
  L.kernel = l.at("kernel").get<std::string>();
  L.grid = dim3_of(l.at("grid"), allow_zero);
  L.block = dim3_of(l.at("block"), allow_zero);
  L.shared_bytes = l.at("shared_bytes").get<uint64_t>();
  for (const auto& a : l.at("args")) {
    KmArg A;
    if (a.contains("tensor")) {
      A.tensor = a["tensor"].get<int>();
      if (A.tensor < 0 || size_t(A.tensor) >= n_tensors)
        throw std::runtime_error(fmt::format("tensor argument {} out of range", A.tensor));
    } else {
      A.type = a.at("type").get<std::string>();
      A.value = a.at("scalar").get<double>();
    }
    L.args.push_back(std::move(A));
  }
  return L;
}

std::vector<double> read_doubles(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("kill-matrix input: cannot read " + path);
  std::vector<double> v(n);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(double)));
  if (static_cast<size_t>(in.gcount()) != n * sizeof(double))
    throw std::runtime_error(fmt::format("kill-matrix input: {} holds fewer than {} values", path, n));
  return v;
}

// Concrete-interpreter outcomes that are not crashes.
bool is_timeout(const std::string& why) {
  return why.find("step limit") != std::string::npos || why.find("time limit") != std::string::npos;
}
bool is_nonfinite(const std::string& why) {
  return why.find("non-finite value") != std::string::npos || why.find("NaN") != std::string::npos;
}
// Findings whose run still produced an output of one legal schedule (races): the run stays ok
// with the finding named in `detail`; memory-safety findings are crashes.
bool is_schedule_finding(const std::string& kind) {
  return kind == "shared-race" || kind == "barrier-divergence" || kind == "shuffle-inactive-lane";
}

}  // namespace

KmSpec read_spec(const std::string& dir) {
  std::ifstream in(dir + "/spec.json");
  if (!in) throw std::runtime_error("kill-matrix spec: cannot read " + dir + "/spec.json");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error("kill-matrix spec " + dir + "/spec.json: " + e.what());
  }
  KmSpec s;
  s.dir = dir;
  try {
    s.substrate = j.at("substrate").get<std::string>();
    s.problem = j.at("problem").get<std::string>();
    for (const auto& t : j.at("tensors")) s.tensors.push_back({t.at("numel").get<int64_t>(), dtype_of(t.at("dtype"))});
    for (const auto& l : j.at("launches")) s.launches.push_back(launch_of(l, s.tensors.size()));
    s.output = j.at("output").get<int>();
    s.output_numel = j.at("output_numel").get<int64_t>();
    if (s.output < 0 || size_t(s.output) >= s.tensors.size() || s.tensors[s.output].numel != s.output_numel)
      throw std::runtime_error("output tensor does not match output_numel");
    for (const auto& i : j.at("inputs"))
      s.inputs.push_back({i.at("index").get<int>(), i.at("name").get<std::string>(),
                          i.at("distribution").get<std::string>(), i.at("family").get<std::string>(),
                          i.at("seed").get<int64_t>()});
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("kill-matrix spec " + dir + "/spec.json: " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("kill-matrix spec " + dir + "/spec.json: " + e.what());
  }
  return s;
}

std::vector<KmLaunch> read_launches(const std::string& path, const KmSpec& spec) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("launch plan: cannot read " + path);
  try {
    auto j = nlohmann::json::parse(in);
    std::vector<KmLaunch> out;
    for (const auto& l : j.at("launches")) out.push_back(launch_of(l, spec.tensors.size(), true));
    if (out.size() != spec.launches.size())
      throw std::runtime_error(fmt::format("{} launches, the substrate's plan has {}", out.size(), spec.launches.size()));
    return out;
  } catch (const std::exception& e) {
    throw std::runtime_error("launch plan " + path + ": " + e.what());
  }
}

KmData read_input(const KmSpec& spec, int k) {
  KmData d;
  size_t total = 0;
  for (const auto& t : spec.tensors) total += size_t(t.numel);
  auto all = read_doubles(fmt::format("{}/{}.in", spec.dir, k), total);
  size_t at = 0;
  for (const auto& t : spec.tensors) {
    d.tensors.emplace_back(all.begin() + long(at), all.begin() + long(at + size_t(t.numel)));
    at += size_t(t.numel);
  }
  d.ref64 = read_doubles(fmt::format("{}/{}.ref64", spec.dir, k), size_t(spec.output_numel));
  d.ref32 = read_doubles(fmt::format("{}/{}.ref32", spec.dir, k), size_t(spec.output_numel));
  return d;
}

RunMetrics compare_output(const std::vector<double>& out, const std::vector<double>& ref64,
                          const std::vector<double>& ref32) {
  RunMetrics m;
  m.status = "ok";
  if (out.size() != ref64.size() || ref32.size() != ref64.size())
    throw std::invalid_argument("compare_output: output and references differ in size");
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(ref64[i])) continue;
    if (!std::isfinite(out[i])) {
      ++m.nonfinite_mismatch;
      continue;
    }
    double err = std::fabs(out[i] - ref64[i]);
    m.max_abs = std::max(m.max_abs, err);
    m.t_eq = std::max(m.t_eq, err / (1 + std::fabs(ref64[i])));
    if (std::isfinite(ref32[i])) m.t_eq32 = std::max(m.t_eq32, std::fabs(out[i] - ref32[i]) / (1 + std::fabs(ref32[i])));
  }
  if (m.nonfinite_mismatch) m.t_eq = m.t_eq32 = INFINITY;
  return m;
}

std::string find_entry(const std::vector<std::string>& entries, const std::string& kernel) {
  // `_Z<len><name>` names exactly that function (the length prefix leaves no ambiguity); what
  // follows is its parameter list or template arguments.
  std::string prefix = "_Z" + std::to_string(kernel.size()) + kernel;
  std::string found;
  for (const auto& e : entries) {
    if (e == kernel) return e;
    if (e.size() > prefix.size() && e.rfind(prefix, 0) == 0) {
      if (!found.empty()) return "";  // overloads: ambiguous
      found = e;
    }
  }
  return found;
}

ptx::Module parse_for_run(const std::string& ptx_text) {
  ptx::Module m = ptx::parse(ptx_text);
  ptx::inline_calls(m);
  return m;
}

RunMetrics run_cpu(const std::string& ptx_text, const KmSpec& spec, const KmData& data, const exec::ExecOptions& opt) {
  try {
    return run_cpu(parse_for_run(ptx_text), spec, data, opt);
  } catch (const std::exception& e) {
    RunMetrics m;
    m.status = "crash";
    m.detail = std::string("PTX: ") + e.what();
    return m;
  }
}

RunMetrics run_cpu(const ptx::Module& module, const KmSpec& spec, const KmData& data, const exec::ExecOptions& opt) {
  auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count(); };
  RunMetrics fail;
  std::vector<std::string> entries;
  for (const auto* f : module.kernels()) entries.push_back(f->name);
  ir::Context ctx;
  std::vector<int32_t> ids;
  exec::ConcreteMemory mem;
  for (size_t t = 0; t < spec.tensors.size(); ++t) {
    ids.push_back(ctx.tensor("t" + std::to_string(t)));
    mem.tensors[ids.back()] = data.tensors.at(t);
  }
  std::vector<std::string> schedule_findings;
  for (const auto& L : spec.launches) {
    if (L.grid.count() == 0 || L.block.count() == 0) {  // a host mutant's plan (grid floor 0, ...)
      fail.detail = "launch of " + L.kernel + " with a zero dimension (CUDA rejects it: invalid configuration)";
      fail.ms = elapsed();
      return fail;
    }
    std::string entry = find_entry(entries, L.kernel);
    if (entry.empty()) {
      fail.detail = "no PTX entry for kernel " + L.kernel;
      fail.ms = elapsed();
      return fail;
    }
    exec::Launch launch;
    launch.grid = L.grid;
    launch.block = L.block;
    launch.dynamic_shared_bytes = L.shared_bytes;
    for (const auto& a : L.args) {
      if (a.tensor >= 0) {
        launch.params.push_back(exec::ParamBinding::tensor_arg(ids[a.tensor], spec.tensors[a.tensor].dtype,
                                                               uint64_t(spec.tensors[a.tensor].numel)));
      } else if (a.type[0] == 'f') {
        launch.params.push_back(exec::ParamBinding::float_arg(a.value));
      } else {
        launch.params.push_back(exec::ParamBinding::int_arg(int64_t(a.value)));
      }
    }
    exec::ExecOptions o = opt;
    if (opt.max_ms > 0) o.max_ms = std::max(1.0, opt.max_ms - elapsed());
    auto r = exec::run_concrete(ctx, module, entry, launch, mem, o);
    if (r.unsupported) {
      const std::string& why = *r.unsupported;
      fail.status = is_timeout(why) ? "timeout" : is_nonfinite(why) ? "nonfinite" : "crash";
      fail.detail = why;
      fail.ms = elapsed();
      return fail;
    }
    for (const auto& f : r.findings) {
      if (is_schedule_finding(f.kind)) {
        schedule_findings.push_back(f.kind);
        continue;
      }
      fail.detail = fmt::format("{} at PTX line {}: {}", f.kind, f.where.ptx_line, f.message);
      fail.ms = elapsed();
      return fail;
    }
    // tensors the kernel did not touch keep their contents
    for (auto& [id, v] : r.memory.tensors) mem.tensors[id] = std::move(v);
  }
  RunMetrics m = compare_output(mem.tensors.at(ids[spec.output]), data.ref64, data.ref32);
  if (!schedule_findings.empty()) {
    std::sort(schedule_findings.begin(), schedule_findings.end());
    schedule_findings.erase(std::unique(schedule_findings.begin(), schedule_findings.end()), schedule_findings.end());
    m.detail = "finding (output of one schedule):";
    for (const auto& k : schedule_findings) m.detail += " " + k;
  }
  m.ms = elapsed();
  return m;
}

}  // namespace dirigo::mutate

namespace dirigo::mutate {

struct LaunchJobCache {
  std::map<std::string, std::pair<std::filesystem::file_time_type, std::shared_ptr<ptx::Module>>> modules;
};
LaunchJobCache* new_launch_job_cache() { return new LaunchJobCache; }
void free_launch_job_cache(LaunchJobCache* c) { delete c; }

namespace {

exec::DType buffer_dtype(const std::string& s) {
  static const std::map<std::string, exec::DType> m = {
      {"f32", exec::DType::F32},  {"float32", exec::DType::F32}, {"f64", exec::DType::F64},
      {"float64", exec::DType::F64}, {"f16", exec::DType::F16}, {"float16", exec::DType::F16},
      {"bf16", exec::DType::BF16}, {"bfloat16", exec::DType::BF16}, {"i8", exec::DType::I8},
      {"int8", exec::DType::I8},  {"i16", exec::DType::I16},     {"int16", exec::DType::I16},
      {"i32", exec::DType::I32},  {"int32", exec::DType::I32},   {"i64", exec::DType::I64},
      {"int64", exec::DType::I64}, {"u8", exec::DType::U8},      {"uint8", exec::DType::U8},
      {"bool", exec::DType::Bool}};
  auto it = m.find(s);
  if (it == m.end()) throw std::runtime_error("unknown buffer dtype '" + s + "'");
  return it->second;
}

std::shared_ptr<ptx::Module> module_for(const std::string& path, LaunchJobCache* cache) {
  auto stamp = std::filesystem::last_write_time(path);
  if (cache) {
    auto it = cache->modules.find(path);
    if (it != cache->modules.end() && it->second.first == stamp) return it->second.second;
  }
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read PTX " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto m = std::make_shared<ptx::Module>(parse_for_run(ss.str()));
  if (cache) cache->modules[path] = {stamp, m};
  return m;
}

}  // namespace

std::string run_launch_job(const std::string& job_json, LaunchJobCache* cache) {
  auto started = std::chrono::steady_clock::now();
  nlohmann::json res = {{"status", "crash"}, {"detail", ""}, {"findings", nlohmann::json::array()}};
  auto finish = [&] {
    res["ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return res.dump();
  };
  try {
    auto j = nlohmann::json::parse(job_json);
    auto module = module_for(j.at("ptx").get<std::string>(), cache);
    std::vector<std::string> entries;
    for (const auto* f : module->kernels()) entries.push_back(f->name);
    std::string kernel = j.at("kernel").get<std::string>();
    std::string entry = std::find(entries.begin(), entries.end(), kernel) != entries.end() ? kernel
                                                                                          : find_entry(entries, kernel);
    if (entry.empty()) {
      res["detail"] = "no PTX entry for kernel " + kernel;
      return finish();
    }
    exec::Launch launch;
    launch.grid = dim3_of(j.at("grid"), true);
    launch.block = dim3_of(j.at("block"), true);
    if (launch.grid.count() == 0 || launch.block.count() == 0) {
      res["detail"] = "launch of " + kernel + " with a zero dimension (CUDA rejects it: invalid configuration)";
      return finish();
    }
    launch.dynamic_shared_bytes = j.value("shared_bytes", uint64_t(0));
    ir::Context ctx;
    exec::ConcreteMemory mem;
    struct Buf {
      std::string path;
      int32_t id;
      exec::DType dtype;
      size_t numel;
    };
    std::vector<Buf> bufs;
    for (const auto& b : j.at("buffers")) {
      Buf B{b.at("path").get<std::string>(), ctx.tensor("b" + std::to_string(bufs.size())),
            buffer_dtype(b.at("dtype").get<std::string>()), b.at("numel").get<size_t>()};
      mem.tensors[B.id] = read_doubles(B.path, B.numel);
      bufs.push_back(B);
    }
    for (const auto& a : j.at("args")) {
      if (a.contains("buffer")) {
        size_t k = a["buffer"].get<size_t>();
        if (k >= bufs.size()) throw std::runtime_error(fmt::format("buffer argument {} out of range", k));
        launch.params.push_back(
            exec::ParamBinding::tensor_arg(bufs[k].id, bufs[k].dtype, bufs[k].numel, a.value("byte_offset", uint64_t(0))));
      } else {
        std::string ty = a.at("type").get<std::string>();
        if (!ty.empty() && ty[0] == 'f')
          launch.params.push_back(exec::ParamBinding::float_arg(a.at("scalar").get<double>()));
        else
          launch.params.push_back(exec::ParamBinding::int_arg(a.at("scalar").is_boolean() ? int64_t(a["scalar"].get<bool>())
                                                                                         : a.at("scalar").get<int64_t>()));
      }
    }
    exec::ExecOptions o;
    o.max_ms = j.value("max_ms", 3000.0);
    auto r = exec::run_concrete(ctx, *module, entry, launch, mem, o);
    if (r.unsupported) {
      const std::string& why = *r.unsupported;
      res["status"] = is_timeout(why) ? "timeout" : is_nonfinite(why) ? "nonfinite" : "crash";
      res["detail"] = why;
      return finish();
    }
    for (const auto& f : r.findings) {
      if (is_schedule_finding(f.kind)) {
        res["findings"].push_back(f.kind);
        continue;
      }
      res["detail"] = fmt::format("{} at PTX line {}: {}", f.kind, f.where.ptx_line, f.message);
      return finish();
    }
    for (const auto& B : bufs) {
      auto it = r.memory.tensors.find(B.id);
      if (it == r.memory.tensors.end()) continue;  // untouched: the file already holds it
      std::ofstream out(B.path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(it->second.data()), std::streamsize(it->second.size() * sizeof(double)));
      if (!out) throw std::runtime_error("cannot write " + B.path);
    }
    res["status"] = "ok";
  } catch (const std::exception& e) {
    res["status"] = "crash";
    res["detail"] = std::string("launch job: ") + e.what();
  }
  return finish();
}

}  // namespace dirigo::mutate
