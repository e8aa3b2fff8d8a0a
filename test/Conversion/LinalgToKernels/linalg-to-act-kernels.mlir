// RUN: act-opt %s -convert-linalg-to-act-kernels -split-input-file | FileCheck %s
// RUN: act-opt %s -convert-linalg-to-act-kernels=min-macs=3000000 -split-input-file | FileCheck %s --check-prefix=SMALL

// f32 contractions and convolutions on buffers call the runtime's kernels
// (C interface: descriptor pointers), operands cast to fully dynamic strided
// memrefs, convolution strides, dilations and padding as i64.
// CHECK-LABEL: func.func private @act_kernel_conv_2d_nchw_fchw_f32(memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, i64, i64, i64, i64, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func private @act_kernel_matmul_f32(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @step
// CHECK: %[[A:.*]] = memref.cast %arg0 : memref<64x256xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[B:.*]] = memref.cast %arg1 : memref<256x128xf32, strided<[1, 256]>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[C:.*]] = memref.cast %arg2
// CHECK: call @act_kernel_matmul_f32(%[[A]], %[[B]], %[[C]])
// CHECK-NOT: linalg.matmul
// CHECK: %[[S0:.*]] = arith.constant 2 : i64
// CHECK: %[[S1:.*]] = arith.constant 2 : i64
// CHECK: %[[D0:.*]] = arith.constant 3 : i64
// CHECK: %[[D1:.*]] = arith.constant 3 : i64
// CHECK: %[[P0:.*]] = arith.constant 0 : i64
// CHECK: %[[P1:.*]] = arith.constant 0 : i64
// CHECK: call @act_kernel_conv_2d_nchw_fchw_f32({{.*}}, %[[S0]], %[[S1]], %[[D0]], %[[D1]], %[[P0]], %[[P1]])
// Other element types, and matmuls with their own indexing maps, stay.
// CHECK: linalg.matmul {{.*}}i32
// CHECK: linalg.matmul indexing_maps
// SMALL-LABEL: func.func @step
// SMALL-NOT: call
// SMALL: linalg.matmul
// SMALL: linalg.conv_2d_nchw_fchw
func.func @step(%a: memref<64x256xf32>, %b: memref<256x128xf32, strided<[1, 256]>>,
                %c: memref<64x128xf32>, %x: memref<2x8x20x20xf32>,
                %w: memref<16x8x3x3xf32>, %y: memref<2x16x7x7xf32>,
                %ai: memref<64x64xi32>, %ci: memref<64x64xi32>, %at: memref<256x64xf32>) {
  linalg.matmul ins(%a, %b : memref<64x256xf32>, memref<256x128xf32, strided<[1, 256]>>)
                outs(%c : memref<64x128xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<3> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<2x8x20x20xf32>, memref<16x8x3x3xf32>) outs(%y : memref<2x16x7x7xf32>)
  linalg.matmul ins(%ai, %ai : memref<64x64xi32>, memref<64x64xi32>) outs(%ci : memref<64x64xi32>)
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>,
                                 affine_map<(d0, d1, d2) -> (d2, d1)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%at, %b : memref<256x64xf32>, memref<256x128xf32, strided<[1, 256]>>)
    outs(%c : memref<64x128xf32>)
  return
}

// -----

// Grouped convolutions (G after N) and batched matmuls; one declaration per
// callee however many calls.
// CHECK-LABEL: func.func private @act_kernel_batch_matmul_f32
// CHECK-LABEL: func.func private @act_kernel_conv_2d_ngchw_gfchw_f32(memref<?x?x?x?x?xf32, strided<[?, ?, ?, ?, ?], offset: ?>>
// CHECK-LABEL: func.func @grouped
// CHECK: call @act_kernel_conv_2d_ngchw_gfchw_f32
// CHECK: call @act_kernel_batch_matmul_f32
// CHECK: call @act_kernel_batch_matmul_f32
// Tensors (before bufferization) are left alone.
// CHECK: linalg.batch_matmul {{.*}}tensor
func.func @grouped(%x: memref<2x4x8x10x10xf32>, %w: memref<4x8x8x3x3xf32>,
                   %y: memref<2x4x8x8x8xf32>, %a: memref<4x32x32xf32>,
                   %c: memref<4x32x32xf32>, %d: memref<4x32x32xf32>,
                   %t: tensor<4x32x32xf32>) -> tensor<4x32x32xf32> {
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<2x4x8x10x10xf32>, memref<4x8x8x3x3xf32>) outs(%y : memref<2x4x8x8x8xf32>)
  linalg.batch_matmul ins(%a, %a : memref<4x32x32xf32>, memref<4x32x32xf32>) outs(%c : memref<4x32x32xf32>)
  linalg.batch_matmul ins(%c, %a : memref<4x32x32xf32>, memref<4x32x32xf32>) outs(%d : memref<4x32x32xf32>)
  %r = linalg.batch_matmul ins(%t, %t : tensor<4x32x32xf32>, tensor<4x32x32xf32>)
                           outs(%t : tensor<4x32x32xf32>) -> tensor<4x32x32xf32>
  return %r : tensor<4x32x32xf32>
}

