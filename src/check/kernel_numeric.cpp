#include "check/kernel_numeric.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "exec/deadline.h"
#include "exec/sat.h"
#include "ir/bits.h"
#include "ir/eval.h"
#include "ir/print.h"

namespace dirigo::check {

namespace {

struct KeyHash {
  size_t operator()(const KernelNumeric::Key& k) const { return std::hash<int64_t>()(k.second * 1000003 + k.first); }
};

constexpr double kUndef = std::numeric_limits<double>::quiet_NaN();

double to_number(const ir::Value& v) {
  if (v.undef) return kUndef;
  return v.sort == ir::Sort::Real ? v.real : double(v.bits);
}

ir::Value from_number(double d, ir::Sort s) {
  if (s == ir::Sort::Real) return ir::Value::of_real(d);
  ir::Value v = s == ir::Sort::Bool ? ir::Value::of_bool(d != 0) : ir::Value::of_bv(s, std::isnan(d) ? 0 : uint64_t(d));
  v.undef = std::isnan(d);
  return v;
}

int64_t signed_of(uint64_t bits, ir::Sort s) {
  unsigned w = ir::bv_width(s);
  if (w < 64 && (bits >> (w - 1) & 1)) bits |= ~ir::width_mask(ir::bv_width(s));
  return int64_t(bits);
}

}  // namespace

struct KernelNumeric::Impl {
  Lowering& low;
  std::vector<uint8_t> f32;
  size_t lanes;
  std::chrono::steady_clock::time_point deadline;
  Stats stats;
  bool force_evaluator;  // every record value by ir::Evaluator (cross-checks of the tapes)
  std::vector<smt::PointSampler> samplers;
  std::vector<uint8_t> same_point;  // lane p draws what lane p - 1 draws (before rounding)
  SharedOf shared_of;

  std::unordered_map<int32_t, LaunchInfo*> launch_of_state;  // shared-memory state tensor -> its launch
  std::unordered_set<const LaunchInfo*> registered;
  std::unordered_set<ir::Expr> checked;                      // record values found evaluable

  // The evaluation under way: its launch, thread, reader and what it found missing.
  const LaunchInfo* launch = nullptr;
  const exec::ThreadCoord* thread = nullptr;
  const Reader* read = nullptr;
  std::vector<Key>* missing = nullptr;
  std::unordered_set<Key, KeyHash> noted;
  std::vector<double> buf, zeros;

  std::vector<ir::Env> envs;
  std::vector<ir::Evaluator> evals;  // one per lane; memos cleared per (value, thread)
  uint32_t ticks = 0;

  Impl(Lowering& l, Options o)
      : low(l), f32(std::move(o.f32)), lanes(f32.size()), deadline(o.deadline), force_evaluator(!o.tape),
        same_point(lanes, 0), shared_of(std::move(o.shared_of)), buf(lanes), zeros(lanes) {
    if (o.points.size() != lanes) throw std::invalid_argument("numeric evaluation: one point per lane");
    for (size_t p = 0; p < lanes; ++p) {
      samplers.emplace_back(o.seed, o.points[p], o.bound);
      same_point[p] = p > 0 && o.points[p] == o.points[p - 1];
    }
    envs.resize(lanes);
    for (size_t p = 0; p < lanes; ++p) {
      envs[p].elem = [this, p](int32_t t, int64_t i, ir::Sort s) { return leaf(t, i, s, p); };
      envs[p].var = [this](std::string_view name, ir::Sort s) { return thread_var(name, s); };
      envs[p].tick = [this] { check_time(); };
    }
    for (size_t p = 0; p < lanes; ++p) evals.emplace_back(envs[p], f32[p] ? ir::Precision::F32 : ir::Precision::F64);
  }

  void check_time() const {
    if (std::chrono::steady_clock::now() > deadline)
      throw OutOfTime("numeric evaluation of the location ran past the budget");
  }

  ir::Value thread_var(std::string_view name, ir::Sort s) const {
    const exec::Dim3* d = name.starts_with("tid.") ? &thread->tid : name.starts_with("ctaid.") ? &thread->ctaid : nullptr;
    if (d && name.size() >= 2) {
      char axis = name.back();
      uint32_t v = axis == 'x' ? d->x : axis == 'y' ? d->y : axis == 'z' ? d->z : UINT32_MAX;
      if (v != UINT32_MAX) return ir::Value::of_bv(s, v);
    }
    throw Unsupported(fmt::format("a value still depends on {} under a concrete thread", name));
  }

