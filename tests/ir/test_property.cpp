// Property tests: expressions built equal by construction (different association,
// permutation, grouping) must be the SAME node; a one-place perturbation must give
// a different node that also evaluates differently on some random input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "ir/eval.h"
#include "ir/expr.h"
#include "ir/print.h"

using namespace dirigo::ir;

namespace {

using Rng = std::mt19937_64;

// Combine xs with a binary operation in a random tree shape over a random permutation.
Expr random_tree(Rng& rng, std::vector<Expr> xs, const std::function<Expr(Expr, Expr)>& op) {
  std::shuffle(xs.begin(), xs.end(), rng);
  while (xs.size() > 1) {
    size_t i = std::uniform_int_distribution<size_t>(0, xs.size() - 2)(rng);
    xs[i] = op(xs[i], xs[i + 1]);
    xs.erase(xs.begin() + i + 1);
  }
  return xs[0];
}

struct Poly {  // sum of coef * product(leaves)
  struct Term {
    int64_t coef;
    std::vector<int> leaves;
  };
  std::vector<Term> terms;
};

struct Env64 {
  std::vector<double> vals;
  Env env(Context&) {
    Env e;
    e.var = [this](std::string_view name, Sort s) {
      if (s != Sort::Real) {
        uint64_t h = std::hash<std::string_view>()(name);
        return Value::of_bv(s, h);
      }
      return Value::of_real(vals.at(std::stoi(std::string(name.substr(1)))));
    };
    e.elem = [this](int32_t, int64_t i, Sort) { return Value::of_real(vals.at(8 + i)); };
    return e;
  }
};

struct PolyBuilder {
  Context& c;
  std::vector<Expr> pool;
  explicit PolyBuilder(Context& ctx) : c(ctx) {
    int32_t W = c.tensor("W");
    for (int i = 0; i < 8; ++i) pool.push_back(c.var("v" + std::to_string(i), Sort::Real));
    for (int i = 0; i < 8; ++i) pool.push_back(c.elem(W, i));
  }
  Poly random_poly(Rng& rng) {
    Poly p;
    int n = std::uniform_int_distribution<int>(1, 12)(rng);
    for (int i = 0; i < n; ++i) {
      Poly::Term t;
      do t.coef = std::uniform_int_distribution<int64_t>(-5, 5)(rng); while (t.coef == 0);
      int k = std::uniform_int_distribution<int>(1, 3)(rng);
      for (int j = 0; j < k; ++j) t.leaves.push_back(std::uniform_int_distribution<int>(0, 15)(rng));
      p.terms.push_back(t);
    }
    return p;
  }
  Expr term(Rng& rng, const Poly::Term& t) {
    std::vector<Expr> fs;
    for (int l : t.leaves) fs.push_back(pool[l]);
    // the coefficient sometimes as a constant factor, sometimes split or as a negation
    switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
      case 0: fs.push_back(c.real_const(t.coef)); break;
      case 1: {
        Expr m = random_tree(rng, fs, [&](Expr a, Expr b) { return c.mul(a, b); });
        return c.neg(c.mul(c.real_const(-t.coef), m));
      }
      default: {  // k*m = (k-1)*m + m, or the whole term divided by 1/k
        Expr m = random_tree(rng, fs, [&](Expr a, Expr b) { return c.mul(a, b); });
        if (t.coef != 1) return c.add(c.mul(c.real_const(t.coef - 1), m), m);
        return c.div(m, c.real_const(1));
      }
    }
    return random_tree(rng, fs, [&](Expr a, Expr b) { return c.mul(a, b); });
  }
  Expr build(Rng& rng, const Poly& p) {
    std::vector<Expr> ts;
    // sometimes factor a leaf out of two consecutive terms: f*(a + b)
    for (size_t i = 0; i < p.terms.size(); ++i) {
      const auto& t = p.terms[i];
      if (i + 1 < p.terms.size() && std::bernoulli_distribution(0.3)(rng)) {
        const auto& u = p.terms[i + 1];
        int f = t.leaves[0];
        auto it = std::find(u.leaves.begin(), u.leaves.end(), f);
        if (it != u.leaves.end() && t.leaves.size() > 1 && u.leaves.size() > 1) {
          Poly::Term t2 = t, u2 = u;
          t2.leaves.erase(t2.leaves.begin());
          u2.leaves.erase(u2.leaves.begin() + (it - u.leaves.begin()));
          ts.push_back(c.mul(pool[f], c.add(term(rng, t2), term(rng, u2))));
          ++i;
          continue;
        }
      }
      ts.push_back(term(rng, t));
    }
    if (std::bernoulli_distribution(0.5)(rng)) return c.add(ts);
    return random_tree(rng, ts, [&](Expr a, Expr b) {
      return std::bernoulli_distribution(0.2)(rng) ? c.sub(a, c.neg(b)) : c.add(a, b);
    });
  }
};

