#include "check/numeric.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <cmath>
#include <mutex>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "aten/op_call.h"
#include "check/kernel_numeric.h"
#include "ir/limits.h"
#include "ir/print.h"
#include "smt/falsify.h"

namespace dirigo::check {

namespace {

struct KeyHash {
  size_t operator()(const std::pair<int32_t, int64_t>& k) const {
    return std::hash<int64_t>()(k.second * 1000003 + k.first);
  }
};

double to_number(const ir::Value& v) {
  if (v.undef) return std::numeric_limits<double>::quiet_NaN();
  return v.sort == ir::Sort::Real ? v.real : double(v.bits);
}

ir::Value from_number(double d, ir::Sort s) {
  if (s == ir::Sort::Real) return ir::Value::of_real(d);
  ir::Value v = s == ir::Sort::Bool ? ir::Value::of_bool(d != 0) : ir::Value::of_bv(s, uint64_t(d));
  v.undef = std::isnan(d);
  return v;
}

// sum_k a[k*sa + p] * b[k*sb + p] added to acc[p] for each lane p < NP. fp64: four partial sums
// per lane (a real sum has no order; the dependency chain of one accumulator would bound the loop
// at one multiply-add per add latency). fp32: in index order, every operation rounded, as the
// generic loop and ir::Evaluator's F32 mode do.
template <size_t NP>
void dot_fixed(const double* a, int64_t sa, const double* b, int64_t sb, int64_t n, bool f32, double* acc) {
  if (f32) {
    for (int64_t k = 0; k < n; ++k)
      for (size_t p = 0; p < NP; ++p)
        acc[p] = double(float(acc[p] + double(float(a[k * sa + int64_t(p)] * b[k * sb + int64_t(p)]))));
    return;
  }
  double s[4][NP] = {};
  int64_t k = 0;
  for (; k + 4 <= n; k += 4)
    for (int u = 0; u < 4; ++u)
      for (size_t p = 0; p < NP; ++p) s[u][p] += a[(k + u) * sa + int64_t(p)] * b[(k + u) * sb + int64_t(p)];
  for (; k < n; ++k)
    for (size_t p = 0; p < NP; ++p) s[0][p] += a[k * sa + int64_t(p)] * b[k * sb + int64_t(p)];
  for (size_t p = 0; p < NP; ++p) acc[p] += (s[0][p] + s[1][p]) + (s[2][p] + s[3][p]);
}

// Runs of neighbouring lanes of one precision ([first, end) each): many points at once are summed
// as vector lanes, each lane in the order its precision requires (the lanes are independent chains).
std::vector<std::pair<size_t, size_t>> lane_groups(const std::vector<uint8_t>& f32) {
  std::vector<std::pair<size_t, size_t>> g;
  for (size_t p = 0; p < f32.size(); ++p)
    if (g.empty() || f32[p] != f32[g.back().first]) g.push_back({p, p + 1});
    else g.back().second = p + 1;
  return g;
}

// dot_fixed over W lanes of one precision, W fixed: one accumulator per lane, kept in registers,
// the inner loop over the lanes (contiguous in the lane-major draws) vectorized. fp32 in index
// order, every operation rounded, as dot_fixed's.
template <bool F32, size_t W>
void dot_group(const double* a, int64_t sa, const double* b, int64_t sb, int64_t n, double* acc) {
  using T = std::conditional_t<F32, float, double>;
  T s[W];
  for (size_t p = 0; p < W; ++p) s[p] = T(acc[p]);
  for (int64_t k = 0; k < n; ++k) {
    const double *x = a + k * sa, *y = b + k * sb;
    for (size_t p = 0; p < W; ++p) s[p] += T(x[p] * y[p]);
  }
  for (size_t p = 0; p < W; ++p) acc[p] = double(s[p]);
}

void dot_lanes(const double* a, int64_t sa, const double* b, int64_t sb, int64_t n, const std::vector<uint8_t>& f32,
               double* acc) {
  size_t lanes = f32.size();
  bool same = std::all_of(f32.begin(), f32.end(), [&](uint8_t x) { return x == f32[0]; });
  if (same && lanes == 1) return dot_fixed<1>(a, sa, b, sb, n, f32[0], acc);
  if (same && lanes == 2) return dot_fixed<2>(a, sa, b, sb, n, f32[0], acc);
  for (auto [lo, hi] : lane_groups(f32)) {
    size_t g = lo;
    for (; g + 8 <= hi; g += 8)
      if (f32[lo]) dot_group<true, 8>(a + g, sa, b + g, sb, n, acc + g);
      else dot_group<false, 8>(a + g, sa, b + g, sb, n, acc + g);
    for (; g + 4 <= hi; g += 4)
      if (f32[lo]) dot_group<true, 4>(a + g, sa, b + g, sb, n, acc + g);
      else dot_group<false, 4>(a + g, sa, b + g, sb, n, acc + g);
    for (; g < hi; ++g) dot_fixed<1>(a + g, sa, b + g, sb, n, f32[g], acc + g);
  }
}

// One operand of a convolution's sum (aten::Products with runs) in its draws: term (r, t) reads
// base[(r * run_stride + tap[t] * tap_scale) * lanes + p] (a logical layout: run_stride is the
// channel stride, tap_scale 1; runs-innermost: 1 and the number of runs, see DrawCache).
struct RunOperand {
  const double* base;
  int64_t run_stride, tap_scale;
  const int64_t* taps;
  bool innermost;  // from runs-innermost draws
};

// W lanes from lane g, W fixed: the accumulators stay in registers across the terms.
template <bool F32, size_t W>
void dot_runs_group(const RunOperand& a, const RunOperand& b, const std::vector<int64_t>& ta,
                    const std::vector<int64_t>& tb, int64_t ra, int64_t rb, size_t taps, int64_t runs, size_t g,
                    double* acc) {
  using T = std::conditional_t<F32, float, double>;
  T s[W];
  for (size_t p = 0; p < W; ++p) s[p] = T(acc[g + p]);
  if constexpr (!F32) {
    // fp64 has no order to keep: tap by tap, its runs one after the other (contiguous in
    // runs-innermost draws) instead of a jump between taps per term.
    for (size_t t = 0; t < taps; ++t) {
      const double* x = a.base + ta[t] + int64_t(g);
      const double* y = b.base + tb[t] + int64_t(g);
      for (int64_t r = 0; r < runs; ++r, x += ra, y += rb)
        for (size_t p = 0; p < W; ++p) s[p] += x[p] * y[p];
    }
  } else {
    for (int64_t r = 0; r < runs; ++r) {
      const double* ar = a.base + r * ra + int64_t(g);
      const double* br = b.base + r * rb + int64_t(g);
      for (size_t t = 0; t < taps; ++t) {
        const double *x = ar + ta[t], *y = br + tb[t];
        for (size_t p = 0; p < W; ++p) s[p] += T(x[p] * y[p]);
      }
    }
  }
  for (size_t p = 0; p < W; ++p) acc[g + p] = double(s[p]);
}

void dot_runs_lane(const RunOperand& a, const RunOperand& b, const std::vector<int64_t>& ta,
                   const std::vector<int64_t>& tb, int64_t ra, int64_t rb, size_t taps, int64_t runs, int64_t p,
                   bool f32, double* acc) {
  if (f32) {
    auto s = float(acc[p]);
    for (int64_t r = 0; r < runs; ++r) {
      const double* ar = a.base + r * ra + p;
      const double* br = b.base + r * rb + p;
      for (size_t t = 0; t < taps; ++t) s += float(ar[ta[t]] * br[tb[t]]);
    }
    acc[p] = double(s);
    return;
  }
  double s0 = 0, s1 = 0;  // the fused loop's order: one lane's value never depends on the other's
  for (int64_t r = 0; r < runs; ++r) {
    const double* ar = a.base + r * ra + p;
    const double* br = b.base + r * rb + p;
    size_t t = 0;
    for (; t + 2 <= taps; t += 2) {
      s0 += ar[ta[t]] * br[tb[t]];
      s1 += ar[ta[t + 1]] * br[tb[t + 1]];
    }
    if (t < taps) s0 += ar[ta[t]] * br[tb[t]];
  }
  acc[p] += s0 + s1;
}

// The sum over r < runs, then t < taps, of a's term (r, t) times b's, added to acc[p] for each lane
// p of the lane-major draws. fp32: in that order, every operation rounded (the float sum of two
// floats is their double sum rounded once, as the generic loop computes it; the product of two
// floats is exact in double, rounded once to float); fp64: in that order, in two partial sums (even
// and odd taps). Runs-innermost draws (DrawCache) keep the lines of a tap's next runs in L1.
void dot_runs(const RunOperand& a, const RunOperand& b, size_t taps, int64_t runs, const std::vector<uint8_t>& f32,
              double* acc) {
  const auto nl = int64_t(f32.size());
  std::vector<int64_t> ta(taps), tb(taps);  // the taps' offsets in doubles
  for (size_t t = 0; t < taps; ++t) ta[t] = a.taps[t] * a.tap_scale * nl, tb[t] = b.taps[t] * b.tap_scale * nl;
  const int64_t ra = a.run_stride * nl, rb = b.run_stride * nl;
  if (nl == 2 && !f32[0] && f32[1]) {  // the check's point: fp64 and fp32 lanes in one pass over the draws
    double s0 = 0, s1 = 0;
    auto s = float(acc[1]);
    for (int64_t r = 0; r < runs; ++r) {
      const double* ar = a.base + r * ra;
      const double* br = b.base + r * rb;
      size_t t = 0;
      for (; t + 2 <= taps; t += 2) {
        const double *x0 = ar + ta[t], *y0 = br + tb[t], *x1 = ar + ta[t + 1], *y1 = br + tb[t + 1];
        s0 += x0[0] * y0[0];
        s += float(x0[1] * y0[1]);
        s1 += x1[0] * y1[0];
        s += float(x1[1] * y1[1]);
      }
      if (t < taps) s0 += ar[ta[t]] * br[tb[t]], s += float(ar[ta[t] + 1] * br[tb[t] + 1]);
    }
    acc[0] += s0 + s1;
    acc[1] = double(s);
    return;
  }
  // Many lanes of one precision (the falsification tier's points): a group's lanes summed together,
  // the inner loop over the lanes; each lane in the order the per-lane loops below use (fp32: run
  // by run, tap by tap, rounded; fp64: up to reassociation).
  if (nl >= 3) {
    for (auto [lo, hi] : lane_groups(f32)) {
      size_t g = lo;
      for (; g + 8 <= hi; g += 8)
        if (f32[lo]) dot_runs_group<true, 8>(a, b, ta, tb, ra, rb, taps, runs, g, acc);
        else dot_runs_group<false, 8>(a, b, ta, tb, ra, rb, taps, runs, g, acc);
      for (; g + 4 <= hi; g += 4)
        if (f32[lo]) dot_runs_group<true, 4>(a, b, ta, tb, ra, rb, taps, runs, g, acc);
        else dot_runs_group<false, 4>(a, b, ta, tb, ra, rb, taps, runs, g, acc);
      for (; g < hi; ++g) dot_runs_lane(a, b, ta, tb, ra, rb, taps, runs, int64_t(g), f32[g], acc);
    }
    return;
  }
  for (int64_t p = 0; p < nl; ++p) dot_runs_lane(a, b, ta, tb, ra, rb, taps, runs, p, f32[size_t(p)], acc);
}

}  // namespace

// Shared inputs read by sums of products, drawn once per element and point and kept lane-major
// (element l's values at l * lanes): a GEMM's x row is read once per output column, a
// convolution's input once per output tap. Drawn a chunk at a time (under the mutex; the chunk's
// flag published with release order, so readers that see it set read its values without the lock);
// the storage is allocated uninitialised, so only drawn chunks take memory.
// With runs (a convolution's operand, read as runs of `runs` elements `run_stride` apart: its input
// channels), the elements are stored runs-innermost: in each block of run_stride * runs elements,
// element r * run_stride + s is kept at s * runs + r, so that one tap's input channels are
// contiguous (in the logical layout they are a channel's plane apart: one cache line and one
// page per term). A block is one chunk.
struct DrawCache {
  static constexpr int kChunkBits = 12;
  int64_t numel, chunk, run_stride, runs;
  std::unique_ptr<double[]> values;
  std::unique_ptr<std::atomic<uint8_t>[]> drawn;  // by chunk
  std::unique_ptr<std::atomic<uint32_t>[]> spot;   // by chunk: its elements drawn one at a time so far
  std::mutex mu;
  DrawCache(int64_t n, size_t lanes, int64_t stride = 0, int64_t nruns = 0)
      : numel(n), chunk(nruns ? stride * nruns : int64_t(1) << kChunkBits), run_stride(stride), runs(nruns),
        values(new double[size_t(n) * lanes]), drawn(new std::atomic<uint8_t>[size_t(n / chunk) + 1]),
        spot(new std::atomic<uint32_t>[size_t(n / chunk) + 1]) {
    for (size_t c = 0; c <= size_t(n / chunk); ++c) {
      drawn[c].store(0, std::memory_order_relaxed);
      spot[c].store(0, std::memory_order_relaxed);
    }
  }
  // Where logical element l is stored (in elements; times lanes for its values).
  int64_t place(int64_t l) const {
    if (!runs) return l;
    int64_t in = l % chunk;
    return l - in + in % run_stride * runs + in / run_stride;
  }
};

// Keyed by both operands' leaf tensors, first logical index and step, the count, and the points with
// their precisions. Also the draws of shared inputs (the same numbers in both programs: keyed by the
// input's name), by points and precisions, draw key and size.
struct ProductsCache {
  using Key = std::array<int64_t, 9>;
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = 0;
      for (int64_t x : k) h = smt::PointSampler::mix(h ^ uint64_t(x));
      return h;
    }
  };
  std::mutex mu;
  std::unordered_map<Key, std::vector<double>, KeyHash> sums;
  std::map<std::array<uint64_t, 5>, std::shared_ptr<DrawCache>> draws;  // also by layout
};