// -----

// A convolution on a zero-padded copy (tensor.pad, bufferized) reads the
// copied buffer with the kernel's padding: the padded buffer, its fill and
// the copy go, and the source is freed after the call. The weight
// gradient's form too: the padded copy read through a view that swaps
// batch and channels becomes the same view of the source.
// CHECK-LABEL: func.func @padded
// CHECK-NOT:   memref.alloc() : memref<2x8x2{{[23]}}x22xf32>
// CHECK-NOT:   memref.copy %{{.*}}, %{{.*}} : memref<2x8x20x20xf32> to memref<2x8x20x20xf32, strided
// CHECK:       %[[X:.*]] = memref.alloc() : memref<2x8x20x20xf32>
// CHECK:       %[[XC:.*]] = memref.cast %[[X]]
// CHECK:       %[[P0:.*]] = arith.constant 2 : i64
// CHECK:       call @act_kernel_conv_2d_nchw_fchw_f32(%[[XC]], {{.*}}, %[[P0]], %{{.*}})
// CHECK-NEXT:  memref.dealloc %[[X]]
// CHECK:       %[[V:.*]] = memref.reinterpret_cast %arg0 to offset: [0], sizes: [8, 2, 20, 20], strides: [400, 3200, 20, 1]
// CHECK:       %[[VC:.*]] = memref.cast %[[V]]
// CHECK:       call @act_kernel_conv_2d_nchw_fchw_f32(%[[VC]], {{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT:   memref.dealloc
// CHECK:       return
func.func @padded(%x0: memref<2x8x20x20xf32>, %w: memref<16x8x3x3xf32>, %y: memref<2x16x21x20xf32>,
                  %g: memref<16x2x20x20xf32>, %gw: memref<8x16x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %x = memref.alloc() : memref<2x8x20x20xf32>
  memref.copy %x0, %x : memref<2x8x20x20xf32> to memref<2x8x20x20xf32>
  %p = memref.alloc() : memref<2x8x23x22xf32>
  linalg.map outs(%p : memref<2x8x23x22xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %s = memref.subview %p[0, 0, 2, 1] [2, 8, 20, 20] [1, 1, 1, 1] : memref<2x8x23x22xf32> to memref<2x8x20x20xf32, strided<[4048, 506, 22, 1], offset: 45>>
  memref.copy %x, %s : memref<2x8x20x20xf32> to memref<2x8x20x20xf32, strided<[4048, 506, 22, 1], offset: 45>>
  memref.dealloc %x : memref<2x8x20x20xf32>
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %w : memref<2x8x23x22xf32>, memref<16x8x3x3xf32>) outs(%y : memref<2x16x21x20xf32>)
  memref.dealloc %p : memref<2x8x23x22xf32>
  %q = memref.alloc() : memref<2x8x22x22xf32>
  linalg.fill ins(%zero : f32) outs(%q : memref<2x8x22x22xf32>)
  %t = memref.subview %q[0, 0, 1, 1] [2, 8, 20, 20] [1, 1, 1, 1] : memref<2x8x22x22xf32> to memref<2x8x20x20xf32, strided<[3872, 484, 22, 1], offset: 23>>
  memref.copy %x0, %t : memref<2x8x20x20xf32> to memref<2x8x20x20xf32, strided<[3872, 484, 22, 1], offset: 23>>
  %v = memref.reinterpret_cast %q to offset: [0], sizes: [8, 2, 22, 22], strides: [484, 3872, 22, 1] : memref<2x8x22x22xf32> to memref<8x2x22x22xf32, strided<[484, 3872, 22, 1]>>
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%v, %g : memref<8x2x22x22xf32, strided<[484, 3872, 22, 1]>>, memref<16x2x20x20xf32>) outs(%gw : memref<8x16x3x3xf32>)
  memref.dealloc %q : memref<2x8x22x22xf32>
  return
}

