//===- EncodingFloat.cpp - #act.float lowering model ----------------------===//
//
// The EncodingLoweringAttrInterface model of #act.float (EncodingModel.h):
// its storage types, its encode and its decode.
//
//===----------------------------------------------------------------------===//

#include "EncodingModel.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::act;

//===----------------------------------------------------------------------===//
// #act.float
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<FloatEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  auto encoding = cast<FloatEncodingAttr>(attr);
  if (encoding.isByteArray()) {
    types.push_back(RankedTensorType::get(
        {type.hasStaticShape() ? type.getNumElements() : ShapedType::kDynamic},
        IntegerType::get(encoding.getContext(), encoding.getElementBits())));
    return;
  }
  types.push_back(packedPayloadType(type, encoding.getElementsPerWord()));
}

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

template <>
SmallVector<Value> EncodingModel<FloatEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value, Value,
    int64_t, const LoweringOptions &options) const {
  auto encoding = cast<FloatEncodingAttr>(attr);
  unsigned bits = encoding.getElementBits(),
           perWord = encoding.getElementsPerWord();
  FloatFormat format = encoding.getFormat();
  std::optional<MiniFloat> mini = getMiniFloat(format);
  auto code = [&](OpBuilder &nb, Location nl, Value x) -> Value {
    Value v = toF32(nb, nl, x);
    if (mini)
      return buildMiniFloatEncode(nb, nl, v, *mini);
    // Saturate finite magnitudes at the largest finite value (NaN and the
    // infinities pass through), then round
    // to nearest even: f16 through the platform's truncation; bf16 on
    // the bits (u + 0x7fff + lsb) >> 16, which keeps f32 subnormals
    // (LLVM's CPU lowering of the bf16 truncation flushes them) and so
    // gives the same bits on every target.
    FloatType half = getHalfType(nb.getContext(), format);
    APFloat max = APFloat::getLargest(half.getFloatSemantics());
    bool lost;
    max.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
    Value limit = arith::ConstantFloatOp::create(nb, nl, nb.getF32Type(), max);
    Value negLimit = arith::NegFOp::create(nb, nl, limit);
    // Ordered compares and selects (not minimumf/maximumf, which x86
    // cannot vectorize): NaN compares false and passes through, and so do
    // the infinities (finite magnitudes beyond the format saturate).
    Value inf = arith::ConstantFloatOp::create(
        nb, nl, nb.getF32Type(), APFloat::getInf(APFloat::IEEEsingle()));
    Value negInf = arith::NegFOp::create(nb, nl, inf);
    Value above = arith::AndIOp::create(
        nb, nl,
        arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, v, limit),
        arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OLT, v, inf));
    Value below = arith::AndIOp::create(
        nb, nl,
        arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OLT, v, negLimit),
        arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, v, negInf));
    v = arith::SelectOp::create(
        nb, nl, above, limit,
        arith::SelectOp::create(nb, nl, below, negLimit, v));
    // Both formats build a NaN's code from the bits.
    Type i32 = nb.getI32Type();
    auto ci = [&](int64_t c) {
      return arith::ConstantIntOp::create(nb, nl, i32, c);
    };
    Value u = arith::BitcastOp::create(nb, nl, i32, v);
    Value isNan =
        arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::UNO, v, v);
    if (format == FloatFormat::BF16) {
      Value lsb = arith::AndIOp::create(
          nb, nl, arith::ShRUIOp::create(nb, nl, u, ci(16)), ci(1));
      Value rounded = arith::ShRUIOp::create(
          nb, nl,
          arith::AddIOp::create(nb, nl, u,
                                arith::AddIOp::create(nb, nl, lsb, ci(0x7FFF))),
          ci(16));
      Value quiet = arith::OrIOp::create(
          nb, nl, arith::ShRUIOp::create(nb, nl, u, ci(16)), ci(0x40));
      return arith::SelectOp::create(nb, nl, isNan, quiet, rounded);
    }
    Value h = arith::TruncFOp::create(nb, nl, half, v);
    Value i16 = arith::BitcastOp::create(nb, nl, nb.getI16Type(), h);
    Value code = arith::ExtUIOp::create(nb, nl, i32, i16);
    // A NaN keeps its sign and its payload's top 10 bits, made quiet
    // (x86's and Arm's conversion): NVPTX's cvt.rn.f16.f32 returns the
    // canonical NaN 0x7fff instead, which made an f16 tensor's encoding
    // lossy for NaNs and the GPU's payload differ from the CPU's.
    Value nan = arith::OrIOp::create(
        nb, nl,
        arith::AndIOp::create(nb, nl, arith::ShRUIOp::create(nb, nl, u, ci(16)),
                              ci(0x8000)),
        arith::OrIOp::create(
            nb, nl, ci(0x7E00),
            arith::AndIOp::create(
                nb, nl, arith::ShRUIOp::create(nb, nl, u, ci(13)), ci(0x3FF))));
    return arith::SelectOp::create(nb, nl, isNan, nan, code);
  };
  if (encoding.isByteArray())
    return {buildByteEncode(b, loc, input, bits, options, code)};
  return {buildPackedEncode(
      b, loc, input, {bits, perWord}, options, nullptr, std::nullopt,
      [&](OpBuilder &nb, Location nl, Value x, ValueRange,
          function_ref<Value()>) { return code(nb, nl, x); })};
}

