#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "bundle/data.h"

using namespace dirigo::bundle;

namespace {
FileSource memory(std::map<std::string, std::string> files) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(files));
  return {[shared](const std::string& rel) -> std::optional<std::string> {
            auto it = shared->find(rel);
            if (it == shared->end()) return std::nullopt;
            return it->second;
          },
          [shared](const std::string& rel) -> std::optional<uint64_t> {
            auto it = shared->find(rel);
            if (it == shared->end()) return std::nullopt;
            return it->second.size();
          }};
}
template <class T>
std::string bytes_of(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof v);
  return s;
}
}  // namespace

TEST(Data, Float32AndInt64AreDecodedInOrder) {
  auto files = memory({{"data/a.bin", bytes_of<float>({1.5f, -0.1f, 3e38f})}, {"data/i.bin", bytes_of<int64_t>({-7, 1LL << 53})}});
  auto f = read_values(files, "data/a.bin", DType::Float32, 3);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0], 1.5);
  EXPECT_EQ(f[1], double(-0.1f));  // the float's exact value, not 0.1
  EXPECT_EQ(f[2], double(3e38f));
  auto i = read_values(files, "data/i.bin", DType::Int64, 2);
  EXPECT_EQ(i[0], -7);
  EXPECT_EQ(i[1], 9007199254740992.0);
}

TEST(Data, HalfAndBfloat16AreExact) {
  EXPECT_EQ(half_to_double(0x3c00), 1.0);
  EXPECT_EQ(half_to_double(0xc000), -2.0);
  EXPECT_EQ(half_to_double(0x7bff), 65504.0);      // largest normal
  EXPECT_EQ(half_to_double(0x0001), std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_TRUE(std::isinf(half_to_double(0x7c00)));
  EXPECT_TRUE(std::isnan(half_to_double(0x7e00)));
  EXPECT_EQ(bfloat16_to_double(0x3f80), 1.0);
  EXPECT_EQ(bfloat16_to_double(0xc0a0), -5.0);
  auto files = memory({{"h.bin", bytes_of<uint16_t>({0x3555})}});
  EXPECT_NEAR(read_values(files, "h.bin", DType::Float16, 1)[0], 1.0 / 3, 1e-3);
}

TEST(Data, MissingOrWrongSizedFilesNameTheFile) {
  auto files = memory({{"data/short.bin", std::string(6, '\0')}});
  try {
    read_values(files, "data/short.bin", DType::Float32, 2);
    FAIL() << "a 6-byte file holds no 2 floats";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("data/short.bin has 6 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_values(files, "data/none.bin", DType::Float32, 1), std::runtime_error);
  EXPECT_THROW(read_values(files, "", DType::Float32, 1), std::runtime_error);
}
