//===- FakeCuda.cpp - a CUDA driver stand-in for the runtime's tests ------===//
//
// Every entry point of CudaSymbols.def, over host memory: copies and fills
// run at once; streams, events, modules and functions are dummies, and a
// launch runs nothing. Managed memory is malloc'ed. Device memory is mapped
// without access, so host code that touches a device buffer faults here as
// on a GPU (the copies and fills open it for their own access only).
//
// Stream capture records a capturing stream's launches, copies and fills
// into a graph instead of running them (cuGraphLaunch runs its copies and
// fills, in order, and counts one graph launch); what a real capture
// cannot record fails it, as CUDA does: a synchronization while a stream
// captures, or a copy from or to pageable host memory (pinned memory,
// cuMemHostAlloc, is malloc'ed and may be copied).
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
// driver that has shut down at process exit returns);
// ACT_FAKE_CUDA_REFUSE_CAPTURE=1 makes every stream capture fail.
//
//===----------------------------------------------------------------------===//

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <vector>

#define ACT_FAKE_CAPTURE_UNSUPPORTED                                           \
  900 // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
#define ACT_FAKE_CAPTURE_INVALIDATED                                           \
  901 // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED

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
/// Pinned host allocations (cuMemHostAlloc, malloc'ed): start -> bytes.
std::map<uint64_t, size_t> &pinnedRegions() {
  static std::map<uint64_t, size_t> regions;
  return regions;
}
bool isPinned(uint64_t address) {
  return regionIn(pinnedRegions(), address).second != 0;
}

/// What a capture recorded: a launch (runs nothing here), a copy or a fill.
struct Node {
  enum Kind { Launch, Copy, Fill } kind;
  uint64_t dst = 0, src = 0;
  size_t bytes = 0; // Copy: bytes; Fill: words
  unsigned value = 0;
};
struct Capture {
  std::vector<Node> nodes;
  bool invalidated = false;
};
std::mutex captureMutex;
/// Streams capturing now.
std::map<void *, Capture> &captures() {
  static std::map<void *, Capture> c;
  return c;
}
/// Records `node` if `stream` captures; false if it does not.
bool recorded(void *stream, const Node &node) {
  std::lock_guard<std::mutex> lock(captureMutex);
  auto it = captures().find(stream);
  if (it == captures().end())
    return false;
  it->second.nodes.push_back(node);
  return true;
}
/// A synchronization: invalid while `stream` (null: any stream) captures,
/// and it ends that capture's validity.
int synchronizing(void *stream) {
  std::lock_guard<std::mutex> lock(captureMutex);
  bool any = false;
  for (auto &[s, capture] : captures())
    if (!stream || s == stream) {
      capture.invalidated = true;
      any = true;
    }
  return any ? ACT_FAKE_CAPTURE_UNSUPPORTED : 0;
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
  GraphLaunches,
  PinnedCopies, // a copy from or to pinned host memory
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
  *message = error == 4     ? "driver shutting down"
             : error == 900 ? "operation not permitted when stream is capturing"
             : error == 901
                 ? "operation failed due to a previous error during capture"
                 : "fake error";
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
int cuStreamSynchronize(void *stream) { return synchronizing(stream); }
int cuCtxSynchronize() { return synchronizing(nullptr); }
int cuStreamWaitEvent(void *, void *, unsigned) { return 0; }
int cuEventCreate(void **event, unsigned) {
  *event = handle();
  return 0;
}
int cuEventDestroy_v2(void *) { return 0; }
int cuEventRecord(void *, void *) { return 0; }
int cuEventSynchronize(void *) { return synchronizing(nullptr); }
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
int cuMemHostAlloc(void **ptr, size_t bytes, unsigned) {
  *ptr = std::malloc(bytes);
  if (!*ptr)
    return 2;
  std::lock_guard<std::mutex> lock(regionsMutex);
  pinnedRegions()[reinterpret_cast<uint64_t>(*ptr)] = bytes;
  return 0;
}
int cuMemFreeHost(void *ptr) {
  {
    std::lock_guard<std::mutex> lock(regionsMutex);
    pinnedRegions().erase(reinterpret_cast<uint64_t>(ptr));
  }
  std::free(ptr);
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
  bool pageable =
      !(onGpu(dst) || isPinned(dst)) || !(onGpu(src) || isPinned(src));
  if (pageable && synchronizing(stream))
    return ACT_FAKE_CAPTURE_UNSUPPORTED;
  if (recorded(stream, {Node::Copy, dst, src, bytes}))
    return 0;
  ++counts[onGpu(dst) && onGpu(src) ? DeviceCopies
           : pageable               ? HostCopies
                                    : PinnedCopies];
  queued(stream);
  HostAccess access{dst, src};
  std::memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
              bytes);
  return 0;
}
int cuMemsetD32Async(uint64_t dst, unsigned value, size_t count, void *stream) {
  if (recorded(stream, {Node::Fill, dst, 0, count, value}))
    return 0;
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
  if (recorded(stream, {Node::Launch}))
    return 0;
  ++counts[Launches];
  queued(stream);
  return 0;
}
int cuStreamBeginCapture_v2(void *stream, int) {
  std::lock_guard<std::mutex> lock(captureMutex);
  if (captures().count(stream))
    return ACT_FAKE_CAPTURE_UNSUPPORTED; // already capturing
  captures()[stream] = Capture();
  return 0;
}
int cuStreamEndCapture(void *stream, void **graph) {
  std::lock_guard<std::mutex> lock(captureMutex);
  auto it = captures().find(stream);
  if (it == captures().end())
    return 1; // CUDA_ERROR_INVALID_VALUE: not capturing
  Capture capture = std::move(it->second);
  captures().erase(it);
  *graph = nullptr;
  // ACT_FAKE_CUDA_REFUSE_CAPTURE=1: every capture fails (the runtime's
  // fallback, tested).
  const char *refuse = std::getenv("ACT_FAKE_CUDA_REFUSE_CAPTURE");
  if (capture.invalidated || (refuse && std::string(refuse) == "1"))
    return ACT_FAKE_CAPTURE_INVALIDATED;
  *graph = new std::vector<Node>(std::move(capture.nodes));
  return 0;
}
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long) {
  *exec = new std::vector<Node>(*static_cast<std::vector<Node> *>(graph));
  return 0;
}
int cuGraphLaunch(void *exec, void *stream) {
  ++counts[GraphLaunches];
  queued(stream);
  for (const Node &node : *static_cast<std::vector<Node> *>(exec)) {
    if (node.kind == Node::Copy) {
      HostAccess access{node.dst, node.src};
      std::memcpy(reinterpret_cast<void *>(node.dst),
                  reinterpret_cast<void *>(node.src), node.bytes);
    } else if (node.kind == Node::Fill) {
      HostAccess access{node.dst};
      auto *words = reinterpret_cast<uint32_t *>(node.dst);
      for (size_t i = 0; i < node.bytes; ++i)
        words[i] = node.value;
    }
  }
  return 0;
}
int cuGraphExecDestroy(void *exec) {
  delete static_cast<std::vector<Node> *>(exec);
  return 0;
}
int cuGraphDestroy(void *graph) {
  delete static_cast<std::vector<Node> *>(graph);
  return 0;
}
/// For tests: the nodes of an instantiated graph.
int64_t actFakeCudaGraphNodes(void *exec) {
  return int64_t(static_cast<std::vector<Node> *>(exec)->size());
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
