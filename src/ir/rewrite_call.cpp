// Real functions (floor, ceil, round, exp, pow, ...: exact on rational constants where they can be),
// abs, conversions between bitvectors and reals, and tensor loads.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/expr_internal.h"

namespace dirigo::ir {
using namespace detail;

Expr Context::Impl::call(Fn f, std::span<const Expr> args) {
  if (args.size() != fn_arity(f))
    throw std::invalid_argument(fmt::format("{} takes {} argument(s), got {}", fn_name(f), fn_arity(f), args.size()));
  check_sorts(args, Sort::Real, fn_name(f));
  for (Expr a : args)
    if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(Sort::Real);
  Expr x = args[0];
  if (f == Fn::Recip && on(Rule::DivToRecip)) {
    if (x->op == Op::ConstReal && x->rational() != 0 && apply(Rule::DivToRecip))
      return mk_real(1 / x->rational());
    if (x->op == Op::Mul && x->args_[0]->op == Op::ConstReal && apply(Rule::DivToRecip)) {
      Expr rest = x->nargs == 2 ? x->args_[1] : raw(Op::Mul, Sort::Real, {x->args_ + 1, x->nargs - 1});
      Expr xs[] = {mk_real(1 / x->args_[0]->rational()), raw1(Op::Call, Sort::Real, rest, 0, uint64_t(Fn::Recip))};
      return mul_n(Sort::Real, xs);
    }
  }
  if (f == Fn::Log && x->op == Op::Call && x->fn() == Fn::Exp && apply(Rule::LogOfExp)) return x->args_[0];
  if (x->op == Op::ConstReal && f != Fn::Recip && f != Fn::Pow) {
    if (auto r = exact_fn(f, x->rational()); r && apply(Rule::ConstFold)) return mk_real(*r);
  }
  return raw(Op::Call, Sort::Real, args, 0, static_cast<uint64_t>(f));
}

// Function values that are exact rationals (the rest stay symbolic).
std::optional<mpq_class> Context::Impl::exact_fn(Fn f, const mpq_class& q) {
  mpz_class fl;
  mpz_fdiv_q(fl.get_mpz_t(), q.get_num_mpz_t(), q.get_den_mpz_t());
  switch (f) {
    case Fn::Floor: return mpq_class(fl);
    case Fn::Ceil: return mpq_class(q.get_den() == 1 ? fl : fl + 1);
    case Fn::Trunc: return mpq_class(q >= 0 ? fl : (q.get_den() == 1 ? fl : fl + 1));
    case Fn::Round: {
      mpq_class frac = q - fl;
      if (frac < mpq_class(1, 2)) return mpq_class(fl);
      if (frac > mpq_class(1, 2)) return mpq_class(fl + 1);
      return mpq_class(mpz_even_p(fl.get_mpz_t()) ? fl : fl + 1);
    }
    case Fn::Sign: return mpq_class(sgn(q));
    default: break;
  }
  if (q == 0) {
    switch (f) {
      case Fn::Exp: case Fn::Exp2: case Fn::Cos: case Fn::Cosh: return mpq_class(1);
      case Fn::Sigmoid: return mpq_class(1, 2);
      case Fn::Log1p: case Fn::Expm1: case Fn::Tanh: case Fn::Erf: case Fn::Sqrt: case Fn::GeluErf:
      case Fn::GeluTanh: case Fn::Silu: case Fn::Mish: case Fn::Elu: case Fn::Selu: case Fn::Sin:
      case Fn::Tan: case Fn::Atan: case Fn::Asin: case Fn::Sinh: case Fn::Asinh: case Fn::Atanh:
        return mpq_class(0);
      case Fn::Erfc: return mpq_class(1);
      default: return std::nullopt;
    }
  }
  if (q == 1) {
    switch (f) {
      case Fn::Log: case Fn::Log2: case Fn::Acos: case Fn::Acosh: return mpq_class(0);
      case Fn::Sqrt: case Fn::Rsqrt: return mpq_class(1);
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

Expr Context::Impl::abs(Expr a) {
  if (a->sort != Sort::Real) throw std::invalid_argument("abs: real operand expected");
  if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return a;
  if (a->op == Op::ConstReal && apply(Rule::ConstFold)) return mk_real(::abs(a->rational()));
  if (a->op == Op::Abs && apply(Rule::AbsCanon)) return a;
  if (a->op == Op::Mul && a->args_[0]->op == Op::ConstReal && apply(Rule::AbsCanon)) {
    Expr rest = a->nargs == 2 ? a->args_[1] : raw(Op::Mul, Sort::Real, {a->args_ + 1, a->nargs - 1});
    Expr xs[] = {mk_real(::abs(a->args_[0]->rational())), abs(rest)};
    return mul_n(Sort::Real, xs);
  }
  return raw1(Op::Abs, Sort::Real, a);
}

Expr Context::Impl::bv_to_real(Expr a, bool sgn) {
  check_bv(a, "bv2real");
  if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(Sort::Real);
  if (a->op == Op::ConstBV && apply(Rule::ConstFold)) {
    if (sgn) return mk_real(mpq_class(mpz_class(std::to_string(a->bv_signed()))));
    return mk_real(mpq_class(mpz_class(std::to_string(a->u))));
  }
  if (sgn && nonneg(a) && apply(Rule::BvSignedToUnsigned)) return bv_to_real(a, false);
  return raw1(Op::BvToReal, Sort::Real, a, sgn ? kSigned : 0);
}

Expr Context::Impl::real_to_bv(Expr a, Sort to, bool sgn, RoundMode rm) {
  if (a->sort != Sort::Real) throw std::invalid_argument("real2bv: real operand expected");
  if (!is_bv(to)) throw std::invalid_argument("real2bv: bit-vector target sort expected");
  uint8_t flags = (sgn ? kSigned : 0) | static_cast<uint8_t>(static_cast<uint8_t>(rm) << kRoundShift);
  if (a->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(to);
  if (a->op == Op::ConstReal && apply(Rule::ConstFold)) {
    static constexpr Fn fns[] = {Fn::Round, Fn::Trunc, Fn::Floor, Fn::Ceil};
    mpq_class r = *exact_fn(fns[static_cast<unsigned>(rm)], a->rational());
    unsigned w = bv_width(to);
    mpz_class lo = sgn ? -(mpz_class(1) << (w - 1)) : mpz_class(0);
    mpz_class hi = sgn ? (mpz_class(1) << (w - 1)) - 1 : (mpz_class(1) << w) - 1;
    mpz_class z = r.get_num();
    if (z < lo) z = lo;  // PTX cvt saturates
    if (z > hi) z = hi;
    if (z < 0) z += mpz_class(1) << w;
    return mk_bv(to, std::stoull(z.get_str()));
  }
  return raw1(Op::RealToBv, to, a, flags);
}

Expr Context::Impl::load(int32_t tensor, Expr idx, Sort s) {
  check_bv(idx, "load index");
  TensorRegistry::get().name(tensor);  // validates the id
  if (idx->op == Op::Undef && apply(Rule::UndefPropagate)) return undef(s);
  if (idx->op == Op::ConstBV && apply(Rule::LoadFold))
    return elem(tensor, idx->sort == Sort::BV64 ? idx->bv_signed() : static_cast<int64_t>(idx->u), s);
  Key k{Op::Load, s, 0, {&idx, 1}};
  k.tensor = tensor;
  return intern(k);
}

Expr Context::Impl::elem(int32_t tensor, int64_t index, Sort s) {
  TensorRegistry::get().name(tensor);
  if (s == Sort::Bool) throw std::invalid_argument("elem: tensors hold reals or bit-vectors, not bool");
  Key k{Op::TensorElem, s};
  k.tensor = tensor;
  k.u = static_cast<uint64_t>(index);
  return intern(k);
}

}  // namespace dirigo::ir
