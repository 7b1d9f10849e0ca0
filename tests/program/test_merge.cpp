#include <gtest/gtest.h>

#include "builder.h"
#include "program/merge.h"

using namespace dirigo;
using namespace dirigo::program;
using namespace dirigo::program::testing;

namespace {

std::string merge_error(const bundle::Bundle& b, const MergeOptions& opts = {}) {
  try {
    merge(b, opts);
  } catch (const MergeError& e) {
    return e.what();
  }
  return "";
}

// x -> conv(x, w, b) -> relu -> <tail>; tail(builder, relu_out) adds the rest and returns the output.
template <class Tail>
ProgramBuilder conv_relu(const char* name, const char* role, Tail tail, const char* w_name = "conv.weight") {
  ProgramBuilder p(name, role);
  auto x = p.tensor({2, 3, 8, 8});
  auto w = p.tensor({4, 3, 3, 3});
  auto bias = p.tensor({4});
  auto c = p.tensor({2, 4, 6, 6});
  auto r = p.tensor({2, 4, 6, 6});
  p.input("x", x);
  p.input(w_name, w, "parameter");
  p.input("conv.bias", bias, "parameter");
  p.aten("aten::convolution", {T(x), T(w), T(bias), Ints({1, 1}), Ints({0, 0}), Ints({1, 1}),
                               J{{"scalar", false}, {"type", "bool"}}, Ints({0, 0}), I(1)},
         {c});
  p.aten("aten::relu", {T(c)}, {r});
  p.output("out0", tail(p, r));
  return p;
}

}  // namespace

TEST(Merge, MatchesInputsByPositionAndParametersByName) {
  auto ref = conv_relu("ref", "reference", [](ProgramBuilder&, const std::string& r) { return r; });
  auto cand = conv_relu("new", "candidate", [](ProgramBuilder&, const std::string& r) { return r; });
  Merged m = merge(make_bundle({&ref, &cand}), MergeOptions{false, false});
  ASSERT_EQ(m.inputs.size(), 3u);
  EXPECT_EQ(m.inputs[0].name, "x");
  EXPECT_EQ(m.inputs[1].name, "conv.weight");
  EXPECT_EQ(m.inputs[1].cand.tensor, "t1");
  EXPECT_EQ(m.inputs[2].name, "conv.bias");
  ASSERT_EQ(m.outputs.size(), 1u);
  EXPECT_EQ(m.outputs[0].ref_name, "out0");
  EXPECT_EQ(m.prefix, 0u);  // trimming off
  EXPECT_EQ(m.ref_ops().size(), 2u);
  EXPECT_TRUE(m.unmatched.empty());
}

TEST(Merge, ParametersWithOtherNamesMatchInOrder) {
  auto ref = conv_relu("ref", "reference", [](ProgramBuilder&, const std::string& r) { return r; });
  auto cand = conv_relu("new", "candidate", [](ProgramBuilder&, const std::string& r) { return r; }, "weight");
  Merged m = merge(make_bundle({&ref, &cand}));
  // conv.bias matches by name first; then conv.weight pairs with weight by order.
  ASSERT_EQ(m.inputs.size(), 5u);  // 3 matched inputs + 2 trimmed results
  EXPECT_EQ(m.inputs[1].name, "conv.bias");
  EXPECT_EQ(m.inputs[2].name, "conv.weight");
  EXPECT_EQ(m.inputs[2].cand.tensor, "t1");
}

TEST(Merge, MatchedInputsWithOtherRecordedValuesAreListed) {
  // the same function, but each program initialized its bias its own way (recorded hashes differ)
  auto program = [](const char* name, const char* role, const std::string& bias_hash) {
    ProgramBuilder p(name, role);
    auto x = p.tensor({4}), bias = p.tensor({4}), y = p.tensor({4});
    p.input("x", x, "input", std::string(64, 'a'));
    p.input("bias", bias, "parameter", bias_hash);
    p.aten("aten::add", {T(x), T(bias)}, {y}, {}, J{{"alpha", I(1)}});
    p.output("out0", y);
    return p;
  };
  auto ref = program("ref", "reference", std::string(64, 'b'));
  auto same = program("new", "candidate", std::string(64, 'b'));
  EXPECT_TRUE(merge(make_bundle({&ref, &same})).differing_values.empty());
  auto other = program("new", "candidate", std::string(64, 'c'));
  Merged m = merge(make_bundle({&ref, &other}));
  ASSERT_EQ(m.differing_values.size(), 1u);
  EXPECT_EQ(m.differing_values[0].first, "bias");
  auto unhashed = program("new", "candidate", "");
  EXPECT_TRUE(merge(make_bundle({&ref, &unhashed})).differing_values.empty());  // unknown is not different
}

