//===- InPlace.cpp - ops write into an input that dies --------------------===//

#include "act/Analysis/TrainingGraph.h"
#include "act/Codegen/Passes.h"
#include "act/Support/BatchChunks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTINPLACEPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

/// Whether `op` is the last use of `value` (every other use is in `op`'s
/// block, before it) and of the buffer behind it: `value` is produced in
/// that block by an op that allocates (not an argument, a constant or a
/// slice of another tensor), or reshapes (expand/collapse_shape, whose
/// result is the whole of its source's buffer) a value of which the same
/// holds.
bool diesAt(Value value, Operation *op) {
  Operation *producer = value.getDefiningOp();
  if (!producer || producer->getBlock() != op->getBlock())
    return false;
  if (isa<arith::ConstantOp, bufferization::ToTensorOp, tensor::ExtractSliceOp,
          tensor::CastOp, tensor::ReshapeOp>(producer))
    return false;
  Block *block = op->getBlock();
  for (Operation *user : value.getUsers()) {
    if (user == op)
      continue;
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor || ancestor == op || !ancestor->isBeforeInBlock(op))
      return false;
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(producer))
    return diesAt(expand.getSrc(), op);
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(producer))
    return diesAt(collapse.getSrc(), op);
  return true;
}

/// `op` with its init `initIndex` replaced by its input `inputIndex`, which
/// the payload then reads as the init (a read-modify-write of the input's
/// buffer: tiling keeps reading and writing the same slice, so
/// bufferization sees no conflict).
void readInputAsInit(RewriterBase &rewriter, linalg::GenericOp op,
                     unsigned inputIndex, unsigned initIndex) {
  SmallVector<Value> inputs(op.getInputs());
  SmallVector<Value> inits(op.getOutputs());
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  inits[initIndex] = inputs[inputIndex];
  inputs.erase(inputs.begin() + inputIndex);
  maps.erase(maps.begin() + inputIndex);
  rewriter.setInsertionPoint(op);
  auto fused = linalg::GenericOp::create(rewriter, op.getLoc(),
                                         op->getResultTypes(), inputs, inits,
                                         maps, op.getIteratorTypesArray());
  fused->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.inlineRegionBefore(op.getRegion(), fused.getRegion(),
                              fused.getRegion().end());
  Block &body = fused.getRegion().front();
  unsigned numInputs = op.getNumDpsInputs();
  rewriter.replaceAllUsesWith(body.getArgument(inputIndex),
                              body.getArgument(numInputs + initIndex));
  body.eraseArgument(inputIndex);
  rewriter.replaceOp(op, fused->getResults());
}

/// A convolution's input as an unpadded tensor and its zero padding along
/// H and W: `tensor.pad` by a constant 0 or `tensor.insert_slice` into a
/// zero-filled `tensor.empty`, read only by the convolution.
struct PaddedInput {
  Value source;
  Operation *pad = nullptr; // null: the convolution reads `source` itself
  SmallVector<int64_t, 2> low, high;
};

bool isZero(Value value) {
  return matchPattern(value, m_AnyZeroFloat()) || matchPattern(value, m_Zero());
}

std::optional<PaddedInput> getPaddedInput(linalg::Conv2DNchwFchwOp conv) {
  Value input = conv.getInputs()[0];
  auto inputType = cast<RankedTensorType>(input.getType());
  PaddedInput result;
  if (auto pad = input.getDefiningOp<tensor::PadOp>()) {
    Value value = pad.getConstantPaddingValue();
    if (!value || !isZero(value) || !pad->hasOneUse() ||
        !pad.getLow().empty() || !pad.getHigh().empty())
      return std::nullopt;
    ArrayRef<int64_t> low = pad.getStaticLow(), high = pad.getStaticHigh();
    if (low[0] || low[1] || high[0] || high[1])
      return std::nullopt;
    result = {pad.getSource(), pad, {low[2], low[3]}, {high[2], high[3]}};
    return result;
  }
  if (auto insert = input.getDefiningOp<tensor::InsertSliceOp>()) {
    auto fill = insert.getDest().getDefiningOp<linalg::FillOp>();
    auto sourceType = insert.getSourceType();
    if (!insert->hasOneUse() || !fill || !isZero(fill.getInputs()[0]) ||
        !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>() ||
        !sourceType.hasStaticShape() || sourceType.getRank() != 4 ||
        llvm::any_of(insert.getStaticStrides(),
                     [](int64_t s) { return s != 1; }))
      return std::nullopt;
    ArrayRef<int64_t> offsets = insert.getStaticOffsets();
    if (ShapedType::isDynamicShape(offsets) || offsets[0] || offsets[1] ||
        sourceType.getDimSize(0) != inputType.getDimSize(0) ||
        sourceType.getDimSize(1) != inputType.getDimSize(1))
      return std::nullopt;
    result = {insert.getSource(), insert, {offsets[2], offsets[3]}, {}};
    for (int64_t d = 2; d < 4; ++d)
      result.high.push_back(inputType.getDimSize(d) - offsets[d] -
                            sourceType.getDimSize(d));
    return result;
  }
  result.source = input;
  return result;
}

