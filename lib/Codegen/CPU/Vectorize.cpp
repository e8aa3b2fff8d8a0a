//===- Vectorize.cpp - vector code for act's lowered kernels --------------===//

#include "act/Codegen/Passes.h"
#include "act/Conversion/ActToLinalg/ActLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <numeric>
#include <utility>

namespace mlir::act {
#define GEN_PASS_DEF_ACTVECTORIZEPASS
#define GEN_PASS_DEF_ACTBYTEI1VECTORSPASS
#define GEN_PASS_DEF_ACTUNITSTRIDEGATHERSPASS
#define GEN_PASS_DEF_ACTSTRIDEDCOPIESTOLOOPSPASS
#include "act/Codegen/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;

namespace {
/// Collects the ops of type OpT a rewrite creates: the vectorizer's
/// vector.multi_reduction ops, so that each vectorization lowers its own
/// without a walk of the whole function (which made the pass quadratic in
/// the kernels of a step: 4 s of resnet18's 14 s pipeline), and the
/// vector.reduction ops their lowering creates.
template <typename OpT> struct CreatedOps : RewriterBase::Listener {
  SmallVector<OpT> created;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (auto typed = dyn_cast<OpT>(op))
      created.push_back(typed);
  }
  SmallVector<OpT> take() { return std::exchange(created, {}); }
};
using MultiReductionCollector = CreatedOps<vector::MultiDimReductionOp>;

struct ActVectorizePass : act::impl::ActVectorizePassBase<ActVectorizePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> marked;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(act::kVectorizeAttr))
        marked.push_back(op);
    });
    MultiReductionCollector collector;
    IRRewriter rewriter(&getContext(), &collector);
    for (linalg::LinalgOp op : marked) {
      op->removeAttr(act::kVectorizeAttr);
      if (op.hasDynamicShape() || failed(linalg::vectorizeOpPrecondition(op)))
        continue;
      // A kernel's sums and products keep their order unless each of its
      // float additions and multiplications allows reassociation.
      bool reassociate = false, ordered = false;
      op->walk([&](Operation *inner) {
        if (!isa<arith::AddFOp, arith::MulFOp>(inner))
          return;
        auto flags =
            cast<arith::ArithFastMathInterface>(inner).getFastMathFlagsAttr();
        bool free =
            flags && arith::bitEnumContainsAll(flags.getValue(),
                                               arith::FastMathFlags::reassoc);
        (free ? reassociate : ordered) = true;
      });
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::VectorizationResult> result =
          linalg::vectorize(rewriter, op);
      if (failed(result)) {
        op->emitError("act-vectorize: a kernel that meets the vectorizer's "
                      "preconditions failed to vectorize");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, result->replacements);
      // The kernel's reductions (a group's min and max) as one reduction
      // per group, without NaN semantics: act's statistics are undefined
      // for a group holding a NaN (docs/Encodings.md), and LLVM expands a
      // NaN-aware reduce.fmin into a scalar chain instead of a shuffle tree.
      if (failed(lowerReductions(collector.take(), reassociate && !ordered)))
        return signalPassFailure();
    }

    if (width > 0 && failed(vectorizeGenerics(rewriter, collector)))
      return signalPassFailure();
    foldLaneAffineGathers(rewriter);
  }

  /// Gathers whose lane indices are affine in the lane (a vectorized tile's
  /// reads through tensor.extract at computed positions: a per-element
  /// decode's payload words and group rows) become a contiguous read (lane
  /// j at u + j) or one element broadcast (all lanes at u); index vectors
  /// that are the same in every lane and are cast for other uses become a
  /// broadcast of the scalar. A gather of 16 lanes costs tens of cycles;
  /// the decoded tile's words are 16 consecutive ones.
  void foldLaneAffineGathers(IRRewriter &rewriter) {
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (isa<vector::GatherOp, arith::IndexCastOp, arith::IndexCastUIOp>(op))
        candidates.push_back(op);
    });
    for (Operation *op : candidates) {
      LaneAffine analysis;
      if (auto gather = dyn_cast<vector::GatherOp>(op)) {
        auto type = gather.getVectorType();
        if (!isa<RankedTensorType>(gather.getBase().getType()) ||
            gather.getOffsets().size() != 1 || !isLaneVector(type) ||
            !matchPattern(gather.getMask(), m_One()))
          continue;
        int64_t lanes = type.getShape().back();
        rewriter.setInsertionPoint(gather);
        std::optional<LaneAffine::Form> form =
            analysis.get(rewriter, gather.getIndices(), lanes);
        if (!form || (form->step != 0 && form->step != 1))
          continue;
        Location loc = gather.getLoc();
        Value at = arith::AddIOp::create(rewriter, loc, gather.getOffsets()[0],
                                         form->base);
        Value folded;
        if (form->step == 0) {
          folded = vector::BroadcastOp::create(
              rewriter, loc, type,
              tensor::ExtractOp::create(rewriter, loc, gather.getBase(), at));
        } else {
          auto flat = VectorType::get({lanes}, type.getElementType());
          // (In bounds: the gather read each of these elements.)
          Value read = vector::TransferReadOp::create(
              rewriter, loc, flat, gather.getBase(), ValueRange{at},
              /*padding=*/std::nullopt, ArrayRef<bool>{true});
          folded = vector::ShapeCastOp::create(rewriter, loc, type, read);
        }
        rewriter.replaceOp(gather, folded);
        continue;
      }
      // A cast of an index vector equal in all lanes.
      Value in = op->getOperand(0);
      auto type = dyn_cast<VectorType>(op->getResult(0).getType());
      if (!type || !isLaneVector(type))
        continue;
      rewriter.setInsertionPoint(op);
      std::optional<LaneAffine::Form> form =
          analysis.get(rewriter, in, type.getShape().back());
      if (!form || form->step != 0)
        continue;
      Operation *scalar = rewriter.clone(*op);
      scalar->getOpOperand(0).set(form->base);
      scalar->getResult(0).setType(type.getElementType());
      rewriter.replaceOp(op, vector::BroadcastOp::create(rewriter, op->getLoc(),
                                                         type,
                                                         scalar->getResult(0)));
    }
  }

  /// Vectors whose lanes vary along the last dimension only (all others 1).
  static bool isLaneVector(VectorType type) {
    return type.getRank() >= 1 && !type.isScalable() &&
           llvm::all_of(type.getShape().drop_back(),
                        [](int64_t d) { return d == 1; });
  }

  /// Index vectors of lane vectors as base + step * lane (base a scalar
  /// index, step a constant), with a known divisor of the base, built as
  /// scalar arithmetic at the rewriter's insertion point. Division and
  /// remainder by a constant k stay affine when no lane crosses a multiple
  /// of k: step * (lanes - 1) < std::gcd(divisor, k).
  struct LaneAffine {
    struct Form {
      Value base;
      int64_t step;
      int64_t divisor; // of base (0: base is 0; std::gcd(0, k) = k)
    };
    llvm::DenseMap<Value, std::optional<Form>> known;

    std::optional<Form> get(IRRewriter &b, Value v, int64_t lanes) {
      auto it = known.find(v);
      if (it != known.end())
        return it->second;
      std::optional<Form> form = compute(b, v, lanes);
      known[v] = form;
      return form;
    }

    /// A divisor of scalar index `v`: constants, multiples, loop counters
    /// starting at a multiple of their constant step.
    static int64_t divisorOf(Value v) {
      APInt c;
      if (matchPattern(v, m_ConstantInt(&c)))
        return std::abs(c.getSExtValue());
      if (auto mul = v.getDefiningOp<arith::MulIOp>())
        return divisorOf(mul.getLhs()) * divisorOf(mul.getRhs());
      if (auto add = v.getDefiningOp<arith::AddIOp>())
        return std::gcd(divisorOf(add.getLhs()), divisorOf(add.getRhs()));
      if (auto arg = dyn_cast<BlockArgument>(v))
        if (auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()))
          if (arg == loop.getInductionVar()) {
            APInt lb, step;
            if (matchPattern(loop.getLowerBound(), m_ConstantInt(&lb)) &&
                matchPattern(loop.getStep(), m_ConstantInt(&step)))
              return std::gcd(std::abs(lb.getSExtValue()),
                              std::abs(step.getSExtValue()));
          }
      return 1;
    }

    std::optional<Form> compute(IRRewriter &b, Value v, int64_t lanes) {
      // (A form with a step belongs to a lane vector: only broadcasts that
      // keep the lanes last make one.)
      auto type = dyn_cast<VectorType>(v.getType());
      if (!type || !type.getElementType().isIndex())
        return std::nullopt;
      Location loc = v.getLoc();
      auto index = [&](int64_t c) -> Value {
        return arith::ConstantIndexOp::create(b, loc, c);
      };
      Operation *def = v.getDefiningOp();
      if (!def)
        return std::nullopt;

      // The lanes of a 1-lane vector are all its element.
      if (auto step = dyn_cast<vector::StepOp>(def))
        return Form{index(0), type.getShape().back() == 1 ? 0 : 1, 0};
      if (auto splat = dyn_cast<arith::ConstantOp>(def)) {
        auto dense = dyn_cast<SplatElementsAttr>(splat.getValue());
        if (!dense)
          return std::nullopt;
        // (Positions are non-negative: a negative constant would make the
        // unsigned division's no-crossing argument wrap.)
        int64_t c = dense.getSplatValue<APInt>().getSExtValue();
        if (c < 0)
          return std::nullopt;
        return Form{index(c), 0, c};
      }
      if (auto broadcast = dyn_cast<vector::BroadcastOp>(def)) {
        Value source = broadcast.getSource();
        if (source.getType().isIndex())
          return Form{source, 0, divisorOf(source)};
        auto sourceType = dyn_cast<VectorType>(source.getType());
        // A 1-lane vector broadcast everywhere, or lanes kept in place.
        if (!sourceType)
          return std::nullopt;
        std::optional<Form> f = get(b, source, lanes);
        if (!f)
          return std::nullopt;
        if (sourceType.getNumElements() == 1)
          return Form{f->base, 0, f->divisor};
        if (f->step == 0 ||
            (isLaneVector(type) && isLaneVector(sourceType) &&
             sourceType.getShape().back() == type.getShape().back()))
          return f;
        return std::nullopt;
      }
      if (auto transpose = dyn_cast<vector::TransposeOp>(def)) {
        std::optional<Form> f = get(b, transpose.getVector(), lanes);
        // Only forms equal in all lanes survive a transpose unchanged.
        if (f && f->step == 0)
          return f;
        return std::nullopt;
      }
      if (isa<arith::AddIOp, arith::MulIOp, arith::DivUIOp, arith::RemUIOp>(
              def)) {
        std::optional<Form> x = get(b, def->getOperand(0), lanes);
        std::optional<Form> y = get(b, def->getOperand(1), lanes);
        if (!x || !y)
          return std::nullopt;
        if (isa<arith::AddIOp>(def))
          return Form{b.createOrFold<arith::AddIOp>(loc, x->base, y->base),
                      x->step + y->step, std::gcd(x->divisor, y->divisor)};
        APInt k;
        if (isa<arith::MulIOp>(def)) {
          if (y->step != 0)
            std::swap(x, y);
          if (y->step != 0)
            return std::nullopt;
          int64_t factor = 0;
          if (matchPattern(y->base, m_ConstantInt(&k)))
            factor = k.getSExtValue();
          else if (x->step != 0)
            return std::nullopt;
          return Form{b.createOrFold<arith::MulIOp>(loc, x->base, y->base),
                      x->step * factor,
                      x->divisor * std::max<int64_t>(1, y->divisor)};
        }
        // Division and remainder by a positive constant.
        if (y->step != 0 || !matchPattern(y->base, m_ConstantInt(&k)) ||
            k.getSExtValue() <= 0)
          return std::nullopt;
        int64_t c = k.getSExtValue();
        if (x->step < 0 || x->step * (lanes - 1) >= std::gcd(x->divisor, c))
          return std::nullopt;
        if (isa<arith::DivUIOp>(def))
          return Form{b.createOrFold<arith::DivUIOp>(loc, x->base, y->base), 0,
                      x->divisor % c == 0 ? x->divisor / c : 1};
        return Form{b.createOrFold<arith::RemUIOp>(loc, x->base, y->base),
                    x->step, std::gcd(x->divisor, c)};
      }
      return std::nullopt;
    }
  };

  /// The tile along the innermost loop by which `op` is vectorized: the
  /// largest of width, width / 2, ... 4 dividing the loop's size; 0 if op is
  /// not a candidate. Candidates are generics on tensors with a static
  /// innermost loop (outer loops may be dynamic: a step for every batch
  /// size; they are tiled by 1) whose indexing maps are projected
  /// permutations (broadcasts allowed) with the innermost loop, where an
  /// operand reads it, as that operand's innermost dimension: every vector
  /// access is contiguous.
  int64_t getInnerTile(linalg::GenericOp op) const {
    if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 ||
        op->hasAttr(act::kVectorizeAttr) ||
        ShapedType::isDynamic(op.getStaticLoopRanges().back()))
      return 0;
    for (Type type : op->getOperandTypes()) {
      if (!getElementTypeOrSelf(type).isIntOrIndexOrFloat())
        return 0;
    }
    // Extended multiplies (the exporter's Philox for dropout) lower to LLVM
    // on 1-D vectors only: an n-D tile would not convert.
    if (op.getNumLoops() > 1 &&
        op.getBody()
            ->walk([](Operation *inner) {
              return isa<arith::MulUIExtendedOp, arith::MulSIExtendedOp>(inner)
                         ? WalkResult::interrupt()
                         : WalkResult::advance();
            })
            .wasInterrupted())
      return 0;
    unsigned last = op.getNumLoops() - 1;
    for (AffineMap map : op.getIndexingMapsArray()) {
      if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
        return 0;
      for (unsigned r = 0; r + 1 < map.getNumResults(); ++r)
        if (map.getResult(r) == getAffineDimExpr(last, op.getContext()))
          return 0;
    }
    int64_t size = op.getStaticLoopRanges()[last];
    for (int64_t tile = width; tile >= 4; tile /= 2)
      if (size % tile == 0)
        return tile;
    return 0;
  }

  /// Tiles each candidate generic (getInnerTile) to 1 x ... x 1 x tile and
  /// vectorizes the tile with upstream linalg::vectorize.
  LogicalResult vectorizeGenerics(IRRewriter &rewriter,
                                  MultiReductionCollector &collector) {
    SmallVector<std::pair<linalg::GenericOp, int64_t>> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      // (Without linalg's TilingInterface models registered, nothing is
      // tiled.)
      if (!isa<TilingInterface>(op.getOperation()))
        return;
      // (The vectorizer's precondition is checked on the tile of an op
      // with dynamic loops: the tile is static.)
      if (int64_t tile = getInnerTile(op))
        if (op.hasDynamicShape() ||
            succeeded(linalg::vectorizeOpPrecondition(op)))
          candidates.push_back({op, tile});
    });
    for (auto [op, tile] : candidates) {
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      SmallVector<OpFoldResult> sizes;
      for (int64_t range : ranges)
        sizes.push_back(rewriter.getIndexAttr(range == 1 ? 0 : 1));
      sizes.back() = rewriter.getIndexAttr(tile == ranges.back() ? 0 : tile);
      scf::SCFTilingOptions options;
      options.setTileSizes(sizes);
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        return op.emitError("act-vectorize: tiling a generic failed");
      rewriter.replaceOp(op, tiled->replacements);
      auto tiledOp = cast<linalg::LinalgOp>(tiled->tiledOps.back());
      if (tiledOp.hasDynamicShape() ||
          failed(linalg::vectorizeOpPrecondition(tiledOp)))
        continue; // (only for ops with dynamic loops: the tile stays scalar)
      rewriter.setInsertionPoint(tiledOp);
      FailureOr<linalg::VectorizationResult> result =
          linalg::vectorize(rewriter, tiledOp);
      if (failed(result))
        return tiledOp->emitError(
            "act-vectorize: a tile that meets the vectorizer's "
            "preconditions failed to vectorize");
      rewriter.replaceOp(tiledOp, result->replacements);
    }
    // Sums of a tile in any order (float32 reassociation, as any threaded
    // or vectorized reduction).
    return lowerReductions(collector.take(), /*reassociate=*/true);
  }

  /// Lowers `reductions` (vector.multi_reduction ops the vectorizer just
  /// created) to one vector.reduction per row (min/max without NaN
  /// semantics; sums and products reassociable when `reassociate`).
  LogicalResult
  lowerReductions(ArrayRef<vector::MultiDimReductionOp> multiReductions,
                  bool reassociate) {
    if (multiReductions.empty())
      return success();
    // A reduction over unit dims only (the 1 x tile of a sum over an outer
    // loop: a bias gradient, a BatchNorm statistic) is the accumulator
    // combined with the tile, element by element; the inner-reduction
    // lowering would make one reduction of a single element per lane.
    SmallVector<Operation *> reductions;
    IRRewriter rewriter(&getContext());
    for (vector::MultiDimReductionOp op : multiReductions) {
      ArrayRef<int64_t> shape = op.getSourceVectorType().getShape();
      if (isa<vector::MaskingOpInterface>(op->getParentOp()) ||
          !llvm::all_of(op.getReductionDims(),
                        [&](int64_t d) { return shape[d] == 1; })) {
        reductions.push_back(op);
        continue;
      }
      rewriter.setInsertionPoint(op);
      Location loc = op.getLoc();
      Value tile = op.getSource();
      if (auto type = dyn_cast<VectorType>(op.getType()))
        tile = vector::ShapeCastOp::create(rewriter, loc, type, tile);
      else
        tile = vector::ExtractOp::create(rewriter, loc, tile,
                                         SmallVector<int64_t>(shape.size(), 0));
      rewriter.replaceOp(op,
                         vector::makeArithReduction(rewriter, loc, op.getKind(),
                                                    tile, op.getAcc()));
    }
    if (reductions.empty())
      return success();
    RewritePatternSet patterns(&getContext());
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerReduction);
    CreatedOps<vector::ReductionOp> collector;
    GreedyRewriteConfig config;
    config.setListener(&collector);
    if (failed(
            applyOpPatternsGreedily(reductions, std::move(patterns), config)))
      return failure();
    for (vector::ReductionOp reduction : collector.created) {
      vector::CombiningKind kind = reduction.getKind();
      if (kind == vector::CombiningKind::MINNUMF ||
          kind == vector::CombiningKind::MAXNUMF)
        reduction.setFastmath(arith::FastMathFlags::nnan);
      else if (reassociate && (kind == vector::CombiningKind::ADD ||
                               kind == vector::CombiningKind::MUL))
        reduction.setFastmath(arith::FastMathFlags::reassoc);
    }
    return success();
  }
};
} // namespace

