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
  const Index& o = e.idx;
  size_t lead = batched ? 1 : 0;  // position of the channel dim in input and output
  int64_t n = batched ? o[0] : 0;
  int64_t oc = o[lead];
  std::vector<int64_t> ksize(w.shape.begin() + 2, w.shape.end());
  std::vector<Expr> terms;
  // check's numeric evaluation takes the products as index pairs (see OpCall::sum_of_products)
  bool as_products = e.call.sum_of_products && is_floating(x.dtype) && is_floating(w.dtype);
  Products prods;
  auto x_index = [&](int64_t ic, const Index& pos) {
    Index xi;
    if (batched) xi.push_back(n);
    xi.push_back(ic);
    xi.insert(xi.end(), pos.begin(), pos.end());
    return xi;
  };
  // x[n, xc, pos...] * w[w0, w1, k...]; as flat indices without building index vectors (10^8 taps)
  auto product = [&](int64_t xc, const Index& pos, int64_t w0, int64_t w1, const Index& k) {
    if (as_products) {
      int64_t xf = x.offset + (batched ? n * x.stride(0) : 0) + xc * x.stride(lead);
      int64_t wf = w.offset + w0 * w.stride(0) + w1 * w.stride(1);
      for (size_t d = 0; d < nsp; ++d) xf += pos[d] * x.stride(lead + 1 + d), wf += k[d] * w.stride(2 + d);
      prods.a_list.push_back(xf);
      prods.b_list.push_back(wf);
      return;
    }
    Index wi{w0, w1};
    wi.insert(wi.end(), k.begin(), k.end());
    terms.push_back(cx.mul(e.real_at(x, x_index(xc, pos)), e.real_at(w, wi)));
  };
  Index pos(nsp);
  if (!p.transposed) {
    int64_t cout_g = e.output().shape[lead] / p.groups, cin_g = w.shape[1];
    int64_t g = oc / cout_g;
    for (int64_t ic = 0; ic < cin_g; ++ic)
      for_each_index(ksize, [&](const Index& k) {
        for (size_t d = 0; d < nsp; ++d) {
          pos[d] = o[lead + 1 + d] * p.stride[d] - p.padding[d] + k[d] * p.dilation[d];
          if (pos[d] < 0 || pos[d] >= x.shape[lead + 1 + d]) return;
        }
        product(g * cin_g + ic, pos, oc, ic, k);
      });
  } else {
    int64_t cout_g = w.shape[1], cin_g = x.shape[lead] / p.groups;
    int64_t g = oc / cout_g, ocg = oc % cout_g;
    for (int64_t ic = g * cin_g; ic < (g + 1) * cin_g; ++ic)
      for_each_index(ksize, [&](const Index& k) {
        for (size_t d = 0; d < nsp; ++d) {
          int64_t num = o[lead + 1 + d] + p.padding[d] - k[d] * p.dilation[d];
          if (num < 0 || num % p.stride[d] != 0) return;
          pos[d] = num / p.stride[d];
          if (pos[d] >= x.shape[lead + 1 + d]) return;
        }
        product(ic, pos, ic, ocg, k);
      });
  }
  if (as_products && !prods.a_list.empty()) {
    prods.a_tensor = x.tensor_id;
    prods.b_tensor = w.tensor_id;
    prods.count = int64_t(prods.a_list.size());
    terms.push_back(e.call.sum_of_products(prods));
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
}

}  // namespace dirigo::aten::detail
