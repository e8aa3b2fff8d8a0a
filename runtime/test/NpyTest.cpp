//===- NpyTest.cpp - .npy round trips and errors --------------------------===//

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
  EXPECT_NE(error.find("need 800 bytes of data, the file holds 792"),
            std::string::npos)
      << error;
}

/// A .npy file with `header` (the dict, padded and ended here), format
/// version `major`, and `dataBytes` zero bytes of data.
static std::string writeRaw(const char *name, std::string header,
                            size_t dataBytes, int major = 1) {
  std::string path = tempPath(name);
  header += '\n';
  std::string bytes = std::string("\x93NUMPY", 6) + char(major) + '\0';
  if (major == 1)
    bytes += std::string{char(header.size() & 0xff), char(header.size() >> 8)};
  else
    bytes +=
        std::string{char(header.size() & 0xff), char(header.size() >> 8), 0, 0};
  bytes += header + std::string(dataBytes, '\0');
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

static std::string readError(const std::string &path) {
  NpyArray a;
  std::string error;
  EXPECT_FALSE(readNpy(path, a, error)) << path;
  return error;
}

// Headers that claim more than the file holds are refused before anything
// is allocated (these used to abort with "out of memory", throw
// std::out_of_range, or take 8.5 GB before failing).
TEST(Npy, ClaimsAreCheckedAgainstTheFile) {
  EXPECT_NE(readError(writeRaw("act_npy_huge.npy",
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (2147483648, 64), }",
                               512))
                .find("need 549755813888 bytes of data, the file holds 512"),
            std::string::npos);
  EXPECT_NE(readError(writeRaw("act_npy_overflow.npy",
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (99999999999999999999999, 64), }",
                               0))
                .find("does not fit in 64 bits"),
            std::string::npos);
  EXPECT_NE(readError(writeRaw("act_npy_bool.npy",
                               "{'descr': '|b1', 'fortran_order': False, "
                               "'shape': (2147483648,), }",
                               16))
                .find("the file holds 16"),
            std::string::npos);
  // Zero elements need no data, whatever the other dimensions.
  NpyArray a;
  std::string error;
  EXPECT_TRUE(readNpy(writeRaw("act_npy_empty.npy",
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (4294967296, 0), }",
                               0),
                      a, error))
      << error;
}

TEST(Npy, MalformedHeadersAreRefused) {
  EXPECT_NE(readError(writeRaw("act_npy_neg.npy",
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (-3, 4), }",
                               48))
                .find("not a non-negative integer"),
            std::string::npos);
  std::string path = tempPath("act_npy_unterminated.npy");
  {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8) +
                        std::string{char(header.size()), 0} + header;
    std::ofstream(path, std::ios::binary) << bytes;
  }
  EXPECT_NE(readError(path).find("unterminated header"), std::string::npos);
  EXPECT_NE(readError(writeRaw("act_npy_fortran.npy",
                               "{'descr': '<f4', 'fortran_order': True, "
                               "'shape': (2, 3), }",
                               24))
                .find("Fortran order is not supported"),
            std::string::npos);
  EXPECT_NE(readError(writeRaw("act_npy_yes.npy",
                               "{'descr': '<f4', 'fortran_order': 'yes', "
                               "'shape': (2, 3), }",
                               24))
                .find("expected True or False"),
            std::string::npos);
  EXPECT_NE(readError(writeRaw("act_npy_v9.npy",
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (2, 3), }",
                               24, /*major=*/9))
                .find("unsupported .npy format version 9.0"),
            std::string::npos);
  EXPECT_NE(readError(writeRaw("act_npy_dtype.npy",
                               "{'descr': '>f4', 'fortran_order': False, "
                               "'shape': (2, 3), }",
                               24))
                .find("unsupported dtype '>f4'"),
            std::string::npos);
  EXPECT_NE(readError(writeRaw("act_npy_key.npy",
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (2, 3), 'extra': 1}",
                               24))
                .find("unknown key 'extra'"),
            std::string::npos);
  // Version 2.0 (a 4-byte header length) is read.
  NpyArray a;
  std::string error;
  EXPECT_TRUE(readNpy(writeRaw("act_npy_v2.npy",
                               "{'descr': '<i8', 'fortran_order': False, "
                               "'shape': (3,), }",
                               24, /*major=*/2),
                      a, error))
      << error;
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  EXPECT_NE(readError("/dev/zero").find("not"), std::string::npos);
}