// Returns true if some random input makes a and b evaluate differently (F64).
bool differ_somewhere(Context& c, Expr a, Expr b, Rng& rng, int tries = 50) {
  Env64 e;
  for (int i = 0; i < tries; ++i) {
    e.vals.clear();
    for (int j = 0; j < 16; ++j) e.vals.push_back(std::uniform_real_distribution<double>(-2, 2)(rng));
    Evaluator ev(e.env(c));
    double x = ev.real(a), y = ev.real(b);
    if (std::fabs(x - y) > 1e-9 * (1 + std::fabs(x) + std::fabs(y))) return true;
  }
  return false;
}

}  // namespace

TEST(Property, SumsOfProductsCanonical) {
  Rng rng(12345);
  for (int iter = 0; iter < 300; ++iter) {
    Context c;
    PolyBuilder pb(c);
    Poly p = pb.random_poly(rng);
    Expr a = pb.build(rng, p), b = pb.build(rng, p);
    ASSERT_EQ(a, b) << "iteration " << iter << "\n" << to_string(c, a) << "\n" << to_string(c, b);
  }
}

TEST(Property, SumsOfProductsPerturbed) {
  Rng rng(777);
  for (int iter = 0; iter < 300; ++iter) {
    Context c;
    PolyBuilder pb(c);
    Poly p = pb.random_poly(rng);
    Poly q = p;
    size_t k = std::uniform_int_distribution<size_t>(0, q.terms.size() - 1)(rng);
    int kind = iter % 3;
    Expr a = pb.build(rng, p), b;
    if (kind == 0) {  // one coefficient
      q.terms[k].coef += q.terms[k].coef == -1 ? 2 : 1;
      b = pb.build(rng, q);
    } else if (kind == 1) {  // one leaf
      int& l = q.terms[k].leaves[0];
      l = (l + 1 + std::uniform_int_distribution<int>(0, 14)(rng)) % 16;
      b = pb.build(rng, q);
    } else {  // one operator: a product becomes a sum of its factors
      std::vector<Expr> ts;
      for (size_t i = 0; i < q.terms.size(); ++i) {
        const auto& t = q.terms[i];
        if (i != k || t.leaves.size() < 2) {
          ts.push_back(pb.term(rng, t));
          continue;
        }
        std::vector<Expr> fs;
        for (int l : t.leaves) fs.push_back(pb.pool[l]);
        ts.push_back(c.mul(c.real_const(t.coef), c.add(fs)));
      }
      if (q.terms[k].leaves.size() < 2) continue;
      b = c.add(ts);
    }
    if (kind == 1 && a == b) continue;  // the new leaf can coincide after reordering: checked below
    ASSERT_NE(a, b) << "iteration " << iter << " kind " << kind << "\n" << to_string(c, a);
    EXPECT_TRUE(differ_somewhere(c, a, b, rng)) << "iteration " << iter << "\n"
                                                << to_string(c, a) << "\n" << to_string(c, b);
  }
}

