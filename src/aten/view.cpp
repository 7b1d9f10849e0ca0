// Views, layout and copies. A view op's element is an element of its input at
// an index map computed here (the tracer's strides describe the input view
// itself). Copies convert dtypes: floats are all reals, float -> int rounds
// toward zero, int -> float is exact, anything -> bool is "nonzero".
#include <algorithm>

#include "aten/internal.h"

namespace dirigo::aten::detail {
namespace {

// Input element in the output dtype.
Expr copy_of(const Env& e, const TensorRef& in, const Index& i) {
  return e.convert(e.at(in, i), in.dtype, e.out_dtype());
}

// Row-major reinterpretation: reshape and friends.
Expr reshaped(const Env& e, const TensorRef& in) {
  int64_t flat = ravel(e.idx, e.output().shape);
  if (flat >= in.numel()) e.malformed("reshape to more elements than the input has");
  return copy_of(e, in, unravel(flat, in.shape));
}

Expr slice_along(const Env& e, const TensorRef& in, int64_t dim, int64_t start, int64_t step) {
  e.require_rank(in.rank());
  Index i = e.idx;
  i[dim] = start + e.idx[dim] * step;
  return copy_of(e, in, i);
}

// Split-like ops: output k is the slice [offsets[k], offsets[k] + sizes[k]) along dim.
Expr split_part(const Env& e, const TensorRef& in, int64_t dim, const std::vector<int64_t>& sizes) {
  int64_t off = 0;
  for (int k = 0; k < e.out; ++k) off += sizes.at(k);
  return slice_along(e, in, dim, off, 1);
}

// The rank of a tensor whose dims a handler indexes (a 0-d tensor has none).
int64_t nonscalar(const Env& e, const TensorRef& t) {
  e.require(t.rank() >= 1, "operation needs a tensor with at least one dim");
  return static_cast<int64_t>(t.rank());
}

std::vector<int64_t> equal_splits(int64_t len, int64_t size) {
  if (size <= 0) throw std::invalid_argument("split size must be positive");
  std::vector<int64_t> s;
  for (int64_t o = 0; o < len; o += size) s.push_back(std::min(size, len - o));
  if (s.empty()) s.push_back(0);
  return s;
}

}  // namespace

// Element of `t` whose index in dims[k] is the runtime integer value positions[k]:
// a Load with a symbolic flat index.
Expr gather_element(const Env& e, const TensorRef& t, Index i, std::span<const int64_t> dims,
                    std::span<const Expr> positions) {
  auto& cx = e.cx;
  for (auto d : dims) i[d] = 0;
  std::vector<Expr> terms{cx.bv_const(ir::Sort::BV64, static_cast<uint64_t>(t.flat_index(i)))};
  for (size_t k = 0; k < dims.size(); ++k) {
    Expr pos = positions[k];
    if (pos->sort != ir::Sort::BV64) pos = cx.sext(pos, ir::Sort::BV64);
    terms.push_back(cx.bv_mul(cx.bv_const(ir::Sort::BV64, static_cast<uint64_t>(t.stride(dims[k]))), pos));
  }
  return cx.load(t.tensor_id, cx.bv_add(terms), elem_sort(t.dtype));
}

Expr gather_element(const Env& e, const TensorRef& t, Index i, int64_t dim, Expr pos) {
  int64_t dims[] = {dim};
  Expr ps[] = {pos};
  return gather_element(e, t, std::move(i), dims, ps);
}

namespace {

Expr dynamic_at(const Env& e, const TensorRef& t, Index i, int64_t dim, Expr pos) {
  return gather_element(e, t, std::move(i), dim, pos);
}

// Advanced indexing x[i0, i1, ...] with integer index tensors (None = the whole dim).
// Negative indices count from the end. Boolean masks have data-dependent shapes: unsupported.
Expr index_tensor(const Env& e) {
  auto& cx = e.cx;
  const TensorRef& in = e.tensor("self");
  const Arg* list = e.arg("indices");
  if (!list || list->kind != Arg::Kind::List) e.malformed("argument 'indices' must be a list");
  std::vector<int64_t> dims;
  std::vector<const TensorRef*> idx_tensors;
  for (size_t d = 0; d < list->list.size(); ++d) {
    const Arg& a = list->list[d];
    if (a.kind == Arg::Kind::None) continue;
    if (a.kind != Arg::Kind::Tensor) e.malformed("indices must be tensors or None");
    if (a.tensor.dtype == DType::Bool || a.tensor.dtype == DType::UInt8) e.unsupported("boolean mask indexing");
    dims.push_back(static_cast<int64_t>(d));
    idx_tensors.push_back(&a.tensor);
  }
  if (dims.empty()) return copy_of(e, in, e.idx);
  e.require(list->list.size() <= in.rank(), "more indices than dims");
  size_t brank = 0;
  for (auto* t : idx_tensors) brank = std::max(brank, t->rank());
  bool adjacent = dims.back() - dims.front() + 1 == static_cast<int64_t>(dims.size());
  // output = [dims before] + broadcast index dims + [dims after] when adjacent, else broadcast dims first
  size_t bstart = adjacent ? static_cast<size_t>(dims.front()) : 0;
  e.require(bstart + brank <= e.idx.size() && e.idx.size() + dims.size() == in.rank() + brank,
            "index output rank does not match the indices");
  Index bidx(e.idx.begin() + bstart, e.idx.begin() + bstart + brank);
  Index rest;
  for (size_t k = 0; k < e.idx.size(); ++k)
    if (k < bstart || k >= bstart + brank) rest.push_back(e.idx[k]);
  Index base(in.rank(), 0);
  size_t q = 0;
  for (size_t d = 0; d < in.rank(); ++d)
    if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end()) base[d] = rest.at(q++);
  std::vector<Expr> pos;
  for (size_t k = 0; k < dims.size(); ++k) {
    Expr p = e.at(*idx_tensors[k], broadcast_index(*idx_tensors[k], bidx));
    if (p->sort != ir::Sort::BV64) p = cx.sext(p, ir::Sort::BV64);
    Expr size = cx.bv_const(ir::Sort::BV64, static_cast<uint64_t>(in.shape[dims[k]]));
    pos.push_back(cx.ite(cx.slt(p, cx.bv_const(ir::Sort::BV64, 0)), cx.bv_add(p, size), p));
  }
  return e.convert(gather_element(e, in, base, dims, pos), in.dtype, e.out_dtype());
}

}  // namespace