std::shared_ptr<ProductsCache> make_products_cache() { return std::make_shared<ProductsCache>(); }

struct NumericEvaluator::Impl {
  Lowering& low;
  NumericOptions opt;
  size_t npoints;
  Stats stats;

  // (value, storage element) -> offset of its npoints values in `pool`
  std::unordered_map<std::pair<int32_t, int64_t>, size_t, KeyHash> memo;
  std::vector<double> pool;
  // leaf draws keyed per ir tensor: smt::name_key of its name, looked up once
  std::unordered_map<int32_t, uint64_t> draw_key;
  std::vector<smt::PointSampler> samplers;  // per point
  uint64_t points_key = 0;                   // seed, bound, points and precisions, for ProductsCache keys
  std::vector<uint8_t> f32;                  // per point: evaluated in IEEE fp32
  std::vector<size_t> same_point;            // per lane: the first lane at the same point (itself if none)
  // Sums of products handed over whole (aten::Products): their values, npoints each, read back through
  // the leaf products_tensor[k] of the template; operands they found without a value yet.
  int32_t products_tensor = -1;
  std::vector<double> products_values;
  std::vector<std::pair<int32_t, int64_t>> products_missing;
  Lowering::ProductsHook hook;
  // Kernel-written elements and shared cells (opt.kernel_threads), reading operands through `reader`.
  std::unique_ptr<KernelNumeric> kernels;
  KernelNumeric::Reader reader;
  std::vector<double> kernel_out;

