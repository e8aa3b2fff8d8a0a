// Both pipelines lower the functions of the module they run on: a nested
// module is an error at its location (it used to crash act-cpu-pipeline in
// tensor.extract_slice's verifier), and the message's nested pipeline
// lowers it.
// RUN: not act-opt %s -act-cpu-pipeline 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: not act-opt %s -act-gpu-pipeline 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: act-opt %s --pass-pipeline='builtin.module(builtin.module(act-cpu-pipeline))' | FileCheck %s --check-prefix=NESTED

// NESTED: module @inner
// NESTED: llvm.func @rt
module {
  // CPU: nested-module.mlir:[[@LINE+2]]:3: error: act-cpu-pipeline: nested module @inner is not lowered
  // GPU: nested-module.mlir:[[@LINE+1]]:3: error: act-gpu-pipeline: nested module @inner is not lowered
  module @inner {
    func.func @rt(%x: tensor<1024xf32>) -> tensor<1024xf32> {
      %e = act.encode %x, id = 0 : tensor<1024xf32> -> !act.encoded<tensor<1024xf32>, #act.quant<bits = 4>>
      %d = act.decode %e : !act.encoded<tensor<1024xf32>, #act.quant<bits = 4>> -> tensor<1024xf32>
      return %d : tensor<1024xf32>
    }
  }
}
