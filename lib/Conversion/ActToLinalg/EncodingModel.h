//===- EncodingModel.h - the encodings' lowering models ---------*- C++ -*-===//
//
// What the files of act's encoding lowering share (one file per encoding,
// Encoding<Name>.cpp, and EncodingLoweringImpl.cpp, which attaches them): the
// model template each encoding specializes, the declarations of those
// specializations, and the helpers of packed storage. Private to
// lib/Conversion/ActToLinalg.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_CONVERSION_ACTTOLINALG_ENCODINGMODEL_H
#define ACT_CONVERSION_ACTTOLINALG_ENCODINGMODEL_H

#include "act/Conversion/ActToLinalg/ActLowering.h"
#include "act/Dialect/Act/IR/Act.h"
#include "act/Dialect/Act/IR/EncodingLowering.h"

#include "LoweringSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"

namespace mlir::act::detail {

/// The lowering model of encoding attribute `Attr`. Each encoding defines
/// the three methods by explicit specialization, in its section below.
template <typename Attr>
struct EncodingModel
    : EncodingLoweringAttrInterface::ExternalModel<EncodingModel<Attr>, Attr> {
  void getStorageTypes(Attribute attr, RankedTensorType type,
                       SmallVectorImpl<Type> &types) const;
  SmallVector<Value> buildEncode(Attribute attr, OpBuilder &b, Location loc,
                                 Value input, Value seed, Value bits,
                                 int64_t id,
                                 const LoweringOptions &options) const;
  Value buildDecode(Attribute attr, OpBuilder &b, Location loc,
                    ValueRange storage, RankedTensorType decodedType,
                    ValueRange dynamicSizes,
                    const LoweringOptions &options) const;
  /// Packed encodings specialize it (packedDecodesPerElement).
  bool decodesPerElement(Attribute, RankedTensorType,
                         const LoweringOptions &) const {
    return false;
  }
};

} // namespace mlir::act::detail

using mlir::act::detail::EncodingModel;

// The specializations each encoding's file defines, declared here so that
// EncodingLoweringImpl.cpp's attachment refers to them.
#define ACT_ENCODING_MODEL(Attr)                                               \
  template <>                                                                  \
  void EncodingModel<Attr>::getStorageTypes(                                   \
      mlir::Attribute, mlir::RankedTensorType,                                 \
      llvm::SmallVectorImpl<mlir::Type> &) const;                              \
  template <>                                                                  \
  llvm::SmallVector<mlir::Value> EncodingModel<Attr>::buildEncode(             \
      mlir::Attribute, mlir::OpBuilder &, mlir::Location, mlir::Value,         \
      mlir::Value, mlir::Value, int64_t, const LoweringOptions &) const;       \
  template <>                                                                  \
  mlir::Value EncodingModel<Attr>::buildDecode(                                \
      mlir::Attribute, mlir::OpBuilder &, mlir::Location, mlir::ValueRange,    \
      mlir::RankedTensorType, mlir::ValueRange, const LoweringOptions &)       \
      const;
#define ACT_ENCODING_MODEL_PER_ELEMENT(Attr)                                   \
  template <>                                                                  \
  bool EncodingModel<Attr>::decodesPerElement(                                 \
      mlir::Attribute, mlir::RankedTensorType, const LoweringOptions &) const;

namespace mlir::act::detail {
ACT_ENCODING_MODEL(QuantEncodingAttr)
ACT_ENCODING_MODEL_PER_ELEMENT(QuantEncodingAttr)
ACT_ENCODING_MODEL(RuntimeQuantEncodingAttr)
ACT_ENCODING_MODEL_PER_ELEMENT(RuntimeQuantEncodingAttr)
ACT_ENCODING_MODEL(FloatEncodingAttr)
ACT_ENCODING_MODEL_PER_ELEMENT(FloatEncodingAttr)
ACT_ENCODING_MODEL(MaskEncodingAttr)
ACT_ENCODING_MODEL_PER_ELEMENT(MaskEncodingAttr)
ACT_ENCODING_MODEL(FewBitEncodingAttr)
ACT_ENCODING_MODEL_PER_ELEMENT(FewBitEncodingAttr)
ACT_ENCODING_MODEL(IndexEncodingAttr)
ACT_ENCODING_MODEL_PER_ELEMENT(IndexEncodingAttr)
ACT_ENCODING_MODEL(SparseEncodingAttr)
ACT_ENCODING_MODEL_PER_ELEMENT(SparseEncodingAttr)
ACT_ENCODING_MODEL(DivisionEncodingAttr)
ACT_ENCODING_MODEL_PER_ELEMENT(DivisionEncodingAttr)
ACT_ENCODING_MODEL(RecomputeEncodingAttr)
} // namespace mlir::act::detail

#undef ACT_ENCODING_MODEL
#undef ACT_ENCODING_MODEL_PER_ELEMENT

namespace mlir::act {

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// Words of `perWord` elements a static tensor needs; dynamic otherwise.
inline int64_t staticWords(RankedTensorType type, int64_t perWord) {
  if (!type.hasStaticShape())
    return ShapedType::kDynamic;
  return llvm::divideCeil(type.getNumElements(), perWord);
}

/// The packed payload of `type` at `perWord` codes to a 32-bit word
/// (docs/Encodings.md, "Packed layout"): tensor<words x i32>.
inline RankedTensorType packedPayloadType(RankedTensorType type,
                                          int64_t perWord) {
  return RankedTensorType::get({staticWords(type, perWord)},
                               IntegerType::get(type.getContext(), 32));
}

/// Whether buildPackedDecode decodes `type` per element when asked
/// (LoweringOptions::perElementDecode): CPU, static shapes.
inline bool packedDecodesPerElement(RankedTensorType type,
                                    const LoweringOptions &options) {
  return options.target == LoweringTarget::CPU && type.hasStaticShape();
}

using mlir::act::detail::toF32;

using mlir::act::detail::fromF32;

using mlir::act::detail::i32Const;
using mlir::act::detail::loadStat;
using mlir::act::detail::storeStat;

inline Value f32Const(OpBuilder &b, Location loc, float v) {
  return arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(v));
}

} // namespace mlir::act

/// The payload and metadata of `input` under #act.quant `encoding`
/// (EncodingQuant.cpp; #act.division's residual quantization reuses it);
/// `firstTile` (null: 0) when `input` is a piece of the tensor encoded.
mlir::SmallVector<mlir::Value>
buildQuantEncode(mlir::act::QuantEncodingAttr encoding, mlir::OpBuilder &b,
                 mlir::Location loc, mlir::Value input, mlir::Value seed,
                 int64_t id, mlir::Value firstTile,
                 const mlir::act::LoweringOptions &options);

/// How many values #act.float `encoding`'s storage `payload` holds: its
/// elements (byte arrays), or its words times the values a word packs (at
/// least the count encoded, and laid out as it is; EncodingFloat.cpp).
mlir::Value getFloatStorageCapacity(mlir::act::FloatEncodingAttr encoding,
                                    mlir::OpBuilder &b, mlir::Location loc,
                                    mlir::Value payload);
/// Value `k` (index) of the `count` values stored as #act.float `encoding`
/// in `payload`, decoded to `elementType` (one read: a gather in a
/// per-element decode, #act.sparse's values).
mlir::Value buildFloatElementDecode(mlir::act::FloatEncodingAttr encoding,
                                    mlir::OpBuilder &b, mlir::Location loc,
                                    mlir::Value payload, mlir::Value k,
                                    mlir::Value count, mlir::Type elementType);

#endif // ACT_CONVERSION_ACTTOLINALG_ENCODINGMODEL_H