  // Scratch context of the templates, with one evaluator per point sharing its nodes' values.
  std::unique_ptr<ir::Context> scratch;
  std::vector<ir::Env> envs;
  std::vector<ir::Evaluator> evals;
  std::vector<uint8_t> resolved;   // by node id: every leaf below has a value
  std::vector<uint32_t> seen;      // by node id: walk epoch
  uint32_t epoch = 0;
  uint64_t generation = 0;         // bumped with each new scratch context
  size_t scratch_base = 0;

  Impl(Lowering& l, NumericOptions o) : low(l), opt(std::move(o)), npoints(opt.points.size()) {
    if (npoints == 0) throw std::invalid_argument("numeric evaluation needs at least one point");
    for (unsigned p : opt.points) samplers.emplace_back(opt.seed, p, opt.bound);
    for (size_t p = 0; p < npoints; ++p)
      same_point.push_back(size_t(std::find(opt.points.begin(), opt.points.end(), opt.points[p]) - opt.points.begin()));
    points_key = smt::PointSampler::mix(opt.seed ^ std::hash<double>()(opt.bound));
    if (!opt.precisions.empty() && opt.precisions.size() != npoints)
      throw std::invalid_argument("numeric evaluation: one precision per point");
    for (size_t p = 0; p < npoints; ++p)
      f32.push_back((opt.precisions.empty() ? opt.precision : opt.precisions[p]) == ir::Precision::F32);
    for (size_t p = 0; p < npoints; ++p)
      points_key = smt::PointSampler::mix(points_key ^ (uint64_t(opt.points[p]) << 1 | f32[p]));
    if (opt.products_path != NumericOptions::ProductsPath::Tight)  // fp64 sums differ in the last bits
      points_key = smt::PointSampler::mix(points_key ^ uint64_t(opt.products_path));
    hook = [this](const aten::Products& pr) { return products(pr); };
    if (opt.kernel_threads) {
      KernelNumeric::Options ko{opt.seed, opt.points, opt.bound, f32, {}, opt.deadline, opt.kernel_tape};
      ko.shared_of = [this](program::ValueId v) -> std::optional<KernelNumeric::SharedDraws> {
        auto sv = low.shared_view(v);  // as Access draws them: contiguous reals
        if (!sv || !sv->contiguous || sv->sort != ir::Sort::Real) return std::nullopt;
        return KernelNumeric::SharedDraws{sv->offset, sv->numel, key_of(sv->tensor)};
      };
      kernels = std::make_unique<KernelNumeric>(low, std::move(ko));
      kernel_out.resize(npoints);
      reader = [this](KernelNumeric::Key k, double* buf) -> const double* {
        if (!KernelNumeric::is_cell(k)) {
          Lowering::Source src = low.source(k.first, k.second);
          if (src.kind != Lowering::Source::Kind::Computed) {
            for (size_t p = 0; p < npoints; ++p) buf[p] = source_value(src, p);
            return buf;
          }
        }
        auto it = memo.find(k);
        return it == memo.end() ? nullptr : pool.data() + it->second;
      };
    }
    fresh_scratch();
    products_tensor = scratch->tensor("numeric:products");
  }

