//===- LinalgToKernels.cpp - f32 contractions as calls into act's kernels -===//
//
// On buffers: linalg.matmul, linalg.batch_matmul, linalg.conv_2d_nchw_fchw
// and linalg.conv_2d_ngchw_gfchw of f32 become calls of the runtime's
// _mlir_ciface_act_kernel_* (act/runtime/Kernels.h: oneDNN GEMMs, threaded).
// Operands go as fully dynamic strided memrefs (memref.cast), the
// convolution's strides, dilations and padding as i64 arguments. A
// convolution whose input is a zero-padded copy of a buffer (tensor.pad,
// bufferized) reads that buffer with the kernel's padding instead, and the
// padded copy goes; an input gradient (the output gradient spread into
// zeros, convolved with the weight read backwards) becomes the kernel's
// input gradient on the gradient and the weight themselves. Everything else,
// and contractions below `min-macs`, stays for convert-linalg-to-loops.
//
//===----------------------------------------------------------------------===//

#include "act/Conversion/Passes.h"
#include "act/Support/BufferWrites.h"
#include "act/runtime/CudaLibraries.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
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

/// The CPU's kernels (act/runtime/Kernels.h) and the GPU's library calls
/// (act/runtime/CudaLibraries.h).
constexpr StringLiteral kCpuPrefix = "act_kernel_";
constexpr StringLiteral kGpuPrefix = "act_gpu_kernel_";

/// Whether the GPU runtime can run a convolution of `in` (h, w) by a
/// kernel (kh, kw) into `out` (oh, ow) through cuDNN
/// (act::rt::getCudnnConvReading, which the runtime decides by too).
bool cudnnAccepts(ArrayRef<int64_t> in, ArrayRef<int64_t> kernel,
                  ArrayRef<int64_t> out, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads,
                  bool oneGroup) {
  if (llvm::any_of(llvm::concat<const int64_t>(in, kernel, out),
                   ShapedType::isDynamic))
    return false;
  return ::act::rt::getCudnnConvReading(in.data(), kernel.data(), out.data(),
                                        strides.data(), dilations.data(),
                                        pads.data(), oneGroup) !=
         ::act::rt::CudnnConvReading::None;
}

/// The last two dims of a shaped value.
SmallVector<int64_t> spatialSizes(Value value) {
  ArrayRef<int64_t> shape = cast<ShapedType>(value.getType()).getShape();
  return SmallVector<int64_t>(shape.take_back(2));
}

/// Replaces `op` by a call of _mlir_ciface_<prefix><name>_f32 on
/// `memrefs` (cast to fully dynamic strided memrefs, or unranked ones) and
/// `scalars`, declaring the callee on first use.
func::CallOp replaceWithCall(RewriterBase &rewriter, Operation *op,
                             StringRef prefix, StringRef name,
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

  std::string callee = (prefix + name + "_f32").str();
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
  return rewriter.replaceOpWithNewOp<func::CallOp>(op, function, operands);
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
  NamedOpToCall(MLIRContext *context, StringRef prefix, StringRef name,
                int64_t minMacs)
      : OpRewritePattern<OpTy>(context), prefix(prefix), name(name),
        minMacs(minMacs) {}
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
      scalars.append({0, 0}); // padding
      if (prefix == kGpuPrefix &&
          !cudnnAccepts(
              spatialSizes(op->getOperand(0)), spatialSizes(op->getOperand(1)),
              spatialSizes(op->getOperand(2)), ArrayRef(scalars).slice(0, 2),
              ArrayRef(scalars).slice(2, 2), ArrayRef(scalars).slice(4, 2),
              std::is_same_v<OpTy, linalg::Conv2DNchwFchwOp>))
        return failure();
    }
    replaceWithCall(rewriter, op, prefix, name, op->getOperands(), scalars);
    return success();
  }
  std::string prefix, name;
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
    replaceWithCall(rewriter, op, kCpuPrefix, "copy", {view, op.getInit()}, {},
                    /*unranked=*/true);
    return success();
  }
  int64_t minElements;
};