TEST(Merge, InputsMayDifferInSizeOneAxesOutputsMayNot) {
  auto program = [](const char* name, const char* role, std::vector<int64_t> bias_shape, std::vector<int64_t> out_shape) {
    ProgramBuilder p(name, role);
    auto x = p.tensor({4}), bias = p.tensor(bias_shape), y = p.tensor(out_shape);
    p.input("x", x);
    p.input("bias", bias, "parameter");
    p.aten("aten::add", {T(x), T(bias)}, {y}, {}, J{{"alpha", I(1)}});
    p.output("out0", y);
    return p;
  };
  auto ref = program("ref", "reference", {1, 1, 1}, {1, 1, 4});
  auto flat = program("new", "candidate", {1}, {1, 1, 4});
  Merged m = merge(make_bundle({&ref, &flat}), MergeOptions{false, false});
  ASSERT_EQ(m.inputs.size(), 2u);  // x and the bias, one shared input each
  EXPECT_EQ(m.inputs[1].ref.shape, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(m.inputs[1].cand.shape, (std::vector<int64_t>{1}));
  EXPECT_TRUE(m.unmatched.empty());
  auto other_out = program("new", "candidate", {1}, {4});
  EXPECT_NE(merge_error(make_bundle({&ref, &other_out}), MergeOptions{false, false}).find("differ in shape"), std::string::npos);
  auto other_bias = program("new", "candidate", {2}, {1, 1, 4});
  EXPECT_NE(merge_error(make_bundle({&ref, &other_bias}), MergeOptions{false, false}).find("differ in shape"), std::string::npos);
}

TEST(Merge, NameMatchingIgnoresOrder) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  auto rx = ref.tensor({4}), ra = ref.tensor({4}), rb = ref.tensor({4}), ro = ref.tensor({4});
  ref.input("x", rx);
  ref.input("a", ra, "parameter");
  ref.input("b", rb, "parameter");
  ref.aten("aten::addcmul", {T(rx), T(ra), T(rb)}, {ro});
  ref.output("y", ro);
  auto cx = cand.tensor({4}), cb = cand.tensor({4}), ca = cand.tensor({4}), co = cand.tensor({4});
  cand.input("x", cx);
  cand.input("b", cb, "parameter");
  cand.input("a", ca, "parameter");
  cand.aten("aten::addcmul", {T(cx), T(ca), T(cb)}, {co});
  cand.output("y", co);
  Merged m = merge(make_bundle({&ref, &cand}));
  EXPECT_EQ(m.inputs[1].name, "a");
  EXPECT_EQ(m.inputs[1].cand.tensor, ca);
  EXPECT_EQ(m.prefix, 1u);  // same op on the same (name-matched) values
}

TEST(Merge, MatchSectionOverridesPosition) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  auto ra = ref.tensor({4}), rb = ref.tensor({4}), rs = ref.tensor({4}), rd = ref.tensor({4});
  ref.input("a", ra);
  ref.input("b", rb);
  ref.aten("aten::add", {T(ra), T(rb)}, {rs});
  ref.aten("aten::sub", {T(ra), T(rb)}, {rd});
  ref.output("sum", rs);
  ref.output("diff", rd);
  auto cb = cand.tensor({4}), ca = cand.tensor({4}), cd = cand.tensor({4}), cs = cand.tensor({4});
  cand.input("b", cb);  // positions swapped
  cand.input("a", ca);
  cand.aten("aten::sub", {T(ca), T(cb)}, {cd});
  cand.aten("aten::add", {T(ca), T(cb)}, {cs});
  cand.output("diff", cd);
  cand.output("sum", cs);
  J match{{"inputs", J::array({J::array({"ref.a", "new.a"}), J::array({"new.b", "ref.b"})})},
          {"outputs", J::array({J::array({"ref.sum", "new.sum"}), J::array({"ref.diff", "new.diff"})})}};
  Merged m = merge(make_bundle({&ref, &cand}, match));
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_EQ(m.inputs[0].cand.tensor, ca);
  EXPECT_EQ(m.inputs[1].name, "b");
  EXPECT_EQ(m.inputs[1].cand.tensor, cb);  // either order in a pair
  ASSERT_EQ(m.outputs.size(), 2u);
  EXPECT_EQ(m.outputs[0].cand.tensor, cs);
  EXPECT_EQ(m.outputs[1].cand_name, "diff");
  EXPECT_EQ(m.prefix, 0u);  // add vs sub at op 0
}

