//===- SplitReductions.cpp - reductions with too few outputs, in two steps ===//
//
// act-split-reductions: act-gpu-pipeline maps the parallel loops of a linalg
// op to threads and runs its reduction loops inside each thread. A
// reduction with few outputs (BatchNorm's sums over batch and image, a
// convolution's weight gradient, summed over the batch) then ran on a block
// or two, each thread looping over thousands of elements. This pass makes
// the outermost reduction loops parallel, into partial results, and sums
// those in a second op.
//
//===----------------------------------------------------------------------===//

#include "act/Codegen/Passes.h"
#include "act/Support/OptionLoc.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTSPLITREDUCTIONSPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

/// The op each output of `op` is combined by (`out = combiner(x, out)`),
/// with a neutral element, or nothing.
std::optional<SmallVector<Operation *>> getCombiners(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  SmallVector<BlockArgument> outs(
      body->getArguments().drop_front(op.getNumDpsInputs()));
  SmallVector<Operation *> combiners;
  for (unsigned i = 0; i < outs.size(); ++i) {
    SmallVector<Operation *> ops;
    if (!matchReduction(outs, i, ops) || ops.size() != 1 ||
        ops[0]->getNumOperands() != 2 || ops[0]->getNumResults() != 1 ||
        !arith::getNeutralElement(ops[0]))
      return std::nullopt;
    combiners.push_back(ops[0]);
  }
  return combiners;
}

/// The reduction loops of `op` to run in parallel (outermost first, until
/// `minThreads` iterations are parallel, leaving at least `minWork`
/// iterations of reduction per thread, and the partial results within
/// `maxPartialBytes`); empty if none should be.
SmallVector<unsigned> chooseLoops(linalg::LinalgOp op, int64_t minThreads,
                                  int64_t minWork, int64_t maxPartialBytes) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return {};
  int64_t parallel = 1, reduction = 1;
  SmallVector<unsigned> reductionLoops;
  for (auto [i, type] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (type == utils::IteratorType::parallel) {
      parallel *= ranges[i];
    } else {
      reduction *= ranges[i];
      reductionLoops.push_back(i);
    }
  }
  // Bytes of one partial result of every output.
  int64_t elementBytes = 0;
  for (Value init : op.getDpsInits())
    elementBytes +=
        (getElementTypeOrSelf(init.getType()).getIntOrFloatBitWidth() + 7) / 8;
  SmallVector<unsigned> chosen;
  for (unsigned loop : reductionLoops) {
    if (parallel >= minThreads || reduction / ranges[loop] < minWork ||
        parallel * ranges[loop] * elementBytes > maxPartialBytes)
      break;
    chosen.push_back(loop);
    parallel *= ranges[loop];
    reduction /= ranges[loop];
  }
  return chosen;
}

/// `op` as partial results over the `chosen` reduction loops, combined
/// into its outputs by a second op per output (returned).
SmallVector<linalg::GenericOp> split(RewriterBase &rewriter,
                                     linalg::GenericOp op,
                                     ArrayRef<unsigned> chosen,
                                     ArrayRef<Operation *> combiners) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  rewriter.setInsertionPoint(op);

  // Partial results: the chosen loops' extents, then the output's shape,
  // filled with the combiner's neutral element.
  SmallVector<Value> partials;
  SmallVector<AffineMap> maps(op.getIndexingMapsArray());
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned loop : chosen)
    iterators[loop] = utils::IteratorType::parallel;
  for (auto [i, init] : llvm::enumerate(op.getDpsInits())) {
    auto type = cast<RankedTensorType>(init.getType());
    SmallVector<int64_t> shape;
    for (unsigned loop : chosen)
      shape.push_back(ranges[loop]);
    llvm::append_range(shape, type.getShape());
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, shape, type.getElementType());
    TypedAttr neutral = *arith::getNeutralElement(combiners[i]);
    Value value = arith::ConstantOp::create(rewriter, loc, neutral);
    partials.push_back(
        linalg::FillOp::create(rewriter, loc, value, empty).getResult(0));
    AffineMap &map = maps[op.getNumDpsInputs() + i];
    SmallVector<AffineExpr> results;
    for (unsigned loop : chosen)
      results.push_back(getAffineDimExpr(loop, context));
    llvm::append_range(results, map.getResults());
    map = AffineMap::get(map.getNumDims(), 0, results, context);
  }
  auto partialOp =
      linalg::GenericOp::create(rewriter, loc, ValueRange(partials).getTypes(),
                                op.getDpsInputs(), partials, maps, iterators);
  rewriter.inlineRegionBefore(op.getRegion(), partialOp.getRegion(),
                              partialOp.getRegion().end());

  // Each output combined with its partials: loops over the chosen extents
  // (reduction) and the output (parallel).
  SmallVector<Value> results;
  SmallVector<linalg::GenericOp> combines;
  for (auto [i, init] : llvm::enumerate(op.getDpsInits())) {
    auto type = cast<RankedTensorType>(init.getType());
    unsigned k = chosen.size(), rank = type.getRank();
    // The output's loops first (parallel, so that they map to threads),
    // then the chosen extents (reduction).
    SmallVector<utils::IteratorType> combineIterators(
        rank, utils::IteratorType::parallel);
    combineIterators.append(k, utils::IteratorType::reduction);
    SmallVector<AffineExpr> partialResults;
    for (unsigned d = 0; d < k; ++d)
      partialResults.push_back(getAffineDimExpr(rank + d, context));
    for (unsigned d = 0; d < rank; ++d)
      partialResults.push_back(getAffineDimExpr(d, context));
    // (The output's map: its own loops, none for a 0-d output, where
    // getMajorSubMap(0) is a null map.)
    SmallVector<AffineExpr> outputResults;
    for (unsigned d = 0; d < rank; ++d)
      outputResults.push_back(getAffineDimExpr(d, context));
    SmallVector<AffineMap> combineMaps = {
        AffineMap::get(k + rank, 0, partialResults, context),
        AffineMap::get(k + rank, 0, outputResults, context)};
    Operation *combiner = combiners[i];
    // The combiner's operand that is the output's block argument.
    Value outArg = partialOp.getBlock()->getArgument(op.getNumDpsInputs() + i);
    auto combine = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, partialOp.getResult(i),
        ValueRange{init}, combineMaps, combineIterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          // The combiner with the partial for its other operand.
          IRMapping mapping;
          for (Value operand : combiner->getOperands())
            mapping.map(operand, operand == outArg ? args[1] : args[0]);
          Operation *combined = b.clone(*combiner, mapping);
          linalg::YieldOp::create(b, l, combined->getResults());
        });
    results.push_back(combine.getResult(0));
    combines.push_back(combine);
  }
  rewriter.replaceOp(op, results);
  return combines;
}