/// `expr` as `c - d_k` (affine form d_k * -1 + c, or d_k * -1 for c = 0:
/// a 1x1 weight read backwards): {k, c}.
std::optional<std::pair<unsigned, int64_t>> matchReversedDim(AffineExpr expr) {
  int64_t constant = 0;
  if (auto sum = dyn_cast<AffineBinaryOpExpr>(expr);
      sum && sum.getKind() == AffineExprKind::Add) {
    auto c = dyn_cast<AffineConstantExpr>(sum.getRHS());
    if (!c)
      return std::nullopt;
    constant = c.getValue();
    expr = sum.getLHS();
  }
  auto product = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!product || product.getKind() != AffineExprKind::Mul)
    return std::nullopt;
  auto minusOne = dyn_cast<AffineConstantExpr>(product.getRHS());
  auto dim = dyn_cast<AffineDimExpr>(product.getLHS());
  if (!minusOne || minusOne.getValue() != -1 || !dim)
    return std::nullopt;
  return std::make_pair(dim.getPosition(), constant);
}

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
      // d_k, or c - d_k.
      int64_t sign = 1, constant = 0;
      unsigned k;
      if (auto reversed = matchReversedDim(expr))
        sign = -1, k = reversed->first, constant = reversed->second;
      else if (auto d = dyn_cast<AffineDimExpr>(expr))
        k = d.getPosition();
      else
        return failure();
      if (seen[k])
        return failure();
      seen[k] = true;
      strides[k] = sign * inStrides[r];
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
    replaceWithCall(rewriter, op, kCpuPrefix, "copy",
                    {view, op.getDpsInits()[0]}, {}, /*unranked=*/true);
    return success();
  }
  int64_t minElements;
};

/// Whether `value` is the constant 0.0.
bool isZero(Value value) {
  auto constant = value.getDefiningOp<arith::ConstantFloatOp>();
  return constant && constant.value().isZero();
}

/// Whether `op` writes 0 to every element of `buffer`: linalg.fill, or the
/// linalg.map a bufferized tensor.pad fills with.
bool fillsWithZero(Operation *op, Value buffer) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.getOutputs()[0] == buffer && isZero(fill.getInputs()[0]);
  if (auto map = dyn_cast<linalg::MapOp>(op)) {
    auto yield = cast<linalg::YieldOp>(map.getBody()->getTerminator());
    return map.getInit() == buffer && map.getInputs().empty() &&
           yield.getNumOperands() == 1 && isZero(yield.getOperand(0));
  }
  return false;
}

