//===- ActAttrs.cpp - act encodings ----------------------------------------===//
//
// The encodings' parameters, their storage arithmetic and what they decode
// to. The storage layout is documented in docs/Encodings.md.
//
//===----------------------------------------------------------------------===//

#include "act/Dialect/Act/IR/Act.h"
#include "act/Dialect/Act/IR/ActLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::act;

#include "act/Dialect/Act/IR/ActEnums.cpp.inc"
#include "act/Dialect/Act/IR/ActInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "act/Dialect/Act/IR/ActAttrs.cpp.inc"

void ActDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "act/Dialect/Act/IR/ActAttrs.cpp.inc"
      >();
}

/// Value encodings (quant, float) hold floating-point tensors.
static LogicalResult
verifyFloatElements(StringRef encoding, RankedTensorType type,
                    function_ref<InFlightDiagnostic()> emitError) {
  if (isa<FloatType>(type.getElementType()))
    return success();
  return emitError() << "#act." << encoding
                     << " encodes floating-point tensors, not " << type;
}

//===----------------------------------------------------------------------===//
// QuantEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult QuantEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                unsigned bits, int64_t group,
                                Rounding rounding) {
  if (bits != 1 && bits != 2 && bits != 4 && bits != 8)
    return emitError() << "#act.quant bits must be one of 1, 2, 4, 8; got "
                       << bits;
  if (group <= 0)
    return emitError() << "#act.quant group size must be positive; got "
                       << group;
  return success();
}

LogicalResult
QuantEncodingAttr::verifyTensorType(RankedTensorType type,
                            function_ref<InFlightDiagnostic()> emitError) const {
  return verifyFloatElements("quant", type, emitError);
}

RankedTensorType QuantEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type;
}

bool QuantEncodingAttr::isLossless(Type) const { return false; }

StorageLayout QuantEncodingAttr::getStorageLayout(int64_t numElements, Type) const {
  // Two f32 per group: the minimum and the scale.
  int64_t groups = (numElements + getGroup() - 1) / getGroup();
  return StorageLayout::packed(numElements, getBits(), 32 / getBits(),
                               groups * 2 * sizeof(float));
}

//===----------------------------------------------------------------------===//
// FloatEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult FloatEncodingAttr::verify(function_ref<InFlightDiagnostic()>,
                                FloatFormat) {
  return success();
}

unsigned FloatEncodingAttr::getElementBits() const {
  switch (getFormat()) {
  case FloatFormat::F16:
  case FloatFormat::BF16:
    return 16;
  case FloatFormat::FP10:
    return 10;
  case FloatFormat::E4M3:
  case FloatFormat::E5M2:
    return 8;
  }
  llvm_unreachable("unknown float format");
}

unsigned FloatEncodingAttr::getElementsPerWord() const {
  // fp10 packs three to a word and leaves two bits unused.
  return 32 / getElementBits();
}

LogicalResult
FloatEncodingAttr::verifyTensorType(RankedTensorType type,
                            function_ref<InFlightDiagnostic()> emitError) const {
  return verifyFloatElements("float", type, emitError);
}

RankedTensorType FloatEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type;
}

bool FloatEncodingAttr::isLossless(Type elementType) const {
  switch (getFormat()) {
  case FloatFormat::F16:
    return elementType.isF16();
  case FloatFormat::BF16:
    return elementType.isBF16();
  default:
    return false;
  }
}

/// 8- and 16-bit codes are stored as an array of them (the bytes of the
/// word packing without its tail padding), encoded element-wise.
static bool isByteAligned(unsigned bits) { return bits == 8 || bits == 16; }

StorageLayout FloatEncodingAttr::getStorageLayout(int64_t numElements, Type) const {
  if (isByteAligned(getElementBits()))
    return {numElements * getElementBits() / 8, 0, 0};
  return StorageLayout::packed(numElements, getElementBits(),
                               getElementsPerWord());
}

