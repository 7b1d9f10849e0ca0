// Reductions (sum/mean/prod/amax/amin/max/min/var/std/norms/argmax/argmin,
// logsumexp), scans (cumsum/cumprod) and softmax. Sums are emitted once as
// n-ary adds, extremes as n-ary min/max, arg-extremes as ite chains that keep
// the first position on ties (as PyTorch does).
#include <cmath>
#include <limits>
#include <optional>

#include "aten/internal.h"

namespace dirigo::aten::detail {
namespace {

using ir::Fn;

struct Reduction {
  const TensorRef* in;
  std::vector<Index> domain;
  std::optional<SymDomain> sym;  // set: the domain is large enough for one Reduce node (Env::reduce_symbolically)
};

// The input indices reduced into the asked location: dims from `dim_param`
// ("" = all dims, no keepdim parameter), keepdim from "keepdim".
struct ReducedDims {
  std::vector<int64_t> dims;
  bool keepdim = false;
};
ReducedDims reduced_dims(const Env& e, const TensorRef& in, std::string_view dim_param, bool empty_means_all) {
  int64_t rank = static_cast<int64_t>(in.rank());
  ReducedDims r;
  if (dim_param.empty()) {
    for (int64_t k = 0; k < rank; ++k) r.dims.push_back(k);
  } else {
    r.dims = reduce_dims(e, dim_param, rank, empty_means_all);
    r.keepdim = e.flag("keepdim", false);
  }
  return r;
}

Reduction reduction(const Env& e, std::string_view dim_param, bool empty_means_all = true) {
  const TensorRef& in = e.tensor("self");
  auto [dims, keepdim] = reduced_dims(e, in, dim_param, empty_means_all);
  int64_t count = 1;
  for (auto d : dims) count *= in.shape[size_t(d)];
  if (e.try_reduce(count) || e.symbolic()) {
    Reduction r{&in, {}, sym_domain(e, in, dims, keepdim)};
    if (r.sym) return r;
  }
  return {&in, reduction_domain(in, dims, keepdim, e.idx), std::nullopt};
}

// The reduction as one Reduce node of body(x); nullptr when an element cannot be read symbolically.
Expr sym(const Env& e, const Reduction& r, ir::ReduceOp op, const std::function<Expr(Expr)>& body = {}) {
  if (!r.sym) return nullptr;
  Expr s = sym_reduce(e, op, *r.in, *r.sym, body ? body : [](Expr x) { return x; });
  return s && e.keep_reduce(r.sym->count, s) ? s : nullptr;
}

// The domain listed element by element (for the paths without a Reduce form).
Reduction expanded(const Env& e, Reduction r, std::string_view dim_param, bool empty_means_all = true) {
  e.require_concrete();
  if (!r.sym) return r;
  const TensorRef& in = *r.in;
  auto [dims, keepdim] = reduced_dims(e, in, dim_param, empty_means_all);
  return {&in, reduction_domain(in, dims, keepdim, e.idx), std::nullopt};
}

int64_t count_of(const Reduction& r) { return r.sym ? r.sym->count : static_cast<int64_t>(r.domain.size()); }

std::vector<Expr> values(const Env& e, const Reduction& r) {
  std::vector<Expr> v;
  v.reserve(r.domain.size());
  for (const auto& i : r.domain) v.push_back(e.real_at(*r.in, i));
  return v;
}

Expr sum_red(const Env& e, const Reduction& r, std::string_view dim_param) {
  if (Expr s = sym(e, r, ir::ReduceOp::Sum)) return s;
  Reduction x = expanded(e, r, dim_param);
  return sum_of(e, *x.in, x.domain);
}

Expr mean_of(const Env& e, const Reduction& r, std::string_view dim_param) {
  return e.cx.mul(inverse_count(e, size_t(count_of(r))), sum_red(e, r, dim_param));
}

Expr extreme(const Env& e, const Reduction& r0, bool is_max, std::string_view dim_param) {
  if (Expr s = sym(e, r0, is_max ? ir::ReduceOp::Max : ir::ReduceOp::Min)) return s;
  Reduction r = expanded(e, r0, dim_param);
  auto v = values(e, r);
  if (v.empty()) e.malformed("max/min over an empty set");
  return is_max ? e.cx.max(v) : e.cx.min(v);
}

// Position of each domain element along dimension `dim` (or its flat index when dim < 0).
Expr arg(const Env& e, const Reduction& r, int64_t dim, bool is_max) {
  std::vector<int64_t> pos;
  bool along_dim = dim >= 0 && static_cast<size_t>(dim) < r.in->rank();  // a 0-d input has one position, 0
  for (const auto& i : r.domain) pos.push_back(along_dim ? i[dim] : ravel(i, r.in->shape));
  return arg_extreme(e.cx, values(e, r), pos, is_max);
}

// sum((x - mean)^2) / (M - correction), written as (sum(x^2) - M mean^2) / (M - correction)
// to stay O(M) nodes (see stats() in norm.cpp).
Expr variance(const Env& e, const Reduction& r0, double correction, std::string_view dim_param) {
  auto& cx = e.cx;
  if (r0.sym) {
    Expr s1 = sym(e, r0, ir::ReduceOp::Sum), s2 = sym(e, r0, ir::ReduceOp::Sum, [&](Expr x) { return square(cx, x); });
    if (s1 && s2) {
      int64_t m = r0.sym->count;
      Expr mean = cx.mul(inverse_count(e, size_t(m)), s1);
      Expr ss = cx.sub(s2, cx.mul(cx.real_const(m), square(cx, mean)));
      return cx.div(ss, e.num(std::max(0.0, static_cast<double>(m) - correction)));
    }
  }
  Reduction r = expanded(e, r0, dim_param);
  auto xs = values(e, r);
  std::vector<Expr> sq;
  for (Expr x : xs) sq.push_back(square(cx, x));
  auto m = static_cast<int64_t>(xs.size());
  Expr mean = cx.mul(inverse_count(e, xs.size()), cx.add(xs));
  Expr ss = cx.sub(cx.add(sq), cx.mul(cx.real_const(m), square(cx, mean)));
  double denom = std::max(0.0, static_cast<double>(m) - correction);
  return cx.div(ss, e.num(denom));
}

double correction_of(const Env& e) {
  if (e.def.key.ends_with(".correction")) return e.real("correction", 1.0);
  return e.flag("unbiased", true) ? 1.0 : 0.0;
}

Expr vector_norm(const Env& e, const Reduction& r, double p) {
  auto& cx = e.cx;
  auto v = values(e, r);
  for (auto& x : v) x = cx.abs(x);
  if (p == std::numeric_limits<double>::infinity()) return cx.max(v);
  if (p == -std::numeric_limits<double>::infinity()) return cx.min(v);
  if (p == 1) return cx.add(v);
  if (p == 2) {
    for (auto& x : v) x = square(cx, x);
    return cx.call(Fn::Sqrt, cx.add(v));
  }
  if (p == 0) {
    for (auto& x : v) x = cx.ite(cx.eq(x, cx.real_const(0)), cx.real_const(0), cx.real_const(1));
    return cx.add(v);
  }
  Expr pe = e.num(p);
  for (auto& x : v) x = cx.call(Fn::Pow, x, pe);
  return cx.call(Fn::Pow, cx.add(v), e.num(1.0 / p));
}

// Elements along `dim` through the asked location: (input index with dim = k).
Index along(const Index& idx, int64_t dim, int64_t k) {
  Index i = idx;
  i[dim] = k;
  return i;
}

Expr softmax(const Env& e, bool log) {
  auto& cx = e.cx;
  const TensorRef& in = e.tensor("self");
  int64_t dim = wrap_dim(e.integer("dim"), in.rank());
  e.require_rank(in.rank());
  // The plain mathematical form exp(x_i) / sum_j exp(x_j): the max-subtracted form
  // PyTorch computes is equal over the reals, and the shift would only add terms.
  std::vector<Expr> ex;
  int64_t n = in.rank() == 0 ? 1 : in.shape[dim];
  if (in.rank() > 0 && (e.try_reduce(n) || e.symbolic())) {
    std::vector<int64_t> dims{dim};
    if (auto d = sym_domain(e, in, dims, true))
      if (Expr total = sym_reduce(e, ir::ReduceOp::Sum, in, *d, [&](Expr x) { return cx.call(Fn::Exp, x); });
          total && e.keep_reduce(n, total)) {
        Expr xi = e.real_at(in, e.idx);
        if (log) return cx.sub(xi, cx.call(Fn::Log, total));
        return cx.div(cx.call(Fn::Exp, xi), total);
      }
  }
  e.require_concrete();
  for (int64_t k = 0; k < n; ++k) ex.push_back(cx.call(Fn::Exp, e.real_at(in, in.rank() == 0 ? e.idx : along(e.idx, dim, k))));
  Expr total = cx.add(ex);
  Expr xi = e.real_at(in, e.idx);
  if (log) return cx.sub(xi, cx.call(Fn::Log, total));
  return cx.div(cx.call(Fn::Exp, xi), total);
}

Expr scan(const Env& e, bool product) {
  const TensorRef& in = e.tensor("self");
  int64_t dim = wrap_dim(e.integer("dim"), in.rank());
  e.require_rank(in.rank());
  std::vector<Expr> xs;
  int64_t upto = in.rank() == 0 ? 0 : e.idx[dim];
  for (int64_t k = 0; k <= upto; ++k) xs.push_back(e.real_at(in, in.rank() == 0 ? e.idx : along(e.idx, dim, k)));
  return product ? e.cx.mul(xs) : e.cx.add(xs);
}

}  // namespace

void register_reduce(Registry& r) {
  r.add("sum", "self dtype", [](Env& e) { return sum_red(e, reduction(e, ""), ""); });
  r.add("sum.dim_IntList", "self dim keepdim dtype", [](Env& e) { return sum_red(e, reduction(e, "dim"), "dim"); });
  r.add("mean", "self dtype", [](Env& e) { return mean_of(e, reduction(e, ""), ""); });
  r.add("mean.dim", "self dim keepdim dtype", [](Env& e) { return mean_of(e, reduction(e, "dim"), "dim"); });
  r.add("prod", "self dtype", [](Env& e) { return e.cx.mul(values(e, expanded(e, reduction(e, ""), ""))); });
  r.add("prod.dim_int", "self dim keepdim dtype", [](Env& e) {
    return e.cx.mul(values(e, expanded(e, reduction(e, "dim"), "dim")));
  });
  r.add("amax", "self dim keepdim", [](Env& e) { return extreme(e, reduction(e, "dim"), true, "dim"); });
  r.add("amin", "self dim keepdim", [](Env& e) { return extreme(e, reduction(e, "dim"), false, "dim"); });
  r.add("max", "self", [](Env& e) { return extreme(e, reduction(e, ""), true, ""); });
  r.add("min", "self", [](Env& e) { return extreme(e, reduction(e, ""), false, ""); });
  for (bool is_max : {true, false})
    r.add(is_max ? "max.dim" : "min.dim", "self dim keepdim", [is_max](Env& e) {
      auto red = reduction(e, "dim");
      if (e.out == 0) return extreme(e, red, is_max, "dim");
      red = expanded(e, red, "dim");
      return arg(e, red, wrap_dim(e.integer("dim"), red.in->rank()), is_max);
    });
  for (bool is_max : {true, false})
    r.add(is_max ? "argmax" : "argmin", "self dim keepdim", [is_max](Env& e) {
      if (!e.given("dim")) return arg(e, expanded(e, reduction(e, ""), ""), -1, is_max);
      auto red = expanded(e, reduction(e, "dim"), "dim");
      return arg(e, red, wrap_dim(e.integer("dim"), red.in->rank()), is_max);
    });
  // var/std: .correction has a kwarg-only correction; the older overloads an `unbiased` flag.
  for (bool is_std : {false, true}) {
    std::string base = is_std ? "std" : "var";
    auto fn = [is_std](Env& e) {
      bool has_dim = e.def.key.find('.') != std::string::npos;
      Expr v = variance(e, reduction(e, has_dim ? "dim" : ""), correction_of(e), has_dim ? "dim" : "");
      return is_std ? e.cx.call(Fn::Sqrt, v) : v;
    };
    r.add(base, "self unbiased", fn);
    r.add(base + ".dim", "self dim unbiased keepdim", fn);
    r.add(base + ".correction", "self dim correction keepdim", fn);
    r.add(base + "_mean.correction", "self dim correction keepdim", [is_std](Env& e) {
      auto red = reduction(e, "dim");
      if (e.out == 1) return mean_of(e, red, "dim");
      Expr v = variance(e, red, e.real("correction", 1.0), "dim");
      return is_std ? e.cx.call(Fn::Sqrt, v) : v;
    });
  }
  r.add("norm.Scalar", "self p", [](Env& e) { return vector_norm(e, expanded(e, reduction(e, ""), ""), e.real("p", 2.0)); });
  for (const char* k : {"norm.ScalarOpt_dim", "norm.ScalarOpt_dim_dtype"})
    r.add(k, "self p dim keepdim", [](Env& e) {
      return vector_norm(e, expanded(e, reduction(e, "dim"), "dim"), e.real("p", 2.0));
    });
  r.add("norm.ScalarOpt_dtype", "self p dtype", [](Env& e) {
    return vector_norm(e, expanded(e, reduction(e, ""), ""), e.real("p", 2.0));
  });
  r.add("linalg_vector_norm", "self ord dim keepdim dtype", [](Env& e) {
    return vector_norm(e, expanded(e, reduction(e, "dim"), "dim"), e.real("ord", 2.0));
  });
  r.add("logsumexp", "self dim keepdim", [](Env& e) {
    auto red = reduction(e, "dim");
    if (Expr s = sym(e, red, ir::ReduceOp::Sum, [&](Expr x) { return e.cx.call(Fn::Exp, x); }))
      return e.cx.call(Fn::Log, s);
    auto v = values(e, expanded(e, red, "dim"));
    for (auto& x : v) x = e.cx.call(Fn::Exp, x);
    return e.cx.call(Fn::Log, e.cx.add(v));
  });
  r.add("cumsum", "self dim dtype", [](Env& e) { return scan(e, false); });
  r.add("cumprod", "self dim dtype", [](Env& e) { return scan(e, true); });
  for (const char* k : {"_softmax", "softmax.int"})
    r.add(k, k[0] == '_' ? "self dim half_to_float" : "self dim dtype", [](Env& e) { return softmax(e, false); });
  for (const char* k : {"_log_softmax", "log_softmax.int"})
    r.add(k, k[0] == '_' ? "self dim half_to_float" : "self dim dtype", [](Env& e) { return softmax(e, true); });
  for (bool all : {true, false}) {
    auto fn = [all](Env& e) {
      bool has_dim = e.def.key.find('.') != std::string::npos;
      auto v = values(e, expanded(e, reduction(e, has_dim ? "dim" : ""), has_dim ? "dim" : ""));
      for (auto& x : v) x = e.cx.not_(e.cx.eq(x, e.cx.real_const(0)));
      return all ? e.cx.and_(v) : e.cx.or_(v);
    };
    std::string base = all ? "all" : "any";
    r.add(base, "self", fn);
    r.add(base + ".dim", "self dim keepdim", fn);
    r.add(base + ".dims", "self dim keepdim", fn);
  }
  // Every path of these that lists elements goes through expanded() or a softmax loop behind
  // require_concrete(); their Reduce forms take the location's coordinates from Env::coord.
  r.set_symbolic_location({"sum", "sum.dim_IntList", "mean", "mean.dim", "amax", "amin", "max", "min", "max.dim",
                           "min.dim", "var", "var.dim", "var.correction", "std", "std.dim", "std.correction",
                           "logsumexp", "_softmax", "softmax.int", "_log_softmax", "log_softmax.int"});
}

}  // namespace dirigo::aten::detail
