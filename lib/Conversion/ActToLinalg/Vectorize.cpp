//===- Vectorize.cpp - vector code for act's lowered kernels --------------===//

#include "act/Conversion/ActToLinalg/ActLowering.h"
#include "act/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTVECTORIZEPASS
#include "act/Conversion/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {
/// Collects the vector.reduction ops a rewrite creates.
struct ReductionCollector : RewriterBase::Listener {
  SmallVector<vector::ReductionOp> created;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (auto reduction = dyn_cast<vector::ReductionOp>(op))
      created.push_back(reduction);
  }
};

struct ActVectorizePass : act::impl::ActVectorizePassBase<ActVectorizePass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> marked;
    llvm::DenseSet<Operation *> existing;
    getOperation().walk(
        [&](vector::MultiDimReductionOp op) { existing.insert(op); });
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(act::kVectorizeAttr))
        marked.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : marked) {
      op->removeAttr(act::kVectorizeAttr);
      // A vector of i1 is stored as packed bits, a tensor of i1 as bytes.
      if (llvm::any_of(op->getOperandTypes(), [](Type t) {
            auto shaped = dyn_cast<ShapedType>(t);
            return shaped && shaped.getElementType().isInteger(1);
          }))
        continue;
      if (op.hasDynamicShape() || failed(linalg::vectorizeOpPrecondition(op)))
        continue;
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::VectorizationResult> result =
          linalg::vectorize(rewriter, op);
      if (failed(result)) {
        op->emitError("act-vectorize: a kernel that meets the vectorizer's "
                      "preconditions failed to vectorize");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, result->replacements);
    }

    // The kernels' reductions (a group's min and max) as one reduction per
    // group, without NaN semantics: act's statistics are undefined for a
    // group holding a NaN (docs/Encodings.md), and LLVM expands a NaN-aware
    // reduce.fmin into a scalar chain instead of a shuffle tree.
    SmallVector<Operation *> reductions;
    getOperation().walk([&](vector::MultiDimReductionOp op) {
      if (!existing.contains(op))
        reductions.push_back(op);
    });
    if (reductions.empty())
      return;
    RewritePatternSet patterns(&getContext());
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerReduction);
    ReductionCollector collector;
    GreedyRewriteConfig config;
    config.setListener(&collector);
    if (failed(
            applyOpPatternsGreedily(reductions, std::move(patterns), config)))
      return signalPassFailure();
    for (vector::ReductionOp reduction : collector.created) {
      vector::CombiningKind kind = reduction.getKind();
      if (kind == vector::CombiningKind::MINNUMF ||
          kind == vector::CombiningKind::MAXNUMF)
        reduction.setFastmath(arith::FastMathFlags::nnan);
    }
  }
};
} // namespace
