// Reading, writing and validating trace bundles (docs/bundle-format.md).
//
// Every problem is an Issue naming the file and the JSON path of the field
// ("manifest.json: programs[1].ops[4].args[2].tensor: unknown tensor id \"t99\"").
// No input crashes the reader: malformed JSON, wrong types, absurd numbers and
// deep nesting all become issues.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/bundle.h"

namespace dirigo::bundle {

inline constexpr std::string_view kManifestName = "manifest.json";

struct Issue {
  std::string file;     // "manifest.json", "ptx/m0.ptx", ...
  std::string path;     // JSON path of the field, "" for the whole file
  std::string message;
  std::string str() const;  // "file: path: message"
};

// Thrown by the readers and the writer; what() lists the issues, first one first.
class BundleError : public std::runtime_error {
 public:
  explicit BundleError(std::vector<Issue> issues);
  const std::vector<Issue>& issues() const { return issues_; }

 private:
  std::vector<Issue> issues_;
};

// Where a bundle's files come from: a directory, or (for tests and archives) memory.
struct FileSource {
  // The file's bytes, or nullopt when it does not exist. `rel` is already checked
  // to be a relative path that stays inside the bundle.
  std::function<std::optional<std::string>(const std::string& rel)> read;
  // The file's size without reading it, or nullopt when it does not exist.
  std::function<std::optional<uint64_t>(const std::string& rel)> size;
};
FileSource directory_source(const std::filesystem::path& dir);

// Structure only: JSON syntax, field types, required fields, known kinds.
// Module PTX is not loaded (Module::ptx stays nullopt). Throws BundleError.
Bundle parse_manifest(std::string_view json_text);

// The semantic rules (ids unique, references resolve, extents fit, launch
// dimensions, sha256 of loaded PTX, ...). Returns every issue found, in order.
std::vector<Issue> validate(const Bundle& b);

// parse_manifest + load every module's PTX + check data files + validate.
// Throws BundleError listing all issues. Accepts a directory or a plain .tar
// archive of one; .tar.gz is left to the Python reader (dirigo.bundle).
Bundle read_bundle(const std::filesystem::path& path);
Bundle read_bundle(const FileSource& files);

// manifest.json text for `b` (keys in the documented order, pretty-printed).
std::string to_manifest_json(const Bundle& b);
// Writes manifest.json and every module's PTX (Module::ptx must be set) into
// `dir`, creating it. Throws BundleError if the bundle does not validate.
void write_bundle(const Bundle& b, const std::filesystem::path& dir);

// Files of a plain (ustar/GNU, uncompressed) tar archive whose entries share
// one top-level folder or sit at its root; names are relative to that folder.
FileSource tar_source(const std::filesystem::path& tar_file);

}  // namespace dirigo::bundle
