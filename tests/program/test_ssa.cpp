#include <gtest/gtest.h>

#include "builder.h"
#include "program/ssa.h"

using namespace dirigo;
using namespace dirigo::program;
using namespace dirigo::program::testing;

namespace {
SsaProgram ssa_of(const ProgramBuilder& p) {
  bundle::Bundle b = make_bundle({&p});
  return to_ssa(b, b.programs[0]);
}
int version_of(const SsaProgram& p, ValueId v) { return p.value(v).version; }
int storage_of(const SsaProgram& p, ValueId v) { return p.value(v).storage; }
}  // namespace

TEST(Ssa, InPlaceChainThenView) {
  // x.add_(1); v = x.view(16); y = v * 2; x.mul_(3); z = v + 1
  ProgramBuilder p("ref", "reference");
  auto x = p.tensor({4, 4});
  auto v = p.view(x, 0, {16}, {1});
  auto y = p.tensor({16});
  auto z = p.tensor({16});
  p.input("x", x);
  p.aten("aten::add_", {T(x), I(1)}, {x}, {x});
  p.aten("aten::view", {T(x), Ints({16})}, {v});
  p.aten("aten::mul", {T(v), I(2)}, {y});
  p.aten("aten::mul_", {T(x), I(3)}, {x}, {x});
  p.aten("aten::add", {T(v), I(1)}, {z});
  p.output("y", y);
  p.output("z", z);
  SsaProgram s = ssa_of(p);
  ASSERT_EQ(s.ops.size(), 5u);
  const ValueId x0 = s.inputs[0].view.value;
  EXPECT_EQ(version_of(s, x0), 0);

  // add_ reads x@v0 and makes x@v1.
  ASSERT_EQ(s.ops[0].writes.size(), 1u);
  EXPECT_EQ(s.ops[0].reads[0].view.value, x0);
  EXPECT_EQ(s.ops[0].writes[0].before, x0);
  const ValueId x1 = s.ops[0].writes[0].after;
  EXPECT_EQ(version_of(s, x1), 1);
  EXPECT_EQ(s.value(x1).producer, 0);
  EXPECT_FALSE(s.ops[0].writes[0].potential);
  EXPECT_EQ(s.ops[0].results[0].value, x1);  // add_ returns self, after the write

  // view writes nothing; its result is a view of x@v1 with its own geometry.
  EXPECT_TRUE(s.ops[1].writes.empty());
  EXPECT_EQ(s.ops[1].results[0].value, x1);
  EXPECT_EQ(s.ops[1].results[0].shape, (std::vector<int64_t>{16}));

  // mul reads the view at v1 and writes a fresh storage.
  EXPECT_EQ(s.ops[2].reads[0].view.value, x1);
  EXPECT_EQ(s.ops[2].reads[0].view.tensor, v);
  ASSERT_EQ(s.ops[2].writes.size(), 1u);
  EXPECT_TRUE(s.ops[2].writes[0].fresh);

  // After x.mul_, a read through the old view sees x@v2.
  const ValueId x2 = s.ops[3].writes[0].after;
  EXPECT_EQ(version_of(s, x2), 2);
  EXPECT_EQ(s.ops[4].reads[0].view.value, x2);
  EXPECT_EQ(storage_of(s, x2), storage_of(s, x0));

  EXPECT_EQ(s.mutated_inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(s.final_value[size_t(storage_of(s, x0))], x2);
  EXPECT_TRUE(s.external_reads.empty());
}

TEST(Ssa, WriteThroughAViewVersionsTheWholeStorage) {
  // x[1].zero_() through a row view: a new version of x's storage; the region is the row.
  ProgramBuilder p("ref", "reference");
  auto x = p.tensor({4, 4});
  auto row = p.view(x, 4, {4}, {1});
  auto y = p.tensor({4, 4});
  p.input("x", x);
  p.aten("aten::select", {T(x), I(0), I(1)}, {row});
  p.aten("aten::zero_", {T(row)}, {row}, {row});
  p.aten("aten::relu", {T(x)}, {y});
  p.output("y", y);
  SsaProgram s = ssa_of(p);
  const auto& w = s.ops[1].writes.at(0);
  EXPECT_EQ(w.regions.at(0).tensor, row);
  EXPECT_EQ(w.regions[0].offset, 4);
  EXPECT_EQ(s.ops[2].reads[0].view.value, w.after);  // relu(x) sees the zeroed row
  EXPECT_EQ(s.ops[2].reads[0].view.tensor, x);
}

TEST(Ssa, LaunchWritesOnlyNonConstPointers) {
  ProgramBuilder p("new", "candidate");
  auto x = p.tensor({4, 256});
  auto out = p.tensor({4, 256});
  p.input("x", x);
  p.aten("aten::empty_like", {T(x)}, {out});
  p.launch("_Z9fused_minPKfPfii", {P(x), P(out), I(4, "s32"), I(256, "s32")});
  p.output("out", out);
  SsaProgram s = ssa_of(p);
  const SsaOp& l = s.ops[1];
  ASSERT_EQ(l.reads.size(), 2u);
  EXPECT_FALSE(l.reads[0].writable);
  EXPECT_TRUE(l.reads[1].writable);
  ASSERT_EQ(l.writes.size(), 1u);
  EXPECT_EQ(l.writes[0].regions[0].tensor, out);
  EXPECT_TRUE(l.writes[0].potential);
  EXPECT_EQ(l.writes[0].before, s.ops[0].writes[0].after);  // written by empty_like first
  EXPECT_EQ(s.outputs[0].view.value, l.writes[0].after);
  EXPECT_TRUE(s.mutated_inputs.empty());
}

TEST(Ssa, ExternCLaunchWritesEveryPointerConservatively) {
  ProgramBuilder p("new", "candidate");
  auto x = p.tensor({8});
  auto out = p.tensor({8});
  p.input("x", x);
  p.launch("fused_min", {P(x), P(out), I(8, "s32")});
  p.output("out", out);
  SsaProgram s = ssa_of(p);
  ASSERT_EQ(s.ops[0].writes.size(), 2u);
  EXPECT_TRUE(s.ops[0].reads[0].writable);
  EXPECT_EQ(s.mutated_inputs, (std::vector<std::string>{"x"}));  // the kernel may write its input
  // `out` was never written before the launch: reading it is data from outside the trace.
  ASSERT_EQ(s.external_reads.size(), 1u);
  EXPECT_EQ(s.external_reads[0].tensor, out);
  EXPECT_EQ(s.external_reads[0].path, "args[1]");
}

TEST(Ssa, SameStorageTwiceIsOneNewVersion) {
  ProgramBuilder p("new", "candidate");
  auto x = p.tensor({8});
  auto lo = p.view(x, 0, {4}, {1});
  auto hi = p.view(x, 4, {4}, {1});
  p.input("x", x);
  p.launch("_Z1kPfS_", {P(lo), P(hi)});  // k(float*, float*)
  p.output("x", x);
  SsaProgram s = ssa_of(p);
  ASSERT_EQ(s.ops[0].writes.size(), 1u);
  EXPECT_EQ(s.ops[0].writes[0].regions.size(), 2u);
  EXPECT_EQ(version_of(s, s.outputs[0].view.value), 1);
}

TEST(Ssa, CopyAndLibraryCallsWrite) {
  ProgramBuilder p("new", "candidate");
  auto a = p.tensor({4, 4});
  auto c = p.tensor({4, 4});
  auto d = p.tensor({4, 4});
  p.input("a", a);
  p.aten("aten::zeros_like", {T(a)}, {c});
  p.library("cublasSgemm_v2", J{{"A", P(a)}, {"B", P(a)}, {"C", P(c)}, {"m", 4}}, {c});
  p.copy(d, c, 64);
  p.output("d", d);
  SsaProgram s = ssa_of(p);
  const SsaOp& gemm = s.ops[1];
  ASSERT_EQ(gemm.reads.size(), 3u);
  EXPECT_EQ(gemm.reads[2].path, "args.C");
  ASSERT_EQ(gemm.writes.size(), 1u);
  EXPECT_EQ(version_of(s, gemm.writes[0].after), 2);
  const SsaOp& cp = s.ops[2];
  EXPECT_EQ(cp.reads[0].path, "src");
  EXPECT_EQ(cp.reads[0].view.value, gemm.writes[0].after);
  EXPECT_EQ(s.outputs[0].view.value, cp.writes[0].after);
  EXPECT_FALSE(cp.writes[0].fresh);  // only aten outputs are fresh allocations
}

TEST(Ssa, ReadsInsideListsAndKwargs) {
  ProgramBuilder p("ref", "reference");
  auto a = p.tensor({2});
  auto b = p.tensor({2});
  auto c = p.tensor({4});
  auto w = p.tensor({4});
  p.input("a", a);
  p.input("b", b);
  p.input("w", w, "parameter");
  p.aten("aten::cat", {L({T(a), T(b)}), I(0)}, {c}, {}, J{{"weight", T(w)}});
  p.output("c", c);
  SsaProgram s = ssa_of(p);
  ASSERT_EQ(s.ops[0].reads.size(), 3u);
  EXPECT_EQ(s.ops[0].reads[0].path, "args[0].list[0]");
  EXPECT_EQ(s.ops[0].reads[1].path, "args[0].list[1]");
  EXPECT_EQ(s.ops[0].reads[2].path, "kwargs.weight");
}

TEST(Ssa, AliasingFacts) {
  ProgramBuilder p("ref", "reference");
  auto x = p.tensor({8});
  auto xa = p.view(x, 0, {4}, {1});
  auto xb = p.view(x, 4, {4}, {1});
  auto xt = p.view(x, 2, {4}, {1});
  p.input("a", xa);
  p.input("b", xb);
  p.aten("aten::slice", {T(xa), I(0), I(2), I(6)}, {xt});
  p.output("view", xt);
  SsaProgram s = ssa_of(p);
  ASSERT_EQ(s.aliasing.size(), 3u);
  EXPECT_EQ(s.aliasing[0].kind, AliasFact::Kind::InputInput);
  EXPECT_FALSE(s.aliasing[0].overlap);  // [0,4) and [4,8)
  EXPECT_EQ(s.aliasing[1].kind, AliasFact::Kind::OutputInput);
  EXPECT_EQ(s.aliasing[1].b, "a");
  EXPECT_TRUE(s.aliasing[1].overlap);  // [2,6) meets [0,4)
  EXPECT_TRUE(s.aliasing[2].overlap);  // ... and [4,8)
  EXPECT_EQ(s.storage_tensors[0].size(), 4u);
}

TEST(Ssa, DescribeNamesVersions) {
  ProgramBuilder p("ref", "reference");
  auto x = p.tensor({4});
  p.input("x", x);
  p.aten("aten::relu_", {T(x)}, {x}, {x});
  p.output("x", x);
  std::string d = describe(ssa_of(p));
  EXPECT_NE(d.find("writes s0@v0 -> s0@v1 via t0"), std::string::npos) << d;
  EXPECT_NE(d.find("output x = t0 s0@v1"), std::string::npos) << d;
}
