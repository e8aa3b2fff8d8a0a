//===- Act.h - act dialect --------------------------------------*- C++ -*-===//
//
// The act dialect: its encodings (attributes), the encoded type and the
// encode/decode operations.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_DIALECT_ACT_IR_ACT_H
#define ACT_DIALECT_ACT_IR_ACT_H

#include "act/Dialect/Act/IR/ActStorage.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "act/Dialect/Act/IR/ActDialect.h.inc"
#include "act/Dialect/Act/IR/ActEnums.h.inc"

namespace mlir::act {
/// Bytes of one group statistic stored in `format` (#act.quant's `stats`).
inline int64_t getStatBytes(StatFormat format) {
  return format == StatFormat::BF16 ? 2 : 4;
}
} // namespace mlir::act
#include "act/Dialect/Act/IR/ActInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "act/Dialect/Act/IR/ActAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "act/Dialect/Act/IR/ActTypes.h.inc"

#define GET_OP_CLASSES
#include "act/Dialect/Act/IR/ActOps.h.inc"

#endif // ACT_DIALECT_ACT_IR_ACT_H
