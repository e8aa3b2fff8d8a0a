//===- ActToLinalg.cpp - lower act ops to linalg on tensors ---------------===//
//
// A 1:N dialect conversion: each encoded value becomes the tensors of its
// explicit storage; each encoding builds its encode/decode IR through its
// EncodingLoweringAttrInterface model (Encoding<Name>.cpp).
//
//===----------------------------------------------------------------------===//

#include "act/Conversion/ActToLinalg/ActLowering.h"
#include "act/Conversion/ActToLinalg/EncodingLoweringImpl.h"
#include "act/Conversion/Passes.h"
#include "act/Dialect/Act/IR/Act.h"
#include "act/Support/CpuFeatures.h"
#include "act/Support/OptionLoc.h"
#include "act/Support/TransposedConvolution.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir::act {
#define GEN_PASS_DEF_CONVERTACTTOLINALGPASS
#include "act/Conversion/Passes.h.inc"
} // namespace mlir::act

using namespace mlir;
using namespace mlir::act;

namespace {

/// The lowering model of an encoded type's encoding (attached by
/// registerEncodingLoweringExternalModels, which getDependentDialects
/// guarantees).
EncodingLoweringAttrInterface getLowering(EncodedType type) {
  return cast<EncodingLoweringAttrInterface>(type.getEncoding());
}

/// The tensor holding the dynamic dimensions of an encoded tensor, if any.
std::optional<RankedTensorType> getDimsType(EncodedType type) {
  int64_t dynamic = type.getTensorType().getNumDynamicDims();
  if (dynamic == 0)
    return std::nullopt;
  return RankedTensorType::get({dynamic}, IndexType::get(type.getContext()));
}

/// The runtime function encodes report their storage to (Memory.h).
constexpr llvm::StringLiteral kRecordStorageFunction = "act_record_storage";

struct EncodeOpLowering : OpConversionPattern<EncodeOp> {
  EncodeOpLowering(const TypeConverter &converter, MLIRContext *context,
                   LoweringOptions options)
      : OpConversionPattern(converter, context), options(options) {}
  LoweringOptions options;
  /// The next encode's slot for act_record_storage.
  std::shared_ptr<int64_t> nextSlot = std::make_shared<int64_t>(0);

  LogicalResult
  matchAndRewrite(EncodeOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<EncodedType>(op.getType());
    Location loc = op.getLoc();
    Value input = adaptor.getInput().front();
    Value seed =
        adaptor.getSeed().empty() ? Value() : adaptor.getSeed().front();
    Value bits =
        adaptor.getBits().empty() ? Value() : adaptor.getBits().front();
    SmallVector<Value> storage = getLowering(type).buildEncode(
        rewriter, loc, input, seed, bits, op.getId(), options);
    if (getDimsType(type)) {
      SmallVector<Value> dims;
      for (auto [i, d] : llvm::enumerate(type.getTensorType().getShape()))
        if (ShapedType::isDynamic(d))
          dims.push_back(tensor::DimOp::create(rewriter, loc, input, i));
      storage.push_back(tensor::FromElementsOp::create(rewriter, loc, dims));
    }
    if (options.recordStorage) {
      // The storage's bytes as the run produced them.
      Value bytes = arith::ConstantIndexOp::create(rewriter, loc, 0);
      for (Value part : storage) {
        auto partType = cast<RankedTensorType>(part.getType());
        Value count = arith::ConstantIndexOp::create(rewriter, loc, 1);
        for (int64_t d = 0; d < partType.getRank(); ++d)
          count = rewriter.createOrFold<arith::MulIOp>(
              loc, count, rewriter.createOrFold<tensor::DimOp>(loc, part, d));
        int64_t width =
            std::max<int64_t>(1, partType.getElementTypeBitWidth() / 8);
        if (partType.getElementType().isIndex())
          width = 8;
        bytes = rewriter.createOrFold<arith::AddIOp>(
            loc, bytes,
            rewriter.createOrFold<arith::MulIOp>(
                loc, count,
                arith::ConstantIndexOp::create(rewriter, loc, width)));
      }
      Type i64 = rewriter.getI64Type();
      // A value may be stored twice (its sign mask and itself): each
      // encode reports as its own slot.
      func::CallOp::create(
          rewriter, loc, kRecordStorageFunction, TypeRange{},
          ValueRange{
              arith::ConstantIntOp::create(rewriter, loc, i64, op.getId()),
              arith::ConstantIntOp::create(rewriter, loc, i64, (*nextSlot)++),
              arith::IndexCastOp::create(rewriter, loc, i64, bytes)});
    }
    rewriter.replaceOpWithMultiple(op, {storage});
    return success();
  }
};

/// act.recomputed is the backward's recomputed tensor; its token (an
/// #act.recompute value) has no storage.
struct RecomputedOpLowering : OpConversionPattern<RecomputedOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RecomputedOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getValue().front());
    return success();
  }
};

