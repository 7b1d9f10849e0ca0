// Re-rolling expanded reductions (ir/reroll.h): one "applies / does not apply" case per pattern — a
// plain loop, strided partial sums combined by a tree, a shuffle tree, a max, a missing term, two
// bodies — and the normal form of existing reductions (dims coalesced; zero-based boxes come from ReduceOrigin).
#include <gtest/gtest.h>

#include "ir/eval.h"
#include "ir/expr.h"
#include "ir/print.h"
#include "ir/reduce.h"
#include "ir/reroll.h"

using namespace dirigo::ir;

namespace {
struct Reroll : ::testing::Test {
  Context c;
  int32_t X = c.tensor("x"), W = c.tensor("w");
  Expr k = c.var("k", Sort::BV64), i = c.var("i", Sort::BV64);
  Expr bv(int64_t v) { return c.bv_const(Sort::BV64, static_cast<uint64_t>(v)); }
  Expr x(int64_t q) { return c.elem(X, q); }
  Expr w(int64_t q) { return c.elem(W, q); }
  Expr sum(Expr var, int64_t lo, int64_t hi, Expr body, ReduceOp op = ReduceOp::Sum) {
    Expr vs[] = {var};
    std::pair<int64_t, int64_t> box[] = {{lo, hi}};
    return c.reduce(op, vs, box, body);
  }
  // The reference's dot product row 3: Σ_k x[3·K + k]·w[k·J + j]
  Expr dot_ref(int64_t K, int64_t J, int64_t j) {
    return sum(k, 0, K, c.mul(c.load(X, c.bv_add(bv(3 * K), k)), c.load(W, c.bv_add(bv(j), c.bv_mul(bv(J), k)))));
  }
  std::string str(Expr e) { return to_string(c, e); }
};
}  // namespace

TEST_F(Reroll, PlainLoop) {
  // acc += x[3K + k]·w[kJ + j], accumulated left to right
  const int64_t K = 64, J = 5, j = 2;
  Expr acc = c.real_const(0);
  for (int64_t q = 0; q < K; ++q) acc = c.add(acc, c.mul(x(3 * K + q), w(q * J + j)));
  RerollStats st;
  Expr r = reroll_node(c, acc, {}, &st);
  EXPECT_EQ(r, normalize_reduce(c, dot_ref(K, J, j))) << str(r);
  EXPECT_EQ(st.sums, 1u);
  EXPECT_EQ(st.terms, uint64_t(K));
  // does not apply: a single term, or no tensor reads
  EXPECT_EQ(reroll_node(c, c.mul(x(1), w(2))), c.mul(x(1), w(2)));
  Expr y = c.var("y", Sort::Real), z = c.var("z", Sort::Real);
  EXPECT_EQ(reroll_node(c, c.add(y, z)), c.add(y, z));
}

TEST_F(Reroll, StridedPartialsAndTreeCombine) {
  // 8 threads, each summing a strided slice x[t + 8·m] (m < 16), then a shared-memory tree: the
  // canonical flat sum is the terms in no particular order
  std::vector<Expr> partial(8, c.real_const(0));
  for (int64_t t = 0; t < 8; ++t)
    for (int64_t m = 0; m < 16; ++m) partial[t] = c.add(partial[t], x(t + 8 * m));
  for (int64_t s = 4; s > 0; s /= 2)
    for (int64_t t = 0; t < s; ++t) partial[t] = c.add(partial[t], partial[t + s]);
  Expr whole = sum(k, 0, 128, c.load(X, k));
  EXPECT_EQ(reroll_node(c, partial[0]), whole);
  // a stride that skips (every other element): a 1-D lattice of step 2 — not the whole row
  std::vector<Expr> even;
  for (int64_t q = 0; q < 128; q += 2) even.push_back(x(q));
  Expr r = reroll_node(c, c.add(even));
  EXPECT_EQ(r, sum(k, 0, 64, c.load(X, c.bv_mul(bv(2), k))));
  EXPECT_NE(r, whole);
}

