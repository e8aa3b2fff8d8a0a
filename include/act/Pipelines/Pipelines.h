//===- Pipelines.h - act's registered pass pipelines ------------*- C++ -*-===//

#ifndef ACT_PIPELINES_PIPELINES_H
#define ACT_PIPELINES_PIPELINES_H

#include "act/Pipelines/Defaults.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::act {

struct CPUPipelineOptions : public PassPipelineOptions<CPUPipelineOptions> {
  Option<bool> countAllocations{
      *this, "count-allocations",
      llvm::cl::desc("allocate through _mlir_memref_to_llvm_alloc/free so a "
                     "runtime can count live and peak bytes"),
      llvm::cl::init(true)};
  Option<bool> resultsToOutParams{
      *this, "results-to-out-params",
      llvm::cl::desc("return tensors through caller-allocated buffers "
                     "(kernels called on preallocated storage)"),
      llvm::cl::init(false)};
  Option<bool> emulateGpuKernels{
      *this, "emulate-gpu-kernels",
      llvm::cl::desc("lower the encodings to act-gpu-pipeline's kernels and "
                     "run them on the CPU (convert-act-to-linalg{target="
                     "gpu-emulated}): checks the GPU kernels without a GPU"),
      llvm::cl::init(false)};
  Option<bool> kernels{
      *this, "kernels",
      llvm::cl::desc("f32 matmuls and convolutions call act's compute "
                     "kernels (convert-linalg-to-act-kernels: oneDNN GEMMs, "
                     "threaded); false: loops"),
      llvm::cl::init(true)};
  Option<bool> gpuLibraries{
      *this, "gpu-libraries",
      llvm::cl::desc("with emulate-gpu-kernels: the matmuls and convolutions "
                     "call the GPU's library kernels (act_gpu_kernel_*, "
                     "cuBLAS/cuDNN; on host memory, so only through their "
                     "stand-ins) instead of oneDNN"),
      llvm::cl::init(false)};
  Option<bool> recordStorage{
      *this, "record-storage",
      llvm::cl::desc("each encode reports its storage's bytes at run time "
                     "to the runtime (act_record_storage; act-run --storage)"),
      llvm::cl::init(false)};
  Option<bool> decodeIntoConsumers{
      *this, "decode-into-consumers",
      llvm::cl::desc("each elementwise reader of a decoded value decodes "
                     "for itself inside its own loop (convert-act-to-linalg"
                     "{decode-into-consumers}, act-fuse-elementwise): the "
                     "decoded tensor is materialized only for the other "
                     "readers"),
      llvm::cl::init(defaults::kDecodeIntoConsumers)};
  Option<int64_t> chunkPasses{
      *this, "chunk-passes",
      llvm::cl::desc("act-chunk-in-passes{max-passes}: a backward stage is "
                     "computed one chunk of the batch at a time in up to "
                     "this many loops (one per level of batch reductions, "
                     "recomputing what they need); 0: not at all"),
      llvm::cl::init(defaults::kChunkPasses)};
  Option<bool> poolInPlace{
      *this, "pool-in-place",
      llvm::cl::desc("with count-allocations: a max pool whose input dies "
                     "there writes into the input's buffer, which then "
                     "gives back its tail (act-pool-in-place, "
                     "act-shrink-reallocs)"),
      llvm::cl::init(defaults::kPoolInPlace)};
  Option<int64_t> prefetchDistance{
      *this, "prefetch-distance",
      llvm::cl::desc("act-prefetch-streams{distance}: loops that stream "
                     "through a buffer (an encode's chunks) prefetch this "
                     "many bytes ahead; 0: no software prefetch"),
      llvm::cl::init(defaults::kPrefetchDistance)};
  Option<std::string> cpuFeatures{
      *this, "cpu-features",
      llvm::cl::desc("changes to the host's CPU features the code is for, "
                     "LLVM's names (-avx512f: an AVX2 machine's code on an "
                     "AVX-512 host; convert-act-to-linalg{cpu-features}); "
                     "empty: ACT_CPU_FEATURES, else the host's")};
  Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("encode and decode chunks run as tasks of MLIR's async "
                     "runtime on this many workers (async-parallel-for); 1: "
                     "in sequence on the calling thread"),
      llvm::cl::init(defaults::kThreads)};
  Option<int64_t> fuseMaxOperands{
      *this, "fuse-max-operands",
      llvm::cl::desc("act-fuse-elementwise{max-operands}: the most operands "
                     "of a fused elementwise generic (an unrolled "
                     "recurrence's backward otherwise fuses across all its "
                     "timesteps); 0: no limit"),
      llvm::cl::init(defaults::kFuseMaxOperands)};
  Option<int64_t> outlineMinLoops{
      *this, "outline-min-loops",
      llvm::cl::desc("move each top-level loop nest of a function with at "
                     "least this many into a function of its own "
                     "(act-outline-loops; LLVM compiles a large step much "
                     "faster); 0: never"),
      llvm::cl::init(defaults::kOutlineMinLoops)};
  Option<std::string> peakReport{
      *this, "peak-report",
      llvm::cl::desc("write the peak of the lowered step's buffers here "
                     "(act-buffer-peak; - for stderr, .json for JSON)"),
      llvm::cl::init("")};
};

