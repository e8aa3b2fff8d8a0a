//===- Cuda.cpp - CUDA host entry points over a dlopen'ed driver ----------===//

#include "act/runtime/Cuda.h"
#include "act/runtime/CudaLibraries.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct Driver {
#define ACT_CUDA_SYMBOL(name, ret, params) ret(*name) params = nullptr;
#include "act/runtime/CudaSymbols.def"
#undef ACT_CUDA_SYMBOL
  void *context = nullptr;
  bool loaded = false;
  std::string error;
};

Driver &driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    // ACT_CUDA_DRIVER names another driver library (a path): a driver
    // outside the loader's path, or the tests' stand-in.
    const char *name = std::getenv("ACT_CUDA_DRIVER");
    if (!name || !*name)
      name = "libcuda.so.1";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = dlerror();
      d.error = std::string("cannot load the CUDA driver (") + name +
                "): " + (why ? why : "unknown error");
      return;
    }
#define ACT_CUDA_SYMBOL(name, ret, params)                                     \
  d.name = reinterpret_cast<ret(*) params>(dlsym(lib, #name));                 \
  if (!d.name) {                                                               \
    d.error = "the CUDA driver lacks " #name;                                  \
    return;                                                                    \
  }
#include "act/runtime/CudaSymbols.def"
#undef ACT_CUDA_SYMBOL
    int device = 0;
    if (int r = d.cuInit(0)) {
      d.error = "cuInit failed (error " + std::to_string(r) +
                "): no usable NVIDIA GPU or driver";
      return;
    }
    // The device's primary context: the one the CUDA runtime (PyTorch)
    // uses, so that its device pointers and streams are valid in act's
    // steps (memory of another context is not).
    if (d.cuDeviceGet(&device, 0) ||
        d.cuDevicePrimaryCtxRetain(&d.context, device)) {
      d.error = "cannot retain the primary CUDA context of device 0";
      return;
    }
    d.loaded = true;
  });
  return d;
}

/// The driver, or a clear message and abort: lowered code has no way to
/// handle a missing GPU.
Driver &require() {
  Driver &d = driver();
  if (!d.loaded) {
    std::fprintf(stderr, "act runtime: %s\n", d.error.c_str());
    std::abort();
  }
  d.cuCtxSetCurrent(d.context);
  return d;
}

/// Whether a CUDA graph is being captured (beginGraphCapture), and the
/// first call the capture could not record.
struct CaptureState {
  std::atomic<bool> active{false};
  std::string refused;
};
CaptureState &captureState() {
  static auto *c = new CaptureState;
  return *c;
}

void check(int result, const char *what) {
  if (result == 0)
    return;
  // CUDA_ERROR_STREAM_CAPTURE_* and CUDA_ERROR_CAPTURED_EVENT: a call the
  // capture cannot record ends it, not the process; endGraphCapture says
  // which, and the caller runs the step without a graph.
  if (captureState().active && result >= 900 && result <= 908) {
    if (captureState().refused.empty())
      captureState().refused = what;
    return;
  }
  const char *message = "unknown error";
  if (driver().cuGetErrorString)
    driver().cuGetErrorString(result, &message);
  std::fprintf(stderr, "act runtime: %s failed: %s (%d)\n", what, message,
               result);
  std::abort();
}

/// Streams mgpuStreamDestroy kept for the next mgpuStreamCreate.
std::vector<void *> &streamPool() {
  static auto *pool = new std::vector<void *>;
  return *pool;
}
std::mutex &streamPoolMutex() {
  static auto *mutex = new std::mutex;
  return *mutex;
}

/// Stream-ordered mode (beginStreamOrdered): its stream (the caller's, or
/// the runtime's own, created once), and the stream of the call before.
struct StreamOrdered {
  bool active = false;
  void *stream = nullptr, *own = nullptr, *previous = nullptr;
  std::atomic<int64_t> skipped{0};
};
StreamOrdered &streamOrdered() {
  static auto *s = new StreamOrdered;
  return *s;
}

} // namespace

