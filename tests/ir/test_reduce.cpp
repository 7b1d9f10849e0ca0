// Reductions in the IR: hash-consing modulo renaming, instantiation and expansion, evaluation, printing,
// and one "applies / does not apply" case per reduction rule.
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <map>
#include <random>

#include "ir/eval.h"
#include "ir/expr.h"
#include "ir/print.h"
#include "ir/polynomial.h"
#include "ir/reduce.h"

using namespace dirigo::ir;

namespace {
struct Reduce : ::testing::Test {
  Context c;
  int32_t X = c.tensor("x"), W = c.tensor("w");
  Expr i = c.var("i", Sort::BV64), k = c.var("k", Sort::BV64), j = c.var("j", Sort::BV64);
  Expr bv(int64_t v) { return c.bv_const(Sort::BV64, static_cast<uint64_t>(v)); }
  // x[i*K + k] and w[k]
  Expr xk(Expr kk, int64_t K = 8192, int64_t row = 3) { return c.load(X, c.bv_add(bv(row * K), kk)); }
  Expr wk(Expr kk) { return c.load(W, kk); }
  Expr sum(Expr var, int64_t lo, int64_t hi, Expr body) {
    Expr vs[] = {var};
    std::pair<int64_t, int64_t> box[] = {{lo, hi}};
    return c.reduce(ReduceOp::Sum, vs, box, body);
  }
  Expr red(ReduceOp op, Expr var, int64_t lo, int64_t hi, Expr body) {
    Expr vs[] = {var};
    std::pair<int64_t, int64_t> box[] = {{lo, hi}};
    return c.reduce(op, vs, box, body);
  }
  std::string str(Expr e) { return to_string(c, e); }
  template <class F>
  void check(Rule rule, F build, Expr want) {
    c.reset_rule_stats();
    Expr on = build();
    EXPECT_EQ(on, want) << rule_name(rule) << ": got " << str(on) << " want " << str(want);
    EXPECT_GT(c.rule_applications(rule), 0u) << rule_name(rule) << " not counted";
    c.set_rule_enabled(rule, false);
    Expr off = build();
    c.set_rule_enabled(rule, true);
    EXPECT_NE(off, want) << rule_name(rule) << " disabled but result unchanged: " << str(off);
  }
  template <class F>
  void untouched(Rule rule, F build) {
    c.reset_rule_stats();
    build();
    EXPECT_EQ(c.rule_applications(rule), 0u) << rule_name(rule) << " fired on a near miss";
  }
  Env env() {
    Env e;
    e.elem = [](int32_t t, int64_t idx, Sort) { return Value::of_real(0.25 * double((idx * 7 + t * 3) % 11) - 1.0); };
    return e;
  }
};
}  // namespace

TEST_F(Reduce, HashConsedModuloRenaming) {
  Expr a = sum(k, 0, 8192, c.mul(xk(k), wk(k)));
  Expr b = sum(j, 0, 8192, c.mul(xk(j), wk(j)));
  EXPECT_EQ(a, b);  // the bound variable's name does not matter
  EXPECT_FALSE(a->has_free_bound());
  EXPECT_NE(a, sum(k, 0, 4096, c.mul(xk(k), wk(k))));
  EXPECT_NE(a, sum(k, 0, 8192, c.mul(xk(k, 8192, 4), wk(k))));
  EXPECT_LT(a->size, 20u);  // not 8192 products
}

TEST_F(Reduce, PrintsAsSigma) {
  Expr a = sum(k, 0, 8192, c.mul(xk(k), wk(k)));
  std::string s = str(a);
  EXPECT_NE(s.find("Σ_{k0<8192}"), std::string::npos) << s;
  EXPECT_NE(s.find("x["), std::string::npos) << s;
}

TEST_F(Reduce, InstantiateAndExpandMatchTheOldForm) {
  Expr a = sum(k, 0, 16, c.mul(xk(k, 16), wk(k)));
  std::vector<Expr> terms;
  for (int64_t q = 0; q < 16; ++q) terms.push_back(c.mul(c.elem(X, 3 * 16 + q), c.elem(W, q)));
  EXPECT_EQ(expand_reduce(c, a), c.add(terms));
  int64_t p[] = {5};
  EXPECT_EQ(instantiate(c, a, p), c.mul(c.elem(X, 53), c.elem(W, 5)));
  EXPECT_EQ(expand_reductions(c, c.add(a, c.real_const(1)), 16), c.add(c.add(terms), c.real_const(1)));
  EXPECT_EQ(expand_reductions(c, a, 15), a);  // above the threshold: kept
}

TEST_F(Reduce, EvaluatesLikeItsExpansion) {
  Expr a = sum(k, 0, 100, c.mul(xk(k, 100), wk(k)));
  Expr m = red(ReduceOp::Max, k, 0, 100, xk(k, 100));
  for (Precision p : {Precision::F64, Precision::F32}) {
    Evaluator e1(env(), p), e2(env(), p);
    double va = e1(a).real, vb = e2(expand_reduce(c, a)).real;  // summation orders differ
    EXPECT_NEAR(va, vb, 1e-4 * (1 + std::abs(vb)));
    EXPECT_EQ(e1(m).real, e2(expand_reduce(c, m)).real);
  }
}

