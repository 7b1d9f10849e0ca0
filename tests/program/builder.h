// Hand-built test bundles: JSON written from C++, parsed and validated by the
// real bundle reader, so program tests run on exactly what a tracer would write.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bundle/io.h"

namespace dirigo::program::testing {

using J = nlohmann::ordered_json;

inline J T(const std::string& id) { return J{{"tensor", id}}; }
inline J P(const std::string& id, int64_t byte_offset = 0) { return J{{"tensor", id}, {"byte_offset", byte_offset}}; }
inline J I(int64_t v, const char* type = "int") { return J{{"scalar", v}, {"type", type}}; }
inline J F(double v) { return J{{"scalar", v}, {"type", "float"}}; }
inline J L(std::vector<J> items) { return J{{"list", items}}; }
inline J Ints(std::vector<int64_t> v) {
  std::vector<J> items;
  for (auto x : v) items.push_back(I(x));
  return L(items);
}
inline J None() { return J{{"none", true}}; }

inline std::vector<int64_t> contiguous(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

class ProgramBuilder {
 public:
  ProgramBuilder(std::string name, std::string role) {
    j_["name"] = std::move(name);
    j_["role"] = std::move(role);
    for (const char* k : {"storages", "tensors", "inputs", "outputs", "ops"}) j_[k] = J::array();
  }

  // A fresh contiguous tensor in its own storage.
  std::string tensor(const std::vector<int64_t>& shape, const std::string& dtype = "float32") {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    std::string sid = "s" + std::to_string(storages_++);
    j_["storages"].push_back(J{{"id", sid}, {"nbytes", n * (dtype == "float64" || dtype == "int64" ? 8 : 4)}});
    return add_tensor(sid, 0, shape, contiguous(shape), dtype);
  }
  // Another view of `base`'s storage.
  std::string view(const std::string& base, int64_t offset, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& strides) {
    for (const auto& t : j_["tensors"])
      if (t["id"] == base) return add_tensor(t["storage"], offset, shape, strides, t["dtype"]);
    ADD_FAILURE() << "no tensor " << base;
    return "";
  }

  void input(const std::string& name, const std::string& t, const char* kind = "input", const std::string& sha256 = "") {
    J in{{"name", name}, {"tensor", t}, {"kind", kind}};
    if (!sha256.empty()) in["sha256"] = sha256;
    j_["inputs"].push_back(in);
  }
  void output(const std::string& name, const std::string& t) { j_["outputs"].push_back(J{{"name", name}, {"tensor", t}}); }

  void aten(const std::string& name, std::vector<J> args, std::vector<std::string> outputs,
            std::vector<std::string> mutates = {}, J kwargs = J::object(), const std::string& overload = "default") {
    j_["ops"].push_back(J{{"kind", "aten"}, {"name", name}, {"overload", overload}, {"args", args},
                          {"kwargs", kwargs}, {"outputs", outputs}, {"mutates", mutates}});
  }
  void launch(const std::string& kernel, std::vector<J> args) {
    j_["ops"].push_back(J{{"kind", "launch"}, {"module", "m0"}, {"kernel", kernel}, {"grid", {1, 1, 1}},
                          {"block", {32, 1, 1}}, {"args", args}});
  }
  void copy(const std::string& dst, const std::string& src, int64_t nbytes) {
    j_["ops"].push_back(J{{"kind", "copy"}, {"dst", P(dst)}, {"src", P(src)}, {"nbytes", nbytes}});
  }
  void library(const std::string& name, J args, std::vector<std::string> writes) {
    j_["ops"].push_back(J{{"kind", "library"}, {"library", "cublas"}, {"name", name}, {"args", args}, {"writes", writes}});
  }

  const J& json() const { return j_; }

 private:
  std::string add_tensor(const std::string& sid, int64_t offset, const std::vector<int64_t>& shape,
                         const std::vector<int64_t>& strides, const std::string& dtype) {
    std::string id = "t" + std::to_string(tensors_++);
    j_["tensors"].push_back(J{{"id", id}, {"storage", sid}, {"offset", offset}, {"shape", shape},
                              {"strides", strides}, {"dtype", dtype}});
    return id;
  }

  J j_;
  int storages_ = 0, tensors_ = 0;
};

// Parses and validates like read_bundle does (modules get their PTX inline).
inline bundle::Bundle make_bundle(const std::vector<const ProgramBuilder*>& programs, J match = nullptr,
                                  const std::string& ptx = "") {
  J m;
  m["format"] = "dirigo-bundle";
  m["version"] = 1;
  m["modules"] = J::array({J{{"id", "m0"}, {"path", "ptx/m0.ptx"}}});
  m["programs"] = J::array();
  for (const auto* p : programs) m["programs"].push_back(p->json());
  if (!match.is_null()) m["match"] = match;
  bundle::Bundle b = bundle::parse_manifest(m.dump());
  if (!ptx.empty()) b.modules[0].ptx = ptx;  // else not loaded: kernel names are not checked
  auto issues = bundle::validate(b);
  if (!issues.empty()) ADD_FAILURE() << bundle::BundleError(issues).what();
  return b;
}

}  // namespace dirigo::program::testing
