// RUN: act-opt %s -act-tile-decoded-convolutions=chunk-bytes=2048 | FileCheck %s
// RUN: act-opt %s -act-tile-decoded-convolutions | FileCheck %s --check-prefix=WHOLE
// RUN: act-opt %s -act-tile-decoded-convolutions="chunk-bytes=1024 max-unrolled=2" | FileCheck %s --check-prefix=LOOP

// A weight gradient dW = conv(transpose(pad(X)), transpose(dY)) whose X is
// a per-element decode (a generic without inputs; here one that reads a
// payload through its indices). X holds 8 images of 2 x 8 x 8 floats (512
// bytes each): with chunks of at most 2048 bytes, two chunks of 4 images
// (the largest divisor of the batch that fits). Each chunk
// decodes its images (batch index + 4 in the second), pads, transposes,
// and reads its slice of dY (static offsets) through a transpose of its
// own; the convolutions accumulate.
// CHECK-LABEL: func.func @weight_gradient
// CHECK-SAME:  (%[[P:.*]]: tensor<1024xf32>, %[[DY:.*]]: tensor<8x3x8x8xf32>)
// CHECK:       %[[D0:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x2x8x8xf32>)
// CHECK-NOT:     arith.addi %{{.*}}, %c4
// CHECK:       tensor.pad %[[D0]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK:       %[[T0:.*]] = linalg.transpose ins(%{{.*}} : tensor<4x2x10x10xf32>) outs(%{{.*}} : tensor<2x4x10x10xf32>) permutation = [1, 0, 2, 3]
// CHECK:       %[[S0:.*]] = tensor.extract_slice %[[DY]][0, 0, 0, 0] [4, 3, 8, 8] [1, 1, 1, 1]
// CHECK:       %[[G0:.*]] = linalg.transpose ins(%[[S0]] : tensor<4x3x8x8xf32>)
// CHECK:       %[[A0:.*]] = linalg.conv_2d_nchw_fchw {{.*}} ins(%[[T0]], %[[G0]] : tensor<2x4x10x10xf32>, tensor<3x4x8x8xf32>) outs(%{{.*}} : tensor<2x3x3x3xf32>)
// CHECK:       linalg.generic {{.*}} outs(%{{.*}} : tensor<4x2x8x8xf32>)
// CHECK:         %[[I:.*]] = linalg.index 0 : index
// CHECK:         arith.addi %[[I]], %c4
// CHECK:       tensor.extract_slice %[[DY]][4, 0, 0, 0] [4, 3, 8, 8] [1, 1, 1, 1]
// CHECK:       %[[A1:.*]] = linalg.conv_2d_nchw_fchw {{.*}} outs(%[[A0]] : tensor<2x3x3x3xf32>)
// CHECK:       return %[[A1]]
// Chunks of 2 images: 4 chunks, more than max-unrolled, are one loop whose
// body decodes images [i, i + 2) (the batch index shifted by the induction
// variable), pads, transposes, slices dY at i and accumulates: the IR does
// not grow with the batch.
// LOOP-LABEL: func.func @weight_gradient
// LOOP-SAME:  (%[[P:.*]]: tensor<1024xf32>, %[[DY:.*]]: tensor<8x3x8x8xf32>)
// LOOP-DAG:   %[[C0:.*]] = arith.constant 0 : index
// LOOP-DAG:   %[[C2:.*]] = arith.constant 2 : index
// LOOP-DAG:   %[[C8:.*]] = arith.constant 8 : index
// LOOP:       %[[R:.*]] = scf.for %[[IV:.*]] = %[[C0]] to %[[C8]] step %[[C2]] iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<2x3x3x3xf32>)
// LOOP:         linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x8x8xf32>)
// LOOP:           %[[I:.*]] = linalg.index 0 : index
// LOOP:           arith.addi %[[I]], %[[IV]]
// LOOP:         tensor.pad
// LOOP:         linalg.transpose ins(%{{.*}} : tensor<2x2x10x10xf32>)
// LOOP:         %[[S:.*]] = tensor.extract_slice %[[DY]][%[[IV]], 0, 0, 0] [2, 3, 8, 8] [1, 1, 1, 1]
// LOOP:         linalg.transpose ins(%[[S]] : tensor<2x3x8x8xf32>)
// LOOP:         %[[A:.*]] = linalg.conv_2d_nchw_fchw {{.*}} outs(%[[ACC]] : tensor<2x3x3x3xf32>)
// LOOP:         scf.yield %[[A]]
// LOOP-NOT:   linalg.conv_2d_nchw_fchw
// LOOP:       return %[[R]]
// With the default chunk (512 KB) the 4 KB input is one chunk: unchanged.
// WHOLE-LABEL: func.func @weight_gradient
// WHOLE-COUNT-1: linalg.conv_2d_nchw_fchw
// WHOLE-NOT:   linalg.conv_2d_nchw_fchw
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @weight_gradient(%p: tensor<1024xf32>, %dy: tensor<8x3x8x8xf32>) -> tensor<2x3x3x3xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x2x8x8xf32>
  %x = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e : tensor<8x2x8x8xf32>) {
  ^bb0(%o: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %h = linalg.index 2 : index
    %w = linalg.index 3 : index
    %c128 = arith.constant 128 : index
    %c64 = arith.constant 64 : index
    %c8 = arith.constant 8 : index
    %a = arith.muli %n, %c128 : index
    %b = arith.muli %c, %c64 : index
    %d = arith.muli %h, %c8 : index
    %s0 = arith.addi %a, %b : index
    %s1 = arith.addi %s0, %d : index
    %i = arith.addi %s1, %w : index
    %v = tensor.extract %p[%i] : tensor<1024xf32>
    linalg.yield %v : f32
  } -> tensor<8x2x8x8xf32>
  %xp = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %z : f32
  } : tensor<8x2x8x8xf32> to tensor<8x2x10x10xf32>
  %et = tensor.empty() : tensor<2x8x10x10xf32>
  %xt = linalg.transpose ins(%xp : tensor<8x2x10x10xf32>) outs(%et : tensor<2x8x10x10xf32>) permutation = [1, 0, 2, 3]
  %eg = tensor.empty() : tensor<3x8x8x8xf32>
  %gt = linalg.transpose ins(%dy : tensor<8x3x8x8xf32>) outs(%eg : tensor<3x8x8x8xf32>) permutation = [1, 0, 2, 3]
  %ew = tensor.empty() : tensor<2x3x3x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%ew : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  %dw = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%xt, %gt : tensor<2x8x10x10xf32>, tensor<3x8x8x8xf32>) outs(%f : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  return %dw : tensor<2x3x3x3xf32>
}
