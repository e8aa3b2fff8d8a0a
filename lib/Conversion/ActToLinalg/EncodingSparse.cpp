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

/// The lowering model the stored values are stored by (#act.float of the
/// encoding's `format`), or null when they are stored at full width.
static EncodingLoweringAttrInterface
getValuesLowering(SparseEncodingAttr encoding) {
  FloatEncodingAttr values = encoding.getValuesEncoding();
  if (!values)
    return nullptr;
  return cast<EncodingLoweringAttrInterface>(Attribute(values));
}

/// The 1-D tensor of stored values (dynamic: their count depends on the
/// data).
static RankedTensorType getValuesType(RankedTensorType type) {
  return RankedTensorType::get({ShapedType::kDynamic}, type.getElementType());
}

template <>
void EncodingModel<SparseEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  // Sizes depend on the data: the bitmap (empty in the dense fallback) and
  // the stored values, at full width or as their format's storage.
  types.push_back(RankedTensorType::get(
      {ShapedType::kDynamic}, IntegerType::get(type.getContext(), 32)));
  if (EncodingLoweringAttrInterface values =
          getValuesLowering(cast<SparseEncodingAttr>(attr)))
    return values.getStorageTypes(getValuesType(type), types);
  types.push_back(getValuesType(type));
}

template <>
SmallVector<Value> EncodingModel<SparseEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value, Value,
    int64_t id, const LoweringOptions &options) const {
  auto [bitmap, values] = buildSparseEncode(b, loc, input, options);
  EncodingLoweringAttrInterface format =
      getValuesLowering(cast<SparseEncodingAttr>(attr));
  if (!format)
    return {bitmap, values};
  // Gist's precision reduction over the sparse storage: the compacted
  // values (a transient at full width) stored in the narrow format.
  SmallVector<Value> storage = {bitmap};
  llvm::append_range(storage, format.buildEncode(b, loc, values, Value(),
                                                 Value(), id, options));
  return storage;
}

/// Per element (CPU, static shapes): only the variant with a `format`, whose
/// readers tolerate reassociation (a lossy encoding's contractions take
/// their decoded input a chunk of the batch at a time); the plain lossless
/// storage stays one whole decode (vector expand-loads).
template <>
bool EncodingModel<SparseEncodingAttr>::decodesPerElement(
    Attribute attr, RankedTensorType type,
    const LoweringOptions &options) const {
  return cast<SparseEncodingAttr>(attr).getValuesEncoding() &&
         packedDecodesPerElement(type, options) && type.getRank() > 0;
}

/// The per-element decode of the variant with a `format`: each element
/// reads its bit, its place among the values and that value's code
/// (buildSparseElementDecode, buildFloatElementDecode). An empty values
/// storage (no nonzeros) reads as one word of zeros, never selected.
static Value buildPerElementDecode(SparseEncodingAttr encoding, OpBuilder &b,
                                   Location loc, ValueRange storage,
                                   RankedTensorType decodedType) {
  mlir::act::detail::IndexMath ix{b, loc};
  FloatEncodingAttr values = encoding.getValuesEncoding();
  Value payload = mlir::act::detail::nonEmpty(b, loc, storage[1]);
  // The layout the values were encoded in: n of them in the dense fallback,
  // else (as the whole decode's) the storage's capacity.
  Value dense = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      b.createOrFold<tensor::DimOp>(loc, storage[0], 0), ix.c(0));
  Value count = ix.select(dense, ix.c(decodedType.getNumElements()),
                          getFloatStorageCapacity(values, b, loc, payload));
  Type elementType = decodedType.getElementType();
  return buildSparseElementDecode(b, loc, storage[0], count, decodedType,
                                  [&](OpBuilder &nb, Location nl, Value k) {
                                    return buildFloatElementDecode(
                                        values, nb, nl, payload, k, count,
                                        elementType);
                                  });
}

template <>
Value EncodingModel<SparseEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  auto encoding = cast<SparseEncodingAttr>(attr);
  EncodingLoweringAttrInterface format = getValuesLowering(encoding);
  if (!format)
    return buildSparseDecode(b, loc, storage[0], storage[1], decodedType,
                             dynamicSizes, options);
  if (options.perElementDecode && decodesPerElement(attr, decodedType, options))
    return buildPerElementDecode(encoding, b, loc, storage, decodedType);
  // The values first, back at full width: all n elements in the dense
  // fallback (an empty bitmap), else as many as the format's storage holds
  // (at least the nonzeros; the sparse decode reads only those).
  IndexMath ix{b, loc};
  Value n = elementCount(ix, decodedType, dynamicSizes);
  Value dense = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      b.createOrFold<tensor::DimOp>(loc, storage[0], 0), ix.c(0));
  FloatEncodingAttr values = encoding.getValuesEncoding();
  Value capacity = getFloatStorageCapacity(values, b, loc, storage[1]);
  Value count = arith::SelectOp::create(b, loc, dense, n, capacity);
  Value decoded =
      format.buildDecode(b, loc, storage.drop_front(),
                         getValuesType(decodedType), {count}, options);
  return buildSparseDecode(b, loc, storage[0], decoded, decodedType,
                           dynamicSizes, options);
}