// -----

// The input gradient of a stride-2 convolution as the exporter writes it:
// the output gradient spread into zeros (a strided copy), convolved with
// the weight read backwards and channels swapped. It becomes the kernel's
// input gradient on the gradient and the weight themselves (strides 2,
// dilations 1, the forward's padding 1 = 1 * (3 - 1) - 1): the spread
// copy and the flipped weight go, and the gradient is freed after the call.
// CHECK-LABEL: func.func private @act_kernel_conv_2d_nchw_fchw_backward_data_f32(memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, i64, i64, i64, i64, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @backward_data
// CHECK-NOT:   memref.alloc() : memref<2x16x10x10xf32>
// CHECK-NOT:   memref.alloc() : memref<8x16x3x3xf32>
// CHECK-NOT:   linalg.generic
// CHECK:       %[[DY:.*]] = memref.alloc() : memref<2x16x4x4xf32>
// CHECK:       %[[DYC:.*]] = memref.cast %[[DY]]
// CHECK:       %[[WC:.*]] = memref.cast %arg1
// CHECK:       %[[DXC:.*]] = memref.cast %arg2
// CHECK:       %[[S0:.*]] = arith.constant 2 : i64
// CHECK:       %[[S1:.*]] = arith.constant 2 : i64
// CHECK:       %[[D0:.*]] = arith.constant 1 : i64
// CHECK:       %[[D1:.*]] = arith.constant 1 : i64
// CHECK:       %[[P0:.*]] = arith.constant 1 : i64
// CHECK:       %[[P1:.*]] = arith.constant 1 : i64
// CHECK:       call @act_kernel_conv_2d_nchw_fchw_backward_data_f32(%[[DYC]], %[[WC]], %[[DXC]], %[[S0]], %[[S1]], %[[D0]], %[[D1]], %[[P0]], %[[P1]])
// CHECK-NEXT:  memref.dealloc %[[DY]]
// CHECK-NEXT:  return
func.func @backward_data(%g: memref<2x16x4x4xf32>, %w: memref<16x8x3x3xf32>, %dx: memref<2x8x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %dy = memref.alloc() : memref<2x16x4x4xf32>
  memref.copy %g, %dy : memref<2x16x4x4xf32> to memref<2x16x4x4xf32>
  %p = memref.alloc() : memref<2x16x10x10xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<2x16x10x10xf32>)
  %s = memref.subview %p[0, 0, 1, 1] [2, 16, 4, 4] [1, 1, 2, 2] : memref<2x16x10x10xf32> to memref<2x16x4x4xf32, strided<[1600, 100, 20, 2], offset: 11>>
  memref.copy %dy, %s : memref<2x16x4x4xf32> to memref<2x16x4x4xf32, strided<[1600, 100, 20, 2], offset: 11>>
  memref.dealloc %dy : memref<2x16x4x4xf32>
  %f = memref.alloc() : memref<8x16x3x3xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, -d2 + 2, -d3 + 2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%w : memref<16x8x3x3xf32>) outs(%f : memref<8x16x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %f : memref<2x16x10x10xf32>, memref<8x16x3x3xf32>) outs(%dx : memref<2x8x8x8xf32>)
  memref.dealloc %f : memref<8x16x3x3xf32>
  memref.dealloc %p : memref<2x16x10x10xf32>
  return
}

// -----