//===----------------------------------------------------------------------===//
// MaskEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult MaskEncodingAttr::verify(function_ref<InFlightDiagnostic()>,
                               MaskPredicate) {
  return success();
}

LogicalResult
MaskEncodingAttr::verifyTensorType(RankedTensorType type,
                           function_ref<InFlightDiagnostic()> emitError) const {
  if (type.getElementType().isIntOrFloat())
    return success();
  return emitError() << "#act.mask needs integer or floating-point elements, not "
                     << type;
}

RankedTensorType MaskEncodingAttr::getDecodedType(RankedTensorType type) const {
  return type.clone(IntegerType::get(getContext(), 1));
}

bool MaskEncodingAttr::isLossless(Type) const { return true; }

StorageLayout MaskEncodingAttr::getStorageLayout(int64_t numElements, Type) const {
  return StorageLayout::packed(numElements, 1, 32);
}

//===----------------------------------------------------------------------===//
// Lowerings (EncodingAttrInterface::buildEncode / buildDecode)
//===----------------------------------------------------------------------===//

/// Words of `perWord` elements a static tensor needs; dynamic otherwise.
static int64_t staticWords(RankedTensorType type, int64_t perWord) {
  if (!type.hasStaticShape())
    return ShapedType::kDynamic;
  return llvm::divideCeil(type.getNumElements(), perWord);
}

static Value toF32(OpBuilder &b, Location loc, Value x) {
  Type f32 = b.getF32Type();
  unsigned width = x.getType().getIntOrFloatBitWidth();
  if (x.getType() == f32)
    return x;
  if (width < 32)
    return arith::ExtFOp::create(b, loc, f32, x);
  return arith::TruncFOp::create(b, loc, f32, x);
}

static Value fromF32(OpBuilder &b, Location loc, Value x, Type type) {
  if (type == x.getType())
    return x;
  if (type.getIntOrFloatBitWidth() < 32)
    return arith::TruncFOp::create(b, loc, type, x);
  return arith::ExtFOp::create(b, loc, type, x);
}

static Value f32Const(OpBuilder &b, Location loc, float v) {
  return arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(v));
}

// QuantEncodingAttr ---------------------------------------------------------

void QuantEncodingAttr::getStorageTypes(RankedTensorType type,
                                        SmallVectorImpl<Type> &types) const {
  MLIRContext *ctx = getContext();
  types.push_back(RankedTensorType::get(
      {staticWords(type, 32 / getBits())}, IntegerType::get(ctx, 32)));
  types.push_back(RankedTensorType::get({staticWords(type, getGroup()), 2},
                                        Float32Type::get(ctx)));
}

bool QuantEncodingAttr::isStochastic() const {
  return getRounding() == Rounding::Stochastic;
}

/// Reads column `column` of the metadata row of each element's group.
static PerElementInput groupColumn(Value meta, int64_t group,
                                   int64_t column) {
  return {meta, [group, column](AffineExpr flat) {
            return SmallVector<AffineExpr>{
                flat.floorDiv(group),
                getAffineConstantExpr(column, flat.getContext())};
          }};
}