TEST(Merge, OutputShapeMismatchNamesBothTensors) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  auto rx = ref.tensor({4, 8}), ry = ref.tensor({4, 8});
  ref.input("x", rx);
  ref.aten("aten::relu", {T(rx)}, {ry});
  ref.output("out0", ry);
  auto cx = cand.tensor({4, 8}), cy = cand.tensor({4, 9});
  cand.input("x", cx);
  cand.aten("aten::relu", {T(cx)}, {cy});
  cand.output("out0", cy);
  EXPECT_EQ(merge_error(make_bundle({&ref, &cand})),
            "output 0: reference ref.out0 (t1: float32[4, 8]) and candidate new.out0 (t1: float32[4, 9]) differ in "
            "shape");
}

TEST(Merge, InputDtypeMismatch) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  auto rx = ref.tensor({4});
  ref.input("x", rx);
  ref.output("y", rx);
  auto cx = cand.tensor({4}, "int32");
  cand.input("x", cx);
  cand.output("y", cx);
  EXPECT_EQ(merge_error(make_bundle({&ref, &cand})),
            "input 0: reference ref.x (t0: float32[4]) and candidate new.x (t0: int32[4]) differ in dtype");
}

TEST(Merge, InputCountMismatch) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  auto rx = ref.tensor({4}), ry = ref.tensor({4});
  ref.input("x", rx);
  ref.input("y", ry);
  ref.output("o", rx);
  auto cx = cand.tensor({4});
  cand.input("x", cx);
  cand.output("o", cx);
  EXPECT_EQ(merge_error(make_bundle({&ref, &cand})), "reference ref has 2 inputs (x, y), candidate new has 1 (x)");
}

TEST(Merge, PrefixTrimsSharedConvReluAndStopsAtTheFirstDifference) {
  auto ref = conv_relu("ref", "reference", [](ProgramBuilder& p, const std::string& r) {
    auto g = p.tensor({2, 4, 6, 6});
    p.aten("aten::gelu", {T(r)}, {g});
    auto o = p.tensor({2, 4, 6, 6});
    p.aten("aten::mul", {T(g), F(2.0)}, {o});
    return o;
  });
  auto cand = conv_relu("new", "candidate", [](ProgramBuilder& p, const std::string& r) {
    auto g = p.tensor({2, 4, 6, 6});
    p.aten("aten::sigmoid", {T(r)}, {g});
    auto o = p.tensor({2, 4, 6, 6});
    p.aten("aten::mul", {T(g), F(2.0)}, {o});  // same name again, but on a different value
    return o;
  });
  Merged m = merge(make_bundle({&ref, &cand}));
  EXPECT_EQ(m.prefix, 2u);
  EXPECT_EQ(m.prefix_stop, "op 2: aten::gelu(t4) -> t5 vs aten::sigmoid(t4) -> t5");
  ASSERT_EQ(m.inputs.size(), 5u);  // x, conv.weight, conv.bias + conv and relu results
  EXPECT_EQ(m.inputs[3].origin, SharedInput::Origin::Trimmed);
  EXPECT_EQ(m.inputs[3].name, "prefix[0].t3");
  EXPECT_EQ(m.inputs[4].name, "prefix[1].t4");
  EXPECT_EQ(m.inputs[4].trimmed_op, 1u);
  // The remaining ops read the relu result, which is now a shared input in both programs.
  ASSERT_EQ(m.ref_ops().size(), 2u);
  ASSERT_EQ(m.cand_ops().size(), 2u);
  EXPECT_EQ(m.shared_input_of_ref(m.ref_ops()[0].reads[0].view.value), 4);
  EXPECT_EQ(m.shared_input_of_cand(m.cand_ops()[0].reads[0].view.value), 4);
  // The trimmed prefix is kept for witness refinement.
  ASSERT_EQ(m.prefix_ops_ref().size(), 2u);
  EXPECT_EQ(m.prefix_ops_ref()[0].aten()->name, "aten::convolution");
  EXPECT_EQ(m.prefix_ops_cand()[1].aten()->name, "aten::relu");
}

