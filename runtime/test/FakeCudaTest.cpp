//===- FakeCudaTest.cpp - the CUDA layer over a stand-in driver -----------===//
//
// The runtime's mgpu* entry points over FakeCuda.cpp's driver (host memory),
// loaded through ACT_CUDA_DRIVER: what they pass to the driver and how they
// handle its errors, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "act/runtime/Cuda.h"
#include "act/runtime/Memory.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace act::rt;

TEST(FakeCuda, TheDriverNamedByTheEnvironmentLoads) {
  std::string error;
  EXPECT_TRUE(loadCuda(error)) << error;
}

// Device memory is not the host's (as on a GPU): a host access faults.
TEST(FakeCudaDeathTest, TheHostCannotTouchDeviceMemory) {
  auto *device =
      static_cast<volatile float *>(mgpuMemAlloc(64, nullptr, false));
  EXPECT_DEATH(device[3] = 1.0f, "");
  auto *managed = static_cast<float *>(mgpuMemAlloc(64, nullptr, true));
  managed[3] = 1.0f;
  EXPECT_EQ(managed[3], 1.0f);
  mgpuMemFree(const_cast<float *>(device), nullptr);
  mgpuMemFree(managed, nullptr);
}

TEST(FakeCuda, MemoryEntryPointsPassSizesAndCounts) {
  void *stream = mgpuStreamCreate();
  auto *device = static_cast<uint32_t *>(mgpuMemAlloc(64, stream, false));
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(mgpuMemAlloc(0, stream, false), nullptr);
  mgpuMemset32(device, 0xdeadbeefu, 16, stream);
  std::vector<uint32_t> host(16);
  mgpuMemcpy(host.data(), device, 64, stream);
  mgpuStreamSynchronize(stream);
  for (uint32_t word : host)
    EXPECT_EQ(word, 0xdeadbeefu);
  mgpuMemFree(device, stream);
  mgpuStreamDestroy(stream);
}

// A destroyed stream serves the next create (the lowered step creates and
// destroys one per run of launches).
TEST(FakeCuda, StreamsAreReused) {
  void *stream = mgpuStreamCreate();
  mgpuStreamDestroy(stream);
  void *again = mgpuStreamCreate();
  EXPECT_EQ(again, stream);
  void *other = mgpuStreamCreate();
  EXPECT_NE(other, stream);
  mgpuStreamDestroy(other);
  mgpuStreamDestroy(again);
}

// The managed backing keeps freed blocks for requests that fit them (at
// least half their size) instead of freeing them (cuMemFree synchronizes
// the device).
TEST(FakeCuda, ManagedBlocksAreReused) {
  Backing managed = getGpuBacking();
  void *a = managed.allocate(100000);
  managed.release(a);
  void *b = managed.allocate(60000);
  EXPECT_EQ(b, a);
  void *c = managed.allocate(100000);
  EXPECT_NE(c, a);
  managed.release(c);
  void *d = managed.allocate(20000); // under half of the cached 100,352
  EXPECT_NE(d, c);
  managed.release(d);
  managed.release(b);
  void *e = managed.allocate(100000);
  EXPECT_TRUE(e == a || e == c);
  managed.release(e);
}

// With device allocations on (a step on device tensors), the backing hands
// out plain device memory, cached apart from the managed blocks and
// counted in the device pool's statistics; off, managed memory again.
TEST(FakeCuda, DeviceBlocksComeFromTheirOwnPool) {
  Backing gpu = getGpuBacking();
  DevicePoolStats before = getDevicePoolStats();
  EXPECT_FALSE(setDeviceAllocations(true));
  void *device = gpu.allocate(3000);
  EXPECT_TRUE(isDeviceBlock(device));
  DevicePoolStats grown = getDevicePoolStats();
  EXPECT_EQ(grown.reservedBytes, before.reservedBytes + 3072);
  EXPECT_EQ(grown.blocks, before.blocks + 1);
  EXPECT_GE(grown.peakReservedBytes, grown.reservedBytes);
  gpu.release(device);
  EXPECT_EQ(gpu.allocate(2000), device); // cached, not allocated again
  EXPECT_EQ(getDevicePoolStats().blocks, grown.blocks);
  EXPECT_TRUE(setDeviceAllocations(false));
  void *managed = gpu.allocate(2000);
  EXPECT_NE(managed, device);
  EXPECT_FALSE(isDeviceBlock(managed));
  static_cast<char *>(managed)[0] = 1; // the host reaches managed memory
  gpu.release(managed);
  gpu.release(device);
  EXPECT_EQ(getDevicePoolStats().reservedBytes, grown.reservedBytes);
}