  ~Impl() {
    if (scratch) low.forget_context(*scratch);
  }

  void fresh_scratch() {
    if (scratch) {
      low.forget_context(*scratch);
      stats.template_nodes += scratch->num_nodes() - scratch_base;
      ++stats.recycles;
    }
    evals.clear();
    envs.clear();
    scratch = std::make_unique<ir::Context>();
    ir::set_limits(*scratch, {SIZE_MAX, opt.deadline});
    // Templates are only evaluated, never compared: sums stay as the equations write them. Flattened,
    // a batch variance's (x_i - mean) would copy the statistic's 10^5-10^6 terms into every one of
    // its 10^5-10^6 terms (quadratic: the whole budget goes there).
    for (ir::Rule r : {ir::Rule::AddFlatten, ir::Rule::MulDistributeConst, ir::Rule::MulDistributeSmall,
                      ir::Rule::MulSumContent})
      scratch->set_rule_enabled(r, false);
    scratch_base = scratch->num_nodes();
    resolved.clear();
    seen.clear();
    products_values.clear();
    ++generation;
    envs.resize(npoints);
    for (size_t p = 0; p < npoints; ++p) {
      envs[p].elem = [this, p](int32_t t, int64_t i, ir::Sort s) { return leaf_value(t, i, s, p); };
      envs[p].var = [](std::string_view name, ir::Sort) -> ir::Value {
        throw Unsupported(fmt::format("numeric evaluation: free variable {}", name));
      };
    }
    for (size_t p = 0; p < npoints; ++p) evals.emplace_back(envs[p], f32[p] ? ir::Precision::F32 : ir::Precision::F64);
  }

  uint64_t key_of(int32_t tensor) {
    auto it = draw_key.find(tensor);
    if (it == draw_key.end()) it = draw_key.emplace(tensor, smt::name_key(scratch->tensor_name(tensor))).first;
    return it->second;
  }

  // A source leaf's value at point p (shared input, outside data, captured constant).
  double source_value(const Lowering::Source& src, size_t p) {
    if (src.kind == Lowering::Source::Kind::Constant) return src.constant;
    double v = to_number(samplers[p](key_of(src.tensor), src.index, src.sort));
    return f32[p] && src.sort == ir::Sort::Real ? double(float(v)) : v;
  }

  // The value of a template leaf T[i] at point p: a source drawn on the spot, else the memoized
  // value of the operand element it stands for (resolve() made sure it is there).
  // The deadline, looked at every 4096 calls from the loops that run long without building nodes
  // (template walks, evaluation of a statistic's million leaves).
  uint32_t ticks = 0;
  void tick() {
    if ((++ticks & 4095) == 0 && std::chrono::steady_clock::now() > opt.deadline)
      throw OutOfTime("numeric evaluation of the location ran past the budget");
  }

  ir::Value leaf_value(int32_t t, int64_t i, ir::Sort s, size_t p) {
    tick();
    if (t == products_tensor) return ir::Value::of_real(products_values.at(size_t(i) * npoints + p));
    auto op = low.operand(t, i);
    if (!op) throw Unsupported(fmt::format("numeric evaluation: tensor {} is no value of {}",
                                           scratch->tensor_name(t), low.program().name));
    Lowering::Source src = low.source(op->value, op->index);
    if (src.kind != Lowering::Source::Kind::Computed) return from_number(source_value(src, p), s);
    auto it = memo.find({op->value, op->index});
    if (it == memo.end()) throw std::logic_error("numeric evaluation: operand read before it was evaluated");
    return from_number(pool[it->second + p], s);
  }

  static constexpr size_t kCachedDraws = size_t(64) << 20;  // doubles (512 MB) per tensor at most
  std::map<std::array<int64_t, 3>, std::shared_ptr<DrawCache>> draw_cache;  // by leaf tensor and layout

  // The draw cache of a shared input in a layout (DrawCache's runs): the products cache's (shared
  // with the other program's evaluator at the same points) when there is one.
  DrawCache* draws_of(int32_t tensor, uint64_t key, int64_t numel, int64_t run_stride = 0, int64_t runs = 0) {
    auto& slot = draw_cache[{tensor, run_stride, runs}];
    if (slot) return slot.get();
    if (!opt.products_cache) return (slot = std::make_shared<DrawCache>(numel, npoints, run_stride, runs)).get();
    std::lock_guard lock(opt.products_cache->mu);
    auto& shared =
        opt.products_cache->draws[{points_key, key, uint64_t(numel), uint64_t(run_stride), uint64_t(runs)}];
    if (!shared) shared = std::make_shared<DrawCache>(numel, npoints, run_stride, runs);
    return (slot = shared).get();
  }

  // How one operand tensor of a sum of products is read: shared inputs drawn on the spot (the
  // common case: x and W of a GEMM), anything else through source() and the memo.
  struct Access {
    Impl& im;
    program::ValueId value = program::kNoValue;
    std::optional<Lowering::SharedView> shared;
    uint64_t key = 0;
    DrawCache* cache = nullptr;

