// RUN: act-opt %s -act-memory-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: act-opt %s -act-insert-encode-decode | FileCheck %s
// A saved value the backward compares for equality with another value (the
// gradient mask of amax: grad * (h == max) / count) is not encoded: a
// lossy encoding changes the comparison (no decoded element equals the
// exact maximum: count 0, NaN gradients; seen on a model whose features
// ended in x.amax((2, 3)) at 4 bits). A comparison with a constant (a sign
// test) is no such use: @joint in insert-encode-decode.mlir.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// REPORT: 0  linalg.matmul {{.*}} compared-exactly none
// CHECK-LABEL: func.func @amax_step
// CHECK-NOT: act.encode
// CHECK: return
func.func @amax_step(%x: tensor<16x64xf32>, %w: tensor<64x64xf32>) -> (f32 {act.loss}, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %h = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<16x64xf32>) -> tensor<16x64xf32>
  // The forward: the maximum of each row, summed.
  %em = tensor.empty() : tensor<16xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%em : tensor<16xf32>) -> tensor<16xf32>
  %m = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : tensor<16x64xf32>) outs(%m0 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.maximumf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<16xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%m : tensor<16xf32>) outs(%s1 : tensor<f32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %t = arith.addf %in, %init : f32
      linalg.yield %t : f32
    }
  %loss = tensor.extract %s[] : tensor<f32>
  // The backward: amax's mask, h == max.
  %edh = tensor.empty() : tensor<16x64xf32>
  %dh = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h, %m : tensor<16x64xf32>, tensor<16xf32>) outs(%edh : tensor<16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.cmpf oeq, %a, %b : f32
    %v = arith.select %p, %one, %zero : f32
    linalg.yield %v : f32
  } -> tensor<16x64xf32>
  %ew = tensor.empty() : tensor<64x64xf32>
  %zw = linalg.fill ins(%zero : f32) outs(%ew : tensor<64x64xf32>) -> tensor<64x64xf32>
  %xt0 = tensor.empty() : tensor<64x16xf32>
  %xt = linalg.transpose ins(%x : tensor<16x64xf32>) outs(%xt0 : tensor<64x16xf32>) permutation = [1, 0]
  %dw = linalg.matmul ins(%xt, %dh : tensor<64x16xf32>, tensor<16x64xf32>) outs(%zw : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %loss, %dw : f32, tensor<64x64xf32>
}
