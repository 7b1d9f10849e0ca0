// Loss functions with their reductions (0 none, 1 mean, 2 sum). Class targets
// (nll_loss, cross_entropy) are int64 tensors: the chosen class is a runtime
// value, so x[n, target[n]] is a Load with a symbolic index.
#include "aten/internal.h"

namespace dirigo::aten::detail {
namespace {

using ir::Fn;
enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

// Pointwise loss f(idx) over the (broadcast) input shape, then reduced.
Expr reduce_loss(const Env& e, const std::vector<int64_t>& shape, const std::function<Expr(const Index&)>& f) {
  int64_t red = e.integer("reduction", kMean);
  if (red == kNone) return f(e.idx);
  if (red != kMean && red != kSum) e.malformed("reduction must be 0, 1 or 2");
  std::vector<Expr> terms;
  for_each_index(shape, [&](const Index& i) { terms.push_back(f(i)); });
  Expr total = e.cx.add(terms);
  if (red == kSum) return total;
  return e.cx.mul(inverse_count(e, static_cast<size_t>(numel(shape))), total);
}

std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> s(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < s.size(); ++k) {
    int64_t da = k + a.size() >= s.size() ? a[k + a.size() - s.size()] : 1;
    int64_t db = k + b.size() >= s.size() ? b[k + b.size() - s.size()] : 1;
    s[k] = std::max(da, db);
  }
  return s;
}

// Register a loss(self, target, ...) whose per-element value is f(e, x, y, idx).
void pointwise_loss(Registry& r, const std::string& key, std::string_view params,
                    std::function<Expr(const Env&, Expr, Expr, const Index&)> f) {
  r.add(key, params, [f](Env& e) {
    const TensorRef& x = e.tensor("self");
    const TensorRef& y = e.tensor("target");
    auto shape = broadcast_shape(x.shape, y.shape);
    return reduce_loss(e, shape, [&](const Index& i) {
      return f(e, e.real_at(x, broadcast_index(x, i)), e.real_at(y, broadcast_index(y, i)), i);
    });
  });
}

Expr half(ir::Context& cx) { return cx.real_const(mpq_class(1, 2)); }

// ---- class-index losses
struct ClassLoss {
  Expr value;   // per-sample loss (0 when ignored)
  Expr weight;  // per-sample weight (0 when ignored)
};

// log-probability source: x itself (nll) or log_softmax(x) along the class dim (cross entropy).
ClassLoss class_loss(const Env& e, const Index& s, bool log_softmax, double smoothing) {
  auto& cx = e.cx;
  const TensorRef& x = e.tensor("self");
  const TensorRef& target = e.tensor("target");
  std::optional<TensorRef> w = e.opt_tensor("weight");
  int64_t cdim = x.rank() >= 2 ? 1 : 0;
  e.require(x.rank() >= 1 && x.rank() == target.rank() + 1 && s.size() == target.rank(),
            "class targets need input rank = target rank + 1");
  int64_t C = x.shape[cdim];
  Index xi = s;
  xi.insert(xi.begin() + cdim, 0);
  auto x_at = [&](int64_t c) { Index i = xi; i[cdim] = c; return e.real_at(x, i); };
  Expr lse = nullptr;
  if (log_softmax) {
    std::vector<Expr> ex;
    for (int64_t c = 0; c < C; ++c) ex.push_back(cx.call(Fn::Exp, x_at(c)));
    lse = cx.call(Fn::Log, cx.add(ex));
  }
  Expr t = e.at(target, s);
  if (t->sort != ir::Sort::BV64) t = cx.sext(t, ir::Sort::BV64);
  // An ignored sample reads nothing: its class is replaced by 0 so the load stays in bounds.
  Expr ignored = cx.eq(t, cx.bv_const(ir::Sort::BV64, static_cast<uint64_t>(e.integer("ignore_index", -100))));
  t = cx.ite(ignored, cx.bv_const(ir::Sort::BV64, 0), t);
  Expr picked = e.to_real(gather_element(e, x, xi, cdim, t), x.dtype);
  if (lse) picked = cx.sub(picked, lse);
  Expr wt = w ? e.to_real(gather_element(e, *w, Index{0}, 0, t), w->dtype) : cx.real_const(1);
  Expr loss = cx.neg(cx.mul(wt, picked));
  if (smoothing != 0) {
    std::vector<Expr> all;
    for (int64_t c = 0; c < C; ++c) {
      Expr lp = cx.sub(x_at(c), lse);
      all.push_back(w ? cx.mul(e.real_at(*w, Index{c}), lp) : lp);
    }
    Expr smooth = cx.neg(cx.div(cx.add(all), cx.real_const(C)));
    loss = cx.add(cx.mul(e.num(1 - smoothing), loss), cx.mul(e.num(smoothing), smooth));
  }
  return {cx.ite(ignored, cx.real_const(0), loss), cx.ite(ignored, cx.real_const(0), wt)};
}

Expr class_index_loss(const Env& e, bool log_softmax, double smoothing) {
  auto& cx = e.cx;
  const TensorRef& target = e.tensor("target");
  int64_t red = e.integer("reduction", kMean);
  if (red == kNone) {
    if (e.out != 0) e.unsupported("total_weight with reduction='none'");
    return class_loss(e, e.idx, log_softmax, smoothing).value;
  }
  std::vector<Expr> vals, weights;
  for_each_index(target.shape, [&](const Index& s) {
    ClassLoss l = class_loss(e, s, log_softmax, smoothing);
    vals.push_back(l.value);
    weights.push_back(l.weight);
  });
  Expr total_weight = cx.add(weights);
  if (e.out == 1) return total_weight;
  Expr total = cx.add(vals);
  return red == kSum ? total : cx.div(total, total_weight);
}

// cross entropy with class-probability targets (target has the input's shape)
Expr soft_cross_entropy(const Env& e, double smoothing) {
  auto& cx = e.cx;
  const TensorRef& x = e.tensor("self");
  const TensorRef& target = e.tensor("target");
  std::optional<TensorRef> w = e.opt_tensor("weight");
  int64_t cdim = x.rank() >= 2 ? 1 : 0;
  e.require(x.rank() >= 1 && target.rank() == x.rank(), "probability targets need the input's shape");
  int64_t C = x.shape[cdim];
  std::vector<int64_t> sample_shape = x.shape;
  sample_shape.erase(sample_shape.begin() + cdim);
  auto per_sample = [&](const Index& s) {
    Index xi = s;
    xi.insert(xi.begin() + cdim, 0);
    std::vector<Expr> xs, ex;
    for (int64_t c = 0; c < C; ++c) {
      xi[cdim] = c;
      xs.push_back(e.real_at(x, xi));
      ex.push_back(cx.call(Fn::Exp, xs.back()));
    }
    Expr lse = cx.call(Fn::Log, cx.add(ex));
    std::vector<Expr> terms;
    for (int64_t c = 0; c < C; ++c) {
      xi[cdim] = c;
      Expr p = e.real_at(target, xi);
      if (smoothing != 0) p = cx.add(cx.mul(e.num(1 - smoothing), p), e.num(smoothing / static_cast<double>(C)));
      Expr term = cx.mul(p, cx.sub(xs[c], lse));
      terms.push_back(w ? cx.mul(e.real_at(*w, Index{c}), term) : term);
    }
    return cx.neg(cx.add(terms));
  };
  return reduce_loss(e, sample_shape, per_sample);
}

Expr l2_distance(const Env& e, const TensorRef& a, const TensorRef& b, const Index& row, double p, double eps) {
  // pairwise_distance: ||a - b + eps||_p over the last dim
  auto& cx = e.cx;
  if (a.rank() == 0 || b.rank() == 0) e.malformed("distance between 0-d tensors");
  int64_t D = std::max(a.shape.back(), b.shape.back());
  std::vector<Expr> terms;
  Index ia = row, ib = row;
  ia.push_back(0);
  ib.push_back(0);
  for (int64_t k = 0; k < D; ++k) {
    ia.back() = k;
    ib.back() = k;
    Expr d = cx.abs(cx.add(cx.sub(e.real_at(a, broadcast_index(a, ia)), e.real_at(b, broadcast_index(b, ib))), e.num(eps)));
    terms.push_back(p == 2 ? square(cx, d) : p == 1 ? d : cx.call(Fn::Pow, d, e.num(p)));
  }
  Expr s = cx.add(terms);
  return p == 2 ? cx.call(Fn::Sqrt, s) : p == 1 ? s : cx.call(Fn::Pow, s, e.num(1 / p));
}

}  // namespace