  // A read of the record value: a shared cell of the launch, else an operand element (the launch
  // tensor's value before the launch); its values at every lane. Without a value yet it is noted
  // missing and reads as 0: the evaluation is then thrown away and done again once the caller has
  // the values.
  struct TensorRead {
    int32_t tensor = -1;
    bool cell = false;
    program::ValueId value = program::kNoValue;
    std::optional<SharedDraws> shared;
  };
  std::unordered_map<int32_t, TensorRead> tensor_reads;  // by ir tensor (ids are process-wide)

  // How the record reads `tensor`: a shared-memory state, or a launch tensor (its value before the
  // launch, maybe a shared input's draws). The same for every lane and sort (shared draws are real).
  const TensorRead& tensor_read(int32_t tensor) {
    auto [it, fresh] = tensor_reads.try_emplace(tensor);
    TensorRead& tr = it->second;
    if (!fresh) return tr;
    tr.tensor = tensor;
    tr.cell = launch->resolver->epoch_of(tensor) >= 0;
    if (tr.cell) return tr;
    auto op = low.operand(tensor, 0);
    if (!op) {
      tensor_reads.erase(it);
      throw Unsupported(fmt::format("numeric evaluation: kernel {} reads tensor {}, no value of {}", launch->kernel,
                                    low.launch_context().tensor_name(tensor), low.program().name));
    }
    tr.value = op->value;
    if (shared_of) tr.shared = shared_of(op->value);
    return tr;
  }

  // A read of the record value, at every lane: a shared cell of the launch, or an operand element.
  // Without a value yet it is noted missing and reads as 0: the evaluation is then thrown away and
  // done again once the caller has the values.
  const double* fetch(const TensorRead& tr, int64_t index, ir::Sort sort) {
    if ((++ticks & 4095) == 0) check_time();
    if (tr.shared && sort == ir::Sort::Real && index >= tr.shared->offset && index - tr.shared->offset < tr.shared->numel) {
      uint64_t leaf = smt::PointSampler::leaf_hash(tr.shared->key, index - tr.shared->offset);
      for (size_t p = 0; p < lanes; ++p) {  // (an fp64 and an fp32 lane of one point: one draw)
        double v = p > 0 && same_point[p] ? buf[p - 1] : samplers[p].real_of(leaf);
        buf[p] = f32[p] ? double(float(v)) : v;
      }
      return buf.data();
    }
    Key key = tr.cell ? Key{-2 - tr.tensor, index * 8 + int64_t(sort)} : Key{tr.value, index};
    const double* v = (*read)(key, buf.data());
    if (v) return v;
    if (noted.insert(key).second) missing->push_back(key);
    std::fill(zeros.begin(), zeros.end(), 0.0);
    return zeros.data();
  }

  ir::Value leaf(int32_t tensor, int64_t index, ir::Sort sort, size_t p) {
    return from_number(fetch(tensor_read(tensor), index, sort)[p], sort);
  }

  // Indices read from tensor data cannot be told before the data has values (the template path
  // rejects them as well); every other record value is evaluable.
  void check_evaluable(ir::Expr root) {
    if (checked.count(root)) return;
    std::unordered_set<ir::Expr> seen;
    std::vector<ir::Expr> stack{root};
    while (!stack.empty()) {
      ir::Expr e = stack.back();
      stack.pop_back();
      if (!e->has_data() || !seen.insert(e).second) continue;
      if (e->op == ir::Op::Load && e->arg(0)->has_data())
        throw Unsupported("a memory index depends on tensor data (" +
                          ir::to_string(low.launch_context(), e, {.max_nodes = 12}) + ")");
      for (ir::Expr c : e->args()) stack.push_back(c);
    }
    checked.insert(root);
  }