SmallVector<Value> QuantEncodingAttr::buildEncode(OpBuilder &b, Location loc,
                                                  Value input, Value seed,
                                                  int64_t id) const {
  MLIRContext *ctx = getContext();
  int64_t group = getGroup(), perWord = 32 / getBits();
  int64_t levels = (int64_t(1) << getBits()) - 1;
  PackedLowering lowering(b, loc, getBits(), perWord,
                          std::lcm(group, perWord));
  lowering.load(input);
  Value padded = lowering.getPadded();
  Type f32 = b.getF32Type();

  // Per-group minimum and maximum, over the real elements only.
  int64_t paddedStatic =
      cast<RankedTensorType>(padded.getType()).getDimSize(0);
  int64_t groupsStatic = ShapedType::isDynamic(paddedStatic)
                             ? ShapedType::kDynamic
                             : paddedStatic / group;
  Value groups = b.createOrFold<arith::DivUIOp>(
      loc, lowering.getPaddedLength(),
      arith::ConstantIndexOp::create(b, loc, group));
  SmallVector<OpFoldResult> viewShape = {
      ShapedType::isDynamic(groupsStatic) ? OpFoldResult(groups)
                                          : b.getIndexAttr(groupsStatic),
      b.getIndexAttr(group)};
  auto elementType = cast<RankedTensorType>(padded.getType()).getElementType();
  Value view = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({groupsStatic, group}, elementType),
      padded, ArrayRef<ReassociationIndices>{{0, 1}}, viewShape);
  SmallVector<Value> dynamicGroups;
  if (ShapedType::isDynamic(groupsStatic))
    dynamicGroups.push_back(groups);
  auto statType = RankedTensorType::get({groupsStatic}, f32);
  auto filled = [&](float v) {
    Value empty = tensor::EmptyOp::create(b, loc, statType, dynamicGroups);
    return linalg::FillOp::create(b, loc, f32Const(b, loc, v), empty)
        .getResult(0);
  };
  Value n = lowering.getNumElements();
  // A static element count that fills its groups needs no padding mask.
  auto inputType = cast<RankedTensorType>(input.getType());
  bool noTail = inputType.hasStaticShape() &&
                inputType.getNumElements() % group == 0;
  auto stats = linalg::GenericOp::create(
      b, loc, TypeRange{statType, statType}, ValueRange{view},
      ValueRange{filled(INFINITY), filled(-INFINITY)},
      {AffineMap::getMultiDimIdentityMap(2, ctx),
       AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx),
       AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx)},
      {utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value x = toF32(nb, nl, args[0]);
        // minnum/maxnum: vectorizable on every target (minimumf/maximumf,
        // which propagate NaN, are not on x86); NaN groups are undefined.
        Value mn = arith::MinNumFOp::create(nb, nl, args[1], x);
        Value mx = arith::MaxNumFOp::create(nb, nl, args[2], x);
        if (!noTail) {
          // Padding elements do not count.
          Value g = linalg::IndexOp::create(nb, nl, 0);
          Value j = linalg::IndexOp::create(nb, nl, 1);
          Value i = arith::AddIOp::create(
              nb, nl,
              arith::MulIOp::create(
                  nb, nl, g, arith::ConstantIndexOp::create(nb, nl, group)),
              j);
          Value valid =
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, i, n);
          mn = arith::SelectOp::create(nb, nl, valid, mn, args[1]);
          mx = arith::SelectOp::create(nb, nl, valid, mx, args[2]);
        }
        linalg::YieldOp::create(nb, nl, ValueRange{mn, mx});
      });

  // Metadata rows (min, scale), scale = (max - min) / (2^bits - 1).
  auto metaType = RankedTensorType::get({groupsStatic, 2}, f32);
  Value metaInit = tensor::EmptyOp::create(b, loc, metaType, dynamicGroups);
  AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  Value meta =
      linalg::GenericOp::create(
          b, loc, metaType, stats.getResults(), ValueRange{metaInit},
          {row, row, AffineMap::getMultiDimIdentityMap(2, ctx)},
          {utils::IteratorType::parallel, utils::IteratorType::parallel},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value scale = arith::DivFOp::create(
                nb, nl, arith::SubFOp::create(nb, nl, args[1], args[0]),
                f32Const(nb, nl, float(levels)));
            Value first = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::eq,
                linalg::IndexOp::create(nb, nl, 1),
                arith::ConstantIndexOp::create(nb, nl, 0));
            linalg::YieldOp::create(
                nb, nl,
                ValueRange{arith::SelectOp::create(nb, nl, first, args[0],
                                                   scale)});
          })
          .getResult(0);

  // Codes: (x - min) / scale rounded stochastically or to nearest, clamped.
  bool stochastic = isStochastic();
  // The Philox block shared by four consecutive elements.
  SmallVector<Value> randomBlock;
  if (!seed)
    seed = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
  Value payload = lowering.pack(
      {groupColumn(meta, group, 0), groupColumn(meta, group, 1)},
      [&](OpBuilder &nb, Location nl, Value x, Value index,
          ValueRange extra, int64_t lane) -> Value {
        Value mn = extra[0], scale = extra[1];
        Value zero = f32Const(nb, nl, 0.0f);
        Value y = arith::DivFOp::create(
            nb, nl, arith::SubFOp::create(nb, nl, toF32(nb, nl, x), mn), scale);
        Value constant =
            arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ, scale, zero);
        y = arith::SelectOp::create(nb, nl, constant, zero, y);
        Value offset;
        if (stochastic) {
          // u in [0, 1) from the top 24 bits of the Philox word.
          Value r =
              buildElementRandom(nb, nl, index, seed, id, lane, randomBlock);
          r = arith::ShRUIOp::create(
              nb, nl, r,
              arith::ConstantIntOp::create(nb, nl, nb.getI32Type(), 8));
          offset = arith::MulFOp::create(
              nb, nl, arith::SIToFPOp::create(nb, nl, nb.getF32Type(), r),
              f32Const(nb, nl, 1.0f / 16777216.0f));
        } else {
          offset = f32Const(nb, nl, 0.5f);
        }
        Value q = math::FloorOp::create(
            nb, nl, arith::AddFOp::create(nb, nl, y, offset));
        q = arith::MinNumFOp::create(
            nb, nl, arith::MaxNumFOp::create(nb, nl, q, zero),
            f32Const(nb, nl, float(levels)));
        // q is in [0, 2^bits - 1]: the signed conversion gives the same
        // code and is one instruction on x86 (the unsigned one is not).
        return arith::FPToSIOp::create(nb, nl, nb.getI32Type(), q);
      },
      group);
  return {payload, lowering.sliceRows(
                       meta, lowering.ceilDiv(lowering.getNumElements(),
                                              group))};
}