TEST_F(Reduce, NestedWithOuterIndex) {
  // Σ_i max_k x[i*8 + k]: the inner body reads the outer index
  Expr inner = red(ReduceOp::Max, k, 0, 8, c.load(X, c.bv_add(c.bv_mul(bv(8), i), k)));
  EXPECT_TRUE(inner->has_free_bound() == false);  // i is still a free Var here
  Expr outer = sum(i, 0, 4, inner);
  EXPECT_FALSE(outer->has_free_bound());
  std::vector<Expr> terms;
  for (int64_t r = 0; r < 4; ++r) {
    std::vector<Expr> row;
    for (int64_t q = 0; q < 8; ++q) row.push_back(c.elem(X, 8 * r + q));
    terms.push_back(c.max(row));
  }
  EXPECT_EQ(expand_reductions(c, outer, 100), c.add(terms));
  Evaluator e1(env()), e2(env());
  EXPECT_NEAR(e1(outer).real, e2(c.add(terms)).real, 1e-9);
}

TEST_F(Reduce, NestedSharedAcrossBodiesEvaluatesAsExpanded) {
  // Σ_i sigmoid(h_i) and max_i h_i with h_i = Σ_k x[5i + k] w[k]: h_i is opened in two bodies (and
  // on both sides of a pair), evaluated once per i; every value is the expanded form's (the sum's up
  // to the order an n-ary add sorts its terms in).
  Expr h = sum(k, 0, 5, c.mul(c.load(X, c.bv_add(c.bv_mul(bv(5), i), k)), wk(k)));
  Expr s = sum(i, 0, 7, c.call(Fn::Sigmoid, h));
  Expr m = red(ReduceOp::Max, i, 0, 7, h);
  Expr both = c.add(s, c.mul(c.real_const(3), m));
  for (Precision p : {Precision::F64, Precision::F32}) {
    Evaluator e1(env(), p), e2(env(), p), e3(env(), p);
    double once = e1(both).real, again = e1(both).real;  // the memo of opened reductions changes no value
    EXPECT_EQ(once, again);
    double vs = e1(s).real, ws = e2(expand_reductions(c, s, 1000)).real;
    EXPECT_NEAR(vs, ws, 1e-6 * (1 + std::abs(ws)));
    EXPECT_EQ(e1(m).real, e3(expand_reductions(c, m, 1000)).real);
  }
  EXPECT_EQ(reduce_terms(s), 7u * 5u);
  // a closed reduction inside a body is evaluated once, not at every point
  Expr closed = sum(k, 0, 100, wk(k));
  EXPECT_EQ(reduce_terms(sum(i, 0, 7, c.call(Fn::Sigmoid, c.mul(closed, xk(i, 7))))), 7u + 100u);
}

TEST_F(Reduce, InvariantBodyReadingAnEnclosingIndex) {
  // Σ_{i<3} Σ_{k<4} x[i]: the inner body reads only the enclosing index (Bound 1); dropping the inner
  // binder moves it to Bound 0 (an enclosing index is not captured by the binders it is moved past)
  std::pair<int64_t, int64_t> b4[] = {{0, 4}}, b3[] = {{0, 3}};
  Expr inner = c.reduce_abstracted(ReduceOp::Sum, b4, c.load(X, c.bound(1)));
  EXPECT_EQ(inner, c.mul(c.real_const(4), c.load(X, c.bound(0))));
  Expr outer = c.reduce_abstracted(ReduceOp::Sum, b3, inner);
  Expr want = c.mul(c.real_const(4), c.add(std::vector<Expr>{c.elem(X, 0), c.elem(X, 1), c.elem(X, 2)}));
  EXPECT_EQ(expand_reductions(c, outer, 100), want);
}

TEST_F(Reduce, EmptyAndOnePoint) {
  check(Rule::ReduceEmpty, [&] { return sum(k, 3, 3, wk(k)); }, c.real_const(0));
  check(Rule::ReduceEmpty, [&] { return sum(k, 3, 4, wk(k)); }, c.elem(W, 3));
  untouched(Rule::ReduceEmpty, [&] { return sum(k, 0, 2, wk(k)); });
}

TEST_F(Reduce, InvariantBody) {
  Expr y = c.var("y", Sort::Real);
  check(Rule::ReduceInvariant, [&] { return sum(k, 0, 8192, y); }, c.mul(c.real_const(8192), y));
  check(Rule::ReduceInvariant, [&] { return red(ReduceOp::Max, k, 0, 8192, y); }, y);
  untouched(Rule::ReduceInvariant, [&] { return sum(k, 0, 8192, c.mul(y, wk(k))); });
}