/// The static strides and offset of `type`, or failure.
LogicalResult getStaticLayout(MemRefType type,
                              SmallVectorImpl<int64_t> &strides,
                              int64_t &offset) {
  if (!type.hasStaticShape() ||
      failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return failure();
  return success();
}

/// A static view of a strided region of a buffer (`region`: the region's
/// type, a subview of the buffer) as the same view of a contiguous buffer of
/// the region's shape: its type there, or null when the view does not lie
/// within the region, each of its dimensions along one of the region's.
/// (A reinterpret_cast's offset counts from the buffer's start.)
MemRefType getViewInRegion(MemRefType region, memref::ReinterpretCastOp view) {
  SmallVector<int64_t> regionStrides, strides;
  int64_t regionOffset, offset;
  if (failed(getStaticLayout(region, regionStrides, regionOffset)) ||
      failed(getStaticLayout(view.getType(), strides, offset)) ||
      !view.getType().hasStaticShape())
    return {};
  ArrayRef<int64_t> shape = region.getShape();
  SmallVector<int64_t> ownStrides = computeSuffixProduct(shape);
  // The region's index where the view starts, by decreasing stride.
  auto order = llvm::to_vector(
      llvm::seq<int64_t>(0, static_cast<int64_t>(shape.size())));
  llvm::sort(order, [&](int64_t a, int64_t b) {
    return regionStrides[a] > regionStrides[b];
  });
  SmallVector<int64_t> start(shape.size(), 0);
  int64_t left = offset - regionOffset, ownOffset = 0;
  for (int64_t d : order) {
    int64_t index = regionStrides[d] > 0 ? left / regionStrides[d] : 0;
    if (index < 0 || index >= shape[d])
      return {};
    left -= index * regionStrides[d];
    start[d] = index;
    ownOffset += index * ownStrides[d];
  }
  if (left != 0)
    return {};
  SmallVector<bool> taken(shape.size(), false);
  for (auto [k, stride] : llvm::enumerate(strides)) {
    int64_t size = view.getType().getDimSize(k);
    if (size == 1) {
      stride = 0;
      continue;
    }
    auto *at = llvm::find(regionStrides, stride);
    if (at == regionStrides.end() || llvm::count(regionStrides, stride) != 1)
      return {};
    int64_t d = at - regionStrides.begin();
    if (taken[d] || start[d] + size > shape[d])
      return {};
    taken[d] = true;
    stride = ownStrides[d];
  }
  return MemRefType::get(
      view.getType().getShape(), region.getElementType(),
      StridedLayoutAttr::get(view.getContext(), ownOffset, strides),
      region.getMemorySpace());
}

/// A buffer that holds a region of values among zeros, around them (a
/// padded copy, tensor.pad bufferized) or with them spread out (a dilated
/// copy, a strided tensor.insert_slice into zeros), read by a consumer:
///
///   %p = memref.alloc()
///   <%p filled with 0>
///   memref.copy %x, subview %p[offsets] [sizes of %x] [strides]
///   <consumer reads %p>
///
/// or, with `inPlace`, the region computed where it lies (its producer
/// wrote into the subview, and other ops may read it there): every other
/// use of %p is a subview of the same region, after the fill.
struct ZeroFilledRegion {
  memref::AllocOp alloc;
  Operation *filler = nullptr;
  memref::SubViewOp subview;
  /// Null when the region is computed in place.
  memref::CopyOp copy;
  SmallVector<Operation *> deallocs;
  /// In place: static views of the buffer within the region.
  SmallVector<memref::ReinterpretCastOp> views;
  /// The values: the copy's source, or the subview.
  Value source;
  SmallVector<int64_t> offsets, strides;

  /// Erases the buffer, its fill and copy (not in place).
  void erase(RewriterBase &rewriter) {
    rewriter.eraseOp(copy);
    rewriter.eraseOp(subview);
    rewriter.eraseOp(filler);
    for (Operation *dealloc : deallocs)
      rewriter.eraseOp(dealloc);
    rewriter.eraseOp(alloc);
  }

  /// In place, once no reader needs the zeros around the region (the
  /// kernel that replaced the consumer reads the region alone): the region
  /// in a buffer of its own, of its shape and contiguous. The buffer, its
  /// fill and the subviews go; the region's writers and readers take the
  /// new buffer (views of the region, such as act-transpose-views' for a
  /// weight gradient, the same view of it), filled with zeros where the
  /// buffer was. A strided convolution's output gradient spread into zeros
  /// in place otherwise keeps a buffer 4x its size (stride 2) live from its
  /// first write to the kernel, and every op on it reads and writes every
  /// other element. Fails, changing nothing, where a user of the region
  /// would need a type the new buffer cannot give it (a view other than a
  /// static reinterpret_cast, a call).
  LogicalResult moveToOwnBuffer(RewriterBase &rewriter) {
    SmallVector<memref::SubViewOp> subviews;
    for (Operation *user : alloc->getUsers())
      if (auto sv = dyn_cast<memref::SubViewOp>(user))
        subviews.push_back(sv);
    MemRefType viewType = subview.getType();
    auto type =
        MemRefType::get(viewType.getShape(), viewType.getElementType(),
                        MemRefLayoutAttrInterface(), viewType.getMemorySpace());
    auto translate = [&](memref::ReinterpretCastOp view) {
      return getViewInRegion(viewType, view);
    };
    // Whether `user` takes a buffer of type `to` instead of the one it
    // reads: as it is (a cast to a compatible type, linalg, copies, loads
    // and stores), or through the same view of it (a subview; a static
    // reinterpret_cast, whose offset counts from the buffer's start),
    // whose own users take that view.
    std::function<bool(Operation *, MemRefType)> takes = [&](Operation *user,
                                                             MemRefType to) {
      auto usersTake = [&](Value view, MemRefType on) {
        return on && llvm::all_of(view.getUsers(),
                                  [&](Operation *u) { return takes(u, on); });
      };
      if (auto cast = dyn_cast<memref::CastOp>(user))
        return memref::CastOp::areCastCompatible(TypeRange{to},
                                                 TypeRange{cast.getType()});
      if (auto sv = dyn_cast<memref::SubViewOp>(user))
        return usersTake(sv.getResult(),
                         memref::SubViewOp::inferResultType(
                             to, sv.getMixedOffsets(), sv.getMixedSizes(),
                             sv.getMixedStrides()));
      if (auto view = dyn_cast<memref::ReinterpretCastOp>(user))
        return usersTake(view.getResult(), translate(view));
      return isa<linalg::LinalgOp, memref::CopyOp, memref::LoadOp,
                 memref::StoreOp>(user);
    };
    // `use` on `to` instead (as `takes` accepted its user): a view is made
    // again on `to` and its users follow.
    std::function<void(OpOperand &, Value)> moveUse = [&](OpOperand &use,
                                                          Value to) {
      Operation *user = use.getOwner();
      rewriter.setInsertionPoint(user);
      Value view;
      if (auto sv = dyn_cast<memref::SubViewOp>(user)) {
        view = memref::SubViewOp::create(
            rewriter, sv.getLoc(), to, sv.getMixedOffsets(), sv.getMixedSizes(),
            sv.getMixedStrides());
      } else if (auto reinterpret = dyn_cast<memref::ReinterpretCastOp>(user)) {
        MemRefType viewOnOwn = translate(reinterpret);
        auto layout = cast<StridedLayoutAttr>(viewOnOwn.getLayout());
        view = memref::ReinterpretCastOp::create(
            rewriter, reinterpret.getLoc(), viewOnOwn, to, layout.getOffset(),
            viewOnOwn.getShape(), layout.getStrides());
      } else {
        rewriter.modifyOpInPlace(user, [&] { use.set(to); });
        return;
      }
      for (OpOperand &next :
           llvm::make_early_inc_range(user->getResult(0).getUses()))
        moveUse(next, view);
      rewriter.eraseOp(user);
    };
    // The region's subviews become the new buffer itself; the views of the
    // buffer, the same views of it.
    for (memref::SubViewOp sv : subviews)
      for (Operation *user : sv->getUsers())
        if (!takes(user, type))
          return failure();
    for (memref::ReinterpretCastOp view : views)
      if (!takes(view, type))
        return failure();
    rewriter.setInsertionPoint(alloc);
    // (The region's dynamic dimensions are the buffer's, of its sizes.)
    Value own = memref::AllocOp::create(rewriter, alloc.getLoc(), type,
                                        alloc.getDynamicSizes(),
                                        alloc.getAlignmentAttr());
    rewriter.setInsertionPoint(filler);
    Value zero =
        arith::ConstantOp::create(rewriter, filler->getLoc(),
                                  rewriter.getZeroAttr(type.getElementType()));
    linalg::FillOp::create(rewriter, filler->getLoc(), zero, own);
    for (memref::SubViewOp sv : subviews) {
      for (OpOperand &use : llvm::make_early_inc_range(sv->getUses()))
        moveUse(use, own);
      rewriter.eraseOp(sv);
    }
    for (memref::ReinterpretCastOp view : views)
      moveUse(view.getSourceMutable(), own);
    for (Operation *dealloc : deallocs) {
      rewriter.setInsertionPoint(dealloc);
      memref::DeallocOp::create(rewriter, dealloc->getLoc(), own);
      rewriter.eraseOp(dealloc);
    }
    rewriter.eraseOp(filler);
    rewriter.eraseOp(alloc);
    source = own;
    return success();
  }
};

/// `padded` as a ZeroFilledRegion read by `consumer` (and `view`, a view of
/// it the consumer reads, if any), in one block (the buffer may be allocated
/// in a block around it).
FailureOr<ZeroFilledRegion> matchZeroFilledRegion(Value padded,
                                                  Operation *consumer,
                                                  Operation *view,
                                                  bool allowInPlace) {
  ZeroFilledRegion m;
  m.alloc = padded.getDefiningOp<memref::AllocOp>();
  // The buffer may be allocated around a loop the rest is in
  // (buffer-loop-hoisting).
  if (!m.alloc || !m.alloc->getBlock()->findAncestorOpInBlock(*consumer) ||
      !m.alloc.getType().getLayout().isIdentity())
    return failure();
  SmallVector<memref::SubViewOp> subviews;
  for (Operation *user : padded.getUsers()) {
    if (user == consumer || user == view)
      continue;
    if (isa<memref::DeallocOp>(user))
      m.deallocs.push_back(user);
    else if (!m.filler && user->getBlock() == consumer->getBlock() &&
             fillsWithZero(user, padded))
      m.filler = user;
    else if (auto sv = dyn_cast<memref::SubViewOp>(user))
      subviews.push_back(sv);
    else if (auto cast = dyn_cast<memref::ReinterpretCastOp>(user);
             cast && allowInPlace)
      m.views.push_back(cast);
    else
      return failure();
  }
  if (!m.filler || subviews.empty() || (view && !view->hasOneUse()))
    return failure();
  for (memref::SubViewOp sv : subviews)
    if (sv->getBlock() != consumer->getBlock() ||
        !m.filler->isBeforeInBlock(sv) || !sv->isBeforeInBlock(consumer))
      return failure();
  m.subview = subviews.front();
  // A dynamic dimension of the buffer (the batch of the step for every
  // batch size) is the region's whole extent, of the same size value.
  MemRefType allocType = m.alloc.getType();
  SmallVector<OpFoldResult> sizes = m.subview.getMixedSizes();
  for (int64_t d = 0, dynamic = 0; d < allocType.getRank(); ++d) {
    if (allocType.isDynamicDim(d) !=
        ShapedType::isDynamic(m.subview.getStaticSizes()[d]))
      return failure();
    if (!allocType.isDynamicDim(d))
      continue;
    if (m.subview.getStaticOffsets()[d] != 0 ||
        m.subview.getStaticStrides()[d] != 1 ||
        dyn_cast<Value>(sizes[d]) != m.alloc.getDynamicSizes()[dynamic++])
      return failure();
  }
  if (subviews.size() == 1 && m.subview->hasOneUse())
    m.copy = dyn_cast<memref::CopyOp>(*m.subview->getUsers().begin());
  if (m.copy && m.copy.getTarget() == m.subview.getResult() &&
      m.copy->getBlock() == consumer->getBlock() &&
      m.copy->isBeforeInBlock(consumer)) {
    m.source = m.copy.getSource();
  } else {
    m.copy = nullptr;
    if (!allowInPlace)
      return failure();
    for (memref::SubViewOp sv : subviews)
      if (sv.getStaticOffsets() != m.subview.getStaticOffsets() ||
          sv.getStaticSizes() != m.subview.getStaticSizes() ||
          sv.getStaticStrides() != m.subview.getStaticStrides() ||
          sv.getSizes() != m.subview.getSizes())
        return failure();
    m.source = m.subview.getResult();
  }
  // Views of the buffer (act-transpose-views' for a weight gradient) must
  // lie within the region: the consumer's replacement reads the region
  // alone.
  if (!m.views.empty() && m.copy)
    return failure();
  for (memref::ReinterpretCastOp cast : m.views)
    if (!getViewInRegion(m.subview.getType(), cast))
      return failure();
  auto sourceType = cast<MemRefType>(m.source.getType());
  for (int64_t d = 0, rank = sourceType.getRank(); d < rank; ++d) {
    int64_t offset = m.subview.getStaticOffsets()[d];
    int64_t stride = m.subview.getStaticStrides()[d];
    if (ShapedType::isDynamic(offset) || ShapedType::isDynamic(stride) ||
        stride < 1 || m.subview.getStaticSizes()[d] != sourceType.getDimSize(d))
      return failure();
    m.offsets.push_back(offset);
    m.strides.push_back(stride);
  }
  return m;
}

/// The deallocations of `value`'s buffer strictly between `from` and `to`
/// (which move after the call that replaces `to`), or failure if an op in
/// between may write it: the call reads it later than the IR did.
/// Whether `op` holds no write of `buffer` but by calls this pass made: a
/// kernel writes only its last operand (its output), not `buffer` (a loop
/// over chunks of the batch whose input gradients became kernel calls,
/// between a flipped weight and the next loop's convolution).
bool writesKernelOutputOnly(Operation *op, Value buffer,
                            BufferOriginAnalysis &origin) {
  bool calls = false;
  WalkResult walk = op->walk([&](Operation *nested) {
    auto call = dyn_cast<func::CallOp>(nested);
    if (call) {
      calls = true;
      Value out = call.getOperands().empty()
                      ? Value()
                      : mlir::act::getBufferRoot(call.getOperands().back());
      if (!(call.getCallee().starts_with(kCpuPrefix) ||
            call.getCallee().starts_with(kGpuPrefix)) ||
          !out || origin.isSameAllocation(out, buffer) != false)
        return WalkResult::interrupt();
      return WalkResult::advance();
    }
    // Anything else: as act::mayWriteBuffer sees it.
    if (nested != op && !isa<LoopLikeOpInterface>(nested) &&
        mlir::act::mayWriteBuffer(nested, buffer, origin))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return calls && !walk.wasInterrupted();
}

FailureOr<SmallVector<Operation *>>
getFreesIfUnwritten(Value value, Operation *from, Operation *to) {
  Value root = mlir::act::getBufferRoot(value);
  BufferOriginAnalysis origin(to->getParentOp());
  SmallVector<Operation *> frees;
  for (Operation *between = from->getNextNode(); between != to;
       between = between->getNextNode()) {
    if (auto dealloc = dyn_cast<memref::DeallocOp>(between);
        dealloc && dealloc.getMemref() == root) {
      frees.push_back(dealloc);
      continue;
    }
    if (writesKernelOutputOnly(between, root, origin))
      continue;
    if (mlir::act::mayWriteBuffer(between, root, origin))
      return failure();
  }
  return frees;
}

/// A convolution (on buffers) whose input is a zero-padded copy of another
/// buffer as a kernel call reading that buffer with padding:
///
///   %p = memref.alloc()                      // N x C x (H+t+b) x (W+l+r)
///   <%p filled with 0>
///   memref.copy %x, subview %p[0, 0, t, l] [N, C, H, W] [1, 1, 1, 1]
///   conv(%p, ...)   or   conv(reinterpret_cast %p (dims 0, 1 permuted))
///
/// becomes conv(%x (or the same view of it), ..., padding t, l); the padded
/// buffer and its fill and copy go, and %x is freed after the call.
LogicalResult convOnPaddedCopy(IRRewriter &rewriter, linalg::LinalgOp op,
                               StringRef prefix, StringRef name,
                               int64_t minMacs) {
  if (!isCandidate(op, minMacs))
    return failure();
  int64_t rank = cast<MemRefType>(op->getOperand(0).getType()).getRank();
  int64_t spatial = rank - 2; // first spatial dimension
  Value input = op->getOperand(0);
  auto view = input.getDefiningOp<memref::ReinterpretCastOp>();
  Value padded = view ? view.getSource() : input;
  FailureOr<ZeroFilledRegion> copy =
      matchZeroFilledRegion(padded, op, view, /*allowInPlace=*/false);
  if (failed(copy))
    return failure();
  // The copy fills the interior: offsets 0 but along H and W, unit strides.
  Value source = copy->source;
  auto sourceType = cast<MemRefType>(source.getType());
  SmallVector<int64_t> pads;
  for (int64_t d = 0; d < rank; ++d) {
    if (copy->strides[d] != 1 || (d < spatial && copy->offsets[d] != 0))
      return failure();
    if (d >= spatial)
      pads.push_back(copy->offsets[d]);
  }
  SmallVector<int64_t> sourceStrides;
  int64_t sourceOffset;
  if (failed(getStaticLayout(sourceType, sourceStrides, sourceOffset)))
    return failure();
  SmallVector<int64_t> scalars;
  auto attrValues = [&](StringRef attr) {
    for (int64_t v :
         cast<DenseIntElementsAttr>(op->getAttr(attr)).getValues<int64_t>())
      scalars.push_back(v);
  };
  attrValues("strides");
  attrValues("dilations");
  scalars.append(pads);
  if (prefix == kGpuPrefix &&
      !cudnnAccepts(spatialSizes(source), spatialSizes(op->getOperand(1)),
                    spatialSizes(op->getOperand(2)),
                    ArrayRef(scalars).slice(0, 2),
                    ArrayRef(scalars).slice(2, 2), pads, rank == 4))
    return failure();
  // The source must hold its values until the call reads them.
  FailureOr<SmallVector<Operation *>> sourceFrees =
      getFreesIfUnwritten(source, copy->copy, op);
  if (failed(sourceFrees))
    return failure();
  // The view permutes the dimensions before the spatial ones: the same
  // view of the source.
  Value newInput = source;
  if (view) {
    SmallVector<int64_t> paddedStrides, viewStrides;
    int64_t paddedOffset, viewOffset;
    if (failed(getStaticLayout(copy->alloc.getType(), paddedStrides,
                               paddedOffset)) ||
        failed(getStaticLayout(view.getType(), viewStrides, viewOffset)) ||
        viewOffset != 0)
      return failure();
    SmallVector<int64_t> sizes, strides;
    for (int64_t d = 0; d < rank; ++d) {
      auto *at = llvm::find(paddedStrides, viewStrides[d]);
      int64_t from = at - paddedStrides.begin();
      if (at == paddedStrides.end() || llvm::count(paddedStrides, *at) != 1 ||
          (d >= spatial) != (from >= spatial) || (d >= spatial && from != d))
        return failure();
      sizes.push_back(sourceType.getDimSize(from));
      strides.push_back(sourceStrides[from]);
    }
    rewriter.setInsertionPoint(op);
    auto type = MemRefType::get(
        sizes, sourceType.getElementType(),
        StridedLayoutAttr::get(op->getContext(), sourceOffset, strides),
        sourceType.getMemorySpace());
    newInput = memref::ReinterpretCastOp::create(
        rewriter, view.getLoc(), type, source, sourceOffset, sizes, strides);
  }
  rewriter.setInsertionPoint(op);
  func::CallOp call = replaceWithCall(
      rewriter, op, prefix, name,
      {newInput, op->getOperand(1), op->getOperand(2)}, scalars);
  for (Operation *free : *sourceFrees)
    free->moveAfter(call);
  if (view)
    rewriter.eraseOp(view);
  copy->erase(rewriter);
  return success();
}

/// The input gradient of a convolution as the exported backward writes it,
/// a stride-1 convolution of the output gradient spread into zeros (a
/// dilated, padded copy) with the weight read backwards and channels
/// swapped:
///
///   <%p: zeros, with memref.copy %dy into subview %p[0, 0, lo0, lo1]
///        [N, F, OH, OW] [1, 1, s0, s1]>
///   linalg.generic {%w[f, c, u, v] -> %flipped[c, f, KH-1-u, KW-1-v]}
///   conv(%p, %flipped, %dx) {strides 1, dilations d}
///
/// becomes the kernel's input gradient on %dy and %w themselves (a GEMM
/// and col2im per image: act::rt::conv2dBackwardData), for the forward
/// convolution of strides s, dilations d and padding d (K - 1) - lo: no
/// dilated copy (whose zeros a strided convolution's gradient computed
/// over: 4x the work at stride 2) and no flipped weight.
LogicalResult convBackwardDataOnSpreadCopy(IRRewriter &rewriter,
                                           StringRef prefix,
                                           linalg::Conv2DNchwFchwOp op,
                                           int64_t minMacs) {
  if (!isCandidate(op, minMacs) ||
      llvm::any_of(op.getStrides().getValues<int64_t>(),
                   [](int64_t s) { return s != 1; }))
    return failure();
  FailureOr<ZeroFilledRegion> copy = matchZeroFilledRegion(
      op.getInputs()[0], op, nullptr, /*allowInPlace=*/true);
  if (failed(copy) || copy->offsets[0] != 0 || copy->offsets[1] != 0 ||
      copy->strides[0] != 1 || copy->strides[1] != 1)
    return failure();
  // The filter: a buffer the flip writes and only convolutions read (one
  // per loop over the batch when act-chunk-in-passes computed the input
  // gradient chunk by chunk, the flip before the loops).
  Value filter = op.getInputs()[1];
  auto filterAlloc = filter.getDefiningOp<memref::AllocOp>();
  if (!filterAlloc)
    return failure();
  linalg::GenericOp flip;
  SmallVector<Operation *> filterFrees;
  for (OpOperand &use : filter.getUses()) {
    Operation *user = use.getOwner();
    if (isa<memref::DeallocOp>(user))
      filterFrees.push_back(user);
    else if (auto generic = dyn_cast<linalg::GenericOp>(user);
             generic && !flip && generic.getNumDpsInputs() == 1 &&
             generic.getNumDpsInits() == 1 &&
             generic.getDpsInits()[0] == filter)
      flip = generic;
    else if (!isa<linalg::Conv2DNchwFchwOp>(user) ||
             use.getOperandNumber() != 1)
      return failure();
  }
  // The flip comes first, in the convolution's block or one around it.
  Operation *at = flip ? flip->getBlock()->findAncestorOpInBlock(*op) : nullptr;
  if (!at || !flip->isBeforeInBlock(at) || flip.getNumReductionLoops() != 0)
    return failure();
  auto yield = cast<linalg::YieldOp>(flip.getBody()->getTerminator());
  if (flip.getBody()->getOperations().size() != 1 ||
      yield.getOperand(0) != flip.getBody()->getArgument(0))
    return failure();
  auto filterType = cast<MemRefType>(filter.getType());
  int64_t kh = filterType.getDimSize(2), kw = filterType.getDimSize(3);
  AffineMap in = flip.getIndexingMapsArray()[0];
  if (!flip.getIndexingMapsArray()[1].isIdentity() || in.getNumResults() != 4 ||
      in.getResult(0) != getAffineDimExpr(1, op.getContext()) ||
      in.getResult(1) != getAffineDimExpr(0, op.getContext()) ||
      matchReversedDim(in.getResult(2)) != std::make_pair(2u, kh - 1) ||
      matchReversedDim(in.getResult(3)) != std::make_pair(3u, kw - 1))
    return failure();
  Value weight = flip.getDpsInputs()[0];
  SmallVector<int64_t> dilations(op.getDilations().getValues<int64_t>());
  int64_t pad0 = dilations[0] * (kh - 1) - copy->offsets[2];
  int64_t pad1 = dilations[1] * (kw - 1) - copy->offsets[3];
  if (pad0 < 0 || pad1 < 0)
    return failure();
  // On the GPU: cuDNN's backward data of the forward convolution from dx
  // into dy, whose padding is symmetric.
  if (prefix == kGpuPrefix &&
      !cudnnAccepts(spatialSizes(op.getOutputs()[0]), {kh, kw},
                    spatialSizes(copy->source),
                    {copy->strides[2], copy->strides[3]}, dilations,
                    {pad0, pad1}, /*oneGroup=*/false))
    return failure();
  // Both are read by the call, later than the IR did (the gradient
  // computed in place is read where it was).
  FailureOr<SmallVector<Operation *>> gradFrees =
      copy->copy ? getFreesIfUnwritten(copy->source, copy->copy, op)
                 : SmallVector<Operation *>();
  FailureOr<SmallVector<Operation *>> weightFrees =
      getFreesIfUnwritten(weight, flip, at);
  if (failed(gradFrees) || failed(weightFrees) ||
      (at != op && !weightFrees->empty()))
    return failure();
  rewriter.setInsertionPoint(op);
  func::CallOp call =
      replaceWithCall(rewriter, op, prefix, "conv_2d_nchw_fchw_backward_data",
                      {copy->source, weight, op.getOutputs()[0]},
                      {copy->strides[2], copy->strides[3], dilations[0],
                       dilations[1], pad0, pad1});
  for (Operation *free : llvm::concat<Operation *>(*gradFrees, *weightFrees))
    free->moveAfter(call);
  if (copy->copy)
    copy->erase(rewriter);
  else
    (void)copy->moveToOwnBuffer(rewriter);
  // The flipped weight goes with its last convolution.
  if (llvm::any_of(filter.getUsers(), [](Operation *user) {
        return isa<linalg::Conv2DNchwFchwOp>(user);
      }))
    return success();
  rewriter.eraseOp(flip);
  for (Operation *free : filterFrees)
    rewriter.eraseOp(free);
  rewriter.eraseOp(filterAlloc);
  return success();
}

struct ConvertLinalgToActKernelsPass
    : mlir::act::impl::ConvertLinalgToActKernelsPassBase<
          ConvertLinalgToActKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    StringRef prefix = gpu ? kGpuPrefix : kCpuPrefix;
    patterns.add<NamedOpToCall<linalg::MatmulOp>>(context, prefix, "matmul",
                                                  minMacs);
    patterns.add<NamedOpToCall<linalg::BatchMatmulOp>>(context, prefix,
                                                       "batch_matmul", minMacs);
    patterns.add<NamedOpToCall<linalg::Conv2DNchwFchwOp>>(
        context, prefix, "conv_2d_nchw_fchw", minMacs);
    patterns.add<NamedOpToCall<linalg::Conv2DNgchwGfchwOp>>(
        context, prefix, "conv_2d_ngchw_gfchw", minMacs);
    // On the GPU, copies stay generated kernels.
    if (!gpu)
      patterns.add<TransposeToCall, MoveToCall>(context, minMacs);
    // Convolutions on zero-padded copies first: they erase ops around them.
    SmallVector<linalg::LinalgOp> convs;
    getOperation().walk([&](Operation *op) {
      if (isa<linalg::Conv2DNchwFchwOp, linalg::Conv2DNgchwGfchwOp>(op))
        convs.push_back(cast<linalg::LinalgOp>(op));
    });
    IRRewriter rewriter(context);
    for (linalg::LinalgOp conv : convs) {
      auto nchw = dyn_cast<linalg::Conv2DNchwFchwOp>(conv.getOperation());
      if (nchw && succeeded(convBackwardDataOnSpreadCopy(rewriter, prefix, nchw,
                                                         minMacs)))
        continue;
      (void)convOnPaddedCopy(rewriter, conv, prefix,
                             isa<linalg::Conv2DNchwFchwOp>(conv)
                                 ? "conv_2d_nchw_fchw"
                                 : "conv_2d_ngchw_gfchw",
                             minMacs);
    }
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
