//===- LinalgToKernels.cpp - f32 contractions as calls into act's kernels -===//
//
// On buffers: linalg.matmul, linalg.batch_matmul, linalg.conv_2d_nchw_fchw
// and linalg.conv_2d_ngchw_gfchw of f32 become calls of the runtime's
// _mlir_ciface_act_kernel_* (act/runtime/Kernels.h: oneDNN GEMMs, threaded).
// Operands go as fully dynamic strided memrefs (memref.cast), the
// convolution's strides and dilations as i64 arguments. Everything else, and
// contractions below `min-macs`, stays for convert-linalg-to-loops.
//
//===----------------------------------------------------------------------===//

#include "act/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::act {
#define GEN_PASS_DEF_CONVERTLINALGTOACTKERNELSPASS
#include "act/Conversion/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {

/// memref<?x...x?xf32, strided<[?, ...], offset: ?>>: what every kernel
/// takes, whatever the operand's layout.
MemRefType getAnyStridedType(MLIRContext *context, int64_t rank) {
  SmallVector<int64_t> dynamic(rank, ShapedType::kDynamic);
  return MemRefType::get(
      dynamic, Float32Type::get(context),
      StridedLayoutAttr::get(context, ShapedType::kDynamic, dynamic));
}

/// Replaces `op` by a call of _mlir_ciface_act_kernel_<name>_f32 on
/// `memrefs` (cast to fully dynamic strided memrefs, or unranked ones) and
/// `scalars`, declaring the callee on first use.
void replaceWithCall(PatternRewriter &rewriter, Operation *op, StringRef name,
                     ValueRange memrefs, ArrayRef<int64_t> scalars,
                     bool unranked = false) {
  Location loc = op->getLoc();
  MLIRContext *context = op->getContext();
  SmallVector<Value> operands;
  for (Value memref : memrefs) {
    auto type = cast<MemRefType>(memref.getType());
    Type target = unranked ? Type(UnrankedMemRefType::get(
                                 type.getElementType(), type.getMemorySpace()))
                           : getAnyStridedType(context, type.getRank());
    operands.push_back(memref::CastOp::create(rewriter, loc, target, memref));
  }
  for (int64_t scalar : scalars)
    operands.push_back(arith::ConstantIntOp::create(rewriter, loc, scalar, 64));

  std::string callee = ("act_kernel_" + name + "_f32").str();
  auto module = op->getParentOfType<ModuleOp>();
  auto function = module.lookupSymbol<func::FuncOp>(callee);
  auto type = FunctionType::get(context, ValueRange(operands).getTypes(), {});
  if (!function) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    function = func::FuncOp::create(rewriter, loc, callee, type);
    function.setPrivate();
    // Called through _mlir_ciface_<callee>(descriptor pointers...).
    function->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                      rewriter.getUnitAttr());
  }
  rewriter.replaceOpWithNewOp<func::CallOp>(op, function, operands);
}

/// Whether op is on buffers, all f32 and static with at least minMacs
/// multiply-accumulates (dynamic: always).
bool isCandidate(linalg::LinalgOp op, int64_t minMacs) {
  if (!op.hasPureBufferSemantics())
    return false;
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(operand.getType());
    if (!type || !type.getElementType().isF32())
      return false;
  }
  if (!op.hasDynamicShape()) {
    int64_t macs = 1;
    for (int64_t range : op.getStaticLoopRanges())
      macs *= range;
    if (macs < minMacs)
      return false;
  }
  return true;
}

/// A named matmul or convolution as a call on its operands; a convolution
/// passes its strides and dilations after them.
template <typename OpTy> struct NamedOpToCall : OpRewritePattern<OpTy> {
  NamedOpToCall(MLIRContext *context, StringRef name, int64_t minMacs)
      : OpRewritePattern<OpTy>(context), name(name), minMacs(minMacs) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!isCandidate(op, minMacs))
      return failure();
    SmallVector<int64_t> scalars;
    if constexpr (std::is_same_v<OpTy, linalg::MatmulOp> ||
                  std::is_same_v<OpTy, linalg::BatchMatmulOp>) {
      // Transposing or broadcasting indexing maps: left to loops.
      if (op.hasUserDefinedMaps())
        return failure();
    } else {
      llvm::append_range(scalars,
                         op.getStrides().template getValues<int64_t>());
      llvm::append_range(scalars,
                         op.getDilations().template getValues<int64_t>());
    }
    replaceWithCall(rewriter, op, name, op->getOperands(), scalars);
    return success();
  }
  std::string name;
  int64_t minMacs;
};

