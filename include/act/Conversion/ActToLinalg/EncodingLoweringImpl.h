//===- EncodingLoweringImpl.h - the encodings' lowering models --*- C++ -*-===//
//
// Registration of the EncodingLoweringAttrInterface models of act's
// encodings (the interface: act/Dialect/Act/IR/EncodingLowering.h), as
// upstream's <Dialect>/Transforms/BufferizableOpInterfaceImpl.h headers
// register theirs.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_CONVERSION_ACTTOLINALG_ENCODINGLOWERINGIMPL_H
#define ACT_CONVERSION_ACTTOLINALG_ENCODINGLOWERINGIMPL_H

namespace mlir {
class DialectRegistry;
namespace act {

/// Attaches the lowering models of act's encodings (the promised
/// EncodingLoweringAttrInterface) to their attributes.
void registerEncodingLoweringExternalModels(DialectRegistry &registry);

} // namespace act
} // namespace mlir

#endif // ACT_CONVERSION_ACTTOLINALG_ENCODINGLOWERINGIMPL_H