// The output gradient computed in place, into the interior of its padded
// buffer, which the weight gradient also reads (through a view): the
// kernel reads the interior alone, so the interior moves to a buffer of
// its own (zeroed where the padded one was), the producer writes there and
// the view reads the same elements there; the padded buffer goes.
// CHECK-LABEL: func.func @backward_data_in_place
// CHECK-NOT:   2x16x10x10
// CHECK:       %[[O:.*]] = memref.alloc() : memref<2x16x8x8xf32>
// CHECK:       linalg.fill ins(%{{.*}} : f32) outs(%[[O]] : memref<2x16x8x8xf32>)
// CHECK:       linalg.generic {{.*}} outs(%[[O]] : memref<2x16x8x8xf32>)
// CHECK:       %[[V:.*]] = memref.reinterpret_cast %[[O]] to offset: [0], sizes: [16, 2, 8, 8], strides: [64, 1024, 8, 1]
// CHECK:       memref.copy %[[V]], %{{.*}} : memref<16x2x8x8xf32, strided<[64, 1024, 8, 1]>> to memref<16x2x8x8xf32>
// CHECK-NOT:   linalg.generic
// CHECK:       %[[SC:.*]] = memref.cast %[[O]]
// CHECK:       call @act_kernel_conv_2d_nchw_fchw_backward_data_f32(%[[SC]], {{.*}})
// CHECK-NEXT:  memref.dealloc %[[O]]
// CHECK-NOT:   2x16x10x10
func.func @backward_data_in_place(%a: memref<2x16x8x8xf32>, %w: memref<16x8x3x3xf32>, %dx: memref<2x8x8x8xf32>,
                                  %gt: memref<16x2x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<2x16x10x10xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<2x16x10x10xf32>)
  %s = memref.subview %p[0, 0, 1, 1] [2, 16, 8, 8] [1, 1, 1, 1] : memref<2x16x10x10xf32> to memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%a : memref<2x16x8x8xf32>) outs(%s : memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  }
  %v = memref.reinterpret_cast %s to offset: [11], sizes: [16, 2, 8, 8], strides: [100, 1600, 10, 1] : memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>> to memref<16x2x8x8xf32, strided<[100, 1600, 10, 1], offset: 11>>
  memref.copy %v, %gt : memref<16x2x8x8xf32, strided<[100, 1600, 10, 1], offset: 11>> to memref<16x2x8x8xf32>
  %f = memref.alloc() : memref<8x16x3x3xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, -d2 + 2, -d3 + 2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%w : memref<16x8x3x3xf32>) outs(%f : memref<8x16x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %f : memref<2x16x10x10xf32>, memref<8x16x3x3xf32>) outs(%dx : memref<2x8x8x8xf32>)
  memref.dealloc %f : memref<8x16x3x3xf32>
  memref.dealloc %p : memref<2x16x10x10xf32>
  return
}

// A strided 1x1 convolution's input gradient as the exporter writes it:
// the output gradient spread into zeros at stride 2 (computed there in
// place, half a batch at a time, and read for the weight gradient through
// a transposed view of the buffer itself), convolved with the weight
// transposed; a 1x1 weight read backwards is `-d2, -d3` (no constant).
// The kernel's input gradient at stride 2 on a contiguous buffer of the
// gradient's own shape: the 4x larger spread buffer goes, and the chunks'
// subviews and the view are the same views of the new buffer.
// CHECK-LABEL: func.func @backward_data_strided_1x1_in_place
// CHECK-NOT:   2x8x8x8
// CHECK:       %[[O:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x8x4x4xf32>
// CHECK:       linalg.fill ins(%{{.*}} : f32) outs(%[[O]] : memref<2x8x4x4xf32>)
// CHECK:       scf.for %[[I:.*]] =
// CHECK:         %[[C:.*]] = memref.subview %[[O]][%[[I]], 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : memref<2x8x4x4xf32> to memref<1x8x4x4xf32, strided<[128, 16, 4, 1], offset: ?>>
// CHECK:         linalg.generic {{.*}} outs(%[[C]]
// CHECK:       %[[V:.*]] = memref.reinterpret_cast %[[O]] to offset: [0], sizes: [8, 2, 4, 4], strides: [16, 128, 4, 1]
// CHECK:       memref.copy %[[V]]
// CHECK:       %[[SC:.*]] = memref.cast %[[O]]
// CHECK:       call @act_kernel_conv_2d_nchw_fchw_backward_data_f32(%[[SC]], %{{.*}}, %{{.*}}, %c2_i64, %c2_i64{{.*}}, %c1_i64{{.*}}, %c1_i64{{.*}}, %c0_i64{{.*}}, %c0_i64{{.*}})
// CHECK-NEXT:  memref.dealloc %[[O]]
// CHECK-NOT:   2x8x8x8
func.func @backward_data_strided_1x1_in_place(%a: memref<2x8x4x4xf32>, %w: memref<8x4x1x1xf32>, %dx: memref<2x4x8x8xf32>,
                                              %gt: memref<8x2x4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %p = memref.alloc() {alignment = 64 : i64} : memref<2x8x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<2x8x8x8xf32>)
  %s = memref.subview %p[0, 0, 0, 0] [2, 8, 4, 4] [1, 1, 2, 2] : memref<2x8x8x8xf32> to memref<2x8x4x4xf32, strided<[512, 64, 16, 2]>>
  scf.for %i = %c0 to %c2 step %c1 {
    %c = memref.subview %s[%i, 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : memref<2x8x4x4xf32, strided<[512, 64, 16, 2]>> to memref<1x8x4x4xf32, strided<[512, 64, 16, 2], offset: ?>>
    %ac = memref.subview %a[%i, 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : memref<2x8x4x4xf32> to memref<1x8x4x4xf32, strided<[128, 16, 4, 1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ac : memref<1x8x4x4xf32, strided<[128, 16, 4, 1], offset: ?>>) outs(%c : memref<1x8x4x4xf32, strided<[512, 64, 16, 2], offset: ?>>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %in : f32
      linalg.yield %m : f32
    }
  }
  %v = memref.reinterpret_cast %p to offset: [0], sizes: [8, 2, 4, 4], strides: [64, 512, 16, 2] : memref<2x8x8x8xf32> to memref<8x2x4x4xf32, strided<[64, 512, 16, 2]>>
  memref.copy %v, %gt : memref<8x2x4x4xf32, strided<[64, 512, 16, 2]>> to memref<8x2x4x4xf32>
  %f = memref.alloc() : memref<4x8x1x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, -d2, -d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%w : memref<8x4x1x1xf32>) outs(%f : memref<4x8x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %f : memref<2x8x8x8xf32>, memref<4x8x1x1xf32>) outs(%dx : memref<2x4x8x8xf32>)
  memref.dealloc %f : memref<4x8x1x1xf32>
  memref.dealloc %p : memref<2x8x8x8xf32>
  return
}

