// The symbolic expression DAG: hash-consed, immutable nodes in canonical form.
//
// Every node is created through a Context, whose smart constructors rewrite to
// canonical form *before* hash-consing (Alive2/Bitwuzla style). Two expressions
// that canonicalize identically are the same pointer, so most equal locations
// are decided without a solver. Nodes are never freed individually; a Context
// owns them all (arena). A Context is confined to one thread; use import() to
// move an expression between workers' contexts.
//
// Floats are reals (fp16/bf16/fp32/fp64 all have Sort::Real); integers are
// bitvectors of width 8/16/32/64 (wraparound arithmetic). All traversals over
// expressions are iterative: one output location can reach millions of nodes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gmpxx.h>

namespace dirigo::ir {

enum class Sort : uint8_t { Bool, BV8, BV16, BV32, BV64, Real };
unsigned bv_width(Sort s);             // 8/16/32/64; 0 for Bool/Real
Sort bv_sort(unsigned width);          // throws std::invalid_argument on other widths
bool is_bv(Sort s);
std::string_view sort_name(Sort s);

// Named (uninterpreted, for the solver) real functions. Kept deliberately
// explicit: the math-idiom rollup in ptx and the ATen semantics both produce
// these, and smt/axioms normalizes between them.
enum class Fn : uint8_t {
  Exp, Exp2, Log, Log2, Log1p, Expm1, Tanh, Erf, Erfc, Sqrt, Rsqrt, Pow,
  Sigmoid, GeluErf, GeluTanh, Softplus, Silu, Mish, Elu, Selu, Sin, Cos, Tan,
  Atan, Asin, Acos, Sinh, Cosh, Asinh, Acosh, Atanh,
  Floor, Ceil, Round /*half-to-even*/, Trunc, Sign,
  Recip,  // 1/x, the canonical form of division: a/b == a * Recip(b)
  Count_
};
std::string_view fn_name(Fn f);
unsigned fn_arity(Fn f);  // Pow: 2, everything else 1

enum class Op : uint8_t {
  // ---- leaves
  ConstBool,   // payload: bool_value()
  ConstBV,     // payload: bv_value() (already truncated to width)
  ConstReal,   // payload: rational()
  Var,         // a free variable: thread identity, cut-point, user; name() + optional bounds
  TensorElem,  // T[i]: tensor() + flat element index(); sort Real (float tensors) or BV (int tensors)
  Undef,       // ⊥: an indeterminate value (read of an exited lane, uninitialized shared memory)
  // ---- bool
  Not, And, Or,                         // And/Or n-ary, sorted, deduplicated
  // ---- comparisons (-> Bool). Eq works on every sort; the rest on BV (signed/unsigned) or Real.
  Eq, Ult, Ule, Slt, Sle, Lt, Le,       // Lt/Le: real. Gt/Ge are built by swapping operands.
  // ---- generic
  Ite,                                  // (cond, then, else), any sort
  // ---- bitvector (wraparound); BvAdd/BvMul/BvAnd/BvOr/BvXor n-ary and sorted
  BvAdd, BvMul, BvUDiv, BvSDiv, BvURem, BvSRem, BvShl, BvLShr, BvAShr,
  BvAnd, BvOr, BvXor, BvNot, BvSMin, BvSMax, BvUMin, BvUMax,
  BvMulHiU, BvMulHiS,                   // high half of the double-width product
  ZExt, SExt, Trunc,                    // width change; result sort is the node's sort
  // ---- real; Add/Mul/Min/Max n-ary and sorted
  Add,    // sum of terms; the constant term (if any) comes first
  Mul,    // product of atoms; a numeric coefficient (if any) comes first
  Min, Max, Abs,
  Call,   // named function: fn() + args
  // ---- conversions
  BvToReal,    // value of a bitvector as an integer; signedness in flags()
  RealToBv,    // rounding in flags() (RoundMode), signedness in flags(); saturating as PTX cvt
  // ---- memory
  Load,        // T[idx] with a symbolic BV64 element index: tensor() + arg 0; folds to TensorElem when idx is constant
  // ---- reductions (locally nameless: bound indices are de Bruijn leaves, so hash-consing is modulo renaming)
  Bound,       // BV64 leaf: bound index u of the enclosing reductions (0 = the innermost reduction's last dim)
  Reduce,      // reduce_op() over a box: arg 0 the body, then per dim lo and hi as BV64 constants ([lo, hi))
  Count_
};
std::string_view op_name(Op o);

// What a Reduce combines its body's values with (flags()).
enum class ReduceOp : uint8_t { Sum, Prod, Max, Min };
std::string_view reduce_op_name(ReduceOp o);

enum class RoundMode : uint8_t { NearestEven, Zero, Down, Up };
enum Flags : uint8_t { kSigned = 1, kRoundShift = 1 };  // flags(): bit0 = signed, bits1-2 = RoundMode

struct Node;
using Expr = const Node*;

// Closed interval for bitvector variables (as unsigned values) used by the
// canonicalizer to push zext/sext through affine terms when no overflow is possible.
struct Bounds {
  uint64_t lo = 0, hi = UINT64_MAX;
};

// 64 bytes. Leaves keep their payload in u/v/p_; interior nodes point at an
// arena-allocated child array.
struct Node {
  Op op;
  Sort sort;
  uint8_t flags;
  uint8_t attrs;       // kHasUndef / kHasData, or-ed up from the children
  uint32_t nargs;
  uint32_t id;         // creation order within the Context (not canonical across Contexts)
  int32_t tensor_;     // TensorElem/Load: tensor id (process-wide, see Context::tensor)
  uint64_t hash;       // structural hash, independent of construction order and Context
  uint64_t size;       // tree size (1 + sum of children), saturating: an upper bound on distinct nodes
  const Expr* args_;   // nargs children
  uint64_t u;          // ConstBV value, ConstBool, TensorElem index, Call Fn, Var bounds lo
  uint64_t v;          // Var bounds hi
  const void* p_;      // ConstReal: mpq_class; Var: std::string (owned by the Context)

