#include "check/reproduce.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bundle/data.h"
#include "bundle/io.h"
#include "check/lower.h"
#include "ir/eval.h"
#include "program/merge.h"

namespace dirigo::check {
namespace {

using Clock = std::chrono::steady_clock;
using Values = std::vector<double>;

// Recorded values of the inputs each ir leaf tensor stands for, loaded once per input.
class RecordedInputs {
 public:
  RecordedInputs(ir::Context& ctx, const bundle::Bundle& b, const bundle::FileSource& files, const program::Merged& m,
                 std::vector<std::string>& notes)
      : ctx_(ctx), b_(b), files_(files), notes_(notes) {
    // shared inputs: "in:<name>", indexed by the row-major logical index of the reference's view
    for (const auto& si : m.inputs) {
      if (si.origin != program::SharedInput::Origin::Input) continue;
      const std::string program = m.ref.name, name = si.name;
      leaves_[ctx.tensor("in:" + si.name)].push_back({[this, program, name]() -> const Values& { return data(program, name); }, {}});
    }
    // version 0 of a storage read by one program alone ("ref:s3@v0"), indexed by storage element
    for (const auto* prog : {&m.ref, &m.cand}) {
      const std::string prefix = prog == &m.ref ? "ref:" : "new:";
      for (const auto& in : prog->inputs) {
        const std::string program = prog->name, name = in.name;
        int32_t t = ctx.tensor(prefix + program::value_name(*prog, in.view.value));
        leaves_[t].push_back({[this, program, name]() -> const Values& { return data(program, name); }, in.view});
      }
    }
  }

  ir::Value element(int32_t tensor, int64_t index, ir::Sort sort) {
    auto it = leaves_.find(tensor);
    if (it != leaves_.end())
      for (auto& source : it->second) {
        int64_t l = source.view ? logical_of_storage(*source.view, index) : index;
        if (l < 0) continue;
        const Values& v = source.values();
        if (l < int64_t(v.size())) return sort == ir::Sort::Real ? ir::Value::of_real(v[size_t(l)])
                                                                 : ir::Value::of_bv(sort, uint64_t(int64_t(v[size_t(l)])));
      }
    throw std::runtime_error(fmt::format("no recorded value for {}[{}]", ctx_.tensor_name(tensor), index));
  }

  const Values& data(const std::string& program, const std::string& name) {
    auto key = program + "." + name;
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const bundle::Program* p = b_.find_program(program);
    const bundle::Input* input = nullptr;
    if (p)
      for (const auto& in : p->inputs)
        if (in.name == name) input = &in;
    Values values;
    if (!input || input->data.empty()) {
      notes_.push_back(fmt::format("input {} of {} has no recorded data", name, program));
    } else {
      const auto& t = p->tensors.at(p->tensor_index().at(input->tensor));
      values = bundle::read_values(files_, input->data, t.dtype, t.numel());
    }
    return cache_.emplace(key, std::move(values)).first->second;
  }

