#include <gtest/gtest.h>

#include "bundle/bundle.h"
#include "bundle/sha256.h"

using namespace dirigo::bundle;

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding spills into a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string text(777, 'x');
  for (size_t i = 0; i < text.size(); ++i) text[i] = char('a' + i % 26);
  Sha256 s;
  for (size_t i = 0; i < text.size(); i += 13) s.update(std::string_view(text).substr(i, 13));
  auto digest = s.finish();
  std::string hex;
  for (uint8_t b : digest) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
  EXPECT_EQ(hex, sha256_hex(text));
}

TEST(DType, NamesSizesRoundTrip) {
  for (auto d : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16, DType::Int64, DType::Int32,
                 DType::Int16, DType::Int8, DType::UInt8, DType::Bool})
    EXPECT_EQ(parse_dtype(dtype_name(d)), d);
  EXPECT_EQ(element_size(DType::Float64), 8u);
  EXPECT_EQ(element_size(DType::BFloat16), 2u);
  EXPECT_EQ(element_size(DType::Bool), 1u);
  EXPECT_TRUE(is_floating(DType::Float16));
  EXPECT_FALSE(is_floating(DType::Int32));
  EXPECT_FALSE(parse_dtype("float8"));
}

TEST(ScalarType, PtxBits) {
  EXPECT_EQ(ptx_scalar_bits(*parse_scalar_type("s32")), 32u);
  EXPECT_EQ(ptx_scalar_bits(*parse_scalar_type("pred")), 1u);
  EXPECT_EQ(ptx_scalar_bits(ScalarType::Float), 0u);
  EXPECT_FALSE(parse_scalar_type("s33"));
}

TEST(Tensor, ContiguityAndExtent) {
  Tensor t{"t", "s", 0, {4, 256}, {256, 1}, DType::Float32};
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 1024);
  EXPECT_EQ(t.nbytes(), 4096);
  Extent e = t.extent();
  ASSERT_EQ(e.status, Extent::Status::Ok);
  EXPECT_EQ(e.lo, 0);
  EXPECT_EQ(e.hi, 1024);

  Tensor tr{"t", "s", 0, {256, 4}, {1, 256}, DType::Float32};  // a transpose
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(tr.extent().hi, 1024);

  Tensor size1{"t", "s", 3, {1, 8}, {999, 1}, DType::Float32};  // size-1 dims' strides do not matter
  EXPECT_TRUE(size1.is_contiguous());
  EXPECT_EQ(size1.extent().lo, 3);
  EXPECT_EQ(size1.extent().hi, 11);

  Tensor neg{"t", "s", 10, {5}, {-2}, DType::Float32};  // a flipped view reaches down
  EXPECT_EQ(neg.extent().lo, 2);
  EXPECT_EQ(neg.extent().hi, 11);

  Tensor expanded{"t", "s", 0, {8, 4}, {0, 1}, DType::Float32};  // broadcast: stride 0
  EXPECT_EQ(expanded.extent().hi, 4);
  EXPECT_FALSE(expanded.is_contiguous());

  Tensor empty{"t", "s", 100, {0, 4}, {4, 1}, DType::Float32};
  EXPECT_EQ(empty.extent().status, Extent::Status::Empty);
  EXPECT_TRUE(empty.is_contiguous());

  Tensor huge{"t", "s", 0, {int64_t(1) << 40, int64_t(1) << 40}, {int64_t(1) << 40, 1}, DType::Float32};
  EXPECT_EQ(huge.extent().status, Extent::Status::Overflow);

  EXPECT_EQ(contiguous_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({}), (std::vector<int64_t>{}));
}

TEST(Scalar, EqualityIsBitwiseSoNanRoundTrips) {
  Scalar a{ScalarType::Float, 0, std::numeric_limits<double>::quiet_NaN(), 0};
  EXPECT_EQ(a, a);
  Scalar z1{ScalarType::Float, 0, 0.0, 0}, z2{ScalarType::Float, 0, -0.0, 0};
  EXPECT_NE(z1, z2);
}
