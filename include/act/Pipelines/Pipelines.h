//===- Pipelines.h - act's registered pass pipelines ------------*- C++ -*-===//

#ifndef ACT_PIPELINES_PIPELINES_H
#define ACT_PIPELINES_PIPELINES_H

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
};

/// Training graph with act ops on tensors -> LLVM dialect, for the JIT
/// (act-run) or an object file: convert-act-to-linalg, one-shot
/// bufferization across function boundaries, buffer deallocation, loops,
/// and the conversions to LLVM.
void buildCPUPipeline(OpPassManager &pm, const CPUPipelineOptions &options);

/// Registers act-cpu-pipeline.
void registerPipelines();

} // namespace mlir::act

#endif // ACT_PIPELINES_PIPELINES_H