Value QuantEncodingAttr::buildDecode(OpBuilder &b, Location loc,
                                     ValueRange storage,
                                     RankedTensorType decodedType,
                                     ValueRange dynamicSizes) const {
  int64_t group = getGroup(), perWord = 32 / getBits();
  PackedLowering lowering(b, loc, getBits(), perWord,
                          std::lcm(group, perWord));
  lowering.setShape(decodedType, dynamicSizes);
  Value groups = b.createOrFold<arith::DivUIOp>(
      loc, lowering.getPaddedLength(),
      arith::ConstantIndexOp::create(b, loc, group));
  Value meta = lowering.padRows(storage[1], groups);
  Type elementType = decodedType.getElementType();
  return lowering.unpack(
      storage[0], decodedType, dynamicSizes,
      {groupColumn(meta, group, 0), groupColumn(meta, group, 1)},
      [&](OpBuilder &nb, Location nl, Value code, ValueRange extra) {
        // code < 2^bits: the signed conversion is exact and cheaper on x86.
        Value q = arith::SIToFPOp::create(nb, nl, nb.getF32Type(), code);
        Value x = arith::AddFOp::create(
            nb, nl, extra[0], arith::MulFOp::create(nb, nl, q, extra[1]));
        return fromF32(nb, nl, x, elementType);
      });
}

// FloatEncodingAttr ---------------------------------------------------------

void FloatEncodingAttr::getStorageTypes(RankedTensorType type,
                                        SmallVectorImpl<Type> &types) const {
  if (isByteAligned(getElementBits())) {
    types.push_back(RankedTensorType::get(
        {type.hasStaticShape() ? type.getNumElements() : ShapedType::kDynamic},
        IntegerType::get(getContext(), getElementBits())));
    return;
  }
  types.push_back(RankedTensorType::get({staticWords(type, getElementsPerWord())},
                                        IntegerType::get(getContext(), 32)));
}

