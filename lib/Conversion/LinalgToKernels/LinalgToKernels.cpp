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

/// Replaces `op` by a call of _mlir_ciface_act_kernel_<name>_f32 on its
/// operands and `scalars`, declaring the callee on first use.
void replaceWithCall(PatternRewriter &rewriter, linalg::LinalgOp op,
                     StringRef name, ArrayRef<int64_t> scalars) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  SmallVector<Value> operands;
  for (Value operand : op->getOperands())
    operands.push_back(memref::CastOp::create(
        rewriter, loc,
        getAnyStridedType(context,
                          cast<MemRefType>(operand.getType()).getRank()),
        operand));
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

template <typename OpTy> struct ContractionToCall : OpRewritePattern<OpTy> {
  ContractionToCall(MLIRContext *context, StringRef name, int64_t minMacs)
      : OpRewritePattern<OpTy>(context), name(name), minMacs(minMacs) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    // Transposing or broadcasting indexing maps: left to loops.
    if (op.hasUserDefinedMaps() || !isCandidate(op, minMacs))
      return failure();
    replaceWithCall(rewriter, op, name, {});
    return success();
  }
  std::string name;
  int64_t minMacs;
};

template <typename OpTy> struct ConvolutionToCall : OpRewritePattern<OpTy> {
  ConvolutionToCall(MLIRContext *context, StringRef name, int64_t minMacs)
      : OpRewritePattern<OpTy>(context), name(name), minMacs(minMacs) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!isCandidate(op, minMacs))
      return failure();
    SmallVector<int64_t> scalars;
    llvm::append_range(scalars, op.getStrides().template getValues<int64_t>());
    llvm::append_range(scalars,
                       op.getDilations().template getValues<int64_t>());
    replaceWithCall(rewriter, op, name, scalars);
    return success();
  }
  std::string name;
  int64_t minMacs;
};

struct ConvertLinalgToActKernelsPass
    : act::impl::ConvertLinalgToActKernelsPassBase<
          ConvertLinalgToActKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<ContractionToCall<linalg::MatmulOp>>(context, "matmul",
                                                      minMacs);
    patterns.add<ContractionToCall<linalg::BatchMatmulOp>>(
        context, "batch_matmul", minMacs);
    patterns.add<ConvolutionToCall<linalg::Conv2DNchwFchwOp>>(
        context, "conv_2d_nchw_fchw", minMacs);
    patterns.add<ConvolutionToCall<linalg::Conv2DNgchwGfchwOp>>(
        context, "conv_2d_ngchw_gfchw", minMacs);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
