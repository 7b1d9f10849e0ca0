#include "smt/translate.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/bits.h"
#include "ir/reduce.h"

namespace dirigo::smt {

using ir::Expr;
using ir::Fn;
using ir::Op;
using ir::Sort;

Translator::Translator(z3::context& z, const ir::Context& ctx, TranslateOptions opt)
    : z_(z), ctx_(ctx), opt_(opt) {}

z3::sort Translator::sort_of(Sort s) {
  switch (s) {
    case Sort::Bool: return z_.bool_sort();
    case Sort::Real: return z_.real_sort();
    default: return z_.bv_sort(ir::bv_width(s));
  }
}

z3::expr Translator::real_of(const mpq_class& q) {
  std::string s = q.get_str();  // "p" or "p/q", the forms Z3_mk_numeral accepts for reals
  return z_.real_val(s.c_str());
}

std::string Translator::elem_name(int32_t tensor, int64_t index) const {
  std::string_view name = tensor >= 0 && static_cast<size_t>(tensor) < ctx_.num_tensors()
                              ? ctx_.tensor_name(tensor) : std::string_view{};
  if (name.empty()) return fmt::format("T{}[{}]", tensor, index);
  return fmt::format("{}[{}]", name, index);
}

const z3::expr* Translator::lookup(Expr e) const {
  auto it = memo_.find(e);
  return it == memo_.end() ? nullptr : &it->second;
}

std::vector<z3::expr> Translator::take_constraints() {
  std::vector<z3::expr> out;
  out.swap(pending_);
  return out;
}

void Translator::tick(unsigned n) {
  steps_ += n;
  if (steps_ < 4096) return;
  steps_ = 0;
  if (opt_.deadline != std::chrono::steady_clock::time_point::max() && std::chrono::steady_clock::now() > opt_.deadline)
    throw TranslateTimeout();
}

z3::expr Translator::operator()(Expr root) {
  if (auto* hit = lookup(root)) return *hit;
  // Iterative post-order: (node, children pushed?)
  std::vector<std::pair<Expr, bool>> stack{{root, false}};
  std::vector<z3::expr> args;
  while (!stack.empty()) {
    auto [e, expanded] = stack.back();
    if (memo_.count(e)) { stack.pop_back(); continue; }
    if (!expanded) {
      stack.back().second = true;
      if (e->op != Op::Reduce)  // a reduction is one opaque value: its body reads indices Z3 never sees
        for (Expr c : e->args())
          if (!memo_.count(c)) stack.push_back({c, false});
      continue;
    }
    stack.pop_back();
    tick(1 + e->nargs);
    if (e->op == Op::Reduce) {
      if (e->has_free_bound()) throw std::runtime_error("UNSUPPORTED: smt translation of a reduction that reads enclosing indices");
      // Equal reductions are one node (hash-consed modulo renaming): one constant per node is sound
      // for proving equality; a model is confirmed by evaluating the originals.
      memo_.emplace(e, z_.constant(fmt::format("reduce!{:016x}!{}", e->hash, fresh_counter_++).c_str(), sort_of(e->sort)));
      sum_facts(e);
      continue;
    }
    args.clear();
    for (Expr c : e->args()) args.push_back(memo_.at(c));
    memo_.emplace(e, translate_node(e, args));
  }
  return memo_.at(root);
}

// What an opaque sum still says (sound for every input): a sum of squares is non-negative, and with
// the sum of the same body over the same box, (Σ f)² ≤ N·Σ f² (Cauchy–Schwarz: a variance
// E[f²] − E[f]² is non-negative, so a kernel's fmaxf(var, 0) is the reference's var).
void Translator::sum_facts(Expr r) {
  if (r->op != Op::Reduce || r->reduce_op() != ir::ReduceOp::Sum || r->sort != ir::Sort::Real) return;
  auto square_of = [](Expr body) -> Expr {
    return body->op == Op::Mul && body->nargs == 2 && body->arg(0) == body->arg(1) ? body->arg(0) : nullptr;
  };
  const z3::expr& v = memo_.at(r);
  if (square_of(r->reduce_body())) pending_.push_back(v >= 0);
  ir::Box box = ir::reduce_box(r);
  for (Expr other : sums_) {
    if (ir::reduce_box(other) != box) continue;
    Expr sq = nullptr, lin = nullptr;
    if (square_of(r->reduce_body()) == other->reduce_body()) sq = r, lin = other;
    else if (square_of(other->reduce_body()) == r->reduce_body()) sq = other, lin = r;
    if (!sq) continue;
    z3::expr n = z_.real_val(std::to_string(ir::reduce_count(r)).c_str());
    pending_.push_back(memo_.at(lin) * memo_.at(lin) <= n * memo_.at(sq));
  }
  if (sums_.size() < 64) sums_.push_back(r);
}

void Translator::note_elem(int32_t tensor, int64_t index, const z3::expr& value) {
  auto& list = elems_[tensor];
  for (const LoadApp& l : loads_)
    if (l.tensor == tensor && z3::eq(l.value.get_sort(), value.get_sort()))
      pending_.push_back(z3::implies(l.index == z_.bv_val(static_cast<uint64_t>(index), 64), l.value == value));
  list.push_back({index, value});
}

z3::expr Translator::translate_node(Expr e, std::span<const z3::expr> a) {
  // Associative n-ary ops as a balanced tree: a left-deep chain of 10,000
  // operands sends Z3 into deep recursion (minutes, outside its timeout).
  auto nary = [&](auto combine) {
    std::vector<z3::expr> level(a.begin(), a.end());
    while (level.size() > 1) {
      std::vector<z3::expr> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(combine(level[i], level[i + 1]));
      if (level.size() % 2) next.push_back(level.back());
      level.swap(next);
    }
    return level[0];
  };
  // Flat n-ary Z3 terms where Z3 has them.
  auto flat = [&](Z3_ast (*mk)(Z3_context, unsigned, Z3_ast const[])) {
    std::vector<Z3_ast> raw(a.begin(), a.end());
    Z3_ast r = mk(z_, static_cast<unsigned>(raw.size()), raw.data());
    z_.check_error();
    return z3::expr(z_, r);
  };
  switch (e->op) {
    case Op::ConstBool: return z_.bool_val(e->bool_value());
    case Op::ConstBV: return z_.bv_val(e->bv_value(), ir::bv_width(e->sort));
    case Op::ConstReal: return real_of(e->rational());
    case Op::Var: {
      z3::expr v = z_.constant(fmt::format("%{}", e->name()).c_str(), sort_of(e->sort));
      if (ir::is_bv(e->sort)) {
        unsigned w = ir::bv_width(e->sort);
        uint64_t max = ir::width_mask(w);
        ir::Bounds b = e->bounds();
        if (b.lo > 0) pending_.push_back(z3::uge(v, z_.bv_val(b.lo, w)));
        if (b.hi < max) pending_.push_back(z3::ule(v, z_.bv_val(b.hi, w)));
      } else if (e->name() == kLn2Var) {
        pending_.push_back(v > z_.real_val("693147180559945/1000000000000000"));
        pending_.push_back(v < z_.real_val("693147180559946/1000000000000000"));
      }
      leaves_.push_back({e, v});
      return v;
    }
    case Op::TensorElem: {
      z3::expr v = z_.constant(elem_name(e->tensor(), e->index()).c_str(), sort_of(e->sort));
      leaves_.push_back({e, v});
      note_elem(e->tensor(), e->index(), v);
      return v;
    }
    case Op::Undef:
      return z_.constant(fmt::format("undef!{}", fresh_counter_++).c_str(), sort_of(e->sort));
    case Op::Not: return !a[0];
    case Op::And: return flat(Z3_mk_and);
    case Op::Or: return flat(Z3_mk_or);
    case Op::Eq: return a[0] == a[1];
    case Op::Ult: return z3::ult(a[0], a[1]);
    case Op::Ule: return z3::ule(a[0], a[1]);
    case Op::Slt: return z3::slt(a[0], a[1]);
    case Op::Sle: return z3::sle(a[0], a[1]);
    case Op::Lt: return a[0] < a[1];
    case Op::Le: return a[0] <= a[1];
    case Op::Ite: return z3::ite(a[0], a[1], a[2]);
    case Op::BvAdd: return nary([](const z3::expr& x, const z3::expr& y) { return x + y; });
    case Op::BvMul: return nary([](const z3::expr& x, const z3::expr& y) { return x * y; });
    case Op::BvUDiv: return z3::udiv(a[0], a[1]);
    case Op::BvSDiv: return a[0] / a[1];  // bvsdiv
    case Op::BvURem: return z3::urem(a[0], a[1]);
    case Op::BvSRem: return z3::srem(a[0], a[1]);
    case Op::BvShl: return z3::shl(a[0], a[1]);
    case Op::BvLShr: return z3::lshr(a[0], a[1]);
    case Op::BvAShr: return z3::ashr(a[0], a[1]);
    case Op::BvAnd: return nary([](const z3::expr& x, const z3::expr& y) { return x & y; });
    case Op::BvOr: return nary([](const z3::expr& x, const z3::expr& y) { return x | y; });
    case Op::BvXor: return nary([](const z3::expr& x, const z3::expr& y) { return x ^ y; });
    case Op::BvNot: return ~a[0];
    case Op::BvSMin: return nary([](const z3::expr& x, const z3::expr& y) { return z3::ite(z3::slt(x, y), x, y); });
    case Op::BvSMax: return nary([](const z3::expr& x, const z3::expr& y) { return z3::ite(z3::slt(x, y), y, x); });
    case Op::BvUMin: return nary([](const z3::expr& x, const z3::expr& y) { return z3::ite(z3::ult(x, y), x, y); });
    case Op::BvUMax: return nary([](const z3::expr& x, const z3::expr& y) { return z3::ite(z3::ult(x, y), y, x); });
    case Op::BvMulHiU:
    case Op::BvMulHiS: {
      unsigned w = ir::bv_width(e->sort);
      bool s = e->op == Op::BvMulHiS;
      z3::expr x = s ? z3::sext(a[0], w) : z3::zext(a[0], w);
      z3::expr y = s ? z3::sext(a[1], w) : z3::zext(a[1], w);
      return (x * y).extract(2 * w - 1, w);
    }
    case Op::ZExt: return z3::zext(a[0], ir::bv_width(e->sort) - ir::bv_width(e->arg(0)->sort));
    case Op::SExt: return z3::sext(a[0], ir::bv_width(e->sort) - ir::bv_width(e->arg(0)->sort));
    case Op::Trunc: return a[0].extract(ir::bv_width(e->sort) - 1, 0);
    case Op::Add: return flat(Z3_mk_add);
    case Op::Mul: return flat(Z3_mk_mul);
    case Op::Min:
    case Op::Max: {
      bool is_min = e->op == Op::Min;
      if (a.size() <= 2)
        return nary([&](const z3::expr& x, const z3::expr& y) { return z3::ite(is_min ? x <= y : x >= y, x, y); });
      // Wide min/max (a 128-channel reduction): a fresh m with m <= x_i (>=)
      // for all i and m == x_i for some i. Linear, and far easier for Z3
      // than a 127-deep ite chain.
      z3::expr m = z_.real_const(fmt::format("{}!{}", is_min ? "min" : "max", fresh_counter_++).c_str());
      z3::expr_vector some(z_);
      for (const z3::expr& x : a) {
        pending_.push_back(is_min ? m <= x : m >= x);
        some.push_back(m == x);
      }
      pending_.push_back(z3::mk_or(some));
      return m;
    }
    case Op::Abs: return z3::ite(a[0] >= 0, a[0], -a[0]);
    case Op::Call: return translate_call(e, a);
    case Op::BvToReal: return z3::to_real(bv_as_int(a[0], e->is_signed()));
    case Op::RealToBv: {
      unsigned w = ir::bv_width(e->sort);
      z3::expr i = round_to_int(a[0], e->round_mode());
      // saturate as PTX cvt does
      mpz_class lo_v = e->is_signed() ? mpz_class(-(mpz_class(1) << (w - 1))) : mpz_class(0);
      mpz_class hi_v = e->is_signed() ? mpz_class((mpz_class(1) << (w - 1)) - 1) : mpz_class((mpz_class(1) << w) - 1);
      z3::expr lo_e = z_.int_val(lo_v.get_str().c_str()), hi_e = z_.int_val(hi_v.get_str().c_str());
      z3::expr sat = z3::ite(i < lo_e, lo_e, z3::ite(i > hi_e, hi_e, i));
      // A fresh bitvector defined by its value (int2bv is very slow in Z3 4.8).
      z3::expr r = z_.bv_const(fmt::format("cvt!{}", fresh_counter_++).c_str(), w);
      pending_.push_back(bv_as_int(r, e->is_signed()) == sat);
      return r;
    }
    case Op::Load: {
      z3::expr v = z_.constant(fmt::format("load!{}!{}", elem_name(e->tensor(), 0), fresh_counter_++).c_str(),
                               sort_of(e->sort));
      LoadApp app{e, e->tensor(), a[0], v};
      add_load_lemmas(app);
      loads_.push_back(app);
      return v;
    }
    default:
      throw std::runtime_error(fmt::format("UNSUPPORTED: smt translation of op {}", ir::op_name(e->op)));
  }
}

// The integer value of a bitvector as a weighted sum of its bits (Z3 4.8's
// bv2int is slow); the top bit weighs -2^(w-1) when signed.
z3::expr Translator::bv_as_int(const z3::expr& bv, bool is_signed) {
  unsigned w = bv.get_sort().bv_size();
  z3::expr sum = z_.int_val(0);
  for (unsigned k = 0; k < w; ++k) {
    mpz_class weight = mpz_class(1) << k;
    if (is_signed && k == w - 1) weight = -weight;
    z3::expr bit = bv.extract(k, k) == z_.bv_val(1, 1);
    sum = sum + z3::ite(bit, z_.int_val(weight.get_str().c_str()), z_.int_val(0));
  }
  return sum;
}

z3::expr Translator::round_to_int(const z3::expr& x, ir::RoundMode rm) {
  auto floor_int = [&](const z3::expr& r) { return z3::expr(z_, Z3_mk_real2int(z_, r)); };
  switch (rm) {
    case ir::RoundMode::Down: return floor_int(x);
    case ir::RoundMode::Up: return -floor_int(-x);
    case ir::RoundMode::Zero: return z3::ite(x >= 0, floor_int(x), -floor_int(-x));
    case ir::RoundMode::NearestEven: {
      z3::expr f = floor_int(x);
      z3::expr frac = x - z3::to_real(f);
      z3::expr half = z_.real_val(1, 2);
      z3::expr even = z3::mod(f, z_.int_val(2)) == 0;
      return z3::ite(frac < half, f, z3::ite(frac > half, f + 1, z3::ite(even, f, f + 1)));
    }
  }
  throw std::logic_error("bad round mode");
}

z3::expr Translator::translate_call(Expr e, std::span<const z3::expr> a) {
  auto as_real = [&](const z3::expr& i) { return z3::to_real(i); };
  switch (e->fn()) {
    case Fn::Recip: return 1 / a[0];
    case Fn::Floor: return as_real(round_to_int(a[0], ir::RoundMode::Down));
    case Fn::Ceil: return as_real(round_to_int(a[0], ir::RoundMode::Up));
    case Fn::Trunc: return as_real(round_to_int(a[0], ir::RoundMode::Zero));
    case Fn::Round: return as_real(round_to_int(a[0], ir::RoundMode::NearestEven));
    case Fn::Sign: return z3::ite(a[0] > 0, z_.real_val(1), z3::ite(a[0] < 0, z_.real_val(-1), z_.real_val(0)));
    default: break;
  }
  z3::expr r = z_.real_const(fmt::format("{}!{}", ir::fn_name(e->fn()), fresh_counter_++).c_str());
  FnApp app{e->fn(), e, std::vector<z3::expr>(a.begin(), a.end()), r};
  add_fn_lemmas(app);
  fn_apps_.push_back(std::move(app));
  return r;
}

// Sound facts about one new application, and its relations to earlier
// applications of the same function.
void Translator::add_fn_lemmas(const FnApp& f) {
  const z3::expr& x = f.args[0];
  const z3::expr& r = f.result;
  switch (f.fn) {
    case Fn::Exp:
      pending_.push_back(r > 0);
      pending_.push_back(r >= 1 + x);  // convexity: e^x >= 1 + x
      pending_.push_back(z3::implies(x == 0, r == 1));
      break;
    case Fn::Log:
      pending_.push_back(z3::implies(x == 1, r == 0));
      pending_.push_back(z3::implies(x > 0, r <= x - 1));
      break;
    case Fn::Sqrt:  // algebraic: exact on the domain
      pending_.push_back(z3::implies(x >= 0, r >= 0 && r * r == x));
      break;
    case Fn::Erf:
    case Fn::Tanh:
      pending_.push_back(r > -1 && r < 1);
      pending_.push_back(z3::implies(x == 0, r == 0));
      pending_.push_back(z3::implies(x > 0, r > 0) && z3::implies(x < 0, r < 0));
      break;
    case Fn::Sin:
    case Fn::Cos:
      pending_.push_back(r >= -1 && r <= 1);
      break;
    case Fn::GeluErf:
    case Fn::GeluTanh:
      pending_.push_back(z3::implies(x == 0, r == 0));
      pending_.push_back(z3::implies(x > 0, r > 0 && r < x));
      pending_.push_back(z3::implies(x < 0, r > x && r < 0));
      break;
    default: break;
  }
  size_t same = apps_of_fn_[f.fn]++;
  if (same >= opt_.max_congruence_apps) return;
  bool lemmas = same < opt_.max_lemma_apps;
  for (const FnApp& g : fn_apps_) {
    if (g.fn != f.fn) continue;
    tick(8);
    z3::expr args_eq = z_.bool_val(true);
    for (size_t i = 0; i < f.args.size(); ++i) args_eq = args_eq && (f.args[i] == g.args[i]);
    pending_.push_back(z3::implies(args_eq, r == g.result));  // congruence
    if (!lemmas) continue;
    const z3::expr& y = g.args[0];
    const z3::expr& s = g.result;
    switch (f.fn) {
      case Fn::Exp: case Fn::Erf: case Fn::Tanh: case Fn::Atan: case Fn::Asinh: case Fn::Sinh:
        pending_.push_back(z3::implies(x < y, r < s) && z3::implies(y < x, s < r));
        break;
      case Fn::Log: case Fn::Sqrt:
        pending_.push_back(z3::implies(0 <= x && x < y, r < s) && z3::implies(0 <= y && y < x, s < r));
        break;
      default: break;
    }
  }
}

void Translator::add_load_lemmas(const LoadApp& l) {
  for (const LoadApp& m : loads_)
    if (m.tensor == l.tensor && z3::eq(m.value.get_sort(), l.value.get_sort()))
      pending_.push_back(z3::implies(l.index == m.index, l.value == m.value));
  auto it = elems_.find(l.tensor);
  if (it == elems_.end()) return;
  for (const auto& [k, v] : it->second)
    if (z3::eq(v.get_sort(), l.value.get_sort()))
      pending_.push_back(z3::implies(l.index == z_.bv_val(static_cast<uint64_t>(k), 64), l.value == v));
}

double numeral_to_double(const z3::expr& v0) {
  z3::expr v = v0.is_numeral() ? v0 : v0.simplify();
  if (v.is_bool()) return v.is_true() ? 1 : 0;
  if (!v.is_numeral() && !v.is_algebraic())
    throw std::runtime_error("model value is not a numeral: " + v.to_string());
  if (v.is_algebraic()) {
    std::string s = v.get_decimal_string(40);
    if (!s.empty() && s.back() == '?') s.pop_back();
    return std::strtod(s.c_str(), nullptr);
  }
  std::string s = Z3_get_numeral_string(v.ctx(), v);
  mpq_class q(s);
  return q.get_d();
}

z3::expr double_to_real(z3::context& z, double d) {
  if (!std::isfinite(d)) throw std::invalid_argument("double_to_real: not finite");
  mpq_class q(d);
  std::string s = q.get_str();
  return z.real_val(s.c_str());
}

}  // namespace dirigo::smt
