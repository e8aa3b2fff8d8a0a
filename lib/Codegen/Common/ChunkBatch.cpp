//===- ChunkBatch.cpp - batch-parallel regions one chunk at a time --------===//
//
// Connected linalg ops that all treat dimension 0 of every operand as the
// same parallel batch (batch matmuls, transposes keeping it first, fills,
// elementwise ops and reductions over the other dimensions) are computed
// one chunk of the batch at a time: the tensors they pass among themselves
// exist one chunk at a time, only the region's results whole (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/TrainingGraph.h"
#include "act/Codegen/Passes.h"
#include "act/Support/BatchChunks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTCHUNKBATCHPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

/// The batch of `op` when dimension 0 of each of its tensors is one and the
/// same batch: a static `tensor.empty`, or a linalg op on tensors whose
/// loop 0 is parallel and indexes dimension 0 of every tensor operand and
/// nothing else.
std::optional<int64_t> getBatch(Operation *op) {
  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    RankedTensorType type = empty.getType();
    if (!type.hasStaticShape() || type.getRank() < 2)
      return std::nullopt;
    return type.getDimSize(0);
  }
  // A reshape that keeps dimension 0 as it is (reassociation group {0}).
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
    auto source = cast<RankedTensorType>(op->getOperand(0).getType());
    auto result = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<ReassociationIndices> groups =
        isa<tensor::ExpandShapeOp>(op)
            ? cast<tensor::ExpandShapeOp>(op).getReassociationIndices()
            : cast<tensor::CollapseShapeOp>(op).getReassociationIndices();
    if (!source.hasStaticShape() || !result.hasStaticShape() ||
        groups.empty() || groups[0].size() != 1 ||
        source.getDimSize(0) != result.getDimSize(0))
      return std::nullopt;
    return source.getDimSize(0);
  }
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics() ||
      linalgOp.getNumLoops() == 0 ||
      linalgOp.getIteratorTypesArray()[0] != utils::IteratorType::parallel)
    return std::nullopt;
  AffineExpr d0 = getAffineDimExpr(0, op->getContext());
  std::optional<int64_t> batch;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      continue;
    AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
    // A batch of something: a tensor of rank 1 is not split (its chunks
    // would be as many as its elements allow).
    if (!type.hasStaticShape() || map.getNumResults() < 2 ||
        map.getResult(0) != d0)
      return std::nullopt;
    for (AffineExpr e : map.getResults().drop_front())
      if (e.isFunctionOfDim(0))
        return std::nullopt;
    if (batch && *batch != type.getDimSize(0))
      return std::nullopt;
    batch = type.getDimSize(0);
  }
  return batch;
}