TEST_F(Reroll, ShuffleTreeWithTwoColumnsPerLane) {
  // lane l holds x[r·64 + l] and x[r·64 + l + 32]; a butterfly adds all 32 lanes
  const int64_t row = 5;
  std::vector<Expr> v(32);
  for (int64_t l = 0; l < 32; ++l) v[l] = c.add(x(row * 64 + l), x(row * 64 + l + 32));
  for (int64_t off = 16; off > 0; off /= 2) {
    std::vector<Expr> n(32);
    for (int64_t l = 0; l < 32; ++l) n[l] = c.add(v[l], v[l ^ off]);
    v = n;
  }
  Expr ref = sum(k, 0, 64, c.load(X, c.bv_add(bv(row * 64), k)));
  EXPECT_EQ(reroll_node(c, v[7]), ref);
  // the mean subtracted from one element: x_i − (1/64)Σ x re-rolls with the lone coefficient kept apart
  Expr d = c.sub(x(row * 64 + 3), c.mul(c.real_const(mpq_class(1, 64)), v[0]));
  Reroller rr(c);
  EXPECT_EQ(rr(d), c.sub(x(row * 64 + 3), c.mul(c.real_const(mpq_class(1, 64)), ref))) << str(rr(d));
  // two-pass variance Σ (x_i − mean)² equals E[x²]-form once both are re-rolled
  std::vector<Expr> sq, xs;
  for (int64_t l = 0; l < 64; ++l) {
    Expr dl = c.sub(x(row * 64 + l), c.mul(c.real_const(mpq_class(1, 64)), v[0]));
    sq.push_back(c.mul(dl, dl));
    xs.push_back(c.mul(x(row * 64 + l), x(row * 64 + l)));
  }
  Expr two_pass = c.mul(c.real_const(mpq_class(1, 64)), c.add(sq));
  Expr mean = c.mul(c.real_const(mpq_class(1, 64)), v[0]);
  Expr one_pass = c.sub(c.mul(c.real_const(mpq_class(1, 64)), c.add(xs)), c.mul(mean, mean));
  EXPECT_NE(two_pass, one_pass);
  Expr eps = c.real_const(mpq_class(1, 100000));
  Expr a = c.call(Fn::Rsqrt, c.add(two_pass, eps)), b = c.call(Fn::Rsqrt, c.add(one_pass, eps));
  EXPECT_EQ(rr(a), rr(b)) << str(rr(a)) << "\nvs\n" << str(rr(b));
  EXPECT_GT(rr.stats().sums, 0u);
}

TEST_F(Reroll, MaxReduction) {
  std::vector<Expr> v;
  for (int64_t q = 0; q < 100; ++q) v.push_back(x(700 + q));
  Expr m = c.max(v);
  EXPECT_EQ(reroll_node(c, m), sum(k, 0, 100, c.load(X, c.bv_add(bv(700), k)), ReduceOp::Max));
  std::vector<Expr> mins;
  for (int64_t q = 0; q < 100; ++q) mins.push_back(c.mul(c.real_const(2), x(q)));
  EXPECT_EQ(reroll_node(c, c.min(mins)), sum(k, 0, 100, c.mul(c.real_const(2), c.load(X, k)), ReduceOp::Min));
  // does not apply: a max with a duplicate-free set that is no lattice (indices 0, 1, 3)
  Expr gap = c.max(std::vector<Expr>{x(0), x(1), x(3)});
  EXPECT_EQ(reroll_node(c, gap), gap);
}

TEST_F(Reroll, MissingTermDoesNotRerollToTheFullBox) {
  std::vector<Expr> t;
  for (int64_t q = 0; q < 64; ++q)
    if (q != 40) t.push_back(x(q));
  Expr s = c.add(t);
  Expr r = reroll_node(c, s);
  EXPECT_NE(r, sum(k, 0, 64, c.load(X, k)));
  EXPECT_FALSE(contains_reduce(r) && reduce_count(r) == 64) << str(r);
  // evaluation agrees with the original whatever was done
  Env env;
  env.elem = [](int32_t, int64_t idx, Sort) { return Value::of_real(double(idx % 7) - 3); };
  Evaluator e1(env), e2(env);
  EXPECT_EQ(e1(r).real, e2(s).real);
  // the last term missing: a shorter box, never the full one
  t.clear();
  for (int64_t q = 0; q < 63; ++q) t.push_back(x(q));
  EXPECT_EQ(reroll_node(c, c.add(t)), sum(k, 0, 63, c.load(X, k)));
}

