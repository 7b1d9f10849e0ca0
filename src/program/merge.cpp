#include "program/merge.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "bundle/print.h"

namespace dirigo::program {
namespace {
using namespace dirigo::bundle;


std::string describe_view(const View& v) {
  return fmt::format("{}: {}[{}]", v.tensor, dtype_name(v.dtype), join_ints(v.shape));
}

// Which element ranges of a ref storage version hold the same data as the same
// elements of a cand storage version (seeded by matched inputs and trimmed ops).
class Correspondence {
 public:
  void add(const View& r, const View& c) {
    if (!r.same_geometry(c)) return;
    Extent e = r.extent();
    if (e.status == Extent::Status::Overflow) return;
    if (conflicted_.count(r.value)) return;
    auto back = cand_to_ref_.find(c.value);
    if (back != cand_to_ref_.end() && back->second != r.value) {  // one cand value for two ref values
      conflicted_.insert(r.value);
      conflicted_.insert(back->second);
      map_.erase(r.value);
      map_.erase(back->second);
      return;
    }
    auto it = map_.find(r.value);
    if (it != map_.end() && it->second.cand != c.value) {
      conflicted_.insert(r.value);
      map_.erase(it);
      return;
    }
    auto& entry = map_[r.value];
    entry.cand = c.value;
    cand_to_ref_[c.value] = r.value;
    if (e.status == Extent::Status::Ok) entry.ranges.push_back({e.lo, e.hi});
  }

  // An in-place update of corresponding data: the new versions agree where the old ones did.
  void carry(ValueId r_before, ValueId c_before, ValueId r_after, ValueId c_after) {
    auto it = map_.find(r_before);
    if (it == map_.end() || it->second.cand != c_before || cand_to_ref_.count(c_after)) return;
    Entry e{c_after, it->second.ranges};
    map_[r_after] = std::move(e);
    cand_to_ref_[c_after] = r_after;
  }

  // Same geometry, corresponding storage versions, and inside a range known to agree.
  bool same(const View& r, const View& c) const {
    if (!r.same_geometry(c)) return false;
    auto it = map_.find(r.value);
    if (it == map_.end() || it->second.cand != c.value) return false;
    Extent e = r.extent();
    if (e.status == Extent::Status::Empty) return true;
    if (e.status != Extent::Status::Ok) return false;
    for (const auto& [lo, hi] : it->second.ranges)
      if (lo <= e.lo && e.hi <= hi) return true;
    return false;
  }

 private:
  struct Entry {
    ValueId cand = kNoValue;
    std::vector<std::pair<int64_t, int64_t>> ranges;
  };
  std::unordered_map<ValueId, Entry> map_;
  std::unordered_map<ValueId, ValueId> cand_to_ref_;
  std::unordered_set<ValueId> conflicted_;
};

// Non-tensor parts of two argument lists are identical (tensors compared separately).
bool same_arg_shape(const Arg& a, const Arg& b) {
  std::vector<std::pair<const Arg*, const Arg*>> stack{{&a, &b}};
  while (!stack.empty()) {
    auto [x, y] = stack.back();
    stack.pop_back();
    if (x->value.index() != y->value.index()) return false;
    if (std::holds_alternative<TensorRef>(x->value)) continue;
    if (const auto* lx = std::get_if<ListArg>(&x->value)) {
      const auto& ly = std::get<ListArg>(y->value);
      if (lx->items.size() != ly.items.size()) return false;
      for (size_t i = 0; i < lx->items.size(); ++i) stack.push_back({&lx->items[i], &ly.items[i]});
      continue;
    }
    if (!(*x == *y)) return false;
  }
  return true;
}

// ATen's pooling ops take `stride=[]` to mean "the kernel size": a module passes
// the kernel size explicitly, the functional form often passes nothing.
bool is_pooling(std::string_view name) {
  return name.starts_with("aten::max_pool") || name.starts_with("aten::avg_pool");
}
const Arg& canonical_arg(const AtenOp& op, size_t i) {
  if (i == 2 && is_pooling(op.name) && op.args.size() > 2)
    if (const auto* l = std::get_if<ListArg>(&op.args[2].value); l && l->items.empty()) return op.args[1];
  return op.args[i];
}

bool same_call_shape(const AtenOp& a, const AtenOp& b, std::string& why) {
  if (a.name != b.name || a.overload != b.overload) {
    why = fmt::format("{} vs {}", describe_op(Op(a)), describe_op(Op(b)));
    return false;
  }
  if (a.args.size() != b.args.size() || a.kwargs.size() != b.kwargs.size() || a.outputs.size() != b.outputs.size()) {
    why = fmt::format("{}: different argument counts", a.name);
    return false;
  }
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!same_arg_shape(canonical_arg(a, i), canonical_arg(b, i))) {
      why = fmt::format("{}: args[{}] differ ({} vs {})", a.name, i, describe_arg(a.args[i]), describe_arg(b.args[i]));
      return false;
    }
  for (const NamedArg& kw : a.kwargs) {
    auto it = std::find_if(b.kwargs.begin(), b.kwargs.end(), [&](const NamedArg& n) { return n.first == kw.first; });
    if (it == b.kwargs.end() || !same_arg_shape(kw.second, it->second)) {
      why = fmt::format("{}: kwargs.{} differ", a.name, kw.first);
      return false;
    }
  }
  return true;
}

std::string_view bare_aten_name(std::string_view name) {
  if (name.starts_with("aten::")) name.remove_prefix(6);
  if (auto dot = name.find('.'); dot != std::string_view::npos) name = name.substr(0, dot);
  return name;
}

class Merger {
 public:
  Merger(const Bundle& b, const Program& ref, const Program& cand, const MergeOptions& opts)
      : b_(b), ref_prog_(ref), cand_prog_(cand), opts_(opts) {}

