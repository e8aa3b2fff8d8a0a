//===- EarlyDealloc.cpp - free buffers right after their last use ---------===//

#include "act/Codegen/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTEARLYDEALLOCPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

struct EarlyDeallocPass : act::impl::ActEarlyDeallocPassBase<EarlyDeallocPass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation().walk([&](memref::DeallocOp op) { deallocs.push_back(op); });
    if (deallocs.empty())
      return;
    BufferViewFlowAnalysis aliases(getOperation());
    for (memref::DeallocOp dealloc : deallocs) {
      Block *block = dealloc->getBlock();
      Value buffer = dealloc.getMemref();
      // A buffer yielded by a region (an scf.index_switch's result) is freed
      // through its base buffer: move the metadata's extraction with it.
      auto extract = buffer.getDefiningOp<memref::ExtractStridedMetadataOp>();
      if (extract && extract->getBlock() == block &&
          extract.getBaseBuffer().hasOneUse())
        buffer = extract.getSource();
      else
        extract = nullptr;
      Operation *last = buffer.getDefiningOp();
      if (last && last->getBlock() != block)
        continue;
      bool movable = true;
      for (Value alias : aliases.resolve(buffer)) {
        for (Operation *user : alias.getUsers()) {
          if (user == dealloc || user == extract)
            continue;
          Operation *ancestor = block->findAncestorOpInBlock(*user);
          if (!ancestor) {
            movable = false;
            break;
          }
          if (!last || last->isBeforeInBlock(ancestor))
            last = ancestor;
        }
        if (!movable)
          break;
      }
      Operation *first = extract ? extract.getOperation() : dealloc;
      if (!movable || !last || last == first || !last->isBeforeInBlock(first))
        continue;
      if (extract)
        extract->moveAfter(last);
      dealloc->moveAfter(extract ? extract.getOperation() : last);
    }
  }
};

} // namespace