 private:
  struct Source {
    std::function<const Values&()> values;
    std::optional<program::View> view;  // storage element -> logical index; none: already logical
  };
  ir::Context& ctx_;
  const bundle::Bundle& b_;
  const bundle::FileSource& files_;
  std::vector<std::string>& notes_;
  std::unordered_map<int32_t, std::vector<Source>> leaves_;
  std::unordered_map<std::string, Values> cache_;
};

std::vector<int64_t> sample_locations(int64_t numel, const ReproduceOptions& opt) {
  std::vector<int64_t> out;
  if (numel <= int64_t(opt.max_locations)) {
    for (int64_t l = 0; l < numel; ++l) out.push_back(l);
    return out;
  }
  out = {0, numel - 1};
  std::mt19937_64 rng(opt.seed);
  std::uniform_int_distribution<int64_t> pick(1, numel - 2);
  while (out.size() < opt.max_locations) out.push_back(pick(rng));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

bool Reproduction::reproduced() const {
  if (unsupported) return false;
  size_t compared = 0;
  for (const auto& o : outputs) {
    if (o.mismatched) return false;
    compared += o.compared;
  }
  return compared > 0;
}

Reproduction reproduce(const std::filesystem::path& dir, const ReproduceOptions& opt) {
  Reproduction r;
  auto t0 = Clock::now();
  auto deadline = t0 + std::chrono::milliseconds(int64_t(opt.budget_s * 1000));
  try {
    bundle::FileSource files = bundle::directory_source(dir);
    bundle::Bundle b = bundle::read_bundle(files);
    // no prefix trimming: every op of both programs is modelled, from the recorded inputs on
    program::Merged m = program::merge(b, {false, false});
    ir::Context ctx;
    RecordedInputs inputs(ctx, b, files, m, r.notes);
    ir::Env env;
    env.elem = [&](int32_t t, int64_t i, ir::Sort s) { return inputs.element(t, i, s); };
    for (bool reference : {true, false}) {
      const program::SsaProgram& prog = reference ? m.ref : m.cand;
      const bundle::Program* bp = b.find_program(prog.name);
      exec::ExecOptions eopt = opt.exec;
      eopt.max_ms = std::max(1.0, std::chrono::duration<double, std::milli>(deadline - Clock::now()).count());
      Lowering low(ctx, b, m, reference, eopt);
      low.set_deadline(deadline);
      std::string skip;
      try {
        low.execute_all();
        for (const auto& f : low.findings())
          skip = fmt::format("Execute found {} in kernel {} (PTX line {}): the result is not a function of the inputs",
                             f.kind, f.kernel, f.where.ptx_line);
      } catch (const Unsupported& u) {
        skip = u.what();
      }
      ir::Evaluator eval(env, ir::Precision::F64);
      for (const auto& pair : m.outputs) {
        OutputReproduction o;
        o.program = reference ? "reference" : "candidate";
        o.output = reference ? pair.ref_name : pair.cand_name;
        const program::View& view = reference ? pair.ref : pair.cand;
        o.shape = view.shape;
        o.skipped = skip;
        const bundle::Output* rec = nullptr;
        if (bp)
          for (const auto& out : bp->outputs)
            if (out.name == o.output) rec = &out;
        if (o.skipped.empty() && (!rec || rec->data.empty())) o.skipped = "no recorded data for this output";
        if (!o.skipped.empty()) {
          r.outputs.push_back(std::move(o));
          continue;
        }
        int64_t numel = 1;
        for (int64_t d : view.shape) numel *= d;
        Values recorded = bundle::read_values(files, rec->data, view.dtype, numel);
        double worst_ratio = -1;
        for (int64_t l : sample_locations(numel, opt)) {
          if (Clock::now() > deadline) {
            r.notes.push_back(fmt::format("budget of {:.0f} s ended while comparing {} of the {}", opt.budget_s,
                                          o.output, o.program));
            break;
          }
          ir::Value v;
          try {
            v = eval(low.element(view, l));
          } catch (const WriteRace&) {
            ++o.undefined;
            continue;
          }
          if (v.undef) {
            ++o.undefined;
            continue;
          }
          ++o.compared;
          double model = v.real, real = recorded[size_t(l)];
          double err = std::abs(model - real), allowed = opt.atol + opt.rtol * std::abs(real);
          if (std::isnan(model) && std::isnan(real)) err = 0;
          else if (std::isnan(model) != std::isnan(real)) err = INFINITY;
          else if (std::isinf(model) && model == real) err = 0;
          o.max_abs_error = std::max(o.max_abs_error, err);
          if (!(err <= allowed)) ++o.mismatched;
          if (err / allowed > worst_ratio) {
            worst_ratio = err / allowed;
            o.worst_index = unravel(view.shape, l);
            o.worst_model = model;
            o.worst_recorded = real;
          }
        }
        r.outputs.push_back(std::move(o));
      }
    }
  } catch (const OutOfTime& e) {
    r.notes.push_back(std::string("budget ended: ") + e.what());
  } catch (const std::exception& e) {
    std::string what = e.what();
    r.unsupported = what.rfind("UNSUPPORTED: ", 0) == 0 ? what : "UNSUPPORTED: " + what;
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

namespace {
std::string index_text(const std::vector<int64_t>& idx) {
  return fmt::format("[{}]", fmt::join(idx, ", "));
}
}  // namespace

std::string to_text(const Reproduction& r) {
  std::string s;
  if (r.unsupported) s += *r.unsupported + "\n";
  else s += r.reproduced() ? "REPRODUCED: dirigo's model computes the recorded outputs\n"
                           : "NOT REPRODUCED: dirigo's model and the recorded outputs differ, or nothing was compared\n";
  for (const auto& o : r.outputs) {
    s += fmt::format("  {} {}{}: ", o.program, o.output, index_text(o.shape));
    if (!o.skipped.empty()) {
      s += "skipped: " + o.skipped + "\n";
      continue;
    }
    s += fmt::format("{} locations compared, {} differ, {} undefined in the model; max |error| {:.3g}", o.compared,
                     o.mismatched, o.undefined, o.max_abs_error);
    if (o.mismatched)
      s += fmt::format(" (worst at {}: model {:.9g} vs recorded {:.9g})", index_text(o.worst_index), o.worst_model,
                       o.worst_recorded);
    s += "\n";
  }
  for (const auto& n : r.notes) s += "  note: " + n + "\n";
  s += fmt::format("  {:.2f} s\n", r.seconds);
  return s;
}

std::string to_json(const Reproduction& r) {
  using nlohmann::json;
  json j;
  j["reproduced"] = r.reproduced();
  if (r.unsupported) j["unsupported"] = *r.unsupported;
  j["outputs"] = json::array();
  for (const auto& o : r.outputs) {
    json e{{"program", o.program}, {"output", o.output}, {"shape", o.shape}, {"compared", o.compared},
           {"mismatched", o.mismatched}, {"undefined", o.undefined}, {"max_abs_error", o.max_abs_error}};
    if (!o.skipped.empty()) e["skipped"] = o.skipped;
    if (o.compared) e["worst"] = {{"index", o.worst_index}, {"model", o.worst_model}, {"recorded", o.worst_recorded}};
    j["outputs"].push_back(std::move(e));
  }
  j["notes"] = r.notes;
  j["seconds"] = r.seconds;
  return j.dump(2);
}

}  // namespace dirigo::check