  Merged run() {
    m_.ref = to_ssa(b_, ref_prog_);
    m_.cand = to_ssa(b_, cand_prog_);
    match_inputs();
    match_outputs();
    for (const auto& s : m_.inputs) corr_.add(s.ref, s.cand);
    if (opts_.trim_prefix) trim_prefix();
    if (opts_.trim_suffix) trim_suffix();
    for (auto& o : m_.outputs) o.identical = corr_.same(o.ref, o.cand);
    return std::move(m_);
  }

 private:
  // ---- interface matching
  // Inputs may differ in size-1 axes ((1, 1, 1) vs (1)): the same elements in the same row-major
  // order, so one shared input serves both; outputs must agree exactly.
  void check_pair(const char* what, size_t k, const std::string& rn, const View& r, const std::string& cn,
                  const View& c, bool squeeze = false) {
    auto squeezed = [&](const std::vector<int64_t>& s) {
      std::vector<int64_t> out;
      for (int64_t d : s)
        if (!squeeze || d != 1) out.push_back(d);
      return out;
    };
    const char* diff = squeezed(r.shape) != squeezed(c.shape) ? "shape" : r.dtype != c.dtype ? "dtype" : nullptr;
    if (!diff) return;
    throw MergeError(fmt::format("{} {}: reference {}.{} ({}) and candidate {}.{} ({}) differ in {}", what, k,
                                 ref_prog_.name, rn, describe_view(r), cand_prog_.name, cn, describe_view(c), diff));
  }

  void add_input_pair(size_t k, size_t ri, size_t ci) {
    const SsaInput& r = m_.ref.inputs[ri];
    const SsaInput& c = m_.cand.inputs[ci];
    check_pair("input", k, r.name, r.view, c.name, c.view, true);
    SharedInput s;
    s.name = r.name;
    s.kind = r.kind;
    s.ref = r.view;
    s.cand = c.view;
    m_.inputs.push_back(std::move(s));
    ref_used_[ri] = cand_used_[ci] = true;
    if (!r.sha256.empty() && !c.sha256.empty() && r.sha256 != c.sha256) m_.differing_values.push_back({r.name, c.name});
  }

