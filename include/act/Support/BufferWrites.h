//===- BufferWrites.h - may an op write a buffer? -------------------------===//
//
// The conservative test act's buffer rewrites use before reading a buffer
// later than the IR did (a transpose as a view, a padded copy read in
// place): no op in between may write the memory behind it.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_SUPPORT_BUFFERWRITES_H
#define ACT_SUPPORT_BUFFERWRITES_H

#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"

#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::act {

/// The buffer `value` views (through view-like ops), or `value`.
inline Value getBufferRoot(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// Whether `op` or an op nested in it may write (or free) memory of the
/// allocation `buffer` views. `origin` (upstream's BufferOriginAnalysis of
/// the enclosing function) follows views and buffers carried through loops
/// (a vectorized generic's scf.for iter_args); a target of unknown origin
/// (two function arguments may be one buffer) may. Ops without
/// MemoryEffectOpInterface that are not pure and do not just hold others
/// (loops) are assumed to write.
inline bool mayWriteBuffer(Operation *op, Value buffer,
                           BufferOriginAnalysis &origin) {
  bool writes = false;
  op->walk([&](Operation *nested) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects) {
      writes = !nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
               !isPure(nested);
      return writes ? WalkResult::interrupt() : WalkResult::advance();
    }
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (auto &instance : instances) {
      if (!isa<MemoryEffects::Write, MemoryEffects::Free>(instance.getEffect()))
        continue;
      Value target = instance.getValue();
      if (!target || origin.isSameAllocation(target, buffer) != false) {
        writes = true;
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return writes;
}

/// Whether an op strictly after `from` and up to `to` (same block) may write
/// the memory `buffer` views, by `origin`, an analysis of the enclosing
/// function (built once for several queries while the IR does not change).
inline bool mayWriteBufferBetween(Operation *from, Operation *to, Value buffer,
                                  BufferOriginAnalysis &origin) {
  for (Operation *op = from->getNextNode(); op; op = op->getNextNode()) {
    if (mayWriteBuffer(op, buffer, origin))
      return true;
    if (op == to)
      return false;
  }
  return true;
}

/// The same with an analysis of its own (one walk of the whole function:
/// not for a query per op of a large function).
inline bool mayWriteBufferBetween(Operation *from, Operation *to,
                                  Value buffer) {
  BufferOriginAnalysis origin(from->getParentOp());
  return mayWriteBufferBetween(from, to, buffer, origin);
}

} // namespace mlir::act

#endif // ACT_SUPPORT_BUFFERWRITES_H