    Access(Impl& i, int32_t t) : im(i) {
      auto op = im.low.operand(t, 0);
      if (!op) throw Unsupported(fmt::format("numeric evaluation: tensor {} is no value of {}",
                                             im.scratch->tensor_name(t), im.low.program().name));
      value = op->value;
      shared = im.low.shared_view(value);
      if (shared && !(shared->contiguous && shared->sort == ir::Sort::Real)) shared.reset();
      if (!shared) return;
      key = im.key_of(shared->tensor);
      if (size_t(shared->numel) * im.npoints <= kCachedDraws) {
        cache = im.draws_of(shared->tensor, key, shared->numel);
      }
    }
    void draw(int64_t l, double* out) const {
      uint64_t leaf = smt::PointSampler::leaf_hash(key, l);
      double raw[64];  // a point's draw once for its fp64 and fp32 lanes (a Normal draw costs log1p and cos)
      for (size_t p = 0; p < im.npoints; ++p) {
        size_t same = p < 64 ? im.same_point[p] : p;
        double v = same < p ? raw[same] : im.samplers[p].real_of(leaf);
        if (p < 64) raw[p] = v;
        out[p] = im.f32[p] ? double(float(v)) : v;
      }
    }
    // Logical elements [lo, hi] of the shared tensor drawn into `c` (the cache by default): its
    // values, lane-major in c's layout.
    const double* drawn(int64_t lo, int64_t hi, DrawCache* c = nullptr) {
      if (!c) c = cache;
      for (int64_t k = lo / c->chunk; k <= hi / c->chunk; ++k) {
        if (c->drawn[size_t(k)].load(std::memory_order_acquire)) continue;
        std::lock_guard lock(c->mu);
        if (c->drawn[size_t(k)].load(std::memory_order_relaxed)) continue;
        int64_t end = std::min(shared->numel, (k + 1) * c->chunk);
        for (int64_t l = k * c->chunk; l < end; ++l) draw(l, c->values.get() + size_t(c->place(l)) * im.npoints);
        im.stats.draws += uint64_t(end - k * c->chunk);
        c->drawn[size_t(k)].store(1, std::memory_order_release);
      }
      return c->values.get();
    }
    // Whether reading `count` elements spread over logical [lo, hi] through the cache would draw far
    // more than it reads: a strided operand (a transposed GEMM's column) touches a chunk per element,
    // and drawing those chunks draws the whole tensor for one location. Drawn on the spot instead,
    // one location costs its cone (the values are the same: a draw depends on the element only).
    // Chunks count as cold until a quarter of them has been drawn one element at a time (spot_draw):
    // many locations reading the same strided operand then draw it once, as before.
    bool sparse(int64_t lo, int64_t hi, int64_t count) const {
      if (!cache) return true;
      int64_t cold = 0;
      for (int64_t k = lo / cache->chunk; k <= hi / cache->chunk; ++k)
        cold += !cache->drawn[size_t(k)].load(std::memory_order_relaxed) && !warm(size_t(k));
      return cold * cache->chunk > 8 * count + cache->chunk;
    }
    bool warm(size_t k) const {
      return cache->spot[k].load(std::memory_order_relaxed) >= uint32_t(cache->chunk / 4);
    }
    // Logical element l drawn alone into out, counted against its chunk.
    void spot_draw(int64_t l, double* out) const {
      if (cache) cache->spot[size_t(l / cache->chunk)].fetch_add(1, std::memory_order_relaxed);
      draw(l, out);
    }
    // The values of storage element j at every point (buf holds them when they are computed here);
    // nullptr (and the element noted as missing) when it has no value yet.
    const double* values(int64_t j, double* buf) {
      if (shared && j >= shared->offset && j - shared->offset < shared->numel) {
        int64_t l = j - shared->offset;
        // an element is drawn alone until its chunk has been read a quarter of its size one element at
        // a time, then the whole chunk: a column read (one element per chunk) costs its elements, not
        // the tensor, and a row read often draws its chunks once
        if (cache && (cache->drawn[size_t(l / cache->chunk)].load(std::memory_order_acquire) ||
                      warm(size_t(l / cache->chunk))))
          return drawn(l, l) + size_t(l) * im.npoints;
        spot_draw(l, buf);
        return buf;
      }
      Lowering::Source src = im.low.source(value, j);
      if (src.kind != Lowering::Source::Kind::Computed) {
        for (size_t p = 0; p < im.npoints; ++p) buf[p] = im.source_value(src, p);
        return buf;
      }
      auto it = im.memo.find({value, j});
      if (it == im.memo.end()) {
        im.products_missing.push_back({value, j});
        return nullptr;
      }
      return im.pool.data() + it->second;
    }
  };

  // A convolution operand's runs (first + r * step + taps[t]) in the draws: runs-innermost when its
  // blocks allow (every run inside one block of step * runs elements, at one offset in it), else in
  // the logical layout. x must be drawn and its extent inside the shared tensor.
  RunOperand run_operand(Access& x, int64_t first, int64_t step, int64_t runs, const std::vector<int64_t>& taps,
                         std::pair<int64_t, int64_t> extent) {
    int64_t numel = x.shared->numel, u = first - x.shared->offset;
    auto [lo, hi] = std::minmax_element(taps.begin(), taps.end());
    // one run (a single input channel) is the logical layout already: drawing its whole block would
    // draw the whole tensor per location (a 10^7-pixel image: 1-2 s), not the extent the taps read
    bool blocks = runs > 1 && step > 0 && u >= 0 && step <= numel / runs && numel % (step * runs) == 0;
    if (opt.products_path == NumericOptions::ProductsPath::Tight && blocks && size_t(numel) * npoints <= kCachedDraws) {
      int64_t block = step * runs, in = u % block;
      if (in < step && in + *lo >= 0 && in + *hi < step) {
        DrawCache* c = draws_of(x.shared->tensor, x.key, numel, step, runs);
        const double* v = x.drawn(u - in, u - in + block - 1, c);
        return {v + (u - in + in * runs) * int64_t(npoints), 1, runs, taps.data(), true};
      }
    }
    const double* v = x.drawn(extent.first - x.shared->offset, extent.second - x.shared->offset);
    return {v + u * int64_t(npoints), step, 1, taps.data(), false};
  }