namespace {
/// The i1 vector type of `type` with i8 elements, or null.
VectorType byteVectorOf(Type type) {
  auto vector = dyn_cast<VectorType>(type);
  if (!vector || !vector.getElementType().isInteger(1))
    return {};
  return vector.clone(IntegerType::get(type.getContext(), 8));
}

struct ActByteI1VectorsPass
    : act::impl::ActByteI1VectorsPassBase<ActByteI1VectorsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    WalkResult walk = getOperation().walk([&](Operation *op) {
      if (isa<LLVM::LoadOp, LLVM::StoreOp>(op)) {
        ops.push_back(op);
        return WalkResult::advance();
      }
      // The data of a masked access: the result of a load, operand 0 of a
      // store (the mask is an i1 vector in any case).
      Type data;
      if (isa<LLVM::MaskedLoadOp, LLVM::masked_expandload>(op))
        data = op->getResult(0).getType();
      else if (isa<LLVM::MaskedStoreOp, LLVM::masked_compressstore>(op))
        data = op->getOperand(0).getType();
      if (data && byteVectorOf(data)) {
        op->emitError("act-byte-i1-vectors: a masked load or store of i1 "
                      "elements would read or write packed bits of a "
                      "byte-per-element buffer");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    OpBuilder b(&getContext());
    for (Operation *op : ops) {
      b.setInsertionPoint(op);
      if (auto store = dyn_cast<LLVM::StoreOp>(op)) {
        VectorType bytes = byteVectorOf(store.getValue().getType());
        if (!bytes)
          continue;
        Value wide =
            LLVM::ZExtOp::create(b, store.getLoc(), bytes, store.getValue());
        store.getValueMutable().assign(wide);
        continue;
      }
      auto load = cast<LLVM::LoadOp>(op);
      VectorType bytes = byteVectorOf(load.getResult().getType());
      if (!bytes)
        continue;
      b.setInsertionPointAfter(load);
      Type bits = load.getResult().getType();
      load.getResult().setType(bytes);
      auto narrow = LLVM::TruncOp::create(b, load.getLoc(), bits, load);
      load.getResult().replaceAllUsesExcept(narrow, narrow);
    }
  }
};
} // namespace

namespace {
/// vector.gather from a memref whose last stride is not 1: the same
/// elements gathered from its storage as a 1-D unit-stride view that starts
/// at the gather's row, the index vector scaled by that stride.
struct UnitStrideGather : OpRewritePattern<vector::GatherOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::GatherOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<MemRefType>(op.getBase().getType());
    if (!type || type.getRank() == 0)
      return rewriter.notifyMatchFailure(op, "not a ranked memref");
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)))
      return rewriter.notifyMatchFailure(op, "no strided layout");
    if (strides.back() == 1)
      return rewriter.notifyMatchFailure(op, "already unit-stride");
    Location loc = op.getLoc();
    auto meta =
        memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getBase());
    // The linear position of base[offsets] in the storage.
    Value start = meta.getOffset();
    for (auto [at, stride] : llvm::zip(op.getOffsets(), meta.getStrides()))
      start = arith::AddIOp::create(
          rewriter, loc, start,
          arith::MulIOp::create(rewriter, loc, at, stride));
    Value last = meta.getStrides().back();
    // The view covers the gathered row: (size - 1) * stride + 1 elements.
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value size = arith::AddIOp::create(
        rewriter, loc,
        arith::MulIOp::create(
            rewriter, loc,
            arith::SubIOp::create(rewriter, loc, meta.getSizes().back(), one),
            last),
        one);
    auto flatType = MemRefType::get(
        {ShapedType::kDynamic}, type.getElementType(),
        StridedLayoutAttr::get(getContext(), ShapedType::kDynamic, {1}),
        type.getMemorySpace());
    Value flat = memref::ReinterpretCastOp::create(
        rewriter, loc, flatType, meta.getBaseBuffer(), OpFoldResult(start),
        ArrayRef<OpFoldResult>{size},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
    VectorType indexType = op.getIndices().getType();
    Value scale = last;
    if (!indexType.getElementType().isIndex())
      scale = arith::IndexCastOp::create(rewriter, loc,
                                         indexType.getElementType(), last);
    Value scaled = arith::MulIOp::create(
        rewriter, loc, op.getIndices(),
        vector::BroadcastOp::create(rewriter, loc, indexType, scale));
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    rewriter.replaceOpWithNewOp<vector::GatherOp>(
        op, op.getType(), flat, ValueRange{zero}, scaled, op.getMask(),
        op.getPassThru(), op.getAlignmentAttr());
    return success();
  }
};

struct ActUnitStrideGathersPass
    : act::impl::ActUnitStrideGathersPassBase<ActUnitStrideGathersPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<UnitStrideGather>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

namespace {
struct ActStridedCopiesToLoopsPass
    : act::impl::ActStridedCopiesToLoopsPassBase<ActStridedCopiesToLoopsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      auto source = dyn_cast<MemRefType>(copy.getSource().getType());
      auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
      if (!source || !target)
        return;
      if (all || (!(source.getLayout().isIdentity() &&
                    target.getLayout().isIdentity()) &&
                  !(memref::isStaticShapeAndContiguousRowMajor(source) &&
                    memref::isStaticShapeAndContiguousRowMajor(target))))
        copies.push_back(copy);
    });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }
  }
};
} // namespace