/// act.fake_quant: two generics (buildFakeQuant).
struct FakeQuantOpLowering : OpConversionPattern<FakeQuantOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(FakeQuantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<RandomKey> random;
    if (op.getSeed())
      random = RandomKey{adaptor.getSeed(), int64_t(*op.getId())};
    rewriter.replaceOp(op,
                       buildFakeQuant(rewriter, op.getLoc(), adaptor.getInput(),
                                      adaptor.getBits(), random));
    return success();
  }
};

/// Whether `use` is an input of a generic on tensors (in the same block)
/// into which linalg's elementwise fusion can fuse a per-element decode:
/// read through any map of its loops (a max pool's backward reads its
/// indices at (n, c, h floordiv 2 - kh, w floordiv 2 - kw)); a reduction
/// when its other operands still give every loop its size (the decode has
/// no input), as linalg::areElementwiseOpsFusable requires.
bool isElementwiseReader(OpOperand &use, Block *block) {
  auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!generic || generic->getBlock() != block ||
      !generic.hasPureTensorSemantics() || !generic.isDpsInput(&use))
    return false;
  AffineMap map = generic.getMatchingIndexingMap(&use);
  auto type = cast<RankedTensorType>(use.get().getType());
  if (map.getNumResults() != type.getRank())
    return false;
  // Through another map, an element may be read (and decoded) many times:
  // at most kMaxDecodesPerElement on average (a 2x2 max pool's backward
  // reads each index 4 times; a convolution written as a generic, 9 or
  // more: it keeps one decoded tensor).
  constexpr int64_t kMaxDecodesPerElement = 4;
  if (!map.isPermutation()) {
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    if (!type.hasStaticShape() || ShapedType::isDynamicShape(ranges))
      return false;
    int64_t iterations = 1;
    for (int64_t range : ranges)
      iterations *= range;
    if (iterations > kMaxDecodesPerElement * type.getNumElements())
      return false;
  }
  if (generic.getNumReductionLoops() == 0)
    return true;
  llvm::SmallBitVector sized(generic.getNumLoops());
  for (OpOperand &operand : generic->getOpOperands())
    if (operand.get() != use.get())
      for (AffineExpr e : generic.getMatchingIndexingMap(&operand).getResults())
        if (auto dim = dyn_cast<AffineDimExpr>(e))
          sized.set(dim.getPosition());
  return sized.all();
}

/// Whether `use` is the input of a weight gradient's convolution, read
/// through a transpose of batch and channels (and a zero padding):
/// act-tile-decoded-convolutions decodes it a chunk of the batch at a time
/// when the decode is per element.
bool isDecodedConvolutionInput(OpOperand &use, Block *block) {
  return use.getOwner()->getBlock() == block &&
         getTransposedConvolutionInput(use).has_value();
}

/// Whether `use` is an operand of a batch matmul, directly or through a
/// transpose that keeps the batch first: act-chunk-batch computes it one
/// chunk of the batch at a time, and its per-element decode with it.
bool isDecodedBatchMatmulInput(OpOperand &use, Block *block) {
  Operation *owner = use.getOwner();
  if (owner->getBlock() != block)
    return false;
  if (isa<linalg::BatchMatmulOp>(owner))
    return cast<linalg::BatchMatmulOp>(owner).isDpsInput(&use);
  auto transpose = dyn_cast<linalg::TransposeOp>(owner);
  if (!transpose || transpose.getPermutation().empty() ||
      transpose.getPermutation()[0] != 0 ||
      &use != transpose.getDpsInputOperand(0))
    return false;
  return llvm::all_of(transpose->getResult(0).getUses(), [](OpOperand &read) {
    auto matmul = dyn_cast<linalg::BatchMatmulOp>(read.getOwner());
    return matmul && matmul.isDpsInput(&read);
  });
}

struct DecodeOpLowering : OpConversionPattern<DecodeOp> {
  DecodeOpLowering(const TypeConverter &converter, MLIRContext *context,
                   LoweringOptions options, bool intoConsumers)
      : OpConversionPattern(converter, context), options(options),
        intoConsumers(intoConsumers) {}
  LoweringOptions options;
  bool intoConsumers;

