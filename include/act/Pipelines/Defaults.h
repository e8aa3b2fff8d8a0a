//===- Defaults.h - the defaults of the pipelines' knobs --------*- C++ -*-===//
//
// One place for the default of every knob that act-cpu-pipeline and
// act-gpu-pipeline take and that the execution engine (JitTarget) and
// act-run expose again: the pipelines' options, JitTarget's fields and
// act-run's flags all initialize from these, so a default changes here and
// nowhere else. (Each pass's own option default, in Passes.td, is what the
// pass does when run alone; the pipelines set them from these.)
//
//===----------------------------------------------------------------------===//

#ifndef ACT_PIPELINES_DEFAULTS_H
#define ACT_PIPELINES_DEFAULTS_H

#include <cstdint>

namespace mlir::act::defaults {

/// act-cpu-pipeline{decode-into-consumers}.
inline constexpr bool kDecodeIntoConsumers = true;
/// act-cpu-pipeline{chunk-passes}: act-chunk-in-passes' max-passes.
inline constexpr int64_t kChunkPasses = 3;
/// act-cpu-pipeline{pool-in-place}.
inline constexpr bool kPoolInPlace = true;
/// act-cpu-pipeline{prefetch-distance}, bytes.
inline constexpr int64_t kPrefetchDistance = 4096;
/// act-cpu-pipeline{threads}: the encodings' workers (1: the calling
/// thread; beside oneDNN's OpenMP threads a second pool slows a step down,
/// docs/Running.md).
inline constexpr int64_t kThreads = 1;
/// act-cpu-pipeline{fuse-max-operands}.
inline constexpr int64_t kFuseMaxOperands = 16;
/// act-cpu-pipeline{outline-min-loops}.
inline constexpr int64_t kOutlineMinLoops = 16;
/// LLVM's optimization level of the JIT (2: the step time of 3 on act's
/// workloads, resnet18 compiles in half the time; docs/Running.md).
inline constexpr unsigned kJitOptLevel = 2;

/// act-gpu-pipeline{chip}, {features}.
inline constexpr const char *kGpuChip = "sm_90";
inline constexpr const char *kGpuFeatures = "+ptx80";
/// act-gpu-pipeline{block-size}: threads per block.
inline constexpr int64_t kGpuBlockSize = 256;
/// act-gpu-pipeline{max-partial-bytes}.
inline constexpr int64_t kGpuMaxPartialBytes = 262144;
/// act-gpu-pipeline{libraries}: matmuls and convolutions through
/// cuBLAS/cuDNN.
inline constexpr bool kGpuLibraries = true;

} // namespace mlir::act::defaults

#endif // ACT_PIPELINES_DEFAULTS_H
