//===- BlockOrder.h - what an op reads, who reads after it ----------------===//
//
// The two questions act's reorderings of a block ask (act-sink-to-users,
// act-fuse-elementwise's recomputation): which values an op reads as
// inputs, and whether a value is still read at or after a point.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_SUPPORT_BLOCKORDER_H
#define ACT_SUPPORT_BLOCKORDER_H

#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::act {

/// The values `op` reads as inputs, each once: its operands other than
/// destinations (DPS inits, which its results overwrite) and the values its
/// regions capture (a lowered encode's chunk loop slices its input inside).
inline SetVector<Value> getInputsRead(Operation *op) {
  auto dps = dyn_cast<DestinationStyleOpInterface>(op);
  SetVector<Value> read;
  for (OpOperand &use : op->getOpOperands())
    if (!dps || !dps.isDpsInit(&use))
      read.insert(use.get());
  getUsedValuesDefinedAbove(op->getRegions(), read);
  return read;
}

/// Whether an op of `block` other than `except` reads `value` (itself or
/// through an op nested in it) at or after `at`, an op of `block`.
inline bool isReadAtOrAfter(Block *block, Value value, Operation *at,
                            Operation *except) {
  for (Operation *user : value.getUsers()) {
    Operation *reader = block->findAncestorOpInBlock(*user);
    if (reader && reader != except && !reader->isBeforeInBlock(at))
      return true;
  }
  return false;
}

} // namespace mlir::act

#endif // ACT_SUPPORT_BLOCKORDER_H