  static constexpr uint8_t kHasUndef = 1, kHasData = 2, kHasBound = 4;

  std::span<const Expr> args() const { return {args_, nargs}; }
  Expr arg(unsigned i) const { return args_[i]; }
  bool is_const() const { return op == Op::ConstBool || op == Op::ConstBV || op == Op::ConstReal; }
  bool is_leaf() const { return nargs == 0; }
  bool bool_value() const { return u != 0; }
  uint64_t bv_value() const { return u; }
  int64_t bv_signed() const;
  const mpq_class& rational() const { return *static_cast<const mpq_class*>(p_); }
  int32_t tensor() const { return tensor_; }
  int64_t index() const { return static_cast<int64_t>(u); }
  Fn fn() const { return static_cast<Fn>(u); }
  std::string_view name() const;
  Bounds bounds() const { return {u, v}; }
  bool is_signed() const { return flags & kSigned; }
  RoundMode round_mode() const { return static_cast<RoundMode>((flags >> kRoundShift) & 3); }
  bool has_undef() const { return attrs & kHasUndef; }  // some leaf below is Undef
  bool has_data() const { return attrs & kHasData; }    // some leaf below is TensorElem/Load
  bool has_free_bound() const { return attrs & kHasBound; }  // some Bound leaf below is not bound below this node
  ReduceOp reduce_op() const { return static_cast<ReduceOp>(flags); }
  unsigned reduce_rank() const { return (nargs - 1) / 2; }                      // Reduce: number of dims
  int64_t reduce_lo(unsigned d) const { return static_cast<int64_t>(args_[1 + 2 * d]->u); }
  int64_t reduce_hi(unsigned d) const { return static_cast<int64_t>(args_[2 + 2 * d]->u); }
  Expr reduce_body() const { return args_[0]; }
};

// Every canonicalization rule has a name; each can be switched off (for the
// per-rule "applies / does not apply" tests) and counts its applications.
enum class Rule : uint8_t {
  ConstFold,          // any op whose operands are all constants
  UndefPropagate,     // op(..., undef, ...) -> undef (poison semantics; ite arms excepted)
  AddFlatten,         // (a+b)+c -> a+b+c  (Add and BvAdd)
  AddCombineLike,     // 2x + 3x -> 5x ; x - x -> 0
  AddSort,            // terms ordered canonically by monomial
  AddIdentity,        // a+0 -> a ; unary sum -> operand
  MulFlatten,         // (a*b)*c -> a*b*c (Mul and BvMul)
  MulSort,
  MulIdentity,        // a*1 -> a ; a*0 -> 0 (reals: sound since floats are reals here)
  MulDistributeConst, // c*(a+b) -> c*a + c*b
  MulDistributeSmall, // (a+b)*(c+d) expanded when the result has at most kDistributeLimit terms
                      // (and the operands are small: recurrences like e = e*y + 1 stay linear)
  NegToMul,           // -a -> (-1)*a ; a-b -> a + (-1)*b   (reals and bitvectors)
  DivToRecip,         // a/b -> a * Recip(b) ; Recip(c) folded for constants c != 0 ; Recip(c*x) -> (1/c)*Recip(x)
  MinMaxFlatten,      // min(min(a,b),c) -> min(a,b,c)
  MinMaxSortDedup,    // min(b,a,a) -> min(a,b)
  MinMaxConst,        // constants folded into one; min(x) -> x
  IteConstCond,       // ite(true,a,b) -> a
  IteSameArms,        // ite(c,a,a) -> a
  IteNegCond,         // ite(not c,a,b) -> ite(c,b,a) ; ite(c,true,false) -> c
  IteToMinMax,        // ite(a<b,a,b) -> min(a,b) and friends
  BoolSimplify,       // and/or flatten, sort, dedup, absorb constants, x & !x; not(not a) -> a; not of comparison flips it
  CmpCanon,           // a==a -> true ; x<x -> false ; a-b constant decides the comparison ; eq operands sorted
  BvAffine,           // shl-by-const -> mul ; ~x -> -x-1 : bitvector arithmetic in affine normal form
  BvExtMerge,         // zext(zext x) -> zext x ; sext(sext x) -> sext x ; sext(zext x) -> zext x
  BvSignedToUnsigned, // slt/sle/smin/smax/sdiv/srem/ashr/sext/signed bv_to_real on provably non-negative operands -> unsigned forms
  BvExtPush,          // zext/sext pushed through affine terms when Bounds prove no overflow
  BvTruncPush,        // trunc of add/mul/and/... pushed inside (always sound mod 2^w); trunc(ext x) cancelled
  BvBitFold,          // and/or/xor identities, x & mask with known bounds, terms divisible by 2^k dropped under a mask
  BvDivRemConst,      // (c*k + r) / c -> k + r/c with bounds, x/2^k -> x>>k, x%2^k -> x&(2^k-1), x/c -> 0 when x < c
  BvDivModRecombine,  // k*c*(x/c) + k*(x%c) -> k*x, also k*2^s*(x>>s) + k*(x & (2^s-1)) -> k*x
  LoadFold,           // Load(T, const) -> T[const]
  AbsCanon,           // abs(abs a) -> abs a ; abs(c*a) -> |c|*abs(a)
  MinMaxFloatLimit,   // real min(FLT_MAX, x...) -> min(x...) ; max(-FLT_MAX, x...) -> max(x...): every finite
                      // float lies within +-FLT_MAX (a kernel's `m = FLT_MAX; m = fminf(m, v)` reduction start)
  MulDistributeMinMax,// c*max(a,b)*y -> max(c*a, c*b)*y (likewise min) for a constant c > 0, into the first
                      // min/max factor: relu(v)/2 and max(0, v/2) are one node
  MulSumContent,      // y*(2a + 2b) -> 2*y*(a + b): a real sum among other factors whose terms share one
                      // coefficient (up to 2^14 terms) gives it to the product's constant — swish/2 as
                      // (1/2)*sigmoid(S)*S and sigmoid(S)*(S/2) are one node, and like terms stay combinable
                      // (a lone c*(a+b) is distributed instead)
  IteLeakyToMax,      // real ite(0 < t, t, c*t) -> max(t, c*t) for 0 <= c <= 1 (also 0 <= t, and t < 0 / t <= 0
                      // with the arms swapped): a leaky ReLU is one node whichever comparison spelled it
  ClampOrder,         // real max(lo, min(hi, y)) -> min(hi, max(lo, y)) for constants lo <= hi: a clamp is one node
                      // whichever bound the program applied first
  LogOfExp,           // log(exp(x)) -> x (exp maps the reals into log's domain): a logsumexp over one element
                      // is its element, as torch's max-shifted form and its decomposition compute it
  CmpIteConst,        // k ~ ite(p, c1, c2) for constants k, c1, c2 -> p, not p, true or false, decided per arm: a
                      // boolean materialized as 0/1 and compared again (where(x > t, ..) reads 0 == (t < x ? 1 : 0))
  // ---- reductions (rewrite_reduce*.cpp)
  ReduceEmpty,        // a reduction over an empty domain -> its identity (sum 0, prod 1); one point -> the body there
  ReduceInvariant,    // a body that does not read the reduction's indices: sum -> N*body, max/min -> body
  ReduceFactor,       // sum of c*f*g(k) -> c*f*sum g(k) for constants c and loop-invariant factors f
  ReduceSplitSum,     // sum of (a(k) + b(k)) -> sum a + sum b : a sum is a linear combination of sums of monomials
  ReduceFlatten,      // a reduction whose body is a reduction of the same op -> one reduction over both domains
  ReduceMerge,        // sum_{k in [a,b)} f + sum_{k in [b,c)} f -> sum_{k in [a,c)} f (max/min likewise), also when
                      // one body reads the other's at an index offset (see ReduceOrigin)
  ReduceOrigin,       // a box dim [lo, hi) -> [0, hi - lo) with k -> k + lo in the body: sum_{k in [1,n)} x[k] and
                      // sum_{k<n-1} x[k+1] are one node
  BvExtOfTrunc,       // zext/sext(trunc x) -> x when x has the wide sort and Bounds keep it below 2^w (2^(w-1) for
                      // sext): a 32-bit loop counter over a bounded BV64 iteration index is that index
  BvFieldExtPush,     // zext(x >> k), zext(x / c), zext(x % c), zext(c & x) -> the field of zext(x): the wide
                      // index sum sees the field's operand and recombines it. Off by default (Execute's ranges
                      // pair a 32-bit field with the guards on it); check turns it on where it solves a
                      // kernel's writing thread from a location (Lowering::kernel_read_symbolic)
  Count_
};
std::string_view rule_name(Rule r);
constexpr unsigned kDistributeLimit = 64;

class Context {
 public:
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // ---- tensors: ids are dense and PROCESS-WIDE (one thread-safe registry shared by
  // all Contexts), so TensorElem/Load nodes mean the same tensor in every Context.
  int32_t tensor(std::string_view name);           // get or create
  std::string_view tensor_name(int32_t id) const;  // throws std::out_of_range for unknown ids
  size_t num_tensors() const;                      // tensors registered in the process so far

