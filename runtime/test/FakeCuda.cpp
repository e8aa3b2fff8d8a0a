//===- FakeCuda.cpp - a CUDA driver stand-in for the runtime's tests ------===//
//
// Every entry point of CudaSymbols.def, over host memory: copies and fills
// run at once; streams, events, modules and functions are dummies, and a
// launch runs nothing. Managed memory is malloc'ed. Device memory is mapped
// without access, so host code that touches a device buffer faults here as
// on a GPU (the copies and fills open it for their own access only).
//
// It counts what it is asked to do (actFakeCudaGetCounts, the work queued
// on one stream: actFakeCudaWorkOn), so tests can show that a step on
// device tensors copies nothing from or to the host and runs on the
// caller's stream.
//
// FakeCudaTest loads it through ACT_CUDA_DRIVER, so the runtime's CUDA
// layer (the argument passing, the error paths) is tested without a GPU;
// test/GPU/gpu-check.test runs gpu_check over it, whose host code must not
// read or write the device buffers it is given. ACT_FAKE_CUDA_UNLOAD_ERROR
// sets what cuModuleUnload returns (4, CUDA_ERROR_DEINITIALIZED, is what a
// driver that has shut down at process exit returns).
//
//===----------------------------------------------------------------------===//

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <vector>

namespace {
int dummy;
void *handle() { return &dummy; }

/// Device allocations: start -> mapped bytes.
std::map<uint64_t, size_t> &deviceRegions() {
  static std::map<uint64_t, size_t> regions;
  return regions;
}
/// Managed allocations (malloc'ed): start -> bytes.
std::map<uint64_t, size_t> &managedRegions() {
  static std::map<uint64_t, size_t> regions;
  return regions;
}
std::mutex regionsMutex;

/// The region of `regions` holding `address`, or {0, 0}.
std::pair<uint64_t, size_t> regionIn(std::map<uint64_t, size_t> &regions,
                                     uint64_t address) {
  std::lock_guard<std::mutex> lock(regionsMutex);
  auto it = regions.upper_bound(address);
  if (it == regions.begin())
    return {0, 0};
  --it;
  if (address >= it->first + it->second)
    return {0, 0};
  return *it;
}
/// The device region holding `address`, or {0, 0}.
std::pair<uint64_t, size_t> regionOf(uint64_t address) {
  return regionIn(deviceRegions(), address);
}
bool isManaged(uint64_t address) {
  return regionIn(managedRegions(), address).second != 0;
}

/// Opens the device regions behind `addresses` for the host while it lives.
struct HostAccess {
  explicit HostAccess(std::initializer_list<uint64_t> addresses) {
    for (uint64_t a : addresses)
      if (auto region = regionOf(a); region.second) {
        mprotect(reinterpret_cast<void *>(region.first), region.second,
                 PROT_READ | PROT_WRITE);
        opened.push_back(region);
      }
  }
  ~HostAccess() {
    for (auto [start, bytes] : opened)
      mprotect(reinterpret_cast<void *>(start), bytes, PROT_NONE);
  }
  std::vector<std::pair<uint64_t, size_t>> opened;
};
/// What the driver was asked to do (actFakeCudaGetCounts's order).
enum Count {
  Launches,
  DeviceAllocations,
  ManagedAllocations,
  HostCopies,   // a copy from or to plain host memory
  DeviceCopies, // device or managed memory on both sides
  Memsets,
  NumCounts
};
std::atomic<int64_t> counts[NumCounts];
std::mutex streamsMutex;
/// Launches, copies and fills queued per stream.
std::map<void *, int64_t> &workOnStream() {
  static std::map<void *, int64_t> work;
  return work;
}
void queued(void *stream) {
  std::lock_guard<std::mutex> lock(streamsMutex);
  ++workOnStream()[stream];
}
} // namespace

