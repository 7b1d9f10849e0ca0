#include "mutate/pipeline.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "bundle/sha256.h"
#include "mutate/device_source.h"

namespace fs = std::filesystem;

namespace dirigo::mutate {

void FamilyCounts::add(const MutantRecord& r) {
  ++generated;
  if (r.status == "non-compiling") ++non_compiling;
  else if (r.status == "duplicate" && r.duplicate_of == 0) ++duplicate_original;
  else if (r.status == "duplicate") ++duplicate;
  else if (r.status == "unique") ++unique;
}

FamilyCounts& FamilyCounts::operator+=(const FamilyCounts& o) {
  generated += o.generated;
  non_compiling += o.non_compiling;
  duplicate_original += o.duplicate_original;
  duplicate += o.duplicate;
  unique += o.unique;
  return *this;
}

std::map<std::string, FamilyCounts> SubstrateResult::by_family() const {
  std::map<std::string, FamilyCounts> m;
  for (const auto& f : families()) m[f];
  for (const auto& r : mutants) m[r.family].add(r);
  return m;
}

std::vector<const Rule*> select_rules(const std::vector<std::string>& rules, const std::vector<std::string>& fams) {
  for (const auto& f : fams)
    if (std::find(families().begin(), families().end(), f) == families().end())
      throw std::runtime_error("unknown rule family '" + f + "' (families: arithmetic, indexing, semantic, boundary, synchronization, precision)");
  for (const auto& r : rules)
    if (!find_rule(r)) throw std::runtime_error("unknown mutation rule '" + r + "' (see dirigo mutate --list-rules)");
  std::vector<const Rule*> out;
  for (const auto& r : all_rules()) {
    bool by_name = std::find(rules.begin(), rules.end(), r.name) != rules.end();
    bool by_family = std::find(fams.begin(), fams.end(), r.family) != fams.end();
    if ((rules.empty() && fams.empty()) || by_name || by_family) out.push_back(&r);
  }
  return out;
}

namespace {

std::string stem_of(const std::string& path) { return fs::path(path).stem().string(); }

std::string truncate(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "\n[...]"; }

// Line and column of the site's first edit in the container file (1-based).
std::pair<uint32_t, uint32_t> file_position(const Substrate& s, size_t unit, const Site& site) {
  uint32_t off = s.units[unit].raw.at(site.edits.front().begin);
  uint32_t line = 1, col = 1;
  for (uint32_t i = 0; i < off && i < s.file.size(); ++i) {
    if (s.file[i] == '\n') { ++line; col = 1; }
    else ++col;
  }
  return {line, col};
}

struct Job {
  std::string source;
  std::vector<std::string> names;
  std::string host_text;
  CompileResult result;
};

void compile_all(std::vector<Job*>& jobs, Compiler& compiler, int threads) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) jobs[i]->result = compiler.compile(jobs[i]->source, jobs[i]->names);
  };
  int n = std::max(1, std::min<int>(threads, static_cast<int>(jobs.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace

SubstrateResult run_pipeline(const Substrate& s, const PipelineOptions& opt, Compiler* compiler) {
  SubstrateResult res;
  res.path = s.path;
  res.kind = s.kind == Substrate::Kind::Python ? "python" : "cuda";
  res.sha256 = bundle::sha256_hex(s.file);
  auto rules = select_rules(opt.rules, opt.families);
  int threads = opt.jobs > 0 ? opt.jobs : std::max(1u, std::thread::hardware_concurrency());

  std::vector<SourceModel> models;
  for (const auto& u : s.units) models.emplace_back(u.text);

  // The original, unit by unit.
  std::vector<Job> originals(s.units.size());
  for (size_t u = 0; u < s.units.size(); ++u) {
    auto ds = device_source(models[u]);
    originals[u].source = ds.text;
    originals[u].names = ds.name_expressions;
    originals[u].host_text = ds.host_text;
  }
  bool compile = opt.compile && compiler;
  std::vector<std::string> unit_images(s.units.size());
  if (compile) {
    std::vector<Job*> js;
    for (auto& j : originals) js.push_back(&j);
    compile_all(js, *compiler, threads);
    bool failed = false;
    for (auto& j : originals) failed |= !j.result.ok;
    if (failed && compiler->relax()) compile_all(js, *compiler, threads);  // e.g. needs cudaError_t
    for (size_t u = 0; u < originals.size(); ++u) {
      const auto& r = originals[u].result;
      res.compile_ms += r.ms;
      if (!r.ok) {
        res.status = "UNSUPPORTED: the substrate does not compile (unit " + std::to_string(u) + ")";
        res.message = truncate(r.log, 4000);
      }
      unit_images[u] = normalize_ptx(r.ptx) + "\n//host\n" + originals[u].host_text;
      res.original_ptx.push_back(r.ptx);
    }
  }
  auto image_of = [&](size_t unit, const std::string& mutated_image) {
    std::string all;
    for (size_t u = 0; u < unit_images.size(); ++u) all += (u == unit ? mutated_image : unit_images[u]) + "\n//unit\n";
    return bundle::sha256_hex(all);
  };
  if (compile && res.status == "ok") res.image_hash = image_of(s.units.size(), "");

  // Enumerate mutants (rule order, then unit, then site order).
  std::vector<Job> jobs;
  for (const Rule* rule : rules)
    for (size_t u = 0; u < s.units.size(); ++u)
      for (const auto& site : find_sites(*rule, models[u])) {
        MutantRecord r;
        r.ordinal = static_cast<int>(res.mutants.size()) + 1;
        r.rule = rule->name;
        r.family = rule->family;
        r.unit = u;
        auto [line, col] = file_position(s, u, site);
        r.line = line;
        r.col = col;
        r.file_text = mutant_file(s, u, site);
        r.source_sha256 = bundle::sha256_hex(r.file_text);
        SourceModel mutated(apply_site(models[u], site));
        auto ds = device_source(mutated);
        Job j;
        j.source = ds.text;
        j.names = ds.name_expressions;
        j.host_text = ds.host_text;
        jobs.push_back(std::move(j));
        res.mutants.push_back(std::move(r));
      }

  if (compile && res.status == "ok") {
    std::vector<Job*> js;
    for (auto& j : jobs) js.push_back(&j);
    compile_all(js, *compiler, threads);
    std::unordered_map<std::string, int> first;  // image hash -> ordinal
    first[res.image_hash] = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      auto& r = res.mutants[i];
      const auto& c = jobs[i].result;
      r.compile_ms = c.ms;
      r.compile_cpu_ms = c.cpu_ms;
      r.cached = c.cached;
      if (!c.ok) {
        r.status = "non-compiling";
        r.message = truncate(c.log, 2000);
        continue;
      }
      r.ptx = c.ptx;
      std::string norm = normalize_ptx(c.ptx);
      r.ptx_hash = bundle::sha256_hex(norm);
      r.image_hash = image_of(r.unit, norm + "\n//host\n" + jobs[i].host_text);
      auto [it, inserted] = first.emplace(r.image_hash, r.ordinal);
      if (inserted) r.status = "unique";
      else {
        r.status = "duplicate";
        r.duplicate_of = it->second;
      }
    }
  } else if (compile) {
    for (auto& r : res.mutants) r.status = "skipped";
  }

  if (!opt.out_dir.empty()) {
    fs::path dir = fs::path(opt.out_dir) / stem_of(s.path);
    fs::create_directories(dir);
    std::string ext = fs::path(s.path).extension().string();
    for (size_t u = 0; u < res.original_ptx.size(); ++u)
      std::ofstream(dir / fmt::format("original{}.ptx", u == 0 ? "" : std::to_string(u)), std::ios::binary)
          << res.original_ptx[u];
    for (auto& r : res.mutants) {
      std::string base = fmt::format("m{:04d}_{}", r.ordinal, r.rule);
      r.source_path = (dir / (base + ext)).string();
      std::ofstream(r.source_path, std::ios::binary) << r.file_text;
      if (!r.ptx.empty()) {
        r.ptx_path = (dir / (base + ".ptx")).string();
        std::ofstream(r.ptx_path, std::ios::binary) << r.ptx;
      } else if (r.status == "non-compiling") {
        r.ptx_path = (dir / (base + ".log")).string();
        std::ofstream(r.ptx_path) << r.message;
      }
    }
  }
  return res;
}

std::string summary_table(const std::map<std::string, FamilyCounts>& counts) {
  std::string out = fmt::format("{:<16} {:>9} {:>13} {:>10} {:>10} {:>7}\n", "family", "generated", "non-compiling",
                                "dup-orig", "duplicate", "unique");
  FamilyCounts total;
  auto row = [&](const std::string& name, const FamilyCounts& c) {
    out += fmt::format("{:<16} {:>9} {:>13} {:>10} {:>10} {:>7}\n", name, c.generated, c.non_compiling,
                       c.duplicate_original, c.duplicate, c.unique);
  };
  for (const auto& f : families()) {
    auto it = counts.find(f);
    FamilyCounts c = it == counts.end() ? FamilyCounts{} : it->second;
    row(f, c);
    total += c;
  }
  row("total", total);
  return out;
}

}  // namespace dirigo::mutate