TEST(Property, MinMaxTreesCanonical) {
  Rng rng(4242);
  for (int iter = 0; iter < 200; ++iter) {
    Context c;
    PolyBuilder pb(c);
    std::vector<Expr> xs;
    int n = std::uniform_int_distribution<int>(1, 20)(rng);
    for (int i = 0; i < n; ++i) {
      int k = std::uniform_int_distribution<int>(0, 17)(rng);
      xs.push_back(k < 16 ? pb.pool[k] : c.real_const(k - 20));
    }
    bool is_min = iter % 2;
    auto op = [&](Expr a, Expr b) { return is_min ? c.min(a, b) : c.max(a, b); };
    auto op_ite = [&](Expr a, Expr b) {  // min/max written as a select
      return is_min ? c.ite(c.lt(a, b), a, b) : c.ite(c.lt(b, a), a, b);
    };
    Expr a = random_tree(rng, xs, op);
    Expr b = random_tree(rng, xs, op_ite);
    Expr d = is_min ? c.min(xs) : c.max(xs);
    ASSERT_EQ(a, b) << to_string(c, a) << "\n" << to_string(c, b);
    ASSERT_EQ(a, d);
    // perturb: one operand replaced by a leaf not present
    std::vector<Expr> ys = xs;
    Expr fresh = c.var("v_fresh", Sort::Real);
    ys[std::uniform_int_distribution<size_t>(0, ys.size() - 1)(rng)] = fresh;
    Expr e = random_tree(rng, ys, op);
    ASSERT_NE(a, e);
    Env env;
    bool seen_diff = false;
    for (int t = 0; t < 200 && !seen_diff; ++t) {
      std::vector<double> vals;
      for (int j = 0; j < 16; ++j) vals.push_back(std::uniform_real_distribution<double>(-30, 30)(rng));
      vals.push_back(std::uniform_real_distribution<double>(-100, 100)(rng));  // the fresh leaf ranges wider
      env.var = [&](std::string_view name, Sort) {
        return Value::of_real(name == "v_fresh" ? vals[16] : vals.at(std::stoi(std::string(name.substr(1)))));
      };
      env.elem = [&](int32_t, int64_t i, Sort) { return Value::of_real(vals.at(8 + i)); };
      Evaluator ev(env);
      seen_diff = ev.real(a) != ev.real(e);
    }
    EXPECT_TRUE(seen_diff) << to_string(c, a) << "\n" << to_string(c, e);
  }
}

TEST(Property, AffineIndexCanonical) {
  Rng rng(99);
  for (int iter = 0; iter < 300; ++iter) {
    Context c;
    std::vector<Expr> atoms = {c.var("tid.x", Sort::BV32, {0, 255}), c.var("tid.y", Sort::BV32, {0, 3}),
                               c.var("ctaid.x", Sort::BV32, {0, 1023}), c.var("ctaid.y", Sort::BV32, {0, 15})};
    std::vector<uint64_t> coef(atoms.size());
    for (auto& k : coef) k = std::uniform_int_distribution<uint64_t>(0, 3)(rng) == 0 ? 0 : 1ULL << std::uniform_int_distribution<int>(0, 8)(rng);
    uint64_t c0 = std::uniform_int_distribution<uint64_t>(0, 100)(rng);
    Expr base = c.var("base", Sort::BV64);
    auto b32 = [&](uint64_t v) { return c.bv_const(Sort::BV32, v); };
    auto b64 = [&](uint64_t v) { return c.bv_const(Sort::BV64, v); };
    auto build32 = [&](const std::vector<uint64_t>& k, uint64_t k0) {
      std::vector<Expr> ts;
      for (size_t i = 0; i < atoms.size(); ++i) {
        if (!k[i]) continue;
        // k*x written as a shift, a product, or x*(k-1) + x
        switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
          case 0: ts.push_back(c.bv_shl(atoms[i], b32(__builtin_ctzll(k[i])))); break;
          case 1: ts.push_back(c.bv_mul(b32(k[i]), atoms[i])); break;
          default: ts.push_back(c.bv_add(c.bv_mul(atoms[i], b32(k[i] - 1)), atoms[i]));
        }
      }
      ts.push_back(std::bernoulli_distribution(0.5)(rng) ? b32(k0) : c.bv_sub(b32(k0 + 7), b32(7)));
      return random_tree(rng, ts, [&](Expr a, Expr b) { return c.bv_add(a, b); });
    };
    // 32-bit index, sign-extended (cvt.s64.s32), scaled by 4 (shl 2) and added to a pointer
    auto address = [&](const std::vector<uint64_t>& k, uint64_t k0) {
      Expr idx = build32(k, k0);
      Expr wide = std::bernoulli_distribution(0.5)(rng) ? c.sext(idx, Sort::BV64) : c.zext(idx, Sort::BV64);
      Expr scaled = std::bernoulli_distribution(0.5)(rng) ? c.bv_shl(wide, b64(2)) : c.bv_mul(wide, b64(4));
      return c.bv_add(scaled, base);
    };
    // The same address computed directly in 64 bits.
    std::vector<Expr> ts{base, b64(4 * c0)};
    for (size_t i = 0; i < atoms.size(); ++i)
      if (coef[i]) ts.push_back(c.bv_mul(b64(4 * coef[i]), c.zext(atoms[i], Sort::BV64)));
    Expr direct = random_tree(rng, ts, [&](Expr a, Expr b) { return c.bv_add(a, b); });
    Expr a1 = address(coef, c0), a2 = address(coef, c0);
    ASSERT_EQ(a1, a2) << to_string(c, a1) << "\n" << to_string(c, a2);
    ASSERT_EQ(a1, direct) << to_string(c, a1) << "\n" << to_string(c, direct);
    // perturb one coefficient
    auto k2 = coef;
    size_t j = std::uniform_int_distribution<size_t>(0, k2.size() - 1)(rng);
    k2[j] = k2[j] ? k2[j] * 2 : 1;
    Expr a3 = address(k2, c0);
    ASSERT_NE(a1, a3);
    bool seen = false;
    for (int t = 0; t < 50 && !seen; ++t) {
      Env env;
      std::vector<uint64_t> vals = {std::uniform_int_distribution<uint64_t>(0, 255)(rng),
                                    std::uniform_int_distribution<uint64_t>(0, 3)(rng),
                                    std::uniform_int_distribution<uint64_t>(0, 1023)(rng),
                                    std::uniform_int_distribution<uint64_t>(0, 15)(rng), rng()};
      env.var = [&](std::string_view n, Sort s) {
        static const char* names[] = {"tid.x", "tid.y", "ctaid.x", "ctaid.y", "base"};
        for (int q = 0; q < 5; ++q)
          if (n == names[q]) return Value::of_bv(s, vals[q]);
        throw std::runtime_error("unknown var");
      };
      Evaluator ev(env);
      seen = ev(a1).bits != ev(a3).bits;
    }
    EXPECT_TRUE(seen);
  }
}