bool FloatEncodingAttr::isStochastic() const { return false; }

/// The narrow format, or nullopt for f16/bf16 (which use arith.truncf).
static std::optional<MiniFloat> getMiniFloat(FloatFormat format) {
  switch (format) {
  case FloatFormat::FP10:
    return MiniFloat{5, 4, true};
  case FloatFormat::E4M3:
    return MiniFloat{4, 3, false};
  case FloatFormat::E5M2:
    return MiniFloat{5, 2, true};
  default:
    return std::nullopt;
  }
}

/// f16 / bf16 type of a 16-bit format.
static FloatType getHalfType(MLIRContext *ctx, FloatFormat format) {
  if (format == FloatFormat::F16)
    return Float16Type::get(ctx);
  return BFloat16Type::get(ctx);
}

SmallVector<Value> FloatEncodingAttr::buildEncode(OpBuilder &b, Location loc,
                                                  Value input, Value,
                                                  int64_t) const {
  unsigned bits = getElementBits(), perWord = getElementsPerWord();
  FloatFormat format = getFormat();
  std::optional<MiniFloat> mini = getMiniFloat(format);
  auto code = [&](OpBuilder &nb, Location nl, Value x) -> Value {
        Value v = toF32(nb, nl, x);
        if (mini)
          return buildMiniFloatEncode(nb, nl, v, *mini);
        // Clamp to the largest finite value (NaN passes through), then round
        // to nearest even: f16 through the platform's truncation; bf16 on
        // the bits (u + 0x7fff + lsb) >> 16, which keeps f32 subnormals
        // (LLVM's CPU lowering of the bf16 truncation flushes them) and so
        // gives the same bits on every target.
        FloatType half = getHalfType(nb.getContext(), format);
        APFloat max = APFloat::getLargest(half.getFloatSemantics());
        bool lost;
        max.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven,
                    &lost);
        Value limit = arith::ConstantFloatOp::create(nb, nl, nb.getF32Type(),
                                                     max);
        Value negLimit = arith::NegFOp::create(nb, nl, limit);
        // Ordered compares and selects (not minimumf/maximumf, which x86
        // cannot vectorize): NaN compares false and passes through.
        Value above = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT,
                                            v, limit);
        Value below = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OLT,
                                            v, negLimit);
        v = arith::SelectOp::create(
            nb, nl, above, limit,
            arith::SelectOp::create(nb, nl, below, negLimit, v));
        if (format == FloatFormat::BF16) {
          Type i32 = nb.getI32Type();
          auto ci = [&](int64_t c) {
            return arith::ConstantIntOp::create(nb, nl, i32, c);
          };
          Value u = arith::BitcastOp::create(nb, nl, i32, v);
          Value lsb = arith::AndIOp::create(
              nb, nl, arith::ShRUIOp::create(nb, nl, u, ci(16)), ci(1));
          Value rounded = arith::ShRUIOp::create(
              nb, nl,
              arith::AddIOp::create(
                  nb, nl, u, arith::AddIOp::create(nb, nl, lsb, ci(0x7FFF))),
              ci(16));
          Value quiet = arith::OrIOp::create(
              nb, nl, arith::ShRUIOp::create(nb, nl, u, ci(16)), ci(0x40));
          Value isNan = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::UNO,
                                              v, v);
          return arith::SelectOp::create(nb, nl, isNan, quiet, rounded);
        }
        Value h = arith::TruncFOp::create(nb, nl, half, v);
        Value i16 = arith::BitcastOp::create(nb, nl, nb.getI16Type(), h);
        return arith::ExtUIOp::create(nb, nl, nb.getI32Type(), i16);
  };
  if (isByteAligned(bits))
    return {buildByteEncode(b, loc, input, bits, code)};
  PackedLowering lowering(b, loc, bits, perWord, perWord);
  lowering.load(input);
  return {lowering.pack(
      {}, [&](OpBuilder &nb, Location nl, Value x, Value, ValueRange,
              int64_t) { return code(nb, nl, x); })};
}

