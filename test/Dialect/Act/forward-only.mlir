// act-forward-only: a joint step keeps the listed results (default: the
// loss); what only the dropped ones needed, the backward, is erased, and
// nothing is saved any more (act.compile's step under torch.no_grad()).
// RUN: act-opt %s -act-forward-only | FileCheck %s
// RUN: act-opt %s "-act-forward-only=keep=0,2" | FileCheck %s --check-prefix=KEEP
// RUN: not act-opt %s "-act-forward-only=keep=5" 2>&1 | FileCheck %s --check-prefix=BAD
// An exported step: the forward's loss, no saved value, the same loss.
// RUN: act-opt %act_src/examples/mlp.mlir -act-forward-only -act-memory-report=table=- -o %t.mlir 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: act-run %t.mlir | FileCheck %s --check-prefix=LOSS
// RUN: act-run %act_src/examples/mlp.mlir | FileCheck %s --check-prefix=LOSS

// CHECK-LABEL: func.func @step
// CHECK-SAME:  -> (f32 {act.loss})
// CHECK:       linalg.mul ins(%arg0, %arg1
// CHECK-NOT:   linalg.mul
// CHECK:       return %{{.*}} : f32
// KEEP-LABEL:  func.func @step
// KEEP-SAME:   -> (f32 {act.loss}, tensor<4xf32>)
// KEEP-COUNT-1: linalg.mul
// BAD: error: act-forward-only: @step has 3 results, no result 5
// REPORT: saved activations: 0 values, 0 -> 0 bytes
// LOSS: loss: -1.67
func.func @step(%x: tensor<4xf32>, %w: tensor<4xf32>) -> (f32 {act.loss}, tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.mul ins(%x, %w : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %z = tensor.empty() : tensor<f32>
  %c0 = arith.constant 0.0 : f32
  %zf = linalg.fill ins(%c0 : f32) outs(%z : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%y : tensor<4xf32>) outs(%zf : tensor<f32>) dimensions = [0]
    (%a: f32, %b: f32) {
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
    }
  %loss = tensor.extract %s[] : tensor<f32>
  // The "backward": read by the dropped result 1 only.
  %g = linalg.mul ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %loss, %g, %y : f32, tensor<4xf32>, tensor<4xf32>
}
