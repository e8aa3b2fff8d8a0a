//===- EncodingLowering.td - how an encoding lowers --------*- tablegen -*-===//
//
// The lowering hooks of act's encodings, defined beside the dialect and kept
// out of its IR the way upstream keeps bufferization out of the tensor
// dialect: the dialect promises this interface for each encoding attribute,
// and the models that implement it live beside convert-act-to-linalg
// (lib/Conversion/ActToLinalg/Encoding<Name>.cpp), attached by
// registerEncodingLoweringExternalModels (EncodingLoweringImpl.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ACT_DIALECT_ACT_IR_ENCODINGLOWERING_TD
#define ACT_DIALECT_ACT_IR_ENCODINGLOWERING_TD

include "mlir/IR/OpBase.td"

def Act_EncodingLoweringAttrInterface
    : AttrInterface<"EncodingLoweringAttrInterface"> {
  let cppNamespace = "::mlir::act";
  let description = [{
    How an encoding (an attribute implementing EncodingAttrInterface) is
    lowered by convert-act-to-linalg: the tensors of its explicit storage
    (docs/Encodings.md) and the linalg/tensor/arith IR that fills and reads
    them, for the target in LoweringOptions.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{
        Appends the types of the explicit storage of a `type` tensor (see
        docs/Encodings.md): the packed payload words, then any metadata.
      }],
      "void", "getStorageTypes",
      (ins "::mlir::RankedTensorType":$type,
           "::llvm::SmallVectorImpl<::mlir::Type> &":$types)>,
    InterfaceMethod<
      /*desc=*/[{
        Builds the encoding of `input` into its explicit storage with
        linalg/tensor/arith ops on tensors; `seed` (i64, may be null for
        deterministic encodings) and `id` key the random stream; `bits`
        (i32) is the width of an encoding that takes it at run time (null
        for the others).
      }],
      "::llvm::SmallVector<::mlir::Value>", "buildEncode",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::Value":$input, "::mlir::Value":$seed,
           "::mlir::Value":$bits, "int64_t":$id,
           "const ::mlir::act::LoweringOptions &":$options)>,
    InterfaceMethod<
      /*desc=*/[{
        Builds the decoding of `storage` (as returned by buildEncode) into
        `decodedType`, whose dynamic dimensions are `dynamicSizes`.
      }],
      "::mlir::Value", "buildDecode",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::ValueRange":$storage,
           "::mlir::RankedTensorType":$decodedType,
           "::mlir::ValueRange":$dynamicSizes,
           "const ::mlir::act::LoweringOptions &":$options)>,
    InterfaceMethod<
      /*desc=*/[{
        Whether buildDecode of a `type` tensor, given
        `options.perElementDecode`, builds parallel generics in which each
        element reads its own codes (no sequential pass, no loop over
        chunks), ending in one over `type` itself: linalg's elementwise
        fusion then fuses the decode into an elementwise consumer.
      }],
      "bool", "decodesPerElement",
      (ins "::mlir::RankedTensorType":$type,
           "const ::mlir::act::LoweringOptions &":$options)>,
  ];
}

#endif // ACT_DIALECT_ACT_IR_ENCODINGLOWERING_TD