  // A record value compiled once (per root): its thread-only bitvector/Boolean sub-expressions (index
  // arithmetic, guards: most of its nodes) into one exec::BvProgram evaluated per thread on machine
  // words, the rest a slot per node (children first) evaluated for every lane at once. An ite whose
  // condition is thread-only evaluates its chosen arm only: the other arm's loads may lie outside
  // their tensors (a guarded read), and the template path never reads them (specialization folds the
  // guard). Values follow ir::Evaluator's semantics (fp32 lanes: every operation rounded).
  // A record with any other operation on data (bit operations on loaded integers, ...) is evaluated
  // by ir::Evaluator itself (`fast` false).
  struct Tape {
    enum Kind : uint8_t { Const, Frontier, Code };
    struct Ins {  // one slot: what run() and compute() need, without touching the (scattered) nodes
      ir::Op op;
      ir::Sort sort, arg0;  // arg0: the first argument's sort (Load's index, Eq, BvToReal)
      uint8_t kind;
      bool is_signed;
      uint32_t nargs = 0, arg_at = 0;
      int32_t tensor = -1;
      uint64_t aux = 0;     // TensorElem: index; Call: Fn; Frontier: root index; Const BV/Bool: bits
      double real[2] = {};  // Const Real: fp64, fp32 (rounded as ir::Evaluator rounds)
      mutable const TensorRead* read = nullptr;  // TensorElem/Load: how its tensor is read
    };
    bool fast = true;
    uint32_t root = 0;
    std::vector<Ins> ins;  // by slot
    std::vector<uint32_t> args;
    std::optional<exec::BvProgram> prog;
    std::vector<uint64_t> fvals;
  };
  std::unordered_map<ir::Expr, std::unique_ptr<Tape>> tapes;
  struct Slot {
    double r = 0;
    uint64_t b = 0;
    bool u = false;  // undefined
  };
  std::vector<Slot> vals;  // slot * lanes + lane

  static bool code_op(ir::Op op) {
    switch (op) {
      case ir::Op::TensorElem: case ir::Op::Load: case ir::Op::Undef: case ir::Op::Add: case ir::Op::Mul:
      case ir::Op::Min: case ir::Op::Max: case ir::Op::Abs: case ir::Op::Call: case ir::Op::Ite: case ir::Op::Lt:
      case ir::Op::Le: case ir::Op::Eq: case ir::Op::Not: case ir::Op::And: case ir::Op::Or: case ir::Op::BvToReal:
        return true;
      default: return false;
    }
  }

  Tape& tape(ir::Expr root) {
    auto [it, fresh] = tapes.try_emplace(root);
    if (!fresh) return *it->second;
    it->second = std::make_unique<Tape>();
    Tape& T = *it->second;
    exec::ThreadVars tv(low.launch_context(), launch->result->launch.block, launch->result->launch.grid);
    auto vars = tv.all();
    // named members, not a structured binding: lambdas below capture them (clang 14 rejects that)
    const exec::ThreadOnlySplit split = exec::split_thread_only(root, vars);
    const auto& thread_only = split.thread_only;
    const auto& post = split.post;
    std::unordered_map<ir::Expr, uint32_t> slot;
    std::vector<ir::Expr> roots;
    auto slot_of = [&](ir::Expr x) -> uint32_t {
      if (auto s = slot.find(x); s != slot.end()) return s->second;
      auto id = uint32_t(T.ins.size());
      slot.emplace(x, id);
      Tape::Ins in{x->op, x->sort, x->nargs ? x->arg(0)->sort : x->sort, Tape::Code, x->is_signed()};
      if (x->op == ir::Op::TensorElem || x->op == ir::Op::Load) in.tensor = x->tensor();
      if (x->op == ir::Op::TensorElem || x->op == ir::Op::Call) in.aux = x->u;
      if (x->is_const()) {
        in.kind = Tape::Const;
        if (x->sort == ir::Sort::Real)
          for (int f = 0; f < 2; ++f) in.real[f] = ir::Evaluator({}, f ? ir::Precision::F32 : ir::Precision::F64)(x).real;
        else
          in.aux = x->sort == ir::Sort::Bool ? uint64_t(x->bool_value()) : x->bv_value();
      } else if (thread_only.at(x)) {
        in.kind = Tape::Frontier;
        in.aux = roots.size();
        roots.push_back(x);
      } else {
        T.fast = T.fast && code_op(x->op);
      }
      T.ins.push_back(in);
      return id;
    };
    for (ir::Expr x : post) {
      if ((++ticks & 4095) == 0) check_time();  // a thread's 10^5-10^6-term loop compiles in ~1 s
      if (thread_only.at(x)) continue;
      std::vector<uint32_t> a;
      for (ir::Expr c : x->args()) a.push_back(slot_of(c));
      uint32_t id = slot_of(x);
      T.ins[id].nargs = uint32_t(a.size());
      T.ins[id].arg_at = uint32_t(T.args.size());
      T.args.insert(T.args.end(), a.begin(), a.end());
    }
    T.root = slot_of(root);
    T.prog.emplace(vars, roots);
    T.fast = T.fast && T.prog->ok();
    T.fvals.resize(roots.size());
    return T;
  }

