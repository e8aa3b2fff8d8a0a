//===- NpyTest.cpp - .npy round trips and errors ---------------------------===//

#include "act/runtime/Npy.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <cstring>
#include <fstream>

using namespace act::rt;

static std::string tempPath(const char *name) {
  return std::string(::testing::TempDir()) + name;
}

TEST(Npy, RoundTrip) {
  NpyArray a;
  a.descr = "<f4";
  a.shape = {3, 5};
  a.data.resize(15 * 4);
  for (int i = 0; i < 15; ++i) {
    float v = float(i) * 0.5f - 2.0f;
    std::memcpy(&a.data[i * 4], &v, 4);
  }
  std::string error, path = tempPath("act_npy_roundtrip.npy");
  ASSERT_TRUE(writeNpy(path, a, error)) << error;
  NpyArray b;
  ASSERT_TRUE(readNpy(path, b, error)) << error;
  EXPECT_EQ(b.descr, "<f4");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(b.data, a.data);
}

TEST(Npy, ScalarAndVector) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{}, std::vector<int64_t>{7}}) {
    NpyArray a;
    a.descr = "<i8";
    a.shape = shape;
    a.data.assign(size_t(a.numElements()) * 8, 3);
    std::string error, path = tempPath("act_npy_shape.npy");
    ASSERT_TRUE(writeNpy(path, a, error)) << error;
    NpyArray b;
    ASSERT_TRUE(readNpy(path, b, error)) << error;
    EXPECT_EQ(b.shape, shape);
    EXPECT_EQ(b.data, a.data);
  }
}

TEST(Npy, Errors) {
  NpyArray a;
  std::string error;
  EXPECT_FALSE(readNpy("/nonexistent/x.npy", a, error));
  EXPECT_NE(error.find("cannot open"), std::string::npos);
  std::string path = tempPath("act_npy_bad.npy");
  std::ofstream(path) << "not numpy";
  EXPECT_FALSE(readNpy(path, a, error));
  EXPECT_NE(error.find("not a .npy file"), std::string::npos);
  // Truncated data.
  NpyArray big;
  big.descr = "<f8";
  big.shape = {100};
  big.data.resize(800);
  ASSERT_TRUE(writeNpy(path, big, error));
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 8);
  EXPECT_FALSE(readNpy(path, a, error));
  EXPECT_NE(error.find("expected 800 bytes"), std::string::npos);
}