Value FloatEncodingAttr::buildDecode(OpBuilder &b, Location loc,
                                     ValueRange storage,
                                     RankedTensorType decodedType,
                                     ValueRange dynamicSizes) const {
  unsigned bits = getElementBits(), perWord = getElementsPerWord();
  FloatFormat format = getFormat();
  std::optional<MiniFloat> mini = getMiniFloat(format);
  Type elementType = decodedType.getElementType();
  auto value = [&](OpBuilder &nb, Location nl, Value code) -> Value {
        Value v;
        if (mini) {
          v = buildMiniFloatDecode(nb, nl, code, *mini);
        } else {
          Value i16 = arith::TruncIOp::create(nb, nl, nb.getI16Type(), code);
          Value h = arith::BitcastOp::create(
              nb, nl, getHalfType(nb.getContext(), format), i16);
          if (elementType == h.getType())
            return h;
          v = arith::ExtFOp::create(nb, nl, nb.getF32Type(), h);
        }
        return fromF32(nb, nl, v, elementType);
  };
  if (isByteAligned(bits))
    return buildByteDecode(b, loc, storage[0], decodedType, dynamicSizes, value);
  PackedLowering lowering(b, loc, bits, perWord, perWord);
  lowering.setShape(decodedType, dynamicSizes);
  return lowering.unpack(storage[0], decodedType, dynamicSizes, {},
                         [&](OpBuilder &nb, Location nl, Value code,
                             ValueRange) { return value(nb, nl, code); });
}

// MaskEncodingAttr ----------------------------------------------------------

void MaskEncodingAttr::getStorageTypes(RankedTensorType type,
                                       SmallVectorImpl<Type> &types) const {
  types.push_back(RankedTensorType::get({staticWords(type, 32)},
                                        IntegerType::get(getContext(), 32)));
}

bool MaskEncodingAttr::isStochastic() const { return false; }

SmallVector<Value> MaskEncodingAttr::buildEncode(OpBuilder &b, Location loc,
                                                 Value input, Value,
                                                 int64_t) const {
  PackedLowering lowering(b, loc, 1, 32, 32);
  lowering.load(input);
  MaskPredicate predicate = getPredicate();
  return {lowering.pack(
      {},
      [&](OpBuilder &nb, Location nl, Value x, Value, ValueRange,
          int64_t) -> Value {
        Value zero = arith::ConstantOp::create(nb, nl,
                                               nb.getZeroAttr(x.getType()));
        Value p;
        if (isa<FloatType>(x.getType())) {
          auto pred = predicate == MaskPredicate::Positive
                          ? arith::CmpFPredicate::OGT
                      : predicate == MaskPredicate::NonNegative
                          ? arith::CmpFPredicate::OGE
                          : arith::CmpFPredicate::UNE;
          p = arith::CmpFOp::create(nb, nl, pred, x, zero);
        } else {
          auto pred = predicate == MaskPredicate::Positive
                          ? arith::CmpIPredicate::sgt
                      : predicate == MaskPredicate::NonNegative
                          ? arith::CmpIPredicate::sge
                          : arith::CmpIPredicate::ne;
          p = arith::CmpIOp::create(nb, nl, pred, x, zero);
        }
        return arith::ExtUIOp::create(nb, nl, nb.getI32Type(), p);
      })};
}

Value MaskEncodingAttr::buildDecode(OpBuilder &b, Location loc,
                                    ValueRange storage,
                                    RankedTensorType decodedType,
                                    ValueRange dynamicSizes) const {
  PackedLowering lowering(b, loc, 1, 32, 32);
  lowering.setShape(decodedType, dynamicSizes);
  return lowering.unpack(
      storage[0], decodedType, dynamicSizes, {},
      [&](OpBuilder &nb, Location nl, Value code, ValueRange) -> Value {
        return arith::TruncIOp::create(nb, nl, nb.getI1Type(), code);
      });
}
