// act-in-place's convolutions: a stride-1 convolution whose output has its
// input's shape, and whose input dies there, writes its output over its
// input one chunk of the batch at a time.
// RUN: act-opt %s -act-in-place="chunk-bytes=2304" | FileCheck %s
// RUN: act-opt %s -act-in-place="chunk-bytes=2304" -one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF
// Each image is computed as before: the chunked convolution's results are
// the whole one's within float32 reassociation (act-run's own pipeline
// leaves these small tensors whole). Not bit for bit: oneDNN picks its
// kernel, and with it the summation order, by ISA and shape (a batch of 2
// and one of 4 differ on an AVX2-only CPU).
// RUN: rm -rf %t && mkdir -p %t
// RUN: act-opt %s -act-in-place="chunk-bytes=2304" -o %t/chunked.mlir
// RUN: for e in forward backward pad_as_copy late_reader; do act-run %s --entry=$e --output-dir=%t/whole_$e > /dev/null && act-run %t/chunked.mlir --entry=$e --output-dir=%t/chunked_$e > /dev/null && %compare close %t/whole_$e %t/chunked_$e 0 0 1e-6 || exit 1; done

// Images of 8 x 6 x 6 floats (1152 bytes): a loop over chunks of 2 of the
// 4, each read (padded) before its output is written over it. (A loop: the
// chunks unrolled made chains of insert_slices that grew with the batch,
// and one-shot bufferization's analysis with their square.)
// CHECK-LABEL: func.func @forward
// CHECK:       %[[X:.*]] = linalg.generic
// CHECK-DAG:   %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:   %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:   %[[C2:.*]] = arith.constant 2 : index
// CHECK:       %[[Y:.*]] = scf.for %[[I:.*]] = %[[C0]] to %[[C4]] step %[[C2]] iter_args(%[[ACC:.*]] = %[[X]]) -> (tensor<4x8x6x6xf32>)
// CHECK:         %[[S:.*]] = tensor.extract_slice %[[ACC]][%[[I]], 0, 0, 0] [2, 8, 6, 6] [1, 1, 1, 1]
// CHECK:         %[[P:.*]] = tensor.pad %[[S]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK:         %[[C:.*]] = linalg.conv_2d_nchw_fchw {{.*}} ins(%[[P]], %{{.*}} : tensor<2x8x8x8xf32>, tensor<8x8x3x3xf32>)
// CHECK:         %[[N:.*]] = tensor.insert_slice %[[C]] into %[[ACC]][%[[I]], 0, 0, 0] [2, 8, 6, 6] [1, 1, 1, 1]
// CHECK:         scf.yield %[[N]]
// CHECK:       return %[[Y]]
// One full-size buffer: the output lands in the input's.
// BUF-LABEL:   func.func @forward
// BUF-COUNT-1: memref.alloc() {{.*}} : memref<4x8x6x6xf32>
// BUF-NOT:     memref.alloc() {{.*}} : memref<4x8x6x6xf32>
// BUF:         return
func.func @forward(%a: tensor<4x8x6x6xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<4x8x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x6x6xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : tensor<4x8x6x6xf32>) outs(%e : tensor<4x8x6x6xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8x6x6xf32>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<4x8x6x6xf32> to tensor<4x8x8x8xf32>
  %e1 = tensor.empty() : tensor<4x8x6x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w : tensor<4x8x8x8xf32>, tensor<8x8x3x3xf32>) outs(%z : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  return %y : tensor<4x8x6x6xf32>
}

// The exported backward's padding: the gradient inserted into zeros.
// CHECK-LABEL: func.func @backward
// CHECK:       %[[G:.*]] = linalg.generic
// CHECK-NOT:   tensor<4x8x8x8xf32>
// CHECK:       scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[G]])
// CHECK:       tensor.extract_slice %[[ACC]][%{{.*}}, 0, 0, 0] [2, 8, 6, 6]
// CHECK:       tensor.pad {{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK:       linalg.conv_2d_nchw_fchw {{.*}} -> tensor<2x8x6x6xf32>
func.func @backward(%a: tensor<4x8x6x6xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<4x8x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x6x6xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : tensor<4x8x6x6xf32>) outs(%e : tensor<4x8x6x6xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.mulf %v, %v : f32
    linalg.yield %r : f32
  } -> tensor<4x8x6x6xf32>
  %e0 = tensor.empty() : tensor<4x8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x8x8x8xf32>) -> tensor<4x8x8x8xf32>
  %p = tensor.insert_slice %g into %f[0, 0, 1, 1] [4, 8, 6, 6] [1, 1, 1, 1] : tensor<4x8x6x6xf32> into tensor<4x8x8x8xf32>
  %e1 = tensor.empty() : tensor<4x8x6x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w : tensor<4x8x8x8xf32>, tensor<8x8x3x3xf32>) outs(%z : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  return %y : tensor<4x8x6x6xf32>
}