template <>
bool EncodingModel<FloatEncodingAttr>::decodesPerElement(
    Attribute, RankedTensorType type, const LoweringOptions &options) const {
  return packedDecodesPerElement(type, options);
}

/// The value of `code` (i32) in `format`, as `elementType`.
static Value decodeCode(OpBuilder &b, Location loc, FloatFormat format,
                        Value code, Type elementType) {
  Value v;
  if (std::optional<MiniFloat> mini = getMiniFloat(format)) {
    v = buildMiniFloatDecode(b, loc, code, *mini);
  } else {
    Value i16 = arith::TruncIOp::create(b, loc, b.getI16Type(), code);
    Value h = arith::BitcastOp::create(
        b, loc, getHalfType(b.getContext(), format), i16);
    if (elementType == h.getType())
      return h;
    v = arith::ExtFOp::create(b, loc, b.getF32Type(), h);
  }
  return fromF32(b, loc, v, elementType);
}

Value getFloatStorageCapacity(FloatEncodingAttr encoding, OpBuilder &b,
                              Location loc, Value payload) {
  mlir::act::detail::IndexMath ix{b, loc};
  Value size = b.createOrFold<tensor::DimOp>(loc, payload, 0);
  return encoding.isByteArray() ? size
                                : ix.mul(size, encoding.getElementsPerWord());
}

Value buildFloatElementDecode(FloatEncodingAttr encoding, OpBuilder &b,
                              Location loc, Value payload, Value k, Value count,
                              Type elementType) {
  Value code;
  if (encoding.isByteArray()) {
    code = arith::ExtUIOp::create(
        b, loc, b.getI32Type(),
        tensor::ExtractOp::create(b, loc, payload, ValueRange{k}));
  } else {
    code = buildPackedElementCode(
        b, loc, payload,
        {encoding.getElementBits(), encoding.getElementsPerWord()}, k, count);
  }
  return decodeCode(b, loc, encoding.getFormat(), code, elementType);
}

template <>
Value EncodingModel<FloatEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  auto encoding = cast<FloatEncodingAttr>(attr);
  unsigned bits = encoding.getElementBits(),
           perWord = encoding.getElementsPerWord();
  FloatFormat format = encoding.getFormat();
  Type elementType = decodedType.getElementType();
  auto value = [&](OpBuilder &nb, Location nl, Value code) -> Value {
    return decodeCode(nb, nl, format, code, elementType);
  };
  if (encoding.isByteArray())
    return buildByteDecode(b, loc, storage[0], decodedType, dynamicSizes,
                           options, value);
  return buildPackedDecode(b, loc, storage[0], {bits, perWord}, options,
                           decodedType, dynamicSizes, Value(), 0,
                           [&](OpBuilder &nb, Location nl, Value code,
                               ValueRange) { return value(nb, nl, code); });
}
