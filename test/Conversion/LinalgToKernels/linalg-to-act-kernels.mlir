// RUN: act-opt %s -convert-linalg-to-act-kernels -split-input-file | FileCheck %s
// RUN: act-opt %s -convert-linalg-to-act-kernels=min-macs=3000000 -split-input-file | FileCheck %s --check-prefix=SMALL

// f32 contractions and convolutions on buffers call the runtime's kernels
// (C interface: descriptor pointers), operands cast to fully dynamic strided
// memrefs, convolution strides then dilations as i64.
// CHECK-LABEL: func.func private @act_kernel_conv_2d_nchw_fchw_f32(memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, i64, i64, i64, i64) attributes {llvm.emit_c_interface}
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
// CHECK: call @act_kernel_conv_2d_nchw_fchw_f32({{.*}}, %[[S0]], %[[S1]], %[[D0]], %[[D1]])
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
