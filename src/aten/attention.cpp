// Scaled dot-product attention (all the fused overloads PyTorch dispatches to):
// out[b,h,l,:] = sum_s softmax_s(scale * q[b,h,l,:].k[b,h,s,:] + mask) * v[b,h,s,:],
// in the plain mathematical softmax form. Causal and boolean masks drop terms;
// float masks/biases are added to the scores. Output 1 is the logsumexp of the scores.
#include <cmath>

#include "aten/internal.h"

namespace dirigo::aten::detail {
namespace {

using ir::Fn;

Expr attention(Env& e, const char* mask_param) {
  auto& cx = e.cx;
  if (e.out > 1) e.unsupported("attention auxiliary output " + std::to_string(e.out));
  if (e.real("dropout_p", 0.0) > 0) e.unsupported("nondeterministic: attention dropout_p > 0");
  const TensorRef& q = e.tensor("query");
  const TensorRef& k = e.tensor("key");
  const TensorRef& v = e.tensor("value");
  size_t r = q.rank();
  if (r < 2 || k.rank() != r || v.rank() != r) e.malformed("query, key and value must have equal ranks >= 2");
  e.require_rank(e.out == 0 ? r : r - 1);  // output 1 (logsumexp) has no feature dim
  e.require(k.shape[r - 1] == q.shape[r - 1] && v.shape[r - 2] == k.shape[r - 2], "attention: q/k/v shapes disagree");
  for (size_t d = 0; d + 2 < r; ++d)
    e.require(k.shape[d] > 0 && v.shape[d] > 0 && q.shape[d] % k.shape[d] == 0 && q.shape[d] % v.shape[d] == 0,
              "attention: batch dims must divide");
  int64_t E = q.shape[r - 1], S = k.shape[r - 2];
  e.require(E > 0, "attention with an empty head dim");
  // batch index of the location (all dims but the last two), mapped onto key/value (GQA: fewer kv heads)
  Index qb(e.idx.begin(), e.idx.begin() + (r - 2));
  auto kv_batch = [&](const TensorRef& t) {
    Index b(r - 2);
    for (size_t d = 0; d < r - 2; ++d) {
      int64_t qs = q.shape[d], ts = t.shape[d];
      b[d] = ts == 1 ? 0 : ts == qs ? qb[d] : qb[d] / (qs / ts);
    }
    return b;
  };
  int64_t l = e.idx[r - 2];
  std::optional<double> scale = e.has_param("scale") ? e.opt_real("scale") : std::nullopt;
  Expr sc;
  if (scale) {
    sc = e.num(*scale);
  } else {
    auto root = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(E))));
    sc = root * root == E ? cx.real_const(mpq_class(1, static_cast<unsigned long>(root))) : e.num(1.0 / std::sqrt(static_cast<double>(E)));
  }
  bool causal = e.flag("is_causal", false);
  std::optional<TensorRef> mask = mask_param && e.given(mask_param) ? e.opt_tensor(mask_param) : std::nullopt;
  Index kb = kv_batch(k), vb = kv_batch(v);
  std::vector<Expr> weights;  // exp(score_s) for kept s
  std::vector<int64_t> kept;
  for (int64_t s = 0; s < S; ++s) {
    if (causal && s > l) continue;  // PyTorch's causal mask is the upper triangle of an L x S matrix
    Expr bias = nullptr, keep = nullptr;
    if (mask) {
      Index mi = e.idx;
      mi.back() = s;
      Expr m = e.at(*mask, broadcast_index(*mask, mi));
      if (mask->dtype == DType::Bool)  // True keeps the score; a dropped one adds 0 to both sums
        keep = cx.not_(cx.eq(m, cx.bv_const(m->sort, 0)));
      else
        bias = e.to_real(m, mask->dtype);
    }
    Index qi = qb, ki = kb;
    qi.push_back(l);
    ki.push_back(s);
    qi.push_back(0);
    ki.push_back(0);
    std::vector<Expr> dot;
    for (int64_t c = 0; c < E; ++c) {
      qi.back() = c;
      ki.back() = c;
      dot.push_back(cx.mul(e.real_at(q, qi), e.real_at(k, ki)));
    }
    Expr score = cx.mul(sc, cx.add(dot));
    if (bias) score = cx.add(score, bias);
    Expr w = cx.call(Fn::Exp, score);
    weights.push_back(keep ? cx.ite(keep, w, cx.real_const(0)) : w);
    kept.push_back(s);
  }
  if (weights.empty()) e.unsupported("attention row with every key masked out");
  Expr total = cx.add(weights);
  if (e.out == 1) return cx.call(Fn::Log, total);
  int64_t ev = e.idx[r - 1];
  std::vector<Expr> terms;
  for (size_t j = 0; j < kept.size(); ++j) {
    Index vi = vb;
    vi.push_back(kept[j]);
    vi.push_back(ev);
    terms.push_back(cx.mul(weights[j], e.real_at(v, vi)));
  }
  return cx.div(cx.add(terms), total);
}

}  // namespace

void register_attention(Registry& r) {
  r.add("_scaled_dot_product_flash_attention_for_cpu", "query key value dropout_p is_causal attn_mask scale",
        [](Env& e) { return attention(e, "attn_mask"); });
  r.add("_scaled_dot_product_flash_attention", "query key value dropout_p is_causal return_debug_mask scale",
        [](Env& e) { return attention(e, nullptr); });
  r.add("_scaled_dot_product_efficient_attention", "query key value attn_bias compute_log_sumexp dropout_p is_causal scale",
        [](Env& e) { return attention(e, "attn_bias"); });
  r.add("_scaled_dot_product_cudnn_attention",
        "query key value attn_bias compute_log_sumexp dropout_p is_causal return_debug_mask scale",
        [](Env& e) { return attention(e, "attn_bias"); });
  r.add("scaled_dot_product_attention", "query key value attn_mask dropout_p is_causal scale enable_gqa",
        [](Env& e) { return attention(e, "attn_mask"); });
}

}  // namespace dirigo::aten::detail