void act::rt::beginStreamOrdered(void *stream) {
  StreamOrdered &s = streamOrdered();
  if (!stream) {
    if (!s.own)
      check(require().cuStreamCreate(&s.own, 0), "cuStreamCreate");
    stream = s.own;
  }
  // Blocks the last call freed on another stream may still be read there:
  // that stream's work is done before this call's reuses them.
  if (s.previous && s.previous != stream)
    check(require().cuStreamSynchronize(s.previous), "cuStreamSynchronize");
  s.stream = s.previous = stream;
  s.active = true;
  // ACT_GPU_LIBRARY_STREAM=legacy: cuBLAS/cuDNN stay on CUDA's legacy
  // default stream (which the step stream, a blocking one, orders with);
  // for bisecting, see docs/Running.md.
  const char *library = std::getenv("ACT_GPU_LIBRARY_STREAM");
  setLibraryStream(library && std::string(library) == "legacy" ? nullptr
                                                               : s.stream);
}

void act::rt::endStreamOrdered(bool wait) {
  StreamOrdered &s = streamOrdered();
  s.active = false;
  setLibraryStream(nullptr);
  // The whole context, not only the step stream: whatever a library queued
  // elsewhere is done before the host reads a result.
  if (wait)
    check(require().cuCtxSynchronize(), "cuCtxSynchronize");
}

void *act::rt::getOrderedStream() { return streamOrdered().stream; }

int64_t act::rt::getSkippedSynchronizations() {
  return streamOrdered().skipped.load();
}

bool act::rt::loadCuda(std::string &error) {
  Driver &d = driver();
  error = d.error;
  return d.loaded;
}

const char *const *act::rt::getCudaSymbolNames(size_t &count) {
  static const char *const names[] = {
#define ACT_CUDA_SYMBOL(name, ret, params) #name,
#include "act/runtime/CudaSymbols.def"
#undef ACT_CUDA_SYMBOL
  };
  count = sizeof(names) / sizeof(names[0]);
  return names;
}