  // The sum's added term c[c_index] (a convolution's bias), added last as the template's add of
  // the two would (rounded in fp32).
  void add_c(const aten::Products& pr, std::vector<double>& acc) {
    if (pr.c_tensor < 0) return;
    std::vector<double> buf(npoints);
    const double* cv = Access(*this, pr.c_tensor).values(pr.c_index, buf.data());
    if (!cv) return;  // noted as missing: the template is built again once it has a value
    for (size_t p = 0; p < npoints; ++p) acc[p] = f32[p] ? double(float(acc[p] + cv[p])) : acc[p] + cv[p];
  }

  ir::Expr products(const aten::Products& pr) {
    bool runs = pr.runs > 0;
    auto short_list = [&](const std::vector<int64_t>& l) { return !l.empty() && int64_t(l.size()) < pr.count; };
    if (runs ? pr.a_list.size() != pr.b_list.size() || pr.a_list.empty() ||
                   pr.count != pr.runs * int64_t(pr.a_list.size())
             : short_list(pr.a_list) || short_list(pr.b_list))
      throw Unsupported("numeric evaluation: a sum of products whose index lists do not match its count");
    Access a(*this, pr.a_tensor), b(*this, pr.b_tensor);
    std::vector<double> acc(npoints, 0.0), abuf(npoints), bbuf(npoints);
    auto leaf = [&](const std::vector<double>& values) {
      size_t slot = products_values.size() / npoints;
      products_values.insert(products_values.end(), values.begin(), values.end());
      return scratch->elem(products_tensor, int64_t(slot), ir::Sort::Real);
    };
    // The lowest and highest flat index an operand reads, when its indices have that form (affine, or runs).
    using Extent = std::optional<std::pair<int64_t, int64_t>>;
    auto extent = [&](const std::vector<int64_t>& list, int64_t first, int64_t step) -> Extent {
      if (pr.count <= 0) return std::nullopt;
      if (!runs) {
        if (!list.empty()) return std::nullopt;
        int64_t last = first + step * (pr.count - 1);
        return std::pair{std::min(first, last), std::max(first, last)};
      }
      auto [lo, hi] = std::minmax_element(list.begin(), list.end());
      int64_t span = step * (pr.runs - 1);
      return std::pair{first + std::min<int64_t>(0, span) + *lo, first + std::max<int64_t>(0, span) + *hi};
    };
    auto ea = extent(pr.a_list, pr.a_first, pr.a_step), eb = extent(pr.b_list, pr.b_first, pr.b_step);
    auto inside = [](const Access& x, const Extent& e) {
      return e && x.shared && e->first >= x.shared->offset && e->second - x.shared->offset < x.shared->numel;
    };
    bool shared_only = inside(a, ea) && inside(b, eb);
    // Over shared inputs only: the same sum in both programs.
    std::optional<ProductsCache::Key> cache_key;
    if (opt.products_cache && shared_only) {
      uint64_t taps = 0;  // the runs' taps, hashed (0: an affine sum)
      if (runs) {
        taps = smt::PointSampler::mix(uint64_t(pr.runs) ^ (uint64_t(pr.a_list.size()) << 32));
        for (size_t t = 0; t < pr.a_list.size(); ++t)
          taps = smt::PointSampler::mix(smt::PointSampler::mix(taps ^ uint64_t(pr.a_list[t])) ^
                                        uint64_t(pr.b_list[t]));
        taps |= 1;
      }
      cache_key = ProductsCache::Key{int64_t(a.key), pr.a_first - a.shared->offset, pr.a_step, int64_t(b.key),
                                     pr.b_first - b.shared->offset, pr.b_step, pr.count,
                                     int64_t(points_key), int64_t(taps)};
      bool hit = false;
      {
        std::lock_guard lock(opt.products_cache->mu);
        if (auto it = opt.products_cache->sums.find(*cache_key); it != opt.products_cache->sums.end())
          acc = it->second, hit = true;
      }
      if (hit) {
        add_c(pr, acc);  // (draws_of takes the cache's lock)
        return leaf(acc);
      }
    }
    stats.products += uint64_t(pr.count);
    if (pr.count > 4096) tick();
    if (shared_only && a.cache && b.cache && opt.products_path != NumericOptions::ProductsPath::Generic) {
      stats.tight += uint64_t(pr.count);
      // Both operands drawn shared inputs (a GEMM row times a weight row, a convolution's input
      // channels times its weights): a tight loop over their lane-major draws.
      if (runs) {
        RunOperand ra = run_operand(a, pr.a_first, pr.a_step, pr.runs, pr.a_list, *ea),
                   rb = run_operand(b, pr.b_first, pr.b_step, pr.runs, pr.b_list, *eb);
        if (ra.innermost && rb.innermost) stats.runs_innermost += uint64_t(pr.count);
        dot_runs(ra, rb, pr.a_list.size(), pr.runs, f32, acc.data());
      } else {
        std::vector<double> compact_a, compact_b;
        auto lanes = [&](Access& x, const Extent& e, int64_t first, int64_t step,
                         std::vector<double>& compact) -> std::pair<const double*, int64_t> {
          int64_t lo = e->first - x.shared->offset, hi = e->second - x.shared->offset, u = first - x.shared->offset;
          if (!x.sparse(lo, hi, pr.count))
            return {x.drawn(lo, hi) + u * int64_t(npoints), step * int64_t(npoints)};
          compact.resize(size_t(pr.count) * npoints);
          for (int64_t k = 0; k < pr.count; ++k) x.spot_draw(u + k * step, compact.data() + size_t(k) * npoints);
          stats.draws += uint64_t(pr.count);
          return {compact.data(), int64_t(npoints)};
        };
        auto [pa, sa] = lanes(a, ea, pr.a_first, pr.a_step, compact_a);
        auto [pb, sb] = lanes(b, eb, pr.b_first, pr.b_step, compact_b);
        dot_lanes(pa, sa, pb, sb, pr.count, f32, acc.data());
      }
    } else {
      auto index = [&](const std::vector<int64_t>& list, int64_t first, int64_t step, int64_t k) {
        if (runs) {
          auto taps = int64_t(list.size());
          return first + k / taps * step + list[size_t(k % taps)];
        }
        return list.empty() ? first + k * step : list[size_t(k)];
      };
      for (int64_t k = 0; k < pr.count; ++k) {
        if ((k & 65535) == 65535) tick();
        const double* av = a.values(index(pr.a_list, pr.a_first, pr.a_step, k), abuf.data());
        const double* bv = b.values(index(pr.b_list, pr.b_first, pr.b_step, k), bbuf.data());
        if (!av || !bv) continue;
        for (size_t p = 0; p < npoints; ++p)
          acc[p] = f32[p] ? double(float(acc[p] + double(float(av[p] * bv[p])))) : acc[p] + av[p] * bv[p];
      }
    }
    if (cache_key) {
      std::lock_guard lock(opt.products_cache->mu);
      opt.products_cache->sums.emplace(*cache_key, acc);
    }
    add_c(pr, acc);
    return leaf(acc);
  }

