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

// Readers through other maps: a 2x2 max pool's backward reads each index
// 4 times (n, c, h floordiv 2, w floordiv 2): it decodes for itself. A
// 3x3 convolution written as a generic would decode each element 9 times:
// it shares the whole decode. A batch matmul reading the decoded value
// through a transpose that keeps the batch first decodes its own (per
// element, so act-chunk-batch can decode it a chunk at a time).
// CHECK-LABEL: func.func @other_readers
// CHECK:       %[[IDX:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x3x3xi32>)
// CHECK:       linalg.generic {{.*}} ins(%[[IDX]], %{{.*}} : tensor<2x4x3x3xi32>, tensor<2x4x3x3xf32>) outs(%{{.*}} : tensor<2x4x6x6xf32>)
// CHECK:       scf.forall
// CHECK:       %[[WHOLE:.*]] = tensor.expand_shape {{.*}} into tensor<2x4x8x8xf32>
// CHECK:       linalg.generic {{.*}} ins(%[[WHOLE]], %{{.*}} : tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>)
// CHECK:       %[[Q:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8x16xf32>)
// CHECK:       linalg.transpose ins(%[[Q]] : tensor<4x8x16xf32>)
#pool = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 floordiv 2, d3 floordiv 2)>
#img = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#win = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#wt = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @other_readers(%i: !act.encoded<tensor<2x4x3x3xi32>, #act.index<bits = 2>>, %dy: tensor<2x4x3x3xf32>, %x: !act.encoded<tensor<2x4x8x8xf32>, #act.quant<bits = 4>>, %w: tensor<4x4x3x3xf32>, %q: !act.encoded<tensor<4x8x16xf32>, #act.quant<bits = 4>>, %k: tensor<4x8x16xf32>) -> (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<4x8x8xf32>) {
  %z = arith.constant 0.0 : f32
  %c2 = arith.constant 2 : index
  %di = act.decode %i : !act.encoded<tensor<2x4x3x3xi32>, #act.index<bits = 2>> -> tensor<2x4x3x3xi32>
  %e0 = tensor.empty() : tensor<2x4x6x6xf32>
  %dx = linalg.generic {indexing_maps = [#pool, #pool, #img], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%di, %dy : tensor<2x4x3x3xi32>, tensor<2x4x3x3xf32>) outs(%e0 : tensor<2x4x6x6xf32>) {
  ^bb0(%at: i32, %g: f32, %o: f32):
    %h = linalg.index 2 : index
    %wi = linalg.index 3 : index
    %hr = arith.remui %h, %c2 : index
    %wr = arith.remui %wi, %c2 : index
    %hh = arith.muli %hr, %c2 : index
    %pos = arith.addi %hh, %wr : index
    %p = arith.index_cast %pos : index to i32
    %hit = arith.cmpi eq, %at, %p : i32
    %r = arith.select %hit, %g, %z : f32
    linalg.yield %r : f32
  } -> tensor<2x4x6x6xf32>
  %dxq = act.decode %x : !act.encoded<tensor<2x4x8x8xf32>, #act.quant<bits = 4>> -> tensor<2x4x8x8xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e0 : tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  %conv = linalg.generic {indexing_maps = [#win, #wt, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%dxq, %w : tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) outs(%f1 : tensor<2x4x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x6x6xf32>
  %dq = act.decode %q : !act.encoded<tensor<4x8x16xf32>, #act.quant<bits = 4>> -> tensor<4x8x16xf32>
  %et = tensor.empty() : tensor<4x16x8xf32>
  %qt = linalg.transpose ins(%dq : tensor<4x8x16xf32>) outs(%et : tensor<4x16x8xf32>) permutation = [0, 2, 1]
  %e2 = tensor.empty() : tensor<4x8x8xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %s = linalg.batch_matmul ins(%k, %qt : tensor<4x8x16xf32>, tensor<4x16x8xf32>) outs(%f2 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  return %dx, %conv, %s : tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<4x8x8xf32>
}
