//===- Pipelines.cpp - act's registered pass pipelines --------------------===//

#include "act/Pipelines/Pipelines.h"

#include "act/Codegen/Passes.h"
#include "act/Conversion/Passes.h"
#include "act/Dialect/Act/IR/Act.h"
#include "act/Dialect/Act/Transforms/Passes.h"
#include "act/Support/OptionLoc.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Async/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/OptimizeForNVVM.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/TargetParser/Triple.h"

#include <memory>

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTargetMC();
}

using namespace mlir;

namespace {
/// What buildBufferizedLoops takes from either pipeline's options; each
/// pipeline sets the fields that apply to it from its options, and a field
/// it does not set is off (false, 0). The two exceptions take the knob's
/// default (act/Pipelines/Defaults.h): the GPU pipeline has no
/// fuse-max-operands of its own, the CPU pipeline no block size.
struct BufferizedLoopsOptions {
  bool resultsToOutParams = false;
  act::LoweringTarget target = act::LoweringTarget::CPU;
  int64_t gpuBlockSize = act::defaults::kGpuBlockSize;
  bool recordStorage = false;
  bool decodeIntoConsumers = false;
  int64_t threads = 1;
  int64_t fuseMaxOperands = act::defaults::kFuseMaxOperands;
  /// CPU: act-chunk-in-passes' max-passes (0: off).
  int64_t chunkPasses = 0;
  bool poolInPlace = false;
  /// CPU: act-prefetch-streams' distance (0: off).
  int64_t prefetchDistance = 0;
  /// GPU: act-split-reductions' max-partial-bytes.
  int64_t maxPartialBytes = 0;
  /// GPU: matmuls and convolutions will be cuBLAS/cuDNN calls.
  bool gpuLibraries = false;
  /// CPU: convert-act-to-linalg's cpu-features.
  std::string cpuFeatures;
};
} // namespace

namespace {
/// The first pass of both pipelines: they lower the functions of the module
/// they run on, so a module nested in it (whose functions the nested
/// passes never visit, while the module-level ones half-convert them) is an
/// error at its location, with the way to lower it instead.
struct CheckNoNestedModulesPass
    : PassWrapper<CheckNoNestedModulesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckNoNestedModulesPass)
  explicit CheckNoNestedModulesPass(std::string pipeline)
      : pipeline(std::move(pipeline)) {}
  StringRef getArgument() const override {
    return "act-check-no-nested-modules";
  }
  StringRef getDescription() const override {
    return "Refuse modules nested in the module a pipeline lowers";
  }
  void runOnOperation() override {
    ModuleOp top = getOperation();
    WalkResult result =
        top.walk([&](ModuleOp nested) {
          if (nested == top)
            return WalkResult::advance();
          std::string name =
              nested.getSymName() ? ("@" + nested.getSymName()->str()) : "";
          nested.emitError()
              << pipeline << ": nested module " << name
              << " is not lowered: the pipeline lowers the functions of the "
                 "module it runs on; run it on the nested module instead "
                 "(--pass-pipeline='builtin.module(builtin.module("
              << pipeline << "))')";
          return WalkResult::interrupt();
        });
    if (result.wasInterrupted())
      signalPassFailure();
  }
  std::string pipeline;
};
} // namespace