  // ---- leaves
  Expr bool_const(bool b);
  Expr bv_const(Sort s, uint64_t value);           // value truncated to width
  Expr real_const(const mpq_class& q);
  Expr real_const(int64_t n);
  Expr real_const_from_double(double d);           // exact binary value; NaN/Inf -> std::invalid_argument
  Expr var(std::string_view name, Sort s, Bounds b = {});  // same name+sort+bounds -> same node
  Expr fresh_var(std::string_view prefix, Sort s);          // a new name never used before in this Context
  Expr elem(int32_t tensor, int64_t flat_index, Sort s = Sort::Real);
  Expr undef(Sort s);

  // ---- bool / compare / ite
  Expr not_(Expr a);
  Expr and_(std::span<const Expr> xs);
  Expr or_(std::span<const Expr> xs);
  Expr and_(Expr a, Expr b) { Expr xs[] = {a, b}; return and_(xs); }
  Expr or_(Expr a, Expr b) { Expr xs[] = {a, b}; return or_(xs); }
  Expr eq(Expr a, Expr b);
  Expr ult(Expr a, Expr b);
  Expr ule(Expr a, Expr b);
  Expr slt(Expr a, Expr b);
  Expr sle(Expr a, Expr b);
  Expr lt(Expr a, Expr b);  // reals
  Expr le(Expr a, Expr b);  // reals
  Expr ite(Expr c, Expr t, Expr e);