/// `source` zero-padded along H and W as `input` pads (its type inferred).
Value createZeroPad(OpBuilder &rewriter, Location loc, Value source,
                    const PaddedInput &input) {
  SmallVector<OpFoldResult> low(2, rewriter.getIndexAttr(0)), high = low;
  for (int64_t d = 0; d < 2; ++d) {
    low.push_back(rewriter.getIndexAttr(input.low[d]));
    high.push_back(rewriter.getIndexAttr(input.high[d]));
  }
  Type element = cast<RankedTensorType>(source.getType()).getElementType();
  Value zero =
      arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(element));
  return tensor::PadOp::create(rewriter, loc, /*resultType=*/Type(), source,
                               low, high, zero, /*nofold=*/false);
}

/// Erases `op` if it is dead, then what its last operand's producer
/// becomes (a fill's tensor.empty, an insert_slice's zero fill).
void eraseDeadChain(RewriterBase &rewriter, Operation *op) {
  while (op && isOpTriviallyDead(op)) {
    Operation *next = op->getNumOperands()
                          ? op->getOperands().back().getDefiningOp()
                          : nullptr;
    rewriter.eraseOp(op);
    op = next;
  }
}

/// Readers of `value` after `op` that need nothing computed after `op`
/// but their own zero-filled init move before it, init included, when all
/// of them can: a convolution bias's gradient, summed from the output
/// gradient after the input gradient's convolution, then no longer keeps
/// that gradient alive across the convolution (which may then write over
/// it).
void moveLateReadersBefore(Value value, Operation *op) {
  Block *block = op->getBlock();
  SmallVector<Operation *> moved;
  for (Operation *user : value.getUsers()) {
    Operation *reader = block->findAncestorOpInBlock(*user);
    if (!reader || reader == op || reader->isBeforeInBlock(op))
      continue;
    auto linalgOp = dyn_cast<linalg::LinalgOp>(reader);
    if (!linalgOp || !linalgOp.hasPureTensorSemantics())
      return;
    for (Value operand : reader->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || def->getBlock() != block || def->isBeforeInBlock(op))
        continue;
      // Only the reader's own init, computed for it alone.
      auto init = dyn_cast<linalg::FillOp>(def);
      auto empty = init ? init.getOutputs()[0].getDefiningOp<tensor::EmptyOp>()
                        : tensor::EmptyOp();
      if (!init || !init->hasOneUse() || !empty || !empty->hasOneUse() ||
          !linalgOp.isDpsInit(
              &*llvm::find_if(reader->getOpOperands(), [&](OpOperand &use) {
                return use.get() == operand;
              })))
        return;
      Operation *scalar = init.getInputs()[0].getDefiningOp();
      if (scalar && scalar->getBlock() == block && !scalar->isBeforeInBlock(op))
        return;
      moved.append({empty, init});
    }
    moved.push_back(reader);
  }
  for (Operation *late : moved)
    late->moveBefore(op);
}