  LogicalResult
  matchAndRewrite(DecodeOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<EncodedType>(op.getInput().getType());
    EncodingLoweringAttrInterface lowering = getLowering(type);
    Location loc = op.getLoc();
    ValueRange storage = adaptor.getInput();
    SmallVector<Value> dynamicSizes;
    if (std::optional<RankedTensorType> dimsType = getDimsType(type)) {
      Value dims = storage.back();
      storage = storage.drop_back();
      for (int64_t i = 0; i < dimsType->getDimSize(0); ++i)
        dynamicSizes.push_back(tensor::ExtractOp::create(
            rewriter, loc, dims,
            ValueRange{arith::ConstantIndexOp::create(rewriter, loc, i)}));
    }

    // Each elementwise reader decodes for itself, per element, just before
    // it (act-fuse-elementwise then fuses the two): the full decoded tensor
    // exists only for the other readers, and dies with the last of them.
    LoweringOptions perElement = options;
    perElement.perElementDecode = true;
    if (intoConsumers && lowering.decodesPerElement(op.getType(), perElement)) {
      // Contractions decode a chunk of the batch at a time; a lossless
      // encoding stays whole for them, so that its steps sum as the
      // unencoded step does.
      bool chunked = !cast<EncodingAttrInterface>(type.getEncoding())
                          .isLossless(type.getTensorType().getElementType());
      SmallVector<OpOperand *> readers;
      for (OpOperand &use : op->getUses())
        if (isElementwiseReader(use, op->getBlock()) ||
            (chunked && (isDecodedConvolutionInput(use, op->getBlock()) ||
                         isDecodedBatchMatmulInput(use, op->getBlock()))))
          readers.push_back(&use);
      for (OpOperand *use : readers) {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPoint(use->getOwner());
        Value decoded = lowering.buildDecode(rewriter, loc, storage,
                                             op.getType(), {}, perElement);
        rewriter.modifyOpInPlace(use->getOwner(), [&] { use->set(decoded); });
      }
      if (op->use_empty()) {
        rewriter.eraseOp(op);
        return success();
      }
    }
    Value decoded = lowering.buildDecode(rewriter, loc, storage, op.getType(),
                                         dynamicSizes, options);
    rewriter.replaceOp(op, decoded);
    return success();
  }
};

/// target=gpu-emulated: a kernel's launch as loops over its blocks and
/// threads (in order) in a private function of its own, called where the
/// launch was (as a GPU launches its outlined kernel). The kernels never
/// read what another thread writes, so any order computes the GPU's
/// results. Inlined into the step instead, a step of twenty 1-bit encodes
/// took 162 s to compile: one-shot bufferization and empty-tensor
/// elimination grow with the ops of the function around the tensor ops
/// they analyse, and the kernels' unrolled threads are thousands of ops.
void launchToLoops(gpu::LaunchOp launch, SymbolTable &symbols) {
  Location loc = launch.getLoc();
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  // The kernel's arguments: the loops' bounds and what its body uses from
  // above (buffers, sizes, seeds), constants excepted (cloned inside: a
  // bound of 1 stays a loop the canonicalizer removes).
  SmallVector<Value> bounds = {grid.x,  grid.y,  grid.z,
                               block.x, block.y, block.z};
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(launch.getBody(), above);
  above.insert(bounds.begin(), bounds.end());
  SmallVector<Value> captured, constants;
  for (Value v : above)
    (matchPattern(v, m_Constant()) ? constants : captured).push_back(v);
  SmallVector<Value> operands(captured);

  auto parent = launch->getParentOfType<func::FuncOp>();
  OpBuilder mb(parent);
  auto kernel = func::FuncOp::create(
      mb, loc, (parent.getSymName() + "_emulated_kernel").str(),
      mb.getFunctionType(ValueRange(operands).getTypes(), {}));
  kernel.setPrivate();
  symbols.insert(kernel); // uniqued: _emulated_kernel_0, _1, ...
  Block *entry = kernel.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  IRMapping map;
  for (Value c : constants)
    map.map(c, b.clone(*c.getDefiningOp())->getResult(0));
  for (auto [v, arg] : llvm::zip(captured, entry->getArguments()))
    map.map(v, arg);
  SmallVector<Value> boundArgs;
  for (Value bound : bounds)
    boundArgs.push_back(map.lookup(bound));
  map.map(launch.getGridSize().x, boundArgs[0]);
  map.map(launch.getGridSize().y, boundArgs[1]);
  map.map(launch.getGridSize().z, boundArgs[2]);
  map.map(launch.getBlockSize().x, boundArgs[3]);
  map.map(launch.getBlockSize().y, boundArgs[4]);
  map.map(launch.getBlockSize().z, boundArgs[5]);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  OpBuilder inner = b;
  SmallVector<Value> ids;
  for (Value bound : boundArgs) {
    auto loop = scf::ForOp::create(inner, loc, zero, bound, one);
    inner.setInsertionPoint(loop.getBody()->getTerminator());
    ids.push_back(loop.getInductionVar());
  }
  map.map(launch.getBlockIds().x, ids[0]);
  map.map(launch.getBlockIds().y, ids[1]);
  map.map(launch.getBlockIds().z, ids[2]);
  map.map(launch.getThreadIds().x, ids[3]);
  map.map(launch.getThreadIds().y, ids[4]);
  map.map(launch.getThreadIds().z, ids[5]);
  for (Operation &op : launch.getBody().front().without_terminator())
    inner.clone(op, map);
  func::ReturnOp::create(b, loc);

  OpBuilder call(launch);
  func::CallOp::create(call, loc, kernel, operands);
  launch.erase();
}