/// linalg.transpose as a copy from a transposed view (memref.transpose).
struct TransposeToCall : OpRewritePattern<linalg::TransposeOp> {
  TransposeToCall(MLIRContext *context, int64_t minElements)
      : OpRewritePattern(context), minElements(minElements) {}
  LogicalResult matchAndRewrite(linalg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (!isCandidate(op, minElements))
      return failure();
    AffineMap permutation =
        AffineMap::getPermutationMap(op.getPermutation(), op.getContext());
    Value view = memref::TransposeOp::create(
        rewriter, op.getLoc(), op.getInput(), AffineMapAttr::get(permutation));
    replaceWithCall(rewriter, op, "copy", {view, op.getInit()}, {},
                    /*unranked=*/true);
    return success();
  }
  int64_t minElements;
};

/// A generic that only moves elements, out[d] = in[e(d)] with each index of
/// e a loop index d_k or c - d_k (a weight read backwards for an input
/// gradient, transposed or not), as a copy from a view of the input with
/// negative strides for the reversed dimensions (memref.reinterpret_cast; the
/// input's layout must be static).
struct MoveToCall : OpRewritePattern<linalg::GenericOp> {
  MoveToCall(MLIRContext *context, int64_t minElements)
      : OpRewritePattern(context), minElements(minElements) {}
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
        op.getNumReductionLoops() != 0 || !isCandidate(op, minElements))
      return failure();
    auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
    if (op.getBody()->getOperations().size() != 1 ||
        yield.getOperand(0) != op.getBody()->getArgument(0))
      return failure();
    AffineMap inMap = op.getIndexingMapsArray()[0];
    if (!op.getIndexingMapsArray()[1].isIdentity())
      return failure();
    auto inType = cast<MemRefType>(op.getDpsInputs()[0].getType());
    auto outType = cast<MemRefType>(op.getDpsInits()[0].getType());
    SmallVector<int64_t> inStrides;
    int64_t inOffset;
    if (!inType.hasStaticShape() || !outType.hasStaticShape() ||
        failed(inType.getStridesAndOffset(inStrides, inOffset)) ||
        ShapedType::isDynamic(inOffset) ||
        llvm::any_of(inStrides, ShapedType::isDynamic) ||
        inMap.getNumResults() != inType.getRank())
      return failure();
    int64_t rank = outType.getRank();
    SmallVector<int64_t> strides(rank, 0);
    SmallVector<bool> seen(rank, false);
    int64_t offset = inOffset;
    for (auto [r, expr] : llvm::enumerate(inMap.getResults())) {
      // d_k, or c - d_k (as c + d_k * -1).
      int64_t sign = 1, constant = 0;
      AffineExpr dim = expr;
      if (auto sum = dyn_cast<AffineBinaryOpExpr>(expr);
          sum && sum.getKind() == AffineExprKind::Add) {
        auto c = dyn_cast<AffineConstantExpr>(sum.getRHS());
        auto product = dyn_cast<AffineBinaryOpExpr>(sum.getLHS());
        if (!c || !product || product.getKind() != AffineExprKind::Mul)
          return failure();
        auto minusOne = dyn_cast<AffineConstantExpr>(product.getRHS());
        if (!minusOne || minusOne.getValue() != -1)
          return failure();
        sign = -1, constant = c.getValue(), dim = product.getLHS();
      }
      auto d = dyn_cast<AffineDimExpr>(dim);
      if (!d || seen[d.getPosition()])
        return failure();
      seen[d.getPosition()] = true;
      strides[d.getPosition()] = sign * inStrides[r];
      offset += constant * inStrides[r];
    }
    if (llvm::is_contained(seen, false))
      return failure();
    auto viewType = MemRefType::get(
        outType.getShape(), inType.getElementType(),
        StridedLayoutAttr::get(op.getContext(), offset, strides),
        inType.getMemorySpace());
    Value view = memref::ReinterpretCastOp::create(
        rewriter, op.getLoc(), viewType, op.getDpsInputs()[0], offset,
        outType.getShape(), strides);
    replaceWithCall(rewriter, op, "copy", {view, op.getDpsInits()[0]}, {},
                    /*unranked=*/true);
    return success();
  }
  int64_t minElements;
};

struct ConvertLinalgToActKernelsPass
    : act::impl::ConvertLinalgToActKernelsPassBase<
          ConvertLinalgToActKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<NamedOpToCall<linalg::MatmulOp>>(context, "matmul", minMacs);
    patterns.add<NamedOpToCall<linalg::BatchMatmulOp>>(context, "batch_matmul",
                                                       minMacs);
    patterns.add<NamedOpToCall<linalg::Conv2DNchwFchwOp>>(
        context, "conv_2d_nchw_fchw", minMacs);
    patterns.add<NamedOpToCall<linalg::Conv2DNgchwGfchwOp>>(
        context, "conv_2d_ngchw_gfchw", minMacs);
    patterns.add<TransposeToCall, MoveToCall>(context, minMacs);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
