//===- EncodingSparse.cpp - #act.sparse lowering model --------------------===//
//
// The EncodingLoweringAttrInterface model of #act.sparse (EncodingModel.h):
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
// #act.sparse
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<SparseEncodingAttr>::getStorageTypes(
    Attribute, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  // Sizes depend on the data: the bitmap (empty in the dense fallback) and
  // the stored values.
  types.push_back(RankedTensorType::get(
      {ShapedType::kDynamic}, IntegerType::get(type.getContext(), 32)));
  types.push_back(
      RankedTensorType::get({ShapedType::kDynamic}, type.getElementType()));
}

template <>
SmallVector<Value> EncodingModel<SparseEncodingAttr>::buildEncode(
    Attribute, OpBuilder &b, Location loc, Value input, Value, Value, int64_t,
    const LoweringOptions &options) const {
  auto [bitmap, values] = buildSparseEncode(b, loc, input, options);
  return {bitmap, values};
}

template <>
Value EncodingModel<SparseEncodingAttr>::buildDecode(
    Attribute, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  return buildSparseDecode(b, loc, storage[0], storage[1], decodedType,
                           dynamicSizes, options);
}
