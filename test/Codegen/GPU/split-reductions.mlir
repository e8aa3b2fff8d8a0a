// act-split-reductions: reductions with few outputs (a BatchNorm-like sum
// and max over batch and image into 32 channels, a weight gradient's
// convolution summed over the batch) write partial results over their
// outer reduction loops, which a second op combines. The same results:
// the max bit for bit, the f64 sum of f32 values bit for bit, the f32
// convolution within float32 reassociation.
// RUN: act-opt %s -act-split-reductions | FileCheck %s
// RUN: act-opt %s -act-split-reductions | FileCheck %s --check-prefix=SCALAR
// RUN: act-opt %s -act-split-reductions="min-threads=64" | FileCheck %s --check-prefix=FEW
// RUN: act-opt %s -act-split-reductions="max-partial-bytes=8192" | FileCheck %s --check-prefix=FEW
// The pipeline's option reaches the pass (act-run --gpu-max-partial-bytes;
// one thread, so that the functions print in order).
// RUN: act-opt %s "-act-gpu-pipeline=max-partial-bytes=8192" -mlir-disable-threading -mlir-print-ir-after=act-split-reductions -o /dev/null 2>&1 | FileCheck %s --check-prefix=FEW
// Negative options are errors at the option.
// RUN: not act-opt %s -act-split-reductions="max-partial-bytes=-1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not act-run %s --entry=stats --gpu-max-partial-bytes=-2 2>&1 | FileCheck %s --check-prefix=NEGEXEC
// BAD: act-split-reductions option 'max-partial-bytes':0:0: error: act-split-reductions: max-partial-bytes must be 0 or positive, got -1
// NEGEXEC: act-run: error: --gpu-max-partial-bytes must be 0 or positive, not -2
// RUN: rm -rf %t && mkdir -p %t
// RUN: act-opt %s -act-split-reductions -o %t/split.mlir
// RUN: act-run %s --entry=stats --output-dir=%t/whole > /dev/null
// RUN: act-run %t/split.mlir --entry=stats --output-dir=%t/split > /dev/null
// RUN: %python -c "import sys, numpy as np; d = sys.argv[1]; r = [(np.load(d + '/whole/result_%%d.npy' %% i), np.load(d + '/split/result_%%d.npy' %% i)) for i in range(3)]; assert (r[0][0] == r[0][1]).all() and (r[1][0] == r[1][1]).all(); np.testing.assert_allclose(r[2][1], r[2][0], rtol=1e-5, atol=1e-4 * np.abs(r[2][0]).max()); print('same results')" %t | FileCheck %s --check-prefix=SAME
// SAME: same results

// The sum: n and h become parallel (32 x 16 x 32 = 16,384 threads), w stays
// a reduction of 32 per thread; the 512 partials of each channel are split
// in turn (512 threads of 32, then 32 threads of 16), each combining op
// with the output's loops outermost, so that they map to threads.
// CHECK-DAG:   #[[$SWAP:map[0-9]*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG:   #[[$FIRST:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @stats
// CHECK:       %[[Z:.*]] = linalg.fill ins(%{{.*}} : f64) outs(%{{.*}} : tensor<32xf64>)
// CHECK:       %[[P0:.*]] = linalg.fill ins(%{{.*}} : f64) outs(%{{.*}} : tensor<16x32x32xf64>)
// CHECK:       %[[S:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}} : tensor<16x32x32x32xf32>) outs(%[[P0]] : tensor<16x32x32xf64>)
// CHECK:         arith.extf
// CHECK:         arith.addf
// CHECK:       %[[S2:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[S]] : tensor<16x32x32xf64>) outs(%{{.*}} : tensor<16x32xf64>)
// CHECK:       linalg.generic {indexing_maps = [#[[$SWAP]], #[[$FIRST]]], iterator_types = ["parallel", "reduction"]} ins(%[[S2]] : tensor<16x32xf64>) outs(%[[Z]] : tensor<32xf64>)
// CHECK-NEXT:  ^bb0(%[[IN:.*]]: f64, %[[OUT:.*]]: f64):
// CHECK-NEXT:    %[[T:.*]] = arith.addf %[[IN]], %[[OUT]] : f64
// CHECK-NEXT:    linalg.yield %[[T]]
// The max: partials start at -inf, the combiner keeps its operand order.
// CHECK:       arith.constant 0xFF800000 : f32
// CHECK:       linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}} : tensor<16x32x32xf32>) outs(%{{.*}} : tensor<16x32xf32>)
// CHECK:       linalg.generic {{{.*}}iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<16x32xf32>) outs(%{{.*}} : tensor<32xf32>)
// CHECK-NEXT:  ^bb0(%[[IN2:.*]]: f32, %[[OUT2:.*]]: f32):
// CHECK-NEXT:    arith.maximumf %[[OUT2]], %[[IN2]] : f32
// The convolution, generalized: its summed batch (16) in parallel beside
// its 288 outputs (4,608 threads; its first image loop too would take 576
// KiB of partials, over max-partial-bytes), the 16 partials of each output
// combined.
// CHECK-NOT:   linalg.conv_2d_nchw_fchw
// CHECK:       linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} {{.*}} outs(%{{.*}} : tensor<16x4x8x3x3xf32>)
// CHECK:       linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}} : tensor<16x4x8x3x3xf32>) outs(%{{.*}} : tensor<4x8x3x3xf32>)

