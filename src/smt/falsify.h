// Random-point falsification, before any solver: evaluate both expressions at a few pseudo-random
// inputs. A dropped term, a wrong constant, statistics over the wrong axis — the usual ways a
// candidate is wrong — show at almost every point, while Z3's nonlinear real arithmetic can spend
// its whole budget on a bilinear 72-product location without an answer. A point only makes a
// witness; proving equality stays with canonical forms and Z3.
#pragma once
#include <cstdint>
#include <optional>

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
};

// The first point where a and b differ beyond fp64 noise and, when a tolerance is given, beyond it
// (else the first point that differs at all, with exceeds_tolerance false). The witness lists every
// leaf the evaluation read; nullopt when every point agrees (or depends on an undefined value).
std::optional<Witness> falsify(ir::Expr a, ir::Expr b, const FalsifyOptions& opt = {});

}  // namespace dirigo::smt