/// A stride-1 convolution whose output has its input's shape (same
/// channels, "same" padding) and whose input dies there, as convolutions of
/// chunks of the batch in a loop, each writing its output over its own
/// input chunk:
///
///   scf.for %k iter_args(%acc = input):
///     yield insert_slice conv(pad(extract_slice %acc[chunk k]))
///           into %acc[chunk k]
///
/// One-Shot Bufferize writes every chunk into the input's buffer (a chunk
/// is read, padded into a copy, before its output is written), so input and
/// output never exist whole at once: the forward's and the backward's
/// convolutions between equal channels hold one full tensor, not two. A
/// loop, not the chunks unrolled: unrolled, a batch of 128 made chains of
/// 64 insert_slices per convolution whose bufferization analysis grew with
/// their square (124 of 148 s of a Fashion-MNIST CNN's compile). Each
/// image is computed as before: the same results.
LogicalResult convolveInPlace(RewriterBase &rewriter,
                              linalg::Conv2DNchwFchwOp conv,
                              int64_t chunkBytes) {
  std::optional<PaddedInput> input = getPaddedInput(conv);
  if (!input || !conv.hasPureTensorSemantics())
    return failure();
  auto type = dyn_cast<RankedTensorType>(input->source.getType());
  Value init = conv.getOutputs()[0];
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!type || type != conv.getResultTypes()[0] || !type.hasStaticShape() ||
      !llvm::all_of(conv.getStrides().getValues<int64_t>(),
                    [](int64_t s) { return s == 1; }) ||
      !fill || !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
    return failure();
  std::optional<int64_t> bytes = act::getTensorBytes(type);
  // A tensor within one chunk gains nothing.
  if (!bytes || *bytes <= chunkBytes)
    return failure();
  moveLateReadersBefore(input->source, conv);
  if (!diesAt(input->source, conv))
    return failure();
  int64_t batch = type.getDimSize(0);
  int64_t size = act::getChunkSize(batch, *bytes / batch, chunkBytes);
  if (!size)
    return failure();

  Location loc = conv.getLoc();
  rewriter.setInsertionPoint(conv);
  RankedTensorType chunkType = act::withBatch(type, size);
  Value filter = conv.getInputs()[1];
  Value zero = fill.getInputs()[0];
  // Always a loop (maxUnrolled 0): chunks written out made one-shot
  // bufferization's conflict analysis quadratic in their number.
  SmallVector<Value> result = {input->source};
  act::forEachChunk(
      rewriter, loc, batch, size, /*maxUnrolled=*/0, result,
      [&](OpFoldResult first, SmallVectorImpl<Value> &values) {
        Value acc = values[0];
        act::BatchSlice slice(rewriter, type, first, size);
        Value chunk = tensor::ExtractSliceOp::create(
            rewriter, loc, chunkType, acc, slice.offsets, slice.sizes,
            slice.strides);
        if (input->pad)
          chunk = createZeroPad(rewriter, loc, chunk, *input);
        // The output's zeros after the read: written into the input's
        // chunk only once its values are copied.
        Value empty = tensor::EmptyOp::create(
            rewriter, loc, chunkType.getShape(), type.getElementType());
        Value zeros =
            linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
        Value out =
            linalg::Conv2DNchwFchwOp::create(
                rewriter, loc, zeros.getType(), ValueRange{chunk, filter},
                ValueRange{zeros}, conv.getStrides(), conv.getDilations())
                ->getResult(0);
        values[0] = tensor::InsertSliceOp::create(
            rewriter, loc, out, acc, slice.offsets, slice.sizes, slice.strides);
      });
  rewriter.replaceOp(conv, result[0]);
  // The whole padded copy and the whole output's zeros, now unread, and
  // what they alone read (an insert_slice's zero-filled destination; the
  // pad's source, the input, stays read).
  for (Operation *op : {input->pad, fill.getOperation()})
    eraseDeadChain(rewriter, op);
  return success();
}

/// A convolution whose input is zero-padded by `tensor.insert_slice` into
/// a zero fill reads a `tensor.pad` instead: bufferized, the padded tensor
/// is then a copy, which the kernel call drops by reading the unpadded
/// buffer with padding (convert-linalg-to-act-kernels), where the
/// insert_slice had empty-tensor elimination compute its source into the
/// padded buffer, live as long as the source (a 16x128x8x8 gradient in a
/// 16x128x10x10 buffer: 56 % more).
void padAsCopy(RewriterBase &rewriter, linalg::Conv2DNchwFchwOp conv) {
  std::optional<PaddedInput> input = getPaddedInput(conv);
  if (!input || !isa_and_nonnull<tensor::InsertSliceOp>(input->pad))
    return;
  auto insert = cast<tensor::InsertSliceOp>(input->pad);
  rewriter.setInsertionPoint(insert);
  Value padded =
      createZeroPad(rewriter, insert.getLoc(), input->source, *input);
  Operation *fill = insert.getDest().getDefiningOp();
  rewriter.replaceOp(insert, padded);
  eraseDeadChain(rewriter, fill);
}

struct InPlacePass : act::impl::ActInPlacePassBase<InPlacePass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    return act::checkChunkBytes(context, "act-in-place", chunkBytes);
  }

  void runOnOperation() override {
    IRRewriter convRewriter(&getContext());
    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    getOperation().walk(
        [&](linalg::Conv2DNchwFchwOp op) { convs.push_back(op); });
    for (linalg::Conv2DNchwFchwOp conv : convs)
      if (failed(convolveInPlace(convRewriter, conv, chunkBytes)))
        padAsCopy(convRewriter, conv);

    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : generics) {
      if (!op.hasPureTensorSemantics() ||
          op.getNumParallelLoops() != op.getNumLoops())
        continue;
      // One input per op (the payload reads each block argument once).
      for (OpOperand &init : op.getDpsInitsMutable()) {
        if (!init.get().getDefiningOp<tensor::EmptyOp>() ||
            op.payloadUsesValueFromOperand(&init))
          continue;
        AffineMap map = op.getMatchingIndexingMap(&init);
        OpOperand *chosen = nullptr;
        for (OpOperand *input : op.getDpsInputOperands()) {
          Value value = input->get();
          if (value.getType() == init.get().getType() &&
              op.getMatchingIndexingMap(input) == map &&
              llvm::count(op.getInputs(), value) == 1 && diesAt(value, op)) {
            chosen = input;
            break;
          }
        }
        if (!chosen)
          continue;
        readInputAsInit(rewriter, op, chosen->getOperandNumber(),
                        init.getOperandNumber() - op.getNumDpsInputs());
        break;
      }
    }
  }
};

} // namespace
