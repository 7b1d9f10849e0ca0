// Pooling over the trailing 1/2/3 spatial dims: max (with indices), average
// (ceil_mode, count_include_pad, divisor_override) and adaptive average/max.
// Windows are clipped to the input at the location; padding never contributes.
#include "aten/internal.h"

namespace dirigo::aten::detail {
namespace {

void check_pool_input(const Env& e, const TensorRef& in, size_t nsp) {
  e.require(in.rank() >= nsp, "pooling input has fewer dims than spatial dims");
  e.require_rank(in.rank());
}

struct Window {
  std::vector<Index> taps;       // input indices
  std::vector<int64_t> positions;  // flat spatial position of each tap (for indices)
};

// The in-range taps of the window at the asked location: per spatial dim d,
// start_d + k * dilation_d for k < size_d.
Window window(const Env& e, const TensorRef& in, size_t nsp, const std::vector<int64_t>& start,
              const std::vector<int64_t>& size, const std::vector<int64_t>& dilation) {
  size_t lead = in.rank() - nsp;
  Window w;
  std::vector<int64_t> in_sp(in.shape.begin() + lead, in.shape.end());
  for_each_index(size, [&](const Index& k) {
    Index i(e.idx.begin(), e.idx.begin() + lead);
    Index sp(nsp);
    for (size_t d = 0; d < nsp; ++d) {
      sp[d] = start[d] + k[d] * dilation[d];
      if (sp[d] < 0 || sp[d] >= in_sp[d]) return;
    }
    i.insert(i.end(), sp.begin(), sp.end());
    w.taps.push_back(std::move(i));
    w.positions.push_back(ravel(sp, in_sp));
  });
  return w;
}

// At a symbolic location (a reduction over the pooled output): one Reduce over the kernel box, when
// every output position's window lies whole inside the input (no padding, none clipped at the far
// end), so that the box is the same at every location. Throws NotSymbolic otherwise.
Expr sym_window(const Env& e, const TensorRef& in, size_t nsp, ir::ReduceOp op, const std::vector<int64_t>& k,
                const std::vector<int64_t>& s, const std::vector<int64_t>& p, const std::vector<int64_t>& d) {
  size_t lead = in.rank() - nsp;
  uint32_t nb = 0;
  for (size_t j = 0; j < nsp; ++j) {
    int64_t L = in.shape[lead + j], O = e.output().shape[lead + j];
    if (p[j] != 0 || (O - 1) * s[j] + (k[j] - 1) * d[j] >= L) throw Env::NotSymbolic{};
    nb += k[j] > 1;
  }
  std::vector<Expr> idx;
  std::vector<std::pair<int64_t, int64_t>> box;
  for (size_t q = 0; q < lead; ++q) idx.push_back(e.coord(q, nb));
  uint32_t q = 0;
  for (size_t j = 0; j < nsp; ++j) {
    Expr at = e.cx.bv_mul(e.coord(lead + j, nb), e.bv(s[j]));
    if (k[j] > 1) {
      at = e.cx.bv_add(at, e.cx.bv_mul(e.cx.bound(nb - 1 - q++), e.bv(d[j])));
      box.emplace_back(0, k[j]);
    }
    idx.push_back(at);
  }
  return e.cx.reduce_abstracted(op, box, e.real_sym_at(in, idx));
}

Expr max_or_arg(const Env& e, const TensorRef& in, const Window& w, bool want_index, bool is_max = true) {
  if (w.taps.empty()) e.malformed("pooling window without any input element");
  std::vector<Expr> v;
  for (const auto& t : w.taps) v.push_back(e.real_at(in, t));
  if (want_index) return arg_extreme(e.cx, v, w.positions, is_max);
  return is_max ? e.cx.max(v) : e.cx.min(v);
}

Expr max_pool(const Env& e, size_t nsp) {
  const TensorRef& in = e.tensor("self");
  check_pool_input(e, in, nsp);
  auto k = spatial_ints(e, "kernel_size", nsp, std::nullopt);
  auto s = spatial_ints(e, "stride", nsp, k);
  auto p = spatial_ints(e, "padding", nsp, std::vector<int64_t>(nsp, 0));
  auto d = spatial_ints(e, "dilation", nsp, std::vector<int64_t>(nsp, 1));
  for (size_t j = 0; j < nsp; ++j) e.require(k[j] > 0 && s[j] > 0 && d[j] > 0, "kernel, stride and dilation must be positive");
  if (e.symbolic()) {
    if (e.out != 0) throw Env::NotSymbolic{};
    return sym_window(e, in, nsp, ir::ReduceOp::Max, k, s, p, d);
  }
  size_t lead = e.idx.size() - nsp;
  std::vector<int64_t> start(nsp);
  for (size_t j = 0; j < nsp; ++j) start[j] = e.idx[lead + j] * s[j] - p[j];
  return max_or_arg(e, in, window(e, in, nsp, start, k, d), e.out == 1);
}

Expr avg_pool(const Env& e, size_t nsp) {
  auto& cx = e.cx;
  const TensorRef& in = e.tensor("self");
  check_pool_input(e, in, nsp);
  auto k = spatial_ints(e, "kernel_size", nsp, std::nullopt);
  auto s = spatial_ints(e, "stride", nsp, k);
  auto p = spatial_ints(e, "padding", nsp, std::vector<int64_t>(nsp, 0));
  for (size_t j = 0; j < nsp; ++j) e.require(k[j] > 0 && s[j] > 0, "kernel and stride must be positive");
  bool include_pad = e.flag("count_include_pad", true);
  if (e.symbolic()) {  // whole windows: every divisor is the kernel's size (or the override)
    int64_t divisor = 1;
    for (size_t j = 0; j < nsp; ++j) divisor *= k[j];
    if (e.has_param("divisor_override") && e.given("divisor_override")) divisor = e.integer("divisor_override");
    if (divisor == 0) e.malformed("average pooling divisor is zero");
    Expr total = sym_window(e, in, nsp, ir::ReduceOp::Sum, k, s, p, std::vector<int64_t>(nsp, 1));
    return cx.div(total, cx.real_const(divisor));
  }
  size_t lead = e.idx.size() - nsp;
  std::vector<int64_t> start(nsp), size(nsp);
  int64_t pool_size = 1, valid = 1;
  for (size_t j = 0; j < nsp; ++j) {
    int64_t in_len = in.shape[in.rank() - nsp + j];
    int64_t st = e.idx[lead + j] * s[j] - p[j];
    int64_t en = std::min(st + k[j], in_len + p[j]);
    pool_size *= en - st;  // the window clipped to the padded input (PyTorch's count_include_pad divisor)
    int64_t cst = std::max<int64_t>(st, 0), cen = std::min(en, in_len);
    valid *= std::max<int64_t>(cen - cst, 0);
    start[j] = cst;
    size[j] = std::max<int64_t>(cen - cst, 0);
  }
  Window w = window(e, in, nsp, start, size, std::vector<int64_t>(nsp, 1));
  int64_t divisor = include_pad ? pool_size : valid;
  if (e.has_param("divisor_override") && e.given("divisor_override")) divisor = e.integer("divisor_override");
  if (divisor == 0) e.malformed("average pooling divisor is zero");
  Expr total = sum_of(e, in, w.taps);
  return cx.div(total, cx.real_const(divisor));
}

// Adaptive pooling: output o along a dim of input length L and output length O
// covers [floor(o*L/O), ceil((o+1)*L/O)).
Expr adaptive(const Env& e, size_t nsp, bool is_max) {
  auto& cx = e.cx;
  const TensorRef& in = e.tensor("self");
  check_pool_input(e, in, nsp);
  size_t lead = e.idx.size() - nsp;
  std::vector<int64_t> start(nsp), size(nsp);
  for (size_t j = 0; j < nsp; ++j) {
    int64_t L = in.shape[in.rank() - nsp + j], O = e.output().shape[lead + j];
    int64_t o = e.idx[lead + j];
    start[j] = (o * L) / O;
    size[j] = ((o + 1) * L + O - 1) / O - start[j];
  }
  Window w = window(e, in, nsp, start, size, std::vector<int64_t>(nsp, 1));
  if (is_max) return max_or_arg(e, in, w, e.out == 1);
  return cx.mul(inverse_count(e, w.taps.size()), sum_of(e, in, w.taps));
}

}  // namespace

void register_pool(Registry& r) {
  const char* maxp = "self kernel_size stride padding dilation ceil_mode";
  for (size_t n : {1, 2, 3}) {
    std::string d = std::to_string(n) + "d";
    r.add("max_pool" + d, maxp, [n](Env& e) { return max_pool(e, n); });
    r.add("max_pool" + d + "_with_indices", maxp, [n](Env& e) { return max_pool(e, n); });
    r.add("avg_pool" + d, n == 1 ? "self kernel_size stride padding ceil_mode count_include_pad"
                                 : "self kernel_size stride padding ceil_mode count_include_pad divisor_override",
          [n](Env& e) { return avg_pool(e, n); });
    for (const char* pre : {"adaptive_avg_pool", "_adaptive_avg_pool"})
      if (n > 1 || pre[0] != '_') r.add(pre + d, "self output_size", [n](Env& e) { return adaptive(e, n, false); });
    r.add("adaptive_max_pool" + d, "self output_size", [n](Env& e) { return adaptive(e, n, true); });
    r.set_symbolic_location({("max_pool" + d).c_str(), ("max_pool" + d + "_with_indices").c_str(),
                             ("avg_pool" + d).c_str()});
  }
}

}  // namespace dirigo::aten::detail