  // The values of an element read by the record, at every lane, as the leaf's sort.
  void read_leaf(const Tape::Ins& x, int64_t index, Slot* out) {
    if (!x.read) x.read = &tensor_read(x.tensor);
    ir::Sort sort = x.sort;
    const double* v = fetch(*x.read, index, sort);
    for (size_t p = 0; p < lanes; ++p) {
      ir::Value x = from_number(v[p], sort);
      out[p] = {sort == ir::Sort::Real && f32[p] ? double(float(x.real)) : x.real, ir::is_bv(sort) ? x.bits & ir::width_mask(ir::bv_width(sort)) : x.bits, x.undef};
    }
  }

  void compute(const Tape& T, uint32_t s) {
    const Tape::Ins& x = T.ins[s];
    const uint32_t* a = T.args.data() + x.arg_at;
    Slot* out = &vals[size_t(s) * lanes];
    auto arg = [&](uint32_t i, size_t p) -> const Slot& { return vals[size_t(a[i]) * lanes + p]; };
    if (x.op == ir::Op::TensorElem) return read_leaf(x, int64_t(x.aux), out);
    if (x.op == ir::Op::Load) {  // the index is thread-only: the same in every lane (signed as BV64)
      const Slot& i = arg(0, 0);
      return read_leaf(x, x.arg0 == ir::Sort::BV64 ? int64_t(i.b) : int64_t(i.b & ir::width_mask(ir::bv_width(x.arg0))), out);
    }
    // n-ary sums, products and min/max: argument by argument over all lanes (one slot row each), in
    // the argument order ir::Evaluator uses.
    if (x.op == ir::Op::Add || x.op == ir::Op::Mul || x.op == ir::Op::Min || x.op == ir::Op::Max) {
      const Slot* first = &vals[size_t(a[0]) * lanes];
      for (size_t p = 0; p < lanes; ++p) {
        double v = first[p].r;
        out[p].r = x.op == ir::Op::Add ? (f32[p] ? double(float(0.0 + v)) : 0.0 + v)
                   : x.op == ir::Op::Mul ? (f32[p] ? double(float(1.0 * v)) : 1.0 * v)
                                         : v;
        out[p].u = first[p].u;
      }
      for (uint32_t k = 1; k < x.nargs; ++k) {
        const Slot* in = &vals[size_t(a[k]) * lanes];
        for (size_t p = 0; p < lanes; ++p) {
          double& r = out[p].r;
          double v = in[p].r;
          switch (x.op) {
            case ir::Op::Add: r = f32[p] ? double(float(r + v)) : r + v; break;
            case ir::Op::Mul: r = f32[p] ? double(float(r * v)) : r * v; break;
            case ir::Op::Min: r = v < r ? v : r; break;
            default: r = v > r ? v : r; break;
          }
          out[p].u = out[p].u || in[p].u;
        }
      }
      return;
    }
    for (size_t p = 0; p < lanes; ++p) {
      Slot r;
      bool f = f32[p];
      auto rnd = [f](double d) { return f ? double(float(d)) : d; };
      for (uint32_t k = 0; k < x.nargs; ++k) r.u = r.u || arg(k, p).u;
      switch (x.op) {
        case ir::Op::Undef: r.u = true; break;
        case ir::Op::Add: r.r = 0; for (uint32_t k = 0; k < x.nargs; ++k) r.r = rnd(r.r + arg(k, p).r); break;
        case ir::Op::Mul: r.r = 1; for (uint32_t k = 0; k < x.nargs; ++k) r.r = rnd(r.r * arg(k, p).r); break;
        case ir::Op::Min:
          r.r = arg(0, p).r;
          for (uint32_t k = 0; k < x.nargs; ++k) r.r = arg(k, p).r < r.r ? arg(k, p).r : r.r;
          break;
        case ir::Op::Max:
          r.r = arg(0, p).r;
          for (uint32_t k = 0; k < x.nargs; ++k) r.r = arg(k, p).r > r.r ? arg(k, p).r : r.r;
          break;
        case ir::Op::Abs: r.r = std::fabs(arg(0, p).r); break;
        case ir::Op::Call: r.r = rnd(ir::apply_fn(ir::Fn(x.aux), arg(0, p).r, x.nargs > 1 ? arg(1, p).r : 0)); break;
        case ir::Op::Ite: {
          const Slot& chosen = arg(arg(0, p).b ? 1 : 2, p);
          r = chosen;
          r.u = arg(0, p).u || chosen.u;
          break;
        }
        case ir::Op::Lt: r.b = arg(0, p).r < arg(1, p).r; break;
        case ir::Op::Le: r.b = arg(0, p).r <= arg(1, p).r; break;
        case ir::Op::Eq: r.b = x.arg0 == ir::Sort::Real ? arg(0, p).r == arg(1, p).r : arg(0, p).b == arg(1, p).b; break;
        case ir::Op::Not: r.b = !arg(0, p).b; break;
        case ir::Op::And: r.b = 1; for (uint32_t k = 0; k < x.nargs; ++k) r.b &= arg(k, p).b; break;
        case ir::Op::Or: r.b = 0; for (uint32_t k = 0; k < x.nargs; ++k) r.b |= arg(k, p).b; break;
        case ir::Op::BvToReal:
          r.r = rnd(x.is_signed ? double(signed_of(arg(0, p).b, x.arg0)) : double(arg(0, p).b));
          break;
        default: throw std::logic_error("numeric evaluation: no tape semantics for an operation");
      }
      out[p] = r;
    }
  }

