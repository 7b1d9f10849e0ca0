// Random-point falsification, before any solver: evaluate both expressions at a few pseudo-random
// inputs. A dropped term, a wrong constant, statistics over the wrong axis — the usual ways a
// candidate is wrong — show at almost every point, while Z3's nonlinear real arithmetic can spend
// its whole budget on a bilinear 72-product location without an answer. A point only makes a
// witness; proving equality stays with canonical forms and Z3.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "smt/deadline.h"
#include "smt/decide.h"

namespace dirigo::smt {

struct FalsifyOptions {
  unsigned points = 8;
  unsigned first_point = 0;            // where on the ladder of bounds/signs to start (one point per call)
  uint64_t seed = 1;
  double bound = 10;                   // real leaves uniform in [-bound, bound] at points 0, 1; points 2–3, 4–5,
                                       // 6–7 (mod 8) in [-1, 1], [-0.1, 0.1], [-0.01, 0.01] (sums of many terms
                                       // stay O(1)); odd points draw from the non-negative half only
  std::optional<Tolerance> tolerance;  // set: look for a point whose difference exceeds it
  double confirm_rtol = 1e-9, confirm_atol = 1e-12;
  const std::vector<ir::Expr>* assumptions = nullptr;  // a point must satisfy every one
  Ticker* deadline = nullptr;  // past it (ticked per leaf read) falsify throws StageTimeout
  // The draw key of a tensor (default: its id). name_key() of its name makes a point regenerable
  // outside this process from (seed, point) and the names alone, as numeric evaluation's points are.
  std::function<uint64_t(int32_t tensor)> key_of;
};

// The ladder of points: the bound and the sign of point p (see FalsifyOptions::bound).
double point_bound(unsigned p, double bound);
inline bool point_nonnegative(unsigned p) { return p % 2 == 1; }
// Points from kDistributionPoint on draw from the input distributions a benchmark's own trial uses
// and around it, in pairs (signed, then its absolute value): (p - kDistributionPoint) / 2 mod
// kDistributions picks N(0, 1) (KernelBench's torch.randn), U[-1, 1], N(0, 10^2), N(0, 0.01^2), and
// U[-1000, 1000] (large values: saturations and thresholds a scaled sum never leaves). A Normal
// point's bound is its standard deviation. check's falsification tier evaluates them first.
inline constexpr unsigned kDistributionPoint = 1024, kDistributions = 5;
enum class Distribution : uint8_t { Uniform, Normal };
Distribution point_distribution(unsigned p);
std::string_view distribution_name(Distribution d);  // "uniform" | "normal"
// The value falsify gives leaf (key, index) at point p: a pure function of its arguments, so that a
// point is regenerable from (seed, p) alone. falsify keys an element by its tensor id unless told
// otherwise; decide and the numeric evaluation of giant locations (check/numeric.h) key it by
// name_key() of the tensor's name, which does not depend on the order tensors were registered in
// (python/dirigo/replay.py draws the same values).
ir::Value draw(uint64_t seed, unsigned p, uint64_t key, int64_t index, ir::Sort sort, double bound);
// draw() for many leaves of one point: the point's base hash, bound and sign computed once.
class PointSampler {
 public:
  PointSampler(uint64_t seed, unsigned p, double bound);
  ir::Value operator()(uint64_t key, int64_t index, ir::Sort sort) const;
  double real(uint64_t key, int64_t index) const { return real_of(leaf_hash(key, index)); }  // Sort::Real
  // The same in two steps: the leaf's hash does not depend on the point (one per leaf for many points).
  static uint64_t leaf_hash(uint64_t key, int64_t index) { return mix(key << 40 ^ uint64_t(index)); }
  double real_of(uint64_t leaf) const { return real_from(mix(base_ ^ leaf)); }
  // A Real leaf's value from its hash h: uniform from h's top 53 bits; normal by Box-Muller from
  // those and the top 53 bits of mix(h ^ kSecond) (python/dirigo/replay.py draws the same).
  double real_from(uint64_t h) const {
    double unit = double(h >> 11) * 0x1.0p-53;
    if (normal_) {
      double u2 = double(mix(h ^ kSecond) >> 11) * 0x1.0p-53;
      double z = std::sqrt(-2.0 * std::log1p(-unit)) * std::cos(6.283185307179586 * u2);
      return (nonnegative_ ? std::fabs(z) : z) * bound_;
    }
    return (nonnegative_ ? unit : unit * 2 - 1) * bound_;
  }
  static constexpr uint64_t kSecond = 0x5851f42d4c957f2dULL;
  // splitmix64's finalizer
  static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
 private:
  uint64_t base_;
  double bound_;
  bool nonnegative_;
  bool normal_;
};
uint64_t name_key(std::string_view tensor_name);  // FNV-1a 64 of the name, low 24 bits

// The first point where a and b differ beyond fp64 noise and, when a tolerance is given, beyond it
// (else the first point that differs at all, with exceeds_tolerance false). The witness lists every
// leaf the evaluation read; nullopt when every point agrees (or depends on an undefined value).
std::optional<Witness> falsify(ir::Expr a, ir::Expr b, const FalsifyOptions& opt = {});

}  // namespace dirigo::smt
