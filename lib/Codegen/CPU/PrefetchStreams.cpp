//===- PrefetchStreams.cpp - software prefetch for streaming loops --------===//
//
// act-prefetch-streams: an encode reads its input chunk by chunk, each chunk
// once, and computes a lot per chunk (statistics, Philox, codes). On one
// core the hardware prefetchers left such a loop waiting on memory for about
// a third of its time (a stochastic 2-bit encode: 0.43 ns per element from
// memory, 0.31 in cache). This pass has each iteration prefetch the block
// a few iterations ahead, so memory and compute overlap.
//
//===----------------------------------------------------------------------===//

#include "act/Codegen/Passes.h"
#include "act/Support/OptionLoc.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTPREFETCHSTREAMSPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

/// The bytes of a cache line (x86-64 and AArch64 alike).
static constexpr int64_t kLineBytes = 64;
/// Lines prefetched per iteration at most.
static constexpr int64_t kMaxLines = 64;
/// Prefetches issued in a row at most: a burst of more than the core's
/// outstanding misses stalls it (an encode's 32 lines in a row made it
/// slower than 16 at a time, spread over its chunk).
static constexpr int64_t kBurst = 16;

/// `offset` as `iv * a`: a, or nothing.
static std::optional<int64_t> ivMultiple(Value offset, Value iv) {
  if (offset == iv)
    return 1;
  if (auto mul = offset.getDefiningOp<arith::MulIOp>()) {
    for (auto [x, y] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())})
      if (x == iv)
        if (std::optional<int64_t> a = getConstantIntValue(y))
          return *a;
    return std::nullopt;
  }
  if (auto apply = offset.getDefiningOp<affine::AffineApplyOp>()) {
    AffineMap map = apply.getAffineMap();
    if (map.getNumResults() != 1 || apply.getMapOperands().size() != 1 ||
        apply.getMapOperands()[0] != iv || map.getNumSymbols() != 0)
      return std::nullopt;
    AffineExpr e = map.getResult(0);
    if (e == getAffineDimExpr(0, e.getContext()))
      return 1;
    auto bin = dyn_cast<AffineBinaryOpExpr>(e);
    if (!bin || bin.getKind() != AffineExprKind::Mul)
      return std::nullopt;
    auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
    if (!c || bin.getLHS() != getAffineDimExpr(0, e.getContext()))
      return std::nullopt;
    return c.getValue();
  }
  return std::nullopt;
}

/// Whether anything writes to memory through `view` (or a view of it).
static bool isWrittenThrough(Value view) {
  for (Operation *user : view.getUsers()) {
    if (auto viewLike = dyn_cast<ViewLikeOpInterface>(user)) {
      if (viewLike.getViewSource() == view &&
          isWrittenThrough(viewLike->getResult(0)))
        return true;
      continue;
    }
    auto effects = dyn_cast<MemoryEffectOpInterface>(user);
    // An op that does not describe its effects (a call) may write.
    if (!effects)
      return true;
    if (effects.getEffectOnValue<MemoryEffects::Write>(view) ||
        effects.getEffectOnValue<MemoryEffects::Free>(view))
      return true;
  }
  return false;
}

static uint64_t countWork(Operation *op);

/// The ops one iteration of `op`'s regions runs (saturating: nested loops'
/// trip counts multiply).
static uint64_t iterationWork(Operation *op) {
  uint64_t work = 0;
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Operation &inner : block)
        work = llvm::SaturatingAdd(work, countWork(&inner));
  return work;
}

/// The ops an execution of `op` runs: itself, and its regions' ops times
/// their trip counts where those are static (an scf.for with constant
/// bounds), once otherwise.
static uint64_t countWork(Operation *op) {
  uint64_t trips = 1;
  if (auto loop = dyn_cast<LoopLikeOpInterface>(op))
    if (std::optional<APInt> count = loop.getStaticTripCount())
      trips = count->getZExtValue();
  return llvm::SaturatingAdd(
      uint64_t(1), llvm::SaturatingMultiply(trips, iterationWork(op)));
}

/// Whether `value` is defined outside `loop`.
static bool isDefinedOutside(Value value, Operation *loop) {
  return !loop->isAncestor(value.getParentRegion()->getParentOp()) &&
         value.getParentRegion()->getParentOp() != loop;
}