TEST_F(Reduce, FactorOutOfSum) {
  Expr y = c.var("y", Sort::Real);
  Expr base = sum(k, 0, 8192, c.mul(xk(k), wk(k)));
  check(Rule::ReduceFactor, [&] { return sum(k, 0, 8192, c.mul(std::vector<Expr>{c.real_const(3), y, xk(k), wk(k)})); },
        c.mul(std::vector<Expr>{c.real_const(3), y, base}));
  // max commutes with a positive constant only
  Expr mx = red(ReduceOp::Max, k, 0, 8192, xk(k));
  check(Rule::ReduceFactor, [&] { return red(ReduceOp::Max, k, 0, 8192, c.mul(c.real_const(2), xk(k))); },
        c.mul(c.real_const(2), mx));
  untouched(Rule::ReduceFactor, [&] { return red(ReduceOp::Max, k, 0, 8192, c.mul(c.real_const(-2), xk(k))); });
  // a mean of clamped values built term by term: the scale MulDistributeMinMax moved into the clamp
  auto clamp = [&](Expr lo, Expr hi, Expr v) { return c.min(hi, c.max(lo, v)); };
  Expr q = c.real_const(mpq_class(1, 64));
  check(Rule::ReduceFactor, [&] { return sum(k, 0, 64, clamp(c.real_const(mpq_class(-1, 64)), q, c.mul(q, xk(k)))); },
        c.mul(q, sum(k, 0, 64, clamp(c.real_const(-1), c.real_const(1), xk(k)))));
  untouched(Rule::ReduceFactor, [&] { return sum(k, 0, 64, clamp(c.real_const(-1), c.real_const(1), xk(k))); });
  untouched(Rule::ReduceFactor, [&] { return sum(k, 0, 8192, c.mul(xk(k), wk(k))); });
  // a pool of a scaled linear layer: max_k (x(k)/2 + w(k)/2), the scale distributed into the sum
  Expr h = c.real_const(mpq_class(1, 2));
  check(Rule::ReduceFactor, [&] { return red(ReduceOp::Max, k, 0, 2, c.add(c.mul(h, xk(k)), c.mul(h, wk(k)))); },
        c.mul(h, red(ReduceOp::Max, k, 0, 2, c.add(xk(k), wk(k)))));
  untouched(Rule::ReduceFactor, [&] { return red(ReduceOp::Max, k, 0, 2, c.add(xk(k), wk(k))); });
  untouched(Rule::ReduceFactor,
            [&] { return red(ReduceOp::Min, k, 0, 2, c.add(c.mul(c.real_const(-2), xk(k)), c.mul(c.real_const(-2), wk(k)))); });
}

TEST_F(Reduce, SplitSum) {
  Expr y = c.var("y", Sort::Real);
  Expr want = c.add(sum(k, 0, 8192, xk(k)), c.mul(c.real_const(8192), y));
  check(Rule::ReduceSplitSum, [&] { return sum(k, 0, 8192, c.add(xk(k), y)); }, want);
  untouched(Rule::ReduceSplitSum, [&] { return red(ReduceOp::Max, k, 0, 8192, c.add(xk(k), y)); });
}

TEST_F(Reduce, Flatten) {
  Expr body = c.load(X, c.bv_add(c.bv_mul(bv(8), i), k));
  Expr flat = [&] {
    Expr vs[] = {i, k};
    std::pair<int64_t, int64_t> box[] = {{0, 4}, {0, 8}};
    return c.reduce(ReduceOp::Sum, vs, box, body);
  }();
  check(Rule::ReduceFlatten, [&] { return sum(i, 0, 4, sum(k, 0, 8, body)); }, flat);
  untouched(Rule::ReduceFlatten, [&] { return sum(i, 0, 4, red(ReduceOp::Max, k, 0, 8, body)); });
}

TEST_F(Reduce, MergeAdjacentDomains) {
  Expr body = c.mul(xk(k), wk(k));
  Expr whole = sum(k, 0, 8192, body);
  check(Rule::ReduceMerge, [&] { return c.add(sum(k, 0, 4096, body), sum(k, 4096, 8192, body)); }, whole);
  // with a coefficient on both, and inside a larger sum
  Expr y = c.var("y", Sort::Real);
  check(Rule::ReduceMerge,
        [&] { return c.add(c.add(c.mul(c.real_const(2), sum(k, 0, 100, body)), y), c.mul(c.real_const(2), sum(k, 100, 8192, body))); },
        c.add(c.mul(c.real_const(2), sum(k, 0, 8192, body)), y));
  Expr mx = red(ReduceOp::Max, k, 0, 8192, xk(k));
  check(Rule::ReduceMerge, [&] { return c.max(red(ReduceOp::Max, k, 0, 10, xk(k)), red(ReduceOp::Max, k, 10, 8192, xk(k))); }, mx);
  // a gap, or different bodies: kept apart
  untouched(Rule::ReduceMerge, [&] { return c.add(sum(k, 0, 4000, body), sum(k, 4096, 8192, body)); });
  untouched(Rule::ReduceMerge, [&] { return c.add(sum(k, 0, 4096, body), sum(k, 4096, 8192, xk(k))); });
}

