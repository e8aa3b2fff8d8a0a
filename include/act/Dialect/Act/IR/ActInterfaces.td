//===- ActInterfaces.td - encoding attribute interface -----*- tablegen -*-===//
//
// The one interface every act encoding implements: what is true of the IR
// (which tensors it holds, what it decodes to, its exact storage). Passes see
// encodings only through it. How an encoding lowers is a separate interface,
// EncodingLoweringAttrInterface (EncodingLowering.td, beside this file),
// which the dialect promises and the conversion implements.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_DIALECT_ACT_IR_ACTINTERFACES_TD
#define ACT_DIALECT_ACT_IR_ACTINTERFACES_TD

include "mlir/IR/OpBase.td"

def Act_EncodingAttrInterface : AttrInterface<"EncodingAttrInterface"> {
  let cppNamespace = "::mlir::act";
  let description = [{
    An encoding of a tensor held between its last forward use and its first
    backward use. Storage is laid out over the row-major flattened element
    index; sizes are exact (see docs/Encodings.md). Its lowering is
    EncodingLoweringAttrInterface, attached by the conversion.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{
        Checks that tensors of `type` can be held in this encoding; reports
        through `emitError` and fails otherwise.
      }],
      "::llvm::LogicalResult", "verifyTensorType",
      (ins "::mlir::RankedTensorType":$type,
           "::llvm::function_ref<::mlir::InFlightDiagnostic()>":$emitError)>,
    InterfaceMethod<
      /*desc=*/"Returns the tensor type that `act.decode` yields for `type`.",
      "::mlir::RankedTensorType", "getDecodedType",
      (ins "::mlir::RankedTensorType":$type)>,
    InterfaceMethod<
      /*desc=*/[{
        Returns true if decoding reproduces exactly what the encoding promises
        (the value itself, or the predicate for masks) for every value of
        `elementType`.
      }],
      "bool", "isLossless", (ins "::mlir::Type":$elementType)>,
    InterfaceMethod<
      /*desc=*/[{
        Returns the exact storage of `numElements` elements of `elementType`:
        packed payload, per-group metadata and padding, in bytes.
      }],
      "::mlir::act::StorageLayout", "getStorageLayout",
      (ins "int64_t":$numElements, "::mlir::Type":$elementType)>,
    InterfaceMethod<
      /*desc=*/"True if encoding draws random numbers (needs a seed).",
      "bool", "isStochastic">,
    InterfaceMethod<
      /*desc=*/[{
        Returns the exact storage of a tensor of static `shape` and
        `elementType`. By default the storage depends only on the element
        count (getStorageLayout(n, elementType)); encodings whose storage
        depends on the shape itself (#act.division's block averages) override
        it.
      }],
      "::mlir::act::StorageLayout", "getShapedStorageLayout",
      (ins "::llvm::ArrayRef<int64_t>":$shape, "::mlir::Type":$elementType),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return $_attr.getStorageLayout(
            *::mlir::act::getSizedElementCount(shape), elementType);
      }]>,
    InterfaceMethod<
      /*desc=*/[{
        The bit width `b` of the quantizer whose noise this encoding adds:
        its compression variance is modeled as `c * S(b)`, `S(b) =
        (2^b - 1)^-2`, with `c` the sensitivity `act-run --sensitivity`
        measures with this encoding (GACT's model; docs/Profile.md).
        std::nullopt for encodings without such a quantizer.
      }],
      "std::optional<unsigned>", "getQuantizerBits", (ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/"return std::nullopt;">,
    InterfaceMethod<
      /*desc=*/[{
        This encoding with its quantizer at `bits` bits, every other
        parameter kept: the options act-allocate-bits chooses from. Null when
        the encoding has no quantizer or does not allow `bits`.
      }],
      "::mlir::act::EncodingAttrInterface", "withQuantizerBits",
      (ins "unsigned":$bits),
      /*methodBody=*/"",
      /*defaultImplementation=*/"return nullptr;">,
    InterfaceMethod<
      /*desc=*/[{
        True if the encoding's bit width is chosen at run time: its
        `act.encode` takes a `bits` operand (#act.runtime_quant).
      }],
      "bool", "hasRuntimeBits", (ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/"return false;">,
  ];
  let extraSharedClassDeclaration = [{
    /// Storage of a whole tensor; std::nullopt when its shape is not static
    /// or too large to size (act::kMaxSizedElements).
    std::optional<::mlir::act::StorageLayout>
    getStorageLayout(::mlir::RankedTensorType type) const {
      if (!type.hasStaticShape())
        return std::nullopt;
      std::optional<int64_t> n =
          ::mlir::act::getSizedElementCount(type.getShape());
      if (!n)
        return std::nullopt;
      return $_attr.getShapedStorageLayout(type.getShape(),
                                           type.getElementType());
    }
  }];
}

#endif // ACT_DIALECT_ACT_IR_ACTINTERFACES_TD
