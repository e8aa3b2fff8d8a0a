//===- Cuda.h - CUDA host entry points for lowered GPU code -----*- C++ -*-===//
//
// The mgpu* functions that code lowered by act-gpu-pipeline calls
// (gpu-to-llvm and the gpu.binary launch translation), implemented over the
// CUDA driver API reached through dlopen("libcuda.so.1"), so the runtime
// builds and its tests run on machines without CUDA. Without a driver or a
// GPU, the first call reports why on stderr and aborts; loadCuda() says so
// without aborting.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_RUNTIME_CUDA_H
#define ACT_RUNTIME_CUDA_H

#include "act/runtime/Memory.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace act::rt {

/// Loads libcuda, resolves the driver symbols, initializes device 0 and
/// retains its primary context (the CUDA runtime's and PyTorch's: their
/// device pointers and streams are valid in act's steps). Idempotent; returns
/// false and the reason when it cannot.
bool loadCuda(std::string &error);

/// Names of the driver symbols the runtime resolves (for tests).
const char *const *getCudaSymbolNames(size_t &count);

/// The mgpu* entry points by name, for a JIT's symbol table.
const HookSymbol *getCudaHooks(size_t &count);

/// Stream-ordered mode, around one call of a step whose host code touches
/// no buffer (act-mark-stream-ordered): every stream the step creates is
/// one step stream, cuBLAS/cuDNN run on it too, and the host's
/// synchronizations inside the step (gpu-async-region's, before each host
/// op with side effects) are skipped; the GPU runs the step's launches and
/// library calls in order. `stream`: the caller's (a PyTorch stream, so the
/// step orders with its other work); null: one the runtime creates. A call
/// on another stream than the call before first waits for that one (the
/// blocks it freed are reused). endStreamOrdered waits for the GPU, once,
/// unless `wait` is false (results stay in device memory, read in order on
/// the same stream).
void beginStreamOrdered(void *stream = nullptr);
void endStreamOrdered(bool wait = true);
/// The stream of the current (or last) stream-ordered call; null before
/// the first.
void *getOrderedStream();
/// Host synchronizations skipped in stream-ordered mode so far (for tests).
int64_t getSkippedSynchronizations();

/// The allocation hooks' backing on the GPU: blocks of CUDA managed memory
/// (cuMemAllocManaged: host code and kernels reach the same pointers), or,
/// while setDeviceAllocations is on for the calling thread, of plain device
/// memory (cuMemAlloc: only kernels, copies and the libraries reach them).
/// Freed blocks are kept by size for the next allocations (a caching pool:
/// cuMemFree synchronizes the device); reuse is ordered by the host, so a
/// stream-ordered step's blocks are reused in its stream's order.
Backing getGpuBacking();
/// Turns device allocations on or off for the calling thread; returns the
/// previous setting.
bool setDeviceAllocations(bool on);
/// Whether `base` is a device-memory block of the GPU backing.
bool isDeviceBlock(const void *base);
/// The device pool: bytes it holds (live and cached), their most so far,
/// and its blocks (each a cuMemAlloc).
struct DevicePoolStats {
  int64_t reservedBytes = 0, peakReservedBytes = 0, blocks = 0;
};
DevicePoolStats getDevicePoolStats();

/// Copies `bytes` of host memory into device memory on `stream` without
/// waiting for it: through a ring of pinned staging buffers
/// (cuMemHostAlloc), each reused once the copy that read it is done (an
/// event), so the host's bytes may change as soon as this returns. For
/// what the host fills and kernels read (a step's seeds) on a stream the
/// host does not wait for. Not while `stream` is being captured.
void copyToDevice(void *device, const void *host, size_t bytes, void *stream);

/// CUDA graphs of stream-ordered calls (JitTarget::gpuGraphs): a call
/// captured once on the ordered stream and replayed with one launch.
///
/// A graph has a pool of its own. While the calling thread captures for it
/// (or allocates for it: setGraphPool), its allocations take blocks of that
/// pool and its frees give them back there, never to the shared pool, so a
/// replay writes only memory nothing else holds (as PyTorch's graphs'
/// private pools). Destroying the graph gives its blocks to the shared
/// pool (one still held goes there when released).
struct Graph;
Graph *createGraph();
/// The pool the calling thread's allocations come from: `graph`'s, or the
/// shared one (null); returns the previous.
Graph *setGraphPool(Graph *graph);
/// Starts capturing the ordered stream (beginStreamOrdered) into `graph`,
/// in relaxed mode (allocations may reach the driver); the calling
/// thread's allocations come from the graph's pool until endGraphCapture.
void beginGraphCapture(Graph *graph);
/// Ends the capture and instantiates the graph; false and why when the
/// capture could not record the call (a synchronization inside it, a copy
/// from pageable host memory): then nothing of it ran.
bool endGraphCapture(Graph *graph, std::string &error);
/// Queues the captured graph on the ordered stream.
void launchGraph(Graph *graph);
void destroyGraph(Graph *graph);
/// Captures, replays (launchGraph) and failed captures so far.
struct GraphStats {
  int64_t captures = 0, launches = 0, failedCaptures = 0;
};
GraphStats getGraphStats();

} // namespace act::rt

extern "C" {
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate();
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream);
void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
}

#endif // ACT_RUNTIME_CUDA_H
