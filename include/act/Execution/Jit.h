//===- Jit.h - compile and call a function on host data ---------*- C++ -*-===//
//
// Lowers a function on tensors (with or without act ops) through
// act-cpu-pipeline, JIT-compiles it with MLIR's ExecutionEngine, and calls it
// on host arrays: tensors in and out as memref descriptors of the default
// calling convention, scalars by value.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_EXECUTION_JIT_H
#define ACT_EXECUTION_JIT_H

#include "act/Execution/HostTensor.h"
#include "act/Pipelines/Defaults.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir::act {

/// LLVM's pipeline at `optLevel` (0-3) tuned for the host CPU (its vector
/// units): without a target machine the vectorizers see no vector registers.
/// With `cpuFeatures` (act/Support/CpuFeatures.h's getCpuFeatures), every
/// function of the
/// module is generated for those features instead of the host's: its
/// `target-features` attribute, which both the optimizer's cost model and
/// code generation read.
std::function<llvm::Error(llvm::Module *)>
makeHostOptimizingTransformer(unsigned optLevel = 3,
                              std::string cpuFeatures = "");

/// Makes MLIR's async runtime (libmlir_async_runtime.so: the tasks of
/// act-cpu-pipeline{threads > 1}) available to `engine`. The library is
/// loaded once for the process and its symbols registered with the engine,
/// not passed as a shared library: an ExecutionEngine that loaded it would
/// destroy its default runtime when destroyed, leaving every later engine
/// of the process without one. Fails if the library cannot be loaded.
llvm::Error registerAsyncRuntime(mlir::ExecutionEngine &engine);

/// JitTarget::deviceTensors: a tensor of `kind` and `shape` in the
/// runtime's device pool, each 32-bit word set to `word` (an f32 1.0 is
/// 0x3f800000) on `stream`, released through the hooks with its last copy.
HostTensor allocateDeviceTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                                uint32_t word, void *stream);

/// Returns once every worker of the async runtime has finished the task it
/// was running: a task may still be returning through a step's code after
/// the step has awaited it, so an engine whose code ran tasks is destroyed
/// only after this (JitFunction does it).
void quiesceAsyncRuntime();

/// What one argument or result of the function is.
struct ValueSpec {
  bool isTensor = false;
  ElementKind kind = ElementKind::F32;
  /// Tensor shape; ShapedType::kDynamic for dynamic dimensions.
  std::vector<int64_t> shape;
  /// Argument attributes the runtime acts on (act.seeds, act.bits).
  bool isSeeds = false;
  bool isBits = false;
  /// act.bits: each id's planned width and allowed widths (a mask, bit
  /// log2(b) for width b; 0 for ids without a run-time width).
  std::vector<int32_t> plannedBits, bitChoices;
  /// Filled by the runtime, not given by the caller (act.seeds, act.bits).
  bool isRuntimeFilled() const { return isSeeds || isBits; }
  /// JitTarget::deviceTensors: the host code reads it
  /// (act.host_read_arguments: a dropout seed), so the caller gives it in
  /// host memory, and the runtime stages it where both reach.
  bool hostRead = false;
};

