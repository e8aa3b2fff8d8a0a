//===- ActOps.cpp - act operations ----------------------------------------===//

#include "act/Dialect/Act/IR/Act.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::act;

/// act.encode's `id = N` and optional `, seed %s` and `, bits %b`, in that
/// order.
static ParseResult
parseIdSeedAndBits(OpAsmParser &parser, IntegerAttr &id,
                   std::optional<OpAsmParser::UnresolvedOperand> &seed,
                   std::optional<OpAsmParser::UnresolvedOperand> &bits) {
  int64_t value;
  if (parser.parseKeyword("id") || parser.parseEqual() ||
      parser.parseInteger(value))
    return failure();
  id = parser.getBuilder().getI64IntegerAttr(value);
  while (succeeded(parser.parseOptionalComma())) {
    std::optional<OpAsmParser::UnresolvedOperand> *slot = nullptr;
    if (!seed && !bits && succeeded(parser.parseOptionalKeyword("seed")))
      slot = &seed;
    else if (!bits && succeeded(parser.parseOptionalKeyword("bits")))
      slot = &bits;
    else
      return parser.emitError(parser.getCurrentLocation(),
                              bits   ? "expected ':'"
                              : seed ? "expected 'bits'"
                                     : "expected 'seed' or 'bits'");
    slot->emplace();
    if (parser.parseOperand(**slot))
      return failure();
  }
  return success();
}

static void printIdSeedAndBits(OpAsmPrinter &printer, Operation *,
                               IntegerAttr id, Value seed, Value bits) {
  printer << "id = " << id.getInt();
  if (seed)
    printer << ", seed " << seed;
  if (bits)
    printer << ", bits " << bits;
}

#define GET_OP_CLASSES
#include "act/Dialect/Act/IR/ActOps.cpp.inc"

LogicalResult EncodeOp::verify() {
  auto encoded = cast<EncodedType>(getResult().getType());
  if (encoded.getTensorType() != getInput().getType())
    return emitOpError("result holds ")
           << encoded.getTensorType() << " but the input is "
           << getInput().getType();
  bool runtimeBits = encoded.getEncoding().hasRuntimeBits();
  if (runtimeBits != bool(getBits()))
    return emitOpError() << encoded.getEncoding()
                         << (runtimeBits
                                 ? " takes its bit width at run time: a `bits` "
                                   "operand is needed"
                                 : " has a fixed bit width: no `bits` operand");
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