  // Resolves a match-section pair to (ref index, cand index) in either order.
  std::optional<std::pair<size_t, size_t>> resolve_pair(const std::pair<std::string, std::string>& pr,
                                                        bool outputs, const std::string& path) {
    auto a = resolve_interface_ref(b_, pr.first, outputs);
    auto c = resolve_interface_ref(b_, pr.second, outputs);
    if (!a || !c) throw MergeError(fmt::format("{}: {} or {} does not resolve", path, pr.first, pr.second));
    size_t rp = size_t(&ref_prog_ - b_.programs.data()), cp = size_t(&cand_prog_ - b_.programs.data());
    if (a->first == rp && c->first == cp) return std::pair{a->second, c->second};
    if (a->first == cp && c->first == rp) return std::pair{c->second, a->second};
    if (a->first != rp && a->first != cp && c->first != rp && c->first != cp) return std::nullopt;  // other programs
    throw MergeError(fmt::format("{}: [{}, {}] does not pair {} with {}", path, pr.first, pr.second, ref_prog_.name,
                                 cand_prog_.name));
  }

  void match_inputs() {
    const auto& ri = m_.ref.inputs;
    const auto& ci = m_.cand.inputs;
    ref_used_.assign(ri.size(), false);
    cand_used_.assign(ci.size(), false);
    if (b_.match && !b_.match->inputs.empty()) {
      for (size_t k = 0; k < b_.match->inputs.size(); ++k)
        if (auto p = resolve_pair(b_.match->inputs[k], false, fmt::format("match.inputs[{}]", k)))
          add_input_pair(k, p->first, p->second);
    } else {
      // Forward inputs by position: their count must agree.
      std::vector<size_t> rf, cf;
      for (size_t i = 0; i < ri.size(); ++i)
        if (ri[i].kind == InputKind::Input) rf.push_back(i);
      for (size_t i = 0; i < ci.size(); ++i)
        if (ci[i].kind == InputKind::Input) cf.push_back(i);
      if (rf.size() != cf.size()) {
        auto names = [](const std::vector<SsaInput>& in, const std::vector<size_t>& idx) {
          std::string s;
          for (size_t i : idx) s += (s.empty() ? "" : ", ") + in[i].name;
          return s;
        };
        throw MergeError(fmt::format("reference {} has {} inputs ({}), candidate {} has {} ({})", ref_prog_.name,
                                     rf.size(), names(ri, rf), cand_prog_.name, cf.size(), names(ci, cf)));
      }
      for (size_t k = 0; k < rf.size(); ++k) add_input_pair(k, rf[k], cf[k]);
      // Parameters and buffers: by name first, then the rest in order.
      size_t k = rf.size();
      for (size_t i = 0; i < ri.size(); ++i) {
        if (ref_used_[i] || ri[i].constant) continue;
        for (size_t j = 0; j < ci.size(); ++j)
          if (!cand_used_[j] && !ci[j].constant && ci[j].kind != InputKind::Input && ci[j].name == ri[i].name) {
            add_input_pair(k++, i, j);
            break;
          }
      }
      size_t j = 0;
      for (size_t i = 0; i < ri.size(); ++i) {
        if (ref_used_[i] || ri[i].constant) continue;
        while (j < ci.size() && (cand_used_[j] || ci[j].constant)) ++j;
        if (j == ci.size()) break;
        add_input_pair(k++, i, j);
      }
    }
    // Captured constants are program data, never paired by name or position;
    // two with the same recorded values (sha256) are the same value.
    for (size_t i = 0; i < ri.size(); ++i) {
      if (ref_used_[i] || !ri[i].constant || ri[i].sha256.empty()) continue;
      for (size_t j = 0; j < ci.size(); ++j)
        if (!cand_used_[j] && ci[j].constant && ci[j].sha256 == ri[i].sha256 &&
            ci[j].view.shape == ri[i].view.shape && ci[j].view.dtype == ri[i].view.dtype) {
          add_input_pair(m_.inputs.size(), i, j);
          break;
        }
    }
    for (size_t i = 0; i < ri.size(); ++i)
      if (!ref_used_[i]) m_.unmatched.push_back({true, ri[i].name, ri[i].view});
    for (size_t i = 0; i < ci.size(); ++i)
      if (!cand_used_[i]) m_.unmatched.push_back({false, ci[i].name, ci[i].view});
  }

  void add_output_pair(size_t k, size_t ri, size_t ci) {
    const SsaOutput& r = m_.ref.outputs[ri];
    const SsaOutput& c = m_.cand.outputs[ci];
    check_pair("output", k, r.name, r.view, c.name, c.view);
    m_.outputs.push_back({r.name, c.name, r.view, c.view});
  }