TEST_F(Reduce, DomainDifference) {
  Expr body = c.mul(xk(k), wk(k));
  Expr a = sum(k, 0, 8192, body), b = sum(k, 0, 4096, body);
  auto d = domain_difference(c, a, b);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->in_a);
  EXPECT_EQ(d->only_a, 4096u);
  EXPECT_EQ(d->only_b, 0u);
  ASSERT_EQ(d->point.size(), 1u);
  EXPECT_GE(d->point[0], 4096);
  EXPECT_FALSE(domain_difference(c, a, a));
  EXPECT_FALSE(domain_difference(c, a, sum(k, 0, 4096, xk(k))));
}

TEST_F(Reduce, OriginAtZero) {
  // Σ_{k∈[1,n)} x[k] (a range) and Σ_{k<n-1} x[k+1] (a slice) are one node
  auto range = [&] { return sum(k, 1, 8192, xk(k)); };
  Expr slice = sum(k, 0, 8191, xk(c.bv_add(k, bv(1))));
  check(Rule::ReduceOrigin, range, slice);
  EXPECT_EQ(reduce_box(slice), (Box{{0, 8191}}));
  // the enclosing reduction's index is left alone: Σ_i Σ_{k∈[2,8)} x[8i + k]
  Expr body = c.load(X, c.bv_add(c.bv_mul(bv(8), i), k));
  Expr inner = red(ReduceOp::Max, k, 2, 8, body);
  Expr outer = sum(i, 0, 4, inner);
  std::vector<Expr> terms;
  for (int64_t r = 0; r < 4; ++r) {
    std::vector<Expr> row;
    for (int64_t q = 2; q < 8; ++q) row.push_back(c.elem(X, 8 * r + q));
    terms.push_back(c.max(row));
  }
  EXPECT_EQ(expand_reductions(c, outer, 100), c.add(terms));
  Evaluator e1(env()), e2(env());
  EXPECT_EQ(e1(range()).real, e2(expand_reduce(c, slice)).real);
  untouched(Rule::ReduceOrigin, [&] { return sum(k, 0, 8192, xk(k)); });
}

TEST_F(Reduce, MergeChunksAtAnOffset) {
  // with ReduceOrigin the second chunk reads x[k + 4096] over [0, 4096): aligned, then merged
  Expr whole = sum(k, 0, 8192, c.mul(xk(k), wk(k)));
  check(Rule::ReduceMerge,
        [&] { return c.add(sum(k, 4096, 8192, c.mul(xk(k), wk(k))), sum(k, 0, 4096, c.mul(xk(k), wk(k)))); }, whole);
  // three chunks of a 2-d box, listed out of order
  auto box2 = [&](int64_t lo, int64_t hi) {
    Expr vs[] = {i, k};
    std::pair<int64_t, int64_t> b[] = {{0, 4}, {lo, hi}};
    return c.reduce(ReduceOp::Sum, vs, b, c.load(X, c.bv_add(c.bv_mul(bv(64), i), k)));
  };
  check(Rule::ReduceMerge, [&] { return c.add(std::vector<Expr>{box2(32, 64), box2(0, 16), box2(16, 32)}); }, box2(0, 64));
  // an offset that leaves a gap (x[k+4097]) or a different stride (x[2k]) does not merge
  untouched(Rule::ReduceMerge, [&] { return c.add(sum(k, 4097, 8192, xk(k)), sum(k, 0, 4096, xk(k))); });
  untouched(Rule::ReduceMerge, [&] { return c.add(sum(k, 0, 4096, xk(c.bv_mul(bv(2), k))), sum(k, 0, 4096, xk(k))); });
}

TEST_F(Reduce, BodyOffset) {
  Expr a = sum(k, 0, 1 << 20, xk(k, 1 << 20)), b = sum(k, 0, (1 << 20) - 1, xk(c.bv_add(k, bv(1)), 1 << 20));
  auto off = body_offset(c, a, b);
  ASSERT_TRUE(off);
  EXPECT_EQ(*off, std::vector<int64_t>{1});
  // two dims: x[64(i+1) + (k+2)] is x[64i + k] at offset (1, 2)
  auto two = [&](Expr di, Expr dk) {
    Expr vs[] = {i, k};
    std::pair<int64_t, int64_t> bx[] = {{0, 4}, {0, 32}};
    return c.reduce(ReduceOp::Sum, vs, bx, c.load(X, c.bv_add(c.bv_mul(bv(64), c.bv_add(i, di)), c.bv_add(k, dk))));
  };
  auto off2 = body_offset(c, two(bv(0), bv(0)), two(bv(1), bv(2)));
  ASSERT_TRUE(off2);
  EXPECT_EQ(*off2, (std::vector<int64_t>{1, 2}));
  // reads of another tensor, another op, or a non-affine index: no offset
  EXPECT_FALSE(body_offset(c, a, sum(k, 0, 100, wk(k))));
  EXPECT_FALSE(body_offset(c, a, red(ReduceOp::Max, k, 0, 100, xk(k, 1 << 20))));
  EXPECT_FALSE(body_offset(c, a, sum(k, 0, 100, c.load(X, c.bv_udiv(k, bv(3))))));
}

