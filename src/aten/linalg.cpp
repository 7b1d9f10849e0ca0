// Matrix products: mm, bmm, addmm, baddbmm, matmul (with batch broadcasting),
// linear, mv, dot, outer, einsum. Each location is one sum of products, built
// with a single n-ary add.
#include <map>
#include <type_traits>

#include "aten/internal.h"

namespace dirigo::aten::detail {
namespace {

// The location's coordinates and the term index k, as ints at a concrete location and as BV64
// expressions at a symbolic one: each product's operand indices are written once, as generic
// functions (o, k) -> index over either.
template <class C>
C zero_of(const Env& e) {
  if constexpr (std::is_same_v<C, int64_t>) return 0;
  else return e.bv(0);
}

// sum_k a[ai(o, k)] * b[bi(o, k)], o the location's coordinates.
template <class AI, class BI>
Expr dot_product(const Env& e, const TensorRef& a, const TensorRef& b, int64_t K, AI ai, BI bi) {
  // One Reduce over k, the location's coordinates lifted past it (constants at a concrete location).
  auto reduce = [&] {
    std::vector<Expr> o;
    for (size_t d = 0; d < e.idx.size(); ++d) o.push_back(e.coord(d, 1));
    Expr k = e.cx.bound(0);
    Expr body = e.cx.mul(e.real_sym_at(a, ai(o, k)), e.real_sym_at(b, bi(o, k)));
    std::pair<int64_t, int64_t> box[] = {{0, K}};
    return e.cx.reduce_abstracted(ir::ReduceOp::Sum, box, body);
  };
  if (e.symbolic()) return reduce();
  const Index& o = e.idx;
  auto ai_k = [&](int64_t k) { return Index(ai(o, k)); };
  auto bi_k = [&](int64_t k) { return Index(bi(o, k)); };
  if (e.call.sum_of_products && is_floating(a.dtype) && is_floating(b.dtype) && K > 0) {
    Products p;  // every caller's index is affine in k (k is one coordinate of each operand)
    p.a_tensor = a.tensor_id;
    p.b_tensor = b.tensor_id;
    p.count = K;
    p.a_first = a.flat_index(ai_k(0));
    p.b_first = b.flat_index(bi_k(0));
    p.a_step = K > 1 ? a.flat_index(ai_k(1)) - p.a_first : 0;
    p.b_step = K > 1 ? b.flat_index(bi_k(1)) - p.b_first : 0;
    return e.call.sum_of_products(p);
  }
  if (e.try_reduce(K)) {
    try {
      Expr r = reduce();
      if (e.keep_reduce(K, r)) return r;
    } catch (const Env::NotSymbolic&) {  // an operand computed by an op without a symbolic form: expanded
    }
  }
  std::vector<Expr> terms;
  terms.reserve(K);
  for (int64_t k = 0; k < K; ++k) terms.push_back(e.cx.mul(e.real_at(a, ai_k(k)), e.real_at(b, bi_k(k))));
  return e.cx.add(terms);
}

// beta * self(broadcast) + alpha * product
Expr scaled_sum(const Env& e, Expr product) {
  auto& cx = e.cx;
  double beta = e.real("beta", 1.0), alpha = e.real("alpha", 1.0);
  Expr p = alpha == 1 ? product : cx.mul(e.num(alpha), product);
  if (beta == 0) return p;  // PyTorch ignores self (even NaN/Inf) when beta == 0
  Expr s = e.operand("self");
  return cx.add(beta == 1 ? s : cx.mul(e.num(beta), s), p);
}

Expr mm(const Env& e, const TensorRef& a, const TensorRef& b) {
  e.require(a.rank() == 2 && b.rank() == 2 && a.shape[1] == b.shape[0], "mm needs [m,k] x [k,n]");
  e.require_rank(2);
  return dot_product(e, a, b, a.shape[1], [](const auto& o, auto k) { return std::vector{o[0], k}; },
                     [](const auto& o, auto k) { return std::vector{k, o[1]}; });
}

Expr bmm(const Env& e, const TensorRef& a, const TensorRef& b) {
  e.require(a.rank() == 3 && b.rank() == 3 && a.shape[2] == b.shape[1], "bmm needs [b,m,k] x [b,k,n]");
  e.require_rank(3);
  return dot_product(e, a, b, a.shape[2], [](const auto& o, auto k) { return std::vector{o[0], o[1], k}; },
                     [](const auto& o, auto k) { return std::vector{o[0], k, o[2]}; });
}

// torch.matmul: 1-D operands are promoted (and the added dim dropped); batch dims broadcast.
Expr matmul(const Env& e, const TensorRef& a, const TensorRef& b) {
  size_t ra = a.rank(), rb = b.rank();
  if (ra == 0 || rb == 0) e.malformed("matmul of a 0-d tensor");
  const Index& o = e.idx;
  int64_t K = a.shape[ra - 1];
  // output = batch..., [i if ra>=2], [j if rb>=2]
  size_t tail = (ra >= 2 ? 1 : 0) + (rb >= 2 ? 1 : 0);
  e.require(b.shape[rb >= 2 ? rb - 2 : 0] == K, "matmul: inner dims differ");
  size_t rmax = std::max(ra, rb);
  e.require(o.size() == (rmax > 2 ? rmax - 2 : 0) + tail, "matmul: output rank does not match the operands");
  size_t nbatch = o.size() - tail;
  // An element of a or b (at coordinates oc, term k): a 1-d operand is indexed by k alone, a matrix by
  // its batch dims (right-aligned against the output's, broadcast where the operand's is 1) and
  // (row, col); row is the output's i (a) or k (b), col k (a) or the output's j (b).
  auto element = [&](const TensorRef& t, size_t rank, const auto& oc, auto k, bool is_a) {
    using C = std::decay_t<decltype(k)>;
    std::vector<C> r;
    if (rank == 1) return std::vector<C>{k};
    size_t tb = t.rank() - 2;
    for (size_t d = 0; d < tb; ++d) r.push_back(t.shape[d] == 1 ? zero_of<C>(e) : oc[nbatch - tb + d]);
    C i = ra >= 2 ? oc[nbatch] : zero_of<C>(e);
    C j = rb >= 2 ? oc[oc.size() - 1] : zero_of<C>(e);
    r.push_back(is_a ? i : k);
    r.push_back(is_a ? k : j);
    return r;
  };
  return dot_product(
      e, a, b, K, [&](const auto& oc, auto k) { return element(a, ra, oc, k, true); },
      [&](const auto& oc, auto k) { return element(b, rb, oc, k, false); });
}

// ---- einsum
struct Labels {
  std::vector<std::vector<int>> operands;  // label per operand dim
  std::vector<int> output;
};

// Letters become 0..51; the dims covered by "..." become 100+k counted from the right.
Labels parse_einsum(const Env& e, const std::string& eq, const std::vector<TensorRef>& ts) {
  std::string lhs = eq, rhs;
  bool explicit_out = false;
  if (auto arrow = eq.find("->"); arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
    explicit_out = true;
  }
  auto strip = [](std::string s) {
    std::string r;
    for (char c : s)
      if (c != ' ') r += c;
    return r;
  };
  lhs = strip(lhs);
  rhs = strip(rhs);
  std::vector<std::string> terms;
  size_t start = 0;
  for (size_t p = 0; p <= lhs.size(); ++p)
    if (p == lhs.size() || lhs[p] == ',') { terms.push_back(lhs.substr(start, p - start)); start = p + 1; }
  if (terms.size() != ts.size()) e.malformed("einsum equation names " + std::to_string(terms.size()) + " operands, got " + std::to_string(ts.size()));
  auto letter = [&](char c) -> int {
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
    e.malformed(std::string("einsum equation has invalid character '") + c + "'");
  };
  Labels L;
  size_t max_ell = 0;
  auto expand = [&](const std::string& t, int64_t rank) {
    std::vector<int> lab;
    size_t nletters = 0;
    for (size_t p = 0; p < t.size(); ++p) {
      if (t.compare(p, 3, "...") == 0) p += 2;
      else ++nletters;
    }
    int64_t ell = rank < 0 ? -1 : rank - static_cast<int64_t>(nletters);
    for (size_t p = 0; p < t.size(); ++p) {
      if (t.compare(p, 3, "...") == 0) {
        int64_t n = rank < 0 ? static_cast<int64_t>(max_ell) : ell;
        for (int64_t k = n; k-- > 0;) lab.push_back(100 + static_cast<int>(k));
        p += 2;
      } else {
        lab.push_back(letter(t[p]));
      }
    }
    if (ell > 0) max_ell = std::max(max_ell, static_cast<size_t>(ell));
    if (rank >= 0 && static_cast<int64_t>(lab.size()) != rank) e.malformed("einsum term '" + t + "' does not match its operand's rank");
    return lab;
  };
  for (size_t q = 0; q < ts.size(); ++q) L.operands.push_back(expand(terms[q], static_cast<int64_t>(ts[q].rank())));
  if (explicit_out) {
    L.output = expand(rhs, -1);
  } else {
    std::map<int, int> count;
    for (const auto& op : L.operands)
      for (int l : op) count[l]++;
    for (size_t k = max_ell; k-- > 0;) L.output.push_back(100 + static_cast<int>(k));
    for (auto [l, c] : count)
      if (l < 100 && c == 1) L.output.push_back(l);
  }
  return L;
}

Expr einsum(Env& e) {
  auto ts = e.tensors("tensors");
  Labels L = parse_einsum(e, e.str("equation"), ts);
  std::map<int, int64_t> size, value;
  for (size_t q = 0; q < ts.size(); ++q)
    for (size_t d = 0; d < ts[q].rank(); ++d) {
      int64_t& s = size[L.operands[q][d]];
      s = std::max(s, ts[q].shape[d]);
    }
  if (L.output.size() != e.idx.size()) e.malformed("einsum output rank does not match the output tensor");
  for (size_t d = 0; d < L.output.size(); ++d) value[L.output[d]] = e.idx[d];
  std::vector<int> summed;
  std::vector<int64_t> sum_shape;
  for (auto [l, s] : size)
    if (!value.count(l)) { summed.push_back(l); sum_shape.push_back(s); }
  std::vector<Expr> terms;
  for_each_index(sum_shape, [&](const Index& si) {
    for (size_t k = 0; k < summed.size(); ++k) value[summed[k]] = si[k];
    std::vector<Expr> factors;
    for (size_t q = 0; q < ts.size(); ++q) {
      Index ii(ts[q].rank());
      for (size_t d = 0; d < ii.size(); ++d) ii[d] = ts[q].shape[d] == 1 ? 0 : value[L.operands[q][d]];
      factors.push_back(e.real_at(ts[q], ii));
    }
    terms.push_back(e.cx.mul(factors));
  });
  return e.cx.add(terms);
}

}  // namespace

void register_linalg(Registry& r) {
  r.add("mm", "self mat2", [](Env& e) { return mm(e, e.tensor("self"), e.tensor("mat2")); });
  r.add("bmm", "self mat2", [](Env& e) { return bmm(e, e.tensor("self"), e.tensor("mat2")); });
  r.add("addmm", "self mat1 mat2 beta alpha", [](Env& e) {
    return scaled_sum(e, mm(e, e.tensor("mat1"), e.tensor("mat2")));
  });
  r.add("baddbmm", "self batch1 batch2 beta alpha", [](Env& e) {
    return scaled_sum(e, bmm(e, e.tensor("batch1"), e.tensor("batch2")));
  });
  r.add("matmul", "self other", [](Env& e) { return matmul(e, e.tensor("self"), e.tensor("other")); });
  r.add("mv", "self vec", [](Env& e) { return matmul(e, e.tensor("self"), e.tensor("vec")); });
  r.add("addmv", "self mat vec beta alpha", [](Env& e) {
    return scaled_sum(e, matmul(e, e.tensor("mat"), e.tensor("vec")));
  });
  for (auto [k, other] : {std::pair{"dot", "tensor"}, {"vdot", "other"}, {"inner", "other"}})
    r.add(k, std::string("self ") + other, [other = std::string(other)](Env& e) {
      const TensorRef& a = e.tensor("self");
      if (a.rank() != 1) e.unsupported("inner product of tensors of rank > 1");
      return matmul(e, a, e.tensor(other));
    });
  for (const char* k : {"outer", "ger"})
    r.add(k, "self vec2", [](Env& e) {
      e.require_rank(2);
      return e.cx.mul(e.real_at(e.tensor("self"), Index{e.idx[0]}), e.real_at(e.tensor("vec2"), Index{e.idx[1]}));
    });
  r.add("linear", "input weight bias", [](Env& e) {
    const TensorRef& x = e.tensor("input");
    const TensorRef& w = e.tensor("weight");
    e.require(x.rank() >= 1 && (w.rank() == 1 || w.rank() == 2) && w.shape.back() == x.shape.back(),
              "linear: weight must be [out, in] or [in]");
    e.require_rank(x.rank() - 1 + (w.rank() == 2 ? 1 : 0));
    const bool matrix = w.rank() == 2;
    Expr p = dot_product(
        e, x, w, x.shape.back(),
        [&](const auto& o, auto k) {
          std::vector<std::decay_t<decltype(k)>> xi(o.begin(), o.end() - (matrix ? 1 : 0));
          xi.push_back(k);
          return xi;
        },
        [&](const auto& o, auto k) { return matrix ? std::vector{o.back(), k} : std::vector{k}; });
    if (!e.given("bias")) return p;
    const TensorRef& b = e.tensor("bias");
    // at the location's last coordinate: the bias's broadcast (a symbolic location reads it so)
    return e.cx.add(p, e.real_at(b, b.rank() == 0 ? Index{} : Index{matrix ? e.idx.back() : 0}));
  });
  r.add("einsum", "equation tensors path", einsum);
  r.set_symbolic_location({"mm", "bmm", "addmm", "baddbmm", "matmul", "mv", "addmv", "linear"});
}

}  // namespace dirigo::aten::detail