  // ---- bitvectors
  Expr bv_add(Expr a, Expr b);
  Expr bv_add(std::span<const Expr> xs);
  Expr bv_sub(Expr a, Expr b);
  Expr bv_neg(Expr a);
  Expr bv_mul(Expr a, Expr b);
  Expr bv_mulhi(Expr a, Expr b, bool is_signed);
  Expr bv_udiv(Expr a, Expr b);  // x/0 = all-ones (SMT-LIB and PTX agree)
  Expr bv_sdiv(Expr a, Expr b);
  Expr bv_urem(Expr a, Expr b);  // x%0 = x
  Expr bv_srem(Expr a, Expr b);
  Expr bv_shl(Expr a, Expr b);   // shift amounts >= width give 0 (PTX clamps; SMT-LIB agrees)
  Expr bv_lshr(Expr a, Expr b);
  Expr bv_ashr(Expr a, Expr b);
  Expr bv_and(Expr a, Expr b);
  Expr bv_or(Expr a, Expr b);
  Expr bv_xor(Expr a, Expr b);
  Expr bv_not(Expr a);
  Expr bv_min(Expr a, Expr b, bool is_signed);
  Expr bv_max(Expr a, Expr b, bool is_signed);
  Expr bv_and(std::span<const Expr> xs);
  Expr bv_or(std::span<const Expr> xs);
  Expr bv_xor(std::span<const Expr> xs);
  Expr bv_mul(std::span<const Expr> xs);
  Expr zext(Expr a, Sort to);
  Expr sext(Expr a, Sort to);
  Expr trunc(Expr a, Sort to);

