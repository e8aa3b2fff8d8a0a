// RUN: act-opt %s -act-cpu-pipeline -mlir-print-ir-after=convert-linalg-to-act-kernels -o /dev/null 2>&1 | FileCheck %s

// A stride-2 convolution's backward as the exporter writes it takes the
// kernels' fast path through the whole pipeline: the input gradient is the
// kernel's backward data on the output gradient and the weight (no spread
// copy, no flipped weight), the weight gradient is written into its place
// by the convolution kernel (no transposing copy), and nothing is left for
// loops (a regression to naive loops or to copies fails here).
// CHECK-LABEL: func.func @conv_backward
// CHECK-NOT:   linalg.generic
// CHECK:       %[[DW:.*]] = memref.reinterpret_cast {{.*}} strides: [9, 72, 3, 1]
// CHECK-NEXT:  linalg.fill {{.*}} outs(%[[DW]] :
// CHECK-NOT:   linalg.generic
// CHECK:       call @act_kernel_conv_2d_nchw_fchw_f32(
// CHECK-NOT:   linalg.generic
// CHECK:       call @act_kernel_conv_2d_nchw_fchw_backward_data_f32(
// CHECK-NOT:   act_kernel_copy
// CHECK-NOT:   linalg.conv
// CHECK:       return
func.func @conv_backward(%x: tensor<2x8x8x8xf32>, %w: tensor<16x8x3x3xf32>, %dy: tensor<2x16x4x4xf32>)
    -> (tensor<2x8x8x8xf32>, tensor<16x8x3x3xf32>) {
  %cst = arith.constant 0.0 : f32
  %pad = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %cst : f32
  } : tensor<2x8x8x8xf32> to tensor<2x8x10x10xf32>
  %window = tensor.extract_slice %pad[0, 0, 0, 0] [2, 8, 9, 9] [1, 1, 1, 1] : tensor<2x8x10x10xf32> to tensor<2x8x9x9xf32>
  %e0 = tensor.empty() : tensor<8x2x9x9xf32>
  %xt = linalg.transpose ins(%window : tensor<2x8x9x9xf32>) outs(%e0 : tensor<8x2x9x9xf32>) permutation = [1, 0, 2, 3]
  %e1 = tensor.empty() : tensor<16x2x4x4xf32>
  %gt = linalg.transpose ins(%dy : tensor<2x16x4x4xf32>) outs(%e1 : tensor<16x2x4x4xf32>) permutation = [1, 0, 2, 3]
  %e2 = tensor.empty() : tensor<8x16x3x3xf32>
  %f2 = linalg.fill ins(%cst : f32) outs(%e2 : tensor<8x16x3x3xf32>) -> tensor<8x16x3x3xf32>
  %dwt = linalg.conv_2d_nchw_fchw {dilations = dense<[2, 2]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
    ins(%xt, %gt : tensor<8x2x9x9xf32>, tensor<16x2x4x4xf32>) outs(%f2 : tensor<8x16x3x3xf32>) -> tensor<8x16x3x3xf32>
  %e3 = tensor.empty() : tensor<16x8x3x3xf32>
  %dw = linalg.transpose ins(%dwt : tensor<8x16x3x3xf32>) outs(%e3 : tensor<16x8x3x3xf32>) permutation = [1, 0, 2, 3]
  %e4 = tensor.empty() : tensor<2x16x10x10xf32>
  %f4 = linalg.fill ins(%cst : f32) outs(%e4 : tensor<2x16x10x10xf32>) -> tensor<2x16x10x10xf32>
  %dilated = tensor.insert_slice %dy into %f4[0, 0, 1, 1] [2, 16, 4, 4] [1, 1, 2, 2] : tensor<2x16x4x4xf32> into tensor<2x16x10x10xf32>
  %e5 = tensor.empty() : tensor<8x16x3x3xf32>
  %flipped = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, 2 - d2, 2 - d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%w : tensor<16x8x3x3xf32>) outs(%e5 : tensor<8x16x3x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<8x16x3x3xf32>
  %e6 = tensor.empty() : tensor<2x8x8x8xf32>
  %f6 = linalg.fill ins(%cst : f32) outs(%e6 : tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %dx = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
    ins(%dilated, %flipped : tensor<2x16x10x10xf32>, tensor<8x16x3x3xf32>) outs(%f6 : tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  return %dx, %dw : tensor<2x8x8x8xf32>, tensor<16x8x3x3xf32>
}
