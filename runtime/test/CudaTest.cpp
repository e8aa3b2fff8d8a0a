//===- CudaTest.cpp - the CUDA layer, which fails cleanly without CUDA ----===//

#include "act/runtime/Cuda.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace act::rt;

TEST(Cuda, SymbolTableNamesTheDriverApi) {
  size_t count = 0;
  const char *const *names = getCudaSymbolNames(count);
  ASSERT_GE(count, 20u);
  EXPECT_STREQ(names[0], "cuInit");
  bool launch = false;
  for (size_t i = 0; i < count; ++i)
    launch |= std::strcmp(names[i], "cuLaunchKernel") == 0;
  EXPECT_TRUE(launch);
}

TEST(Cuda, LoadReportsWhyOrSucceeds) {
  std::string error;
  bool loaded = loadCuda(error);
  if (loaded) {
    EXPECT_TRUE(error.empty());
    GTEST_SKIP() << "a CUDA driver and GPU are present";
  }
  // Without a driver (or GPU) the reason names it.
  EXPECT_TRUE(error.find("libcuda") != std::string::npos ||
              error.find("GPU") != std::string::npos ||
              error.find("driver") != std::string::npos)
      << error;
}

TEST(CudaDeathTest, EntryPointsAbortWithAMessageWithoutADriver) {
  std::string error;
  if (loadCuda(error))
    GTEST_SKIP() << "a CUDA driver and GPU are present";
  EXPECT_DEATH(mgpuStreamCreate(), "act runtime: ");
}
