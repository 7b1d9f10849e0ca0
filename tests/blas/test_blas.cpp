// The cuBLAS equations (src/blas) on small hand-checked cases: one test per function and per convention
// (transposes, leading dimensions, strides, pointer arrays, beta == 0 not reading C, negative increments,
// Lt layouts and epilogues), argument errors, and the sum-of-products form shared with ATen's mm.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "blas/blas.h"

using namespace dirigo;
using blas::Buffers;

namespace {

const double NaN = std::numeric_limits<double>::quiet_NaN();

blas::Buffers run(const std::string& op, const Buffers& in) { return blas::evaluate(blas::library_op_from_json(op), in); }

// Column-major m x n matrix with leading dimension ld, element (i, j) = f(i, j), padding = pad.
std::vector<double> colmajor(int64_t m, int64_t n, int64_t ld, double (*f)(int64_t, int64_t), double pad = -99) {
  std::vector<double> v(size_t(ld * n), pad);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) v[size_t(i + j * ld)] = f(i, j);
  return v;
}
double fa(int64_t i, int64_t j) { return 1 + i + 10 * j; }
double fb(int64_t i, int64_t j) { return 0.5 * i - j; }

}  // namespace

TEST(Sgemm, ColumnMajorWithTransposesAndLeadingDimensions) {
  // C(2x3) = 2 * A^T B + 0.5 * C, A stored 4x2 (lda 5), B stored 4x3 (ldb 4), ldc 3
  Buffers in{{"A", colmajor(4, 2, 5, fa)}, {"B", colmajor(4, 3, 4, fb)}, {"C", colmajor(2, 3, 3, fb, 7)}};
  auto out = run(R"({"name":"cublasSgemm_v2","args":{"transa":"T","transb":"N","m":2,"n":3,"k":4,"alpha":2.0,
    "beta":0.5,"A":{"tensor":"A","byte_offset":0},"lda":5,"B":{"tensor":"B","byte_offset":0},"ldb":4,
    "C":{"tensor":"C","byte_offset":0},"ldc":3}})", in);
  ASSERT_EQ(out.count("C"), 1u);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      double s = 0;
      for (int64_t l = 0; l < 4; ++l) s += fa(l, i) * fb(l, j);
      EXPECT_DOUBLE_EQ(out["C"][size_t(i + 3 * j)], 2 * s + 0.5 * fb(i, j)) << i << "," << j;
    }
  EXPECT_EQ(out["C"][2], 7);  // padding between columns (row 2 of ld 3) is not written
}

TEST(Sgemm, BetaZeroDoesNotReadC) {
  Buffers in{{"A", {1, 2}}, {"B", {3}}, {"C", {NaN, NaN}}};
  auto out = run(R"({"name":"cublasSgemm_v2","args":{"transa":"N","transb":"N","m":2,"n":1,"k":1,"alpha":1,
    "beta":0,"A":{"tensor":"A"},"lda":2,"B":{"tensor":"B"},"ldb":1,"C":{"tensor":"C"},"ldc":2}})", in);
  EXPECT_EQ(out["C"], (std::vector<double>{3, 6}));
  // beta != 0 reads C: NaN propagates
  out = run(R"({"name":"cublasSgemm_v2","args":{"transa":"N","transb":"N","m":2,"n":1,"k":1,"alpha":1,
    "beta":1,"A":{"tensor":"A"},"lda":2,"B":{"tensor":"B"},"ldb":1,"C":{"tensor":"C"},"ldc":2}})", in);
  EXPECT_TRUE(std::isnan(out["C"][0]));
}

TEST(Sgemm, DeviceAlphaBetaAreReadFromTheirTensor) {
  Buffers in{{"A", {2}}, {"B", {3}}, {"C", {5}}, {"s", {10, 0}}};
  auto out = run(R"({"name":"cublasSgemm_v2","args":{"pointer_mode":"device","transa":"N","transb":"N","m":1,
    "n":1,"k":1,"alpha":null,"beta":null,"alpha_ptr":{"tensor":"s","byte_offset":0},
    "beta_ptr":{"tensor":"s","byte_offset":4},"A":{"tensor":"A"},"lda":1,"B":{"tensor":"B"},"ldb":1,
    "C":{"tensor":"C"},"ldc":1}})", in);
  EXPECT_EQ(out["C"][0], 60);  // device beta 0: C not used
  in["s"] = {10, 2};
  out = run(R"({"name":"cublasSgemm_v2","args":{"transa":"N","transb":"N","m":1,"n":1,"k":1,"alpha":null,
    "beta":null,"alpha_ptr":{"tensor":"s","byte_offset":0},"beta_ptr":{"tensor":"s","byte_offset":4},
    "A":{"tensor":"A"},"lda":1,"B":{"tensor":"B"},"ldb":1,"C":{"tensor":"C"},"ldc":1}})", in);
  EXPECT_EQ(out["C"][0], 70);
}

