// Translation of ir expressions into Z3 terms (the only module that sees Z3).
//
// Reals become Real, bitvectors BV, Bool Bool. Named functions are
// Ackermannized: each distinct application becomes a fresh real constant, and
// side constraints relate applications of the same function (congruence:
// equal arguments give equal results, plus a few sound facts such as
// exp > 0 and monotonicity). With no uninterpreted functions left, pure real
// arithmetic goes to nlsat, which is complete for QF_NRA. Symbolic loads are
// Ackermannized the same way against each other and against the tensor's
// constant-index elements. Floor/Ceil/Round/Trunc/Sign and Sqrt are
// interpreted exactly. Translation is memoized per node and iterative.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <chrono>
#include <stdexcept>

#include <z3++.h>

#include "ir/expr.h"

namespace dirigo::smt {

// One Ackermannized application f(args) -> result.
struct FnApp {
  ir::Fn fn;
  ir::Expr node;
  std::vector<z3::expr> args;
  z3::expr result;
};

// One Ackermannized symbolic load T[index] -> value.
struct LoadApp {
  ir::Expr node;
  int32_t tensor;
  z3::expr index;  // BV64
  z3::expr value;
};

struct TranslateOptions {
  // Monotonicity / range lemmas are quadratic in the number of applications
  // of one function; above this many they are skipped (congruence is kept).
  size_t max_lemma_apps = 48;
  // Congruence (f(a) = f(b) when a = b) is quadratic too: an application past this many of its
  // function gets none (fewer facts: an Equal stays sound, a model is confirmed by evaluation).
  size_t max_congruence_apps = 2048;
  // Translation (and the congruence lemmas, quadratic in the applications of one function) stops
  // with TranslateTimeout past this point: it runs before Z3's own deadline applies.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

struct TranslateTimeout : std::runtime_error {
  TranslateTimeout() : std::runtime_error("translation to Z3 ran past the deadline") {}
};

// A reserved Var standing for ln 2 (irrational, so not an ir constant). The
// axioms produce it; the translator pins it between tight rational bounds.
inline constexpr std::string_view kLn2Var = "!ln2";

class Translator {
 public:
  Translator(z3::context& z, const ir::Context& ctx, TranslateOptions opt = {});

  z3::expr operator()(ir::Expr e);

  // Constraints produced since the last call (leaf bounds, Ackermann
  // congruence, function lemmas, load congruence). Each must be asserted.
  std::vector<z3::expr> take_constraints();

  // The translation of a node, if it has been translated.
  const z3::expr* lookup(ir::Expr e) const;

  const std::vector<FnApp>& fn_apps() const { return fn_apps_; }
  const std::vector<LoadApp>& loads() const { return loads_; }
  // Var and TensorElem leaves met so far, in order of first translation.
  const std::vector<std::pair<ir::Expr, z3::expr>>& leaves() const { return leaves_; }

  z3::sort sort_of(ir::Sort s);
  z3::expr real_of(const mpq_class& q);
  std::string elem_name(int32_t tensor, int64_t index) const;

 private:
  z3::expr translate_node(ir::Expr e, std::span<const z3::expr> args);
  z3::expr translate_call(ir::Expr e, std::span<const z3::expr> args);
  z3::expr round_to_int(const z3::expr& x, ir::RoundMode rm);
  z3::expr bv_as_int(const z3::expr& bv, bool is_signed);
  void add_fn_lemmas(const FnApp& fresh);
  void add_load_lemmas(const LoadApp& fresh);
  void note_elem(int32_t tensor, int64_t index, const z3::expr& value);

  z3::context& z_;
  const ir::Context& ctx_;
  TranslateOptions opt_;
  std::unordered_map<ir::Expr, z3::expr> memo_;
  void sum_facts(ir::Expr reduce);
  std::vector<ir::Expr> sums_;  // sum reductions translated so far (sum_facts pairs them)
  std::vector<FnApp> fn_apps_;
  std::unordered_map<ir::Fn, size_t> apps_of_fn_;  // fn_apps_ per function
  std::vector<LoadApp> loads_;
  std::vector<std::pair<ir::Expr, z3::expr>> leaves_;
  // constant-index elements per tensor, for load congruence
  std::unordered_map<int32_t, std::vector<std::pair<int64_t, z3::expr>>> elems_;
  std::vector<z3::expr> pending_;
  unsigned fresh_counter_ = 0;
  unsigned steps_ = 0;  // work since the last deadline look
  void tick(unsigned n = 1);
};

// Numeric value of a Z3 numeral (rational or algebraic) as a double.
double numeral_to_double(const z3::expr& v);
// Exact rational value of a double (finite), as a Z3 real.
z3::expr double_to_real(z3::context& z, double d);

}  // namespace dirigo::smt
