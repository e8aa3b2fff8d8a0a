//===- TransposeViews.cpp - transposed kernel operands as strided views ---===//

#include "act/Codegen/Passes.h"
#include "act/Support/BufferWrites.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::act {
#define GEN_PASS_DEF_ACTTRANSPOSEVIEWSPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

bool isKernelOp(Operation *op) {
  return isa<linalg::MatmulOp, linalg::BatchMatmulOp, linalg::Conv2DNchwFchwOp,
             linalg::Conv2DNgchwGfchwOp>(op);
}

bool readsThroughStrides(Operation *op, Value buffer) {
  if (!isKernelOp(op))
    return false;
  auto linalgOp = cast<linalg::LinalgOp>(op);
  return llvm::none_of(linalgOp.getDpsInits(),
                       [&](Value init) { return init == buffer; });
}

/// What one round of rewrites changed: ops it created or whose operands it
/// replaced (their buffers are unknown to, or read differently than, the
/// round's buffer analysis, built before the round), and ops it left dead,
/// erased at the round's end (so that no erased value is in the analysis).
struct Round {
  DenseSet<Operation *> dirty;
  llvm::SetVector<Operation *> dead;

  void replaceUses(Value from, Value to, Operation *except) {
    for (OpOperand &use : llvm::make_early_inc_range(from.getUses()))
      if (use.getOwner() != except) {
        dirty.insert(use.getOwner());
        use.set(to);
      }
    dirty.insert(to.getDefiningOp());
  }
};

/// A kernel's result transposed into a fresh buffer, `transpose(%a -> %b)`
/// where %a is allocated for it and only filled, written by kernels (as
/// their output) and read by the transpose: %a becomes the transposed view
/// of %b, so the kernel writes its result in place (act's kernels write
/// through strides: a convolution's (n, f) strides, a matmul's transposed
/// C as C^T += B^T A^T). The exported backward transposes every
/// convolution's weight gradient (computed with batch and channels swapped)
/// into the weight's layout this way.
LogicalResult writeInTransposedPlace(linalg::TransposeOp op, Round &round) {
  Value source = op.getInput(), target = op.getInit();
  auto sourceAlloc = source.getDefiningOp<memref::AllocOp>();
  auto targetAlloc = target.getDefiningOp<memref::AllocOp>();
  Block *block = op->getBlock();
  if (!sourceAlloc || !targetAlloc || sourceAlloc->getBlock() != block ||
      targetAlloc->getBlock() != block || targetAlloc->getNumOperands() != 0 ||
      !sourceAlloc.getType().getLayout().isIdentity() ||
      !targetAlloc.getType().getLayout().isIdentity() ||
      !targetAlloc.getType().hasStaticShape())
    return failure();
  bool written = false;
  for (OpOperand &use : source.getUses()) {
    Operation *user = use.getOwner();
    if (user == op.getOperation())
      continue;
    // A kernel in a loop before the transpose (a weight gradient summed
    // chunk by chunk, act-chunk-in-passes) writes it too.
    Operation *at = block->findAncestorOpInBlock(*user);
    auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
    if (!linalgOp || !at || op->isBeforeInBlock(at) ||
        !linalgOp.isDpsInit(&use) ||
        !(isKernelOp(user) || isa<linalg::FillOp>(user)))
      return failure();
    written |= isKernelOp(user);
  }
  for (Operation *user : target.getUsers())
    if (user != op.getOperation() &&
        (user->getBlock() != block || user->isBeforeInBlock(op)))
      return failure();
  if (!written)
    return failure();
  // %a[x] = %b[y] with y_i = x_perm[i]: the view's stride along
  // dimension perm[i] is %b's along i.
  SmallVector<int64_t> targetStrides;
  int64_t offset;
  if (failed(targetAlloc.getType().getStridesAndOffset(targetStrides, offset)))
    return failure();
  auto sourceType = sourceAlloc.getType();
  SmallVector<int64_t> strides(sourceType.getRank());
  for (auto [i, dim] : llvm::enumerate(op.getPermutation()))
    strides[dim] = targetStrides[i];
  targetAlloc->moveBefore(sourceAlloc);
  round.dirty.insert(targetAlloc);
  OpBuilder builder(sourceAlloc);
  auto viewType =
      MemRefType::get(sourceType.getShape(), sourceType.getElementType(),
                      StridedLayoutAttr::get(op.getContext(), offset, strides),
                      sourceType.getMemorySpace());
  auto view =
      memref::ReinterpretCastOp::create(builder, op.getLoc(), viewType, target,
                                        offset, sourceType.getShape(), strides);
  round.replaceUses(source, view, op);
  // (The transpose now copies the dead buffer onto its own destination:
  // erased with the buffer at the round's end.)
  round.dead.insert(op);
  round.dead.insert(sourceAlloc);
  return success();
}