TEST(Sgemm, SumOfProductsIsTheFormAtenMmBuilds) {
  ir::Context ctx;
  auto op = blas::library_op_from_json(R"({"name":"cublasSgemm_v2","args":{"transa":"N","transb":"N","m":1,
    "n":1,"k":3,"alpha":1,"beta":0,"A":{"tensor":"A"},"lda":1,"B":{"tensor":"B"},"ldb":3,"C":{"tensor":"C"},"ldc":1}})");
  auto call = blas::parse(op);
  int32_t ta = ctx.tensor("A"), tb = ctx.tensor("B");
  auto e = blas::element(ctx, call, "C", 0, [&](const std::string& k, int64_t off) {
    return ctx.elem(k == "A" ? ta : tb, off);
  });
  ASSERT_TRUE(e.has_value());
  std::vector<ir::Expr> terms;
  for (int64_t l = 0; l < 3; ++l) terms.push_back(ctx.mul(ctx.elem(ta, l), ctx.elem(tb, l)));
  EXPECT_EQ(*e, ctx.add(terms));  // hash-consed: the very same node
}

TEST(SgemmStridedBatched, StridesAndABroadcastWithStrideZero) {
  // C_b (1x1) = A . B_b with A shared (strideA 0), B_b at b*3, C_b at b*2
  Buffers in{{"A", {1, 2}}, {"B", {1, 1, -1, 2, 3, -1, 0, 1}}, {"C", {0, 9, 0, 9, 0}}};
  auto out = run(R"({"name":"cublasSgemmStridedBatched","args":{"transa":"N","transb":"N","m":1,"n":1,"k":2,
    "alpha":1,"beta":0,"A":{"tensor":"A"},"lda":1,"strideA":0,"B":{"tensor":"B"},"ldb":2,"strideB":3,
    "C":{"tensor":"C"},"ldc":1,"strideC":2,"batchCount":3}})", in);
  EXPECT_EQ(out["C"], (std::vector<double>{3, 9, 8, 9, 2}));
}

TEST(SgemmStridedBatched, OverlappingOutputsAreUnsupported) {
  Buffers in{{"A", {1}}, {"B", {1}}, {"C", {0, 0, 0}}};
  EXPECT_THROW(run(R"({"name":"cublasSgemmStridedBatched","args":{"transa":"N","transb":"N","m":2,"n":1,"k":1,
    "alpha":1,"beta":0,"A":{"tensor":"A"},"lda":2,"strideA":0,"B":{"tensor":"B"},"ldb":1,"strideB":0,
    "C":{"tensor":"C"},"ldc":2,"strideC":1,"batchCount":2}})", in), std::exception);
}

TEST(SgemmBatched, PointerArraysNameOneArgumentPerEntry) {
  Buffers in{{"A", {2, 3}}, {"B", {5, 7}}, {"C", {0, 0, 0}}};
  auto out = run(R"({"name":"cublasSgemmBatched","args":{"transa":"N","transb":"N","m":1,"n":1,"k":1,
    "alpha":1,"beta":0,"A[0]":{"tensor":"A","byte_offset":4},"A[1]":{"tensor":"A","byte_offset":0},"lda":1,
    "B[0]":{"tensor":"B","byte_offset":0},"B[1]":{"tensor":"B","byte_offset":4},"ldb":1,
    "C[0]":{"tensor":"C","byte_offset":8},"C[1]":{"tensor":"C","byte_offset":0},"ldc":1,"batchCount":2}})", in);
  EXPECT_EQ(out["C"], (std::vector<double>{14, 0, 15}));
}

