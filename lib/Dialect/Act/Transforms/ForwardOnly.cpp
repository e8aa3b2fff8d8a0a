//===- ForwardOnly.cpp - a training step without its backward -------------===//
//
// act-forward-only (Passes.td): a joint step keeps the results it is told
// to (the loss by default); what only the others needed, the backward and
// with it every saved value, is erased.
//
//===----------------------------------------------------------------------===//

#include "act/Dialect/Act/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTFORWARDONLYPASS
#include "act/Dialect/Act/Transforms/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {
struct ActForwardOnlyPass
    : act::impl::ActForwardOnlyPassBase<ActForwardOnlyPass> {
  using ActForwardOnlyPassBase::ActForwardOnlyPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() ||
        (function.empty() ? func.isPrivate() : func.getSymName() != function))
      return;
    SmallVector<int64_t> kept(keep.begin(), keep.end());
    if (kept.empty())
      kept.push_back(0);
    unsigned results = func.getNumResults();
    llvm::SmallBitVector keepMask(results);
    for (int64_t k : kept) {
      if (k < 0 || k >= int64_t(results)) {
        func.emitError() << "act-forward-only: @" << func.getSymName()
                         << " has " << results << " results, no result " << k;
        return signalPassFailure();
      }
      keepMask.set(k);
    }
    // The return keeps the kept results, in their order.
    for (Block &block : func.getBody()) {
      auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
      if (!ret)
        continue;
      SmallVector<Value> operands;
      for (unsigned i = 0; i < results; ++i)
        if (keepMask.test(i))
          operands.push_back(ret.getOperand(i));
      ret->setOperands(operands);
    }
    llvm::BitVector erase(results);
    for (unsigned i = 0; i < results; ++i)
      erase[i] = !keepMask.test(i);
    if (failed(func.eraseResults(erase)))
      return signalPassFailure();
    // What nothing reads any more, from the bottom up: the backward.
    SmallVector<Operation *> ops;
    for (Block &block : func.getBody())
      for (Operation &op : block.without_terminator())
        ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (isOpTriviallyDead(op))
        op->erase();
  }
};
} // namespace