  void run(Tape& T, const exec::ThreadCoord& t, double* out) {
    uint64_t point[6] = {t.tid.x, t.tid.y, t.tid.z, t.ctaid.x, t.ctaid.y, t.ctaid.z};
    if (!T.fvals.empty()) T.prog->eval(point, T.fvals.data());
    const size_t n = T.ins.size();
    if (vals.size() < n * lanes) vals.resize(n * lanes);
    // Slots are numbered children first (compile order). Backwards: which slots this thread needs —
    // an ite whose condition is thread-only (a frontier value, known now) needs its chosen arm only,
    // one on data both (as the template keeps both). Forwards: those, in order.
    need.assign(n, 0);
    need[T.root] = 1;
    for (size_t s = n; s-- > 0;) {
      const Tape::Ins& x = T.ins[s];
      if (!need[s] || x.kind != Tape::Code) continue;
      const uint32_t* a = T.args.data() + x.arg_at;
      if (x.op == ir::Op::Ite && T.ins[a[0]].kind != Tape::Code) {
        const Tape::Ins& c = T.ins[a[0]];
        need[a[0]] = 1;
        need[(c.kind == Tape::Frontier ? T.fvals[c.aux] : c.aux) ? a[1] : a[2]] = 1;
        continue;
      }
      for (uint32_t k = 0; k < x.nargs; ++k) need[a[k]] = 1;
    }
    for (size_t s = 0; s < n; ++s) {
      if (!need[s]) continue;
      const Tape::Ins& x = T.ins[s];
      if (x.kind == Tape::Code) {
        compute(T, uint32_t(s));
        continue;
      }
      Slot* v = &vals[s * lanes];
      for (size_t p = 0; p < lanes; ++p)
        v[p] = x.kind == Tape::Frontier      ? Slot{0, T.fvals[x.aux], false}
               : x.sort == ir::Sort::Real ? Slot{x.real[f32[p]], 0, false}
                                          : Slot{0, x.aux, false};
    }
    for (size_t p = 0; p < lanes; ++p) {
      const Slot& r = vals[size_t(T.root) * lanes + p];
      out[p] = r.u ? kUndef : T.ins[T.root].sort == ir::Sort::Real ? r.r : double(r.b);
    }
  }
  std::vector<uint8_t> need;  // by slot, for the thread being evaluated

