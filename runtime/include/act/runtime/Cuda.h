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

/// Loads libcuda, resolves the driver symbols, initializes device 0 and a
/// context. Idempotent; returns false and the reason when it cannot.
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
/// library calls in order. endStreamOrdered() waits for the stream, once.
void beginStreamOrdered();
void endStreamOrdered();
/// Host synchronizations skipped in stream-ordered mode so far (for tests).
int64_t getSkippedSynchronizations();

/// CUDA managed memory (cuMemAllocManaged / cuMemFree) as the allocation
/// hooks' backing: host code and kernels reach the same pointers.
Backing getManagedBacking();

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
