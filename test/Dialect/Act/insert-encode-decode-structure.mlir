// Module structures act does not analyze are said, not ignored silently, and
// never turned into invalid IR: a public function called from another is a
// helper, not a step (act.seeds used to be added to it but not to its call
// site); steps in a nested module are not analyzed.
// RUN: act-opt %s -act-insert-encode-decode -split-input-file -verify-diagnostics | FileCheck %s

// CHECK: func.func @helper(%{{.*}}: tensor<64x64xf32>) -> tensor<64x64xf32>
// CHECK: call @helper(%{{.*}}) : (tensor<64x64xf32>) -> tensor<64x64xf32>
// expected-warning @+1 {{act: @helper is called from within the module, so it is not treated as a training step (make it private to silence this)}}
func.func @helper(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %t = math.tanh %x : tensor<64x64xf32>
  return %t : tensor<64x64xf32>
}
func.func @step(%x: tensor<64x64xf32>) -> (tensor<f32> {act.loss}, tensor<64x64xf32>) {
  %t = func.call @helper(%x) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %c0 = arith.constant 0.0 : f32
  %se = tensor.empty() : tensor<f32>
  %s0 = linalg.fill ins(%c0 : f32) outs(%se : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%t : tensor<64x64xf32>) outs(%s0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %init: f32) {
      %a = arith.addf %in, %init : f32
      linalg.yield %a : f32
    }
  %g = arith.mulf %t, %t : tensor<64x64xf32>
  return %s, %g : tensor<f32>, tensor<64x64xf32>
}

// -----

// CHECK: module @inner
module {
  // expected-warning @+1 {{act: functions in a nested module are not analyzed; act's passes work on the top-level module's training steps}}
  module @inner {
    func.func @step(%x: tensor<4xf32>) -> (tensor<f32> {act.loss}) {
      %c0 = arith.constant 0.0 : f32
      %se = tensor.empty() : tensor<f32>
      %s0 = linalg.fill ins(%c0 : f32) outs(%se : tensor<f32>) -> tensor<f32>
      return %s0 : tensor<f32>
    }
  }
}