struct SplitReductionsPass
    : act::impl::ActSplitReductionsPassBase<SplitReductionsPass> {
  using Base::Base;
  /// What convert-linalg-to-act-kernels{gpu} turns into library calls.
  static bool isLibraryOp(linalg::LinalgOp op) {
    return isa<linalg::MatmulOp, linalg::BatchMatmulOp,
               linalg::Conv2DNchwFchwOp, linalg::Conv2DNgchwGfchwOp>(op) &&
           llvm::all_of(op->getOperandTypes(), [](Type type) {
             return getElementTypeOrSelf(type).isF32();
           });
  }
  LogicalResult initialize(MLIRContext *context) override {
    return act::checkNonNegativeOptions(
        context, "act-split-reductions",
        {{"min-threads", minThreads},
         {"min-work", minWork},
         {"max-partial-bytes", maxPartialBytes}});
  }
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op.getNumReductionLoops() > 0 &&
          !isa<linalg::FillOp, linalg::CopyOp>(op) &&
          !(skipLibraryOps && isLibraryOp(op)))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    // A combining op with few outputs and many partials is split in turn
    // (BatchNorm's 32 sums of 512 partials: 32 threads had each loaded 512
    // values, one after the other).
    while (!ops.empty()) {
      linalg::LinalgOp op = ops.pop_back_val();
      SmallVector<unsigned> chosen =
          chooseLoops(op, minThreads, minWork, maxPartialBytes);
      if (chosen.empty())
        continue;
      std::optional<SmallVector<Operation *>> combiners = getCombiners(op);
      if (!combiners)
        continue;
      linalg::GenericOp generic = dyn_cast<linalg::GenericOp>(*op);
      if (!generic) {
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::GenericOp> generalized =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(generalized))
          continue;
        generic = *generalized;
        combiners = getCombiners(generic);
        if (!combiners)
          continue;
      }
      for (linalg::GenericOp combine :
           split(rewriter, generic, chosen, *combiners))
        ops.push_back(combine);
    }
    // Parallel loops before reduction loops: upstream's parallel-loop
    // lowering makes an scf.parallel of the outermost parallel loops only,
    // so a reduction loop outside one became a host loop of launches (the
    // same order of each output's sum: reduction loops keep theirs).
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureTensorSemantics())
        generics.push_back(op);
    });
    for (linalg::GenericOp op : generics) {
      SmallVector<utils::IteratorType> types = op.getIteratorTypesArray();
      SmallVector<unsigned> order;
      for (unsigned pass = 0; pass < 2; ++pass)
        for (auto [i, type] : llvm::enumerate(types))
          if ((type == utils::IteratorType::parallel) == (pass == 0))
            order.push_back(i);
      if (llvm::equal(order, llvm::seq(0u, unsigned(types.size()))))
        continue;
      rewriter.setInsertionPoint(op);
      (void)linalg::interchangeGenericOp(rewriter, op, order);
    }
  }
};

} // namespace