void register_loss(Registry& r) {
  pointwise_loss(r, "mse_loss", "self target reduction", [](const Env& e, Expr x, Expr y, const Index&) {
    return square(e.cx, e.cx.sub(x, y));
  });
  pointwise_loss(r, "l1_loss", "self target reduction", [](const Env& e, Expr x, Expr y, const Index&) {
    return e.cx.abs(e.cx.sub(x, y));
  });
  pointwise_loss(r, "smooth_l1_loss", "self target reduction beta", [](const Env& e, Expr x, Expr y, const Index&) {
    auto& cx = e.cx;
    double beta = e.real("beta", 1.0);
    Expr d = cx.abs(cx.sub(x, y));
    if (beta == 0) return d;
    Expr b = e.num(beta);
    return cx.ite(cx.lt(d, b), cx.div(cx.mul(half(cx), square(cx, d)), b), cx.sub(d, cx.mul(half(cx), b)));
  });
  pointwise_loss(r, "huber_loss", "self target reduction delta", [](const Env& e, Expr x, Expr y, const Index&) {
    auto& cx = e.cx;
    Expr delta = e.num(e.real("delta", 1.0));
    Expr d = cx.abs(cx.sub(x, y));
    return cx.ite(cx.lt(d, delta), cx.mul(half(cx), square(cx, d)), cx.mul(delta, cx.sub(d, cx.mul(half(cx), delta))));
  });
  pointwise_loss(r, "soft_margin_loss", "self target reduction", [](const Env& e, Expr x, Expr y, const Index&) {
    return e.cx.call(Fn::Softplus, e.cx.neg(e.cx.mul(x, y)));
  });
  r.add("kl_div", "self target reduction log_target", [](Env& e) -> Expr {
    auto& cx = e.cx;
    const TensorRef& x = e.tensor("self");
    const TensorRef& y = e.tensor("target");
    bool log_target = e.flag("log_target", false);
    auto shape = broadcast_shape(x.shape, y.shape);
    auto f = [&](const Index& i) {
      Expr xi = e.real_at(x, broadcast_index(x, i)), t = e.real_at(y, broadcast_index(y, i));
      if (log_target) return cx.mul(cx.call(Fn::Exp, t), cx.sub(t, xi));
      Expr xlogy = cx.ite(cx.eq(t, cx.real_const(0)), cx.real_const(0), cx.mul(t, cx.call(Fn::Log, t)));
      return cx.sub(xlogy, cx.mul(t, xi));
    };
    return reduce_loss(e, shape, f);
  });
  pointwise_loss(r, "binary_cross_entropy", "self target weight reduction", [](const Env& e, Expr x, Expr y, const Index& i) {
    auto& cx = e.cx;
    // PyTorch clamps each log term at -100
    Expr lx = cx.max(cx.call(Fn::Log, x), cx.real_const(-100));
    Expr l1x = cx.max(cx.call(Fn::Log, cx.sub(cx.real_const(1), x)), cx.real_const(-100));
    Expr loss = cx.neg(cx.add(cx.mul(y, lx), cx.mul(cx.sub(cx.real_const(1), y), l1x)));
    if (e.given("weight")) loss = cx.mul(e.real_at(e.tensor("weight"), broadcast_index(e.tensor("weight"), i)), loss);
    return loss;
  });
  pointwise_loss(r, "binary_cross_entropy_with_logits", "self target weight pos_weight reduction",
                 [](const Env& e, Expr x, Expr y, const Index& i) {
                   auto& cx = e.cx;
                   // (1 - y) x + (1 + (pw - 1) y) softplus(-x)
                   Expr lw = cx.real_const(1);
                   if (e.given("pos_weight")) {
                     const TensorRef& pw = e.tensor("pos_weight");
                     lw = cx.add(cx.real_const(1), cx.mul(cx.sub(e.real_at(pw, broadcast_index(pw, i)), cx.real_const(1)), y));
                   }
                   Expr loss = cx.add(cx.mul(cx.sub(cx.real_const(1), y), x), cx.mul(lw, cx.call(Fn::Softplus, cx.neg(x))));
                   if (e.given("weight")) loss = cx.mul(e.real_at(e.tensor("weight"), broadcast_index(e.tensor("weight"), i)), loss);
                   return loss;
                 });
  pointwise_loss(r, "hinge_embedding_loss", "self target margin reduction", [](const Env& e, Expr x, Expr y, const Index&) {
    auto& cx = e.cx;
    Expr margin = cx.max(cx.sub(e.num(e.real("margin", 1.0)), x), cx.real_const(0));
    Expr a = cx.ite(cx.eq(y, cx.real_const(1)), cx.real_const(0), margin);
    Expr b = cx.ite(cx.eq(y, cx.real_const(-1)), cx.real_const(0), x);
    return cx.add(a, b);
  });
  r.add("margin_ranking_loss", "input1 input2 target margin reduction", [](Env& e) {
    auto& cx = e.cx;
    const TensorRef& a = e.tensor("input1");
    const TensorRef& b = e.tensor("input2");
    const TensorRef& t = e.tensor("target");
    auto shape = broadcast_shape(broadcast_shape(a.shape, b.shape), t.shape);
    return reduce_loss(e, shape, [&](const Index& i) {
      Expr d = cx.sub(e.real_at(a, broadcast_index(a, i)), e.real_at(b, broadcast_index(b, i)));
      Expr v = cx.add(cx.neg(cx.mul(e.real_at(t, broadcast_index(t, i)), d)), e.num(e.real("margin", 0.0)));
      return cx.max(v, cx.real_const(0));
    });
  });
  for (const char* k : {"nll_loss_forward", "nll_loss", "nll_loss2d_forward", "nll_loss2d", "nll_loss_nd"})
    r.add(k, "self target weight reduction ignore_index", [](Env& e) { return class_index_loss(e, false, 0); });
  r.add("cross_entropy_loss", "self target weight reduction ignore_index label_smoothing", [](Env& e) {
    double ls = e.real("label_smoothing", 0.0);
    if (is_floating(e.tensor("target").dtype)) return soft_cross_entropy(e, ls);
    return class_index_loss(e, true, ls);
  });
  r.add("pairwise_distance", "x1 x2 p eps keepdim", [](Env& e) {
    Index row = e.idx;
    if (e.flag("keepdim", false)) {
      e.require(!row.empty(), "pairwise_distance keepdim output needs a dim");
      row.pop_back();
    }
    return l2_distance(e, e.tensor("x1"), e.tensor("x2"), row, e.real("p", 2.0), e.real("eps", 1e-6));
  });
  r.add("triplet_margin_loss", "anchor positive negative margin p eps swap reduction", [](Env& e) {
    auto& cx = e.cx;
    const TensorRef& a = e.tensor("anchor");
    const TensorRef& pos = e.tensor("positive");
    const TensorRef& neg = e.tensor("negative");
    double p = e.real("p", 2.0), eps = e.real("eps", 1e-6);
    e.require(a.rank() >= 1, "triplet_margin_loss needs vectors");
    std::vector<int64_t> rows(a.shape.begin(), a.shape.end() - 1);
    return reduce_loss(e, rows, [&](const Index& i) {
      Expr dp = l2_distance(e, a, pos, i, p, eps), dn = l2_distance(e, a, neg, i, p, eps);
      if (e.flag("swap", false)) dn = cx.min(dn, l2_distance(e, pos, neg, i, p, eps));
      return cx.max(cx.add(cx.sub(dp, dn), e.num(e.real("margin", 1.0))), cx.real_const(0));
    });
  });
  r.add("cosine_similarity", "x1 x2 dim eps", [](Env& e) {
    auto& cx = e.cx;
    const TensorRef& a = e.tensor("x1");
    const TensorRef& b = e.tensor("x2");
    size_t rank = std::max(a.rank(), b.rank());
    int64_t dim = wrap_dim(e.integer("dim", 1), rank);
    e.require(rank >= 1 && e.idx.size() + 1 == rank && dim >= static_cast<int64_t>(rank - std::min(a.rank(), b.rank())),
              "cosine_similarity: output rank must be input rank - 1");
    int64_t D = std::max(a.shape[dim - (rank - a.rank())], b.shape[dim - (rank - b.rank())]);
    Index i = e.idx;
    i.insert(i.begin() + dim, 0);
    std::vector<Expr> dot, na, nb;
    for (int64_t k = 0; k < D; ++k) {
      i[dim] = k;
      Expr xa = e.real_at(a, broadcast_index(a, i)), xb = e.real_at(b, broadcast_index(b, i));
      dot.push_back(cx.mul(xa, xb));
      na.push_back(square(cx, xa));
      nb.push_back(square(cx, xb));
    }
    // x1/max(||x1||, eps) . x2/max(||x2||, eps), as ATen computes it
    Expr eps = e.num(e.real("eps", 1e-8));
    Expr da = cx.max(cx.call(Fn::Sqrt, cx.add(na)), eps), db = cx.max(cx.call(Fn::Sqrt, cx.add(nb)), eps);
    return cx.div(cx.add(dot), cx.mul(da, db));
  });
  r.add("cosine_embedding_loss", "input1 input2 target margin reduction", [](Env& e) {
    auto& cx = e.cx;
    const TensorRef& a = e.tensor("input1");
    const TensorRef& b = e.tensor("input2");
    const TensorRef& t = e.tensor("target");
    e.require(a.rank() >= 1, "cosine_embedding_loss needs vectors");
    int64_t D = a.shape.back();
    std::vector<int64_t> rows(a.shape.begin(), a.shape.end() - 1);
    return reduce_loss(e, rows, [&](const Index& row) {
      std::vector<Expr> dot, na, nb;
      Index i = row;
      i.push_back(0);
      for (int64_t k = 0; k < D; ++k) {
        i.back() = k;
        Expr xa = e.real_at(a, i), xb = e.real_at(b, i);
        dot.push_back(cx.mul(xa, xb));
        na.push_back(square(cx, xa));
        nb.push_back(square(cx, xb));
      }
      Expr eps = e.num(1e-12);  // ATen's EPSILON in cosine_embedding_loss
      Expr cos = cx.div(cx.add(dot), cx.call(Fn::Sqrt, cx.mul(cx.add(cx.add(na), eps), cx.add(cx.add(nb), eps))));
      Expr y = e.real_at(t, broadcast_index(t, row));
      Expr pos = cx.sub(cx.real_const(1), cos);
      Expr neg = cx.max(cx.sub(cos, e.num(e.real("margin", 0.0))), cx.real_const(0));
      return cx.add(cx.ite(cx.eq(y, cx.real_const(1)), pos, cx.real_const(0)),
                    cx.ite(cx.eq(y, cx.real_const(-1)), neg, cx.real_const(0)));
    });
  });
}

}  // namespace dirigo::aten::detail
