// Convolution in all its forms: bias + sum over (input channel in the group,
// kernel taps) of x * w, with stride/padding/dilation/groups/transposition
// resolved at the concrete output location. Taps that land in the padding
// contribute nothing (they are not emitted as x*0).
#include "aten/internal.h"

namespace dirigo::aten::detail {
namespace {

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation;
  bool transposed = false;
  int64_t groups = 1;
};


// At a symbolic location (a reduction over the convolution's output): one Reduce over (input channel
// of the group, kernel taps), each term guarded by its tap landing inside the input (and, transposed,
// on the stride's lattice) as comparisons of the location's coordinates; dims whose taps land inside
// at every location need no guard. Index arithmetic is BV64: a position below 0 wraps to a huge
// unsigned value, which the unsigned bound rejects.
Expr sym_convolve(const Env& e, const TensorRef& x, const TensorRef& w, const std::optional<TensorRef>& bias,
                  const ConvParams& p, bool batched) {
  auto& cx = e.cx;
  size_t nsp = w.rank() - 2, lead = batched ? 1 : 0;
  int64_t cin_g = p.transposed ? x.shape[lead] / p.groups : w.shape[1];
  int64_t cout_g = p.transposed ? w.shape[1] : e.output().shape[lead] / p.groups;
  uint32_t nb = cin_g > 1;
  for (size_t d = 0; d < nsp; ++d) nb += w.shape[2 + d] > 1;
  uint32_t q = 0;
  auto dim = [&](int64_t size) { return size > 1 ? cx.bound(nb - 1 - q++) : e.bv(0); };
  Expr c = dim(cin_g);
  Expr oc = e.coord(lead, nb);
  Expr ic0 = p.groups == 1 ? e.bv(0) : cx.bv_mul(cx.bv_udiv(oc, e.bv(cout_g)), e.bv(cin_g));
  std::vector<Expr> xi, wi, inside;
  if (batched) xi.push_back(e.coord(0, nb));
  xi.push_back(cx.bv_add(ic0, c));
  if (p.transposed) wi = {cx.bv_add(ic0, c), p.groups == 1 ? oc : cx.bv_urem(oc, e.bv(cout_g))};
  else wi = {oc, c};
  for (size_t d = 0; d < nsp; ++d) {
    int64_t K = w.shape[2 + d], L = x.shape[lead + 1 + d], O = e.output().shape[lead + 1 + d];
    int64_t s = p.stride[d], pd = p.padding[d], dl = p.dilation[d];
    Expr k = dim(K), o = e.coord(lead + 1 + d, nb);
    wi.push_back(k);
    Expr pos;
    if (!p.transposed) {
      pos = cx.bv_sub(cx.bv_add(cx.bv_mul(o, e.bv(s)), cx.bv_mul(k, e.bv(dl))), e.bv(pd));
      if (pd > 0 || (O - 1) * s + (K - 1) * dl >= L) inside.push_back(cx.ult(pos, e.bv(L)));
    } else {
      Expr num = cx.bv_sub(cx.bv_add(o, e.bv(pd)), cx.bv_mul(k, e.bv(dl)));
      pos = s == 1 ? num : cx.bv_udiv(num, e.bv(s));
      if (s > 1) inside.push_back(cx.eq(cx.bv_urem(num, e.bv(s)), e.bv(0)));
      inside.push_back(cx.ult(pos, e.bv(L)));
    }
    xi.push_back(pos);
  }
  Expr term = cx.mul(e.real_sym_at(x, xi), e.real_sym_at(w, wi));
  if (!inside.empty()) term = cx.ite(cx.and_(inside), term, cx.real_const(0));
  std::vector<std::pair<int64_t, int64_t>> box;
  if (cin_g > 1) box.emplace_back(0, cin_g);
  for (size_t d = 0; d < nsp; ++d)
    if (w.shape[2 + d] > 1) box.emplace_back(0, w.shape[2 + d]);
  Expr total = cx.reduce_abstracted(ir::ReduceOp::Sum, box, term);
  if (!bias) return total;
  Expr b[] = {e.coord(lead)};  // by the output channel (not broadcast against the location)
  return cx.add(total, e.real_sym_at(*bias, b));
}

Expr convolve(const Env& e, const TensorRef& x, const TensorRef& w, const std::optional<TensorRef>& bias,
              const ConvParams& p) {
  auto& cx = e.cx;
  e.require(w.rank() >= 3, "convolution weight needs rank >= 3");
  size_t nsp = w.rank() - 2;
  bool batched = x.rank() == w.rank();
  if (!batched && x.rank() + 1 != w.rank()) e.malformed("input rank does not match weight rank");
  e.require_rank(x.rank());
  e.require(p.groups > 0, "groups must be positive");
  for (size_t d = 0; d < nsp; ++d)
    e.require(p.stride[d] > 0 && p.dilation[d] > 0, "stride and dilation must be positive");
  size_t cdim = batched ? 1 : 0;
  if (p.transposed)
    e.require(x.shape[cdim] == w.shape[0] && x.shape[cdim] % p.groups == 0 && w.shape[1] > 0,
              "transposed convolution: input channels must match weight dim 0 and divide by groups");
  else
    e.require(w.shape[1] * p.groups == x.shape[cdim] && e.output().shape[cdim] % p.groups == 0,
              "convolution: input channels must equal weight dim 1 x groups");
  if (e.symbolic()) return sym_convolve(e, x, w, bias, p, batched);
  const Index& o = e.idx;
  size_t lead = batched ? 1 : 0;  // position of the channel dim in input and output
  int64_t n = batched ? o[0] : 0;
  int64_t oc = o[lead];
  std::vector<int64_t> ksize(w.shape.begin() + 2, w.shape.end());
  std::vector<Expr> terms;
  // The kernel taps that land inside the input, row-major, with their input positions: the same for
  // every input channel of the group, so found once per output element, not once per channel.
  std::vector<int64_t> tap_k, tap_pos;  // by tap: its kernel index and input position (nsp each)
  {
    Index k(nsp, 0), pos(nsp);
    int64_t taps = 1;
    for (int64_t s : ksize) taps *= s;
    for (int64_t t = 0; t < taps; ++t) {
      bool inside = true;
      for (size_t d = 0; d < nsp && inside; ++d) {
        if (!p.transposed) {
          pos[d] = o[lead + 1 + d] * p.stride[d] - p.padding[d] + k[d] * p.dilation[d];
        } else {
          int64_t num = o[lead + 1 + d] + p.padding[d] - k[d] * p.dilation[d];
          if (num < 0 || num % p.stride[d] != 0) inside = false;
          pos[d] = num / p.stride[d];
        }
        inside = inside && pos[d] >= 0 && pos[d] < x.shape[lead + 1 + d];
      }
      if (inside) tap_k.insert(tap_k.end(), k.begin(), k.end()), tap_pos.insert(tap_pos.end(), pos.begin(), pos.end());
      for (size_t d = nsp; d-- > 0;) {
        if (++k[d] < ksize[d]) break;
        k[d] = 0;
      }
    }
  }
  size_t ntaps = nsp ? tap_k.size() / nsp : 0;
  // Input channels ic0 + c (c < cin_g) with weight w[w0 + c * w0_step, w1 + c * w1_step, k...]:
  // a convolution reads w[oc, c, k], a transposed one w[ic0 + c, oc % cout_g, k].
  int64_t cin_g, ic0, w0, w1, w0_step, w1_step;
  if (!p.transposed) {
    int64_t cout_g = e.output().shape[lead] / p.groups;
    cin_g = w.shape[1], ic0 = oc / cout_g * cin_g;
    w0 = oc, w1 = 0, w0_step = 0, w1_step = 1;
  } else {
    int64_t cout_g = w.shape[1];
    cin_g = x.shape[lead] / p.groups, ic0 = oc / cout_g * cin_g;
    w0 = ic0, w1 = oc % cout_g, w0_step = 1, w1_step = 0;
  }
  if (e.call.sum_of_products && is_floating(x.dtype) && is_floating(w.dtype)) {
    // check's numeric evaluation takes the products as runs over the input channels of the taps'
    // flat offsets (see aten::Products::runs), in the order the terms below are summed
    if (ntaps > 0 && cin_g > 0) {
      Products prods;
      prods.a_tensor = x.tensor_id;
      prods.b_tensor = w.tensor_id;
      prods.runs = cin_g;
      prods.count = cin_g * int64_t(ntaps);
      prods.a_first = x.offset + (batched ? n * x.stride(0) : 0) + ic0 * x.stride(lead);
      prods.a_step = x.stride(lead);
      prods.b_first = w.offset + w0 * w.stride(0) + w1 * w.stride(1);
      prods.b_step = w0_step * w.stride(0) + w1_step * w.stride(1);
      std::vector<int64_t> xs(nsp), ws(nsp);
      for (size_t d = 0; d < nsp; ++d) xs[d] = x.stride(lead + 1 + d), ws[d] = w.stride(2 + d);
      for (size_t t = 0; t < ntaps; ++t) {
        int64_t xf = 0, wf = 0;
        for (size_t d = 0; d < nsp; ++d) xf += tap_pos[t * nsp + d] * xs[d], wf += tap_k[t * nsp + d] * ws[d];
        prods.a_list.push_back(xf);
        prods.b_list.push_back(wf);
      }
      if (bias && bias->rank() == 1 && is_floating(bias->dtype)) {  // one leaf for the whole element
        prods.c_tensor = bias->tensor_id;
        prods.c_index = bias->offset + oc * bias->stride(0);
        return e.call.sum_of_products(prods);
      }
      terms.push_back(e.call.sum_of_products(prods));
    }
  } else {
    Index xi(x.rank()), wi(w.rank());
    if (batched) xi[0] = n;
    for (int64_t c = 0; c < cin_g; ++c) {
      xi[lead] = ic0 + c;
      wi[0] = w0 + c * w0_step, wi[1] = w1 + c * w1_step;
      for (size_t t = 0; t < ntaps; ++t) {
        for (size_t d = 0; d < nsp; ++d) xi[lead + 1 + d] = tap_pos[t * nsp + d], wi[2 + d] = tap_k[t * nsp + d];
        terms.push_back(cx.mul(e.real_at(x, xi), e.real_at(w, wi)));
      }
    }
  }
  if (bias) terms.push_back(e.real_at(*bias, Index{oc}));
  return cx.add(terms);
}

// Stride/padding/dilation/groups as named in every convolution schema; padding may be
// "same"/"valid" for conv1d/2d/3d (total padding d*(k-1), the odd extra element on the right).
Expr conv_call(Env& e, bool transposed) {
  const TensorRef& w = e.tensor("weight");
  e.require(w.rank() >= 3, "convolution weight needs rank >= 3");
  size_t nsp = w.rank() - 2;
  ConvParams p;
  p.stride = spatial_ints(e, "stride", nsp, std::vector<int64_t>(nsp, 1));
  p.dilation = spatial_ints(e, "dilation", nsp, std::vector<int64_t>(nsp, 1));
  p.transposed = transposed;
  p.groups = e.integer("groups", 1);
  const Arg* pad = e.arg("padding");
  if (pad && pad->kind == Arg::Kind::String) {
    p.padding.assign(nsp, 0);
    if (pad->str == "same") {
      for (size_t d = 0; d < nsp; ++d) p.padding[d] = p.dilation[d] * (w.shape[2 + d] - 1) / 2;
    } else if (pad->str != "valid") {
      e.unsupported("padding='" + pad->str + "'");
    }
  } else {
    p.padding = spatial_ints(e, "padding", nsp, std::vector<int64_t>(nsp, 0));
  }
  return convolve(e, e.tensor("input"), w, e.opt_tensor("bias"), p);
}

// aten::convolution / _convolution / convolution_overrideable: `transposed` is an argument
Expr convolution(Env& e) { return conv_call(e, e.flag("transposed", false)); }
Expr conv_nd(Env& e) { return conv_call(e, false); }
Expr conv_transpose_nd(Env& e) { return conv_call(e, true); }

}  // namespace

void register_conv(Registry& r) {
  const char* conv_params = "input weight bias stride padding dilation transposed output_padding groups";
  r.add("convolution", conv_params, convolution);
  r.add("convolution_overrideable", conv_params, convolution);
  r.add("_convolution", std::string(conv_params) + " benchmark deterministic cudnn_enabled allow_tf32", convolution);
  r.add("_convolution.deprecated", std::string(conv_params) + " benchmark deterministic cudnn_enabled", convolution);
  for (const char* k : {"conv1d", "conv2d", "conv3d", "conv1d.padding", "conv2d.padding", "conv3d.padding"})
    r.add(k, "input weight bias stride padding dilation groups", conv_nd);
  for (const char* k : {"conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input"})
    r.add(k, "input weight bias stride padding output_padding groups dilation", conv_transpose_nd);
  r.set_symbolic_location({"convolution", "convolution_overrideable", "_convolution", "_convolution.deprecated",
                           "conv1d", "conv2d", "conv3d", "conv1d.padding", "conv2d.padding", "conv3d.padding",
                           "conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input"});
}

}  // namespace dirigo::aten::detail