// Left alone: enough outputs already (the transposes have no reduction).
// CHECK:       linalg.transpose

// With min-threads=64 only the batch loop goes parallel (32 x 16 = 512);
// so too with max-partial-bytes=8192 (512 f64 partials take 4 KiB, 16,384
// would take 128 KiB).
// FEW-LABEL: func.func @stats
// FEW:       linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<16x32x32x32xf32>) outs(%{{.*}} : tensor<16x32xf64>)

// A reduction loop before a parallel one, with enough outputs not to be
// split, is interchanged so that the parallel loop comes first (and maps
// to threads); the reduction keeps its order.
// CHECK-LABEL: func.func @rows
// CHECK:       linalg.generic {indexing_maps = [#[[$SWAP]], #[[$FIRST]]], iterator_types = ["parallel", "reduction"]}
// CHECK:         linalg.index 0
// CHECK:         linalg.index 1
// FEW-LABEL: func.func @rows

#x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @stats(%x: tensor<16x32x32x32xf32>, %dy: tensor<16x8x32x32xf32>, %xin: tensor<16x4x34x34xf32>) -> (tensor<32xf64>, tensor<32xf32>, tensor<8x4x3x3xf32>) {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<32xf64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<32xf64>) -> tensor<32xf64>
  %s = linalg.generic {indexing_maps = [#x, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%x : tensor<16x32x32x32xf32>) outs(%f : tensor<32xf64>) {
  ^bb0(%in: f32, %acc: f64):
    %w = arith.extf %in : f32 to f64
    %t = arith.addf %w, %acc : f64
    linalg.yield %t : f64
  } -> tensor<32xf64>
  %ninf = arith.constant 0xFF800000 : f32
  %e2 = tensor.empty() : tensor<32xf32>
  %f2 = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<32xf32>) -> tensor<32xf32>
  %m = linalg.generic {indexing_maps = [#x, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%x : tensor<16x32x32x32xf32>) outs(%f2 : tensor<32xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %t = arith.maximumf %acc, %in : f32
    linalg.yield %t : f32
  } -> tensor<32xf32>
  // A weight gradient: batch and channels swapped, the batch summed.
  %z32 = arith.constant 0.0 : f32
  %xt = tensor.empty() : tensor<4x16x34x34xf32>
  %xT = linalg.transpose ins(%xin : tensor<16x4x34x34xf32>) outs(%xt : tensor<4x16x34x34xf32>) permutation = [1, 0, 2, 3]
  %dt = tensor.empty() : tensor<8x16x32x32xf32>
  %dT = linalg.transpose ins(%dy : tensor<16x8x32x32xf32>) outs(%dt : tensor<8x16x32x32xf32>) permutation = [1, 0, 2, 3]
  %ge = tensor.empty() : tensor<4x8x3x3xf32>
  %gz = linalg.fill ins(%z32 : f32) outs(%ge : tensor<4x8x3x3xf32>) -> tensor<4x8x3x3xf32>
  %g = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%xT, %dT : tensor<4x16x34x34xf32>, tensor<8x16x32x32xf32>) outs(%gz : tensor<4x8x3x3xf32>) -> tensor<4x8x3x3xf32>
  %gwe = tensor.empty() : tensor<8x4x3x3xf32>
  %gw = linalg.transpose ins(%g : tensor<4x8x3x3xf32>) outs(%gwe : tensor<8x4x3x3xf32>) permutation = [1, 0, 2, 3]
  return %s, %m, %gw : tensor<32xf64>, tensor<32xf32>, tensor<8x4x3x3xf32>
}

// A sum over rows (reduction loop first) with 65,536 outputs: not split.
func.func @rows(%x: tensor<4x65536xf32>) -> tensor<65536xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<65536xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<65536xf32>) -> tensor<65536xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<4x65536xf32>) outs(%f : tensor<65536xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %i = linalg.index 1 : index
    %r = linalg.index 0 : index
    %t = arith.addf %in, %acc : f32
    linalg.yield %t : f32
  } -> tensor<65536xf32>
  return %s : tensor<65536xf32>
}

// A reduction to a 0-d tensor (the fuzzer's mutated transformer): the
// combine's output map has no results (getMajorSubMap(0) was a null map,
// and the pass crashed).
// SCALAR-LABEL: func.func @to_scalar
// SCALAR:       linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<256x4096xf32>) outs(%{{.*}} : tensor<256xf32>)
// SCALAR:       linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<256xf32>) outs(%{{.*}} : tensor<f32>)
func.func @to_scalar(%x: tensor<256x4096xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<256x4096xf32>) outs(%init : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