extern "C" {

// The lowered step creates a stream for each run of launches between two
// host synchronizations and destroys it there (gpu-async-region): 370 per
// VGG step. Destroyed streams are kept for the next create instead (work
// still queued on one stays ordered before what comes after).
void *mgpuStreamCreate() {
  if (streamOrdered().active)
    return streamOrdered().stream;
  {
    std::lock_guard<std::mutex> lock(streamPoolMutex());
    if (!streamPool().empty()) {
      void *stream = streamPool().back();
      streamPool().pop_back();
      return stream;
    }
  }
  void *stream = nullptr;
  check(require().cuStreamCreate(&stream, 0), "cuStreamCreate");
  return stream;
}
void mgpuStreamDestroy(void *stream) {
  if (streamOrdered().active && stream == streamOrdered().stream)
    return;
  std::lock_guard<std::mutex> lock(streamPoolMutex());
  streamPool().push_back(stream);
}
void mgpuStreamSynchronize(void *stream) {
  if (streamOrdered().active) {
    ++streamOrdered().skipped;
    return;
  }
  check(require().cuStreamSynchronize(stream), "cuStreamSynchronize");
}
void mgpuStreamWaitEvent(void *stream, void *event) {
  check(require().cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}
void *mgpuEventCreate() {
  void *event = nullptr;
  check(require().cuEventCreate(&event, /*CU_EVENT_DISABLE_TIMING=*/2),
        "cuEventCreate");
  return event;
}
void mgpuEventDestroy(void *event) {
  check(require().cuEventDestroy_v2(event), "cuEventDestroy");
}
void mgpuEventSynchronize(void *event) {
  if (streamOrdered().active) {
    ++streamOrdered().skipped;
    return;
  }
  check(require().cuEventSynchronize(event), "cuEventSynchronize");
}
void mgpuEventRecord(void *event, void *stream) {
  check(require().cuEventRecord(event, stream), "cuEventRecord");
}
void *mgpuMemAlloc(uint64_t sizeBytes, void *, bool isHostShared) {
  uint64_t ptr = 0;
  if (sizeBytes == 0)
    return nullptr;
  if (isHostShared)
    check(require().cuMemAllocManaged(&ptr, sizeBytes,
                                      /*CU_MEM_ATTACH_GLOBAL=*/1),
          "cuMemAllocManaged");
  else
    check(require().cuMemAlloc_v2(&ptr, sizeBytes), "cuMemAlloc");
  return reinterpret_cast<void *>(ptr);
}
void mgpuMemFree(void *ptr, void *) {
  if (ptr)
    check(require().cuMemFree_v2(reinterpret_cast<uint64_t>(ptr)), "cuMemFree");
}
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  check(require().cuMemcpyAsync(reinterpret_cast<uint64_t>(dst),
                                reinterpret_cast<uint64_t>(src), sizeBytes,
                                stream),
        "cuMemcpyAsync");
}
void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream) {
  check(require().cuMemsetD32Async(reinterpret_cast<uint64_t>(dst), value,
                                   count, stream),
        "cuMemsetD32Async");
}
void *mgpuModuleLoad(void *data, size_t) {
  void *module = nullptr;
  check(require().cuModuleLoadData(&module, data), "cuModuleLoadData");
  return module;
}
void *mgpuModuleLoadJIT(void *data, int optLevel) {
  void *module = nullptr;
  int options[] = {/*CU_JIT_OPTIMIZATION_LEVEL=*/7};
  void *values[] = {reinterpret_cast<void *>(intptr_t(optLevel))};
  check(require().cuModuleLoadDataEx(&module, data, 1, options, values),
        "cuModuleLoadDataEx (PTX JIT)");
  return module;
}
void mgpuModuleUnload(void *module) {
  // The lowered module unloads its kernels from a global destructor. At
  // process exit that can run after the driver has shut down, which
  // unloaded every module itself (an H100: CUDA_ERROR_DEINITIALIZED, and the
  // abort lost the program's buffered output).
  constexpr int cudaErrorDeinitialized = 4;
  int result = require().cuModuleUnload(module);
  if (result != cudaErrorDeinitialized)
    check(result, "cuModuleUnload");
}
void *mgpuModuleGetFunction(void *module, const char *name) {
  void *function = nullptr;
  check(require().cuModuleGetFunction(&function, module, name),
        "cuModuleGetFunction");
  return function;
}
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t) {
  check(require().cuLaunchKernel(function, unsigned(gridX), unsigned(gridY),
                                 unsigned(gridZ), unsigned(blockX),
                                 unsigned(blockY), unsigned(blockZ),
                                 unsigned(smem), stream, params, extra),
        "cuLaunchKernel");
}

} // extern "C"

namespace {
/// Freed blocks by size, for the next allocations (as PyTorch's caching
/// allocator): cuMemFree synchronizes the whole device, and a fresh managed
/// block's pages fault on the GPU at their first touch. A step frees and
/// allocates the same sizes every time. Never given back before the
/// process ends (leaked: the driver may be gone by then). Two kinds: CUDA
/// managed memory, and plain device memory for steps whose host code
/// touches no buffer (setDeviceAllocations); and per kind, the shared pool
/// and each CUDA graph's own (createGraph).
struct BlockCache {
  std::mutex mutex;
  /// Free blocks by size, per kind (0: managed, 1: device) and pool (null:
  /// the shared one).
  std::map<act::rt::Graph *, std::multimap<size_t, void *>> free[2];
  struct Block {
    size_t size;
    bool device;
    act::rt::Graph *pool;
  };
  std::unordered_map<void *, Block> blocks;
  /// Device pool: bytes held (live and cached), their most, and blocks.
  int64_t deviceReserved = 0, devicePeakReserved = 0, deviceBlocks = 0;
};
BlockCache &blockCache() {
  static auto *cache = new BlockCache;
  return *cache;
}
thread_local bool deviceAllocations = false;
thread_local act::rt::Graph *graphPool = nullptr;
} // namespace

