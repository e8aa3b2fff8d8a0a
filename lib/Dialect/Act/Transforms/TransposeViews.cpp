//===- TransposeViews.cpp - transposed kernel operands as strided views ---===//

#include "act/Dialect/Act/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTTRANSPOSEVIEWSPASS
#include "act/Dialect/Act/Transforms/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

/// The buffer `value` views (through view-like ops), or `value`.
Value getRoot(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// Whether two roots may be the same memory: the same value, or two
/// function arguments (the caller may pass one buffer twice).
bool mayAlias(Value a, Value b) {
  return a == b || (isa<BlockArgument>(a) && isa<BlockArgument>(b));
}

/// Whether `op` or an op nested in it may write memory that `root` holds.
bool mayWrite(Operation *op, Value root) {
  bool writes = false;
  op->walk([&](Operation *nested) {
    if (writes)
      return WalkResult::interrupt();
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects) {
      // Ops that only hold others (loops, their terminators) are judged by
      // what they hold.
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
      if (!target || mayAlias(getRoot(target), root)) {
        writes = true;
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return writes;
}

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
      Value root = getRoot(source);
      for (Operation *between = op->getNextNode();
           between != last->getNextNode(); between = between->getNextNode())
        if (mayWrite(between, root)) {
          viewable = false;
          break;
        }
      if (!viewable)
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
