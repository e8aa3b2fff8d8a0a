//===- EncodingIndex.cpp - #act.index lowering model ----------------------===//
//
// The EncodingLoweringAttrInterface model of #act.index (EncodingModel.h):
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
// #act.index
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<IndexEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  auto encoding = cast<IndexEncodingAttr>(attr);
  types.push_back(packedPayloadType(type, encoding.getElementsPerWord()));
}

template <>
SmallVector<Value> EncodingModel<IndexEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value, Value,
    int64_t, const LoweringOptions &options) const {
  auto encoding = cast<IndexEncodingAttr>(attr);
  unsigned bits = encoding.getBits();
  return {buildPackedEncode(
      b, loc, input, {bits, encoding.getElementsPerWord()}, options, nullptr,
      std::nullopt,
      [&](OpBuilder &nb, Location nl, Value x, ValueRange,
          function_ref<Value()>) -> Value {
        // The low `bits` bits (the promised values are below 2^bits).
        Type i32 = nb.getI32Type();
        unsigned width = x.getType().getIntOrFloatBitWidth();
        Value v = width > 32   ? arith::TruncIOp::create(nb, nl, i32, x)
                  : width < 32 ? arith::ExtUIOp::create(nb, nl, i32, x)
                               : x;
        return arith::AndIOp::create(
            nb, nl, v,
            arith::ConstantIntOp::create(nb, nl, i32,
                                         (int64_t(1) << bits) - 1));
      })};
}

template <>
bool EncodingModel<IndexEncodingAttr>::decodesPerElement(
    Attribute, RankedTensorType type, const LoweringOptions &options) const {
  return packedDecodesPerElement(type, options);
}

template <>
Value EncodingModel<IndexEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  auto encoding = cast<IndexEncodingAttr>(attr);
  Type elementType = decodedType.getElementType();
  return buildPackedDecode(
      b, loc, storage[0], {encoding.getBits(), encoding.getElementsPerWord()},
      options, decodedType, dynamicSizes, Value(), 0,
      [&](OpBuilder &nb, Location nl, Value code, ValueRange) -> Value {
        unsigned width = elementType.getIntOrFloatBitWidth();
        if (width > 32)
          return arith::ExtUIOp::create(nb, nl, elementType, code);
        if (width < 32)
          return arith::TruncIOp::create(nb, nl, elementType, code);
        return code;
      });
}