TEST_F(Reroll, DifferentBodiesDoNotMerge) {
  // x[q]·w[q] for even q and x[q]·x[q] for odd q: two shapes, two groups, no single body
  std::vector<Expr> t;
  for (int64_t q = 0; q < 32; ++q) t.push_back(q % 2 ? c.mul(x(q), x(q)) : c.mul(x(q), w(q)));
  Expr r = reroll_node(c, c.add(t));
  Expr want = c.add(sum(k, 0, 16, c.mul(c.load(X, c.bv_mul(bv(2), k)), c.load(W, c.bv_mul(bv(2), k)))),
                    sum(k, 0, 16, c.mul(c.load(X, c.bv_add(bv(1), c.bv_mul(bv(2), k))),
                                        c.load(X, c.bv_add(bv(1), c.bv_mul(bv(2), k))))));
  EXPECT_EQ(r, want) << str(r);
  // one body with different functions: exp(x[q]) and tanh(x[q]) never share a reduction
  std::vector<Expr> f;
  for (int64_t q = 0; q < 8; ++q) f.push_back(c.call(q < 4 ? Fn::Exp : Fn::Tanh, x(q)));
  Expr rf = reroll_node(c, c.add(f));
  EXPECT_EQ(rf, c.add(sum(k, 0, 4, c.call(Fn::Exp, c.load(X, k))),
                      sum(k, 0, 4, c.call(Fn::Tanh, c.load(X, c.bv_add(bv(4), k))))));
}

TEST_F(Reroll, TwoDimensionalLattice) {
  // a batch-norm channel statistic: x[n·C·HW + c·HW + hw], n < 4, hw < 16, C = 3, c = 1
  std::vector<Expr> t;
  for (int64_t n = 0; n < 4; ++n)
    for (int64_t hw = 0; hw < 16; ++hw) t.push_back(x(n * 48 + 16 + hw));
  Expr r = reroll_node(c, c.add(t));
  // the reference over (n, h, w) with h, w < 4: coalesced to (n, hw)
  Expr n = c.var("n", Sort::BV64), h = c.var("h", Sort::BV64), ww = c.var("w", Sort::BV64);
  Expr vs[] = {n, h, ww};
  std::pair<int64_t, int64_t> box[] = {{0, 4}, {0, 4}, {0, 4}};
  Expr ref = c.reduce(ReduceOp::Sum, vs, box,
                      c.load(X, c.bv_add(std::vector<Expr>{bv(16), c.bv_mul(bv(48), n), c.bv_mul(bv(4), h), ww})));
  EXPECT_NE(ref, r);
  EXPECT_EQ(normalize_reduce(c, ref), r) << str(normalize_reduce(c, ref)) << " vs " << str(r);
}

TEST_F(Reroll, NormalizeReduce) {
  // a box not starting at 0 is zero-based already (ReduceOrigin in the constructor): the same node
  Expr shifted = sum(k, 8, 24, c.load(X, k));
  EXPECT_EQ(normalize_reduce(c, shifted), sum(k, 0, 16, c.load(X, c.bv_add(bv(8), k))));
  // does not apply: dims whose strides do not nest (x[8i + 2k], k < 8: overlapping rows) stay apart
  Expr vs[] = {i, k};
  std::pair<int64_t, int64_t> box[] = {{0, 4}, {0, 8}};
  Expr overlap = c.reduce(ReduceOp::Sum, vs, box, c.load(X, c.bv_add(c.bv_mul(bv(8), i), c.bv_mul(bv(2), k))));
  EXPECT_EQ(normalize_reduce(c, overlap), overlap);
  EXPECT_EQ(normalize_reduce(c, sum(k, 0, 16, c.load(X, k))), sum(k, 0, 16, c.load(X, k)));
  // the dims the other way round: Σ_{t<4} Σ_{i<128} x[4i + t] (partials re-rolled over t) is Σ_{k<512} x[k]
  Expr ti[] = {k, i};
  std::pair<int64_t, int64_t> tbox[] = {{0, 4}, {0, 128}};
  Expr swapped = c.reduce(ReduceOp::Sum, ti, tbox, c.load(X, c.bv_add(c.bv_mul(bv(4), i), k)));
  EXPECT_EQ(normalize_reduce(c, swapped), sum(k, 0, 512, c.load(X, k))) << str(normalize_reduce(c, swapped));
}

