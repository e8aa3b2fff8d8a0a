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

#include "act/Dialect/Act/IR/Act.h"
#include "act/Dialect/Act/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTHOISTENCODESPASS
#define GEN_PASS_DEF_ACTSINKTOUSERSPASS
#include "act/Dialect/Act/Transforms/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {
/// Bytes of a static tensor value; nullopt for anything else.
std::optional<int64_t> tensorBytes(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() ||
      !type.getElementType().isIntOrIndexOrFloat())
    return std::nullopt;
  int64_t bits = type.getElementType().isIndex()
                     ? 64
                     : type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * std::max<int64_t>(1, bits / 8);
}

/// The ancestor of `op` in `block`, or null.
Operation *ancestorIn(Block *block, Operation *op) {
  return block->findAncestorOpInBlock(*op);
}

/// Whether `v` lives longer when `op` (in `block`) moves down to just
/// before `to`: no other reader of `v` is at or after `to`.
bool isExtended(Block *block, Operation *op, Value v, Operation *to) {
  for (Operation *user : v.getUsers()) {
    Operation *at = ancestorIn(block, user);
    if (at && at != op && !at->isBeforeInBlock(to))
      return false;
  }
  return true;
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
    // Operands that then live longer: values computed in this function
    // (arguments are the caller's, constants are never freed) with no
    // other reader at or after `first`, counted once each. A destination
    // (a DPS init) does not: the result is written into it.
    // Values its regions read count as operands (a lowered encode's chunk
    // loop slices its input inside).
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    SetVector<Value> read;
    for (OpOperand &use : op->getOpOperands())
      if (!dps || !dps.isDpsInit(&use))
        read.insert(use.get());
    getUsedValuesDefinedAbove(op->getRegions(), read);
    int64_t extended = 0;
    for (Value operand : read) {
      if (!operand.getDefiningOp() || matchPattern(operand, m_Constant()) ||
          !isa<TensorType>(operand.getType()) ||
          !isExtended(block, op, operand, first))
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
      if (!isa<tensor::EmptyOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp,
               tensor::ExtractSliceOp>(crossed))
        for (Value result : crossed->getResults())
          if (!isExtended(block, op, result, first))
            allocated += tensorBytes(result).value_or(0);
      for (Value operand : crossed->getOperands()) {
        if (!operand.getDefiningOp() || read.contains(operand) ||
            isa<tensor::EmptyOp>(operand.getDefiningOp()) ||
            matchPattern(operand, m_Constant()))
          continue;
        Operation *lastReader = nullptr;
        for (Operation *user : operand.getUsers())
          if (Operation *at = ancestorIn(block, user))
            if (!lastReader || lastReader->isBeforeInBlock(at))
              lastReader = at;
        if (lastReader == crossed)
          died += tensorBytes(operand).value_or(0);
      }
    }
    if (allocated <= died)
      op->moveBefore(first);
  }
};
} // namespace