TEST_F(Reduce, DomainDifferenceAtAnOffset) {
  // sum_dim/buggy: x[:, 1:].sum(1) against x.sum(1): the reference's first element is the lone term
  const int64_t n = 1 << 20;
  Expr a = sum(k, 0, n, xk(k, n)), b = sum(k, 0, n - 1, xk(c.bv_add(k, bv(1)), n));
  auto d = domain_difference(c, a, b);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->in_a);
  EXPECT_EQ(d->only_a, 1u);
  EXPECT_EQ(d->only_b, 0u);
  EXPECT_EQ(d->point, std::vector<int64_t>{0});
  EXPECT_EQ(instantiate(c, a, d->point), c.elem(X, 3 * n));
  // a shifted read over the whole range: one point on each side; b's in b's coordinates
  Expr s = sum(k, 0, n, xk(c.bv_add(k, bv(1)), n));
  auto e = domain_difference(c, s, a);  // a reads s's body at k - 1
  ASSERT_TRUE(e);
  EXPECT_EQ(e->only_a, 1u);
  EXPECT_EQ(e->only_b, 1u);
  EXPECT_EQ(instantiate(c, e->in_a ? s : a, e->point), e->in_a ? c.elem(X, 3 * n + n) : c.elem(X, 3 * n));
  // the same terms: no difference
  EXPECT_FALSE(domain_difference(c, b, sum(k, 1, n, xk(k, n))));
}

TEST_F(Reduce, BadInputIsAnError) {
  Expr vs[] = {k};
  std::pair<int64_t, int64_t> bad[] = {{5, 3}};
  EXPECT_THROW(c.reduce(ReduceOp::Sum, vs, bad, wk(k)), std::invalid_argument);
  std::pair<int64_t, int64_t> empty[] = {{0, 0}};
  EXPECT_THROW(c.reduce(ReduceOp::Max, vs, empty, wk(k)), std::invalid_argument);
  std::pair<int64_t, int64_t> ok[] = {{0, 4}};
  EXPECT_THROW(c.reduce(ReduceOp::Sum, vs, ok, c.var("b", Sort::BV32)), std::invalid_argument);
  EXPECT_THROW(to_smtlib(c, sum(k, 0, 8, wk(k))), std::invalid_argument);
}

// ---- sparse points (Env::support): a reduction evaluated only where its body can be nonzero
namespace {
struct SparseEnv {
  std::map<int32_t, std::vector<int64_t>> support;  // sorted
  std::map<std::pair<int32_t, int64_t>, double> values;
  Env env(bool sparse) const {
    Env e;
    e.elem = [this](int32_t t, int64_t i, Sort) {
      auto it = values.find({t, i});
      return Value::of_real(it == values.end() ? 0.0 : it->second);
    };
    if (sparse)
      e.support = [this](int32_t t) -> const std::vector<int64_t>* {
        auto it = support.find(t);
        return it == support.end() ? nullptr : &it->second;
      };
    return e;
  }
  void set(int32_t t, int64_t i, double v) {
    values[{t, i}] = v;
    auto& s = support[t];
    s.insert(std::lower_bound(s.begin(), s.end(), i), i);
  }
};
}  // namespace