TEST(GemmEx, Float32IsModeledOtherTypesAreUnsupportedByName) {
  Buffers in{{"A", {2}}, {"B", {3}}, {"C", {0}}};
  auto out = run(R"({"name":"cublasGemmEx","args":{"transa":"N","transb":"N","m":1,"n":1,"k":1,"alpha":1,
    "beta":0,"A":{"tensor":"A"},"Atype":0,"lda":1,"B":{"tensor":"B"},"Btype":0,"ldb":1,"C":{"tensor":"C"},
    "Ctype":0,"ldc":1,"computeType":68}})", in);
  EXPECT_EQ(out["C"][0], 6);
  try {
    run(R"({"name":"cublasGemmEx","args":{"transa":"N","transb":"N","m":1,"n":1,"k":1,"alpha":1,"beta":0,
      "A":{"tensor":"A"},"Atype":2,"lda":1,"B":{"tensor":"B"},"Btype":2,"ldb":1,"C":{"tensor":"C"},"Ctype":2,
      "ldc":1,"computeType":68}})", in);
    FAIL() << "fp16 GemmEx was accepted";
  } catch (const blas::Unsupported& u) {
    EXPECT_NE(std::string(u.what()).find("cublasGemmEx with Atype = cudaDataType 2"), std::string::npos) << u.what();
  }
}

TEST(GemmStridedBatchedEx, SameConventionsAsStridedSgemm) {
  Buffers in{{"A", {1, 2, 3, 4}}, {"B", {1, 10}}, {"C", {0, 0, 0, 0}}};
  // batch b: C_b (2x1) = A_b (2x1) * B_b (1x1); A stride 2, B stride 1, C stride 2
  auto out = run(R"({"name":"cublasGemmStridedBatchedEx","args":{"transa":"N","transb":"N","m":2,"n":1,"k":1,
    "alpha":1,"beta":0,"A":{"tensor":"A"},"Atype":0,"lda":2,"strideA":2,"B":{"tensor":"B"},"Btype":0,"ldb":1,
    "strideB":1,"C":{"tensor":"C"},"Ctype":0,"ldc":2,"strideC":2,"batchCount":2,"computeType":68}})", in);
  EXPECT_EQ(out["C"], (std::vector<double>{1, 2, 30, 40}));
}

TEST(Sgeam, TransposeAddAndBetaZeroSkipsB) {
  // C (2x3) = A^T (A stored 3x2, lda 3) + 2 B (2x3, ldb 2)
  Buffers in{{"A", colmajor(3, 2, 3, fa)}, {"B", colmajor(2, 3, 2, fb)}, {"C", std::vector<double>(6, NaN)}};
  auto out = run(R"({"name":"cublasSgeam","args":{"transa":"T","transb":"N","m":2,"n":3,"alpha":1,"beta":2,
    "A":{"tensor":"A"},"lda":3,"B":{"tensor":"B"},"ldb":2,"C":{"tensor":"C"},"ldc":2}})", in);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_DOUBLE_EQ(out["C"][size_t(i + 2 * j)], fa(j, i) + 2 * fb(i, j));
  in["B"] = std::vector<double>(6, NaN);
  out = run(R"({"name":"cublasSgeam","args":{"transa":"T","transb":"N","m":2,"n":3,"alpha":1,"beta":0,
    "A":{"tensor":"A"},"lda":3,"B":{"tensor":"B"},"ldb":2,"C":{"tensor":"C"},"ldc":2}})", in);
  EXPECT_DOUBLE_EQ(out["C"][1], fa(0, 1));
}

TEST(Sgemv, TransposeWithANegativeIncrement) {
  // y (3) = A^T x, A stored 2x3 (lda 2), x walked backwards (incx -1)
  Buffers in{{"A", colmajor(2, 3, 2, fa)}, {"x", {1, 100}}, {"y", {NaN, NaN, NaN}}};
  auto out = run(R"({"name":"cublasSgemv_v2","args":{"trans":"T","m":2,"n":3,"alpha":1,"beta":0,
    "A":{"tensor":"A"},"lda":2,"x":{"tensor":"x"},"incx":-1,"y":{"tensor":"y"},"incy":1}})", in);
  for (int64_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(out["y"][size_t(i)], fa(0, i) * 100 + fa(1, i) * 1);
}

