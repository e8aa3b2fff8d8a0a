//===- CollapseParallelLoops.cpp - one parallel loop per nest -------------===//
//
// act-collapse-parallel-loops (Passes.td) prepares the lowered step's loop
// nests for act-gpu-pipeline's mapping to launches: every outermost
// multi-dimensional scf.parallel becomes one loop over all its iterations.
//
//===----------------------------------------------------------------------===//

#include "act/Codegen/Passes.h"

#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>

using namespace mlir;

namespace mlir::act {
#define GEN_PASS_DEF_ACTCOLLAPSEPARALLELLOOPSPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

namespace {
struct ActCollapseParallelLoopsPass
    : act::impl::ActCollapseParallelLoopsPassBase<
          ActCollapseParallelLoopsPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (loop.getNumLoops() > 1 && !loop->getParentOfType<scf::ParallelOp>())
        loops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp loop : loops) {
      std::vector<unsigned> all(loop.getNumLoops());
      std::iota(all.begin(), all.end(), 0u);
      rewriter.setInsertionPoint(loop);
      collapseParallelLoops(rewriter, loop, {all});
    }
  }
};
} // namespace
