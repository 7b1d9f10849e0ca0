#include "smt/falsify.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace dirigo::smt {
namespace {

// splitmix64: a leaf's value is a pure function of (seed, point, leaf), so every read of one leaf
// during an evaluation sees the same value, with no table of leaves built up front (Load leaves
// are only known once their index is evaluated).
uint64_t mix(uint64_t x) { return PointSampler::mix(x); }

ir::Value sample(uint64_t h, ir::Sort sort, double bound, bool nonnegative) {
  double unit = double(h >> 11) * 0x1.0p-53;  // [0, 1)
  if (sort == ir::Sort::Real) return ir::Value::of_real((nonnegative ? unit : unit * 2 - 1) * bound);
  if (sort == ir::Sort::Bool) return ir::Value::of_bool(h & 1);
  return ir::Value::of_bv(sort, h % 16);  // integer data (indices, labels): small non-negative values
}

}  // namespace

namespace {
struct DistributionRung {
  Distribution d;
  double scale;
};
constexpr DistributionRung kRungs[kDistributions] = {
    {Distribution::Normal, 1.0}, {Distribution::Uniform, 1.0}, {Distribution::Normal, 10.0},
    {Distribution::Normal, 0.01}, {Distribution::Uniform, 1000.0}};
const DistributionRung& rung_of(unsigned p) { return kRungs[((p - kDistributionPoint) / 2) % kDistributions]; }
}  // namespace

Distribution point_distribution(unsigned p) {
  return p < kDistributionPoint ? Distribution::Uniform : rung_of(p).d;
}

std::string_view distribution_name(Distribution d) { return d == Distribution::Normal ? "normal" : "uniform"; }

double point_bound(unsigned p, double bound) {
  if (p >= kDistributionPoint) return rung_of(p).scale;
  // A ladder of scales: at [-10, 10] a long dot product (x @ W of 8,192 terms) lands ~10^3 away
  // from 0 and every clamp, hardtanh or saturating activation after it hides a dropped bias;
  // at [-0.1, 0.1] the same sum is O(1), where they are not flat.
  static constexpr double kScales[] = {1.0, 0.1, 0.01};
  unsigned rung = (p / 2) % 4;
  return rung == 0 ? bound : kScales[rung - 1];
}

PointSampler::PointSampler(uint64_t seed, unsigned p, double bound)
    : base_(mix(seed * 1000003 + p)), bound_(point_bound(p, bound)), nonnegative_(point_nonnegative(p)),
      normal_(point_distribution(p) == Distribution::Normal) {}

ir::Value PointSampler::operator()(uint64_t key, int64_t index, ir::Sort sort) const {
  uint64_t h = mix(base_ ^ mix(key << 40 ^ uint64_t(index)));
  if (sort == ir::Sort::Real) return ir::Value::of_real(real_from(h));
  return sample(h, sort, bound_, nonnegative_);
}

ir::Value draw(uint64_t seed, unsigned p, uint64_t key, int64_t index, ir::Sort sort, double bound) {
  return PointSampler(seed, p, bound)(key, index, sort);
}

uint64_t name_key(std::string_view tensor_name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : tensor_name) h = (h ^ c) * 0x100000001b3ULL;
  return h & 0xffffff;
}

