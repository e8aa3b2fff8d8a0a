// RUN: act-opt %s -split-input-file -allow-unregistered-dialect -act-transpose-views | FileCheck %s
// RUN: act-opt %s -split-input-file -allow-unregistered-dialect -act-transpose-views -act-early-dealloc | FileCheck %s --check-prefix=FREE

// A weight gradient's operands: the transposes become views, their
// buffers go. (Sources are the step's own buffers: two arguments may be
// one buffer, so an argument read through a view while another is written
// keeps its copy.)
// CHECK-LABEL: func.func @views
// CHECK-NOT:   linalg.transpose
// CHECK:       %[[S:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK:       %[[A:.*]] = memref.reinterpret_cast %[[S]] to offset: [0], sizes: [8, 16], strides: [1, 8] : memref<16x8xf32> to memref<8x16xf32, strided<[1, 8]>>
// CHECK-NOT:   memref.alloc() : memref<8x16xf32>
// CHECK:       linalg.matmul ins(%[[A]], %arg1 : memref<8x16xf32, strided<[1, 8]>>, memref<16x4xf32>)
// CHECK:       %[[X:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [3, 2, 6, 6], strides: [36, 108, 6, 1]
// CHECK:       %[[G:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [5, 2, 4, 4], strides: [16, 80, 4, 1]
// CHECK:       linalg.conv_2d_nchw_fchw {{.*}} ins(%[[X]], %[[G]] :
// CHECK-NOT:   linalg.transpose
func.func @views(%a0: memref<16x8xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>,
                 %x0: memref<2x3x6x6xf32>, %g0: memref<2x5x4x4xf32>, %w: memref<3x5x3x3xf32>) {
  %a = memref.alloc() : memref<16x8xf32>
  memref.copy %a0, %a : memref<16x8xf32> to memref<16x8xf32>
  %x = memref.alloc() : memref<2x3x6x6xf32>
  memref.copy %x0, %x : memref<2x3x6x6xf32> to memref<2x3x6x6xf32>
  %g = memref.alloc() : memref<2x5x4x4xf32>
  memref.copy %g0, %g : memref<2x5x4x4xf32> to memref<2x5x4x4xf32>
  %t = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%a : memref<16x8xf32>) outs(%t : memref<8x16xf32>) permutation = [1, 0]
  linalg.matmul ins(%t, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  %xt = memref.alloc() : memref<3x2x6x6xf32>
  linalg.transpose ins(%x : memref<2x3x6x6xf32>) outs(%xt : memref<3x2x6x6xf32>) permutation = [1, 0, 2, 3]
  %gt = memref.alloc() : memref<5x2x4x4xf32>
  linalg.transpose ins(%g : memref<2x5x4x4xf32>) outs(%gt : memref<5x2x4x4xf32>) permutation = [1, 0, 2, 3]
  %wt = memref.alloc() : memref<3x5x3x3xf32>
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%xt, %gt : memref<3x2x6x6xf32>, memref<5x2x4x4xf32>) outs(%w : memref<3x5x3x3xf32>)
  return
}

// -----

// Kept: the source is written before the matmul reads the transpose; the
// transpose is read by a copy (loops would read it strided); an op with
// unknown effects sits in between.
// CHECK-LABEL: func.func @copies
// CHECK-COUNT-3: linalg.transpose
// CHECK-NOT:   memref.reinterpret_cast
func.func @copies(%a: memref<16x8xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %d: memref<8x16xf32>) {
  %s = memref.alloc() : memref<16x8xf32>
  memref.copy %a, %s : memref<16x8xf32> to memref<16x8xf32>
  %t = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%s : memref<16x8xf32>) outs(%t : memref<8x16xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<16x8xf32>)
  linalg.matmul ins(%t, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  %u = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%a : memref<16x8xf32>) outs(%u : memref<8x16xf32>) permutation = [1, 0]
  linalg.copy ins(%u : memref<8x16xf32>) outs(%d : memref<8x16xf32>)
  %v = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%a : memref<16x8xf32>) outs(%v : memref<8x16xf32>) permutation = [1, 0]
  "test.unknown"() : () -> ()
  linalg.matmul ins(%v, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  return
}

