// Building blocks shared by the rule families (internal to the mutate module).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "mutate/rule.h"

namespace dirigo::mutate::rules {

using Finder = std::function<void(const SourceModel&, std::vector<Site>&)>;
using TokPred = std::function<bool(const SourceModel&, int)>;

struct RuleList {
  std::vector<Rule>& out;
  std::string family;
  void add(std::string name, std::string description, Finder f, Scope scope = Scope::Device) {
    out.push_back(Rule{std::move(name), family, std::move(description), scope, std::move(f)});
  }
};

void add_arithmetic(std::vector<Rule>& out);
void add_indexing(std::vector<Rule>& out);
void add_semantic(std::vector<Rule>& out);
void add_boundary(std::vector<Rule>& out);
void add_synchronization(std::vector<Rule>& out);
void add_precision(std::vector<Rule>& out);

// --- edits
std::string str(const SourceModel& m, int first, int last);  // text of tokens [first, last)
Edit replace_edit(const SourceModel& m, int first, int last, std::string text);
Site make_site(const SourceModel& m, int first, std::vector<Edit> edits);
Site replace_tokens(const SourceModel& m, int first, int last, std::string text);
inline Site replace_token(const SourceModel& m, int i, std::string text) { return replace_tokens(m, i, i + 1, std::move(text)); }
// Wraps [first, last) in parentheses unless it is a single primary/postfix operand.
std::string paren(const SourceModel& m, int first, int last);
bool simple_operand(const SourceModel& m, int first, int last);
// `e` + " " + delta (e.g. "+ 1"), parenthesizing e when it has an operator binding looser than +/-.
std::string with_delta(const SourceModel& m, int first, int last, const std::string& delta);

// --- token classes
bool is_number(const SourceModel& m, int i);
bool is_int_literal(const SourceModel& m, int i);    // decimal integer literal (no hex, no float)
bool is_float_literal(const SourceModel& m, int i);  // has '.', an exponent or an f suffix
double literal_value(const SourceModel& m, int i);
bool is_full_mask(const SourceModel& m, int first, int last);  // 0xffffffff (any case/suffix) or FULL_MASK
bool is_assign_op(std::string_view s);

// --- contexts
// Token is an operator in device code with an operand on its left (so not unary/declarator).
bool device_binary(const SourceModel& m, int i);
// For each token: part of the condition of a `c ? a : b` in device code.
std::vector<bool> ternary_conditions(const SourceModel& m);
// The range [first, last) of the right operand of a comparison at `op`, ending before
// && || ? ; , or an unmatched closer.
TokRange comparison_rhs(const SourceModel& m, int op);
// Is token i (in device code) the array of a subscript used as a store target `a[...] =`?
bool is_store_target(const SourceModel& m, int open_bracket);

// --- generic finders
// Every device token `from` (optionally binary-only) satisfying pred becomes `to`.
Finder token_swap(std::string from, std::string to, bool binary_only, TokPred pred = nullptr);
// Calls of `from(` in device code renamed to `to`.
Finder call_rename(std::string from, std::string to);
// `obj.field` (e.g. threadIdx.x) in device code: replaces the field with `to_field`.
Finder member_swap(std::string obj, std::string field, std::string to_field);
// Replaces the whole call `name(args)` by to(args) where `to` builds text from arg texts.
Finder call_rewrite(std::string name, std::function<std::string(const std::vector<std::string>&)> to,
                    size_t min_args = 1, size_t max_args = 16, bool fp16 = false, bool bf16 = false);
// Removes an expression-statement call `name(...);`, keeping the `;`.
Finder call_remove(std::string name);

// --- rule tables
// One rule per comparison flip, named as in "lt2le" (< becomes <=; lt le gt ge): the rule is
// prefix + flip, described as lead + "< becomes <=" + tail, its sites from make("<", "<=").
void add_cmp_flips(RuleList& r, const std::string& prefix, const std::string& lead, const std::string& tail,
                   std::initializer_list<const char*> flips,
                   const std::function<Finder(std::string, std::string)>& make);
// One rule per (from, to) call rename: "from2to", described as "from becomes to".
void add_call_renames(RuleList& r, std::initializer_list<std::pair<const char*, const char*>> renames);

}  // namespace dirigo::mutate::rules