void register_view(Registry& r) {
  auto reshape = [](Env& e) { return reshaped(e, e.tensor("self")); };
  // The output shape (recorded) says everything a reshape needs; the names follow each schema.
  for (auto [k, params] : {std::pair{"view", "self size"}, {"reshape", "self shape"}, {"_unsafe_view", "self size"},
                           {"_reshape_alias", "self size stride"}, {"view_as", "self other"},
                           {"reshape_as", "self other"}, {"flatten.using_ints", "self start_dim end_dim"},
                           {"unflatten.int", "self dim sizes"}, {"squeeze", "self"}, {"squeeze.dim", "self dim"},
                           {"squeeze.dims", "self dim"}, {"unsqueeze", "self dim"}, {"_reshape_copy", "self size"},
                           {"view_copy", "self size"}, {"squeeze_copy.dim", "self dim"}, {"unsqueeze_copy", "self dim"}})
    r.add(k, params, reshape);
  auto identity = [](Env& e) {
    const TensorRef& in = e.tensor(e.def.params[0]);
    return copy_of(e, in, broadcast_index(in, e.idx));
  };
  for (const char* k : {"alias", "detach", "clone", "contiguous", "lift_fresh", "lift_fresh_copy", "_to_copy",
                        "to.dtype", "to.device", "to.dtype_layout", "to.other", "type_as", "positive", "_copy_from",
                        "detach_copy", "alias_copy", "resolve_conj", "resolve_neg", "expand", "expand_as",
                        "expand_copy", "broadcast_to", "dropout", "native_dropout", "feature_dropout",
                        "alpha_dropout", "feature_alpha_dropout"}) {
    std::string key = k;
    bool is_dropout = key.find("dropout") != std::string::npos;
    std::string params = is_dropout ? "input p train"
                         : key == "expand_as" ? "self other"
                         : key.starts_with("expand") || key == "broadcast_to" ? "self size" : "self";
    r.add(key, params, [identity, is_dropout, key](Env& e) -> Expr {
      if (is_dropout) {
        // identity when nothing is dropped; otherwise random
        bool train = e.given("train") ? e.flag("train") : true;
        if (train && e.real("p") > 0) e.unsupported("nondeterministic: dropout with p>0 in training mode");
        if (key == "native_dropout" && e.out == 1) return e.cx.bool_const(true);  // the keep-mask
      }
      return identity(e);
    });
  }
  for (const char* k : {"copy", "copy_"})
    r.add(k, "self src non_blocking", [](Env& e) {
      const TensorRef& src = e.tensor("src");
      return copy_of(e, src, broadcast_index(src, e.idx));
    });
  r.add("as_strided", "self size stride storage_offset", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    TensorRef v = in;
    v.shape = e.ints("size");
    v.strides = e.ints("stride");
    if (e.given("storage_offset")) v.offset = e.integer("storage_offset");
    return copy_of(e, v, e.idx);
  });
  r.add("permute", "self dims", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    auto dims = e.ints("dims");
    if (dims.size() != in.rank()) e.malformed("permute needs one entry per dim");
    e.require_rank(in.rank());
    Index i(in.rank());
    for (size_t k = 0; k < dims.size(); ++k) i[wrap_dim(dims[k], in.rank())] = e.idx[k];
    return copy_of(e, in, i);
  });
  for (auto [k, params] : {std::pair{"transpose.int", "self dim0 dim1"}, {"swapaxes", "self axis0 axis1"},
                           {"swapdims", "self dim0 dim1"}})
    r.add(k, params, [](Env& e) {
      const TensorRef& in = e.tensor("self");
      int64_t a = wrap_dim(e.integer(e.def.params[1]), in.rank()), b = wrap_dim(e.integer(e.def.params[2]), in.rank());
      e.require_rank(in.rank());
      if (in.rank() == 0) return copy_of(e, in, e.idx);
      Index i = e.idx;
      std::swap(i[a], i[b]);
      return copy_of(e, in, i);
    });
  for (const char* k : {"t", "numpy_T"})
    r.add(k, "self", [](Env& e) {
      const TensorRef& in = e.tensor("self");
      Index i = e.idx;
      std::reverse(i.begin(), i.end());
      return copy_of(e, in, i);
    });
  r.add("slice.Tensor", "self dim start end step", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    int64_t dim = wrap_dim(e.integer("dim", 0), nonscalar(e, in));
    int64_t start = e.integer("start", 0), len = in.shape[dim];
    if (start < 0) start += len;
    start = std::clamp<int64_t>(start, 0, len);
    return slice_along(e, in, dim, start, e.integer("step", 1));
  });
  r.add("narrow", "self dim start length", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    int64_t dim = wrap_dim(e.integer("dim"), nonscalar(e, in));
    int64_t start = e.integer("start");
    if (start < 0) start += in.shape[dim];
    return slice_along(e, in, dim, start, 1);
  });
  r.add("select.int", "self dim index", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    int64_t dim = wrap_dim(e.integer("dim"), nonscalar(e, in));
    int64_t index = e.integer("index");
    if (index < 0) index += in.shape[dim];
    e.require_rank(in.rank() - 1);
    Index i = e.idx;
    i.insert(i.begin() + dim, index);
    return copy_of(e, in, i);
  });
  r.add("unbind.int", "self dim", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    int64_t dim = wrap_dim(e.integer("dim", 0), nonscalar(e, in));
    e.require_rank(in.rank() - 1);
    Index i = e.idx;
    i.insert(i.begin() + dim, e.out);
    return copy_of(e, in, i);
  });
  r.add("index.Tensor", "self indices", index_tensor);
  r.add("unfold", "self dimension size step", [](Env& e) {
    // windows along `dimension`; the window offset is the new last dim
    const TensorRef& in = e.tensor("self");
    int64_t d = wrap_dim(e.integer("dimension"), in.rank());
    e.require_rank(in.rank() + 1);
    Index i(e.idx.begin(), e.idx.end() - 1);
    if (in.rank() == 0) return copy_of(e, in, Index{});
    i[d] = i[d] * e.integer("step") + e.idx.back();
    return copy_of(e, in, i);
  });
  for (const char* k : {"split.Tensor", "unsafe_split.Tensor"})
    r.add(k, "self split_size dim", [](Env& e) {
      const TensorRef& in = e.tensor("self");
      int64_t dim = wrap_dim(e.integer("dim", 0), nonscalar(e, in));
      return split_part(e, in, dim, equal_splits(in.shape[dim], e.integer("split_size")));
    });
  for (const char* k : {"split_with_sizes", "unsafe_split_with_sizes"})
    r.add(k, "self split_sizes dim", [](Env& e) {
      const TensorRef& in = e.tensor("self");
      return split_part(e, in, wrap_dim(e.integer("dim", 0), nonscalar(e, in)), e.ints("split_sizes"));
    });
  r.add("chunk", "self chunks dim", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    int64_t dim = wrap_dim(e.integer("dim", 0), nonscalar(e, in));
    int64_t chunks = e.integer("chunks"), len = in.shape[dim];
    e.require(chunks > 0, "chunks must be positive");
    return split_part(e, in, dim, equal_splits(len, (len + chunks - 1) / chunks));
  });
  r.add("cat", "tensors dim", [](Env& e) {
    auto ts = e.tensors("tensors");
    e.require(e.output().rank() >= 1, "cat of 0-d tensors");
    int64_t dim = wrap_dim(e.integer("dim", 0), e.output().rank());
    int64_t pos = e.idx[dim];
    for (const auto& t : ts) {
      if (t.rank() == 1 && t.shape[0] == 0) continue;  // legacy: empty 1-D tensors are skipped
      if (pos < t.shape[dim]) {
        Index i = e.idx;
        i[dim] = pos;
        return copy_of(e, t, i);
      }
      pos -= t.shape[dim];
    }
    e.malformed("cat location beyond the inputs");
  });
  r.add("stack", "tensors dim", [](Env& e) {
    auto ts = e.tensors("tensors");
    e.require(e.output().rank() >= 1, "stack output must have a dim");
    int64_t dim = wrap_dim(e.integer("dim", 0), e.output().rank());
    Index i = e.idx;
    int64_t which = i[dim];
    i.erase(i.begin() + dim);
    return copy_of(e, ts.at(which), i);
  });
  for (const char* k : {"constant_pad_nd", "pad"})
    r.add(k, std::string_view(k) == "pad" ? "self pad mode value" : "self pad value", [](Env& e) -> Expr {
      if (e.def.key == "pad" && e.str("mode", "constant") != "constant") e.unsupported("pad mode '" + e.str("mode") + "'");
      const TensorRef& in = e.tensor("self");
      auto pad = e.ints("pad");  // pairs (before, after) from the last dim backwards; negative crops
      e.require_rank(in.rank());
      e.require(pad.size() % 2 == 0 && pad.size() / 2 <= in.rank(), "pad must have an even length <= 2 x rank");
      Index i = e.idx;
      for (size_t p = 0; p * 2 < pad.size(); ++p) {
        size_t d = in.rank() - 1 - p;
        i[d] -= pad[2 * p];
        if (i[d] < 0 || i[d] >= in.shape[d]) return e.num(e.real("value", 0.0));
      }
      return copy_of(e, in, i);
    });
  for (bool lower : {true, false})
    r.add(lower ? "tril" : "triu", "self diagonal", [lower](Env& e) -> Expr {
      const TensorRef& in = e.tensor("self");
      int64_t diag = e.integer("diagonal", 0);
      e.require(e.idx.size() >= 2, "tril/triu need a matrix");
      int64_t row = e.idx[e.idx.size() - 2], col = e.idx.back();
      bool keep = lower ? col - row <= diag : col - row >= diag;
      if (!keep) return is_floating(e.out_dtype()) ? e.cx.real_const(0) : e.cx.bv_const(elem_sort(e.out_dtype()), 0);
      return copy_of(e, in, e.idx);
    });
  r.add("diag", "self diagonal", [](Env& e) -> Expr {
    const TensorRef& in = e.tensor("self");
    int64_t off = e.integer("diagonal", 0);
    e.require((in.rank() == 1 && e.idx.size() == 2) || (in.rank() == 2 && e.idx.size() == 1), "diag of a vector or a matrix");
    if (in.rank() == 1) {
      int64_t row = e.idx[0], col = e.idx[1];
      if (col - row != off) return e.cx.real_const(0);
      return copy_of(e, in, Index{off >= 0 ? row : col});
    }
    int64_t k = e.idx[0];
    return copy_of(e, in, off >= 0 ? Index{k, k + off} : Index{k - off, k});
  });
  r.add("diag_embed", "self offset dim1 dim2", [](Env& e) -> Expr {
    const TensorRef& in = e.tensor("self");
    int64_t rank = static_cast<int64_t>(e.output().rank());
    int64_t off = e.integer("offset", 0);
    e.require(rank >= 2 && in.rank() + 1 == static_cast<size_t>(rank), "diag_embed: output rank = input rank + 1 >= 2");
    int64_t d1 = wrap_dim(e.integer("dim1", -2), rank), d2 = wrap_dim(e.integer("dim2", -1), rank);
    e.require(d1 != d2, "diag_embed: dim1 == dim2");
    int64_t a = e.idx[d1], b = e.idx[d2];
    if (b - a != off) return e.cx.real_const(0);
    Index i;
    for (int64_t d = 0; d < rank; ++d)
      if (d != d1 && d != d2) i.push_back(e.idx[d]);
    i.push_back(off >= 0 ? a : b);
    return copy_of(e, in, i);
  });
  r.add("diagonal", "self offset dim1 dim2", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    int64_t rank = static_cast<int64_t>(in.rank());
    int64_t off = e.integer("offset", 0);
    int64_t d1 = wrap_dim(e.integer("dim1", 0), rank), d2 = wrap_dim(e.integer("dim2", 1), rank);
    e.require(d1 != d2 && e.idx.size() + 1 == in.rank(), "diagonal: output rank must be input rank - 1");
    int64_t k = e.idx.back();
    Index i(rank);
    size_t q = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (d != d1 && d != d2) i[d] = e.idx[q++];
    i[d1] = off >= 0 ? k : k - off;
    i[d2] = off >= 0 ? k + off : k;
    return copy_of(e, in, i);
  });
  r.add("repeat", "self repeats", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    e.require(e.idx.size() >= in.rank(), "repeat output has lower rank than its input");
    size_t lead = e.idx.size() - in.rank();
    Index i(in.rank());
    for (size_t d = 0; d < in.rank(); ++d) {
      e.require(in.shape[d] > 0, "repeat of an empty tensor");
      i[d] = e.idx[lead + d] % in.shape[d];
    }
    return copy_of(e, in, i);
  });
  r.add("flip", "self dims", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    e.require_rank(in.rank());
    Index i = e.idx;
    for (auto d : e.ints("dims")) {
      int64_t w = wrap_dim(d, nonscalar(e, in));
      i[w] = in.shape[w] - 1 - i[w];
    }
    return copy_of(e, in, i);
  });
  r.add("roll", "self shifts dims", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    auto shifts = e.ints("shifts");
    e.require_rank(in.rank());
    auto dims = e.given("dims") ? e.ints("dims") : std::vector<int64_t>{};
    if (dims.empty()) {  // roll of the flattened tensor
      int64_t n = in.numel(), f = ravel(e.idx, in.shape);
      e.require(n > 0 && !shifts.empty(), "roll of an empty tensor");
      return copy_of(e, in, unravel(((f - shifts.at(0)) % n + n) % n, in.shape));
    }
    Index i = e.idx;
    for (size_t k = 0; k < dims.size(); ++k) {
      int64_t d = wrap_dim(dims[k], nonscalar(e, in)), n = in.shape[d];
      e.require(n > 0, "roll of an empty dim");
      i[d] = ((i[d] - shifts.at(k)) % n + n) % n;
    }
    return copy_of(e, in, i);
  });
  // data-dependent indexing: the element position is read from an integer tensor
  r.add("index_select", "self dim index", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    const TensorRef& index = e.tensor("index");
    int64_t dim = wrap_dim(e.integer("dim"), nonscalar(e, in));
    e.require_rank(in.rank());
    Expr pos = e.at(index, index.rank() == 0 ? Index{} : Index{e.idx[dim]});
    return e.convert(dynamic_at(e, in, e.idx, dim, pos), in.dtype, e.out_dtype());
  });
  r.add("gather", "self dim index sparse_grad", [](Env& e) {
    const TensorRef& in = e.tensor("self");
    int64_t dim = wrap_dim(e.integer("dim"), nonscalar(e, in));
    e.require_rank(in.rank());
    Expr pos = e.at(e.tensor("index"), e.idx);
    return e.convert(dynamic_at(e, in, e.idx, dim, pos), in.dtype, e.out_dtype());
  });
  r.add("embedding", "weight indices padding_idx scale_grad_by_freq sparse", [](Env& e) {
    const TensorRef& w = e.tensor("weight");
    const TensorRef& ind = e.tensor("indices");
    e.require(w.rank() == 2 && e.idx.size() == ind.rank() + 1, "embedding: weight must be 2-D, output rank = indices rank + 1");
    Index ii(e.idx.begin(), e.idx.end() - 1);
    return dynamic_at(e, w, Index{0, e.idx.back()}, 0, e.at(ind, ii));
  });
}

}  // namespace dirigo::aten::detail
