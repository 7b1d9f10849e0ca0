// Summaries of symbolic values for reports (ir/summary.h): repeated structure named with its count,
// shared context printed once, what the two sides' differing operands have in common.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/summary.h"

using namespace dirigo::ir;

namespace {

// M[0, c, h, 0] of a (1, C, H, 1) tensor, named with its multi-index.
SummaryOptions named(int32_t M, int64_t C, int64_t H) {
  SummaryOptions o;
  o.leaf = [=](int32_t t, int64_t i) -> std::optional<LeafName> {
    if (t != M) return std::nullopt;
    return LeafName{"M", {0, i / H % C, i % H, 0}};
  };
  return o;
}

// Σ over rows h < rows of min over channels c < C of M[0, c, h, 0].
Expr sum_of_row_minima(Context& c, int32_t M, int64_t C, int64_t H, int64_t rows) {
  std::vector<Expr> terms;
  for (int64_t h = 0; h < rows; ++h) {
    std::vector<Expr> mins;
    for (int64_t ch = 0; ch < C; ++ch) mins.push_back(c.elem(M, ch * H + h));
    terms.push_back(c.min(mins));
  }
  return c.add(terms);
}

}  // namespace

TEST(Summary, WideSumOfMinimaNamesCountsAndIndexRanges) {
  Context c;
  int32_t M = c.tensor("in:M");
  Expr e = sum_of_row_minima(c, M, 16, 64, 64);
  std::string s = summarize(c, e, named(M, 16, 64));
  EXPECT_EQ(s, "Σ_{64 terms} min_{16 terms} M[0, 0..15, 0..63, 0]") << s;
}

TEST(Summary, WithoutLeafNamesFlatIndexRanges) {
  Context c;
  int32_t T = c.tensor("in:T");
  std::vector<Expr> xs;
  for (int i = 0; i < 8; ++i) xs.push_back(c.elem(T, 10 + i));
  EXPECT_EQ(summarize(c, c.add(xs)), "Σ_{8 terms} in:T[10..17]");
}

TEST(Summary, NarrowNodesPrintConcretely) {
  Context c;
  Expr x = c.var("x", Sort::Real), y = c.var("y", Sort::Real);
  // Below group_min operands a sum prints term by term: compound operands before leaves.
  std::string s = summarize(c, c.add(c.call(Fn::Exp, x), y));
  EXPECT_EQ(s, "exp(x) + y");
}

TEST(Summary, UnlikeOperandsFormSeparateGroups) {
  Context c;
  int32_t W = c.tensor("in:W"), X = c.tensor("in:X"), B = c.tensor("in:B");
  std::vector<Expr> terms;
  for (int i = 0; i < 6; ++i) terms.push_back(c.mul(c.elem(W, i), c.elem(X, i)));
  terms.push_back(c.elem(B, 0));
  std::string s = summarize(c, c.add(terms));
  // six products described once, the bias printed as itself
  EXPECT_NE(s.find("Σ_{6 terms} ("), std::string::npos) << s;
  EXPECT_NE(s.find("in:W[0..5]"), std::string::npos) << s;
  EXPECT_NE(s.find("in:X[0..5]"), std::string::npos) << s;
  EXPECT_NE(s.find(" + in:B[0]"), std::string::npos) << s;
}

TEST(Summary, PairFactorsTheSharedContextAndSaysWhichTermsAreMissing) {
  // The running example: gelu(Σ of 64 row minima) + bias against the same with 32 rows.
  Context c;
  int32_t M = c.tensor("in:M"), B = c.tensor("in:bias");
  Expr bias = c.elem(B, 0);
  Expr ref = c.add(c.call(Fn::GeluErf, sum_of_row_minima(c, M, 16, 64, 64)), bias);
  Expr cand = c.add(c.call(Fn::GeluErf, sum_of_row_minima(c, M, 16, 64, 32)), bias);
  PairSummary p = summarize_pair(c, ref, cand, named(M, 16, 64));
  EXPECT_EQ(p.shared, "gelu_erf(□) + in:bias[0]");
  EXPECT_EQ(p.ref, "Σ_{64 terms} min_{16 terms} M[0, 0..15, 0..63, 0]");
  EXPECT_EQ(p.cand, "Σ_{32 terms} min_{16 terms} M[0, 0..15, 0..31, 0]");
  EXPECT_NE(p.note.find("the candidate's 32 terms are all among the reference's 64"), std::string::npos) << p.note;
  EXPECT_NE(p.note.find("M[0, 0..15, 32..63, 0]"), std::string::npos) << p.note;
}

TEST(Summary, PairDifferingAtTheTopHasNoSharedContext) {
  Context c;
  Expr x = c.var("x", Sort::Real);
  PairSummary p = summarize_pair(c, c.call(Fn::Exp, x), c.call(Fn::Tanh, x));
  EXPECT_EQ(p.shared, "");
  EXPECT_EQ(p.ref, "exp(x)");
  EXPECT_EQ(p.cand, "tanh(x)");
  EXPECT_EQ(p.note, "");
}

TEST(Summary, PairSharingSomeTermsNamesBothRemainders) {
  Context c;
  int32_t T = c.tensor("in:T");
  std::vector<Expr> a, b;
  for (int i = 0; i < 6; ++i) a.push_back(c.elem(T, i));
  for (int i = 3; i < 10; ++i) b.push_back(c.elem(T, i));
  PairSummary p = summarize_pair(c, c.add(a), c.add(b));
  EXPECT_EQ(p.ref, "Σ_{6 terms} in:T[0..5]");
  EXPECT_EQ(p.cand, "Σ_{7 terms} in:T[3..9]");
  EXPECT_NE(p.note.find("3 terms are the same in both"), std::string::npos) << p.note;
  EXPECT_NE(p.note.find("only in the reference: Σ_{3 terms} in:T[0..2]"), std::string::npos) << p.note;
  EXPECT_NE(p.note.find("only in the candidate: Σ_{4 terms} in:T[6..9]"), std::string::npos) << p.note;
}

TEST(Summary, HugeValueStaysShortAndFast) {
  // 320 rows × 1024 channels (3·10^5 leaves, past the pattern walk's work limit): the counts still
  // print, the leaves below them as "…", instead of visiting every node at every depth.
  Context c;
  int32_t M = c.tensor("in:M");
  Expr e = sum_of_row_minima(c, M, 1024, 320, 320);
  std::string s = summarize(c, e, named(M, 1024, 320));
  EXPECT_EQ(s, "Σ_{320 terms} min_{1024 terms} …");
}
