// RUN: act-opt %s -convert-linalg-to-act-kernels=gpu -split-input-file | FileCheck %s

// On the GPU (act-gpu-pipeline{libraries}): f32 matmuls and convolutions
// call act_gpu_kernel_* (cuBLAS, cuDNN: act/runtime/CudaLibraries.h) from
// the host code. A convolution whose output is smaller than cuDNN's
// symmetric padding gives stays a loop nest (a generated kernel), and so do
// transposes (the CPU's copy kernel has no GPU counterpart: copies are
// kernels there).
// CHECK-LABEL: func.func private @act_gpu_kernel_conv_2d_nchw_fchw_f32(
// CHECK-LABEL: func.func private @act_gpu_kernel_matmul_f32(
// CHECK-LABEL: func.func @step
// CHECK: call @act_gpu_kernel_matmul_f32
// CHECK: call @act_gpu_kernel_conv_2d_nchw_fchw_f32
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} outs(%arg6 : memref<2x16x8x8xf32>)
// CHECK: linalg.transpose
// CHECK-NOT: call
func.func @step(%a: memref<64x256xf32>, %b: memref<256x128xf32, strided<[1, 256]>>,
                %c: memref<64x128xf32>, %x: memref<2x8x20x20xf32>,
                %w: memref<16x8x3x3xf32>, %y: memref<2x16x9x9xf32>,
                %short: memref<2x16x8x8xf32>, %t: memref<128x64xf32>) {
  linalg.matmul ins(%a, %b : memref<64x256xf32>, memref<256x128xf32, strided<[1, 256]>>)
                outs(%c : memref<64x128xf32>)
  // (20 - 3) / 2 + 1 = 9 rows: cuDNN's size.
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<2x8x20x20xf32>, memref<16x8x3x3xf32>)
    outs(%y : memref<2x16x9x9xf32>)
  // 8 rows of the 9 it could have: cuDNN cannot say so.
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<2x8x20x20xf32>, memref<16x8x3x3xf32>)
    outs(%short : memref<2x16x8x8xf32>)
  linalg.transpose ins(%c : memref<64x128xf32>) outs(%t : memref<128x64xf32>) permutation = [1, 0]
  return
}

// -----

// The weight gradient as the exporter writes it (kernel: the output
// gradient, larger than the output): cuDNN's sizes fit its transposed
// reading (the forward convolution), so it is a call too.
// CHECK-LABEL: func.func @weight_gradient
// CHECK: call @act_gpu_kernel_conv_2d_nchw_fchw_f32
func.func @weight_gradient(%xT: memref<8x4x12x12xf32>, %dyT: memref<16x4x10x10xf32>,
                           %dwT: memref<8x16x3x3xf32>) {
  // Forward: a 10x10 input padded to 12x12, 3x3 kernel, 10x10 output.
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%xT, %dyT : memref<8x4x12x12xf32>, memref<16x4x10x10xf32>)
    outs(%dwT : memref<8x16x3x3xf32>)
  return
}