struct ChunkBatchPass : act::impl::ActChunkBatchPassBase<ChunkBatchPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    return act::checkChunkBytes(context, "act-chunk-batch", chunkBytes);
  }

  void runOnOperation() override {
    // The step's own ops (not the encodes' and decodes' chunk loops).
    for (Block &block : getOperation().getBody())
      chunkRegions(block);
  }

  void chunkRegions(Block &block) {
    // Regions: batch ops of one batch size connected by the values they
    // pass (union-find over the block, in order).
    llvm::EquivalenceClasses<Operation *> classes;
    DenseMap<Operation *, int64_t> batchOf;
    for (Operation &op : block) {
      std::optional<int64_t> batch = getBatch(&op);
      if (!batch)
        continue;
      batchOf[&op] = *batch;
      classes.insert(&op);
      for (Value operand : op.getOperands()) {
        Operation *producer = operand.getDefiningOp();
        auto known = batchOf.find(producer);
        if (producer && producer->getBlock() == &block &&
            known != batchOf.end() && known->second == *batch)
          classes.unionSets(producer, &op);
      }
    }
    SmallVector<SmallVector<Operation *>> regions;
    for (auto it = classes.begin(); it != classes.end(); ++it) {
      if (!(*it)->isLeader())
        continue;
      SmallVector<Operation *> region(classes.member_begin(**it),
                                      classes.member_end());
      llvm::sort(region, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      regions.push_back(std::move(region));
    }
    IRRewriter rewriter(&getContext());
    for (SmallVector<Operation *> &region : regions)
      chunk(rewriter, region, batchOf.lookup(region.front()));
  }

  /// Computes `ops` (one region, in block order) chunk by chunk after its
  /// last op, once no op outside it reads one of its values before that
  /// point (an op whose value is read earlier stays where it is, and the
  /// region shrinks).
  void chunk(IRRewriter &rewriter, ArrayRef<Operation *> ops, int64_t batch) {
    llvm::SetVector<Operation *> region(ops.begin(), ops.end());
    bool changed = true;
    while (changed && !region.empty()) {
      changed = false;
      Operation *last = region.back();
      for (Operation *op : region) {
        bool readEarly = llvm::any_of(op->getUsers(), [&](Operation *user) {
          Operation *at = op->getBlock()->findAncestorOpInBlock(*user);
          return !region.contains(at) && !last->isBeforeInBlock(at);
        });
        if (readEarly) {
          region.remove(op);
          changed = true;
          break;
        }
      }
    }
    // The values the region keeps to itself, and their largest.
    SmallVector<Value> outputs;
    int64_t largest = 0;
    int64_t computing = 0;
    for (Operation *op : region) {
      if (!isa<tensor::EmptyOp, linalg::FillOp>(op))
        ++computing;
      for (Value result : op->getResults()) {
        bool escapes = llvm::any_of(result.getUsers(), [&](Operation *user) {
          return !region.contains(
              result.getParentBlock()->findAncestorOpInBlock(*user));
        });
        if (escapes) {
          outputs.push_back(result);
          continue;
        }
        if (!isa<tensor::EmptyOp>(op))
          largest = std::max(
              largest,
              act::getTensorBytes(cast<RankedTensorType>(result.getType()))
                  .value_or(0));
      }
    }
    if (computing < 2 || largest <= chunkBytes)
      return;
    // The largest divisor of the batch whose share fits, in at most
    // kMaxChunks chunks (fewer, larger chunks past it: each chunk pays the
    // fixed cost of its kernels' calls).
    constexpr int64_t kMaxChunks = 16;
    int64_t size =
        act::getChunkSize(batch, largest / batch, chunkBytes, kMaxChunks);
    if (!size || batch / size > kMaxChunks)
      return;

    Operation *last = region.back();
    Location loc = last->getLoc();
    rewriter.setInsertionPointAfter(last);
    SmallVector<Value> accs;
    for (Value output : outputs)
      accs.push_back(tensor::EmptyOp::create(
          rewriter, loc, cast<RankedTensorType>(output.getType()).getShape(),
          cast<RankedTensorType>(output.getType()).getElementType()));
    // The region on elements [first, first + size) of the batch (`first` a
    // constant or the loop's induction variable), its outputs inserted
    // into `accs`.
    auto computeChunk = [&](OpFoldResult first, SmallVectorImpl<Value> &accs) {
      IRMapping map;
      // Every tensor the region reads from outside, sliced once per chunk.
      DenseMap<Value, Value> slices;
      auto sliceOf = [&](Value value) {
        Value &slice = slices[value];
        if (slice)
          return slice;
        act::BatchSlice chunk(rewriter, value.getType(), first, size);
        slice = tensor::ExtractSliceOp::create(
            rewriter, loc, value, chunk.offsets, chunk.sizes, chunk.strides);
        return slice;
      };
      for (Operation *op : region) {
        for (Value operand : op->getOperands())
          if (isa<RankedTensorType>(operand.getType()) &&
              !map.contains(operand))
            map.map(operand, sliceOf(operand));
        if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
          map.map(expand.getResult(),
                  tensor::ExpandShapeOp::create(
                      rewriter, expand.getLoc(),
                      act::withBatch(expand.getType(), size),
                      map.lookup(expand.getSrc()),
                      expand.getReassociationIndices()));
          continue;
        }
        if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
          map.map(collapse.getResult(),
                  tensor::CollapseShapeOp::create(
                      rewriter, collapse.getLoc(),
                      map.lookup(collapse.getSrc()),
                      collapse.getReassociationIndices()));
          continue;
        }
        Operation *clone = rewriter.clone(*op, map);
        for (OpResult result : clone->getResults())
          result.setType(act::withBatch(result.getType(), size));
        if (auto linalgOp = dyn_cast<linalg::LinalgOp>(clone);
            linalgOp && !isConstantIntValue(first, 0) &&
            linalgOp.hasIndexSemantics()) {
          SmallVector<OpFoldResult> offsets(linalgOp.getNumLoops(),
                                            rewriter.getIndexAttr(0));
          offsets[0] = first;
          linalg::offsetIndices(rewriter, linalgOp, offsets);
        }
      }
      for (auto [acc, output] : llvm::zip(accs, outputs)) {
        act::BatchSlice chunk(rewriter, output.getType(), first, size);
        acc = tensor::InsertSliceOp::create(rewriter, loc, map.lookup(output),
                                            acc, chunk.offsets, chunk.sizes,
                                            chunk.strides);
      }
    };
    act::forEachChunk(rewriter, loc, batch, size, maxUnrolled, accs,
                      computeChunk);
    for (auto [acc, output] : llvm::zip(accs, outputs))
      rewriter.replaceAllUsesWith(output, acc);
    for (Operation *op : llvm::reverse(region))
      rewriter.eraseOp(op);
  }
};

} // namespace