// -----

// A view of the spread buffer that reaches past the gradient's elements
// (here the whole first row, zeros between them) reads what the kernel
// would not: the convolution stays as it is.
// CHECK-LABEL: func.func @spread_view_outside_region
// CHECK-NOT:   backward_data
// CHECK:       memref.alloc() : memref<2x8x8x8xf32>
// CHECK:       call @act_kernel_conv_2d_nchw_fchw_f32
func.func @spread_view_outside_region(%a: memref<2x8x4x4xf32>, %w: memref<8x4x1x1xf32>, %dx: memref<2x4x8x8xf32>,
                                      %gt: memref<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<2x8x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<2x8x8x8xf32>)
  %s = memref.subview %p[0, 0, 0, 0] [2, 8, 4, 4] [1, 1, 2, 2] : memref<2x8x8x8xf32> to memref<2x8x4x4xf32, strided<[512, 64, 16, 2]>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%a : memref<2x8x4x4xf32>) outs(%s : memref<2x8x4x4xf32, strided<[512, 64, 16, 2]>>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %v = memref.reinterpret_cast %p to offset: [0], sizes: [8, 8], strides: [64, 1] : memref<2x8x8x8xf32> to memref<8x8xf32, strided<[64, 1]>>
  memref.copy %v, %gt : memref<8x8xf32, strided<[64, 1]>> to memref<8x8xf32>
  %f = memref.alloc() : memref<4x8x1x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, -d2, -d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%w : memref<8x4x1x1xf32>) outs(%f : memref<4x8x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %f : memref<2x8x8x8xf32>, memref<4x8x1x1xf32>) outs(%dx : memref<2x4x8x8xf32>)
  memref.dealloc %f : memref<4x8x1x1xf32>
  memref.dealloc %p : memref<2x8x8x8xf32>
  return
}

// -----