TEST(Property, ImportAcrossContextsGivesIdenticalHashes) {
  Rng rng(5);
  for (int iter = 0; iter < 50; ++iter) {
    Context c1, c2;
    // build in c2 some unrelated nodes first so ids differ
    for (int i = 0; i < iter; ++i) c2.var("noise" + std::to_string(i), Sort::Real);
    PolyBuilder p1(c1), p2(c2);
    Poly p = p1.random_poly(rng);
    Rng r1(iter), r2(iter + 1000);
    Expr a = p1.build(r1, p), b = p2.build(r2, p);
    EXPECT_EQ(a->hash, b->hash);
    EXPECT_EQ(c2.import(a), b);
    Context c3;
    EXPECT_EQ(c3.import(a), c3.import(b));
    EXPECT_EQ(c3.import(a)->hash, a->hash);
    EXPECT_EQ(c1.compare(a, a), 0);
    Importer imp(c3);  // shared memo across roots
    EXPECT_EQ(imp(a), c3.import(a));
    EXPECT_EQ(imp(c1.add(a, c1.real_const(1))), c3.add(c3.import(a), c3.real_const(1)));
  }
}

TEST(Property, ReductionLoopsMatchNaryBuilds) {
  // acc = acc + t_k and acc = max(acc, x_k) one step at a time (the shape of a
  // reduction loop) must give the same node, with the same hash, as one n-ary build.
  Rng rng(31337);
  for (int iter = 0; iter < 20; ++iter) {
    Context c;
    PolyBuilder pb(c);
    int32_t X = c.tensor("Xr");
    std::vector<Expr> ts;
    for (int k = 0; k < 300; ++k) {
      int kind = std::uniform_int_distribution<int>(0, 5)(rng);
      Expr leaf = c.elem(X, std::uniform_int_distribution<int>(0, 60)(rng));  // repeats combine
      if (kind == 0) ts.push_back(c.real_const(std::uniform_int_distribution<int>(-3, 3)(rng)));
      else if (kind == 1) ts.push_back(c.neg(leaf));  // cancels earlier +leaf terms
      else if (kind == 2) ts.push_back(c.mul(c.real_const(2), c.mul(leaf, pb.pool[k % 16])));
      else ts.push_back(leaf);
    }
    Expr acc = c.real_const(0);
    for (Expr t : ts) acc = c.add(acc, t);
    ASSERT_EQ(acc, c.add(ts));
    Context other;
    EXPECT_EQ(other.import(acc)->hash, acc->hash);  // O(1) hash updates agree with a full rehash
    EXPECT_EQ(acc->size, other.import(acc)->size);
    // max reduction
    std::vector<Expr> ms;
    for (int k = 0; k < 300; ++k) ms.push_back(c.elem(X, std::uniform_int_distribution<int>(0, 100)(rng)));
    Expr m = ms[0];
    for (size_t k = 1; k < ms.size(); ++k) m = k % 2 ? c.max(m, ms[k]) : c.max(ms[k], m);
    ASSERT_EQ(m, c.max(ms));
    EXPECT_EQ(other.import(m)->hash, m->hash);
  }
}