  void match_outputs() {
    if (b_.match && !b_.match->outputs.empty()) {
      for (size_t k = 0; k < b_.match->outputs.size(); ++k)
        if (auto p = resolve_pair(b_.match->outputs[k], true, fmt::format("match.outputs[{}]", k)))
          add_output_pair(k, p->first, p->second);
      return;
    }
    if (m_.ref.outputs.size() != m_.cand.outputs.size())
      throw MergeError(fmt::format("reference {} has {} outputs, candidate {} has {}", ref_prog_.name,
                                   m_.ref.outputs.size(), cand_prog_.name, m_.cand.outputs.size()));
    for (size_t k = 0; k < m_.ref.outputs.size(); ++k) add_output_pair(k, k, k);
  }

  // ---- trimming
  // A deterministic ATen op (prefix trimming may take in-place ones).
  static bool deterministic_aten(const SsaOp& op, std::string& why) {
    const AtenOp* a = op.aten();
    if (!a) {
      why = fmt::format("a {} op", op.kind());
      return false;
    }
    bool all_empty = std::all_of(op.results.begin(), op.results.end(), [](const View& v) {
      return v.extent().status == Extent::Status::Empty;
    });
    if (is_nondeterministic_aten(a->name) && !all_empty) {  // zero elements hold no random data
      why = a->name + " has random or uninitialized results";
      return false;
    }
    return true;
  }

  // Deterministic and writes nothing but fresh outputs (what suffix trimming needs).
  static bool pure(const SsaOp& op, std::string& why) {
    if (!deterministic_aten(op, why)) return false;
    for (const auto& w : op.writes)
      if (!w.fresh) {
        why = op.aten()->name + " writes in place";
        return false;
      }
    return true;
  }

  static View before_view(const View& region, ValueId before) {
    View v = region;
    v.value = before;
    return v;
  }

  // Same call on corresponding operands, results of the same geometry, and
  // in-place writes into corresponding data.
  bool same_op(const SsaOp& r, const SsaOp& c, std::string& why) const {
    if (!same_call_shape(*r.aten(), *c.aten(), why)) return false;
    const std::string& name = r.aten()->name;
    if (r.reads.size() != c.reads.size()) {
      why = name + ": different tensor operands";
      return false;
    }
    for (size_t i = 0; i < r.reads.size(); ++i)
      if (r.reads[i].path != c.reads[i].path || !corr_.same(r.reads[i].view, c.reads[i].view)) {
        why = fmt::format("{}: {} is {} in {} but {} in {}, not the same value", name, r.reads[i].path,
                          r.reads[i].view.tensor, ref_prog_.name, c.reads[i].view.tensor, cand_prog_.name);
        return false;
      }
    for (size_t i = 0; i < r.results.size(); ++i)
      if (!r.results[i].same_geometry(c.results[i])) {
        why = name + ": results differ in layout";
        return false;
      }
    if (r.writes.size() != c.writes.size()) {
      why = name + ": writes different storages";
      return false;
    }
    for (size_t k = 0; k < r.writes.size(); ++k) {
      const Write& wr = r.writes[k];
      const Write& wc = c.writes[k];
      if (wr.fresh != wc.fresh || wr.regions.size() != wc.regions.size()) {
        why = name + ": writes different storages";
        return false;
      }
      if (wr.fresh) continue;
      for (size_t j = 0; j < wr.regions.size(); ++j)
        if (!corr_.same(before_view(wr.regions[j], wr.before), before_view(wc.regions[j], wc.before))) {
          why = fmt::format("{}: writes in place into {} in {} but {} in {}, not the same value", name,
                            wr.regions[j].tensor, ref_prog_.name, wc.regions[j].tensor, cand_prog_.name);
          return false;
        }
    }
    return true;
  }

  static bool written_by(const SsaOp& op, const View& v) {
    return std::any_of(op.writes.begin(), op.writes.end(), [&](const Write& w) { return w.after == v.value; });
  }

  void add_trimmed_input(size_t op, const View& r, const View& c) {
    SharedInput s;
    s.name = fmt::format("prefix[{}].{}", op, r.tensor);
    s.origin = SharedInput::Origin::Trimmed;
    s.trimmed_op = op;
    s.ref = r;
    s.cand = c;
    m_.inputs.push_back(std::move(s));
  }

