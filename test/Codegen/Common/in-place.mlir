// RUN: act-opt %s -split-input-file -act-in-place | FileCheck %s
// RUN: act-opt %s -split-input-file -act-in-place -one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// ReLU's backward writes into the gradient it consumes (which dies there),
// and reads it as its init; the mask is not the result's type.
// CHECK-LABEL: func.func @dies
// CHECK:       %[[G:.*]] = linalg.generic
// CHECK:       linalg.generic {{.*}} ins(%{{.*}} : tensor<16x32xi1>) outs(%[[G]] : tensor<16x32xf32>)
// CHECK-NEXT:  ^bb0(%[[M:.*]]: i1, %[[OUT:.*]]: f32):
// CHECK-NEXT:    arith.select %[[M]], %[[OUT]]
// One buffer for both: the select writes where the product was.
// BUF-LABEL: func.func @dies
// BUF-COUNT-1: memref.alloc
// BUF-NOT:     memref.alloc
// BUF:         return
func.func @dies(%a: tensor<16x32xf32>, %b: tensor<16x32xf32>, %m: tensor<16x32xi1>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x32xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e0 : tensor<16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<16x32xf32>
  %e1 = tensor.empty() : tensor<16x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %m : tensor<16x32xf32>, tensor<16x32xi1>) outs(%e1 : tensor<16x32xf32>) {
  ^bb0(%x: f32, %keep: i1, %o: f32):
    %s = arith.select %keep, %x, %zero : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// Not chosen: an input read again later, a function argument, a
// broadcast operand, and a slice of another tensor. Through a reshape
// whose source dies too: chosen.
// CHECK-LABEL: func.func @kept
// CHECK:       %[[G:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<16x32xf32>)
// CHECK:       %[[E:.*]] = tensor.empty() : tensor<16x32xf32>
// CHECK:       linalg.generic {{.*}} ins(%[[G]], %{{.*}}, %{{.*}} : {{.*}}) outs(%[[E]] : tensor<16x32xf32>)
// CHECK:       linalg.generic {indexing_maps = [#{{.*}}], {{.*}} outs(%[[G]] : tensor<16x32xf32>)
// CHECK:       %[[E3:.*]] = tensor.empty() : tensor<16x32xf32>
// CHECK:       linalg.generic {{.*}} ins(%arg0 : tensor<16x32xf32>) outs(%[[E3]] : tensor<16x32xf32>)
// CHECK:       %[[V:.*]] = tensor.expand_shape
// CHECK:       linalg.generic {{.*}} outs(%[[V]] : tensor<2x8x32xf32>)
func.func @kept(%a: tensor<16x32xf32>, %row: tensor<32xf32>, %big: tensor<32x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<2x8x32xf32>) {
  %e0 = tensor.empty() : tensor<16x32xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<16x32xf32>) outs(%e0 : tensor<16x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<16x32xf32>
  %slice = tensor.extract_slice %big[0, 0] [16, 32] [1, 1] : tensor<32x32xf32> to tensor<16x32xf32>
  %e1 = tensor.empty() : tensor<16x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %row, %slice : tensor<16x32xf32>, tensor<32xf32>, tensor<16x32xf32>) outs(%e1 : tensor<16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %q = arith.addf %p, %z : f32
    linalg.yield %q : f32
  } -> tensor<16x32xf32>
  // %g is read here, after %r: %r may not overwrite it. %g dies here.
  %e2 = tensor.empty() : tensor<16x32xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x32xf32>) outs(%e2 : tensor<16x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<16x32xf32>
  %e3 = tensor.empty() : tensor<16x32xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<16x32xf32>) outs(%e3 : tensor<16x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<16x32xf32>
  %v = tensor.expand_shape %t [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %e4 = tensor.empty() : tensor<2x8x32xf32>
  %u = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<2x8x32xf32>) outs(%e4 : tensor<2x8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<2x8x32xf32>
  return %r, %s, %a, %u : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<2x8x32xf32>
}