TEST(Merge, NoTrimmingWhenScalarsDiffer) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({8}), y = p->tensor({8});
    p->input("x", x);
    p->aten("aten::clamp", {T(x), F(p == &ref ? -1.0 : -2.0), None()}, {y});
    p->output("y", y);
  }
  Merged m = merge(make_bundle({&ref, &cand}));
  EXPECT_EQ(m.prefix, 0u);
  EXPECT_NE(m.prefix_stop.find("args[1] differ (-1.0 vs -2.0)"), std::string::npos) << m.prefix_stop;
}

TEST(Merge, NoTrimmingWhenOperandsDiffer) {
  // add(x, y) vs add(y, x): the same op on different operands (commutativity is Check's business).
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({8}), y = p->tensor({8}), z = p->tensor({8});
    p->input("x", x);
    p->input("y", y);
    if (p == &ref) p->aten("aten::add", {T(x), T(y)}, {z});
    else p->aten("aten::add", {T(y), T(x)}, {z});
    p->output("z", z);
  }
  Merged m = merge(make_bundle({&ref, &cand}));
  EXPECT_EQ(m.prefix, 0u);
  EXPECT_NE(m.prefix_stop.find("args[0] is t0 in ref but t1 in new, not the same value"), std::string::npos)
      << m.prefix_stop;
}

TEST(Merge, NoTrimmingOfDifferentInputViews) {
  // relu(x[0:4]) vs relu(x[4:8]): same name, same storage, different region.
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({8});
    auto half = p->view(x, p == &ref ? 0 : 4, {4}, {1});
    auto y = p->tensor({4});
    p->input("x", x);
    p->aten("aten::slice", {T(x), I(0), I(p == &ref ? 0 : 4), I(p == &ref ? 4 : 8)}, {half});
    p->aten("aten::relu", {T(half)}, {y});
    p->output("y", y);
  }
  EXPECT_EQ(merge(make_bundle({&ref, &cand})).prefix, 0u);  // slice args already differ
}

TEST(Merge, SameViewsAreTrimmedAndCorrespond) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({4, 4});
    auto flat = p->view(x, 0, {16}, {1});
    auto y = p->tensor({16});
    auto z = p->tensor({16});
    p->input("x", x);
    p->aten("aten::view", {T(x), Ints({16})}, {flat});
    p->aten("aten::relu", {T(flat)}, {y});
    if (p == &ref) p->aten("aten::neg", {T(y)}, {z});
    else p->aten("aten::abs", {T(y)}, {z});
    p->output("z", z);
  }
  Merged m = merge(make_bundle({&ref, &cand}));
  EXPECT_EQ(m.prefix, 2u);
  ASSERT_EQ(m.inputs.size(), 2u);  // x and the relu result; the view adds no value
  EXPECT_FALSE(m.outputs[0].identical);
}

TEST(Merge, IdenticalInPlaceOpsAreTrimmed) {
  // relu, then y.mul_(2) in both: the updated version is shared too.
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({8}), y = p->tensor({8}), z = p->tensor({8});
    p->input("x", x);
    p->aten("aten::relu", {T(x)}, {y});
    p->aten("aten::mul_", {T(y), I(2)}, {y}, {y});
    p->aten(p == &ref ? "aten::exp" : "aten::exp2", {T(y)}, {z});
    p->output("z", z);
  }
  Merged m = merge(make_bundle({&ref, &cand}));
  EXPECT_EQ(m.prefix, 2u);
  ASSERT_EQ(m.inputs.size(), 3u);
  EXPECT_EQ(m.inputs[2].name, "prefix[1].t1");
  EXPECT_EQ(m.ref.value(m.inputs[2].ref.value).version, 2);  // y after mul_
  // exp reads the updated version, which is a shared input in both programs.
  EXPECT_EQ(m.shared_input_of_ref(m.ref_ops()[0].reads[0].view.value), 2);
  EXPECT_EQ(m.shared_input_of_cand(m.cand_ops()[0].reads[0].view.value), 2);
}