  // The operand elements below `root` that still need a value, appended to `missing`; when none
  // do, the walked nodes are marked resolved so that a statistic shared by many templates is
  // walked once.
  void missing_operands(ir::Expr root, std::pair<int32_t, int64_t> self,
                        std::vector<std::pair<int32_t, int64_t>>& missing) {
    size_t n = scratch->num_nodes() + 1;
    if (resolved.size() < n) resolved.resize(n * 2, 0), seen.resize(n * 2, 0);
    if (resolved[root->id]) return;
    ++epoch;
    std::vector<ir::Expr> stack{root}, visited;
    size_t missing0 = missing.size();
    while (!stack.empty()) {
      ir::Expr e = stack.back();
      stack.pop_back();
      if (resolved[e->id] || seen[e->id] == epoch) continue;
      seen[e->id] = epoch;
      tick();
      visited.push_back(e);
      switch (e->op) {
        case ir::Op::TensorElem: {
          if (e->tensor() == products_tensor) break;
          auto op = low.operand(e->tensor(), e->index());
          if (!op) break;  // leaf_value names it when evaluated
          std::pair<int32_t, int64_t> key{op->value, op->index};
          if (key == self)
            throw Unsupported("numeric evaluation: an element is computed from its own earlier contents");
          if (!memo.count(key) && low.source(op->value, op->index).kind == Lowering::Source::Kind::Computed)
            missing.push_back(key);
          break;
        }
        case ir::Op::Load:
          throw Unsupported("numeric evaluation: a memory index depends on tensor data (" +
                            ir::to_string(*scratch, e, {.max_nodes = 12}) + ")");
        default:
          for (ir::Expr c : e->args()) stack.push_back(c);
      }
    }
    if (missing.size() == missing0)
      for (ir::Expr e : visited) resolved[e->id] = 1;
  }

  void resolve(int32_t value, int64_t j) {
    struct Frame {
      std::pair<int32_t, int64_t> key;
      ir::Expr tmpl = nullptr;
      uint64_t generation = 0;
      bool not_kernel = false;  // KernelNumeric left it to the template path
    };
    std::vector<Frame> stack{{{value, j}}};
    std::vector<std::pair<int32_t, int64_t>> missing;
    uint32_t steps = 0;
    while (!stack.empty()) {
      if ((++steps & 1023) == 0 && std::chrono::steady_clock::now() > opt.deadline)
        throw OutOfTime("numeric evaluation of the location ran past the budget");
      Frame& f = stack.back();
      if (memo.count(f.key)) {
        stack.pop_back();
        continue;
      }
      if (kernels && !f.not_kernel) {
        missing.clear();
        switch (kernels->evaluate(f.key, reader, missing, kernel_out.data())) {
          case KernelNumeric::Outcome::Done:
            memo.emplace(f.key, pool.size());
            pool.insert(pool.end(), kernel_out.begin(), kernel_out.end());
            if (!KernelNumeric::is_cell(f.key)) ++stats.elements, ++stats.kernel_elements;
            stack.pop_back();
            continue;
          case KernelNumeric::Outcome::Missing:
            for (const auto& m : missing) stack.push_back({m});  // f is invalid from here on
            continue;
          case KernelNumeric::Outcome::NotHere:
            f.not_kernel = true;
            break;
        }
      }
      if (!f.tmpl || f.generation != generation) {
        if (scratch->num_nodes() - scratch_base > opt.scratch_nodes) fresh_scratch();
        try {
          products_missing.clear();
          f.tmpl = low.element_template(*scratch, f.key.first, f.key.second, hook);
        } catch (const ir::LimitExceeded&) {
          // The deadline, or the node cap of the lowering's own context (a kernel's writes are
          // specialized there before their import): only the first is the budget running out.
          if (std::chrono::steady_clock::now() > opt.deadline)
            throw OutOfTime("numeric evaluation of the location ran past the budget");
          throw;
        }
        f.generation = generation;
        if (!products_missing.empty()) {  // a sum of products read operands without values: them first
          f.tmpl = nullptr;
          auto pending = std::move(products_missing);
          products_missing.clear();
          for (const auto& m : pending) stack.push_back({m});  // f is invalid from here on
          continue;
        }
      }
      size_t off = pool.size();
      if (f.tmpl->op == ir::Op::TensorElem && f.tmpl->tensor() == products_tensor) {
        // The element is one sum of products (a convolution with its bias): its values as the
        // evaluators would read the leaf, without a memo entry per point for a node read once.
        for (size_t p = 0; p < npoints; ++p)
          pool.push_back(products_values.at(size_t(f.tmpl->index()) * npoints + p));
        memo.emplace(f.key, off);
        ++stats.elements;
        stack.pop_back();
        continue;
      }
      missing.clear();
      missing_operands(f.tmpl, f.key, missing);
      if (!missing.empty()) {
        for (const auto& m : missing) stack.push_back({m});  // f is invalid from here on
        continue;
      }
      for (size_t p = 0; p < npoints; ++p) pool.push_back(to_number(evals[p](f.tmpl)));
      memo.emplace(f.key, off);
      ++stats.elements;
      stack.pop_back();
    }
  }