/// Where compiled code runs.
struct JitTarget {
  /// Through act-gpu-pipeline on CUDA device 0 (the runtime's mgpu* entry
  /// points; every allocation, inputs staged, in managed memory counted by
  /// the allocation hooks), instead of act-cpu-pipeline on the host.
  bool gpu = false;
  /// CPU: changes to the host's target features the code is generated for
  /// (act/Support/CpuFeatures.h: "-avx512f" runs the AVX2 code paths on an
  /// AVX-512 host); empty: ACT_CPU_FEATURES, else the host's.
  std::string cpuFeatures;
  /// act-gpu-pipeline's chip and PTX features.
  std::string chip = defaults::kGpuChip, features = defaults::kGpuFeatures;
  /// act-gpu-pipeline{max-partial-bytes}.
  int64_t maxPartialBytes = defaults::kGpuMaxPartialBytes;
  /// GPU: the caller's tensors live in device memory (a PyTorch user's
  /// CUDA tensors). A call reads its arguments in place from the device
  /// pointers it is given (the act.seeds and act.bits tensors, which the
  /// runtime fills on the host, excepted) and leaves its results in device
  /// memory, in the runtime's pool of device blocks, each released with
  /// the last result holding it. The step runs in stream-ordered mode on
  /// the stream of JitFunction::setStream, and the host does not wait for
  /// it: nothing is copied from or to the host. Needs a function whose host
  /// code touches no buffer (act.stream_ordered); the arguments it reads
  /// (act.host_read_arguments, ValueSpec::hostRead) are the caller's host
  /// tensors.
  bool deviceTensors = false;
  /// Device tensors: from a function's second call on, the call is
  /// captured in a CUDA graph once and replayed with one launch while the
  /// caller passes the same device pointers (the seeds excepted: the
  /// runtime copies each call's into the graph's block); see
  /// JitFunction::call. Also turned on by ACT_GPU_GRAPHS=1.
  bool gpuGraphs = false;
  /// GPU: matmuls and convolutions through cuBLAS/cuDNN
  /// (act-gpu-pipeline{libraries}); false: generated kernels.
  bool gpuLibraries = defaults::kGpuLibraries;
  /// Emulated GPU: matmuls and convolutions through the same entry points
  /// on host memory, which only the libraries' stand-ins can run
  /// (act-cpu-pipeline{gpu-libraries}; the tests); false: oneDNN.
  bool emulateGpuLibraries = false;
  /// CPU only: the encodings lowered to the GPU kernels, run as loops
  /// (act-cpu-pipeline{emulate-gpu-kernels}).
  bool emulateGpuKernels = false;
  /// CPU only: encodes report their storage's bytes at run time
  /// (act::rt::getStorageRecords; act-cpu-pipeline{record-storage}).
  bool recordStorage = false;
  /// CPU only: write the lowered step's buffer peak here
  /// (act-cpu-pipeline{peak-report}; "-": stderr); empty: none.
  std::string peakReport;
  /// CPU only: elementwise readers of a decoded value decode for themselves
  /// (act-cpu-pipeline{decode-into-consumers}).
  bool decodeIntoConsumers = defaults::kDecodeIntoConsumers;
  /// LLVM's optimization level (0-3) for the lowered step: its IR passes
  /// and its code generation. 2: the same step time as 3 on act's
  /// workloads (the vector code comes from MLIR), and resnet18's compile
  /// takes half as long (docs/Running.md).
  unsigned optLevel = defaults::kJitOptLevel;
  /// CPU only: a function with at least this many top-level loop nests has
  /// each in a function of its own (act-cpu-pipeline{outline-min-loops}):
  /// LLVM compiles a large step several times faster; 0: never.
  int64_t outlineMinLoops = defaults::kOutlineMinLoops;
  /// CPU only: the most operands of a fused elementwise generic
  /// (act-cpu-pipeline{fuse-max-operands}); 0: no limit.
  int64_t fuseMaxOperands = defaults::kFuseMaxOperands;
  /// CPU only: the most loops over the batch one backward stage takes
  /// (act-cpu-pipeline{chunk-passes}); 0: stages are computed whole.
  int64_t chunkPasses = defaults::kChunkPasses;
  /// CPU only: a max pool whose input dies there writes into the input's
  /// buffer, which gives back its tail (act-cpu-pipeline{pool-in-place}).
  bool poolInPlace = defaults::kPoolInPlace;
  /// CPU only: bytes that loops streaming through a buffer prefetch ahead
  /// (act-cpu-pipeline{prefetch-distance}); 0: none.
  int64_t prefetchDistance = defaults::kPrefetchDistance;
  /// CPU only: workers the encodes' and decodes' chunks run on
  /// (act-cpu-pipeline{threads}, MLIR's async runtime); 0: every core, 1:
  /// the calling thread. The bits are the same on any count. 1 by default:
  /// beside the kernels' OpenMP threads, which spin between parallel
  /// regions, a second pool slows a step down (docs/Running.md).
  unsigned threads = unsigned(defaults::kThreads);
  /// CPU: a directory of compiled code kept between processes
  /// (act/Execution/CodeCache.h): a module compiled before for the same
  /// target is loaded from there instead of lowered and compiled again
  /// (not with peakReport, which the pipeline writes); empty: none. A new
  /// field above must be part of CodeCache::getKey.
  std::string cacheDir;
  /// CPU, with cacheDir: only load code from the cache. A miss (or an entry
  /// that does not load) compiles nothing: compileAll returns no functions
  /// and Step::compile no step. Lets a caller compile elsewhere (act's
  /// Python front end compiles in a child process, so that the compiler's
  /// memory is never its own) and load the result here.
  bool cacheOnly = false;
};