/// What act-gpu-pipeline embeds for each gpu.module.
enum class GPUBinaryFormat { Isa, Bin, Fatbin };

struct GPUPipelineOptions : public PassPipelineOptions<GPUPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("NVIDIA target, e.g. sm_80, sm_90"),
                           llvm::cl::init(defaults::kGpuChip)};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features, e.g. +ptx80"),
                               llvm::cl::init(defaults::kGpuFeatures)};
  Option<GPUBinaryFormat> format{
      *this, "format", llvm::cl::desc("what the kernels are embedded as"),
      llvm::cl::values(
          clEnumValN(GPUBinaryFormat::Isa, "isa",
                     "PTX text (needs no toolkit)"),
          clEnumValN(GPUBinaryFormat::Bin, "bin", "cubin (ptxas on PATH)"),
          clEnumValN(GPUBinaryFormat::Fatbin, "fatbin",
                     "fatbin (ptxas and fatbinary on PATH)")),
      llvm::cl::init(GPUBinaryFormat::Isa)};
  Option<std::string> libdevice{
      *this, "libdevice",
      llvm::cl::desc("NVIDIA libdevice bitcode linked into the kernels "
                     "(math functions)"),
      llvm::cl::init("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc")};
  Option<int64_t> blockSize{
      *this, "block-size",
      llvm::cl::desc("threads per block (a multiple of 32): of act's "
                     "encode/decode kernels, and the tile by which the "
                     "outermost dimension of every other parallel loop is "
                     "tiled (tiles map to blocks, their iterations to "
                     "threads)"),
      llvm::cl::init(defaults::kGpuBlockSize)};
  Option<bool> libraries{
      *this, "libraries",
      llvm::cl::desc("f32 matmuls and 2-D convolutions call cuBLAS and "
                     "cuDNN (convert-linalg-to-act-kernels{gpu}, "
                     "act/runtime/CudaLibraries.h); false: generated "
                     "kernels"),
      llvm::cl::init(defaults::kGpuLibraries)};
  Option<int64_t> maxPartialBytes{
      *this, "max-partial-bytes",
      llvm::cl::desc("act-split-reductions{max-partial-bytes}: the most "
                     "bytes of partial results a split reduction keeps "
                     "(more: more parallel weight gradients, a higher "
                     "peak)"),
      llvm::cl::init(defaults::kGpuMaxPartialBytes)};
  Option<bool> resultsToOutParams{
      *this, "results-to-out-params",
      llvm::cl::desc("return tensors through caller-allocated buffers (the "
                     "kernels write straight into device memory the caller "
                     "owns; bench/gpu_kernels)"),
      llvm::cl::init(false)};
};

/// Training graph with act ops on tensors -> LLVM dialect, for the JIT
/// (act-run) or an object file: convert-act-to-linalg, one-shot
/// bufferization across function boundaries, buffer deallocation, loops,
/// and the conversions to LLVM.
void buildCPUPipeline(OpPassManager &pm, const CPUPipelineOptions &options);

/// Training graph with act ops -> host LLVM dialect launching gpu.func
/// kernels, embedded as PTX (or cubin) for `chip`: the same bufferized loops
/// as the CPU pipeline, mapped to GPU blocks and threads.
void buildGPUPipeline(OpPassManager &pm, const GPUPipelineOptions &options);

/// Checks that `chip` and `features` name an NVIDIA architecture and PTX
/// features LLVM's NVPTX back end knows, before anything is compiled for
/// them (instruction selection aborts on an unknown chip).
llvm::LogicalResult verifyGPUTarget(llvm::StringRef chip,
                                    llvm::StringRef features,
                                    std::string &error);

/// Registers act-cpu-pipeline and act-gpu-pipeline.
void registerPipelines();

} // namespace mlir::act

#endif // ACT_PIPELINES_PIPELINES_H