  void trim_prefix() {
    size_t n = std::min(m_.ref.ops.size(), m_.cand.ops.size());
    size_t i = 0;
    for (; i < n; ++i) {
      const SsaOp& r = m_.ref.ops[i];
      const SsaOp& c = m_.cand.ops[i];
      std::string why;
      if (!deterministic_aten(r, why)) {
        m_.prefix_stop = fmt::format("op {} of {}: {}", i, ref_prog_.name, why);
        break;
      }
      if (!deterministic_aten(c, why)) {
        m_.prefix_stop = fmt::format("op {} of {}: {}", i, cand_prog_.name, why);
        break;
      }
      if (!same_op(r, c, why)) {
        m_.prefix_stop = fmt::format("op {}: {}", i, why);
        break;
      }
      // Results that are views of existing data must already correspond.
      bool ok = true;
      for (size_t k = 0; k < r.results.size() && ok; ++k)
        if (!written_by(r, r.results[k]) && !corr_.same(r.results[k], c.results[k])) {
          m_.prefix_stop = fmt::format("op {}: {} result {} is a view outside the matched data", i, r.aten()->name, k);
          ok = false;
        }
      if (!ok) break;
      // Every version the op writes becomes a shared input: a fresh output as
      // its result view, an in-place update as the region written.
      for (size_t k = 0; k < r.writes.size(); ++k) {
        const Write& wr = r.writes[k];
        const Write& wc = c.writes[k];
        if (!wr.fresh) {
          corr_.carry(wr.before, wc.before, wr.after, wc.after);
          add_trimmed_input(i, wr.regions[0], wc.regions[0]);
          continue;
        }
        for (size_t j = 0; j < r.results.size(); ++j)
          if (r.results[j].value == wr.after) {
            corr_.add(r.results[j], c.results[j]);
            add_trimmed_input(i, r.results[j], c.results[j]);
            break;
          }
      }
    }
    m_.prefix = i;
    if (i == n && m_.prefix_stop.empty()) m_.prefix_stop = "end of a program";
  }

  void trim_suffix() {
    size_t nr = m_.ref.ops.size(), nc = m_.cand.ops.size();
    size_t j = 0;
    while (m_.prefix + j < nr && m_.prefix + j < nc) {
      const SsaOp& r = m_.ref.ops[nr - 1 - j];
      const SsaOp& c = m_.cand.ops[nc - 1 - j];
      std::string why;
      if (!pure(r, why) || !pure(c, why) || !same_call_shape(*r.aten(), *c.aten(), why) ||
          r.reads.size() != c.reads.size())
        break;
      // Each result must be compared only against the other program's matching result.
      std::vector<size_t> replaced;
      bool ok = true;
      for (size_t p = 0; p < m_.outputs.size() && ok; ++p) {
        const OutputPair& o = m_.outputs[p];
        auto rk = result_index(r, o.ref), ck = result_index(c, o.cand);
        if (!rk && !ck) continue;
        if (!rk || !ck || *rk != *ck) ok = false;
        else replaced.push_back(p);
      }
      for (size_t i = 0; i < r.reads.size() && ok; ++i)
        ok = r.reads[i].path == c.reads[i].path && r.reads[i].view.shape == c.reads[i].view.shape &&
             r.reads[i].view.dtype == c.reads[i].view.dtype;
      if (!ok || replaced.empty()) break;
      for (size_t p = replaced.size(); p-- > 0;) m_.outputs.erase(m_.outputs.begin() + std::ptrdiff_t(replaced[p]));
      for (size_t i = 0; i < r.reads.size(); ++i) {
        if (corr_.same(r.reads[i].view, c.reads[i].view)) continue;  // equal by construction
        std::string name = fmt::format("suffix[{}].{}", nr - 1 - j, r.reads[i].path);
        m_.outputs.push_back({name, fmt::format("suffix[{}].{}", nc - 1 - j, c.reads[i].path), r.reads[i].view,
                              c.reads[i].view});
      }
      ++j;
    }
    m_.ref_suffix = m_.cand_suffix = j;
  }

  static std::optional<size_t> result_index(const SsaOp& op, const View& v) {
    for (size_t k = 0; k < op.results.size(); ++k)
      if (op.results[k].value == v.value && op.results[k].same_geometry(v)) return k;
    for (const auto& w : op.writes)
      if (w.after == v.value) return op.results.size();  // written, but not as this view: never matches
    return std::nullopt;
  }