TEST(Sger, RankOneUpdateWithLeadingDimension) {
  // A (2x3, lda 3) += 2 x y^T, y walked backwards
  Buffers in{{"A", colmajor(2, 3, 3, fa)}, {"x", {1, -1}}, {"y", {1, 2, 3}}};
  auto out = run(R"({"name":"cublasSger_v2","args":{"m":2,"n":3,"alpha":2,"x":{"tensor":"x"},"incx":1,
    "y":{"tensor":"y"},"incy":-1,"A":{"tensor":"A"},"lda":3}})", in);
  double yv[3] = {3, 2, 1}, xv[2] = {1, -1};
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_DOUBLE_EQ(out["A"][size_t(i + 3 * j)], fa(i, j) + 2 * xv[i] * yv[j]);
  EXPECT_EQ(out["A"][2], -99);  // padding row untouched
}

TEST(Saxpy, StridedVectors) {
  Buffers in{{"x", {1, 0, 2, 0, 3}}, {"y", {10, 20, 30}}};
  auto out = run(R"({"name":"cublasSaxpy_v2","args":{"n":3,"alpha":2,"x":{"tensor":"x"},"incx":2,
    "y":{"tensor":"y"},"incy":1}})", in);
  EXPECT_EQ(out["y"], (std::vector<double>{12, 24, 36}));
}

TEST(Sscal, ScalesAndNonPositiveIncrementDoesNothing) {
  Buffers in{{"x", {1, 2, 3, 4}}};
  auto out = run(R"({"name":"cublasSscal_v2","args":{"n":2,"alpha":3,"x":{"tensor":"x"},"incx":2}})", in);
  EXPECT_EQ(out["x"], (std::vector<double>{3, 2, 9, 4}));
  out = run(R"({"name":"cublasSscal_v2","args":{"n":2,"alpha":3,"x":{"tensor":"x"},"incx":0}})", in);
  EXPECT_TRUE(out.empty());
}

TEST(Sdot, DeviceResultIsWrittenHostResultIsNot) {
  Buffers in{{"x", {1, 2, 3}}, {"y", {4, 5, 6}}, {"r", {0, 0}}};
  auto out = run(R"({"name":"cublasSdot_v2","args":{"pointer_mode":"device","n":3,"x":{"tensor":"x"},"incx":1,
    "y":{"tensor":"y"},"incy":-1,"result":{"tensor":"r","byte_offset":4}}})", in);
  EXPECT_EQ(out["r"], (std::vector<double>{0, 1 * 6 + 2 * 5 + 3 * 4}));
  out = run(R"({"name":"cublasSdot_v2","args":{"n":3,"x":{"tensor":"x"},"incx":1,"y":{"tensor":"y"},"incy":1,
    "result_host":32}})", in);
  EXPECT_TRUE(out.empty());
}

TEST(LtMatmul, RowOrderBiasReluAndGelu) {
  // D (2x2, ORDER_ROW, ld 3) = relu(A (2x1) B (1x2) + bias)
  Buffers in{{"A", {1, -2}}, {"B", {3, 4}}, {"D", std::vector<double>(6, NaN)}, {"bias", {1, 0.5}}};
  std::string lay = R"("order":1,"batch":1,"stride":0,"type":0)";
  auto op = R"({"name":"cublasLtMatmul","args":{"transa":"N","transb":"N","computeType":68,"scaleType":0,
    "epilogue":6,"alpha":1,"beta":0,"A":{"tensor":"A"},"Adesc":{"rows":2,"cols":1,"ld":1,)" + lay +
            R"(},"B":{"tensor":"B"},"Bdesc":{"rows":1,"cols":2,"ld":2,)" + lay +
            R"(},"C":{"pointer":"0x0","unbound":true},"Cdesc":{"rows":2,"cols":2,"ld":3,)" + lay +
            R"(},"D":{"tensor":"D"},"Ddesc":{"rows":2,"cols":2,"ld":3,)" + lay + R"(},"bias":{"tensor":"bias"}}})";
  auto out = run(op, in);
  EXPECT_EQ(out["D"][0], 4);
  EXPECT_EQ(out["D"][1], 5);
  EXPECT_EQ(out["D"][3], 0);  // relu(-6 + 0.5)
  EXPECT_EQ(out["D"][4], 0);  // relu(-8 + 0.5)
  EXPECT_TRUE(std::isnan(out["D"][2]));  // row padding untouched
  std::string gelu = op;
  gelu.replace(gelu.find("\"epilogue\":6"), 12, "\"epilogue\":32");
  out = run(gelu, in);
  double x = 3, g = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  EXPECT_NEAR(out["D"][0], g, 1e-12);
}