/// A transpose read only by kernels that read through strides, as a view
/// of its input, when nothing writes the input until the last reader.
/// `origin` is the round's analysis; a reader span holding an op the round
/// changed is left to the next round (the analysis does not know it).
enum class Viewed { No, Yes, NextRound };
Viewed readAsView(linalg::TransposeOp op, Round &round,
                  std::optional<BufferOriginAnalysis> &origin) {
  Value source = op.getInput(), target = op.getInit();
  auto alloc = target.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != op->getBlock())
    return Viewed::No;
  Block *block = op->getBlock();
  Operation *last = nullptr;
  for (Operation *user : target.getUsers()) {
    if (user == op)
      continue;
    if (user->getBlock() != block || user->isBeforeInBlock(op) ||
        !readsThroughStrides(user, target))
      return Viewed::No;
    if (!last || last->isBeforeInBlock(user))
      last = user;
  }
  if (!last)
    return Viewed::No;
  auto sourceType = cast<MemRefType>(source.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(sourceType.getStridesAndOffset(strides, offset)) ||
      !sourceType.hasStaticShape() || ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return Viewed::No;
  for (Operation *between = op->getNextNode(); between;
       between = between->getNextNode()) {
    if (round.dirty.contains(between))
      return Viewed::NextRound;
    if (between == last)
      break;
  }
  if (round.dirty.contains(source.getDefiningOp()))
    return Viewed::NextRound;
  if (!origin)
    origin.emplace(op->getParentOfType<func::FuncOp>());
  if (act::mayWriteBufferBetween(op, last, source, *origin))
    return Viewed::No;
  // memref.reinterpret_cast, not memref.transpose: the buffer analyses
  // (BufferViewFlowAnalysis, so deallocation) follow ViewLikeOpInterface,
  // which memref.transpose does not implement.
  SmallVector<int64_t> sizes, permutedStrides;
  for (int64_t dim : op.getPermutation()) {
    sizes.push_back(sourceType.getDimSize(dim));
    permutedStrides.push_back(strides[dim]);
  }
  auto viewType = MemRefType::get(
      sizes, sourceType.getElementType(),
      StridedLayoutAttr::get(op.getContext(), offset, permutedStrides),
      sourceType.getMemorySpace());
  OpBuilder builder(op);
  auto view = memref::ReinterpretCastOp::create(
      builder, op.getLoc(), viewType, source, offset, sizes, permutedStrides);
  round.replaceUses(target, view, op);
  round.dead.insert(op);
  if (llvm::all_of(alloc->getUsers(),
                   [&](Operation *user) { return user == op.getOperation(); }))
    round.dead.insert(alloc);
  return Viewed::Yes;
}

struct TransposeViewsPass
    : act::impl::ActTransposeViewsPassBase<TransposeViewsPass> {
  void runOnOperation() override {
    // Rounds until one rewrites nothing: one buffer analysis per round (a
    // walk of the whole function; one per transpose was quadratic: 9.5 s
    // for an unrolled LSTM's 265 transposes), a rewrite whose reader span
    // the round already changed left to the next, dead ops erased at the
    // round's end.
    for (bool again = true; again;) {
      again = false;
      Round round;
      std::optional<BufferOriginAnalysis> origin;
      SmallVector<linalg::TransposeOp> transposes;
      getOperation().walk(
          [&](linalg::TransposeOp op) { transposes.push_back(op); });
      for (linalg::TransposeOp op : transposes) {
        if (!op.hasPureBufferSemantics() || round.dirty.contains(op))
          continue;
        if (succeeded(writeInTransposedPlace(op, round))) {
          again = true;
          continue;
        }
        Viewed viewed = readAsView(op, round, origin);
        again |= viewed != Viewed::No;
      }
      for (Operation *dead : round.dead)
        dead->dropAllUses();
      for (Operation *dead : round.dead)
        dead->erase();
    }
  }
};

} // namespace