  // The value of `root` (a record's value) for `t`, at every lane, into out.
  void eval(ir::Expr root, const exec::ThreadCoord& t, double* out) {
    check_evaluable(root);
    thread = &t;
    ++stats.writers;
    Tape& T = tape(root);
    if (T.fast && !force_evaluator) return run(T, t, out);
    for (size_t p = 0; p < lanes; ++p) {
      evals[p].clear();
      out[p] = to_number(evals[p](root));
    }
  }
  void enter(LaunchInfo& L) {
    if (!registered.insert(&L).second) return;
    for (int32_t t : L.result->smem_tensor) launch_of_state[t] = &L;
  }

  // A cell as Resolver::resolve_elem gives it: the plain store, then the atomics folded on.
  bool cell(Key key, double* out) {
    int32_t tensor = -2 - key.first;
    auto it = launch_of_state.find(tensor);
    if (it == launch_of_state.end()) throw std::logic_error("numeric evaluation: a shared cell of no launch seen");
    LaunchInfo& L = *it->second;
    launch = &L;
    auto sort = ir::Sort(key.second & 7);
    int epoch = L.resolver->epoch_of(tensor);
    std::vector<exec::Resolver::CellWrite> ws;
    try {
      L.resolver->set_deadline(deadline);
      ws = L.resolver->cell_writes(epoch, uint64_t(key.second >> 3));
    } catch (const exec::TimeLimit&) {
      throw OutOfTime("numeric evaluation of the location ran past the budget");
    }
    ++stats.cells;
    std::vector<double> x(lanes);
    std::fill(out, out + lanes, kUndef);
    size_t missing0 = missing->size();
    for (const auto& c : ws) {
      const exec::SharedWrite& sw = L.result->epoch_writes[size_t(c.epoch)][c.write];
      coerced(sw.value, c.thread, sort, x.data());
      if (c.plain) {
        std::copy(x.begin(), x.end(), out);
        continue;
      }
      for (size_t p = 0; p < lanes; ++p) out[p] = fold(sw, sort, out[p], x[p], f32[p]);
    }
    return missing->size() == missing0;
  }

  // A stored value read back as `sort`: constants of another type convert bit-exactly (nvcc's
  // zero-initialization, st.shared.u32 0 read as a float), as Resolver::coerce does.
  void coerced(ir::Expr value, const exec::ThreadCoord& t, ir::Sort sort, double* out) {
    if (value->sort == sort) return eval(value, t, out);
    double d;
    if (value->op == ir::Op::Undef) {
      d = kUndef;
    } else if (value->op == ir::Op::ConstBV && sort == ir::Sort::Real) {
      unsigned w = ir::bv_width(value->sort);
      if (w == 32) {
        auto b = uint32_t(value->bv_value());
        float f;
        std::memcpy(&f, &b, 4);
        d = f;
      } else if (w == 64) {
        uint64_t b = value->bv_value();
        std::memcpy(&d, &b, 8);
      } else {
        throw std::runtime_error("shared cell read as a float of another width");
      }
    } else if (value->op == ir::Op::ConstBV && ir::is_bv(sort)) {
      d = double(value->bv_value() & ir::width_mask(ir::bv_width(sort)));
    } else {
      throw std::runtime_error("shared cell stored with one type and read with another");
    }
    std::fill(out, out + lanes, d);
  }

  // One atomic update of a cell (add/min/max, reals rounded in an fp32 lane as ir::Evaluator rounds).
  static double fold(const exec::SharedWrite& sw, ir::Sort sort, double v, double x, bool f32) {
    if (std::isnan(v) || std::isnan(x)) return kUndef;
    if (sort == ir::Sort::Real) {
      switch (sw.op) {
        case exec::WriteOp::Add: return f32 ? double(float(v + x)) : v + x;
        case exec::WriteOp::Max: return x > v ? x : v;
        case exec::WriteOp::Min: return x < v ? x : v;
        default: break;
      }
    } else {
      uint64_t a = uint64_t(v), b = uint64_t(x), m = ir::width_mask(ir::bv_width(sort));
      bool less = sw.is_signed ? signed_of(b, sort) < signed_of(a, sort) : b < a;
      switch (sw.op) {
        case exec::WriteOp::Add: return double((a + b) & m);
        case exec::WriteOp::Max: return double(less ? a : b);
        case exec::WriteOp::Min: return double(less ? b : a);
        default: break;
      }
    }
    throw std::runtime_error("unmodeled shared atomic");
  }

