//===- BatchChunks.h - a tensor's batch split into chunks -------*- C++ -*-===//
//
// What act's rewrites that compute a tensor one chunk of its batch at a
// time share (act-tile-decoded-convolutions, act-in-place's convolutions,
// act-chunk-batch): how many batch elements a chunk takes, a type with its
// batch changed, the slice of one chunk, and the chunks written out or
// looped over.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_SUPPORT_BATCHCHUNKS_H
#define ACT_SUPPORT_BATCHCHUNKS_H

#include "act/Support/OptionLoc.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"

#include <cstdint>
#include <limits>

namespace mlir::act {

/// Batch elements per chunk: the largest divisor n of `batch` below it whose
/// chunk takes at most `chunkBytes` (n * `elementBytes`), or, scanning down,
/// the first that makes `maxChunks` chunks or more; 0 when there is none.
inline int64_t
getChunkSize(int64_t batch, int64_t elementBytes, int64_t chunkBytes,
             int64_t maxChunks = std::numeric_limits<int64_t>::max()) {
  for (int64_t n = batch - 1; n >= 1; --n)
    if (batch % n == 0 &&
        (n * elementBytes <= chunkBytes || batch / n >= maxChunks))
      return n;
  return 0;
}

/// The passes' `chunk-bytes` option: positive, or an error at the option
/// (a chunk of no bytes would split the batch into single elements, or not
/// at all, without saying so).
inline LogicalResult checkChunkBytes(MLIRContext *context, StringRef pass,
                                     int64_t chunkBytes) {
  if (chunkBytes > 0)
    return success();
  return emitError(getOptionLoc(context, pass, "chunk-bytes"))
         << pass << ": chunk-bytes must be positive, got " << chunkBytes;
}

/// `type` (a ranked tensor) with dimension `dim` (the batch's, 0 unless a
/// transpose moved it) set to `size`.
inline RankedTensorType withBatch(Type type, int64_t size, int64_t dim = 0) {
  auto ranked = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(ranked.getShape());
  shape[dim] = size;
  return ranked.clone(shape);
}

/// The offsets, sizes and strides of elements [first, first + size) of
/// dimension `dim` of a tensor of `type` (`first` static, or a loop's
/// induction variable).
struct BatchSlice {
  BatchSlice(OpBuilder &b, Type type, OpFoldResult first, int64_t size,
             int64_t dim = 0) {
    auto ranked = cast<RankedTensorType>(type);
    for (int64_t d = 0; d < ranked.getRank(); ++d) {
      offsets.push_back(d == dim ? first : b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(d == dim ? size : ranked.getDimSize(d)));
      strides.push_back(b.getIndexAttr(1));
    }
  }
  BatchSlice(OpBuilder &b, Type type, int64_t first, int64_t size)
      : BatchSlice(b, type, b.getIndexAttr(first), size) {}
  SmallVector<OpFoldResult> offsets, sizes, strides;
};

/// The chunks [first, first + size) of a batch of `batch` elements, each
/// computed by `body(first, values)`, which updates `values` (the results
/// carried from chunk to chunk: a sum, the tensors chunks are inserted
/// into): written out one after the other with constant offsets up to
/// `maxUnrolled` chunks, else one `scf.for` over them carrying `values`, so
/// that the IR does not grow with the batch. Builds at the rewriter's
/// insertion point; on return `values` holds the final results.
inline void forEachChunk(
    RewriterBase &rewriter, Location loc, int64_t batch, int64_t size,
    int64_t maxUnrolled, SmallVectorImpl<Value> &values,
    llvm::function_ref<void(OpFoldResult, SmallVectorImpl<Value> &)> body) {
  if (batch / size <= maxUnrolled) {
    for (int64_t first = 0; first < batch; first += size)
      body(rewriter.getIndexAttr(first), values);
    return;
  }
  auto c = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };
  Value lower = c(0), upper = c(batch), step = c(size);
  auto loop = scf::ForOp::create(rewriter, loc, lower, upper, step, values);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> carried(loop.getRegionIterArgs());
    body(loop.getInductionVar(), carried);
    scf::YieldOp::create(rewriter, loc, carried);
  }
  values.assign(loop.getResults().begin(), loop.getResults().end());
}

} // namespace mlir::act

#endif // ACT_SUPPORT_BATCHCHUNKS_H