extern "C" {
int cuInit(unsigned) { return 0; }
int cuDeviceGet(int *device, int) {
  *device = 0;
  return 0;
}
int cuDevicePrimaryCtxRetain(void **context, int) {
  *context = handle();
  return 0;
}
int cuCtxSetCurrent(void *) { return 0; }
int cuGetErrorString(int error, const char **message) {
  *message = error == 4 ? "driver shutting down" : "fake error";
  return 0;
}
int cuStreamCreate(void **stream, unsigned) {
  // Each stream its own handle (the runtime keeps destroyed ones).
  static char streams[256];
  static std::atomic<unsigned> next{0};
  *stream = &streams[next++ % 256];
  return 0;
}
int cuStreamDestroy_v2(void *) { return 0; }
int cuStreamSynchronize(void *) { return 0; }
int cuCtxSynchronize() { return 0; }
int cuStreamWaitEvent(void *, void *, unsigned) { return 0; }
int cuEventCreate(void **event, unsigned) {
  *event = handle();
  return 0;
}
int cuEventDestroy_v2(void *) { return 0; }
int cuEventRecord(void *, void *) { return 0; }
int cuEventSynchronize(void *) { return 0; }
int cuMemAlloc_v2(uint64_t *ptr, size_t bytes) {
  void *p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return 2; // CUDA_ERROR_OUT_OF_MEMORY
  *ptr = reinterpret_cast<uint64_t>(p);
  ++counts[DeviceAllocations];
  std::lock_guard<std::mutex> lock(regionsMutex);
  deviceRegions()[*ptr] = bytes;
  return 0;
}
int cuMemAllocManaged(uint64_t *ptr, size_t bytes, unsigned) {
  *ptr = reinterpret_cast<uint64_t>(std::malloc(bytes));
  if (!*ptr)
    return 2;
  ++counts[ManagedAllocations];
  std::lock_guard<std::mutex> lock(regionsMutex);
  managedRegions()[*ptr] = bytes;
  return 0;
}
int cuMemFree_v2(uint64_t ptr) {
  if (auto region = regionOf(ptr); region.second) {
    munmap(reinterpret_cast<void *>(region.first), region.second);
    std::lock_guard<std::mutex> lock(regionsMutex);
    deviceRegions().erase(region.first);
    return 0;
  }
  {
    std::lock_guard<std::mutex> lock(regionsMutex);
    managedRegions().erase(ptr);
  }
  std::free(reinterpret_cast<void *>(ptr));
  return 0;
}
int cuMemcpyAsync(uint64_t dst, uint64_t src, size_t bytes, void *stream) {
  auto onGpu = [](uint64_t a) { return regionOf(a).second || isManaged(a); };
  ++counts[onGpu(dst) && onGpu(src) ? DeviceCopies : HostCopies];
  queued(stream);
  HostAccess access{dst, src};
  std::memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
              bytes);
  return 0;
}
int cuMemsetD32Async(uint64_t dst, unsigned value, size_t count, void *stream) {
  ++counts[Memsets];
  queued(stream);
  HostAccess access{dst};
  auto *words = reinterpret_cast<uint32_t *>(dst);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  return 0;
}
int cuModuleLoadData(void **module, const void *) {
  *module = handle();
  return 0;
}
int cuModuleLoadDataEx(void **module, const void *, unsigned, int *, void **) {
  *module = handle();
  return 0;
}
int cuModuleUnload(void *) {
  const char *error = std::getenv("ACT_FAKE_CUDA_UNLOAD_ERROR");
  return error ? std::atoi(error) : 0;
}
int cuModuleGetFunction(void **function, void *, const char *) {
  *function = handle();
  return 0;
}
int cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, void *stream, void **, void **) {
  ++counts[Launches];
  queued(stream);
  return 0;
}

// For tests (not CUDA's): the counts in Count's order, and the work queued
// on `stream`.
void actFakeCudaGetCounts(int64_t *out) {
  for (int i = 0; i < NumCounts; ++i)
    out[i] = counts[i].load();
}
int64_t actFakeCudaWorkOn(void *stream) {
  std::lock_guard<std::mutex> lock(streamsMutex);
  auto it = workOnStream().find(stream);
  return it == workOnStream().end() ? 0 : it->second;
}
/// 1: device memory, 2: managed memory, 0: neither.
int actFakeCudaMemoryKind(uint64_t address) {
  return regionOf(address).second ? 1 : isManaged(address) ? 2 : 0;
}

} // extern "C"
