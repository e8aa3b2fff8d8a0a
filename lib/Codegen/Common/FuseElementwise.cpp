//===- FuseElementwise.cpp - single-use elementwise producers fused -------===//

#include "act/Analysis/TrainingGraph.h"
#include "act/Codegen/Passes.h"
#include "act/Support/BlockOrder.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTFUSEELEMENTWISEPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {
/// Bytes of a static tensor; nullopt otherwise.
std::optional<int64_t> staticBytes(Type type) {
  return act::getTensorBytes(dyn_cast<RankedTensorType>(type));
}

/// Whether `producer`, read by several ops, is computed inside each of them
/// instead: every reader can fuse it (so it disappears), and the tensors it
/// reads that would then live until its last reader (computed here, no
/// later reader; captured tensors included) hold no more bytes than its
/// result, which no longer lives at all. A BatchNorm backward's normalized
/// input (x - mean) * invstd, read by two ops, is then never materialized;
/// with decode-into-consumers neither is the decoded x.
bool recomputedByEveryReader(linalg::GenericOp producer) {
  if (producer->getNumResults() != 1 || producer.getNumReductionLoops() != 0)
    return false;
  Block *block = producer->getBlock();
  Operation *last = nullptr;
  for (OpOperand &use : producer->getResult(0).getUses()) {
    Operation *reader = use.getOwner();
    if (!isa<linalg::GenericOp>(reader) || reader->getBlock() != block ||
        !linalg::areElementwiseOpsFusable(&use))
      return false;
    if (!last || last->isBeforeInBlock(reader))
      last = reader;
  }
  std::optional<int64_t> produced =
      staticBytes(producer->getResult(0).getType());
  if (!produced)
    return false;
  int64_t extended = 0;
  for (Value value : act::getInputsRead(producer)) {
    if (!isa<TensorType>(value.getType()) || !value.getDefiningOp() ||
        matchPattern(value, m_Constant()) ||
        act::isReadAtOrAfter(block, value, last, producer))
      continue;
    std::optional<int64_t> bytes = staticBytes(value.getType());
    if (!bytes)
      return false;
    extended += *bytes;
  }
  return extended <= *produced;
}

struct FuseElementwisePass
    : act::impl::ActFuseElementwisePassBase<FuseElementwisePass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    int64_t limit = maxOperands;
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [limit](OpOperand *operand) {
          Operation *producer = operand->get().getDefiningOp();
          if (!producer)
            return false;
          // The fused op reads the consumer's operands but this one, and
          // the producer's.
          if (limit > 0 && int64_t(operand->getOwner()->getNumOperands() - 1 +
                                   producer->getNumOperands()) > limit)
            return false;
          if (producer->hasOneUse())
            return true;
          auto generic = dyn_cast<linalg::GenericOp>(producer);
          return generic && recomputedByEveryReader(generic);
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