std::optional<Witness> falsify(ir::Expr a, ir::Expr b, const FalsifyOptions& opt) {
  std::optional<Witness> below_tolerance;
  std::vector<uint64_t> keys;  // key_of per tensor id, computed once (a giant location reads 10^7 leaves)
  constexpr uint64_t kNoKey = ~0ULL;
  auto key = [&](int32_t t) -> uint64_t {
    if (!opt.key_of || t < 0) return uint64_t(t);
    if (size_t(t) >= keys.size()) keys.resize(size_t(t) + 1, kNoKey);
    if (keys[t] == kNoKey) keys[t] = opt.key_of(t);
    return keys[t];
  };
  for (unsigned p = opt.first_point; p < opt.first_point + opt.points; ++p) {
    if (opt.deadline) opt.deadline->check("while evaluating random points (sampling)");
    // Every other point draws only non-negative reals: a variance, a running_var or a scale read
    // under sqrt/rsqrt/log is NaN at half the symmetric points, and a NaN never shows a difference
    // beyond the tolerance.
    double bound = point_bound(p, opt.bound);
    bool nonnegative = point_nonnegative(p);
    uint64_t base = mix(opt.seed * 1000003 + p);
    PointSampler sampler(opt.seed, p, opt.bound);  // element leaves, as numeric evaluation draws them
    // What this evaluation read; sorted (stable order) and deduplicated only when a witness is kept: a
    // location over a GEMM reads millions of elements, and a map insert per read cost a minute a point.
    struct ElemRead {  // a LeafValue without its name string: the reads of a nested reduction number 10^7
      int32_t tensor;
      int64_t index;
      ir::Value value;
    };
    std::vector<ElemRead> elems;
    std::map<std::string, LeafValue> vars;
    // Reads are listed only on a second evaluation at a point whose sides differ (the first one
    // decides whether it is a witness); an element read again (a GEMM row's x inside a sum over the
    // row) comes from a small direct-mapped cache of its draw.
    bool recording = false;
    struct CachedDraw {
      int32_t tensor = -1;
      ir::Sort sort = ir::Sort::Real;
      int64_t index = 0;
      ir::Value value;
    };
    std::vector<CachedDraw> cache(size_t(1) << 14);
    ir::Env env;
    env.elem = [&](int32_t t, int64_t i, ir::Sort s) {
      if (opt.deadline) opt.deadline->tick("while evaluating random points (sampling)");
      CachedDraw& c = cache[(uint64_t(i) * 0x9e3779b97f4a7c15ULL ^ uint64_t(t) * 0xc2b2ae3d27d4eb4fULL) >> 50];
      if (c.tensor != t || c.index != i || c.sort != s) c = CachedDraw{t, s, i, sampler(key(t), i, s)};
      if (recording) elems.push_back(ElemRead{t, i, c.value});
      return c.value;
    };
    env.var = [&](std::string_view name, ir::Sort s) {
      ir::Value v = sample(mix(base ^ std::hash<std::string_view>()(name)), s, bound, nonnegative);
      vars.try_emplace(std::string(name), LeafValue{LeafValue::Kind::Var, -1, 0, std::string(name), v});
      return v;
    };
    Witness w;
    try {
      ir::Evaluator ev(env, ir::Precision::F64);
      w.a = ev(a);
      w.b = ev(b);
      if (w.a.undef || w.b.undef) continue;
      bool holds = true;
      if (opt.assumptions)
        for (ir::Expr c : *opt.assumptions) {
          ir::Value v = ev(c);
          holds = holds && !v.undef && v.bits;
        }
      if (!holds) continue;
    } catch (const StageTimeout&) {
      throw;
    } catch (const std::exception&) {
      continue;  // a point the expressions cannot be evaluated at (e.g. an index out of every tensor)
    }
    if (!values_differ(w.a, w.b, opt.confirm_rtol, opt.confirm_atol)) continue;
    recording = true;  // the same values again, every read listed
    {
      ir::Evaluator ev(env, ir::Precision::F64);
      ev(a);
      ev(b);
    }
    // A witness lists every Var and element leaf of both sides (decide.h), also those this point's
    // evaluation never read (an ite arm not taken): with the value they would have had.
    for (ir::Expr e : {a, b})
      for (ir::Expr l : ir::leaves(e)) {
        if (l->op == ir::Op::Var) env.var(l->name(), l->sort);
        else if (l->op == ir::Op::TensorElem) env.elem(l->tensor(), l->index(), l->sort);
      }
    // One value per (tensor, index): every read of an element drew the same value, so any order of
    // equal keys is the same list.
    if (opt.deadline) opt.deadline->check("while listing a sampled witness's leaves");
    auto key = [](const ElemRead& l) { return std::make_pair(l.tensor, l.index); };
    std::sort(elems.begin(), elems.end(), [&](const ElemRead& x, const ElemRead& y) { return key(x) < key(y); });
    elems.erase(std::unique(elems.begin(), elems.end(), [&](const ElemRead& x, const ElemRead& y) { return key(x) == key(y); }),
                elems.end());
    if (opt.deadline) opt.deadline->check("while listing a sampled witness's leaves");
    w.leaves.reserve(elems.size() + vars.size());
    for (const auto& l : elems) w.leaves.push_back(LeafValue{LeafValue::Kind::Elem, l.tensor, l.index, {}, l.value});
    for (auto& [k, l] : vars) w.leaves.push_back(std::move(l));
    if (opt.tolerance && w.a.sort == ir::Sort::Real)
      w.exceeds_tolerance =
          std::fabs(w.a.real - w.b.real) > opt.tolerance->atol + opt.tolerance->rtol * std::fabs(w.a.real);
    if (!opt.tolerance || w.exceeds_tolerance) return w;
    if (!below_tolerance) below_tolerance = std::move(w);
  }
  return below_tolerance;
}

}  // namespace dirigo::smt
