//===- TransposeViews.cpp - transposed kernel operands as strided views ---===//

#include "act/Dialect/Act/Transforms/Passes.h"
#include "act/Support/BufferWrites.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTTRANSPOSEVIEWSPASS
#include "act/Dialect/Act/Transforms/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

bool readsThroughStrides(Operation *op, Value buffer) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp, linalg::Conv2DNchwFchwOp,
           linalg::Conv2DNgchwGfchwOp>(op))
    return false;
  auto linalgOp = cast<linalg::LinalgOp>(op);
  return llvm::none_of(linalgOp.getDpsInits(),
                       [&](Value init) { return init == buffer; });
}

struct TransposeViewsPass
    : act::impl::ActTransposeViewsPassBase<TransposeViewsPass> {
  void runOnOperation() override {
    SmallVector<linalg::TransposeOp> transposes;
    getOperation().walk(
        [&](linalg::TransposeOp op) { transposes.push_back(op); });
    for (linalg::TransposeOp op : transposes) {
      if (!op.hasPureBufferSemantics())
        continue;
      Value source = op.getInput(), target = op.getInit();
      auto alloc = target.getDefiningOp<memref::AllocOp>();
      if (!alloc || alloc->getBlock() != op->getBlock())
        continue;
      Block *block = op->getBlock();
      Operation *last = nullptr;
      bool viewable = true;
      for (Operation *user : target.getUsers()) {
        if (user == op)
          continue;
        if (user->getBlock() != block || user->isBeforeInBlock(op) ||
            !readsThroughStrides(user, target)) {
          viewable = false;
          break;
        }
        if (!last || last->isBeforeInBlock(user))
          last = user;
      }
      if (!viewable || !last)
        continue;
      if (act::mayWriteBufferBetween(op, last, source))
        continue;
      // memref.reinterpret_cast, not memref.transpose: the buffer analyses
      // (BufferViewFlowAnalysis, so deallocation) follow ViewLikeOpInterface,
      // which memref.transpose does not implement.
      auto sourceType = cast<MemRefType>(source.getType());
      SmallVector<int64_t> strides;
      int64_t offset;
      if (failed(sourceType.getStridesAndOffset(strides, offset)) ||
          !sourceType.hasStaticShape() || ShapedType::isDynamic(offset) ||
          llvm::any_of(strides, ShapedType::isDynamic))
        continue;
      SmallVector<int64_t> sizes, permutedStrides;
      for (int64_t dim : op.getPermutation()) {
        sizes.push_back(sourceType.getDimSize(dim));
        permutedStrides.push_back(strides[dim]);
      }
      auto viewType = MemRefType::get(
          sizes, sourceType.getElementType(),
          StridedLayoutAttr::get(op.getContext(), offset, permutedStrides),
          sourceType.getMemorySpace());
      OpBuilder builder(op);
      auto view = memref::ReinterpretCastOp::create(builder, op.getLoc(),
                                                    viewType, source, offset,
                                                    sizes, permutedStrides);
      target.replaceUsesWithIf(view, [&](OpOperand &use) {
        return use.getOwner() != op.getOperation();
      });
      op->erase();
      if (alloc->use_empty())
        alloc->erase();
    }
  }
};

} // namespace
