//===- Passes.h - act conversions -------------------------------*- C++ -*-===//

#ifndef ACT_CONVERSION_PASSES_H
#define ACT_CONVERSION_PASSES_H

#include "act/Dialect/Act/IR/EncodingLowering.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::act {

#define GEN_PASS_DECL
#include "act/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "act/Conversion/Passes.h.inc"

} // namespace mlir::act

#endif // ACT_CONVERSION_PASSES_H
