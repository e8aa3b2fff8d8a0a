//===- ActDialect.cpp - act dialect and its type --------------------------===//

#include "act/Dialect/Act/IR/Act.h"
#include "act/Dialect/Act/IR/EncodingLowering.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::act;

#include "act/Dialect/Act/IR/ActDialect.cpp.inc"

// The lowering interface the dialect defines and promises; its models are
// attached by the conversion (registerEncodingLoweringExternalModels).
#include "act/Dialect/Act/IR/EncodingLowering.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "act/Dialect/Act/IR/ActTypes.cpp.inc"

void ActDialect::initialize() {
  registerAttributes();
  addTypes<
#define GET_TYPEDEF_LIST
#include "act/Dialect/Act/IR/ActTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "act/Dialect/Act/IR/ActOps.cpp.inc"
      >();
  // How encodings lower is implemented by the conversion (lib/Conversion/
  // ActToLinalg); using it without registering the models is an error that
  // names them, not a silent miss.
  declarePromisedInterfaces<EncodingLoweringAttrInterface, QuantEncodingAttr,
                            RuntimeQuantEncodingAttr, FloatEncodingAttr,
                            MaskEncodingAttr, FewBitEncodingAttr,
                            IndexEncodingAttr, SparseEncodingAttr,
                            DivisionEncodingAttr, RecomputeEncodingAttr>();
}

LogicalResult EncodedType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  RankedTensorType tensorType,
                                  EncodingAttrInterface encoding) {
  if (!encoding)
    return emitError() << "expected an encoding attribute";
  return encoding.verifyTensorType(tensorType, emitError);
}
