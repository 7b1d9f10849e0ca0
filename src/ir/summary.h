// Short forms of symbolic values for reports, in the program's own terms.
//
// A value of 10^4 nodes prints in one line by naming its repeated structure with a count instead of
// listing it: an n-ary node of many like operands prints as `Σ_{64 terms} min_{16 terms} (…)`, the
// operands described once as a pattern in which tensor-element leaves show the range of each index
// (`x[0, 0..2, 0..31, 0]`). Two values print as the context they share, once, with □ where they
// differ, plus each side's differing part and how the two parts relate (which terms they share).
//
// Node kinds are described in head() and pattern() of summary.cpp; a new kind (a symbolic reduction)
// adds its case there.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace dirigo::ir {

struct LeafName {
  std::string tensor;           // "x", "conv_transpose.weight", "prefix[0].t4"
  std::vector<int64_t> index;   // logical multi-index
};

struct SummaryOptions {
  size_t max_chars = 150;  // per printed value: deeper structure becomes "…" until it fits
  size_t group_min = 4;    // an n-ary node with at least this many operands prints grouped, with counts
  // The name and multi-index of a tensor-element leaf; default (or nullopt): the tensor's registry name
  // and its flat index.
  std::function<std::optional<LeafName>(int32_t tensor, int64_t index)> leaf;
};

// One value.
std::string summarize(const Context& ctx, Expr e, const SummaryOptions& opt = {});

struct PairSummary {
  std::string shared;     // the context both values share with □ for where they differ; empty: they differ at the top
  std::string ref, cand;  // the differing parts (the whole values when `shared` is empty)
  std::string note;       // how the differing parts relate, e.g. "the candidate's 32 terms are all among the
                          // reference's 64; the other 32 are missing from it: Σ_{32 terms} …"; may be empty
};

// Two values (reference, candidate). Sub-terms equal in both are recognised by identity (the Context
// hash-conses, and sorts the operands of n-ary nodes), so a shared context may list operands in
// either side's order.
PairSummary summarize_pair(const Context& ctx, Expr ref, Expr cand, const SummaryOptions& opt = {});

}  // namespace dirigo::ir
