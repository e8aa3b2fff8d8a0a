//===- TileDecodedConvolutions.cpp - weight gradients by chunks -----------===//
//
// A convolution computing a weight gradient reads its (decoded) input with
// batch and channels swapped: the batch is its reduction channel. When that
// input is a per-element decode (convert-act-to-linalg{decode-into-consumers}),
// optionally zero-padded, the convolution is tiled along the batch and the
// decode, pad and transpose are fused into each chunk (upstream's
// tile-and-fuse): the decoded input exists one chunk at a time (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "act/Analysis/TrainingGraph.h"
#include "act/Codegen/Passes.h"
#include "act/Support/BatchChunks.h"
#include "act/Support/TransposedConvolution.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTTILEDECODEDCONVOLUTIONSPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {
struct TileDecodedConvolutionsPass
    : act::impl::ActTileDecodedConvolutionsPassBase<
          TileDecodedConvolutionsPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    return act::checkChunkBytes(context, "act-tile-decoded-convolutions",
                                chunkBytes);
  }

  /// The chain transpose([1, 0, 2, 3]) <- [pad <-] generic without inputs
  /// feeding `conv`'s input, or nothing.
  static SmallVector<Operation *> decodedInput(linalg::Conv2DNchwFchwOp conv) {
    Value source = conv.getInputs()[0];
    while (isa_and_nonnull<linalg::TransposeOp, tensor::PadOp>(
        source.getDefiningOp()))
      source = source.getDefiningOp()->getOperand(0);
    auto decode = source.getDefiningOp<linalg::GenericOp>();
    if (!decode || !decode->hasOneUse() || decode.getNumDpsInputs() != 0 ||
        decode.getNumReductionLoops() != 0 || decode.hasDynamicShape())
      return {};
    std::optional<act::TransposedConvolutionInput> input =
        act::getTransposedConvolutionInput(*decode->getUses().begin());
    if (!input || input->conv != conv)
      return {};
    SmallVector<Operation *> chain = {input->transpose};
    if (input->pad)
      chain.push_back(input->pad);
    chain.push_back(decode);
    return chain;
  }

  void runOnOperation() override {
    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    getOperation().walk([&](linalg::Conv2DNchwFchwOp conv) {
      if (conv.hasPureTensorSemantics() && !decodedInput(conv).empty())
        convs.push_back(conv);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::Conv2DNchwFchwOp conv : convs)
      if (failed(chunk(rewriter, conv)))
        return signalPassFailure();
  }

  /// conv(transpose(pad(decode)), filter) as a sum over chunks of the
  /// batch, each chunk decoded, padded and transposed on its own. Up to
  /// `maxUnrolled` chunks are unrolled (static offsets); more are an
  /// `scf.for` over the chunks, so that the step's size does not grow with
  /// the batch (a batch of 512 was 95 convolutions, each its own decode).
  LogicalResult chunk(IRRewriter &rewriter, linalg::Conv2DNchwFchwOp conv) {
    SmallVector<Operation *> chain = decodedInput(conv);
    auto transpose = cast<linalg::TransposeOp>(chain.front());
    auto pad = dyn_cast<tensor::PadOp>(chain[1]);
    auto decode = cast<linalg::GenericOp>(chain.back());
    auto decoded = cast<RankedTensorType>(decode->getResult(0).getType());
    int64_t batch = decoded.getDimSize(0);
    std::optional<int64_t> bytes = act::getTensorBytes(decoded);
    if (!bytes)
      return success();
    int64_t imageBytes = *bytes / batch;
    if (batch * imageBytes <= chunkBytes)
      return success();
    int64_t size = act::getChunkSize(batch, imageBytes, chunkBytes);
    if (size == 0)
      return success();
    Location loc = conv.getLoc();
    rewriter.setInsertionPoint(conv);
    Value filter = conv.getInputs()[1];
    auto filterType = cast<RankedTensorType>(filter.getType());
    auto filterTranspose = filter.getDefiningOp<linalg::TransposeOp>();
    bool sliceSource = filterTranspose && filterTranspose.getPermutation() ==
                                              ArrayRef<int64_t>{1, 0, 2, 3};
    Value sliced = sliceSource ? filterTranspose.getInput() : filter;

    // The convolution of images [first, first + size) accumulated into
    // `acc`: `first` a constant or the loop's induction variable.
    auto addChunk = [&](OpFoldResult first, Value acc) -> Value {
      // The decode of the chunk: the same generic over the chunk, its
      // batch index shifted.
      RankedTensorType chunkType = act::withBatch(decoded, size);
      Value init = tensor::EmptyOp::create(rewriter, loc, chunkType.getShape(),
                                           decoded.getElementType());
      IRMapping map;
      map.map(decode.getDpsInits()[0], init);
      auto part = cast<linalg::GenericOp>(rewriter.clone(*decode, map));
      part->getResult(0).setType(chunkType);
      if (!isConstantIntValue(first, 0))
        part.walk([&](linalg::IndexOp index) {
          if (index.getDim() != 0)
            return;
          OpBuilder::InsertionGuard guard(rewriter);
          rewriter.setInsertionPointAfter(index);
          Value offset = getValueOrCreateConstantIndexOp(rewriter, loc, first);
          Value shifted = arith::AddIOp::create(rewriter, loc, index, offset);
          rewriter.replaceAllUsesExcept(index, shifted,
                                        shifted.getDefiningOp());
        });
      Value input = part->getResult(0);
      if (pad) {
        SmallVector<int64_t> padded(
            cast<RankedTensorType>(pad.getType()).getShape());
        padded[0] = size;
        auto padPart = cast<tensor::PadOp>(rewriter.clone(*pad));
        padPart.getSourceMutable().assign(input);
        padPart->getResult(0).setType(
            RankedTensorType::get(padded, decoded.getElementType()));
        input = padPart.getResult();
      }
      auto inputType = cast<RankedTensorType>(input.getType());
      SmallVector<int64_t> swapped = {inputType.getDimSize(1), size,
                                      inputType.getDimSize(2),
                                      inputType.getDimSize(3)};
      Value swappedInit = tensor::EmptyOp::create(rewriter, loc, swapped,
                                                  decoded.getElementType());
      input = linalg::TransposeOp::create(rewriter, loc, input, swappedInit,
                                          transpose.getPermutation())
                  ->getResult(0);
      // The filter's channels are the batch too: the slice of the output
      // gradient before its transpose when it is one (a view again).
      int64_t batchDim = sliceSource ? 0 : 1;
      act::BatchSlice slice(rewriter, sliced.getType(), first, size, batchDim);
      Value filterPart = tensor::ExtractSliceOp::create(
          rewriter, loc, sliced, slice.offsets, slice.sizes, slice.strides);
      if (sliceSource) {
        SmallVector<int64_t> filterShape(filterType.getShape());
        filterShape[1] = size;
        Value filterInit = tensor::EmptyOp::create(rewriter, loc, filterShape,
                                                   filterType.getElementType());
        filterPart =
            linalg::TransposeOp::create(rewriter, loc, filterPart, filterInit,
                                        filterTranspose.getPermutation())
                ->getResult(0);
      }
      return linalg::Conv2DNchwFchwOp::create(
                 rewriter, loc, acc.getType(), ValueRange{input, filterPart},
                 ValueRange{acc}, conv.getStrides(), conv.getDilations())
          ->getResult(0);
    };

    SmallVector<Value> acc = {conv.getOutputs()[0]};
    act::forEachChunk(rewriter, loc, batch, size, maxUnrolled, acc,
                      [&](OpFoldResult first, SmallVectorImpl<Value> &sum) {
                        sum[0] = addChunk(first, sum[0]);
                      });
    Operation *filterOp = filter.getDefiningOp();
    rewriter.replaceOp(conv, acc[0]);
    for (Operation *op : chain)
      if (op->use_empty())
        rewriter.eraseOp(op);
    if (filterOp && isa<linalg::TransposeOp>(filterOp) && filterOp->use_empty())
      rewriter.eraseOp(filterOp);
    return success();
  }
};
} // namespace
