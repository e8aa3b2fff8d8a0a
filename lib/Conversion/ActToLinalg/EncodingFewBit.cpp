//===- EncodingFewBit.cpp - #act.fewbit lowering model --------------------===//
//
// The EncodingLoweringAttrInterface model of #act.fewbit (EncodingModel.h):
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
// #act.fewbit
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<FewBitEncodingAttr>::getStorageTypes(
    Attribute attr, RankedTensorType type, SmallVectorImpl<Type> &types) const {
  auto encoding = cast<FewBitEncodingAttr>(attr);
  types.push_back(packedPayloadType(type, encoding.getElementsPerWord()));
}

template <>
SmallVector<Value> EncodingModel<FewBitEncodingAttr>::buildEncode(
    Attribute attr, OpBuilder &b, Location loc, Value input, Value, Value,
    int64_t, const LoweringOptions &options) const {
  auto encoding = cast<FewBitEncodingAttr>(attr);
  ArrayRef<float> boundaries = encoding.getBoundaries().asArrayRef();
  return {buildPackedEncode(
      b, loc, input, {encoding.getBits(), encoding.getElementsPerWord()},
      options, nullptr, std::nullopt,
      [&](OpBuilder &nb, Location nl, Value x, ValueRange,
          function_ref<Value()>) -> Value {
        // The interval: how many boundaries x reaches (ordered compares:
        // NaN reaches none). Sorted boundaries make this the index, and a
        // sum of compares vectorizes where a search would branch.
        Value v = toF32(nb, nl, x);
        Type i32 = nb.getI32Type();
        Value code = arith::ConstantIntOp::create(nb, nl, i32, 0);
        for (float boundary : boundaries) {
          Value c =
              arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(boundary));
          Value ge =
              arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGE, v, c);
          code = arith::AddIOp::create(nb, nl, code,
                                       arith::ExtUIOp::create(nb, nl, i32, ge));
        }
        return code;
      })};
}

template <>
bool EncodingModel<FewBitEncodingAttr>::decodesPerElement(
    Attribute, RankedTensorType type, const LoweringOptions &options) const {
  return packedDecodesPerElement(type, options);
}

template <>
Value EncodingModel<FewBitEncodingAttr>::buildDecode(
    Attribute attr, OpBuilder &b, Location loc, ValueRange storage,
    RankedTensorType decodedType, ValueRange dynamicSizes,
    const LoweringOptions &options) const {
  auto encoding = cast<FewBitEncodingAttr>(attr);
  unsigned bits = encoding.getBits();
  ArrayRef<float> table = encoding.getValues().asArrayRef();
  Type elementType = decodedType.getElementType();
  return buildPackedDecode(
      b, loc, storage[0], {bits, encoding.getElementsPerWord()}, options,
      decodedType, dynamicSizes, Value(), 0,
      [&](OpBuilder &nb, Location nl, Value code, ValueRange) -> Value {
        // values[code] by a tree of selects on the code's bits, lowest bit
        // first: element-wise on every target (no table in memory).
        SmallVector<Value> level;
        for (float v : table)
          level.push_back(
              arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(v)));
        Type i32 = nb.getI32Type();
        for (unsigned bit = 0; bit < bits; ++bit) {
          Value set = arith::TruncIOp::create(
              nb, nl, nb.getI1Type(),
              arith::ShRUIOp::create(
                  nb, nl, code,
                  arith::ConstantIntOp::create(nb, nl, i32, bit)));
          SmallVector<Value> next;
          for (size_t k = 0; k + 1 < level.size(); k += 2)
            next.push_back(
                arith::SelectOp::create(nb, nl, set, level[k + 1], level[k]));
          level = std::move(next);
        }
        return fromF32(nb, nl, level.front(), elementType);
      });
}