// -----

// The view is an alias deallocation sees: the source is freed after the
// matmul that reads it through the view, not after the (former) transpose.
// CHECK-LABEL: func.func @freed
// FREE-LABEL: func.func @freed
// FREE:       %[[S:.*]] = memref.alloc() : memref<16x8xf32>
// FREE:       linalg.matmul
// FREE-NEXT:  memref.dealloc %[[S]]
func.func @freed(%a0: memref<16x8xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  %a = memref.alloc() : memref<16x8xf32>
  memref.copy %a0, %a : memref<16x8xf32> to memref<16x8xf32>
  %t = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%a : memref<16x8xf32>) outs(%t : memref<8x16xf32>) permutation = [1, 0]
  linalg.matmul ins(%t, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  "test.other"() : () -> ()
  memref.dealloc %a : memref<16x8xf32>
  return
}

// -----

// Kept: the source is written between the transpose and the matmul through
// a loop that carries it (a vectorized in-place generic: scf.for iter_args,
// then a collapse of the loop's result), which upstream's
// BufferOriginAnalysis traces back to the same allocation. (This order
// arises once act-sink-to-users moves the matmul down to its result's
// reader.)
// CHECK-LABEL: func.func @loop_carried_write
// CHECK:       linalg.transpose
// CHECK-NOT:   memref.reinterpret_cast
func.func @loop_carried_write(%a: memref<16x8xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %v: vector<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %s = memref.alloc() : memref<16x8xf32>
  memref.copy %a, %s : memref<16x8xf32> to memref<16x8xf32>
  %t = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%s : memref<16x8xf32>) outs(%t : memref<8x16xf32>) permutation = [1, 0]
  %r = scf.for %i = %c0 to %c16 step %c1 iter_args(%acc = %s) -> (memref<16x8xf32>) {
    %row = memref.subview %acc[%i, 0] [1, 8] [1, 1] : memref<16x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    vector.transfer_write %v, %row[%c0] {in_bounds = [true]} : vector<8xf32>, memref<8xf32, strided<[1], offset: ?>>
    scf.yield %acc : memref<16x8xf32>
  }
  linalg.matmul ins(%t, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  "test.use"(%r) : (memref<16x8xf32>) -> ()
  return
}

// -----

// A kernel's result transposed into a fresh buffer (a weight gradient
// computed with batch and channels swapped, into the weight's layout): the
// kernel writes it in place, through the transposed view of the target.
// CHECK-LABEL: func.func @result_in_transposed_place
// CHECK-NOT:   linalg.transpose
// CHECK:       %[[W:.*]] = memref.alloc() : memref<5x3x3x3xf32>
// CHECK-NEXT:  %[[V:.*]] = memref.reinterpret_cast %[[W]] to offset: [0], sizes: [3, 5, 3, 3], strides: [9, 27, 3, 1]
// CHECK-NEXT:  linalg.fill {{.*}} outs(%[[V]] :
// CHECK-NEXT:  linalg.conv_2d_nchw_fchw {{.*}} outs(%[[V]] :
// CHECK:       %[[M:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK-NEXT:  %[[MV:.*]] = memref.reinterpret_cast %[[M]] to offset: [0], sizes: [8, 4], strides: [1, 8]
// CHECK:       linalg.matmul {{.*}} outs(%[[MV]] :
// CHECK-NOT:   linalg.transpose
// CHECK:       return %[[W]], %[[M]]
func.func @result_in_transposed_place(%x: memref<3x2x6x6xf32>, %g: memref<5x2x4x4xf32>,
                                      %a: memref<8x16xf32>, %b: memref<16x4xf32>)
    -> (memref<5x3x3x3xf32>, memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %r = memref.alloc() : memref<3x5x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%r : memref<3x5x3x3xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %g : memref<3x2x6x6xf32>, memref<5x2x4x4xf32>) outs(%r : memref<3x5x3x3xf32>)
  %w = memref.alloc() : memref<5x3x3x3xf32>
  linalg.transpose ins(%r : memref<3x5x3x3xf32>) outs(%w : memref<5x3x3x3xf32>) permutation = [1, 0, 2, 3]
  %m = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%m : memref<8x4xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%m : memref<8x4xf32>)
  %mt = memref.alloc() : memref<4x8xf32>
  linalg.transpose ins(%m : memref<8x4xf32>) outs(%mt : memref<4x8xf32>) permutation = [1, 0]
  return %w, %mt : memref<5x3x3x3xf32>, memref<4x8xf32>
}