TEST_F(Reduce, SparsePointsEvaluateAsEveryPoint) {
  int32_t B = c.tensor("b");
  Expr p = c.var("p", Sort::BV64), h = c.var("h", Sort::BV64);
  const int64_t N = 8, K = 16;
  // Σ_j max_p (Σ_k x[k]·W[(2j+p)K + k] + b[2j+p]) / 2: a GEMM row under a max-pool and a sum
  Expr row = c.bv_add(c.bv_mul(bv(2), j), p);
  Expr gemm = sum(k, 0, K, c.mul(c.load(X, k), c.load(W, c.bv_add(c.bv_mul(bv(K), row), k))));
  Expr pooled = red(ReduceOp::Max, p, 0, 2, c.add(gemm, c.load(B, row)));
  Expr e1 = c.mul(c.real_const(mpq_class(1, 2)), sum(j, 0, N, pooled));
  // a padded 1-d convolution: Σ_h Σ_kh ite(0 <= h+kh-1 < N, x[h+kh-1], 0)·w[kh]
  Expr at = c.bv_add(std::vector<Expr>{h, k, bv(-1)});
  Expr inside = c.ult(at, bv(N));
  Expr conv = sum(h, 0, N, sum(k, 0, 3, c.mul(c.ite(inside, c.load(X, at), c.real_const(0)), c.load(W, k))));
  // a max over products (the rest of it is one 0), a body with a term of no read (no restriction)
  Expr mx = red(ReduceOp::Max, k, 0, K, c.mul(c.load(X, k), c.load(W, k)));
  Expr mn = red(ReduceOp::Min, k, 0, K, c.mul(c.load(X, k), c.load(B, c.bv_add(k, bv(1)))));
  Expr dense_body = sum(k, 0, K, c.add(c.load(X, k), c.real_const(1)));
  Expr recip = sum(k, 0, K, c.mul(c.load(X, k), c.call(Fn::Recip, c.add(c.load(W, k), c.real_const(3)))));
  // a function that is 0 at 0 (gelu) of a nested sum, and one that is not (sigmoid)
  Expr window = sum(k, 0, 3, c.mul(c.load(X, c.bv_add(h, k)), c.load(W, k)));
  Expr gelu = sum(h, 0, K - 2, c.call(Fn::GeluErf, c.add(c.load(B, h), window)));
  Expr sig = sum(h, 0, K - 2, c.mul(c.load(B, h), c.call(Fn::Sigmoid, window)));
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    SparseEnv s;
    for (int32_t t : {X, W, B}) {
      int count = int(rng() % 4);
      int64_t extent = t == W ? 2 * N * K : t == X ? K : 2 * N + 1;
      for (int q = 0; q < count; ++q) {
        int64_t at = int64_t(rng() % uint64_t(extent));
        if (!s.values.count({t, at})) s.set(t, at, double(int64_t(rng() % 2001) - 1000) / 37.0);
      }
      s.support[t];  // a tensor with no element set is all 0
    }
    for (Expr e : {e1, conv, mx, mn, dense_body, recip, gelu, sig})
      for (Precision pr : {Precision::F64, Precision::F32}) {
        Env sparse = s.env(true), dense = s.env(false);
        double a = Evaluator(sparse, pr).real(e), b = Evaluator(dense, pr).real(e);
        // bit for bit; a max or min of ±0 ties may keep the other zero
        if (e == mx || e == mn) EXPECT_EQ(a, b) << str(e) << " trial " << trial;
        else EXPECT_EQ(std::bit_cast<uint64_t>(a), std::bit_cast<uint64_t>(b)) << str(e) << " trial " << trial << ": " << a << " vs " << b;
      }
  }
}

TEST_F(Reduce, SparsePointsMakeAGiantShortenedSumCheap) {
  int32_t B = c.tensor("b");
  const int64_t N = 32768, K = 32768;  // 2^30 products
  auto model = [&](int64_t rows) {
    Expr gemm = sum(k, 0, K, c.mul(c.load(X, k), c.load(W, c.bv_add(c.bv_mul(bv(K), j), k))));
    return sum(j, 0, rows, c.max(gemm, c.load(B, j)));
  };
  Expr ref = model(N), cand = model(N - 1);  // the candidate drops the last row
  SparseEnv s;
  s.set(X, 5, 10.0);
  s.set(W, (N - 1) * K + 5, 10.0);
  s.set(B, N - 1, 10.0);
  Env env = s.env(true);
  env.max_dense_points = 1 << 20;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Evaluator(env, Precision::F64).real(ref), 100.0);
  EXPECT_EQ(Evaluator(env, Precision::F32).real(cand), 0.0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  // a reduction no zero read restricts is refused past max_dense_points instead of expanded
  Expr unrestricted = sum(k, 0, int64_t(1) << 30, c.call(Fn::Exp, c.load(X, k)));
  EXPECT_THROW(Evaluator(env, Precision::F64).real(unrestricted), std::runtime_error);
}

// A block-stride loop's partials (thread t sums x[t + 4k], k < 8) combined by a tree: one sum over
// x[0..32); exact, so the merged form equals the reference's reduction node for node.
TEST_F(Reduce, MergeInterleavedPartials) {
  auto body = [&](int64_t t) { return c.call(Fn::Exp, c.load(X, c.bv_add(bv(t), c.bv_mul(bv(4), k)))); };
  Expr whole = sum(j, 0, 32, c.call(Fn::Exp, c.load(X, j)));
  std::vector<Expr> parts;
  for (int64_t t : {2, 0, 3, 1}) parts.push_back(sum(k, 0, 8, body(t)));
  EXPECT_EQ(merge_interleaved(c, c.add(parts)), whole);
  // max alike, next to an initial value (the accumulator's 0), and inside an enclosing expression
  std::vector<Expr> maxes{c.real_const(0)};
  for (int64_t t : {0, 1, 2, 3}) maxes.push_back(red(ReduceOp::Max, k, 0, 8, body(t)));
  Expr m = c.mul(c.real_const(2), c.max(maxes));
  Expr want = c.mul(c.real_const(2), c.max(c.real_const(0), red(ReduceOp::Max, j, 0, 32, c.call(Fn::Exp, c.load(X, j)))));
  EXPECT_EQ(merge_interleaved(c, m), want) << str(m) << "\n" << str(merge_interleaved(c, m)) << "\n" << str(want);
}