struct ConvertActToLinalgPass
    : act::impl::ConvertActToLinalgPassBase<ConvertActToLinalgPass> {
  using ConvertActToLinalgPassBase::ConvertActToLinalgPassBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    ConvertActToLinalgPassBase::getDependentDialects(registry);
    // The encodings' lowering models, also when act is loaded as a plugin
    // into a host that registered the dialect only.
    registerEncodingLoweringExternalModels(registry);
  }

  LogicalResult initialize(MLIRContext *context) override {
    // A bad option is the command line's fault: said once, without the IR.
    if (gpuBlockSize <= 0 || gpuBlockSize % 32 != 0)
      return emitError(getOptionLoc(context, "convert-act-to-linalg",
                                    "gpu-block-size"))
             << "convert-act-to-linalg: gpu-block-size must be a positive "
                "multiple of 32, got "
             << static_cast<int64_t>(gpuBlockSize);
    auto features = getCpuFeatures(cpuFeatures);
    if (!features)
      return emitError(
                 getOptionLoc(context, "convert-act-to-linalg", "cpu-features"))
             << "convert-act-to-linalg: "
             << llvm::toString(features.takeError());
    cpuVectorCompress = hasCpuFeature(*features, "avx512f");
    cpuAvx2 = hasCpuFeature(*features, "avx2");
    return success();
  }
  bool cpuVectorCompress = true, cpuAvx2 = true;
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    TypeConverter converter;
    converter.addConversion([](Type type) { return type; });
    converter.addConversion(
        [](EncodedType type, SmallVectorImpl<Type> &results) {
          getLowering(type).getStorageTypes(type.getTensorType(), results);
          if (std::optional<RankedTensorType> dims = getDimsType(type))
            results.push_back(*dims);
          return success();
        });

    RewritePatternSet patterns(context);
    LoweringOptions options;
    options.target = target;
    options.gpuBlockSize = gpuBlockSize;
    options.recordStorage = recordStorage;
    options.cpuVectorCompress = cpuVectorCompress;
    options.cpuAvx2 = cpuAvx2;
    ModuleOp module = getOperation();
    if (recordStorage && !module.lookupSymbol(kRecordStorageFunction)) {
      // act_record_storage(id, bytes), defined by act's runtime.
      OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
      Type i64 = builder.getI64Type();
      auto decl =
          func::FuncOp::create(builder, module.getLoc(), kRecordStorageFunction,
                               builder.getFunctionType({i64, i64, i64}, {}));
      decl.setPrivate();
    }
    patterns.add<RecomputedOpLowering, FakeQuantOpLowering>(converter, context);
    patterns.add<EncodeOpLowering>(converter, context, options);
    patterns.add<DecodeOpLowering>(converter, context, options,
                                   decodeIntoConsumers &&
                                       options.target == LoweringTarget::CPU);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);

    ConversionTarget target(*context);
    target.addIllegalDialect<ActDialect>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    target.markUnknownOpDynamicallyLegal(
        [&](Operation *op) { return converter.isLegal(op); });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    if (options.target == LoweringTarget::GPUEmulated) {
      SmallVector<gpu::LaunchOp> launches;
      getOperation().walk([&](gpu::LaunchOp op) { launches.push_back(op); });
      SymbolTable symbols(getOperation());
      for (gpu::LaunchOp launch : launches)
        launchToLoops(launch, symbols);
      return;
    }
    if (options.target != LoweringTarget::GPU)
      return;
    // The kernels' group statistics: clustered subgroup reductions become
    // butterfly gpu.shuffles (32 lanes) here, before bufferization, whose
    // deallocation does not know the reductions' (absent) memory effects.
    RewritePatternSet shuffles(context);
    populateGpuLowerClusteredSubgroupReduceToShufflePatterns(
        shuffles, /*subgroupSize=*/32);
    if (failed(applyPatternsGreedily(getOperation(), std::move(shuffles))))
      signalPassFailure();
  }
};

} // namespace