TEST_F(Reroll, SimplestRational) {
  // fp32 1/768 (0x3aaaaaab) and 1e-5f read as the rationals they round from
  float f = 1.0f / 768;
  EXPECT_EQ(simplest_rational_near(mpq_class(double(f)), mpq_class(1, 1 << 22)), mpq_class(1, 768));
  EXPECT_EQ(simplest_rational_near(mpq_class(double(1e-5f)), mpq_class(1, 1 << 22)), mpq_class(1, 100000));
  EXPECT_EQ(simplest_rational_near(mpq_class(-double(f)), mpq_class(1, 1 << 22)), mpq_class(-1, 768));
  // does not apply: exact already (1/4096 is 0x39800000), or nothing simpler nearby
  EXPECT_EQ(simplest_rational_near(mpq_class(1, 4096), mpq_class(1, 1 << 22)), mpq_class(1, 4096));
  EXPECT_EQ(simplest_rational_near(mpq_class(3, 7), mpq_class(1, 1 << 22)), mpq_class(3, 7));
  // the Reroller snaps only when asked
  Expr cf = c.mul(c.real_const_from_double(double(f)), x(0));
  Reroller plain(c), snap(c, {.snap_constants = true});
  EXPECT_EQ(plain(cf), cf);
  EXPECT_EQ(snap(cf), c.mul(c.real_const(mpq_class(1, 768)), x(0)));
  EXPECT_EQ(snap.stats().snapped, 1u);
}

TEST_F(Reroll, ExpandedSquareOfASum) {
  // (Σ_{a<12} x_a)² fully distributed: squares plus 2·x_a·x_b for every pair a < b
  auto build = [&](int64_t skip_b) {
    std::vector<Expr> t;
    for (int64_t a = 0; a < 12; ++a) {
      t.push_back(c.mul(x(a), x(a)));
      for (int64_t b = a + 1; b < 12; ++b)
        if (!(a == 0 && b == skip_b)) t.push_back(c.mul(std::vector<Expr>{c.real_const(2), x(a), x(b)}));
    }
    return c.add(t);
  };
  Expr r = sum(k, 0, 12, c.load(X, k));
  EXPECT_EQ(reroll_node(c, build(-1)), c.mul(r, r)) << str(reroll_node(c, build(-1)));
  // does not apply: one pair missing
  Expr miss = reroll_node(c, build(5));
  EXPECT_NE(miss, c.mul(r, r));
  EXPECT_FALSE(contains_op(miss, Op::Reduce) && miss->op == Op::Mul) << str(miss);
}

TEST_F(Reroll, TermsHoldingClosedReductionsAtShiftedOffsets) {
  // A thread's loop over the outputs j of a linear layer, each dot product summarized:
  // Σ_j sigmoid(b[j] + Σ_k w[K·j + k]·x[k]) expanded over j, each term's reduction closed and
  // reading w at the constant offset K·j. Re-rolled it is the reference's reduction of reductions.
  const int64_t J = 24, K = 40;
  int32_t B = c.tensor("b");
  Expr jv = c.var("j", Sort::BV64);
  auto term = [&](Expr jj) {
    Expr dot = sum(k, 0, K, c.mul(c.load(W, c.bv_add(c.bv_mul(bv(K), jj), k)), c.load(X, k)));
    return c.call(Fn::Sigmoid, c.add(c.load(B, jj), dot));
  };
  std::vector<Expr> terms;
  for (int64_t q = J; q-- > 0;) terms.push_back(term(bv(q)));  // in no particular order
  Expr expanded = c.add(terms);
  Expr ref = sum(jv, 0, J, term(jv));
  RerollStats st;
  EXPECT_EQ(reroll_node(c, expanded, {}, &st), ref) << str(reroll_node(c, expanded));
  EXPECT_EQ(st.terms, uint64_t(J));
  Reroller rr(c);
  EXPECT_EQ(rr(expanded), ref);
  // does not apply: one offset off the lattice (row 7 reads w from K·7 + 1), one term missing
  // inside the range, or the inner extent differing in one term
  std::vector<Expr> off = terms, missing = terms, extent = terms;
  off[J - 1 - 7] = c.call(Fn::Sigmoid, c.add(c.load(B, bv(7)), sum(k, 0, K, c.mul(c.load(W, c.bv_add(bv(K * 7 + 1), k)), c.load(X, k)))));
  missing.erase(missing.begin() + 5);
  extent[J - 1 - 3] = c.call(Fn::Sigmoid, c.add(c.load(B, bv(3)), sum(k, 0, K - 1, c.mul(c.load(W, c.bv_add(bv(K * 3), k)), c.load(X, k)))));
  for (const auto* v : {&off, &missing, &extent}) {
    Expr e = c.add(*v), r = reroll_node(c, e);
    EXPECT_FALSE(r == ref) << str(r);
    Env env;
    env.elem = [](int32_t t, int64_t q, Sort) { return Value::of_real(0.001 * double((q * 37 + t * 11) % 101) - 0.05); };
    // whatever it re-rolled into denotes the same terms
    Evaluator ev(env, Precision::F64);
    EXPECT_NEAR(ev(r).real, ev(e).real, 1e-9);
  }
}