  const Bundle& b_;
  const Program& ref_prog_;
  const Program& cand_prog_;
  MergeOptions opts_;
  Merged m_;
  Correspondence corr_;
  std::vector<bool> ref_used_, cand_used_;
};

}  // namespace

std::span<const SsaOp> Merged::ref_ops() const {
  return {ref.ops.data() + prefix, ref.ops.size() - prefix - ref_suffix};
}
std::span<const SsaOp> Merged::cand_ops() const {
  return {cand.ops.data() + prefix, cand.ops.size() - prefix - cand_suffix};
}

int Merged::shared_input_of_ref(ValueId v) const {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].ref.value == v) return int(i);
  return -1;
}
int Merged::shared_input_of_cand(ValueId v) const {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].cand.value == v) return int(i);
  return -1;
}

bool is_nondeterministic_aten(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted", "rand",
      "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm", "normal", "normal_", "bernoulli",
      "bernoulli_", "uniform_", "exponential_", "geometric_", "log_normal_", "cauchy_", "random_", "multinomial",
      "dropout", "native_dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "rrelu",
      "rrelu_with_noise", "poisson", "set_", "resize_"};
  std::string_view bare = bare_aten_name(name);
  return std::find(std::begin(kNames), std::end(kNames), bare) != std::end(kNames);
}

Merged merge(const Bundle& b, std::string_view ref_name, std::string_view cand_name, const MergeOptions& opts) {
  const Program* ref = b.find_program(ref_name);
  const Program* cand = b.find_program(cand_name);
  if (!ref) throw MergeError(fmt::format("no program named {}", ref_name));
  if (!cand) throw MergeError(fmt::format("no program named {}", cand_name));
  if (ref == cand) throw MergeError(fmt::format("cannot merge program {} with itself", ref_name));
  return Merger(b, *ref, *cand, opts).run();
}

Merged merge(const Bundle& b, const MergeOptions& opts) {
  const Program *ref = nullptr, *cand = nullptr;
  int nref = 0, ncand = 0;
  for (const auto& p : b.programs) {
    if (p.role == Role::Reference) ref = &p, ++nref;
    if (p.role == Role::Candidate) cand = &p, ++ncand;
  }
  if (nref > 1 || ncand > 1)
    throw MergeError(fmt::format("the bundle has {} reference and {} candidate programs; name the two to merge", nref,
                                 ncand));
  if (!ref || !cand) {
    if (b.programs.size() != 2)
      throw MergeError("the bundle has no reference/candidate pair (roles) and not exactly two programs");
    ref = &b.programs[0];
    cand = &b.programs[1];
  }
  return merge(b, ref->name, cand->name, opts);
}

std::string describe(const Merged& m) {
  std::string s = fmt::format("merged {} and {}: {} shared inputs, {} output pairs, prefix {} ops trimmed", m.ref.name,
                              m.cand.name, m.inputs.size(), m.outputs.size(), m.prefix);
  if (!m.prefix_stop.empty()) s += " (stopped at " + m.prefix_stop + ")";
  if (m.ref_suffix) s += fmt::format(", suffix {} ops trimmed", m.ref_suffix);
  s += fmt::format("; {} ops left in {}, {} in {}\n", m.ref_ops().size(), m.ref.name, m.cand_ops().size(), m.cand.name);
  for (const auto& in : m.inputs)
    s += fmt::format("  input {}: {} {} ~ {} {}\n", in.name, in.ref.tensor, value_name(m.ref, in.ref.value),
                     in.cand.tensor, value_name(m.cand, in.cand.value));
  for (const auto& u : m.unmatched)
    s += fmt::format("  unmatched {} input {}: {}\n", u.in_ref ? m.ref.name : m.cand.name, u.name, u.view.tensor);
  for (const auto& o : m.outputs)
    s += fmt::format("  compare {}.{} {} with {}.{} {}{}\n", m.ref.name, o.ref_name, value_name(m.ref, o.ref.value),
                     m.cand.name, o.cand_name, value_name(m.cand, o.cand.value),
                     o.identical ? " (identical: equal by construction)" : "");
  return s;
}

}  // namespace dirigo::program
