// Soundness fuzzing: a random expression built with every rule on must evaluate
// exactly like the same expression built with every rule off (bitvectors: bit for
// bit; reals: up to reassociation rounding), on random inputs within the bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <functional>
#include <random>

#include "ir/eval.h"
#include "ir/expr.h"
#include "ir/print.h"

using namespace dirigo::ir;

namespace {

using Rng = std::mt19937_64;

// DIRIGO_FUZZ_SEED=<n> reruns the fuzzers with another seed (CI uses the fixed default).
uint64_t seed(uint64_t dflt) {
  const char* s = std::getenv("DIRIGO_FUZZ_SEED");
  return s ? std::strtoull(s, nullptr, 10) * 7919 + dflt : dflt;
}

// Describes an expression independently of any Context so it can be built twice.
struct Gen {
  Rng& rng;
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
  uint64_t small() {
    static const uint64_t ks[] = {0, 1, 2, 3, 4, 7, 8, 16, 255, 256, 1000, 1024, 0xffffffff, 0x80000000, 65536};
    return ks[pick(15)];
  }
};

struct Builder {
  Context& c;
  explicit Builder(Context& ctx) : c(ctx) {}
  std::vector<Expr> bv_leaves(Sort s) {
    std::vector<Expr> ls;
    if (s == Sort::BV32) {
      ls.push_back(c.var("tid", Sort::BV32, {0, 255}));
      ls.push_back(c.var("ctaid", Sort::BV32, {0, 1023}));
      ls.push_back(c.var("a", Sort::BV32));
      ls.push_back(c.var("n", Sort::BV32, {1, 100000}));
    } else if (s == Sort::BV64) {
      ls.push_back(c.var("p", Sort::BV64));
      ls.push_back(c.var("q", Sort::BV64, {0, 1ull << 40}));
    } else {
      ls.push_back(c.var("h", s));
    }
    return ls;
  }
};

// A recipe: a function building the expression in a given Context from a fixed
// sequence of random choices (replayed identically for both Contexts).
struct Recipe {
  std::vector<uint64_t> choices;
  size_t pos = 0;
  Rng* rng = nullptr;
  uint64_t next(uint64_t n) {  // record on first build, replay on the second
    if (rng) {
      choices.push_back(std::uniform_int_distribution<uint64_t>(0, n - 1)(*rng));
      return choices.back();
    }
    return choices.at(pos++) % n;
  }
};

uint64_t konst(Recipe& r) {
  static const uint64_t ks[] = {0, 1, 2, 3, 4, 7, 8, 16, 255, 256, 1000, 1024, 0xffffffff, 0x80000000, 65536,
                                0xfffffffffffffff0ull};
  return ks[r.next(16)];
}

Expr gen_bv(Context& c, Recipe& r, Sort s, int depth);

Expr gen_bool(Context& c, Recipe& r, int depth) {
  Sort s = r.next(3) ? Sort::BV32 : Sort::BV64;
  Expr a = gen_bv(c, r, s, depth - 1), b = gen_bv(c, r, s, depth - 1);
  switch (r.next(6)) {
    case 0: return c.eq(a, b);
    case 1: return c.ult(a, b);
    case 2: return c.ule(a, b);
    case 3: return c.slt(a, b);
    case 4: return c.sle(a, b);
    default: return c.not_(c.ult(a, b));
  }
}

Expr gen_bv(Context& c, Recipe& r, Sort s, int depth) {
  unsigned w = bv_width(s);
  if (depth <= 0 || r.next(5) == 0) {
    if (r.next(3) == 0) return c.bv_const(s, konst(r));
    auto ls = Builder(c).bv_leaves(s);
    return ls[r.next(ls.size())];
  }
  auto sub = [&] { return gen_bv(c, r, s, depth - 1); };
  auto k = [&] { return c.bv_const(s, konst(r)); };
  auto sh = [&] { return c.bv_const(s, r.next(w + 2)); };
  switch (r.next(28)) {
    case 26: case 27: {  // div/mod recombination shapes: q*d*k + (x%d)*k, with shifts/masks for powers of two
      Expr x = sub();
      uint64_t d = r.next(2) ? (1ULL << (1 + r.next(10))) : 3 + r.next(1000);
      uint64_t kk = 1 + r.next(5);
      Expr q = r.next(2) && (d & (d - 1)) == 0 ? c.bv_lshr(x, c.bv_const(s, __builtin_ctzll(d))) : c.bv_udiv(x, c.bv_const(s, d));
      Expr m = r.next(2) && (d & (d - 1)) == 0 ? c.bv_and(x, c.bv_const(s, d - 1)) : c.bv_urem(x, c.bv_const(s, d));
      uint64_t qc = r.next(4) ? d * kk : d * kk + 1;  // sometimes a near miss
      return c.bv_add(c.bv_mul(q, c.bv_const(s, qc)), c.bv_mul(m, c.bv_const(s, kk)));
    }
    case 0: case 1: return c.bv_add(sub(), sub());
    case 2: return c.bv_sub(sub(), sub());
    case 3: case 4: return c.bv_mul(sub(), k());
    case 5: return c.bv_mul(sub(), sub());
    case 6: return c.bv_neg(sub());
    case 7: return c.bv_shl(sub(), sh());
    case 8: return c.bv_lshr(sub(), sh());
    case 9: return c.bv_ashr(sub(), sh());
    case 10: return c.bv_udiv(sub(), k());
    case 11: return c.bv_urem(sub(), k());
    case 12: return c.bv_sdiv(sub(), r.next(2) ? k() : sub());
    case 13: return c.bv_srem(sub(), r.next(2) ? k() : sub());
    case 14: return c.bv_and(sub(), r.next(2) ? k() : sub());
    case 15: return c.bv_or(sub(), sub());
    case 16: return c.bv_xor(sub(), sub());
    case 17: return c.bv_not(sub());
    case 18: return c.bv_min(sub(), sub(), r.next(2));
    case 19: return c.bv_max(sub(), sub(), r.next(2));
    case 20: return c.bv_mulhi(sub(), sub(), r.next(2));
    case 21: {  // width round trip
      if (s == Sort::BV64) {
        Expr n = gen_bv(c, r, Sort::BV32, depth - 1);
        return r.next(2) ? c.zext(n, s) : c.sext(n, s);
      }
      Expr wide = gen_bv(c, r, Sort::BV64, depth - 1);
      return c.trunc(wide, s);
    }
    case 22: return c.ite(gen_bool(c, r, depth - 1), sub(), sub());
    case 23: return c.bv_udiv(sub(), sub());
    case 24: return c.bv_lshr(sub(), sub());
    default: return c.bv_urem(sub(), sub());
  }
}

Expr gen_real(Context& c, Recipe& r, int depth) {
  if (depth <= 0 || r.next(5) == 0) {
    switch (r.next(4)) {
      case 0: return c.real_const(static_cast<int64_t>(r.next(7)) - 3);
      case 1: return c.real_const(mpq_class(static_cast<long>(r.next(9)) - 4, 4));
      case 2: return c.elem(c.tensor("Tf"), r.next(4));
      default: return c.var(r.next(2) ? "x" : "y", Sort::Real);
    }
  }
  auto sub = [&] { return gen_real(c, r, depth - 1); };
  switch (r.next(14)) {
    case 0: case 1: return c.add(sub(), sub());
    case 2: return c.sub(sub(), sub());
    case 3: case 4: return c.mul(sub(), sub());
    case 5: {  // denominators >= 2: x*0 -> 0 is only sound where no division by zero makes inf/NaN
      Expr n = sub(), t = sub();
      return c.div(n, c.add(c.mul(t, t), c.real_const(2)));
    }
    case 6: return c.min(sub(), sub());
    case 7: return c.max(sub(), sub());
    case 8: return c.abs(sub());
    case 9: return c.neg(sub());
    case 10: return c.call(Fn::Tanh, sub());
    case 11: {
      Expr a = sub(), b = sub();
      return r.next(2) ? c.ite(c.lt(a, b), a, b) : c.ite(c.le(b, a), a, b);
    }
    case 12: return c.bv_to_real(gen_bv(c, r, Sort::BV32, 2), r.next(2));
    default: return c.mul(c.real_const(mpq_class(static_cast<long>(r.next(9)) - 4, 2)), sub());
  }
}

void all_rules(Context& c, bool on) {
  for (unsigned i = 0; i < static_cast<unsigned>(Rule::Count_); ++i) c.set_rule_enabled(static_cast<Rule>(i), on);
}

Env random_env(Rng& rng) {
  auto vals = std::make_shared<std::map<std::string, uint64_t>>();
  auto u = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  auto edge = [&](uint64_t m) {  // mix edge values and random ones
    static const uint64_t es[] = {0, 1, 2, 0x7fffffff, 0x80000000, 0xffffffff, 0x8000000000000000ull, ~0ull};
    return (rng() % 3 == 0 ? es[rng() % 8] : rng()) & m;
  };
  (*vals)["tid"] = u(0, 255);
  (*vals)["ctaid"] = u(0, 1023);
  (*vals)["n"] = u(1, 100000);
  (*vals)["a"] = edge(0xffffffff);
  (*vals)["p"] = edge(~0ull);
  (*vals)["q"] = u(0, 1ull << 40);
  (*vals)["h"] = edge(~0ull);
  auto reals = std::make_shared<std::vector<double>>();
  // dyadic inputs (multiples of 1/4) keep sums and products exact in fp64, so
  // reassociation by the canonicalizer cannot cause cancellation noise
  for (int i = 0; i < 6; ++i) reals->push_back(std::uniform_int_distribution<int>(-12, 12)(rng) / 4.0);
  Env env;
  env.var = [vals, reals](std::string_view name, Sort s) {
    if (s == Sort::Real) return Value::of_real(name == "x" ? (*reals)[0] : (*reals)[1]);
    return Value::of_bv(s, vals->at(std::string(name)));
  };
  env.elem = [reals](int32_t, int64_t i, Sort) { return Value::of_real((*reals)[2 + i]); };
  return env;
}

}  // namespace

