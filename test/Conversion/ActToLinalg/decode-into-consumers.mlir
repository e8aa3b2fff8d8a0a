// RUN: act-opt %s -convert-act-to-linalg=decode-into-consumers=true | FileCheck %s
// RUN: act-opt %s -convert-act-to-linalg=decode-into-consumers=true -act-fuse-elementwise | FileCheck %s --check-prefix=FUSED
// RUN: act-opt %s -convert-act-to-linalg | FileCheck %s --check-prefix=SHARED
// RUN: act-opt %s -convert-act-to-linalg="target=gpu-emulated decode-into-consumers=true" | FileCheck %s --check-prefix=SHARED

// A decoded value read by an elementwise generic (a product), by a reduction
// that also reads %g (a sum of products: its map is a permutation of its
// loops and %g sizes every loop), by a reduction of the decoded value alone
// and by a matmul. With decode-into-consumers, the first two get a decode of
// their own just before them: one parallel generic over tensor<8x200xf32>
// in which each element reads its word (tiles of 128 elements, the last one
// partial: 1600 = 12 x 128 + 64) and its group's row of the flattened
// metadata. The sum of %d alone would lose its loop sizes if fused (the
// decode has no input), so it shares the chunked decode with the matmul.
// CHECK-LABEL: func.func @readers
// CHECK-SAME: (%[[WORDS:.*]]: tensor<200xi32>, %[[META:.*]]: tensor<7x2xf32>, %[[G:.*]]: tensor<8x200xf32>, %[[W:.*]]: tensor<200x4xf32>)
// CHECK:       scf.forall
// CHECK:       %[[WHOLE:.*]] = tensor.expand_shape {{.*}} into tensor<8x200xf32>
// CHECK:       %[[FLAT1:.*]] = tensor.collapse_shape %[[META]] {{\[}}[0, 1]] : tensor<7x2xf32> into tensor<14xf32>
// CHECK:       %[[D1:.*]] = linalg.generic {indexing_maps = [#{{.*}}], iterator_types = ["parallel", "parallel"]} outs(%{{.*}} : tensor<8x200xf32>)
// CHECK-DAG:     linalg.index 0
// CHECK-DAG:     linalg.index 1
// CHECK:         tensor.extract %[[WORDS]]
// CHECK:         tensor.extract %[[FLAT1]]
// CHECK:         tensor.extract %[[FLAT1]]
// CHECK:         math.fma
// CHECK:       linalg.generic {{.*}} ins(%[[D1]], %[[G]] : tensor<8x200xf32>, tensor<8x200xf32>)
// CHECK:       %[[FLAT2:.*]] = tensor.collapse_shape %[[META]]
// CHECK:       %[[D2:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x200xf32>)
// CHECK:       linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[D2]], %[[G]] : tensor<8x200xf32>, tensor<8x200xf32>)
// CHECK:       linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[WHOLE]] : tensor<8x200xf32>)
// CHECK:       linalg.matmul ins(%[[WHOLE]], %[[W]] : tensor<8x200xf32>, tensor<200x4xf32>)

// After act-fuse-elementwise the product and the first sum read the codes
// themselves: no decoded tensor<8x200xf32> is left for them.
// FUSED-LABEL: func.func @readers
// FUSED:       linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<8x200xf32>) outs
// FUSED:         tensor.extract
// FUSED:         math.fma
// FUSED:         arith.mulf
// FUSED:       linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<8x200xf32>) outs
// FUSED:         tensor.extract
// FUSED:         math.fma
// FUSED:         arith.mulf
// FUSED:         arith.addf
// FUSED:       linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%expanded : tensor<8x200xf32>)
// FUSED-NOT:     tensor.extract
// FUSED:       linalg.matmul ins(%expanded,

// Without the option (and on the GPU targets, whose decode kernels stay
// whole) every reader shares one decode.
// SHARED-LABEL: func.func @readers
// SHARED-NOT:   tensor<7x2xf32> into tensor<14xf32>
// SHARED:       %[[D:.*]] = tensor.expand_shape {{.*}} into tensor<8x200xf32>
// SHARED-NOT:   tensor<7x2xf32> into tensor<14xf32>
// SHARED:       linalg.generic {{.*}} ins(%[[D]], %{{.*}} : tensor<8x200xf32>, tensor<8x200xf32>)
// SHARED:       linalg.generic {{.*}} ins(%[[D]], %{{.*}} : tensor<8x200xf32>, tensor<8x200xf32>)
// SHARED:       linalg.generic {{.*}} ins(%[[D]] : tensor<8x200xf32>)
// SHARED:       linalg.matmul ins(%[[D]],
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @readers(%q: !act.encoded<tensor<8x200xf32>, #act.quant<bits = 4>>, %g: tensor<8x200xf32>, %w: tensor<200x4xf32>) -> (tensor<8x200xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>) {
  %d = act.decode %q : !act.encoded<tensor<8x200xf32>, #act.quant<bits = 4>> -> tensor<8x200xf32>
  %e = tensor.empty() : tensor<8x200xf32>
  %p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%d, %g : tensor<8x200xf32>, tensor<8x200xf32>) outs(%e : tensor<8x200xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<8x200xf32>
  %z = arith.constant 0.0 : f32
  %r0 = tensor.empty() : tensor<8xf32>
  %r1 = linalg.fill ins(%z : f32) outs(%r0 : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #row], iterator_types = ["parallel", "reduction"]} ins(%d, %g : tensor<8x200xf32>, tensor<8x200xf32>) outs(%r1 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %t = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%d : tensor<8x200xf32>) outs(%r1 : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %c0 = tensor.empty() : tensor<8x4xf32>
  %c1 = linalg.fill ins(%z : f32) outs(%c0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c = linalg.matmul ins(%d, %w : tensor<8x200xf32>, tensor<200x4xf32>) outs(%c1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %p, %r, %t, %c : tensor<8x200xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>
}