// -----

// The weight gradient summed chunk by chunk of the batch in a loop before
// the transpose (act-chunk-in-passes): the kernel in the loop writes it in
// place too.
// CHECK-LABEL: func.func @result_summed_in_a_loop
// CHECK-NOT:   linalg.transpose
// CHECK:       %[[W:.*]] = memref.alloc() : memref<5x3x3x3xf32>
// CHECK-NEXT:  %[[V:.*]] = memref.reinterpret_cast %[[W]] to offset: [0], sizes: [3, 5, 3, 3], strides: [9, 27, 3, 1]
// CHECK-NEXT:  linalg.fill {{.*}} outs(%[[V]] :
// CHECK:       scf.for
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}} outs(%[[V]] :
// CHECK-NOT:   linalg.transpose
// CHECK:       return %[[W]]
func.func @result_summed_in_a_loop(%x: memref<3x4x6x6xf32>, %g: memref<5x4x4x4xf32>)
    -> memref<5x3x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %r = memref.alloc() : memref<3x5x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%r : memref<3x5x3x3xf32>)
  scf.for %i = %c0 to %c4 step %c2 {
    %xi = memref.subview %x[0, %i, 0, 0] [3, 2, 6, 6] [1, 1, 1, 1] : memref<3x4x6x6xf32> to memref<3x2x6x6xf32, strided<[144, 36, 6, 1], offset: ?>>
    %gi = memref.subview %g[0, %i, 0, 0] [5, 2, 4, 4] [1, 1, 1, 1] : memref<5x4x4x4xf32> to memref<5x2x4x4xf32, strided<[64, 16, 4, 1], offset: ?>>
    linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%xi, %gi : memref<3x2x6x6xf32, strided<[144, 36, 6, 1], offset: ?>>, memref<5x2x4x4xf32, strided<[64, 16, 4, 1], offset: ?>>) outs(%r : memref<3x5x3x3xf32>)
  }
  %w = memref.alloc() : memref<5x3x3x3xf32>
  linalg.transpose ins(%r : memref<3x5x3x3xf32>) outs(%w : memref<5x3x3x3xf32>) permutation = [1, 0, 2, 3]
  return %w : memref<5x3x3x3xf32>
}

// -----

// Kept: the result is also read by another op (it would read the view), or
// its target is used before the transpose.
// CHECK-LABEL: func.func @result_kept
// CHECK-COUNT-2: linalg.transpose
func.func @result_kept(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %d: memref<8x4xf32>)
    -> (memref<4x8xf32>, memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %m = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%m : memref<8x4xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%m : memref<8x4xf32>)
  linalg.copy ins(%m : memref<8x4xf32>) outs(%d : memref<8x4xf32>)
  %mt = memref.alloc() : memref<4x8xf32>
  linalg.transpose ins(%m : memref<8x4xf32>) outs(%mt : memref<4x8xf32>) permutation = [1, 0]
  %n = memref.alloc() : memref<8x4xf32>
  %nt = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%nt : memref<4x8xf32>)
  linalg.fill ins(%zero : f32) outs(%n : memref<8x4xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%n : memref<8x4xf32>)
  linalg.transpose ins(%n : memref<8x4xf32>) outs(%nt : memref<4x8xf32>) permutation = [1, 0]
  return %mt, %nt : memref<4x8xf32>, memref<4x8xf32>
}