// The same in the step for every batch size: the batch is dynamic, the
// spread buffer's and the gradient's (of the same size value), and so is
// the new buffer's.
// CHECK-LABEL: func.func @backward_data_strided_dynamic_batch
// CHECK-SAME:  (%[[A:.*]]: memref<?x8x4x4xf32>
// CHECK-NOT:   x8x8x8
// CHECK:       %[[N:.*]] = memref.dim %[[A]], %c0
// CHECK:       %[[O:.*]] = memref.alloc(%[[N]]) : memref<?x8x4x4xf32>
// CHECK:       linalg.generic {{.*}} outs(%[[O]] : memref<?x8x4x4xf32>)
// CHECK:       %[[SC:.*]] = memref.cast %[[O]]
// CHECK:       call @act_kernel_conv_2d_nchw_fchw_backward_data_f32(%[[SC]], {{.*}})
// CHECK-NEXT:  memref.dealloc %[[O]]
func.func @backward_data_strided_dynamic_batch(%a: memref<?x8x4x4xf32>, %w: memref<8x4x1x1xf32>, %dx: memref<?x4x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x8x4x4xf32>
  %p = memref.alloc(%n) : memref<?x8x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<?x8x8x8xf32>)
  %s = memref.subview %p[0, 0, 0, 0] [%n, 8, 4, 4] [1, 1, 2, 2] : memref<?x8x8x8xf32> to memref<?x8x4x4xf32, strided<[512, 64, 16, 2]>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%a : memref<?x8x4x4xf32>) outs(%s : memref<?x8x4x4xf32, strided<[512, 64, 16, 2]>>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %f = memref.alloc() : memref<4x8x1x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, -d2, -d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%w : memref<8x4x1x1xf32>) outs(%f : memref<4x8x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %f : memref<?x8x8x8xf32>, memref<4x8x1x1xf32>) outs(%dx : memref<?x4x8x8xf32>)
  memref.dealloc %f : memref<4x8x1x1xf32>
  memref.dealloc %p : memref<?x8x8x8xf32>
  return
}

// -----

// A spread buffer whose batch is not the gradient's whole batch (a size
// value of its own) stays.
// CHECK-LABEL: func.func @spread_dynamic_part_of_batch
// CHECK-NOT:   backward_data
// CHECK:       call @act_kernel_conv_2d_nchw_fchw_f32
func.func @spread_dynamic_part_of_batch(%a: memref<?x8x4x4xf32>, %w: memref<8x4x1x1xf32>, %dx: memref<?x4x8x8xf32>, %m: index) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x8x4x4xf32>
  %p = memref.alloc(%n) : memref<?x8x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<?x8x8x8xf32>)
  %s = memref.subview %p[0, 0, 0, 0] [%m, 8, 4, 4] [1, 1, 2, 2] : memref<?x8x8x8xf32> to memref<?x8x4x4xf32, strided<[512, 64, 16, 2]>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%a : memref<?x8x4x4xf32>) outs(%s : memref<?x8x4x4xf32, strided<[512, 64, 16, 2]>>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %f = memref.alloc() : memref<4x8x1x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, -d2, -d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%w : memref<8x4x1x1xf32>) outs(%f : memref<4x8x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %f : memref<?x8x8x8xf32>, memref<4x8x1x1xf32>) outs(%dx : memref<?x4x8x8xf32>)
  memref.dealloc %f : memref<4x8x1x1xf32>
  memref.dealloc %p : memref<?x8x8x8xf32>
  return
}

// -----

// A filter that is the weight transposed but not read backwards is no
// input gradient: the convolution on the padded copy stays a convolution.
// CHECK-LABEL: func.func @not_reversed
// CHECK-NOT:   backward_data
// CHECK:       call @act_kernel_conv_2d_nchw_fchw_f32
func.func @not_reversed(%g: memref<2x16x8x8xf32>, %w: memref<16x8x3x3xf32>, %dx: memref<2x8x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<2x16x10x10xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<2x16x10x10xf32>)
  %s = memref.subview %p[0, 0, 1, 1] [2, 16, 8, 8] [1, 1, 1, 1] : memref<2x16x10x10xf32> to memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>
  memref.copy %g, %s : memref<2x16x8x8xf32> to memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>
  %t = memref.alloc() : memref<8x16x3x3xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%w : memref<16x8x3x3xf32>) outs(%t : memref<8x16x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %t : memref<2x16x10x10xf32>, memref<8x16x3x3xf32>) outs(%dx : memref<2x8x8x8xf32>)
  memref.dealloc %t : memref<8x16x3x3xf32>
  memref.dealloc %p : memref<2x16x10x10xf32>
  return
}

// -----