static void *allocateBlock(size_t bytes) {
  // 512-byte steps, then whole MiB above 1 MiB; a cached block serves a
  // request of at least half its size.
  size_t mib = size_t(1) << 20;
  size_t size =
      bytes <= mib ? (bytes + 511) / 512 * 512 : (bytes + mib - 1) / mib * mib;
  bool device = deviceAllocations;
  act::rt::Graph *pool = graphPool;
  BlockCache &cache = blockCache();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto &free = cache.free[device][pool];
    auto it = free.lower_bound(size);
    if (it != free.end() && it->first / 2 <= size) {
      void *block = it->second;
      free.erase(it);
      return block;
    }
  }
  void *block = mgpuMemAlloc(size, nullptr, /*isHostShared=*/!device);
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.blocks[block] = {size, device, pool};
  if (device) {
    cache.deviceReserved += int64_t(size);
    cache.devicePeakReserved =
        std::max(cache.devicePeakReserved, cache.deviceReserved);
    ++cache.deviceBlocks;
  }
  return block;
}
static void releaseBlock(void *base) {
  BlockCache &cache = blockCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  const BlockCache::Block &block = cache.blocks.at(base);
  cache.free[block.device][block.pool].emplace(block.size, base);
}

bool act::rt::setDeviceAllocations(bool on) {
  bool previous = deviceAllocations;
  deviceAllocations = on;
  return previous;
}

bool act::rt::isDeviceBlock(const void *base) {
  BlockCache &cache = blockCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.blocks.find(const_cast<void *>(base));
  return it != cache.blocks.end() && it->second.device;
}

act::rt::DevicePoolStats act::rt::getDevicePoolStats() {
  BlockCache &cache = blockCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  return {cache.deviceReserved, cache.devicePeakReserved, cache.deviceBlocks};
}

//===----------------------------------------------------------------------===//
// Pinned staging and CUDA graphs
//===----------------------------------------------------------------------===//

namespace {
/// A ring of pinned staging buffers for copyToDevice, each with the event
/// of the last copy that read it.
struct Staging {
  struct Slot {
    void *host = nullptr;
    size_t bytes = 0;
    void *event = nullptr;
    bool pending = false;
  };
  std::mutex mutex;
  Slot slots[8];
  unsigned next = 0;
};
Staging &staging() {
  static auto *s = new Staging;
  return *s;
}
std::atomic<int64_t> graphCaptures{0}, graphLaunches{0}, failedCaptures{0};
} // namespace

struct act::rt::Graph {
  void *exec = nullptr;
  act::rt::Graph *previousPool = nullptr;
};

void act::rt::copyToDevice(void *device, const void *host, size_t bytes,
                           void *stream) {
  if (!bytes)
    return;
  Driver &d = require();
  Staging &s = staging();
  std::lock_guard<std::mutex> lock(s.mutex);
  Staging::Slot &slot = s.slots[s.next++ % 8];
  if (slot.pending)
    check(d.cuEventSynchronize(slot.event), "cuEventSynchronize (staging)");
  slot.pending = false;
  if (slot.bytes < bytes) {
    if (slot.host)
      check(d.cuMemFreeHost(slot.host), "cuMemFreeHost");
    slot.bytes = std::max(bytes, size_t(4096));
    check(d.cuMemHostAlloc(&slot.host, slot.bytes, 0), "cuMemHostAlloc");
  }
  if (!slot.event)
    check(d.cuEventCreate(&slot.event, /*CU_EVENT_DISABLE_TIMING=*/2),
          "cuEventCreate");
  std::memcpy(slot.host, host, bytes);
  check(d.cuMemcpyAsync(reinterpret_cast<uint64_t>(device),
                        reinterpret_cast<uint64_t>(slot.host), bytes, stream),
        "cuMemcpyAsync (staging)");
  check(d.cuEventRecord(slot.event, stream), "cuEventRecord (staging)");
  slot.pending = true;
}