TEST(Soundness, BitvectorRewritesPreserveValues) {
  Rng rng(seed(2024));
  int checked = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Recipe rec;
    rec.rng = &rng;
    Context on, off;
    all_rules(off, false);
    Sort s = iter % 3 == 0 ? Sort::BV64 : Sort::BV32;
    Expr a = gen_bv(on, rec, s, 5);
    rec.rng = nullptr;
    Expr b = gen_bv(off, rec, s, 5);
    for (int t = 0; t < 8; ++t) {
      Env env = random_env(rng);
      Evaluator ea(env), eb(env);
      Value va = ea(a), vb = eb(b);
      ASSERT_EQ(va.bits, vb.bits) << "iteration " << iter << "\ncanonical: " << to_string(on, a)
                                  << "\nliteral:   " << to_string(off, b);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3000 * 8);
}

TEST(Soundness, RealRewritesPreserveValues) {
  Rng rng(seed(77));
  for (int iter = 0; iter < 2000; ++iter) {
    Recipe rec;
    rec.rng = &rng;
    Context on, off;
    all_rules(off, false);
    Expr a = gen_real(on, rec, 5);
    rec.rng = nullptr;
    Expr b = gen_real(off, rec, 5);
    for (int t = 0; t < 5; ++t) {
      Env env = random_env(rng);
      Evaluator ea(env), eb(env);
      double va = ea.real(a), vb = eb.real(b);
      if (!std::isfinite(va) || !std::isfinite(vb)) continue;
      ASSERT_NEAR(va, vb, 1e-7 * (1 + std::fabs(va) + std::fabs(vb)))
          << "iteration " << iter << "\ncanonical: " << to_string(on, a) << "\nliteral:   " << to_string(off, b);
    }
  }
}
