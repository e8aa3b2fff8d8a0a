//===- HoistStackBuffers.cpp - chunk temporaries on the stack -------------===//

#include "act/Codegen/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTCHUNKBUFFERSTOSTACKPASS
#define GEN_PASS_DEF_ACTHOISTSTACKBUFFERSPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

/// Whether every use of `op`'s result lies in `body` and none is a
/// terminator's operand (carried out of the iteration).
bool usedOnlyIn(Operation *op, Block *body) {
  return llvm::all_of(op->getUsers(), [&](Operation *user) {
    return body->findAncestorOpInBlock(*user) &&
           !user->hasTrait<OpTrait::IsTerminator>();
  });
}

struct ChunkBuffersToStackPass
    : act::impl::ActChunkBuffersToStackPassBase<ChunkBuffersToStackPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<memref::AllocOp> allocs;
    WalkResult walk = getOperation().walk([&](memref::AllocOp op) {
      Operation *parent = op->getParentOp();
      if (!isa<scf::ForallOp, scf::ParallelOp>(parent))
        return WalkResult::advance();
      MemRefType type = op.getType();
      bool movable =
          type.hasStaticShape() && type.getElementType().isIntOrFloat() &&
          type.getLayout().isIdentity() && usedOnlyIn(op, op->getBlock());
      int64_t bytes =
          movable
              ? type.getNumElements() *
                    std::max<int64_t>(
                        1, type.getElementType().getIntOrFloatBitWidth() / 8)
              : 0;
      if (movable && bytes <= maxBytes) {
        allocs.push_back(op);
        return WalkResult::advance();
      }
      // The deallocation pipeline does not free a parallel body's heap
      // buffers: say so rather than leak one per iteration.
      op->emitError("act-chunk-buffers-to-stack: a parallel loop's body "
                    "allocates ")
          << type
          << (movable
                  ? " (more than max-bytes = " + std::to_string(maxBytes) + ")"
                  : "")
          << " on the heap; it would not be freed";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (memref::AllocOp alloc : allocs) {
      OpBuilder b(alloc);
      auto alloca = memref::AllocaOp::create(b, alloc.getLoc(), alloc.getType(),
                                             alloc.getAlignmentAttr());
      alloc.replaceAllUsesWith(alloca.getResult());
      alloc.erase();
    }
  }
};

struct HoistStackBuffersPass
    : act::impl::ActHoistStackBuffersPassBase<HoistStackBuffersPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    SmallVector<memref::AllocaOp> allocas;
    func.walk([&](memref::AllocaOp op) { allocas.push_back(op); });
    Block &entry = func.getBody().front();
    for (memref::AllocaOp alloca : allocas) {
      if (!alloca.getType().hasStaticShape() || !alloca.getOperands().empty())
        continue;
      // The innermost enclosing op with regions must be a sequential loop,
      // and no loop that runs its iterations at once may lie on the way to
      // the function.
      auto loop = dyn_cast<scf::ForOp>(alloca->getParentOp());
      if (!loop)
        continue;
      bool sequential = true;
      for (Operation *p = loop; p != func; p = p->getParentOp())
        if (isa<scf::ForallOp, scf::ParallelOp>(p))
          sequential = false;
      if (!sequential)
        continue;
      // One iteration's buffer may serve the next only if nothing carries
      // it out of the iteration.
      if (usedOnlyIn(alloca, loop.getBody()))
        alloca->moveBefore(&entry, entry.begin());
    }
  }
};

} // namespace