// Input gradients computed a chunk of the batch at a time
// (act-chunk-in-passes), in two loops: each loop's spread buffer is
// allocated around it (buffer-loop-hoisting) and filled and copied into
// inside it, and both read one flipped weight made before the loops. Each
// convolution becomes the kernel's input gradient on its chunk and the
// weight; the flip and its buffer go with the last of them.
// CHECK-LABEL: func.func @backward_data_in_loops
// CHECK:       memref.alloc() : memref<4x8x8x8xf32>
// CHECK:       memref.alloc() : memref<4x8x8x8xf32>
// CHECK-NOT:   memref.alloc() : memref<8x16x3x3xf32>
// CHECK-NOT:   memref.alloc() : memref<2x16x10x10xf32>
// CHECK:       scf.for
// CHECK:         call @act_kernel_conv_2d_nchw_fchw_backward_data_f32
// CHECK:       scf.for
// CHECK:         call @act_kernel_conv_2d_nchw_fchw_backward_data_f32
// CHECK-NOT:   linalg.generic
// CHECK:       return
#flip = affine_map<(d0, d1, d2, d3) -> (d1, d0, -d2 + 2, -d3 + 2)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @backward_data_in_loops(%g: memref<4x16x8x8xf32>, %w: memref<16x8x3x3xf32>,
                                  %res: memref<4x8x8x8xf32>, %res2: memref<4x8x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  // Fresh buffers: a function argument might be the weight itself.
  %dx = memref.alloc() : memref<4x8x8x8xf32>
  %dx2 = memref.alloc() : memref<4x8x8x8xf32>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %f = memref.alloc() : memref<8x16x3x3xf32>
  linalg.generic {indexing_maps = [#flip, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%w : memref<16x8x3x3xf32>) outs(%f : memref<8x16x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %p = memref.alloc() : memref<2x16x10x10xf32>
  scf.for %i = %c0 to %c4 step %c2 {
    linalg.fill ins(%zero : f32) outs(%p : memref<2x16x10x10xf32>)
    %gi = memref.subview %g[%i, 0, 0, 0] [2, 16, 8, 8] [1, 1, 1, 1] : memref<4x16x8x8xf32> to memref<2x16x8x8xf32, strided<[1024, 64, 8, 1], offset: ?>>
    %s = memref.subview %p[0, 0, 1, 1] [2, 16, 8, 8] [1, 1, 1, 1] : memref<2x16x10x10xf32> to memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>
    memref.copy %gi, %s : memref<2x16x8x8xf32, strided<[1024, 64, 8, 1], offset: ?>> to memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>
    %o1 = memref.subview %dx[%i, 0, 0, 0] [2, 8, 8, 8] [1, 1, 1, 1] : memref<4x8x8x8xf32> to memref<2x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>
    linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %f : memref<2x16x10x10xf32>, memref<8x16x3x3xf32>) outs(%o1 : memref<2x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>)
  }
  memref.dealloc %p : memref<2x16x10x10xf32>
  %q = memref.alloc() : memref<2x16x10x10xf32>
  scf.for %i = %c0 to %c4 step %c2 {
    linalg.fill ins(%zero : f32) outs(%q : memref<2x16x10x10xf32>)
    %gi = memref.subview %g[%i, 0, 0, 0] [2, 16, 8, 8] [1, 1, 1, 1] : memref<4x16x8x8xf32> to memref<2x16x8x8xf32, strided<[1024, 64, 8, 1], offset: ?>>
    %s = memref.subview %q[0, 0, 1, 1] [2, 16, 8, 8] [1, 1, 1, 1] : memref<2x16x10x10xf32> to memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>
    memref.copy %gi, %s : memref<2x16x8x8xf32, strided<[1024, 64, 8, 1], offset: ?>> to memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>
    %o = memref.subview %dx2[%i, 0, 0, 0] [2, 8, 8, 8] [1, 1, 1, 1] : memref<4x8x8x8xf32> to memref<2x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>
    linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%q, %f : memref<2x16x10x10xf32>, memref<8x16x3x3xf32>) outs(%o : memref<2x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>)
  }
  memref.dealloc %q : memref<2x16x10x10xf32>
  memref.dealloc %f : memref<8x16x3x3xf32>
  memref.copy %dx, %res : memref<4x8x8x8xf32> to memref<4x8x8x8xf32>
  memref.copy %dx2, %res2 : memref<4x8x8x8xf32> to memref<4x8x8x8xf32>
  memref.dealloc %dx : memref<4x8x8x8xf32>
  memref.dealloc %dx2 : memref<4x8x8x8xf32>
  return
}
