//===- InPlace.cpp - elementwise ops write into an input that dies --------===//

#include "act/Dialect/Act/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTINPLACEPASS
#include "act/Dialect/Act/Transforms/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

/// Whether `op` is the last use of `value` (every other use is in `op`'s
/// block, before it) and of the buffer behind it: `value` is produced in
/// that block by an op that allocates (not an argument, a constant or a
/// slice of another tensor), or reshapes (expand/collapse_shape, whose
/// result is the whole of its source's buffer) a value of which the same
/// holds.
bool diesAt(Value value, Operation *op) {
  Operation *producer = value.getDefiningOp();
  if (!producer || producer->getBlock() != op->getBlock())
    return false;
  if (isa<arith::ConstantOp, bufferization::ToTensorOp, tensor::ExtractSliceOp,
          tensor::CastOp, tensor::ReshapeOp>(producer))
    return false;
  Block *block = op->getBlock();
  for (Operation *user : value.getUsers()) {
    if (user == op)
      continue;
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor || ancestor == op || !ancestor->isBeforeInBlock(op))
      return false;
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(producer))
    return diesAt(expand.getSrc(), op);
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(producer))
    return diesAt(collapse.getSrc(), op);
  return true;
}

/// `op` with its init `initIndex` replaced by its input `inputIndex`, which
/// the payload then reads as the init (a read-modify-write of the input's
/// buffer: tiling keeps reading and writing the same slice, so
/// bufferization sees no conflict).
void readInputAsInit(RewriterBase &rewriter, linalg::GenericOp op,
                     unsigned inputIndex, unsigned initIndex) {
  SmallVector<Value> inputs(op.getInputs());
  SmallVector<Value> inits(op.getOutputs());
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  inits[initIndex] = inputs[inputIndex];
  inputs.erase(inputs.begin() + inputIndex);
  maps.erase(maps.begin() + inputIndex);
  rewriter.setInsertionPoint(op);
  auto fused = linalg::GenericOp::create(rewriter, op.getLoc(),
                                         op->getResultTypes(), inputs, inits,
                                         maps, op.getIteratorTypesArray());
  fused->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.inlineRegionBefore(op.getRegion(), fused.getRegion(),
                              fused.getRegion().end());
  Block &body = fused.getRegion().front();
  unsigned numInputs = op.getNumDpsInputs();
  rewriter.replaceAllUsesWith(body.getArgument(inputIndex),
                              body.getArgument(numInputs + initIndex));
  body.eraseArgument(inputIndex);
  rewriter.replaceOp(op, fused->getResults());
}

struct InPlacePass : act::impl::ActInPlacePassBase<InPlacePass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : generics) {
      if (!op.hasPureTensorSemantics() ||
          op.getNumParallelLoops() != op.getNumLoops())
        continue;
      // One input per op (the payload reads each block argument once).
      for (OpOperand &init : op.getDpsInitsMutable()) {
        if (!init.get().getDefiningOp<tensor::EmptyOp>() ||
            op.payloadUsesValueFromOperand(&init))
          continue;
        AffineMap map = op.getMatchingIndexingMap(&init);
        OpOperand *chosen = nullptr;
        for (OpOperand *input : op.getDpsInputOperands()) {
          Value value = input->get();
          if (value.getType() == init.get().getType() &&
              op.getMatchingIndexingMap(input) == map &&
              llvm::count(op.getInputs(), value) == 1 && diesAt(value, op)) {
            chosen = input;
            break;
          }
        }
        if (!chosen)
          continue;
        readInputAsInit(rewriter, op, chosen->getOperandNumber(),
                        init.getOperandNumber() - op.getNumDpsInputs());
        break;
      }
    }
  }
};

} // namespace
