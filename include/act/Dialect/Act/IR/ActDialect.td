//===- ActDialect.td - act dialect definition --------------*- tablegen -*-===//
//
// The act dialect: tensors held in encoded form between the forward and the
// backward pass of a training step.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_DIALECT_ACT_IR_ACTDIALECT_TD
#define ACT_DIALECT_ACT_IR_ACTDIALECT_TD

include "mlir/IR/OpBase.td"

def Act_Dialect : Dialect {
  let name = "act";
  let cppNamespace = "::mlir::act";
  let summary = "Activation-compressed training: encoded saved activations";
  let description = [{
    The `act` dialect models activations that the forward pass of a training
    step saves for the backward pass, stored in an encoded form between their
    last forward use and their first backward use.

    * `!act.encoded<tensor-type, encoding>` is a tensor held in encoded form.
    * `act.encode` turns a tensor into its encoded form; it carries the
      tensor's stable id, which the runtime's sensitivity profile and the bit
      allocator use to name it.
    * `act.decode` turns the encoded form back into what the encoding yields:
      the full tensor for lossy and lossless value encodings, a predicate
      (`i1` tensor) for masks.

    Every encoding is an attribute implementing `EncodingAttrInterface`:
    storage bytes for a shape, losslessness, and the decoded type. Passes work
    with encodings through that interface alone.
  }];
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

class Act_Op<string mnemonic, list<Trait> traits = []>
    : Op<Act_Dialect, mnemonic, traits>;

#endif // ACT_DIALECT_ACT_IR_ACTDIALECT_TD