class JitFunction {
public:
  /// Lowers `module` in place and compiles its function `name`. Fails when
  /// the function is missing, its signature has types act cannot exchange,
  /// lowering fails, or (GPU) no driver or GPU is present. Null where
  /// JitTarget::cacheOnly misses the cache.
  static llvm::Expected<std::unique_ptr<JitFunction>>
  compile(ModuleOp module, llvm::StringRef name, bool countAllocations,
          const JitTarget &target = {});
  /// Compiles several functions of one module with one engine (none where
  /// JitTarget::cacheOnly misses the cache).
  static llvm::Expected<std::vector<std::unique_ptr<JitFunction>>>
  compileAll(ModuleOp module, llvm::ArrayRef<std::string> names,
             bool countAllocations, const JitTarget &target = {});

  const std::vector<ValueSpec> &getArguments() const { return arguments; }
  const std::vector<ValueSpec> &getResults() const { return results; }

  /// Calls the function. Arguments must match getArguments() in kind and
  /// shape; their bytes are read in place (CPU; staged into device-reachable
  /// memory on the GPU). Results own the buffers the call allocated (no
  /// copy; released through the allocation hooks with the last copy), except
  /// strided views and returned arguments, which are copied out.
  /// JitTarget::deviceTensors: argument data are device pointers, and so
  /// are the results'.
  /// JitTarget::gpuGraphs: the first call runs as always (it warms the
  /// pool and the libraries' choices); the second is captured in a CUDA
  /// graph (its blocks the graph's own) and launched; later calls launch
  /// the graph again. The arguments that were the same pointers (scalars:
  /// values) in the first two calls are read in place, and a call where
  /// one of them differs is captured anew; the others (and the seeds) are
  /// copied into the graph's blocks before each launch. Results of 64 KiB
  /// or more are the graph's own blocks: while one is held, a call runs
  /// without the graph (a replay would overwrite it); smaller ones (the
  /// loss) are gathered by the graph and copied out with one copy. A
  /// capture the driver refuses turns graphs off for the function, with a
  /// note on stderr.
  llvm::Expected<std::vector<HostTensor>> call(llvm::ArrayRef<HostTensor> args);
  /// JitTarget::deviceTensors: the CUDA stream later calls are queued on
  /// (null: the runtime's own).
  void setStream(void *s) { stream = s; }
  /// Turns CUDA graphs (JitTarget::gpuGraphs) on or off for later calls;
  /// an error, naming why, for a function that cannot run in one (not on
  /// device tensors; its host code reads an argument, such as a dropout
  /// seed, whose first value a graph would replay).
  llvm::Error setGraphs(bool on);
  /// GPU: the seconds the last call's compiled code ran, to its final
  /// synchronization (its inputs' staging before not included); 0 on the
  /// CPU.
  double getLastDeviceSeconds() const { return lastDeviceSeconds; }

  /// Whether the code came from JitTarget::cacheDir (not compiled).
  bool isFromCache() const { return fromCache; }

private:
  /// Keeps the code alive (an ExecutionEngine, or the JIT that loaded
  /// cached code); `entry` is the function's packed-arguments wrapper.
  std::shared_ptr<void> code;
  void (*entry)(void **) = nullptr;
  bool fromCache = false;
  std::string name;
  std::vector<ValueSpec> arguments, results;
  bool countAllocations = false;
  bool gpu = false;
  /// GPU: the step's host code touches no buffer (act.stream_ordered), so
  /// it runs in the runtime's stream-ordered mode (one stream, one
  /// synchronization at the end); ACT_GPU_STREAM_ORDERED=0 turns that off.
  bool streamOrdered = false;
  /// JitTarget::deviceTensors, and its stream.
  bool deviceTensors = false;
  void *stream = nullptr;
  /// JitTarget::gpuGraphs, for a function whose host code reads no
  /// argument (false after a capture failed); the last call's argument
  /// pointers (and scalars), and its captured call (CapturedCall in
  /// Jit.cpp), which results it lent hold too.
  bool graphs = false;
  /// Why this function cannot run in a graph (empty: it can).
  std::string graphsRefused;
  std::vector<int64_t> lastArguments;
  std::shared_ptr<struct CapturedCall> captured;
  double lastDeviceSeconds = 0;
};

} // namespace mlir::act

#endif // ACT_EXECUTION_JIT_H
