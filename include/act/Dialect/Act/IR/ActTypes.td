//===- ActTypes.td - act types -----------------------------*- tablegen -*-===//

#ifndef ACT_DIALECT_ACT_IR_ACTTYPES_TD
#define ACT_DIALECT_ACT_IR_ACTTYPES_TD

include "act/Dialect/Act/IR/ActAttrs.td"
include "mlir/IR/AttrTypeBase.td"

def Act_EncodedType : TypeDef<Act_Dialect, "Encoded"> {
  let mnemonic = "encoded";
  let summary = "a tensor held in encoded form";
  let description = [{
    A value of `tensorType` stored in `encoding`. The encoding decides the
    storage (see `EncodingAttrInterface`) and what `act.decode` yields.

    ```mlir
    !act.encoded<tensor<64x256xf32>, #act.quant<bits = 4>>
    ```
  }];
  let parameters = (ins "::mlir::RankedTensorType":$tensorType,
                        "::mlir::act::EncodingAttrInterface":$encoding);
  let assemblyFormat = "`<` $tensorType `,` $encoding `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The tensor type `act.decode` yields.
    ::mlir::RankedTensorType getDecodedType() const {
      return getEncoding().getDecodedType(getTensorType());
    }
  }];
}

#endif // ACT_DIALECT_ACT_IR_ACTTYPES_TD