/// act ops to linalg, bufferized, deallocated after last use: what both the
/// CPU and the GPU pipeline start from.
static void buildBufferizedLoops(OpPassManager &pm,
                                 const BufferizedLoopsOptions &options) {
  bool vectorize = options.target == act::LoweringTarget::CPU;
  pm.addPass(std::make_unique<CheckNoNestedModulesPass>(
      options.target == act::LoweringTarget::GPU ? "act-gpu-pipeline"
                                                 : "act-cpu-pipeline"));
  act::ConvertActToLinalgPassOptions lowering;
  lowering.target = options.target;
  lowering.gpuBlockSize = options.gpuBlockSize;
  lowering.recordStorage = options.recordStorage;
  lowering.decodeIntoConsumers = options.decodeIntoConsumers;
  lowering.cpuFeatures = options.cpuFeatures;
  // Saved values are encoded as soon as they are computed, so that their
  // last forward reader may write in place.
  pm.addNestedPass<func::FuncOp>(act::createActHoistEncodesPass());
  pm.addPass(act::createConvertActToLinalgPass(lowering));
  // Elementwise arith/math on tensors become linalg.generic, which bufferizes.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  // Function by function (in parallel: the emulated GPU kernels are
  // functions of their own, each thousands of ops).
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  // An elementwise op read by one other op is computed inside it, and
  // elementwise ops write into an input that dies there (Gist's in-place):
  // the backward holds fewer full-size temporaries at a time.
  act::ActFuseElementwisePassOptions fuse;
  fuse.maxOperands = options.fuseMaxOperands;
  pm.addNestedPass<func::FuncOp>(act::createActFuseElementwisePass(fuse));
  // Batch-parallel regions (the attention backward) one chunk of the batch
  // at a time: their attention-sized temporaries never exist whole.
  // (GPU with cuBLAS/cuDNN: chunks of 32 MiB; the default's 128 KiB made
  // a GPT step at batch 32 call a batched GEMM per image and head group,
  // 396 calls.)
  act::ActChunkBatchPassOptions chunkBatch;
  if (options.gpuLibraries)
    chunkBatch.chunkBytes = int64_t(32) << 20;
  pm.addNestedPass<func::FuncOp>(act::createActChunkBatchPass(chunkBatch));
  // A backward stage (from a max pool's or a linear layer's input gradient
  // to the next waist) one chunk of the batch at a time, in one loop per
  // level of batch reductions: its full-size gradients never exist whole.
  // CPU only, as the vector code: the GPU pipeline maps ops to kernels, and
  // its emulation (whose decodes are not per-element generics) runs the
  // stage whole, as the GPU does.
  if (vectorize && options.chunkPasses > 0) {
    act::ActChunkInPassesPassOptions chunking;
    chunking.maxPasses = options.chunkPasses;
    pm.addNestedPass<func::FuncOp>(act::createActChunkInPassesPass(chunking));
  }
  // A weight gradient's per-element decoded input, one chunk of the batch
  // at a time.
  // (GPU with cuBLAS/cuDNN: chunks of up to 32 MiB, the whole batch of a
  // CIFAR-sized layer: a library call per image cost more than the memory
  // it saved, 454 convolutions in a VGG step at batch 256.)
  act::ActTileDecodedConvolutionsPassOptions tiling;
  if (options.gpuLibraries)
    tiling.chunkBytes = int64_t(32) << 20;
  pm.addNestedPass<func::FuncOp>(
      act::createActTileDecodedConvolutionsPass(tiling));
  // Results computed early (a linear layer's input gradient) wait for
  // their first user instead of being live beside a decoded activation.
  pm.addNestedPass<func::FuncOp>(act::createActSinkToUsersPass());
  // (GPU with cuBLAS/cuDNN: convolutions computed in place in chunks of
  // 4 MiB of input, 32 CIFAR images of 32 channels: a library call per
  // image or two cost more than the chunks' memory.)
  act::ActInPlacePassOptions inPlace;
  if (options.gpuLibraries)
    inPlace.chunkBytes = int64_t(4) << 20;
  pm.addNestedPass<func::FuncOp>(act::createActInPlacePass(inPlace));
  // GPU: a reduction with few outputs (BatchNorm's sums, a weight
  // gradient) sums partial results of its outer reduction loops in
  // parallel first, instead of one thread per output looping over all.
  if (options.target == act::LoweringTarget::GPU) {
    act::ActSplitReductionsPassOptions split;
    split.maxPartialBytes = options.maxPartialBytes;
    split.skipLibraryOps = options.gpuLibraries;
    pm.addNestedPass<func::FuncOp>(act::createActSplitReductionsPass(split));
  }
  if (options.target != act::LoweringTarget::GPU) {
    // The lowering's per-chunk kernels and the graph's elementwise ops and
    // reductions as vector code (16 lanes: an AVX-512 register of f32, two
    // of AVX2). The emulated GPU kernels run beside the same vector code,
    // so their steps match the CPU's bit for bit.
    act::ActVectorizePassOptions vectorizeOptions;
    vectorizeOptions.width = 16;
    pm.addNestedPass<func::FuncOp>(
        act::createActVectorizePass(vectorizeOptions));
    pm.addPass(createCanonicalizerPass());
  }

  // Ops whose result lands in a destination write there directly.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // Values whose layout bufferization cannot infer (an scf.if yielding a
  // cast of an argument) get identity layouts: with fully dynamic ones, a
  // sparse encode's values crossed the function boundary through a
  // strided element-by-element copy (memrefCopy).
  bufferize.unknownTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Loops that carried a tensor carry its buffer unchanged, and a tile
  // written in place is copied onto itself: folded, so a result is the
  // buffer it was written in (buffer-results-to-out-params replaces that
  // buffer by the caller's) and no copy is left in the loops.
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  bool parallel = vectorize && options.threads > 1;
  if (parallel) {
    // CPU, threads: an encode's or decode's chunks (scf.forall) stay
    // parallel; their small temporaries (per-group statistics) go on the
    // stack, so no chunk allocates on the heap and nothing is left for the
    // deallocation pipeline inside the forall (which it would not free);
    // buffer-loop-hoisting never moves anything out of an scf.forall.
    pm.addNestedPass<func::FuncOp>(act::createActChunkBuffersToStackPass());
    pm.addNestedPass<func::FuncOp>(
        bufferization::createBufferLoopHoistingPass());
  } else if (vectorize) {
    // CPU: a chunk's small temporaries (per-group statistics) are allocated
    // once, outside the loop over chunks, which then runs in sequence.
    pm.addPass(createForallToForLoopPass());
    pm.addNestedPass<func::FuncOp>(
        bufferization::createBufferLoopHoistingPass());
  }
  // Matmuls and convolutions read transposed operands through views.
  pm.addNestedPass<func::FuncOp>(act::createActTransposeViewsPass());
  if (options.resultsToOutParams) {
    bufferization::BufferResultsToOutParamsPassOptions outParams;
    outParams.hoistStaticAllocs = true;
    outParams.modifyPublicFunctions = true;
    pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  }
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  // Clones of returned arguments become alloc + copy.
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Free activations after their last use, not at the end of the step.
  pm.addNestedPass<func::FuncOp>(act::createActEarlyDeallocPass());
  // A max pool whose input dies there writes into the input's buffer,
  // which then gives back its tail (memref.realloc): only worth it where
  // the realloc really shrinks (act-shrink-reallocs, act's allocator).
  if (options.poolInPlace)
    pm.addNestedPass<func::FuncOp>(act::createActPoolInPlacePass());
  // Loops that stream through a buffer (an encode's chunks) prefetch the
  // blocks of later iterations: one core's hardware prefetchers alone left
  // an encode waiting on memory for a third of its time.
  if (options.prefetchDistance != 0) {
    act::ActPrefetchStreamsPassOptions prefetch;
    prefetch.distance = options.prefetchDistance;
    pm.addNestedPass<func::FuncOp>(act::createActPrefetchStreamsPass(prefetch));
  }
  if (parallel) {
    // The chunks as tasks of MLIR's async runtime: blocks of at least 512
    // chunks (131,072 elements of a 4-bit quant encode; a smaller tensor
    // stays on the calling thread: below that a task's dispatch costs more
    // than it saves, and its workers compete with the compute kernels'
    // OpenMP threads: with 64, the VGG's 4-bit step at 2 threads took 44 ms
    // against 28 ms), `threads` workers' worth; each task allocates its
    // chunks' stack temporaries once. Chunks are independent and Philox is
    // counter-based, so the bits do not depend on the split.
    pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
    AsyncParallelForPassOptions async;
    async.asyncDispatch = true;
    async.numWorkerThreads = int32_t(options.threads);
    async.minTaskSize = 512;
    pm.addPass(createAsyncParallelForPass(async));
    pm.addNestedPass<func::FuncOp>(act::createActHoistStackBuffersPass());
    pm.addPass(createAsyncToAsyncRuntimePass());
    pm.addNestedPass<func::FuncOp>(createAsyncRuntimeRefCountingPass());
    pm.addNestedPass<func::FuncOp>(createAsyncRuntimeRefCountingOptPass());
  }
}