TEST_F(Reroll, PartialsTimesAnInvariantReductionRerollIntoTheWholeSum) {
  // a two-pass variance's cross term over an unrolled-by-4 loop: -m·Σ_{k<128} x[4k + t] for t < 4, m
  // itself a closed sum. Re-rolled over t the constructor factors m out of the new reduction, which
  // is then Σ_{t<4, k<128} x[4k + t]: in normal form the row's one sum.
  Expr m = sum(i, 0, 512, c.load(X, i));
  std::vector<Expr> terms;
  for (int64_t t = 0; t < 4; ++t)
    terms.push_back(c.mul(std::vector<Expr>{c.real_const(-2), m, sum(k, 0, 128, c.load(X, c.bv_add(bv(t), c.bv_mul(bv(4), k))))}));
  Expr r = reroll_node(c, c.add(terms));
  EXPECT_EQ(r, c.mul(std::vector<Expr>{c.real_const(-2), m, m})) << str(r);
}

// A closed reduction's body is re-rolled too: the unrolled taps of each output of a sum over outputs.
TEST_F(Reroll, InsideAClosedReductionsBody) {
  Expr o = c.var("o", Sort::BV64, Bounds{0, 15});
  Expr taps = c.real_const(0);
  for (int64_t t = 0; t < 9; ++t)
    taps = c.add(taps, c.mul(c.load(X, c.bv_add(bv(t), o)), w(t)));
  Expr outer = sum(o, 0, 16, taps);
  Reroller rr(c);
  Expr r = rr(outer);
  EXPECT_EQ(rr.stats().sums, 1u);
  EXPECT_TRUE(contains_reduce(r));
  EXPECT_LT(dag_size(r), 20u) << str(r);  // 2 nested reductions over one product, not 9 taps
  Env env;
  env.elem = [](int32_t t, int64_t i, Sort) { return Value::of_real(double((3 * i + 7 * t) % 11) - 5); };
  EXPECT_EQ(Evaluator(env)(r).real, Evaluator(env)(outer).real);
  // does not apply: a body of one term
  Expr one = sum(o, 0, 16, c.load(X, o));
  EXPECT_EQ(Reroller(c)(one), one);
}

// A flat dim read only through quotients and remainders by a chain of its divisors splits into the
// dims they name (a flat output index against the reference's box).
TEST_F(Reroll, FlatDimSplitIntoTheBoxItsDivisorsName) {
  Expr q = c.var("q", Sort::BV64, Bounds{0, 59});
  Expr body = c.load(X, c.bv_add(std::vector<Expr>{c.bv_mul(bv(100), c.bv_udiv(q, bv(12))),
                                                   c.bv_mul(bv(10), c.bv_urem(c.bv_udiv(q, bv(3)), bv(4))),
                                                   c.bv_urem(q, bv(3))}));
  Expr flat = sum(q, 0, 60, body);
  Expr a = c.var("a", Sort::BV64), b = c.var("b", Sort::BV64), d = c.var("d", Sort::BV64);
  Expr vs[] = {a, b, d};
  std::pair<int64_t, int64_t> box[] = {{0, 5}, {0, 4}, {0, 3}};
  Expr want = c.reduce(ReduceOp::Sum, vs, box,
                       c.load(X, c.bv_add(std::vector<Expr>{c.bv_mul(bv(100), a), c.bv_mul(bv(10), b), d})));
  EXPECT_EQ(normalize_reduce(c, flat), normalize_reduce(c, want)) << str(normalize_reduce(c, flat));
  // does not apply: a divisor that does not divide the extent
  Expr odd = sum(q, 0, 60, c.load(X, c.bv_urem(q, bv(7))));
  EXPECT_EQ(normalize_reduce(c, odd), odd);
}