TEST(Merge, InPlaceOpsOnDifferentDataStopTrimming) {
  // Both run x.add_(1) on their first input, but the inputs are matched crosswise.
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto a = p->tensor({8}), b = p->tensor({8});
    p->input("a", a);
    p->input("b", b);
    p->aten("aten::add_", {T(a), I(1)}, {a}, {a});
    p->output("a", a);
  }
  J match{{"inputs", J::array({J::array({"ref.a", "new.b"}), J::array({"ref.b", "new.a"})})}};
  Merged m = merge(make_bundle({&ref, &cand}, match));
  EXPECT_EQ(m.prefix, 0u);
  EXPECT_NE(m.prefix_stop.find("is t0 in ref but t0 in new, not the same value"), std::string::npos) << m.prefix_stop;
}

TEST(Merge, SuffixTrimmingSkipsInPlaceOps) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({8}), y = p->tensor({8});
    p->input("x", x);
    p->aten(p == &ref ? "aten::exp" : "aten::exp2", {T(x)}, {y});
    p->aten("aten::relu_", {T(y)}, {y}, {y});
    p->output("y", y);
  }
  Merged m = merge(make_bundle({&ref, &cand}), MergeOptions{true, true});
  EXPECT_EQ(m.ref_suffix, 0u);
}

TEST(Merge, UninitializedAllocationsAreNotTrimmed) {
  // Both programs call empty_like: two uninitialized buffers are not the same value.
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({8}), y = p->tensor({8});
    p->input("x", x);
    p->aten("aten::empty_like", {T(x)}, {y});
    p->output("y", y);
  }
  Merged m = merge(make_bundle({&ref, &cand}));
  EXPECT_EQ(m.prefix, 0u);
  EXPECT_NE(m.prefix_stop.find("aten::empty_like has random or uninitialized results"), std::string::npos);
  EXPECT_TRUE(is_nondeterministic_aten("aten::randn"));
  EXPECT_TRUE(is_nondeterministic_aten("aten::empty.memory_format"));
  EXPECT_FALSE(is_nondeterministic_aten("aten::relu"));
}

TEST(Merge, ZeroElementAllocationsAreTrimmed) {
  // Both allocate an empty workspace (as native_batch_norm's callers do): nothing random to read.
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({8}), w = p->tensor({0}), y = p->tensor({8});
    p->input("x", x);
    p->aten("aten::empty", {Ints({0})}, {w});
    p->aten("aten::relu", {T(x)}, {y});
    p->output("y", y);
  }
  EXPECT_EQ(merge(make_bundle({&ref, &cand})).prefix, 2u);
}

TEST(Merge, PoolingEmptyStrideMeansKernelSize) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({1, 2, 8, 8}), y = p->tensor({1, 2, 4, 4});
    p->input("x", x);
    J stride = p == &ref ? Ints({2, 2}) : Ints({});
    p->aten("aten::avg_pool2d", {T(x), Ints({2, 2}), stride, Ints({0, 0})}, {y});
    p->output("y", y);
  }
  EXPECT_EQ(merge(make_bundle({&ref, &cand})).prefix, 1u);
  // ... but an empty stride is not the same as another explicit stride.
  ProgramBuilder other("new", "candidate");
  auto x = other.tensor({1, 2, 8, 8}), y = other.tensor({1, 2, 4, 4});
  other.input("x", x);
  other.aten("aten::avg_pool2d", {T(x), Ints({2, 2}), Ints({1, 1}), Ints({0, 0})}, {y});
  other.output("y", y);
  EXPECT_EQ(merge(make_bundle({&ref, &other})).prefix, 0u);
}

TEST(Merge, ConstantsPairOnlyByRecordedValues) {
  auto make = [](const char* name, const char* role, const char* hash) {
    ProgramBuilder p(name, role);
    auto x = p.tensor({4}), c = p.tensor({}), l = p.tensor({}), y = p.tensor({4});
    p.input("x", x);
    p.input("const1", c, "buffer");
    p.aten("aten::lift_fresh", {T(c)}, {l});
    p.aten("aten::minimum", {T(x), T(l)}, {y});
    p.output("y", y);
    J j = p.json();
    j["inputs"][1]["constant"] = true;
    if (*hash) j["inputs"][1]["sha256"] = std::string(64, hash[0]);
    return j;
  };
  auto merged = [&](const char* ref_hash, const char* cand_hash) {
    J m{{"format", "dirigo-bundle"}, {"version", 1},
        {"programs", J::array({make("ref", "reference", ref_hash), make("new", "candidate", cand_hash)})}};
    return merge(bundle::parse_manifest(m.dump()));
  };
  Merged same = merged("a", "a");
  EXPECT_EQ(same.prefix, 2u);
  EXPECT_TRUE(same.unmatched.empty());
  Merged differ = merged("a", "b");  // different values: program data, not a shared input
  EXPECT_EQ(differ.prefix, 0u);
  EXPECT_EQ(differ.unmatched.size(), 2u);
  EXPECT_EQ(merged("", "").prefix, 0u);  // values not recorded: never assumed equal, not even by name
}