void mlir::act::buildCPUPipeline(OpPassManager &pm,
                                 const CPUPipelineOptions &options) {
  BufferizedLoopsOptions loops;
  loops.resultsToOutParams = options.resultsToOutParams;
  loops.target = options.emulateGpuKernels ? act::LoweringTarget::GPUEmulated
                                           : act::LoweringTarget::CPU;
  loops.recordStorage = options.recordStorage;
  loops.decodeIntoConsumers = options.decodeIntoConsumers;
  loops.threads = options.threads;
  loops.fuseMaxOperands = options.fuseMaxOperands;
  loops.chunkPasses = options.chunkPasses;
  loops.poolInPlace = options.countAllocations && options.poolInPlace;
  loops.prefetchDistance =
      options.emulateGpuKernels ? 0 : int64_t(options.prefetchDistance);
  loops.cpuFeatures = options.cpuFeatures;
  buildBufferizedLoops(pm, loops);

  // Contractions and convolutions call the runtime's kernels; the rest
  // (elementwise chains, reductions, the encodings) become loops.
  if (options.kernels) {
    act::ConvertLinalgToActKernelsPassOptions kernels;
    kernels.gpu = options.emulateGpuKernels && options.gpuLibraries;
    pm.addPass(act::createConvertLinalgToActKernelsPass(kernels));
  }
  // A split backward marked act.release_arguments lets its caller free each
  // saved value after its last use (act.Module's backward). After the
  // passes that match a buffer dying right after its reader (pool-in-place,
  // a transpose folded into a kernel's call): its calls would stand between.
  pm.addNestedPass<func::FuncOp>(act::createActReleaseArgumentsPass());
  if (!options.peakReport.empty()) {
    act::ActBufferPeakPassOptions peak;
    peak.report = options.peakReport;
    pm.addPass(act::createActBufferPeakPass(peak));
  }
  // Copies between strided buffers (a convolution chunk into its padded
  // buffer) as loops LLVM vectorizes, not calls of memrefCopy.
  pm.addNestedPass<func::FuncOp>(act::createActStridedCopiesToLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // n-D vector transfers as unrolled 1-D ones, which become plain loads and
  // stores.
  // Per-group reductions along the group (vector.reduction per row).
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMultiReductionPass(
      vector::VectorMultiReductionLowering::InnerReduction));
  VectorTransferToSCFOptions transfers;
  transfers.enableFullUnroll();
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass(transfers));
  // A large step's loop nests as functions of their own: LLVM's loop
  // passes are superlinear in the size of the function around them.
  if (options.outlineMinLoops > 0) {
    act::ActOutlineLoopsPassOptions outline;
    outline.minLoops = options.outlineMinLoops;
    pm.addPass(act::createActOutlineLoopsPass(outline));
  }
  // A gather from a strided view (a column, a diagonal) reads its storage.
  pm.addNestedPass<func::FuncOp>(act::createActUnitStrideGathersPass());
  // A shrinking realloc gives its tail back through act's allocator; any
  // other (none today) becomes alloc + copy.
  if (options.countAllocations)
    pm.addPass(act::createActShrinkReallocsPass());
  pm.addPass(memref::createExpandReallocPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
  // Math ops with an LLVM intrinsic (exp, log, sqrt, rsqrt as 1/sqrt, ...)
  // become intrinsics; the rest (erf, tanh) calls libm. (The libm conversion
  // alone would call rsqrtf, which libm does not have.)
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = options.countAllocations;
  // aligned_alloc instead of malloc + pointer arithmetic: the aligned
  // pointer keeps its provenance, so LLVM's alias analysis still tells
  // buffers apart (promotes reductions to registers, vectorizes).
  memrefOptions.useAlignedAlloc = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  if (options.threads > 1)
    pm.addPass(createConvertAsyncToLLVMPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // i1 tensors are one byte per element; vectors of them too, in memory.
  pm.addPass(act::createActByteI1VectorsPass());
}

LogicalResult mlir::act::verifyGPUTarget(llvm::StringRef chip,
                                         llvm::StringRef features,
                                         std::string &error) {
  static bool initialized = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTargetMC();
    return true;
  }();
  (void)initialized;
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    error = "this LLVM has no NVPTX back end: " + lookupError;
    return failure();
  }
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!info || !info->isCPUStringValid(chip)) {
    error = "unknown NVIDIA chip '" + chip.str() + "' (e.g. sm_80, sm_90)";
    return failure();
  }
  llvm::SmallVector<llvm::StringRef> parts;
  features.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef feature : parts) {
    llvm::StringRef name = feature.trim();
    if (!name.consume_front("+") && !name.consume_front("-")) {
      error = "feature '" + feature.str() + "' does not start with + or -";
      return failure();
    }
    if (!llvm::any_of(info->getAllProcessorFeatures(),
                      [&](const llvm::SubtargetFeatureKV &kv) {
                        return name == kv.Key;
                      })) {
      error = "unknown PTX feature '" + name.str() + "' (e.g. +ptx80)";
      return failure();
    }
  }
  return success();
}

