//===- ActOps.cpp - act operations ----------------------------------------===//

#include "act/Dialect/Act/IR/Act.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::act;

#define GET_OP_CLASSES
#include "act/Dialect/Act/IR/ActOps.cpp.inc"

LogicalResult EncodeOp::verify() {
  auto encoded = cast<EncodedType>(getResult().getType());
  if (encoded.getTensorType() != getInput().getType())
    return emitOpError("result holds ")
           << encoded.getTensorType() << " but the input is "
           << getInput().getType();
  return success();
}

LogicalResult DecodeOp::verify() {
  auto encoded = cast<EncodedType>(getInput().getType());
  if (isa<RecomputeEncodingAttr>(encoded.getEncoding()))
    return emitOpError("cannot decode ")
           << encoded.getEncoding()
           << ": nothing is stored; the backward recomputes the value "
              "(act.recomputed)";
  RankedTensorType expected = encoded.getDecodedType();
  if (getResult().getType() != expected)
    return emitOpError("result type ")
           << getResult().getType() << " does not match what "
           << encoded.getEncoding() << " decodes to: " << expected;
  return success();
}

LogicalResult FakeQuantOp::verify() {
  if (!isa<FloatType>(getInput().getType().getElementType()))
    return emitOpError("quantizes floating-point tensors, not ")
           << getInput().getType();
  if (getId().has_value() != bool(getSeed()))
    return emitOpError("rounds stochastically with both an id and a seed, "
                       "not one of them");
  return success();
}

LogicalResult RecomputedOp::verify() {
  auto encoded = cast<EncodedType>(getToken().getType());
  if (!isa<RecomputeEncodingAttr>(encoded.getEncoding()))
    return emitOpError("stands for a value encoded #act.recompute, not ")
           << encoded.getEncoding();
  if (getValue().getType() != encoded.getTensorType())
    return emitOpError("value type ")
           << getValue().getType() << " is not the saved value's, "
           << encoded.getTensorType();
  return success();
}