namespace {
/// A block a loop's iteration reads: its view, its elements, and the
/// elements of a cache line.
struct Stream {
  memref::SubViewOp subview;
  int64_t size, lineElements;
};

struct ActPrefetchStreamsPass
    : act::impl::ActPrefetchStreamsPassBase<ActPrefetchStreamsPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    return act::checkNonNegativeOptions(context, "act-prefetch-streams",
                                        {{"distance", distance},
                                         {"min-bytes", minBytes},
                                         {"min-block-bytes", minBlockBytes},
                                         {"min-ops-per-line", minOpsPerLine}});
  }

  void runOnOperation() override {
    if (distance == 0)
      return;
    SmallVector<Stream> streams;
    getOperation().walk([&](LoopLikeOpInterface loop) {
      std::optional<SmallVector<Value>> ivs = loop.getLoopInductionVars();
      std::optional<SmallVector<OpFoldResult>> steps = loop.getLoopSteps();
      if (!ivs || ivs->size() != 1 || !steps || steps->size() != 1)
        return;
      std::optional<int64_t> step = getConstantIntValue((*steps)[0]);
      if (!step || *step <= 0)
        return;
      Value iv = (*ivs)[0];
      // The ops of one iteration, counted once a block matches.
      std::optional<uint64_t> work;
      // One prefetch per source and offset (an encode reads its chunk
      // through several views).
      llvm::DenseSet<std::pair<Value, Value>> seen;
      for (Region &region : loop->getRegions())
        for (Block &block : region)
          for (auto subview : block.getOps<memref::SubViewOp>()) {
            std::optional<Stream> stream = match(subview, iv, *step, loop);
            if (!stream)
              continue;
            if (!work)
              work = iterationWork(loop);
            if (*work < uint64_t(int64_t(minOpsPerLine)) *
                            uint64_t(stream->size / stream->lineElements))
              continue;
            if (!seen.insert({subview.getSource(), subview.getOffsets()[0]})
                     .second)
              continue;
            streams.push_back(*stream);
          }
    });
    for (const Stream &stream : streams)
      prefetch(stream);
  }

  /// `subview`'s stream, if it is one (see the pass's description).
  std::optional<Stream> match(memref::SubViewOp subview, Value iv, int64_t step,
                              LoopLikeOpInterface loop) {
    auto source = dyn_cast<MemRefType>(subview.getSource().getType());
    if (!source || source.getRank() != 1 || subview.getType().getRank() != 1)
      return std::nullopt;
    if (!source.getElementType().isIntOrFloat())
      return std::nullopt;
    int64_t bits = source.getElementTypeBitWidth();
    if (bits % 8 != 0)
      return std::nullopt;
    int64_t elementBytes = bits / 8;
    if (!source.isLastDimUnitStride() ||
        !isDefinedOutside(subview.getSource(), loop))
      return std::nullopt;
    if (source.hasStaticShape() &&
        source.getDimSize(0) * elementBytes < minBytes)
      return std::nullopt;
    std::optional<int64_t> size =
        getConstantIntValue(subview.getMixedSizes()[0]);
    std::optional<int64_t> stride =
        getConstantIntValue(subview.getMixedStrides()[0]);
    if (!size || stride != 1 ||
        *size * elementBytes < std::max<int64_t>(minBlockBytes, kLineBytes) ||
        kLineBytes % elementBytes != 0)
      return std::nullopt;
    if (subview.getOffsets().size() != 1)
      return std::nullopt;
    std::optional<int64_t> a = ivMultiple(subview.getOffsets()[0], iv);
    if (!a || *a * step != *size)
      return std::nullopt;
    if (isWrittenThrough(subview.getResult()))
      return std::nullopt;
    return Stream{subview, *size, kLineBytes / elementBytes};
  }

  /// Prefetches the lines (at most kMaxLines) of the block `distance`
  /// bytes after the stream's, from its view on.
  void prefetch(const Stream &stream) {
    memref::SubViewOp subview = stream.subview;
    int64_t lineElements = stream.lineElements;
    OpBuilder b(subview);
    Location loc = subview.getLoc();
    Value source = subview.getSource();
    Value offset = subview.getOffsets()[0];
    int64_t elementBytes = kLineBytes / lineElements;
    int64_t ahead = llvm::divideCeil(int64_t(distance), elementBytes);
    int64_t lines = std::min<int64_t>(
        llvm::divideCeil(stream.size, lineElements), kMaxLines);
    // The first line's element, clamped so that every line's is in the
    // buffer (an address past it would be out of bounds for the memref;
    // the prefetch itself could not fault). One clamp per iteration: the
    // lines' constant offsets fold into the prefetches' addresses.
    Value first = arith::AddIOp::create(
        b, loc, offset, arith::ConstantIndexOp::create(b, loc, ahead));
    Value limit = arith::SubIOp::create(
        b, loc, memref::DimOp::create(b, loc, source, 0),
        arith::ConstantIndexOp::create(b, loc, 1 + (lines - 1) * lineElements));
    first = arith::MinSIOp::create(b, loc, first, limit);
    // Groups of kBurst lines, spread evenly over the ops of the iteration
    // from `subview` on.
    SmallVector<Operation *> ops;
    for (Operation *op = subview; op != subview->getBlock()->getTerminator();
         op = op->getNextNode())
      ops.push_back(op);
    int64_t groups = llvm::divideCeil(lines, kBurst);
    for (int64_t k = 0; k < lines; ++k) {
      if (k % kBurst == 0)
        b.setInsertionPoint(ops[(k / kBurst) * ops.size() / groups]);
      Value index = k ? arith::AddIOp::create(b, loc, first,
                                              arith::ConstantIndexOp::create(
                                                  b, loc, k * lineElements))
                            .getResult()
                      : first;
      memref::PrefetchOp::create(b, loc, source, ValueRange{index},
                                 /*isWrite=*/false, /*localityHint=*/3,
                                 /*isDataCache=*/true);
    }
  }
};
} // namespace