TEST(Merge, LaunchesStopTrimming) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({8}), y = p->tensor({8});
    p->input("x", x);
    p->aten("aten::zeros_like", {T(x)}, {y});
    p->launch("_Z1kPKfPf", {P(x), P(y)});
    p->output("y", y);
  }
  Merged m = merge(make_bundle({&ref, &cand}));
  EXPECT_EQ(m.prefix, 1u);
  EXPECT_NE(m.prefix_stop.find("a launch op"), std::string::npos) << m.prefix_stop;
}

TEST(Merge, SuffixTrimmingIsOffByDefaultAndComparesOperandsWhenOn) {
  auto make = [](const char* name, const char* role, const char* middle) {
    ProgramBuilder p(name, role);
    auto x = p.tensor({8}), a = p.tensor({8}), o = p.tensor({8});
    p.input("x", x);
    p.aten(middle, {T(x)}, {a});
    p.aten("aten::tanh", {T(a)}, {o});
    p.output("out0", o);
    return p;
  };
  auto ref = make("ref", "reference", "aten::gelu");
  auto cand = make("new", "candidate", "aten::silu");
  bundle::Bundle b = make_bundle({&ref, &cand});
  Merged off = merge(b);
  EXPECT_EQ(off.ref_suffix, 0u);
  EXPECT_EQ(off.outputs[0].ref_name, "out0");

  Merged on = merge(b, MergeOptions{true, true});
  EXPECT_EQ(on.ref_suffix, 1u);
  EXPECT_EQ(on.cand_suffix, 1u);
  ASSERT_EQ(on.outputs.size(), 1u);
  EXPECT_EQ(on.outputs[0].ref_name, "suffix[1].args[0]");
  EXPECT_EQ(on.outputs[0].ref.tensor, "t1");  // gelu's result vs silu's result
  EXPECT_EQ(on.ref_ops().size(), 1u);
  EXPECT_EQ(on.ref_ops()[0].aten()->name, "aten::gelu");
}

TEST(Merge, SuffixTrimmingNeedsTheResultToBeTheMatchedOutput) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({8}), a = p->tensor({8}), o = p->tensor({8});
    p->input("x", x);
    p->aten("aten::tanh", {T(x)}, {a});
    p->aten("aten::tanh", {T(a)}, {o});
    p->output("out0", p == &ref ? o : a);  // cand returns the inner result
  }
  Merged m = merge(make_bundle({&ref, &cand}), MergeOptions{false, true});
  EXPECT_EQ(m.ref_suffix, 0u);
}

TEST(Merge, ProgramsChosenByRole) {
  ProgramBuilder cand("new", "candidate"), ref("ref", "reference");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({8});
    p->input("x", x);
    p->output("x", x);
  }
  Merged m = merge(make_bundle({&cand, &ref}));  // candidate listed first
  EXPECT_EQ(m.ref.name, "ref");
  EXPECT_EQ(m.cand.name, "new");
  EXPECT_EQ(merge_error(make_bundle({&ref})), "the bundle has no reference/candidate pair (roles) and not exactly two programs");
}

TEST(Merge, UnmatchedExtraParameterIsReported) {
  ProgramBuilder ref("ref", "reference"), cand("new", "candidate");
  for (auto* p : {&ref, &cand}) {
    auto x = p->tensor({8});
    p->input("x", x);
    if (p == &cand) p->input("scale", p->tensor({1}), "parameter");
    p->output("x", x);
  }
  Merged m = merge(make_bundle({&ref, &cand}));
  ASSERT_EQ(m.unmatched.size(), 1u);
  EXPECT_FALSE(m.unmatched[0].in_ref);
  EXPECT_EQ(m.unmatched[0].name, "scale");
}