// A block-stride dot product's 64 partials, x[r + t + 64k]·w[q + t + 64k]: canonical operand order
// follows the indices' hashes, so in some partials w's read comes first; each partial's read of
// x is matched, not its first read.
TEST_F(Reduce, MergeInterleavedMatchesReadsWhateverTheirOperandOrder) {
  const int64_t n = 64, T = 8, r = 512, q = 4096;
  auto body = [&](Expr at) { return c.mul(c.load(X, c.bv_add(bv(r), at)), c.load(W, c.bv_add(bv(q), at))); };
  std::vector<Expr> parts;
  size_t x_first = 0;
  for (int64_t t = 0; t < n; ++t) {
    Expr b = body(c.bv_add(bv(t), c.bv_mul(bv(n), k)));
    x_first += b->arg(0)->tensor() == X;
    parts.push_back(sum(k, 0, T, b));
  }
  ASSERT_GT(x_first, 0u);
  ASSERT_LT(x_first, size_t(n));  // both orders occur
  EXPECT_EQ(merge_interleaved(c, c.add(parts)), sum(j, 0, n * T, body(j)));
  // each thread's two dot products summed (x·w and x·w at another row): two loops' partials in one
  // sum, merged body by body
  auto other = [&](Expr at) { return c.mul(c.load(X, c.bv_add(bv(r), at)), c.load(W, c.bv_add(bv(2 * q), at))); };
  std::vector<Expr> both = parts;
  for (int64_t t = 0; t < n; ++t) both.push_back(sum(k, 0, T, other(c.bv_add(bv(t), c.bv_mul(bv(n), k)))));
  EXPECT_EQ(merge_interleaved(c, c.add(both)), c.add(sum(j, 0, n * T, body(j)), sum(j, 0, n * T, other(j))));
  // a read that stays put in every partial (w at a symbolic index v) does not tell bodies apart
  Expr v = c.var("v", Sort::BV64, Bounds{0, 15});
  auto scaled = [&](Expr at) { return c.call(Fn::Exp, c.sub(c.load(X, c.bv_add(bv(r), at)), c.load(W, v))); };
  std::vector<Expr> still;
  for (int64_t t = 0; t < n; ++t) still.push_back(sum(k, 0, T, scaled(c.bv_add(bv(t), c.bv_mul(bv(n), k)))));
  EXPECT_EQ(merge_interleaved(c, c.add(still)), sum(j, 0, n * T, scaled(j)));
}

// n not a multiple of the block: partials of 7 points for every thread, and the threads t < 2 ran an
// eighth iteration (loose terms x[28], x[29]): one sum over x[0..30).
TEST_F(Reduce, MergeInterleavedAbsorbsTheRemainderTerms) {
  std::vector<Expr> parts;
  for (int64_t t : {0, 1, 2, 3}) parts.push_back(sum(k, 0, 7, c.load(X, c.bv_add(bv(t), c.bv_mul(bv(4), k)))));
  parts.push_back(c.load(X, bv(28)));
  parts.push_back(c.load(X, bv(29)));
  EXPECT_EQ(merge_interleaved(c, c.add(parts)), sum(j, 0, 30, c.load(X, j)));
  // a term past a gap stays
  parts.back() = c.load(X, bv(30));
  EXPECT_EQ(merge_interleaved(c, c.add(parts)), c.add(sum(j, 0, 29, c.load(X, j)), c.load(X, bv(30))));
}

// A variance's cross term over an unrolled-by-4 loop, -m·Σ_k x[4k+t] for each t, next to the other
// program's -m·Σ_j x[j]: collected, the partials are the row's sum again and the two are one node.
TEST_F(Reduce, CollectPartialSumsMergesPartialsThatMultiplyOneFactor) {
  Expr row = sum(j, 0, 32, c.load(X, j));
  Expr m = c.mul(c.real_const(mpq_class(1, 32)), row);
  auto part = [&](int64_t t) { return sum(k, 0, 8, c.load(X, c.bv_add(bv(t), c.bv_mul(bv(4), k)))); };
  std::vector<Expr> terms{c.load(W, bv(0))};
  for (int64_t t : {0, 1, 2, 3}) terms.push_back(c.mul(std::vector<Expr>{c.real_const(-2), m, part(t)}));
  Expr kernel = c.add(terms);
  Expr reference = c.add(c.load(W, bv(0)), c.mul(std::vector<Expr>{c.real_const(-2), m, row}));
  ASSERT_NE(kernel, reference);
  EXPECT_EQ(collect_partial_sums(c, kernel), reference) << str(collect_partial_sums(c, kernel));
  // expanded partials (plain sums) collect into the whole sum as well
  auto plain = [&](int64_t t) {
    std::vector<Expr> xs;
    for (int64_t q = 0; q < 8; ++q) xs.push_back(c.elem(X, t + 4 * q));
    return c.add(xs);
  };
  std::vector<Expr> xs;
  for (int64_t q = 0; q < 32; ++q) xs.push_back(c.elem(X, q));
  Expr s = c.add(xs), y = c.elem(W, 1);
  std::vector<Expr> pt;
  for (int64_t t : {0, 1, 2, 3}) pt.push_back(c.mul(std::vector<Expr>{c.real_const(3), y, s, plain(t)}));
  EXPECT_EQ(collect_partial_sums(c, c.add(pt)), c.mul(std::vector<Expr>{c.real_const(3), y, s, s}));
  // terms whose other factors differ stay apart
  Expr apart = c.add(c.mul(y, part(0)), c.mul(c.elem(W, 2), part(1)));
  EXPECT_EQ(collect_partial_sums(c, apart), apart);
}

