//===- EncodingLoweringImpl.cpp - how act's encodings lower ---------------===//
//
// The EncodingLoweringAttrInterface models of act's encodings: each builds
// its explicit storage types and its encode/decode IR from the building
// blocks of ActLowering.h, one file per encoding (Encoding<Name>.cpp, the
// model declared in EncodingModel.h). The dialect defines and promises the
// interface (act/Dialect/Act/IR/EncodingLowering.td); this file attaches the
// models (registerEncodingLoweringExternalModels), as upstream's
// BufferizableOpInterfaceImpl.cpp files do for their dialects. A new encoding:
// its attribute, its Encoding<Name>.cpp, one line in EncodingModel.h and one
// here.
//
//===----------------------------------------------------------------------===//

#include "act/Conversion/ActToLinalg/EncodingLoweringImpl.h"

#include "EncodingModel.h"

#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::act;

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void mlir::act::registerEncodingLoweringExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, ActDialect *) {
    QuantEncodingAttr::attachInterface<EncodingModel<QuantEncodingAttr>>(*ctx);
    RuntimeQuantEncodingAttr::attachInterface<
        EncodingModel<RuntimeQuantEncodingAttr>>(*ctx);
    FloatEncodingAttr::attachInterface<EncodingModel<FloatEncodingAttr>>(*ctx);
    MaskEncodingAttr::attachInterface<EncodingModel<MaskEncodingAttr>>(*ctx);
    FewBitEncodingAttr::attachInterface<EncodingModel<FewBitEncodingAttr>>(
        *ctx);
    IndexEncodingAttr::attachInterface<EncodingModel<IndexEncodingAttr>>(*ctx);
    SparseEncodingAttr::attachInterface<EncodingModel<SparseEncodingAttr>>(
        *ctx);
    DivisionEncodingAttr::attachInterface<EncodingModel<DivisionEncodingAttr>>(
        *ctx);
    RecomputeEncodingAttr::attachInterface<
        EncodingModel<RecomputeEncodingAttr>>(*ctx);
  });
}
