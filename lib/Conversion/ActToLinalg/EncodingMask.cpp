//===- EncodingMask.cpp - #act.mask lowering model ------------------------===//
//
// The EncodingLoweringAttrInterface model of #act.mask (EncodingModel.h):
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
// #act.mask
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<MaskEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  types.push_back(packedPayloadType(type, 32));
}

template <>
SmallVector<Value> EncodingModel<MaskEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value, Value,
    int64_t, const LoweringOptions &options) const {
  auto encoding = cast<MaskEncodingAttr>(attr);
  MaskPredicate predicate = encoding.getPredicate();
  return {buildPackedEncode(
      b, loc, input, {1, 32}, options, nullptr, std::nullopt,
      [&](OpBuilder &nb, Location nl, Value x, ValueRange,
          function_ref<Value()>) -> Value {
        Value zero =
            arith::ConstantOp::create(nb, nl, nb.getZeroAttr(x.getType()));
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

template <>
bool EncodingModel<MaskEncodingAttr>::decodesPerElement(
    Attribute, RankedTensorType type, const LoweringOptions &options) const {
  return packedDecodesPerElement(type, options);
}

template <>
Value EncodingModel<MaskEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  return buildPackedDecode(
      b, loc, storage[0], {1, 32}, options, decodedType, dynamicSizes, Value(),
      0, [&](OpBuilder &nb, Location nl, Value code, ValueRange) -> Value {
        return arith::TruncIOp::create(nb, nl, nb.getI1Type(), code);
      });
}
