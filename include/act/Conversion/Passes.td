//===- Passes.td - act conversions -------------------------*- tablegen -*-===//

#ifndef ACT_CONVERSION_PASSES_TD
#define ACT_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertActToLinalgPass : Pass<"convert-act-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower act.encode/act.decode to linalg on tensors with "
                "explicit storage";
  let description = [{
    Replaces every `!act.encoded<T, enc>` value by its explicit storage
    (`EncodingAttrInterface::getStorageTypes`: the packed 32-bit payload
    words, then per-group metadata, plus a `tensor<Dxindex>` of the dynamic
    dimensions when `T` has any), and every `act.encode` / `act.decode` by
    the linalg, tensor and arith ops its encoding builds
    (`buildEncode`/`buildDecode`). Function signatures, calls and returns
    that carry encoded values are converted 1:N.

    ```mlir
    %e = act.encode %x, id = 0 : tensor<1000xf32>
           -> !act.encoded<tensor<1000xf32>, #act.float<format = bf16>>
    // becomes
    %padded = tensor.pad %x low[0] high[0] { ... } : tensor<1000xf32> to tensor<1000xf32>
    %words = linalg.generic ... -> tensor<500xi32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect",
  ];
}

#endif // ACT_CONVERSION_PASSES_TD