// Kept whole: the input is read after the convolution; the input is the
// caller's; the output is smaller (stride 2).
// CHECK-LABEL: func.func @kept
// CHECK-NOT:   tensor.extract_slice
// CHECK-COUNT-3: linalg.conv_2d_nchw_fchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8x8x8xf32>
// CHECK-NOT:   tensor.insert_slice
func.func @kept(%a: tensor<4x8x6x6xf32>, %w: tensor<8x8x3x3xf32>) -> (tensor<4x8x6x6xf32>, tensor<4x8x6x6xf32>, tensor<4x8x6x6xf32>, tensor<4x8x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x6x6xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : tensor<4x8x6x6xf32>) outs(%e : tensor<4x8x6x6xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  } -> tensor<4x8x6x6xf32>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<4x8x6x6xf32> to tensor<4x8x8x8xf32>
  %e1 = tensor.empty() : tensor<4x8x6x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w : tensor<4x8x8x8xf32>, tensor<8x8x3x3xf32>) outs(%z : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  %pa = tensor.pad %a low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<4x8x6x6xf32> to tensor<4x8x8x8xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  %ya = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%pa, %w : tensor<4x8x8x8xf32>, tensor<8x8x3x3xf32>) outs(%z2 : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  %e3 = tensor.empty() : tensor<4x8x3x3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x8x3x3xf32>) -> tensor<4x8x3x3xf32>
  %ys = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%pa, %w : tensor<4x8x8x8xf32>, tensor<8x8x3x3xf32>) outs(%z3 : tensor<4x8x3x3xf32>) -> tensor<4x8x3x3xf32>
  return %y, %x, %ya, %ys : tensor<4x8x6x6xf32>, tensor<4x8x6x6xf32>, tensor<4x8x6x6xf32>, tensor<4x8x3x3xf32>
}

// Not in place (fewer output channels), but the insert_slice padding
// becomes a tensor.pad: a copy the kernel call drops, instead of a padded
// buffer the gradient would be computed into.
// CHECK-LABEL: func.func @pad_as_copy
// CHECK-NOT:   tensor.insert_slice
// CHECK:       %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK:       linalg.conv_2d_nchw_fchw {{.*}} ins(%[[P]], %{{.*}} : tensor<4x8x8x8xf32>, tensor<4x8x3x3xf32>)
func.func @pad_as_copy(%a: tensor<4x8x6x6xf32>, %w: tensor<4x8x3x3xf32>) -> tensor<4x4x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x6x6xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : tensor<4x8x6x6xf32>) outs(%e : tensor<4x8x6x6xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.mulf %v, %v : f32
    linalg.yield %r : f32
  } -> tensor<4x8x6x6xf32>
  %e0 = tensor.empty() : tensor<4x8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x8x8x8xf32>) -> tensor<4x8x8x8xf32>
  %p = tensor.insert_slice %g into %f[0, 0, 1, 1] [4, 8, 6, 6] [1, 1, 1, 1] : tensor<4x8x6x6xf32> into tensor<4x8x8x8xf32>
  %e1 = tensor.empty() : tensor<4x4x6x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x4x6x6xf32>) -> tensor<4x4x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w : tensor<4x8x8x8xf32>, tensor<4x8x3x3xf32>) outs(%z : tensor<4x4x6x6xf32>) -> tensor<4x4x6x6xf32>
  return %y : tensor<4x4x6x6xf32>
}

// A convolution bias's gradient, summed from the output gradient after the
// input gradient's convolution: the sum (with its zero-filled init) moves
// before the convolution, which then writes over the gradient.
// CHECK-LABEL: func.func @late_reader
// CHECK:       %[[G:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8x6x6xf32>)
// CHECK:       %[[E:.*]] = tensor.empty() : tensor<8xf32>
// CHECK:       %[[F:.*]] = linalg.fill {{.*}} outs(%[[E]] : tensor<8xf32>)
// CHECK:       %[[DB:.*]] = linalg.generic {{.*}} ins(%[[G]] : tensor<4x8x6x6xf32>) outs(%[[F]] : tensor<8xf32>)
// CHECK:       scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[G]])
// CHECK:       tensor.extract_slice %[[ACC]][%{{.*}}, 0, 0, 0] [2, 8, 6, 6]
// CHECK:       linalg.conv_2d_nchw_fchw {{.*}} -> tensor<2x8x6x6xf32>
// CHECK:       return %{{.*}}, %[[DB]]
func.func @late_reader(%a: tensor<4x8x6x6xf32>, %w: tensor<8x8x3x3xf32>) -> (tensor<4x8x6x6xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x6x6xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : tensor<4x8x6x6xf32>) outs(%e : tensor<4x8x6x6xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.mulf %v, %v : f32
    linalg.yield %r : f32
  } -> tensor<4x8x6x6xf32>
  %e0 = tensor.empty() : tensor<4x8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x8x8x8xf32>) -> tensor<4x8x8x8xf32>
  %p = tensor.insert_slice %g into %f[0, 0, 1, 1] [4, 8, 6, 6] [1, 1, 1, 1] : tensor<4x8x6x6xf32> into tensor<4x8x8x8xf32>
  %e1 = tensor.empty() : tensor<4x8x6x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w : tensor<4x8x8x8xf32>, tensor<8x8x3x3xf32>) outs(%z : tensor<4x8x6x6xf32>) -> tensor<4x8x6x6xf32>
  %eb = tensor.empty() : tensor<8xf32>
  %fb = linalg.fill ins(%zero : f32) outs(%eb : tensor<8xf32>) -> tensor<8xf32>
  %db = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%g : tensor<4x8x6x6xf32>) outs(%fb : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.addf %v, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %y, %db : tensor<4x8x6x6xf32>, tensor<8xf32>
}