  // ---- reals
  Expr add(Expr a, Expr b);
  Expr add(std::span<const Expr> xs);
  Expr sub(Expr a, Expr b);
  Expr neg(Expr a);
  Expr mul(Expr a, Expr b);
  Expr mul(std::span<const Expr> xs);
  Expr div(Expr a, Expr b);
  Expr min(Expr a, Expr b);
  Expr min(std::span<const Expr> xs);
  Expr max(Expr a, Expr b);
  Expr max(std::span<const Expr> xs);
  Expr abs(Expr a);
  Expr call(Fn f, std::span<const Expr> args);
  Expr call(Fn f, Expr a) { Expr xs[] = {a}; return call(f, xs); }
  Expr call(Fn f, Expr a, Expr b) { Expr xs[] = {a, b}; return call(f, xs); }
  Expr recip(Expr a) { return call(Fn::Recip, a); }
  Expr bv_to_real(Expr a, bool is_signed);
  Expr real_to_bv(Expr a, Sort to, bool is_signed, RoundMode rm);

  // ---- memory
  Expr load(int32_t tensor, Expr index, Sort s = Sort::Real);  // index: BV64 element index

  // ---- reductions (ir/reduce.h has the helpers over them)
  // op over the box prod_d [lo_d, hi_d) of body, where index_vars[d] (BV64 Vars) name dim d inside
  // body: they are abstracted to Bound leaves, so the result does not mention them. Real bodies only.
  Expr reduce(ReduceOp op, std::span<const Expr> index_vars, std::span<const std::pair<int64_t, int64_t>> box,
              Expr body);
  Expr bound(uint32_t de_bruijn);
  // e's free Bound leaves moved past `by` new binders (Bound(k) -> Bound(k + by)): an index of an
  // enclosing reduction used inside the body of a new one of rank `by`.
  Expr lift_bound(Expr e, uint32_t by);
  // The raw constructor over an already-abstracted body (Bound leaves): canonicalizes like reduce().
  Expr reduce_abstracted(ReduceOp op, std::span<const std::pair<int64_t, int64_t>> box, Expr body);

