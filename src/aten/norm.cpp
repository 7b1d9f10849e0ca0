// Normalizations. In training mode the statistics are expressions over the
// batch: mean = sum(x)/M, biased var = sum(x^2)/M - mean^2, and the output is
// (x - mean) * rsqrt(var + eps) * weight + bias. In eval mode the running
// statistics are input tensors. The extra outputs (saved mean and inverse std)
// are modelled as well.
#include "aten/internal.h"

namespace dirigo::aten::detail {
namespace {

struct Stats {
  Expr mean, var;
};

// var = E[x^2] - mean^2 (equal over the reals to the two-pass form). The two-pass
// sum of (x_i - mean)^2 cannot be built: the canonical form of x_i - mean is a flat
// sum of M+1 terms, so it would cost O(M^2) nodes (M = 131072 for a KernelBench batch norm).
Stats stats(const Env& e, const TensorRef& x, const std::vector<Index>& domain) {
  auto& cx = e.cx;
  if (domain.empty()) e.malformed("normalization over an empty set");
  Expr inv_m = inverse_count(e, domain.size());
  std::vector<Expr> xs, sq;
  xs.reserve(domain.size());
  sq.reserve(domain.size());
  for (const auto& i : domain) {
    xs.push_back(e.real_at(x, i));
    sq.push_back(square(cx, xs.back()));
  }
  Expr mean = cx.mul(inv_m, cx.add(xs));
  return {mean, cx.sub(cx.mul(inv_m, cx.add(sq)), square(cx, mean))};
}

// stats() over the set domain() names, looked up in the call's StatsMemo first: `kind` and `where`
// (channel, sample, leading index...) identify the set for the input view x.
using Box = std::vector<std::pair<int64_t, int64_t>>;

// mean and E[x^2] - mean^2 from the two sums over d; nullopt when its elements cannot be read symbolically.
std::optional<Stats> sum_stats(const Env& e, const TensorRef& x, const SymDomain& d) {
  auto& cx = e.cx;
  Expr s1 = sym_reduce(e, ir::ReduceOp::Sum, x, d, [](Expr v) { return v; });
  Expr s2 = s1 ? sym_reduce(e, ir::ReduceOp::Sum, x, d, [&](Expr v) { return square(cx, v); }) : nullptr;
  if (!s1 || !s2) return std::nullopt;
  Expr inv_m = inverse_count(e, size_t(d.count));
  Expr mean = cx.mul(inv_m, s1);
  return Stats{mean, cx.sub(cx.mul(inv_m, s2), square(cx, mean))};
}

// The statistics over a box of x's indices (per dim [lo, hi)) as two Reduce nodes, when the box is
// large enough and its elements can be read symbolically.
std::optional<Stats> sym_stats(const Env& e, const TensorRef& x, const Box& box) {
  int64_t count = 1;
  for (auto [lo, hi] : box) count *= hi - lo;
  if (!e.try_reduce(count)) return std::nullopt;
  auto& cx = e.cx;
  SymDomain d;
  uint32_t varying = 0;
  for (auto [lo, hi] : box) varying += hi - lo > 1;
  uint32_t q = 0;
  for (auto [lo, hi] : box) {
    if (hi - lo > 1) {
      d.index.push_back(cx.bound(varying - 1 - q++));
      d.box.emplace_back(lo, hi);
    } else {
      d.index.push_back(e.bv(lo));
    }
  }
  d.count = count;
  auto st = sum_stats(e, x, d);
  if (st && !e.keep_reduce(count, st->mean)) return std::nullopt;
  return st;
}

template <class Domain>
Stats memo_stats(const Env& e, const TensorRef& x, int64_t kind, const std::vector<int64_t>& where,
                 const Box& box, Domain domain0) {
  auto domain = [&]() -> Stats {
    if (auto s = sym_stats(e, x, box)) return *s;
    return stats(e, x, domain0());
  };
  aten::StatsMemo* memo = e.call.stats_memo;
  if (!memo) return domain();
  std::vector<int64_t> key{kind, x.tensor_id, x.offset, int64_t(x.rank())};
  for (size_t d = 0; d < x.rank(); ++d) key.push_back(x.shape[d]), key.push_back(x.stride(d));
  key.insert(key.end(), where.begin(), where.end());
  if (auto it = memo->entries.find(key); it != memo->entries.end()) return {it->second.first, it->second.second};
  Stats s = domain();
  memo->entries.emplace(std::move(key), std::make_pair(s.mean, s.var));
  return s;
}

Expr normalize(const Env& e, Expr x, Expr mean, Expr var, double eps, const std::optional<TensorRef>& w,
               const std::optional<TensorRef>& b, const Index& param_index) {
  auto& cx = e.cx;
  Expr y = cx.mul(cx.sub(x, mean), rsqrt(cx, cx.add(var, e.num(eps))));
  if (w) y = cx.mul(y, e.real_at(*w, param_index));
  if (b) y = cx.add(y, e.real_at(*b, param_index));
  return y;
}

// ---- at a symbolic location (a reduction over the normalized output): the statistics as Reduce nodes
// over the location's set, indexed by its coordinates (Env::coord), parameters read by channel.
struct SymDim {
  int64_t extent = 1;  // > 1: the set spans [at, at + extent) in this dim; 1: it is the index `at`
  Expr at;             // an expression of the location's coordinates (not lifted)
};
Stats sym_set_stats(const Env& e, const TensorRef& x, const std::vector<SymDim>& dims) {
  auto& cx = e.cx;
  uint32_t nb = 0;
  int64_t count = 1;
  for (const auto& d : dims) nb += d.extent > 1, count *= d.extent;
  SymDomain sd;
  uint32_t q = 0;
  for (const auto& d : dims) {
    Expr at = cx.lift_bound(d.at, nb);
    if (d.extent > 1) {
      at = cx.bv_add(at, cx.bound(nb - 1 - q++));
      sd.box.emplace_back(0, d.extent);
    }
    sd.index.push_back(at);
  }
  sd.count = count;
  if (auto st = sum_stats(e, x, sd)) return *st;
  throw Env::NotSymbolic{};
}

// normalize() with the parameters read at expressions of the location (a symbolic one's channel).
Expr sym_normalize(const Env& e, const Stats& s, double eps, const std::optional<TensorRef>& w,
                   const std::optional<TensorRef>& b, const std::vector<Expr>& param_index) {
  auto& cx = e.cx;
  Expr y = cx.mul(cx.sub(e.real_at(e.tensor("input"), e.idx), s.mean), rsqrt(cx, cx.add(s.var, e.num(eps))));
  if (w) y = cx.mul(y, e.real_sym_at(*w, param_index));
  if (b) y = cx.add(y, e.real_sym_at(*b, param_index));
  return y;
}

// The set a channel's statistics run over: dim 1 at the location's channel, the others whole (or, with
// `sample`, dim 0 at the location's sample).
std::vector<SymDim> sym_channel_set(const Env& e, const TensorRef& x, bool sample) {
  std::vector<SymDim> dims;
  for (size_t d = 0; d < x.rank(); ++d)
    dims.push_back(d == 1 || (d == 0 && sample) ? SymDim{1, e.coord(d)} : SymDim{x.shape[d], e.bv(0)});
  return dims;
}

// The box of channels [c0, c1) (dim 1), optionally of sample n only, every other dim whole.
Box channel_box(const TensorRef& x, int64_t c0, int64_t c1, std::optional<int64_t> n) {
  Box b;
  for (size_t d = 0; d < x.rank(); ++d) b.emplace_back(0, x.shape[d]);
  b[1] = {c0, c1};
  if (n) b[0] = {*n, *n + 1};
  return b;
}

// All input indices of channel c (dim 1), optionally restricted to sample n.
std::vector<Index> channel_domain(const TensorRef& x, int64_t c, std::optional<int64_t> n) {
  std::vector<int64_t> shape = x.shape;
  shape[1] = 1;
  if (n) shape[0] = 1;
  std::vector<Index> dom;
  for_each_index(shape, [&](const Index& i) {
    Index j = i;
    j[1] = c;
    if (n) j[0] = *n;
    dom.push_back(std::move(j));
  });
  return dom;
}

// Batch norm family. Output 0 is the normalized tensor; outputs 1 and 2 (when
// the overload has them) are the batch mean and 1/sqrt(var+eps) per channel.
// Outputs `returns` and `returns + 1` are the running_mean and running_var the op
// writes in place: in training mode (1 - momentum)·old + momentum·batch statistic,
// with the unbiased batch variance (M/(M-1)), as PyTorch updates them; in eval mode
// they are not written, so their value is the old one.
Expr batch_norm(Env& e, bool training, double eps, int returns = 3, const char* momentum = "momentum") {
  auto& cx = e.cx;
  const TensorRef& x = e.tensor("input");
  if (x.rank() < 2) e.malformed("batch norm input needs a channel dim");
  e.require_rank(e.out == 0 ? x.rank() : 1);
  int64_t c = e.out == 0 ? e.idx[1] : e.idx[0];
  std::optional<TensorRef> w = e.opt_tensor("weight"), b = e.opt_tensor("bias");
  if (e.symbolic()) {
    if (e.out != 0) throw Env::NotSymbolic{};
    std::vector<Expr> ch{e.coord(1)};
    Stats st = training ? sym_set_stats(e, x, sym_channel_set(e, x, false)) : Stats{};
    if (!training) {
      if (!e.given("running_mean") || !e.given("running_var")) e.malformed("eval-mode batch norm needs running stats");
      st = Stats{e.real_sym_at(e.tensor("running_mean"), ch), e.real_sym_at(e.tensor("running_var"), ch)};
    }
    return sym_normalize(e, st, eps, w, b, ch);
  }
  if (e.out >= returns && e.out < returns + 2) {
    const char* which = e.out == returns ? "running_mean" : "running_var";
    if (!e.given(which)) e.malformed(std::string("batch norm output ") + std::to_string(e.out) + ": no " + which);
    Expr old = e.real_at(e.tensor(which), Index{c});
    if (!training) return old;
    int64_t count = x.numel() / x.shape[1];
    Stats s = memo_stats(e, x, 0, {c}, channel_box(x, c, c + 1, std::nullopt), [&] { return channel_domain(x, c, std::nullopt); });
    Expr batch = s.mean;
    if (e.out == returns + 1) {
      if (count < 2) e.unsupported("unbiased running variance of one value per channel (division by zero)");
      batch = cx.mul(cx.real_const(mpq_class(static_cast<long>(count), static_cast<long>(count - 1))), s.var);
    }
    Expr m = e.num(e.real(momentum));
    return cx.add(cx.mul(cx.sub(cx.real_const(1), m), old), cx.mul(m, batch));
  }
  Expr mean, var;
  if (training) {
    Stats s = memo_stats(e, x, 0, {c}, channel_box(x, c, c + 1, std::nullopt), [&] { return channel_domain(x, c, std::nullopt); });
    mean = s.mean;
    var = s.var;
  } else {
    if (!e.given("running_mean") || !e.given("running_var")) e.malformed("eval-mode batch norm needs running stats");
    mean = e.real_at(e.tensor("running_mean"), Index{c});
    var = e.real_at(e.tensor("running_var"), Index{c});
  }
  switch (e.out) {
    case 0: return normalize(e, e.real_at(x, e.idx), mean, var, eps, w, b, Index{c});
    case 1: if (returns > 1) return mean; break;
    case 2: if (returns > 2) return rsqrt(cx, cx.add(var, e.num(eps))); break;
    default: break;
  }
  e.unsupported("batch norm output " + std::to_string(e.out));
}

Expr group_norm(const Env& e, const TensorRef& x, int64_t groups, double eps, bool stats_output) {
  auto& cx = e.cx;
  e.require(x.rank() >= 2, "group norm input needs a channel dim");
  e.require_rank(stats_output ? 2 : x.rank());
  int64_t C = x.shape[1];
  if (groups <= 0 || C % groups != 0) e.malformed("channels not divisible by groups");
  int64_t cg = C / groups;
  if (e.symbolic()) {
    if (stats_output) throw Env::NotSymbolic{};
    // the location's group: channels [c / cg * cg, + cg) of its sample
    std::vector<SymDim> dims{{1, e.coord(0)}, {cg, cx.bv_mul(cx.bv_udiv(e.coord(1), e.bv(cg)), e.bv(cg))}};
    for (size_t d = 2; d < x.rank(); ++d) dims.push_back({x.shape[d], e.bv(0)});
    return sym_normalize(e, sym_set_stats(e, x, dims), eps, e.opt_tensor("weight"), e.opt_tensor("bias"), {e.coord(1)});
  }
  int64_t n = e.idx[0];
  int64_t g = stats_output ? e.idx[1] : e.idx[1] / cg;
  Stats s = memo_stats(e, x, 1, {n, g, cg}, channel_box(x, g * cg, (g + 1) * cg, n), [&] {
    std::vector<Index> dom;
    for (int64_t c = g * cg; c < (g + 1) * cg; ++c) {
      auto part = channel_domain(x, c, n);
      dom.insert(dom.end(), part.begin(), part.end());
    }
    return dom;
  });
  if (!stats_output) return normalize(e, e.real_at(x, e.idx), s.mean, s.var, eps, e.opt_tensor("weight"), e.opt_tensor("bias"), Index{e.idx[1]});
  return e.out == 1 ? s.mean : rsqrt(cx, cx.add(s.var, e.num(eps)));
}

// Layer norm over the trailing `normalized` dims; mean/rstd outputs keep those dims as size 1.
Expr layer_norm(const Env& e, const TensorRef& x, size_t normalized, double eps, bool rms) {
  auto& cx = e.cx;
  e.require(normalized <= x.rank(), "layer norm: normalized_shape longer than the input's shape");
  e.require_rank(x.rank());
  size_t lead = x.rank() - normalized;
  if (e.symbolic()) {
    if (rms || e.out != 0) throw Env::NotSymbolic{};
    std::vector<SymDim> dims;
    std::vector<Expr> pidx;
    for (size_t d = 0; d < x.rank(); ++d) {
      dims.push_back(d < lead ? SymDim{1, e.coord(d)} : SymDim{x.shape[d], e.bv(0)});
      if (d >= lead) pidx.push_back(e.coord(d));
    }
    return sym_normalize(e, sym_set_stats(e, x, dims), eps, e.opt_tensor("weight"), e.opt_tensor("bias"), pidx);
  }
  Index base(e.idx.begin(), e.idx.begin() + lead);
  std::vector<int64_t> tail(x.shape.begin() + lead, x.shape.end());
  auto domain = [&] {
    std::vector<Index> dom;
    for_each_index(tail, [&](const Index& t) {
      Index i = base;
      i.insert(i.end(), t.begin(), t.end());
      dom.push_back(std::move(i));
    });
    return dom;
  };
  Index pidx(e.idx.begin() + lead, e.idx.end());
  if (rms) {
    auto dom = domain();
    std::vector<Expr> sq;
    for (const auto& i : dom) sq.push_back(square(cx, e.real_at(x, i)));
    Expr ms = cx.mul(inverse_count(e, dom.size()), cx.add(sq));
    Expr r = rsqrt(cx, cx.add(ms, e.num(eps)));
    if (e.out == 1) return r;
    return normalize(e, e.real_at(x, e.idx), cx.real_const(0), ms, eps, e.opt_tensor("weight"), std::nullopt, pidx);
  }
  std::vector<int64_t> where{int64_t(lead)};
  where.insert(where.end(), base.begin(), base.end());
  Box box;
  for (size_t d = 0; d < x.rank(); ++d)
    box.push_back(d < lead ? std::pair<int64_t, int64_t>{base[d], base[d] + 1} : std::pair<int64_t, int64_t>{0, x.shape[d]});
  Stats s = memo_stats(e, x, 2, where, box, domain);
  switch (e.out) {
    case 0: return normalize(e, e.real_at(x, e.idx), s.mean, s.var, eps, e.opt_tensor("weight"), e.opt_tensor("bias"), pidx);
    case 1: return s.mean;
    case 2: return rsqrt(cx, cx.add(s.var, e.num(eps)));
    default: e.unsupported("layer norm output " + std::to_string(e.out));
  }
}

double default_eps(const Env& e) {
  // rms_norm with eps=None uses the input dtype's machine epsilon
  DType d = e.tensor("input").dtype;
  if (d == DType::Float64) return 2.220446049250313e-16;
  if (d == DType::Float16) return 0.0009765625;
  if (d == DType::BFloat16) return 0.0078125;
  return 1.1920928955078125e-07;
}

}  // namespace

void register_norm(Registry& r) {
  const char* bn = "input weight bias running_mean running_var training momentum eps";
  for (const char* k : {"native_batch_norm", "_native_batch_norm_legit"}) {
    r.add(k, bn, [](Env& e) { return batch_norm(e, e.flag("training"), e.real("eps")); });
    r.set_writes(k, 3, "running_mean running_var");
  }
  // cuDNN's outputs 1 and 2 are the same saved mean and inverse std (output 3 is a workspace)
  r.add("cudnn_batch_norm", "input weight bias running_mean running_var training exponential_average_factor epsilon",
        [](Env& e) { return batch_norm(e, e.flag("training"), e.real("epsilon"), 4, "exponential_average_factor"); });
  r.set_writes("cudnn_batch_norm", 4, "running_mean running_var");
  r.add("miopen_batch_norm", "input weight bias running_mean running_var training exponential_average_factor epsilon",
        [](Env& e) { return batch_norm(e, e.flag("training"), e.real("epsilon"), 3, "exponential_average_factor"); });
  r.set_writes("miopen_batch_norm", 3, "running_mean running_var");
  r.add("batch_norm", std::string(bn) + " cudnn_enabled", [](Env& e) {
    return batch_norm(e, e.flag("training"), e.real("eps"), 1);
  });
  r.set_writes("batch_norm", 1, "running_mean running_var");
  r.add("_native_batch_norm_legit_no_training", "input weight bias running_mean running_var momentum eps",
        [](Env& e) { return batch_norm(e, false, e.real("eps")); });
  r.add("_native_batch_norm_legit.no_stats", "input weight bias training momentum eps", [](Env& e) {
    if (!e.flag("training")) e.malformed("batch norm without running stats must be in training mode");
    return batch_norm(e, true, e.real("eps"));
  });
  r.add("instance_norm", "input weight bias running_mean running_var use_input_stats momentum eps cudnn_enabled",
        [](Env& e) {
          const TensorRef& x = e.tensor("input");
          if (!e.flag("use_input_stats")) return batch_norm(e, false, e.real("eps"));
          e.require(x.rank() >= 2, "instance norm input needs a channel dim");
          e.require_rank(x.rank());
          if (e.symbolic())
            return sym_normalize(e, sym_set_stats(e, x, sym_channel_set(e, x, true)), e.real("eps"),
                                 e.opt_tensor("weight"), e.opt_tensor("bias"), {e.coord(1)});
          Stats s = memo_stats(e, x, 3, {e.idx[0], e.idx[1]}, channel_box(x, e.idx[1], e.idx[1] + 1, e.idx[0]),
                               [&] { return channel_domain(x, e.idx[1], e.idx[0]); });
          return normalize(e, e.real_at(x, e.idx), s.mean, s.var, e.real("eps"), e.opt_tensor("weight"),
                           e.opt_tensor("bias"), Index{e.idx[1]});
        });
  r.add("native_group_norm", "input weight bias N C HxW group eps", [](Env& e) {
    return group_norm(e, e.tensor("input"), e.integer("group"), e.real("eps"), e.out != 0);
  });
  r.add("group_norm", "input num_groups weight bias eps cudnn_enabled", [](Env& e) {
    return group_norm(e, e.tensor("input"), e.integer("num_groups"), e.real("eps", 1e-5), false);
  });
  r.add("native_layer_norm", "input normalized_shape weight bias eps", [](Env& e) {
    return layer_norm(e, e.tensor("input"), e.ints("normalized_shape").size(), e.real("eps"), false);
  });
  r.add("layer_norm", "input normalized_shape weight bias eps cudnn_enable", [](Env& e) {
    return layer_norm(e, e.tensor("input"), e.ints("normalized_shape").size(), e.real("eps", 1e-5), false);
  });
  for (const char* k : {"rms_norm", "_fused_rms_norm"})
    r.add(k, "input normalized_shape weight eps", [](Env& e) {
      double eps = e.given("eps") ? e.real("eps") : default_eps(e);
      return layer_norm(e, e.tensor("input"), e.ints("normalized_shape").size(), eps, true);
    });
  // Output 0 (the normalized tensor) at a symbolic location; the others throw NotSymbolic there.
  r.set_symbolic_location({"native_batch_norm", "_native_batch_norm_legit", "cudnn_batch_norm", "miopen_batch_norm",
                           "batch_norm", "_native_batch_norm_legit_no_training", "_native_batch_norm_legit.no_stats",
                           "instance_norm", "native_group_norm", "group_norm", "native_layer_norm", "layer_norm"});
}

}  // namespace dirigo::aten::detail