// (x0 - S/4)·r and the distributed (3/4·x0 - x1/4 - x2/4 - x3/4)·r: two nodes, one polynomial.
TEST_F(Reduce, ExpansionProvesARingIdentityTheCanonicalFormsKeepApart) {
  std::vector<Expr> xs;
  for (int64_t q = 0; q < 4; ++q) xs.push_back(c.elem(X, q));
  // a sum past kDistributeLimit keeps the product factored
  std::vector<Expr> big;
  for (int64_t q = 0; q < 100; ++q) big.push_back(c.elem(W, q));
  Expr S = c.add(big), r = c.call(Fn::Exp, c.elem(X, 9));
  Expr a = c.mul(c.sub(xs[0], c.mul(c.real_const(mpq_class(1, 100)), S)), c.mul(r, S));
  std::vector<Expr> spread;
  for (int64_t q = 0; q < 100; ++q)
    spread.push_back(c.mul(std::vector<Expr>{c.real_const(mpq_class(-1, 100)), c.elem(W, q), r, S}));
  Expr b = c.add(c.mul(std::vector<Expr>{xs[0], r, S}), c.add(spread));
  ASSERT_NE(c.sub(a, b), c.real_const(0));
  EXPECT_EQ(expansion(c, c.sub(a, b)), c.real_const(0));
  // inside an atom: exp of the two forms is one atom after expansion
  EXPECT_EQ(expansion(c, c.sub(c.call(Fn::Exp, a), c.call(Fn::Exp, b))), c.real_const(0));
  // a real difference stays
  Expr off = c.add(b, c.mul(r, c.elem(W, 3)));
  EXPECT_NE(expansion(c, c.sub(a, off)), c.real_const(0));
  // past the term budget a product stays one atom: nothing is claimed
  ExpansionOptions small;
  small.max_terms = 50;
  EXPECT_NE(expansion(c, c.sub(a, b), small), c.real_const(0));
  EXPECT_EQ(expansion(c, c.add(c.undef(Sort::Real), a)), nullptr);
}

TEST_F(Reduce, MergeInterleavedLeavesGapsAndMixedBodies) {
  auto part = [&](int64_t t, int32_t tensor) { return sum(k, 0, 8, c.load(tensor, c.bv_add(bv(t), c.bv_mul(bv(4), k)))); };
  // a missing residue class (t = 2): not the whole range
  Expr gap = c.add(std::vector<Expr>{part(0, X), part(1, X), part(3, X)});
  EXPECT_EQ(merge_interleaved(c, gap), gap);
  // one partial reads another tensor
  Expr mixed = c.add(std::vector<Expr>{part(0, X), part(1, X), part(2, W), part(3, X)});
  EXPECT_EQ(merge_interleaved(c, mixed), mixed);
  // a body that uses k other than in a read index
  auto odd = [&](int64_t t) { return sum(k, 0, 8, c.mul(c.bv_to_real(k, false), c.load(X, c.bv_add(bv(t), c.bv_mul(bv(2), k))))); };
  Expr uses_k = c.add(odd(0), odd(1));
  EXPECT_EQ(merge_interleaved(c, uses_k), uses_k);
}

// A view's field split of a flat reduction index is the index again once the body knows its bounds.
TEST_F(Reduce, BoundedBodyRecombinesAViewsFields) {
  Expr b = c.bound(0);
  Expr idx = c.bv_add(std::vector<Expr>{c.bv_and(bv(63), b), c.bv_mul(bv(64), c.bv_and(bv(63), c.bv_lshr(b, bv(6)))),
                                        c.bv_mul(bv(4096), c.bv_and(bv(31), c.bv_lshr(b, bv(12))))});
  std::pair<int64_t, int64_t> box[] = {{0, 1 << 17}};
  Expr raw = c.reduce_abstracted(ReduceOp::Sum, box, c.load(X, idx));
  Expr bounded = reduce_bounded(c, ReduceOp::Sum, {{0, 1 << 17}}, c.load(X, idx));
  EXPECT_NE(raw, bounded);
  EXPECT_EQ(bounded, sum(j, 0, 1 << 17, c.load(X, j)));
  // past 2^17 the top field's mask matters: kept
  Expr wide = reduce_bounded(c, ReduceOp::Sum, {{0, 1 << 18}}, c.load(X, idx));
  EXPECT_NE(wide, sum(j, 0, 1 << 18, c.load(X, j)));
}