TEST(LtMatmul, UnknownEpilogueIsUnsupportedByName) {
  std::string lay = R"("order":0,"batch":1,"stride":0,"type":0,"rows":1,"cols":1,"ld":1)";
  auto op = blas::library_op_from_json(R"({"name":"cublasLtMatmul","args":{"transa":"N","transb":"N",
    "epilogue":136,"alpha":1,"beta":0,"A":{"tensor":"A"},"Adesc":{)" + lay + R"(},"B":{"tensor":"B"},"Bdesc":{)" +
                                       lay + R"(},"Cdesc":{)" + lay + R"(},"D":{"tensor":"D"},"Ddesc":{)" + lay + "}}}");
  try {
    blas::parse(op);
    FAIL();
  } catch (const blas::Unsupported& u) {
    EXPECT_NE(std::string(u.what()).find("cublasLtMatmul with epilogue 136"), std::string::npos) << u.what();
  }
}

TEST(Calls, UnmodeledFunctionIsUnsupportedNamingIt) {
  auto op = blas::library_op_from_json(R"({"name":"cublasStrsm_v2","args":{"modeled":false}})");
  try {
    blas::parse(op);
    FAIL();
  } catch (const blas::Unsupported& u) {
    EXPECT_EQ(std::string(u.what()), "UNSUPPORTED: cuBLAS function cublasStrsm_v2 is not modeled");
  }
}

TEST(Calls, UnboundPointerIsUnsupportedNamingTheArgument) {
  auto op = blas::library_op_from_json(R"({"name":"cublasSaxpy_v2","args":{"n":3,"alpha":2,"x":{"tensor":"x"},
    "incx":1,"y":{"pointer":"0x7f00","unbound":true},"incy":1}})");
  try {
    blas::parse(op);
    FAIL();
  } catch (const blas::Unsupported& u) {
    EXPECT_NE(std::string(u.what()).find("argument y is a pointer into no traced tensor"), std::string::npos);
  }
}

TEST(Calls, InvalidLeadingDimensionWritesNothing) {
  // lda < m: cuBLAS returns CUBLAS_STATUS_INVALID_VALUE and computes nothing
  auto call = blas::parse(blas::library_op_from_json(R"({"name":"cublasSgemm_v2","args":{"transa":"N",
    "transb":"N","m":3,"n":1,"k":1,"alpha":1,"beta":0,"A":{"tensor":"A"},"lda":2,"B":{"tensor":"B"},"ldb":1,
    "C":{"tensor":"C"},"ldc":3}})"));
  EXPECT_FALSE(call.valid);
  EXPECT_TRUE(blas::extents(call).empty());
}

TEST(Extents, LeadingDimensionsAndStridesSetTheRanges) {
  auto call = blas::parse(blas::library_op_from_json(R"({"name":"cublasSgemmStridedBatched","args":{
    "transa":"T","transb":"N","m":2,"n":3,"k":4,"alpha":1,"beta":1,"A":{"tensor":"A"},"lda":6,"strideA":20,
    "B":{"tensor":"B"},"ldb":4,"strideB":12,"C":{"tensor":"C"},"ldc":2,"strideC":6,"batchCount":2}})"));
  std::map<std::string, std::pair<int64_t, int64_t>> r;
  for (const auto& e : blas::extents(call))
    if (!e.write) r[e.key] = {e.lo, e.hi};
  EXPECT_EQ(r["A"], std::make_pair(int64_t(0), int64_t(20 + 6 * 1 + 4)));  // A stored 4x2, lda 6
  EXPECT_EQ(r["B"], std::make_pair(int64_t(0), int64_t(12 + 4 * 2 + 4)));
  EXPECT_EQ(r["C"], std::make_pair(int64_t(0), int64_t(6 + 2 * 2 + 2)));
}
