//===- TransposedConvolution.h - a weight gradient's convolution input ----===//
//
// A weight gradient computed as a convolution reads its activation with
// batch and channels swapped (the batch is its reduction channel), often
// zero-padded first. convert-act-to-linalg routes such a decode to a
// per-element form and act-tile-decoded-convolutions decodes it by chunks
// of the batch; both recognize the reader here.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_SUPPORT_TRANSPOSEDCONVOLUTION_H
#define ACT_SUPPORT_TRANSPOSEDCONVOLUTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <optional>

namespace mlir::act {

/// The ops between a value and the convolution reading it transposed.
struct TransposedConvolutionInput {
  tensor::PadOp pad; // null when unpadded
  linalg::TransposeOp transpose;
  linalg::Conv2DNchwFchwOp conv;
};

/// The convolution `use` feeds as input 0, through a `tensor.pad` whose
/// only use it is (optional) and a `linalg.transpose` [1, 0, 2, 3] whose
/// only use it is.
inline std::optional<TransposedConvolutionInput>
getTransposedConvolutionInput(OpOperand &use) {
  TransposedConvolutionInput input;
  Operation *reader = use.getOwner();
  if ((input.pad = dyn_cast<tensor::PadOp>(reader))) {
    if (!input.pad->hasOneUse())
      return std::nullopt;
    reader = *input.pad->getUsers().begin();
  }
  input.transpose = dyn_cast<linalg::TransposeOp>(reader);
  if (!input.transpose || !input.transpose->hasOneUse() ||
      input.transpose.getPermutation() != ArrayRef<int64_t>{1, 0, 2, 3})
    return std::nullopt;
  input.conv =
      dyn_cast<linalg::Conv2DNchwFchwOp>(*input.transpose->getUsers().begin());
  if (!input.conv || input.conv.getInputs()[0] != input.transpose->getResult(0))
    return std::nullopt;
  return input;
}

} // namespace mlir::act

#endif // ACT_SUPPORT_TRANSPOSEDCONVOLUTION_H
