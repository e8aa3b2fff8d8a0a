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

/// A device block of the GPU backing's pool (device allocations on just
/// for it).
static void *deviceBlock(size_t bytes) {
  bool was = setDeviceAllocations(true);
  void *block = getGpuBacking().allocate(bytes);
  setDeviceAllocations(was);
  return block;
}

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
  auto *device = static_cast<volatile char *>(deviceBlock(100));
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

// A stream-ordered call captured into a CUDA graph: its fills (and
// launches) are recorded, not run, and run at each launch of the graph;
// its blocks come from the graph's own pool, which the shared pool does
// not hand out until the graph is destroyed.
TEST(FakeCuda, AGraphRecordsTheCallAndKeepsItsBlocks) {
  Backing gpu = getGpuBacking();
  bool wasDevice = setDeviceAllocations(true);
  beginStreamOrdered();
  Graph *graph = createGraph();
  GraphStats before = getGraphStats();
  beginGraphCapture(graph);
  void *scratch = gpu.allocate(5000); // the graph's, freed inside it
  mgpuMemset32(scratch, 7, 1250, mgpuStreamCreate());
  gpu.release(scratch);
  void *out = gpu.allocate(4000); // the graph's result
  EXPECT_EQ(out, scratch);        // reused inside the graph
  mgpuMemset32(out, 0x2a, 1000, mgpuStreamCreate());
  std::string error;
  ASSERT_TRUE(endGraphCapture(graph, error)) << error;
  EXPECT_EQ(getGraphStats().captures, before.captures + 1);
  // Nothing ran yet: the result block is still unwritten; the graph runs
  // both fills.
  setDeviceAllocations(false);
  auto *host = static_cast<uint32_t *>(gpu.allocate(4000)); // managed
  launchGraph(graph);
  mgpuMemcpy(host, out, 4000, getOrderedStream());
  EXPECT_EQ(host[0], 0x2au);
  EXPECT_EQ(host[999], 0x2au);
  EXPECT_EQ(getGraphStats().launches, before.launches + 1);
  // The graph's blocks are not the shared pool's...
  setDeviceAllocations(true);
  gpu.release(out);
  void *shared = gpu.allocate(4000);
  EXPECT_NE(shared, out);
  // ... until it is destroyed.
  destroyGraph(graph);
  void *again = gpu.allocate(4000);
  EXPECT_EQ(again, out);
  gpu.release(again);
  gpu.release(shared);
  endStreamOrdered();
  setDeviceAllocations(false);
  gpu.release(host);
  setDeviceAllocations(wasDevice);
}

// What a capture cannot record (here a copy from pageable host memory,
// which CUDA refuses inside a capture) fails the capture with the call
// named, and does not abort: the caller runs the step without a graph.
TEST(FakeCuda, ACaptureThatCannotRecordACallFails) {
  beginStreamOrdered();
  Graph *graph = createGraph();
  void *device = deviceBlock(64);
  beginGraphCapture(graph);
  std::vector<char> pageable(64, 1);
  mgpuMemcpy(device, pageable.data(), 64, getOrderedStream());
  std::string error;
  int64_t failed = getGraphStats().failedCaptures;
  EXPECT_FALSE(endGraphCapture(graph, error));
  EXPECT_NE(error.find("cuMemcpyAsync inside the capture"), std::string::npos)
      << error;
  EXPECT_EQ(getGraphStats().failedCaptures, failed + 1);
  destroyGraph(graph);
  getGpuBacking().release(device);
  endStreamOrdered();
}

// copyToDevice stages through pinned memory: the host's bytes may change
// at once, the copy still has the old ones.
TEST(FakeCuda, CopyToDeviceStagesThroughPinnedMemory) {
  beginStreamOrdered();
  void *stream = getOrderedStream();
  void *device = deviceBlock(4096);
  auto *host = static_cast<uint64_t *>(getGpuBacking().allocate(80000));
  std::vector<uint64_t> values(10000, 0);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = i * 3;
  copyToDevice(device, values.data(), 24, stream);
  values[1] = 99;
  mgpuMemcpy(host, device, 24, stream);
  EXPECT_EQ(host[1], 3u);
  // Larger than a staging buffer so far: it grows.
  void *big = deviceBlock(80000);
  copyToDevice(big, values.data(), 80000, stream);
  mgpuMemcpy(host, big, 80000, stream);
  EXPECT_EQ(host[9999], 9999u * 3);
  endStreamOrdered();
  getGpuBacking().release(big);
  getGpuBacking().release(device);
  getGpuBacking().release(host);
}

int main(int argc, char **argv) {
  // Before the runtime's first call, which loads the driver once.
  setenv("ACT_CUDA_DRIVER", ACT_FAKE_CUDA_PATH, 1);
  setenv("ACT_CUBLAS_LIBRARY", ACT_FAKE_CUDA_LIBRARIES_PATH, 1);
  setenv("ACT_CUDNN_LIBRARY", ACT_FAKE_CUDA_LIBRARIES_PATH, 1);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
