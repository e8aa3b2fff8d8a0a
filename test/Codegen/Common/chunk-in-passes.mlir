// act-chunk-in-passes: a backward stage, from the op that spreads a small
// batch tensor into a large one to its sums over the batch, computed one
// chunk of the batch at a time in one loop per level of batch reductions,
// each loop recomputing the batch-parallel ops it needs.
// RUN: act-opt %s -act-chunk-in-passes="chunk-bytes=1600" | FileCheck %s
// RUN: act-opt %s -act-chunk-in-passes="chunk-bytes=1600 max-passes=2" | FileCheck %s --check-prefix=TWO
// RUN: act-opt %s -act-chunk-in-passes="chunk-bytes=800" | FileCheck %s --check-prefix=SQUARE
// RUN: act-opt %s -act-chunk-in-passes="chunk-bytes=1600" -canonicalize -act-chunk-in-passes="chunk-bytes=1600" | FileCheck %s --check-prefix=AGAIN
// The same results but for float32 reassociation of the sums over the
// batch (act-run's own pipeline leaves these small tensors whole).
// RUN: rm -rf %t && mkdir -p %t
// RUN: act-opt %s -act-chunk-in-passes="chunk-bytes=1600" -o %t/chunked.mlir
// RUN: act-run %s --entry=stage --chunk-passes=0 --output-dir=%t/whole > /dev/null
// RUN: act-run %t/chunked.mlir --entry=stage --chunk-passes=0 --output-dir=%t/chunked > /dev/null
// RUN: %python -c "import sys, glob, numpy as np; d = sys.argv[1]; w = sorted(glob.glob(d + '/whole/*.npy')); assert len(w) == 3, w; [np.testing.assert_allclose(np.load(f.replace('whole', 'chunked')), np.load(f), rtol=1e-5, atol=1e-5) for f in w]; print('same results:', len(w))" %t | FileCheck %s --check-prefix=SAME
// SAME: same results: 3

// A pooled gradient %dp (4 x 2 x 4 x 4) spread 2x2 into %g (4 x 2 x 8 x 8),
// a BatchNorm-like pair of sums and applications, and a convolution's
// input gradient and weight gradient between them:
//   level 0: %g, %s1 = sum(%g * %x)                     (loop 1)
//   level 1: %g2 = %g - %s1 %x, %d = conv(%g2), %s2 = sum(%d)  (loop 2)
//   level 2: %o = %d - %s2, %dw = sum over the batch of %o * %x (loop 3)
// No 4 x 2 x 8 x 8 tensor exists whole; chunks of 2 (1.6 KB padded). Each loop
// recomputes the spread and decodes %x (their linalg.index offset by the
// chunk's start).
// CHECK-LABEL: func.func @stage
// CHECK-NOT:   -> tensor<4x2x8x8xf32>
// CHECK:       %[[S1:.*]] = scf.for %[[I:.*]] = %c0{{.*}} to %c4{{.*}} step %c2{{.*}} iter_args(%[[A1:.*]] = %{{.*}}) -> (tensor<2xf32>)
// CHECK:         tensor.extract_slice %{{.*}}[%[[I]], 0, 0, 0] [2, 2, 4, 4] [1, 1, 1, 1] : tensor<4x2x4x4xf32> to tensor<2x2x4x4xf32>
// CHECK:         %[[N:.*]] = linalg.index 0
// CHECK:         affine.apply #{{.*}}(%[[I]])[%[[N]]]
// CHECK:         linalg.generic {{.*}} outs(%[[A1]] : tensor<2xf32>)
// CHECK:         scf.yield
// CHECK:       %[[E1:.*]] = tensor.expand_shape %[[S1]]
// CHECK:       %[[L2:.*]] = scf.for {{.*}} -> (tensor<2xf32>)
// CHECK:         linalg.generic {{.*}} ins({{.*}}%[[E1]] : {{.*}})
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}} -> tensor<2x2x8x8xf32>
// CHECK:         scf.yield
// CHECK:       %[[L3:.*]] = scf.for {{.*}} -> (tensor<2x2x3x3xf32>)
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}} -> tensor<2x2x8x8xf32>
// CHECK:         linalg.transpose ins(%{{.*}} : tensor<2x2x10x10xf32>) outs(%{{.*}} : tensor<2x2x10x10xf32>)
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}} -> tensor<2x2x3x3xf32>
// CHECK:         scf.yield
// CHECK:       return %[[S1]], %[[L2]], %[[L3]]

