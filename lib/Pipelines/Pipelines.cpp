//===- Pipelines.cpp - act's registered pass pipelines ---------------------===//

#include "act/Pipelines/Pipelines.h"

#include "act/Conversion/Passes.h"
#include "act/Dialect/Act/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::act::buildCPUPipeline(OpPassManager &pm,
                                 const CPUPipelineOptions &options) {
  pm.addPass(createConvertActToLinalgPass());
  // Elementwise arith/math on tensors become linalg.generic, which bufferizes.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());

  // Ops whose result lands in a destination write there directly.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
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
  pm.addNestedPass<func::FuncOp>(createActEarlyDeallocPass());

  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // What LLVM has no intrinsic for (erf) calls libm.
  pm.addPass(createConvertMathToLibmPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = options.countAllocations;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::act::registerPipelines() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "act-cpu-pipeline",
      "Lower a training graph with act ops to the LLVM dialect for the CPU",
      buildCPUPipeline);
}