act::rt::Graph *act::rt::createGraph() { return new Graph; }

act::rt::Graph *act::rt::setGraphPool(Graph *graph) {
  Graph *previous = graphPool;
  graphPool = graph;
  return previous;
}

void act::rt::beginGraphCapture(Graph *graph) {
  graph->previousPool = setGraphPool(graph);
  captureState().refused.clear();
  captureState().active = true;
  check(require().cuStreamBeginCapture_v2(streamOrdered().stream,
                                          /*CU_STREAM_CAPTURE_MODE_RELAXED=*/2),
        "cuStreamBeginCapture");
}

bool act::rt::endGraphCapture(Graph *graph, std::string &error) {
  setGraphPool(graph->previousPool);
  captureState().active = false;
  Driver &d = require();
  void *captured = nullptr;
  int result = d.cuStreamEndCapture(streamOrdered().stream, &captured);
  if (result == 0 && captured) {
    result = d.cuGraphInstantiateWithFlags(&graph->exec, captured, 0);
    check(d.cuGraphDestroy(captured), "cuGraphDestroy");
    if (result == 0) {
      ++graphCaptures;
      return true;
    }
  }
  const char *message = "unknown error";
  d.cuGetErrorString(result, &message);
  error = std::string(message) + " (" + std::to_string(result) + ")";
  if (!captureState().refused.empty())
    error = captureState().refused + " inside the capture: " + error;
  ++failedCaptures;
  return false;
}

void act::rt::launchGraph(Graph *graph) {
  check(require().cuGraphLaunch(graph->exec, streamOrdered().stream),
        "cuGraphLaunch");
  ++graphLaunches;
}

void act::rt::destroyGraph(Graph *graph) {
  {
    // Its blocks join the shared pool.
    BlockCache &cache = blockCache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    for (auto &free : cache.free) {
      auto own = free.find(graph);
      if (own == free.end())
        continue;
      free[nullptr].insert(own->second.begin(), own->second.end());
      free.erase(own);
    }
    for (auto &[base, block] : cache.blocks)
      if (block.pool == graph)
        block.pool = nullptr;
  }
  // (An executable graph still running is freed when it completes.)
  if (graph->exec)
    check(require().cuGraphExecDestroy(graph->exec), "cuGraphExecDestroy");
  delete graph;
}

act::rt::GraphStats act::rt::getGraphStats() {
  return {graphCaptures.load(), graphLaunches.load(), failedCaptures.load()};
}

act::rt::Backing act::rt::getGpuBacking() {
  act::rt::Backing gpu{allocateBlock, releaseBlock};
  gpu.headersApart = true;
  return gpu;
}

const act::rt::HookSymbol *act::rt::getCudaHooks(size_t &count) {
#define ACT_HOOK(name)                                                         \
  {                                                                            \
    #name, reinterpret_cast<void *>(&name)                                     \
  }
  static const HookSymbol hooks[] = {
      ACT_HOOK(mgpuStreamCreate),
      ACT_HOOK(mgpuStreamDestroy),
      ACT_HOOK(mgpuStreamSynchronize),
      ACT_HOOK(mgpuStreamWaitEvent),
      ACT_HOOK(mgpuEventCreate),
      ACT_HOOK(mgpuEventDestroy),
      ACT_HOOK(mgpuEventSynchronize),
      ACT_HOOK(mgpuEventRecord),
      ACT_HOOK(mgpuMemAlloc),
      ACT_HOOK(mgpuMemFree),
      ACT_HOOK(mgpuMemcpy),
      ACT_HOOK(mgpuMemset32),
      ACT_HOOK(mgpuModuleLoad),
      ACT_HOOK(mgpuModuleLoadJIT),
      ACT_HOOK(mgpuModuleUnload),
      ACT_HOOK(mgpuModuleGetFunction),
      ACT_HOOK(mgpuLaunchKernel),
  };
#undef ACT_HOOK
  count = sizeof(hooks) / sizeof(hooks[0]);
  return hooks;
}