  // Generic constructor used by substitute/import: rebuilds `op` over new
  // children through the canonicalizing constructors. `like` supplies the payload.
  Expr rebuild(Expr like, std::span<const Expr> new_args);

  // Copy an expression built in another Context into this one (node for node;
  // hashes are identical). One memo per call; use an Importer to share it across roots.
  Expr import(Expr e);

  // Unsigned interval [lo, hi] provably containing every value of the bitvector
  // expression e (TVM const_int_bound style; memoized). Full range when unknown.
  Bounds bv_bounds(Expr e);

  // The total order used for canonical operand order: structural hash, then a
  // deterministic structural tie-break. Same result in every Context.
  int compare(Expr a, Expr b) const;

  // ---- rules
  void set_rule_enabled(Rule r, bool on);
  bool rule_enabled(Rule r) const;
  uint64_t rule_applications(Rule r) const;
  void reset_rule_stats();

  size_t num_nodes() const;   // live nodes in the unique table
  // What Limits::max_nodes counts: nodes, plus half the operands of each node wider than
  // kWideNode (limits.h) — a build that rebuilds wide sums stops as one of many nodes would.
  size_t node_units() const;
  size_t bytes_used() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend struct ContextAccess;
};

// Copies many roots from other Contexts into `to`, sharing one memo (neighbouring
// roots share most of their nodes). Foreign nodes must outlive the Importer.
class Importer {
 public:
  explicit Importer(Context& to);
  Expr operator()(Expr foreign);
 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// ---- structural helpers (all iterative, memoized over the DAG)

// Replace leaves (Var/TensorElem/Load resolved after index folding) by the
// result of `map` (nullptr = keep). Rebuilds through the canonicalizer.
// One Substituter can be reused across many roots to share its memo
// (back-projection of neighbouring locations shares most sub-expressions).
class Substituter {
 public:
  using LeafMap = std::function<Expr(Expr leaf)>;
  Substituter(Context& ctx, LeafMap map);
  Expr operator()(Expr e);
  void clear();
 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};
Expr substitute(Context& ctx, Expr e, const Substituter::LeafMap& map);

// Collect distinct leaves of a sort family (Var, TensorElem, Load, Undef) in canonical order.
std::vector<Expr> leaves(Expr e);
bool contains_op(Expr e, Op op);
bool depends_on_data(Expr e);     // contains TensorElem or Load
uint64_t dag_size(Expr e);        // exact distinct-node count

// Cut points (design "scale is the trap" #2): replace every maximal
// non-leaf sub-expression occurring in both a and b by one fresh variable.
// Sound for proving a == b; a witness for a != b must be confirmed by
// evaluating the original expressions.
struct CutResult {
  Expr a, b;
  std::vector<std::pair<Expr, Expr>> cuts;  // (fresh var, original sub-expression)
};
CutResult cut_shared(Context& ctx, Expr a, Expr b);

}  // namespace dirigo::ir