// With two loops at most, the level-2 ops stay outside and read %d whole,
// which the loops would have to assemble: the region is left as it is.
// TWO-LABEL: func.func @stage
// TWO-NOT:   scf.for
// TWO:       return

// A second run finds nothing left to chunk.
// AGAIN-LABEL: func.func @stage
// AGAIN-COUNT-3: scf.for
// AGAIN-NOT:   scf.for
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#spread = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 floordiv 2, d3 floordiv 2)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
#chan3 = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func @stage(%dp: tensor<4x2x4x4xf32>, %xq: tensor<512xf32>,
                 %w: tensor<2x2x3x3xf32>)
    -> (tensor<2xf32>, tensor<2xf32>, tensor<2x2x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  // A saved activation decoded element by element (a lossy encoding's
  // decode-into-consumers form: a generic without inputs reading its
  // storage by index); each loop decodes its chunk.
  %ex = tensor.empty() : tensor<4x2x8x8xf32>
  %x = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%ex : tensor<4x2x8x8xf32>) {
  ^bb0(%out: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %h = linalg.index 2 : index
    %v = linalg.index 3 : index
    %at = affine.apply affine_map<(a, b, c, d) -> (a * 128 + b * 64 + c * 8 + d)>(%n, %c, %h, %v)
    %q = tensor.extract %xq[%at] : tensor<512xf32>
    %half = arith.constant 0.5 : f32
    %r = arith.mulf %q, %half : f32
    linalg.yield %r : f32
  } -> tensor<4x2x8x8xf32>
  %e = tensor.empty() : tensor<4x2x8x8xf32>
  // The spread: each pooled gradient to its 2x2 window, scaled by the
  // image's index (so that a chunk reading the wrong index shows).
  %g = linalg.generic {indexing_maps = [#spread, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp : tensor<4x2x4x4xf32>) outs(%e : tensor<4x2x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 0 : index
    %i = arith.index_cast %n : index to i32
    %f = arith.sitofp %i : i32 to f32
    %one = arith.constant 1.0 : f32
    %s = arith.addf %f, %one : f32
    %r = arith.mulf %in, %s : f32
    linalg.yield %r : f32
  } -> tensor<4x2x8x8xf32>
  %c0 = tensor.empty() : tensor<2xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%c0 : tensor<2xf32>) -> tensor<2xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #id, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%g, %x : tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>) outs(%z1 : tensor<2xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %s1e = tensor.expand_shape %s1 [[0, 1, 2]] output_shape [2, 1, 1] : tensor<2xf32> into tensor<2x1x1xf32>
  %e2 = tensor.empty() : tensor<4x2x8x8xf32>
  %g2 = linalg.generic {indexing_maps = [#id, #id, #chan3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %x, %s1e : tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>, tensor<2x1x1xf32>) outs(%e2 : tensor<4x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32, %out: f32):
    %m = arith.mulf %s, %b : f32
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<4x2x8x8xf32>
  // The input gradient: %g2 zero-padded, convolved.
  %pe = tensor.empty() : tensor<4x2x10x10xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<4x2x10x10xf32>) -> tensor<4x2x10x10xf32>
  %padded = tensor.insert_slice %g2 into %pz[0, 0, 1, 1] [4, 2, 8, 8] [1, 1, 1, 1] : tensor<4x2x8x8xf32> into tensor<4x2x10x10xf32>
  %de = tensor.empty() : tensor<4x2x8x8xf32>
  %dz = linalg.fill ins(%zero : f32) outs(%de : tensor<4x2x8x8xf32>) -> tensor<4x2x8x8xf32>
  %d = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded, %w : tensor<4x2x10x10xf32>, tensor<2x2x3x3xf32>) outs(%dz : tensor<4x2x8x8xf32>) -> tensor<4x2x8x8xf32>
  %c1 = tensor.empty() : tensor<2xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%c1 : tensor<2xf32>) -> tensor<2xf32>
  %s2 = linalg.generic {indexing_maps = [#id, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%d : tensor<4x2x8x8xf32>) outs(%z2 : tensor<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %s2e = tensor.expand_shape %s2 [[0, 1, 2]] output_shape [2, 1, 1] : tensor<2xf32> into tensor<2x1x1xf32>
  %e3 = tensor.empty() : tensor<4x2x8x8xf32>
  %o = linalg.generic {indexing_maps = [#id, #chan3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%d, %s2e : tensor<4x2x8x8xf32>, tensor<2x1x1xf32>) outs(%e3 : tensor<4x2x8x8xf32>) {
  ^bb0(%a: f32, %s: f32, %out: f32):
    %r = arith.subf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<4x2x8x8xf32>
  // The weight gradient, as the exported backward writes it: batch and
  // channels swapped, the batch the convolution's reduction channel.
  %xp = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %dd: index):
    tensor.yield %zero : f32
  } : tensor<4x2x8x8xf32> to tensor<4x2x10x10xf32>
  %te = tensor.empty() : tensor<2x4x10x10xf32>
  %xt = linalg.transpose ins(%xp : tensor<4x2x10x10xf32>) outs(%te : tensor<2x4x10x10xf32>) permutation = [1, 0, 2, 3]
  %oe = tensor.empty() : tensor<2x4x8x8xf32>
  %ot = linalg.transpose ins(%o : tensor<4x2x8x8xf32>) outs(%oe : tensor<2x4x8x8xf32>) permutation = [1, 0, 2, 3]
  %we = tensor.empty() : tensor<2x2x3x3xf32>
  %wz = linalg.fill ins(%zero : f32) outs(%we : tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %dw = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%xt, %ot : tensor<2x4x10x10xf32>, tensor<2x4x8x8xf32>) outs(%wz : tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  return %s1, %s2, %dw : tensor<2xf32>, tensor<2xf32>, tensor<2x2x3x3xf32>
}

// A batch of 2 with 2 channels: the weight gradient's transposed input
// (channels, batch) is pulled in along its batch, not its channels.
// SQUARE-LABEL: func.func @square
// SQUARE-COUNT-3: scf.for %{{.*}} = %c0{{.*}} to %c2{{.*}} step %c1
// SQUARE:       linalg.transpose ins(%{{.*}} : tensor<1x2x10x10xf32>) outs(%{{.*}} : tensor<2x1x10x10xf32>)
// SQUARE:       linalg.conv_2d_nchw_fchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x1x10x10xf32>, tensor<2x1x8x8xf32>)
func.func @square(%dp: tensor<2x2x4x4xf32>, %xq: tensor<256xf32>,
                 %w: tensor<2x2x3x3xf32>)
    -> (tensor<2xf32>, tensor<2xf32>, tensor<2x2x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  // A saved activation decoded element by element (a lossy encoding's
  // decode-into-consumers form: a generic without inputs reading its
  // storage by index); each loop decodes its chunk.
  %ex = tensor.empty() : tensor<2x2x8x8xf32>
  %x = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%ex : tensor<2x2x8x8xf32>) {
  ^bb0(%out: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %h = linalg.index 2 : index
    %v = linalg.index 3 : index
    %at = affine.apply affine_map<(a, b, c, d) -> (a * 128 + b * 64 + c * 8 + d)>(%n, %c, %h, %v)
    %q = tensor.extract %xq[%at] : tensor<256xf32>
    %half = arith.constant 0.5 : f32
    %r = arith.mulf %q, %half : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x8xf32>
  %e = tensor.empty() : tensor<2x2x8x8xf32>
  // The spread: each pooled gradient to its 2x2 window, scaled by the
  // image's index (so that a chunk reading the wrong index shows).
  %g = linalg.generic {indexing_maps = [#spread, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp : tensor<2x2x4x4xf32>) outs(%e : tensor<2x2x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 0 : index
    %i = arith.index_cast %n : index to i32
    %f = arith.sitofp %i : i32 to f32
    %one = arith.constant 1.0 : f32
    %s = arith.addf %f, %one : f32
    %r = arith.mulf %in, %s : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x8xf32>
  %c0 = tensor.empty() : tensor<2xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%c0 : tensor<2xf32>) -> tensor<2xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #id, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%g, %x : tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) outs(%z1 : tensor<2xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %s1e = tensor.expand_shape %s1 [[0, 1, 2]] output_shape [2, 1, 1] : tensor<2xf32> into tensor<2x1x1xf32>
  %e2 = tensor.empty() : tensor<2x2x8x8xf32>
  %g2 = linalg.generic {indexing_maps = [#id, #id, #chan3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %x, %s1e : tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x1x1xf32>) outs(%e2 : tensor<2x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32, %out: f32):
    %m = arith.mulf %s, %b : f32
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x8xf32>
  // The input gradient: %g2 zero-padded, convolved.
  %pe = tensor.empty() : tensor<2x2x10x10xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<2x2x10x10xf32>) -> tensor<2x2x10x10xf32>
  %padded = tensor.insert_slice %g2 into %pz[0, 0, 1, 1] [2, 2, 8, 8] [1, 1, 1, 1] : tensor<2x2x8x8xf32> into tensor<2x2x10x10xf32>
  %de = tensor.empty() : tensor<2x2x8x8xf32>
  %dz = linalg.fill ins(%zero : f32) outs(%de : tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %d = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded, %w : tensor<2x2x10x10xf32>, tensor<2x2x3x3xf32>) outs(%dz : tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %c1 = tensor.empty() : tensor<2xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%c1 : tensor<2xf32>) -> tensor<2xf32>
  %s2 = linalg.generic {indexing_maps = [#id, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%d : tensor<2x2x8x8xf32>) outs(%z2 : tensor<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %s2e = tensor.expand_shape %s2 [[0, 1, 2]] output_shape [2, 1, 1] : tensor<2xf32> into tensor<2x1x1xf32>
  %e3 = tensor.empty() : tensor<2x2x8x8xf32>
  %o = linalg.generic {indexing_maps = [#id, #chan3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%d, %s2e : tensor<2x2x8x8xf32>, tensor<2x1x1xf32>) outs(%e3 : tensor<2x2x8x8xf32>) {
  ^bb0(%a: f32, %s: f32, %out: f32):
    %r = arith.subf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x8xf32>
  // The weight gradient, as the exported backward writes it: batch and
  // channels swapped, the batch the convolution's reduction channel.
  %xp = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %dd: index):
    tensor.yield %zero : f32
  } : tensor<2x2x8x8xf32> to tensor<2x2x10x10xf32>
  %te = tensor.empty() : tensor<2x2x10x10xf32>
  %xt = linalg.transpose ins(%xp : tensor<2x2x10x10xf32>) outs(%te : tensor<2x2x10x10xf32>) permutation = [1, 0, 2, 3]
  %oe = tensor.empty() : tensor<2x2x8x8xf32>
  %ot = linalg.transpose ins(%o : tensor<2x2x8x8xf32>) outs(%oe : tensor<2x2x8x8xf32>) permutation = [1, 0, 2, 3]
  %we = tensor.empty() : tensor<2x2x3x3xf32>
  %wz = linalg.fill ins(%zero : f32) outs(%we : tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %dw = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%xt, %ot : tensor<2x2x10x10xf32>, tensor<2x2x8x8xf32>) outs(%wz : tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  return %s1, %s2, %dw : tensor<2xf32>, tensor<2xf32>, tensor<2x2x3x3xf32>
}

// The values a stage reads from outside and that die inside it live until
// its loops. Here a convolution's output (which the loops do not
// recompute: not element by element) and the spread input, 2.5 KB,
// against the 2 KB the loops would keep from existing whole: the stage is
// left as it is (a step without encodings, whose backward reads its saved
// activations whole, is such a stage).
// CHECK-LABEL: func.func @held
// CHECK-NOT:   scf.for
// CHECK:       return
func.func @held(%dp: tensor<4x2x4x4xf32>, %x: tensor<4x2x10x10xf32>, %w: tensor<2x2x3x3xf32>, %yq: tensor<512xf32>) -> tensor<2xf32> {
  %zero = arith.constant 0.0 : f32
  %ey = tensor.empty() : tensor<4x2x8x8xf32>
  %y = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%ey : tensor<4x2x8x8xf32>) {
  ^bb0(%out: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %h = linalg.index 2 : index
    %v = linalg.index 3 : index
    %at = affine.apply affine_map<(a, b, c, d) -> (a * 128 + b * 64 + c * 8 + d)>(%n, %c, %h, %v)
    %q = tensor.extract %yq[%at] : tensor<512xf32>
    linalg.yield %q : f32
  } -> tensor<4x2x8x8xf32>
  %e0 = tensor.empty() : tensor<4x2x8x8xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x2x8x8xf32>) -> tensor<4x2x8x8xf32>
  %xs = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<4x2x10x10xf32>, tensor<2x2x3x3xf32>) outs(%z0 : tensor<4x2x8x8xf32>) -> tensor<4x2x8x8xf32>
  %e = tensor.empty() : tensor<4x2x8x8xf32>
  %g = linalg.generic {indexing_maps = [#spread, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp, %xs : tensor<4x2x4x4xf32>, tensor<4x2x8x8xf32>) outs(%e : tensor<4x2x8x8xf32>) {
  ^bb0(%in: f32, %a: f32, %out: f32):
    %m = arith.mulf %in, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x2x8x8xf32>
  %c0 = tensor.empty() : tensor<2xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%c0 : tensor<2xf32>) -> tensor<2xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #id, #id, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%g, %xs, %y : tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>) outs(%z1 : tensor<2xf32>) {
  ^bb0(%a: f32, %b: f32, %yy: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %m = arith.mulf %p, %yy : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  return %s1 : tensor<2xf32>
}

// Without a lossy per-element decode (no encodings, or lossless ones) the
// stage stays as it is: its sums keep their order, so a step with lossless
// encodings stays bitwise the step without.
// CHECK-LABEL: func.func @nothing_decoded
// CHECK-NOT:   scf.for
// CHECK:       return
func.func @nothing_decoded(%dp: tensor<4x2x4x4xf32>, %x: tensor<4x2x8x8xf32>) -> tensor<2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2x8x8xf32>
  %g = linalg.generic {indexing_maps = [#spread, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp : tensor<4x2x4x4xf32>) outs(%e : tensor<4x2x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x2x8x8xf32>
  %e2 = tensor.empty() : tensor<4x2x8x8xf32>
  %g2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %x : tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>) outs(%e2 : tensor<4x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x2x8x8xf32>
  %c0 = tensor.empty() : tensor<2xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%c0 : tensor<2xf32>) -> tensor<2xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%g2 : tensor<4x2x8x8xf32>) outs(%z1 : tensor<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  return %s1 : tensor<2xf32>
}