TEST(FakeCudaDeathTest, TheHostCannotTouchAPooledDeviceBlock) {
  Backing gpu = getGpuBacking();
  setDeviceAllocations(true);
  auto *device = static_cast<volatile char *>(gpu.allocate(100));
  setDeviceAllocations(false);
  EXPECT_DEATH(device[0] = 1, "");
  gpu.release(const_cast<char *>(device));
}

// Stream-ordered mode on the caller's stream: the step's streams are that
// one; the runtime's own otherwise.
TEST(FakeCuda, StreamOrderedModeUsesTheCallersStream) {
  beginStreamOrdered();
  void *own = mgpuStreamCreate();
  endStreamOrdered();
  void *callers = mgpuStreamCreate(); // another stream
  EXPECT_NE(callers, own);
  beginStreamOrdered(callers);
  EXPECT_EQ(mgpuStreamCreate(), callers);
  EXPECT_EQ(getOrderedStream(), callers);
  endStreamOrdered(/*wait=*/false);
  beginStreamOrdered();
  EXPECT_NE(mgpuStreamCreate(), callers);
  endStreamOrdered();
  mgpuStreamDestroy(callers);
}

// A module's destructor can run after the driver shut down at process exit
// (an H100 answered CUDA_ERROR_DEINITIALIZED): that is not an error.
TEST(FakeCuda, UnloadAfterTheDriverShutDownIsQuiet) {
  setenv("ACT_FAKE_CUDA_UNLOAD_ERROR", "4", 1);
  mgpuModuleUnload(mgpuModuleLoad(nullptr, 0));
  unsetenv("ACT_FAKE_CUDA_UNLOAD_ERROR");
}

TEST(FakeCudaDeathTest, OtherUnloadErrorsAbortWithTheirMessage) {
  setenv("ACT_FAKE_CUDA_UNLOAD_ERROR", "700", 1);
  EXPECT_DEATH(mgpuModuleUnload(mgpuModuleLoad(nullptr, 0)),
               "act runtime: cuModuleUnload failed: fake error \\(700\\)");
  unsetenv("ACT_FAKE_CUDA_UNLOAD_ERROR");
}

// Stream-ordered mode (a step whose host code touches no buffer): one
// stream for the step, the host's synchronizations inside it skipped, one
// at its end; outside it nothing is skipped.
TEST(FakeCuda, StreamOrderedModeSkipsTheStepsSynchronizations) {
  int64_t before = getSkippedSynchronizations();
  mgpuStreamSynchronize(mgpuStreamCreate());
  EXPECT_EQ(getSkippedSynchronizations(), before);
  beginStreamOrdered();
  void *a = mgpuStreamCreate();
  mgpuStreamDestroy(a);
  void *b = mgpuStreamCreate();
  EXPECT_EQ(a, b);
  mgpuStreamSynchronize(a);
  void *event = mgpuEventCreate();
  mgpuEventRecord(event, a);
  mgpuEventSynchronize(event);
  EXPECT_EQ(getSkippedSynchronizations(), before + 2);
  endStreamOrdered();
  mgpuStreamSynchronize(b);
  mgpuEventSynchronize(event);
  mgpuEventDestroy(event);
  EXPECT_EQ(getSkippedSynchronizations(), before + 2);
}

int main(int argc, char **argv) {
  // Before the runtime's first call, which loads the driver once.
  setenv("ACT_CUDA_DRIVER", ACT_FAKE_CUDA_PATH, 1);
  setenv("ACT_CUBLAS_LIBRARY", ACT_FAKE_CUDA_LIBRARIES_PATH, 1);
  setenv("ACT_CUDNN_LIBRARY", ACT_FAKE_CUDA_LIBRARIES_PATH, 1);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