  NumericEvaluator::Size estimate(const program::View& view, int64_t logical, size_t stop_nodes) {
    const program::SsaProgram& prog = low.program();
    auto computed = [&](program::ValueId v, int64_t j) {
      return low.source(v, j).kind == Lowering::Source::Kind::Computed;
    };
    auto numel = [&](program::ValueId v) {  // the elements its producer writes (a cap on what is needed)
      double n = 0;
      const program::Value& val = prog.value(v);
      if (val.producer < 0) return std::numeric_limits<double>::infinity();
      for (const auto& w : prog.ops[size_t(val.producer)].writes)
        if (w.after == v)
          for (const auto& r : w.regions) {
            double e = 1;
            for (int64_t d : r.shape) e *= double(d);
            n += e;
          }
      return n > 0 ? n : std::numeric_limits<double>::infinity();
    };
    struct Info {
      int64_t element = 0;
      double products = 0;                                  // of one element
      std::vector<std::pair<program::ValueId, double>> reads;  // distinct computed operand elements by value
    };
    std::map<program::ValueId, Info> info;
    NumericEvaluator::Size size;
    int64_t j0 = storage_of_logical(view, logical);
    if (!computed(view.value, j0)) return size;
    info[view.value].element = j0;
    std::vector<program::ValueId> work{view.value};
    const int32_t counted = scratch->tensor("numeric:estimate");
    int64_t slot = 0;
    size_t template_nodes = 0;
    while (!work.empty()) {
      if (template_nodes > stop_nodes) {  // the templates alone are that large: so is the location
        size.template_nodes = template_nodes;
        size.stopped = true;
        break;
      }
      program::ValueId v = work.back();
      work.pop_back();
      int32_t producer = prog.value(v).producer;
      if (producer >= 0 && std::holds_alternative<bundle::LaunchOp>(prog.ops[size_t(producer)].op)) continue;
      double products = 0;
      Lowering::ProductsHook count = [&](const aten::Products& pr) {
        products += double(pr.count);
        return scratch->elem(counted, slot++, ir::Sort::Real);
      };
      if (scratch->num_nodes() - scratch_base > opt.scratch_nodes) fresh_scratch();
      size_t nodes0 = scratch->num_nodes();
      ir::Expr t = low.element_template(*scratch, v, info[v].element, count);
      template_nodes += scratch->num_nodes() - nodes0;
      // Its distinct operand leaves, by value (a walk over the template, explicit stack).
      std::vector<uint8_t> visited(scratch->num_nodes() + 1, 0);
      std::map<program::ValueId, std::pair<double, int64_t>> reads;  // count, first element
      std::vector<ir::Expr> stack{t};
      while (!stack.empty()) {
        ir::Expr e = stack.back();
        stack.pop_back();
        if (visited[e->id]) continue;
        visited[e->id] = 1;
        if (e->op == ir::Op::TensorElem) {
          auto op = low.operand(e->tensor(), e->index());
          if (op && op->value != v && computed(op->value, op->index)) {
            auto [it, fresh] = reads.try_emplace(op->value, 0.0, op->index);
            it->second.first += 1;
          }
          continue;
        }
        for (ir::Expr c : e->args()) stack.push_back(c);
      }
      Info& in = info[v];
      in.products = products;
      for (const auto& [c, r] : reads) {
        in.reads.push_back({c, r.first});
        if (info.try_emplace(c, Info{r.second, 0, {}}).second) work.push_back(c);
      }
    }
    // Elements needed of each value: a fixed point over the reads (values form a DAG; a few rounds).
    std::map<program::ValueId, double> needed{{view.value, 1.0}};
    for (int round = 0; round < 64; ++round) {
      bool changed = false;
      for (const auto& [v, in] : info) {
        double nv = needed.count(v) ? needed[v] : 0.0;
        if (nv == 0) continue;
        for (const auto& [c, reads] : in.reads) {
          double want = std::min(numel(c), std::max(reads, nv));
          if (want > needed[c]) needed[c] = want, changed = true;
        }
      }
      if (!changed) break;
    }
    for (const auto& [v, in] : info) {
      double n = needed.count(v) ? needed[v] : 0.0;
      size.elements += n;
      size.products += n * in.products;
    }
    size.values = info.size();
    size.template_nodes = template_nodes;
    return size;
  }

  std::vector<double> element(const program::View& view, int64_t logical) {
    int64_t j = storage_of_logical(view, logical);
    Lowering::Source src = low.source(view.value, j);
    std::vector<double> out(npoints);
    if (src.kind != Lowering::Source::Kind::Computed) {
      for (size_t p = 0; p < npoints; ++p) out[p] = source_value(src, p);
      return out;
    }
    resolve(view.value, j);
    size_t off = memo.at({view.value, j});
    for (size_t p = 0; p < npoints; ++p) out[p] = pool[off + p];
    return out;
  }
};

NumericEvaluator::NumericEvaluator(Lowering& lowering, NumericOptions opt)
    : impl_(std::make_unique<Impl>(lowering, std::move(opt))) {}
NumericEvaluator::~NumericEvaluator() = default;

std::vector<double> NumericEvaluator::element(const program::View& view, int64_t logical) {
  return impl_->element(view, logical);
}

NumericEvaluator::Size NumericEvaluator::estimate(const program::View& view, int64_t logical, size_t stop_nodes) {
  return impl_->estimate(view, logical, stop_nodes);
}

const NumericEvaluator::Stats& NumericEvaluator::stats() const {
  impl_->stats.template_nodes += impl_->scratch->num_nodes() - impl_->scratch_base;
  impl_->scratch_base = impl_->scratch->num_nodes();
  if (impl_->kernels) {
    impl_->stats.kernel_writers = impl_->kernels->stats().writers;
    impl_->stats.kernel_cells = impl_->kernels->stats().cells;
  }
  return impl_->stats;
}

}  // namespace dirigo::check
