//===- Passes.h - act passes ------------------------------------*- C++ -*-===//

#ifndef ACT_DIALECT_ACT_TRANSFORMS_PASSES_H
#define ACT_DIALECT_ACT_TRANSFORMS_PASSES_H

#include "act/Analysis/BitAllocation.h"
#include "act/Dialect/Act/IR/Act.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::act {

/// How act-insert-encode-decode chooses encodings.
enum class EncodingPolicy { None, Uniform, Lossless };

#define GEN_PASS_DECL
#include "act/Dialect/Act/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "act/Dialect/Act/Transforms/Passes.h.inc"

} // namespace mlir::act

#endif // ACT_DIALECT_ACT_TRANSFORMS_PASSES_H