  Outcome element(Key key, double* out) {
    auto kw = low.kernel_write(key.first);
    if (!kw) return Outcome::NotHere;
    LaunchInfo& L = *kw->launch;
    enter(L);
    launch = &L;
    auto [found, fresh] = L.writers[kw->tensor].try_emplace(key.second);
    if (fresh) {
      try {
        L.resolver->set_deadline(deadline);
        found->second = exec::writers_of(low.launch_context(), *L.result, kw->tensor, key.second, L.resolver.get(), false);
      } catch (const exec::TimeLimit&) {
        L.writers[kw->tensor].erase(found);
        throw OutOfTime("numeric evaluation of the location ran past the budget");
      } catch (...) {
        L.writers[kw->tensor].erase(found);
        throw;
      }
    }
    const std::vector<exec::Writer>& writers = found->second;
    if (writers.empty()) return Outcome::NotHere;
    auto op_of = [&](const exec::Writer& w) { return L.result->writes[w.write].op; };
    exec::WriteOp acc = op_of(writers[0]);
    bool all_store = true, all_acc = acc == exec::WriteOp::Add || acc == exec::WriteOp::Min || acc == exec::WriteOp::Max;
    const exec::Writer& last = writers.back();
    auto same_thread = [&](const exec::ThreadCoord& a) {
      const exec::ThreadCoord& b = last.thread;
      return a.tid.x == b.tid.x && a.tid.y == b.tid.y && a.tid.z == b.tid.z && a.ctaid.x == b.ctaid.x &&
             a.ctaid.y == b.ctaid.y && a.ctaid.z == b.ctaid.z;
    };
    for (const auto& w : writers) {
      all_store = all_store && op_of(w) == exec::WriteOp::Store && same_thread(w.thread);
      all_acc = all_acc && op_of(w) == acc;
    }
    size_t missing0 = missing->size();
    if (all_store) {
      eval(L.result->writes[last.write].value, last.thread, out);
    } else if (all_acc && kw->before != program::kNoValue) {
      // before + each writer's value, in issue order (the template's n-ary add sums them in its
      // canonical order: the same number in fp64 up to rounding)
      const double* b = (*read)({kw->before, key.second}, buf.data());
      if (!b) {
        if (noted.insert({kw->before, key.second}).second) missing->push_back({kw->before, key.second});
        return Outcome::Missing;
      }
      std::copy(b, b + lanes, out);
      std::vector<double> x(lanes);
      exec::SharedWrite as_cell;
      as_cell.op = acc;
      as_cell.is_signed = L.result->writes[writers[0].write].is_signed;
      for (const auto& w : writers) {
        eval(L.result->writes[w.write].value, w.thread, x.data());
        for (size_t p = 0; p < lanes; ++p) out[p] = fold(as_cell, kw->sort, out[p], x[p], f32[p]);
      }
    } else {
      return Outcome::NotHere;
    }
    return missing->size() == missing0 ? Outcome::Done : Outcome::Missing;
  }
};

KernelNumeric::KernelNumeric(Lowering& low, Options opt) : impl_(std::make_unique<Impl>(low, std::move(opt))) {}
KernelNumeric::~KernelNumeric() = default;

KernelNumeric::Outcome KernelNumeric::evaluate(Key key, const Reader& read, std::vector<Key>& missing, double* out) {
  Impl& im = *impl_;
  im.read = &read;
  im.missing = &missing;
  if (!im.noted.empty()) im.noted.clear();  // (clear() costs its bucket count: most calls note nothing)
  if (is_cell(key)) return im.cell(key, out) ? Outcome::Done : Outcome::Missing;
  return im.element(key, out);
}

const KernelNumeric::Stats& KernelNumeric::stats() const { return impl_->stats; }

}  // namespace dirigo::check