namespace {
/// The first pass of act-gpu-pipeline: its target options are checked once,
/// before any IR is compiled for them.
struct CheckGPUTargetPass
    : PassWrapper<CheckGPUTargetPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckGPUTargetPass)
  CheckGPUTargetPass(std::string chip, std::string features)
      : chip(std::move(chip)), features(std::move(features)) {}
  StringRef getArgument() const override { return "act-check-gpu-target"; }
  StringRef getDescription() const override {
    return "Check act-gpu-pipeline's chip and features";
  }
  LogicalResult initialize(MLIRContext *context) override {
    std::string error;
    if (failed(act::verifyGPUTarget(chip, features, error))) {
      // The chip alone decides whether the chip or the features are wrong.
      std::string chipError;
      StringRef option = failed(act::verifyGPUTarget(chip, "", chipError))
                             ? "chip"
                             : "features";
      return emitError(act::getOptionLoc(context, "act-gpu-pipeline", option))
             << "act-gpu-pipeline: " << error;
    }
    return success();
  }
  /// Element types the NVVM lowering handles: f16, bf16, f32, f64 and
  /// integers. Others (the 8-bit and smaller floats) failed deep in the
  /// translation to LLVM IR with no location; here they are an error at the
  /// op that uses them.
  static bool isSupportedOnGpu(Type type) {
    if (auto shaped = dyn_cast<ShapedType>(type))
      type = shaped.getElementType();
    if (auto encoded = dyn_cast<act::EncodedType>(type))
      type = encoded.getTensorType().getElementType();
    if (auto floatType = dyn_cast<FloatType>(type))
      return floatType.isF16() || floatType.isBF16() || floatType.isF32() ||
             floatType.isF64();
    return true;
  }
  void runOnOperation() override {
    WalkResult result = getOperation().walk([](Operation *op) {
      for (Type type : llvm::concat<const Type>(op->getOperandTypes(),
                                                op->getResultTypes()))
        if (!isSupportedOnGpu(type)) {
          op->emitError("act-gpu-pipeline: ")
              << type
              << " is not supported on the GPU target (elements: f16, bf16, "
                 "f32, f64, integers)";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
  std::string chip, features;
};
} // namespace

static const char *getCompilationTarget(act::GPUBinaryFormat format) {
  switch (format) {
  case act::GPUBinaryFormat::Isa:
    return "isa";
  case act::GPUBinaryFormat::Bin:
    return "bin";
  case act::GPUBinaryFormat::Fatbin:
    return "fatbin";
  }
  llvm_unreachable("unknown GPU binary format");
}

void mlir::act::buildGPUPipeline(OpPassManager &pm,
                                 const GPUPipelineOptions &options) {
  pm.addPass(
      std::make_unique<CheckGPUTargetPass>(options.chip, options.features));
  BufferizedLoopsOptions loops;
  loops.resultsToOutParams = options.resultsToOutParams;
  loops.target = act::LoweringTarget::GPU;
  loops.gpuBlockSize = options.blockSize;
  loops.maxPartialBytes = options.maxPartialBytes;
  loops.gpuLibraries = options.libraries;
  buildBufferizedLoops(pm, loops);
  // Matmuls and convolutions as cuBLAS/cuDNN calls from the host code.
  if (options.libraries) {
    act::ConvertLinalgToActKernelsPassOptions kernels;
    kernels.gpu = true;
    pm.addPass(act::createConvertLinalgToActKernelsPass(kernels));
  }
  // Every copy as linalg.copy, hence a kernel: a copy left on the host
  // would read the device buffers the caller passes (managed memory only
  // hides that, at a page migration per call).
  act::ActStridedCopiesToLoopsPassOptions copies;
  copies.all = true;
  pm.addNestedPass<func::FuncOp>(
      act::createActStridedCopiesToLoopsPass(copies));
  // Sums to a scalar and 0-d fills as one-thread kernels, not host code.
  pm.addNestedPass<func::FuncOp>(act::createActScalarOpsToKernelsPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  // One dimension per loop nest, so that every block is full. (No
  // canonicalization here: it would inline a loop of one iteration, a tail
  // group's statistics, into host code that cannot reach device memory.)
  pm.addNestedPass<func::FuncOp>(act::createActCollapseParallelLoopsPass());
  // Tiles of `block-size` iterations: the tile loop maps to blocks, the
  // iterations in a tile to threads (consecutive threads, consecutive
  // elements: coalesced). Constant tile bounds with an in-bounds check
  // inside, so every loop nest becomes a launch with static block size.
  pm.addNestedPass<func::FuncOp>(createParallelLoopTilingPass(
      {options.blockSize}, /*noMinMaxBounds=*/true));
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  // Kernels read the seeds from device memory, not as parameters the host
  // code loaded (a CUDA graph replays with the next call's seeds).
  pm.addNestedPass<func::FuncOp>(act::createActSeedsInKernelsPass());
  // Constants and index math the kernels use move into the launches, so
  // outlining passes them as immediates, not as kernel parameters.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  // Steps whose host code touches no buffer run stream-ordered.
  pm.addNestedPass<func::FuncOp>(act::createActMarkStreamOrderedPass());
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());

  // From here on upstream's gpu-lower-to-nvvm-pipeline
  // (GPUToNVVMPipeline.cpp), pass for pass, except that the NVVM target also
  // links libdevice: convert-gpu-to-nvvm turns floor, fabs, roundeven, erf
  // into __nv_* calls, which ptxas cannot resolve otherwise, and the
  // upstream builder has no option for it.
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.linkLibs.push_back(options.libdevice);
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  pm.addNestedPass<gpu::GPUModuleOp>(createStripDebugInfoPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addNestedPass<gpu::GPUModuleOp>(LLVM::createNVVMOptimizeForTargetPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  // The kernels' vectors of i1 (a mask's decode) are stored a byte per
  // element, as the buffers of i1 hold them.
  pm.addPass(act::createActByteI1VectorsPass());

  // Host allocations through the runtime's hooks (act::rt allocation
  // accounting; in GPU mode they return managed memory the kernels can
  // reach), like the CPU pipeline's count-allocations.
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = true;
  memrefOptions.useAlignedAlloc = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = getCompilationTarget(options.format);
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::act::registerPipelines() {
  PassPipelineRegistration<GPUPipelineOptions>(
      "act-gpu-pipeline",
      "Lower a training graph with act ops to host code launching NVVM "
      "kernels (PTX embedded)",
      buildGPUPipeline);
  PassPipelineRegistration<CPUPipelineOptions>(
      "act-cpu-pipeline",
      "Lower a training graph with act ops to the LLVM dialect for the CPU",
      buildCPUPipeline);
}
