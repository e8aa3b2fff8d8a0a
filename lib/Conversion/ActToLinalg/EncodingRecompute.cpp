//===- EncodingRecompute.cpp - #act.recompute lowering model --------------===//
//
// The EncodingLoweringAttrInterface model of #act.recompute (EncodingModel.h):
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
// #act.recompute
//===----------------------------------------------------------------------===//

template <>
void EncodingModel<RecomputeEncodingAttr>::getStorageTypes(
    Attribute, RankedTensorType, SmallVectorImpl<Type> &) const {
  // Nothing is stored.
}

template <>
SmallVector<Value> EncodingModel<RecomputeEncodingAttr>::buildEncode(
    Attribute, OpBuilder &, Location, Value, Value, Value, int64_t,
    const LoweringOptions &) const {
  return {};
}

template <>
Value EncodingModel<RecomputeEncodingAttr>::buildDecode(
    Attribute, OpBuilder &, Location, ValueRange, RankedTensorType, ValueRange,
    const LoweringOptions &) const {
  // act.decode's verifier rejects #act.recompute: act.recomputed reads it.
  llvm_unreachable("#act.recompute is never decoded");
}
