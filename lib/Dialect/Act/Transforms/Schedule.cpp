//===- Schedule.cpp - memory-aware order of a step's ops ------------------===//
//
// Two reorderings of a step's top-level block on tensors (Passes.td):
// act-hoist-encodes encodes each saved value as soon as it is computed, so
// the forward's last reader of it may write in place; act-sink-to-users
// moves an op down to its first user when its results are larger than the
// operands it would keep alive, so every program point it crosses holds
// fewer live bytes.
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/TrainingGraph.h"
#include "act/Dialect/Act/IR/Act.h"
#include "act/Dialect/Act/Transforms/Passes.h"
#include "act/Support/BlockOrder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTHOISTENCODESPASS
#define GEN_PASS_DEF_ACTSINKTOUSERSPASS
#include "act/Dialect/Act/Transforms/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {
/// Bytes of a static tensor value; nullopt for anything else.
std::optional<int64_t> tensorBytes(Value v) {
  return act::getTensorBytes(dyn_cast<RankedTensorType>(v.getType()));
}

/// The ancestor of `op` in `block`, or null.
Operation *ancestorIn(Block *block, Operation *op) {
  return block->findAncestorOpInBlock(*op);
}

/// Views and empty tensors: ops whose results take no buffer of their own.
bool allocatesNothing(Operation *op) {
  return isa<tensor::EmptyOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp,
             tensor::ExtractSliceOp>(op);
}

struct HoistEncodesPass : act::impl::ActHoistEncodesPassBase<HoistEncodesPass> {
  void runOnOperation() override {
    // Encodes placed after the same op keep their order (ids ascending).
    llvm::DenseMap<Operation *, Operation *> lastPlaced;
    SmallVector<act::EncodeOp> encodes;
    getOperation().walk([&](act::EncodeOp op) {
      if (op->getBlock()->getParentOp() == getOperation())
        encodes.push_back(op);
    });
    for (act::EncodeOp encode : encodes) {
      Block *block = encode->getBlock();
      Operation *after = nullptr; // null: the start of the block
      for (Value operand : encode->getOperands()) {
        Operation *def = operand.getDefiningOp();
        Operation *at = def ? ancestorIn(block, def) : nullptr;
        if (at && (!after || after->isBeforeInBlock(at)))
          after = at;
      }
      Operation *&last = lastPlaced[after];
      Operation *anchor = last ? last : after;
      if (anchor)
        encode->moveAfter(anchor);
      else
        encode->moveBefore(&block->front());
      last = encode;
    }
  }
};

struct SinkToUsersPass : act::impl::ActSinkToUsersPassBase<SinkToUsersPass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody()) {
      SmallVector<Operation *> ops;
      for (Operation &op : block.without_terminator())
        ops.push_back(&op);
      for (Operation *op : llvm::reverse(ops))
        sink(&block, op);
    }
  }

  void sink(Block *block, Operation *op) {
    if (op->getNumResults() == 0 || !isMemoryEffectFree(op))
      return;
    // The first user in the block.
    Operation *first = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *at = ancestorIn(block, user);
      if (!at || at == op)
        return;
      if (!first || at->isBeforeInBlock(first))
        first = at;
    }
    if (!first || first == op->getNextNode())
      return;
    // The destination of an insert_slice (a zero-padded buffer) stays
    // before the inserted value's producer: empty-tensor elimination then
    // computes the value in place, inside the destination.
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(first);
        insert && llvm::is_contained(op->getResults(), insert.getDest()))
      return;
    int64_t produced = 0;
    for (Value result : op->getResults()) {
      std::optional<int64_t> bytes = tensorBytes(result);
      if (!bytes)
        return;
      produced += *bytes;
    }
    // Inputs that then live longer: values computed in this function
    // (arguments are the caller's, constants are never freed) with no
    // other reader at or after `first`.
    SetVector<Value> read = act::getInputsRead(op);
    // Whether an op between `from` and `first` (both excluded) allocates.
    auto allocatesBefore = [&](Operation *from) {
      for (Operation *at = from->getNextNode(); at != first;
           at = at->getNextNode())
        if (!allocatesNothing(at))
          return true;
      return false;
    };
    int64_t extended = 0;
    for (Value operand : read) {
      if (!operand.getDefiningOp() || matchPattern(operand, m_Constant()) ||
          !isa<TensorType>(operand.getType()) ||
          act::isReadAtOrAfter(block, operand, first, op))
        continue;
      // Read last by an op after `op`: alive until there anyway, and
      // longer only across views.
      Operation *lastReader = op;
      for (Operation *user : operand.getUsers())
        if (Operation *at = ancestorIn(block, user);
            at && lastReader->isBeforeInBlock(at))
          lastReader = at;
      if (lastReader != op && !allocatesBefore(lastReader))
        continue;
      std::optional<int64_t> bytes = tensorBytes(operand);
      if (!bytes)
        return;
      extended += *bytes;
    }
    if (produced <= extended)
      return;
    // At its new place the op also sees what the ops it crosses allocate
    // and is still live there; it must not exceed what dies among them
    // (its own operands aside), or the op's own point would rise.
    int64_t allocated = 0, died = 0;
    for (Operation *crossed = op->getNextNode(); crossed != first;
         crossed = crossed->getNextNode()) {
      if (!allocatesNothing(crossed))
        for (Value result : crossed->getResults())
          if (act::isReadAtOrAfter(block, result, first, op))
            allocated += tensorBytes(result).value_or(0);
      // What `crossed` is the last reader of (`first` follows it).
      for (Value operand : crossed->getOperands()) {
        if (!operand.getDefiningOp() || read.contains(operand) ||
            isa<tensor::EmptyOp>(operand.getDefiningOp()) ||
            matchPattern(operand, m_Constant()))
          continue;
        if (!act::isReadAtOrAfter(block, operand, crossed->getNextNode(),
                                  nullptr))
          died += tensorBytes(operand).value_or(0);
      }
    }
    if (allocated <= died)
      op->moveBefore(first);
  }
};
} // namespace
