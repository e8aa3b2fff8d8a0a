// RUN: act-opt %s -act-fuse-elementwise | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>

// Softmax's backward: sum(dP * P) reads dP and P in the reduction; the
// product is never a tensor. A producer with a second use stays.
// CHECK-LABEL: func.func @softmax_backward
// CHECK-NOT:   linalg.generic
// CHECK:       linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg0, %arg1 : tensor<64x64xf32>, tensor<64x64xf32>) outs(%{{.*}} : tensor<64xf32>)
// CHECK:         arith.mulf
// CHECK:         arith.addf
// CHECK:       %[[K:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<64x64xf32>)
// CHECK:       linalg.generic {{.*}} ins(%[[K]] :
// CHECK:       return
func.func @softmax_backward(%dp: tensor<64x64xf32>, %p: tensor<64x64xf32>) -> (tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %t = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dp, %p : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<64x64xf32>
  %r0 = tensor.empty() : tensor<64xf32>
  %r = linalg.fill ins(%zero : f32) outs(%r0 : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%t : tensor<64x64xf32>) outs(%r : tensor<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %a = arith.addf %x, %acc : f32
    linalg.yield %a : f32
  } -> tensor<64xf32>
  %k = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dp : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<64x64xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%k : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<64x64xf32>
  return %s, %k, %u : tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}
