// The mutant pipeline for one substrate: enumerate every site of the selected rules in every
// CUDA unit, build each mutant (unit text for the compiler, container text for the record),
// compile device code (cached, in parallel), quarantine non-compiling mutants with the
// compiler's message, and de-duplicate by the hash of the compiled image: normalized PTX of
// all units plus the host-side tokens (so launch-configuration mutants count as distinct).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "mutate/compiler.h"
#include "mutate/container.h"

namespace dirigo::mutate {

struct MutantRecord {
  int ordinal = 0;  // 1-based within the substrate; 0 denotes the original
  std::string rule, family;
  size_t unit = 0;
  uint32_t line = 0, col = 0;  // of the site in the container file (the .py or .cu)
  // "unique", "duplicate" (duplicate_of = ordinal of the first mutant with the same image, or
  // 0 = the original), "non-compiling", "generated" (not compiled), "skipped" (substrate failed)
  std::string status = "generated";
  int duplicate_of = -1;
  std::string ptx_hash, image_hash, source_sha256;
  double compile_ms = 0, compile_cpu_ms = 0;
  bool cached = false;
  std::string message;  // compiler log for non-compiling mutants (truncated)
  std::string source_path, ptx_path;
  std::string file_text;  // mutated container text (not stored in the database)
  std::string ptx;        // PTX of the mutated unit (when compiled)
};

struct FamilyCounts {
  int generated = 0, non_compiling = 0, duplicate_original = 0, duplicate = 0, unique = 0;
  void add(const MutantRecord& r);
  FamilyCounts& operator+=(const FamilyCounts& o);
};

struct PipelineOptions {
  std::vector<std::string> rules, families;  // empty = all
  bool compile = true;
  int jobs = 0;                              // 0 = hardware concurrency
  std::string out_dir;                       // "" = do not write mutant files
};

struct SubstrateResult {
  std::string path, kind, sha256;
  std::string status = "ok";  // "ok", or "UNSUPPORTED: <reason>"
  std::string message;
  std::string image_hash;     // of the original
  double compile_ms = 0;      // of the original (all units)
  std::vector<std::string> original_ptx;  // per unit, when compiled
  std::vector<MutantRecord> mutants;
  std::map<std::string, FamilyCounts> by_family() const;
};

// Rules selected by name/family lists; throws std::runtime_error naming an unknown one.
std::vector<const Rule*> select_rules(const std::vector<std::string>& rules, const std::vector<std::string>& families);

// `compiler` may be null when options.compile is false.
SubstrateResult run_pipeline(const Substrate& s, const PipelineOptions& options, Compiler* compiler);

// The table printed by the CLI: one row per family plus a total.
std::string summary_table(const std::map<std::string, FamilyCounts>& counts);

}  // namespace dirigo::mutate
