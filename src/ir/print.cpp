// Human-readable and SMT-LIB 2 printing. Both walk the DAG iteratively.
#include "ir/print.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/expr_internal.h"
#include "ir/print_internal.h"
#include "ir/walk.h"

namespace dirigo::ir {

std::string_view infix_symbol(Op o, std::string_view times) {
  switch (o) {
    case Op::And: return " && ";
    case Op::Or: return " || ";
    case Op::Eq: return " == ";
    case Op::Ult: return " <u ";
    case Op::Ule: return " <=u ";
    case Op::Slt: return " <s ";
    case Op::Sle: return " <=s ";
    case Op::Lt: return " < ";
    case Op::Le: return " <= ";
    case Op::BvAdd: case Op::Add: return " + ";
    case Op::BvMul: case Op::Mul: return times;
    case Op::BvUDiv: return " /u ";
    case Op::BvSDiv: return " /s ";
    case Op::BvURem: return " %u ";
    case Op::BvSRem: return " %s ";
    case Op::BvShl: return " << ";
    case Op::BvLShr: return " >>u ";
    case Op::BvAShr: return " >>s ";
    case Op::BvAnd: return " & ";
    case Op::BvOr: return " | ";
    case Op::BvXor: return " ^ ";
    default: return {};
  }
}

using detail::NodeMap;
using detail::NodeSet;

namespace {

std::string rat_str(const mpq_class& q) { return q.get_str(); }

std::string bv_str(uint64_t v) { return v < 65536 ? std::to_string(v) : fmt::format("0x{:x}", v); }

std::string func_name(Expr x) {
  switch (x->op) {
    case Op::BvMulHiU: return "mulhi_u";
    case Op::BvMulHiS: return "mulhi_s";
    case Op::RealToBv: {
      static constexpr std::string_view rm[] = {"rn", "rz", "rm", "rp"};
      return fmt::format("cvt_{}{}_{}", x->is_signed() ? 's' : 'u', bv_width(x->sort),
                         rm[static_cast<unsigned>(x->round_mode())]);
    }
    default: return function_name(x);
  }
}

}  // namespace

std::string function_name(Expr x) {
  switch (x->op) {
    case Op::BvSMin: return "smin";
    case Op::BvSMax: return "smax";
    case Op::BvUMin: return "umin";
    case Op::BvUMax: return "umax";
    case Op::ZExt: return fmt::format("zext{}", bv_width(x->sort));
    case Op::SExt: return fmt::format("sext{}", bv_width(x->sort));
    case Op::Trunc: return fmt::format("trunc{}", bv_width(x->sort));
    case Op::Call: return std::string(fn_name(x->fn()));
    case Op::BvToReal: return x->is_signed() ? "real_s" : "real_u";
    default: return std::string(op_name(x->op));
  }
}

// Σ_{k1<64, k0<8192} body: dims named by the de Bruijn index their Bound leaves carry in the body
// (the last dim is k0); a dim not starting at 0 prints its range.
std::string reduce_string(Expr x, std::string_view body) {
  static constexpr std::string_view sym[] = {"Σ", "Π", "max", "min"};
  std::vector<std::string> dims;
  const unsigned n = x->reduce_rank();
  for (unsigned d = 0; d < n; ++d) {
    int64_t lo = x->reduce_lo(d), hi = x->reduce_hi(d);
    dims.push_back(lo == 0 ? fmt::format("k{}<{}", n - 1 - d, hi) : fmt::format("k{}∈[{},{})", n - 1 - d, lo, hi));
  }
  return fmt::format("{}_{{{}}} ({})", sym[static_cast<unsigned>(x->reduce_op())], fmt::join(dims, ", "), body);
}

std::string to_string(const Context& ctx, Expr e, const PrintOptions& opt) {
  auto& reg = detail::TensorRegistry::get();
  // 1. Breadth-first: the first max_nodes distinct nodes are printed, the rest
  // elided; so are the operands of a wide node past max_operands.
  const size_t max_operands = std::max<size_t>(opt.max_operands, 1);
  auto printed_args = [&](Expr x) { return x->args().first(std::min<size_t>(x->nargs, max_operands)); };
  NodeSet shown;
  shown.insert(e);
  std::deque<Expr> q{e};
  std::vector<Expr> bfs;
  while (!q.empty()) {
    Expr x = q.front();
    q.pop_front();
    bfs.push_back(x);
    for (Expr c : printed_args(x))
      if (shown.size() < std::max<size_t>(opt.max_nodes, 1) && shown.insert(c)) q.push_back(c);
  }
  // 2. Shared non-leaf nodes get let-bound names.
  NodeMap<uint32_t> uses;
  for (Expr x : bfs)
    for (Expr c : printed_args(x))
      if (shown.count(c)) ++uses[c];
  NodeMap<std::string> name;
  NodeSet counted = shown;  // nodes already accounted for in elision counts
  auto elided_count = [&](Expr c) {
    uint64_t n = 0;
    std::vector<Expr> st;
    if (counted.insert(c)) st.push_back(c);
    while (!st.empty()) {
      Expr x = st.back();
      st.pop_back();
      ++n;
      for (Expr y : x->args())
        if (counted.insert(y)) st.push_back(y);
    }
    return n;
  };
  // 3. Post-order string construction.
  NodeMap<std::string> str;
  std::string lets;
  unsigned next_name = 0;
  auto has = [&](Expr x) { return str.count(x) > 0 || !shown.count(x); };  // elided: never printed
  walk_post_order(e, printed_args, has, [](Expr) { return false; }, [&](Expr x) {
    std::vector<std::string> parts;
    uint64_t hidden_ops = 0, hidden_nodes = 0;
    auto flush_hidden = [&] {
      if (!hidden_ops) return;
      parts.push_back(hidden_ops == 1 ? fmt::format("…({} nodes)", hidden_nodes)
                                      : fmt::format("…({} operands, {} nodes)", hidden_ops, hidden_nodes));
      hidden_ops = hidden_nodes = 0;
    };
    for (Expr c : printed_args(x)) {
      if (!shown.count(c)) {
        ++hidden_ops;
        hidden_nodes += elided_count(c);
        continue;
      }
      flush_hidden();
      auto n = name.find(c);
      parts.push_back(n != name.end() ? n->second : str.at(c));
    }
    flush_hidden();
    if (x->nargs > max_operands) parts.push_back(fmt::format("…(+{} more)", x->nargs - max_operands));
    std::string s;
    switch (x->op) {
      case Op::ConstBool: s = x->u ? "true" : "false"; break;
      case Op::ConstBV: s = bv_str(x->u); break;
      case Op::ConstReal: s = rat_str(x->rational()); break;
      case Op::Var: s = std::string(x->name()); break;
      case Op::TensorElem: s = fmt::format("{}[{}]", reg.name(x->tensor()), x->index()); break;
      case Op::Undef: s = fmt::format("undef:{}", sort_name(x->sort)); break;
      // The fixed-arity forms need one part per operand: elided operands merge into one "…" part,
      // so with any of them elided these print in the generic f(args) form below.
      case Op::Load: s = fmt::format("{}[{}]", reg.name(x->tensor()), parts[0]); break;
      case Op::Bound: s = fmt::format("k{}", x->u); break;
      case Op::Reduce: s = reduce_string(x, parts.empty() ? "…" : parts[0]); break;
      case Op::Not: s = "!" + parts[0]; break;
      case Op::BvNot: s = "~" + parts[0]; break;
      case Op::Ite:
        if (parts.size() == 3) {
          s = fmt::format("({} ? {} : {})", parts[0], parts[1], parts[2]);
          break;
        }
        [[fallthrough]];
      default: {
        std::string_view op = infix_symbol(x->op, "*");
        if (!op.empty()) {
          s = fmt::format("{}", fmt::join(parts, op));
          if (!(x->op == Op::Mul || x->op == Op::BvMul)) s = "(" + s + ")";
        } else {
          s = fmt::format("{}({})", func_name(x), fmt::join(parts, ", "));
        }
      }
    }
    if (opt.let_shared && x->nargs && uses[x] > 1) {
      std::string n = fmt::format("t{}", next_name++);
      lets += fmt::format("let {} = {};\n", n, s);
      name.emplace(x, n);
    }
    str.emplace(x, std::move(s));
  });
  return lets + str.at(e);
}

// ------------------------------------------------------------------ SMT-LIB 2

namespace {
std::string smt_sort(Sort s) {
  if (s == Sort::Bool) return "Bool";
  if (s == Sort::Real) return "Real";
  return fmt::format("(_ BitVec {})", bv_width(s));
}
std::string quote(std::string_view n) {
  std::string s(n);
  std::replace(s.begin(), s.end(), '|', '!');
  std::replace(s.begin(), s.end(), '\\', '/');
  return "|" + s + "|";
}
std::string smt_real(const mpq_class& q) {
  auto abs_str = [&](const mpq_class& a) {
    if (a.get_den() == 1) return a.get_num().get_str() + ".0";
    return fmt::format("(/ {}.0 {}.0)", a.get_num().get_str(), a.get_den().get_str());
  };
  if (q < 0) return fmt::format("(- {})", abs_str(-q));
  return abs_str(q);
}
}  // namespace

std::string to_smtlib(const Context& ctx, Expr a, Expr b) {
  auto& reg = detail::TensorRegistry::get();
  if (b && a->sort != b->sort) throw std::invalid_argument("to_smtlib: the two sides have different sorts");
  // Post-order over both roots; count parents to decide what to inline.
  std::vector<Expr> order;
  NodeMap<uint32_t> uses;
  {
    NodeSet seen;
    std::vector<std::pair<Expr, bool>> st;
    for (Expr r : {b, a})
      if (r) st.emplace_back(r, false);
    while (!st.empty()) {
      auto [x, done] = st.back();
      st.pop_back();
      if (done) { order.push_back(x); continue; }
      if (!seen.insert(x)) continue;
      st.emplace_back(x, true);
      for (Expr c : x->args()) {
        ++uses[c];
        if (!seen.count(c)) st.emplace_back(c, false);
      }
    }
  }
  std::string out = "(set-logic ALL)\n";
  std::set<int32_t> loaded_tensors;
  for (Expr x : order)
    if (x->op == Op::Load) loaded_tensors.insert(x->tensor());
  std::set<std::string> helpers;
  std::string decls, defs;
  auto helper = [&](const std::string& name, const std::string& def) {
    if (helpers.insert(name).second) decls += def + "\n";
  };
  std::map<int32_t, Sort> tensor_sort;
  for (Expr x : order)
    if ((x->op == Op::Load || x->op == Op::TensorElem) && loaded_tensors.count(x->tensor()))
      tensor_sort.emplace(x->tensor(), x->sort);
  for (auto [t, s] : tensor_sort)
    decls += fmt::format("(declare-fun {} ((_ BitVec 64)) {})\n", quote(reg.name(t)), smt_sort(s));

  NodeMap<std::string> str;
  unsigned next_def = 0;
  for (Expr x : order) {
    std::vector<std::string> p;
    for (Expr c : x->args()) p.push_back(str.at(c));
    std::string s;
    unsigned w = bv_width(x->sort);
    auto nary = [&](std::string_view op) { return fmt::format("({} {})", op, fmt::join(p, " ")); };
    auto fold2 = [&](const std::string& f) {
      std::string acc = p[0];
      for (size_t i = 1; i < p.size(); ++i) acc = fmt::format("({} {} {})", f, acc, p[i]);
      return acc;
    };
    switch (x->op) {
      case Op::ConstBool: s = x->u ? "true" : "false"; break;
      case Op::ConstBV: s = fmt::format("(_ bv{} {})", x->u, w); break;
      case Op::ConstReal: s = smt_real(x->rational()); break;
      case Op::Var:
        s = quote(x->name());
        decls += fmt::format("(declare-const {} {})\n", s, smt_sort(x->sort));
        break;
      case Op::TensorElem:
        if (loaded_tensors.count(x->tensor())) {
          s = fmt::format("({} (_ bv{} 64))", quote(reg.name(x->tensor())), static_cast<uint64_t>(x->index()));
        } else {
          s = quote(fmt::format("{}[{}]", reg.name(x->tensor()), x->index()));
          decls += fmt::format("(declare-const {} {})\n", s, smt_sort(x->sort));
        }
        break;
      case Op::Undef:
        s = quote(fmt::format("undef_{}", sort_name(x->sort)));
        decls += fmt::format("(declare-const {} {})\n", s, smt_sort(x->sort));
        break;
      case Op::Load: {
        unsigned wi = bv_width(x->arg(0)->sort);
        std::string idx = wi == 64 ? p[0] : fmt::format("((_ zero_extend {}) {})", 64 - wi, p[0]);
        s = fmt::format("({} {})", quote(reg.name(x->tensor())), idx);
        break;
      }
      case Op::Not: s = nary("not"); break;
      case Op::And: s = nary("and"); break;
      case Op::Or: s = nary("or"); break;
      case Op::Eq: s = nary("="); break;
      case Op::Ult: s = nary("bvult"); break;
      case Op::Ule: s = nary("bvule"); break;
      case Op::Slt: s = nary("bvslt"); break;
      case Op::Sle: s = nary("bvsle"); break;
      case Op::Lt: s = nary("<"); break;
      case Op::Le: s = nary("<="); break;
      case Op::Ite: s = nary("ite"); break;
      case Op::BvAdd: s = nary("bvadd"); break;
      case Op::BvMul: s = nary("bvmul"); break;
      case Op::BvUDiv: s = nary("bvudiv"); break;
      case Op::BvSDiv: s = nary("bvsdiv"); break;
      case Op::BvURem: s = nary("bvurem"); break;
      case Op::BvSRem: s = nary("bvsrem"); break;
      case Op::BvShl: s = nary("bvshl"); break;
      case Op::BvLShr: s = nary("bvlshr"); break;
      case Op::BvAShr: s = nary("bvashr"); break;
      case Op::BvAnd: s = nary("bvand"); break;
      case Op::BvOr: s = nary("bvor"); break;
      case Op::BvXor: s = nary("bvxor"); break;
      case Op::BvNot: s = nary("bvnot"); break;
      case Op::BvSMin: case Op::BvSMax: case Op::BvUMin: case Op::BvUMax: case Op::Min: case Op::Max: {
        bool mn = x->op == Op::BvSMin || x->op == Op::BvUMin || x->op == Op::Min;
        std::string_view cmp = x->op == Op::Min || x->op == Op::Max ? "<="
                               : (x->op == Op::BvSMin || x->op == Op::BvSMax) ? "bvsle" : "bvule";
        std::string f = fmt::format("{}_{}", func_name(x), sort_name(x->sort));
        helper(f, fmt::format("(define-fun {} ((a {}) (b {})) {} (ite ({} a b) {} {}))", f, smt_sort(x->sort),
                              smt_sort(x->sort), smt_sort(x->sort), cmp, mn ? "a" : "b", mn ? "b" : "a"));
        s = fold2(f);
        break;
      }
      case Op::BvMulHiU: case Op::BvMulHiS: {
        std::string_view ext = x->op == Op::BvMulHiS ? "sign_extend" : "zero_extend";
        s = fmt::format("((_ extract {} {}) (bvmul ((_ {} {}) {}) ((_ {} {}) {})))", 2 * w - 1, w, ext, w, p[0], ext,
                        w, p[1]);
        break;
      }
      case Op::ZExt: s = fmt::format("((_ zero_extend {}) {})", w - bv_width(x->arg(0)->sort), p[0]); break;
      case Op::SExt: s = fmt::format("((_ sign_extend {}) {})", w - bv_width(x->arg(0)->sort), p[0]); break;
      case Op::Trunc: s = fmt::format("((_ extract {} 0) {})", w - 1, p[0]); break;
      case Op::Add: s = nary("+"); break;
      case Op::Mul: s = nary("*"); break;
      case Op::Abs:
        helper("abs_real", "(define-fun abs_real ((a Real)) Real (ite (>= a 0.0) a (- a)))");
        s = nary("abs_real");
        break;
      case Op::Call:
        if (x->fn() == Fn::Recip) {
          s = fmt::format("(/ 1.0 {})", p[0]);
        } else {
          std::string f = quote(fn_name(x->fn()));
          helper(f, fmt::format("(declare-fun {} ({}) Real)", f, x->nargs == 2 ? "Real Real" : "Real"));
          s = fmt::format("({} {})", f, fmt::join(p, " "));
        }
        break;
      case Op::BvToReal: {
        unsigned wi = bv_width(x->arg(0)->sort);
        if (!x->is_signed()) {
          s = fmt::format("(to_real (bv2nat {}))", p[0]);
        } else {
          std::string f = fmt::format("sbv2real_{}", wi);
          helper(f, fmt::format("(define-fun {} ((a (_ BitVec {}))) Real (ite (bvslt a (_ bv0 {})) (- (to_real "
                                "(bv2nat a)) {}.0) (to_real (bv2nat a))))",
                                f, wi, wi, mpz_class(mpz_class(1) << wi).get_str()));
          s = fmt::format("({} {})", f, p[0]);
        }
        break;
      }
      case Op::RealToBv: {  // rounding + saturation left uninterpreted
        std::string f = quote(func_name(x));
        helper(f, fmt::format("(declare-fun {} (Real) {})", f, smt_sort(x->sort)));
        s = fmt::format("({} {})", f, p[0]);
        break;
      }
      case Op::Bound: case Op::Reduce:
        throw std::invalid_argument("to_smtlib: reductions have no SMT-LIB form here (expand them first)");
      case Op::Count_: throw std::invalid_argument("to_smtlib: unknown op");
    }
    // Name shared nodes, and long ones so that deep chains print in linear space.
    if (x->nargs && (uses[x] > 1 || s.size() > 256)) {
      std::string n = fmt::format("|t{}|", next_def++);
      defs += fmt::format("(define-fun {} () {} {})\n", n, smt_sort(x->sort), s);
      s = n;
    }
    str.emplace(x, std::move(s));
  }
  out += decls + defs;
  if (b) out += fmt::format("(assert (distinct {} {}))\n", str.at(a), str.at(b));
  else if (a->sort == Sort::Bool) out += fmt::format("(assert {})\n", str.at(a));
  else out += fmt::format("(define-fun |root| () {} {})\n", smt_sort(a->sort), str.at(a));
  out += "(check-sat)\n";
  return out;
}

}  // namespace dirigo::ir
