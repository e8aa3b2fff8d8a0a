//===- InitAll.cpp - register act and the dialects it works with ----------===//

#include "act/InitAll.h"

#include "act/Codegen/Passes.h"
#include "act/Conversion/ActToLinalg/EncodingLoweringImpl.h"
#include "act/Conversion/Passes.h"
#include "act/Dialect/Act/IR/Act.h"
#include "act/Dialect/Act/Transforms/Passes.h"
#include "act/Pipelines/Pipelines.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void mlir::act::registerActDialect(DialectRegistry &registry) {
  registry.insert<act::ActDialect>();
  registerEncodingLoweringExternalModels(registry);
}

void mlir::act::registerAllDialects(DialectRegistry &registry) {
  registerActDialect(registry);
  // What training graphs are written in.
  registry.insert<func::FuncDialect, linalg::LinalgDialect,
                  tensor::TensorDialect, arith::ArithDialect, math::MathDialect,
                  scf::SCFDialect, tosa::TosaDialect>();
  // What they are lowered through, on CPU and GPU.
  registry.insert<memref::MemRefDialect, bufferization::BufferizationDialect,
                  affine::AffineDialect, cf::ControlFlowDialect,
                  index::IndexDialect, vector::VectorDialect, ub::UBDialect,
                  gpu::GPUDialect, NVVM::NVVMDialect, LLVM::LLVMDialect>();

  // Interface models: bufferization of the ops above, and the
  // convert-to-llvm / inliner extensions of every upstream dialect.
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  // Tiling of linalg ops (act-vectorize tiles generics before vectorizing).
  linalg::registerTilingInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  vector::registerBufferizableOpInterfaceExternalModels(registry);
  // memref.alloc as an allocation (buffer-results-to-out-params hoists
  // returned allocations into the caller's buffer only through it).
  memref::registerAllocationOpInterfaceExternalModels(registry);
  // The aliases that arith.select (and memref's reallocs) make, for
  // BufferViewFlowAnalysis: act-early-dealloc frees a buffer after the last
  // use of every alias, and without these a select of two buffers was no
  // alias of either (the freed operand read later: a per-element sparse
  // decode's storage, NaN gradients from the second training step on).
  arith::registerBufferViewFlowOpInterfaceExternalModels(registry);
  memref::registerBufferViewFlowOpInterfaceExternalModels(registry);
  mlir::registerAllExtensions(registry);
  // Translation to LLVM IR, for the JIT and object files.
  mlir::registerAllToLLVMIRTranslations(registry);
  // Serialization of gpu.modules for NVIDIA targets (PTX, cubin).
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
}

void mlir::act::registerActPassesAndPipelines() {
  registerActPasses();
  registerActConversionPasses();
  registerActCodegenPasses();
  registerPipelines();
}

llvm::ArrayRef<llvm::StringRef> mlir::act::getActPassAndPipelineNames() {
  static const llvm::StringRef names[] = {"act-insert-encode-decode",
                                          "act-allocate-bits",
                                          "act-memory-report",
                                          "act-quantize-compute",
                                          "act-forward-only",
                                          "act-fuse-elementwise",
                                          "act-in-place",
                                          "act-tile-decoded-convolutions",
                                          "act-chunk-batch",
                                          "act-chunk-in-passes",
                                          "act-hoist-encodes",
                                          "act-sink-to-users",
                                          "act-transpose-views",
                                          "act-early-dealloc",
                                          "act-release-arguments",
                                          "act-pool-in-place",
                                          "act-shrink-reallocs",
                                          "act-chunk-buffers-to-stack",
                                          "act-hoist-stack-buffers",
                                          "act-buffer-peak",
                                          "convert-act-to-linalg",
                                          "act-vectorize",
                                          "act-byte-i1-vectors",
                                          "act-unit-stride-gathers",
                                          "act-strided-copies-to-loops",
                                          "act-prefetch-streams",
                                          "act-collapse-parallel-loops",
                                          "act-scalar-ops-to-kernels",
                                          "act-seeds-in-kernels",
                                          "act-mark-stream-ordered",
                                          "act-split-reductions",
                                          "act-outline-loops",
                                          "convert-linalg-to-act-kernels",
                                          "act-cpu-pipeline",
                                          "act-gpu-pipeline"};
  return names;
}

void mlir::act::registerAllPasses() {
  registerActPassesAndPipelines();
  mlir::registerAllPasses();
}
