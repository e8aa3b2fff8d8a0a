// RUN: act-opt %s -split-input-file -act-memory-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: act-opt %s -split-input-file "-act-insert-encode-decode=encoding=#act.quant<bits=2> min-bytes=0" | FileCheck %s
// A row's statistics (LayerNorm's reciprocal standard deviation here: one
// value per row, [16, 1], read broadcast along the row by the backward's
// (d0, d1) -> (d0, 0)) are not encoded: every element of the row is scaled
// by it, so a code's error is the whole row's and does not average out (at
// 2 bits the language model's LayerNorm statistics carry a gradient bias,
// docs/Tuning.md). The matmul's input beside it is encoded as usual.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#bcast = affine_map<(d0, d1) -> (d0, 0)>

// REPORT-LABEL: act memory report: @norm_step
// REPORT-DAG: 0 linalg.generic 16x1 f32 {{.*}} row-statistics none
// REPORT-DAG: 1 linalg.generic 16x64 f32 {{.*}} encodable
// CHECK-LABEL: func.func @norm_step
// CHECK: = act.encode {{.*}} : tensor<16x64xf32> ->
// CHECK-NOT: = act.encode
// CHECK: return
func.func @norm_step(%x: tensor<16x64xf32>, %w1: tensor<64x64xf32>, %w2: tensor<64x64xf32>)
    -> (f32 {act.loss}, tensor<64x64xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<16x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<16x64xf32>) -> tensor<16x64xf32>
  // r = 1 / sqrt(sum_j h^2 + 1), one per row, kept as [16, 1].
  %ss0 = tensor.empty() : tensor<16xf32>
  %ss1 = linalg.fill ins(%zero : f32) outs(%ss0 : tensor<16xf32>) -> tensor<16xf32>
  %ss = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : tensor<16x64xf32>) outs(%ss1 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    %u = arith.addf %t, %o : f32
    linalg.yield %u : f32
  } -> tensor<16xf32>
  %ssc = tensor.expand_shape %ss [[0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
  %r0 = tensor.empty() : tensor<16x1xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%ssc : tensor<16x1xf32>) outs(%r0 : tensor<16x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %one : f32
    %u = math.rsqrt %t : f32
    linalg.yield %u : f32
  } -> tensor<16x1xf32>
  // y = h * r (LayerNorm's output, without the mean), z = y w2, loss = sum z.
  %y = linalg.generic {indexing_maps = [#id2, #bcast, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h, %r : tensor<16x64xf32>, tensor<16x1xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.mulf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<16x64xf32>
  %z = linalg.matmul ins(%y, %w2 : tensor<16x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<16x64xf32>) -> tensor<16x64xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%z : tensor<16x64xf32>) outs(%s1 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %init: f32) {
      %t = arith.addf %in, %init : f32
      linalg.yield %t : f32
    }
  %loss = tensor.extract %s[] : tensor<f32>
  // The backward (r treated as a constant): dz = 1, dw2 = y^T dz,
  // dy = dz w2^T, dh = dy * r (r broadcast over the row), dw1 = x^T dh.
  %edz = tensor.empty() : tensor<16x64xf32>
  %dz = linalg.fill ins(%one : f32) outs(%edz : tensor<16x64xf32>) -> tensor<16x64xf32>
  %ew = tensor.empty() : tensor<64x64xf32>
  %zw = linalg.fill ins(%zero : f32) outs(%ew : tensor<64x64xf32>) -> tensor<64x64xf32>
  %t0 = tensor.empty() : tensor<64x16xf32>
  %yt = linalg.transpose ins(%y : tensor<16x64xf32>) outs(%t0 : tensor<64x16xf32>) permutation = [1, 0]
  %dw2 = linalg.matmul ins(%yt, %dz : tensor<64x16xf32>, tensor<16x64xf32>) outs(%zw : tensor<64x64xf32>) -> tensor<64x64xf32>
  %w2t0 = tensor.empty() : tensor<64x64xf32>
  %w2t = linalg.transpose ins(%w2 : tensor<64x64xf32>) outs(%w2t0 : tensor<64x64xf32>) permutation = [1, 0]
  %ey = tensor.empty() : tensor<16x64xf32>
  %zy = linalg.fill ins(%zero : f32) outs(%ey : tensor<16x64xf32>) -> tensor<16x64xf32>
  %dy = linalg.matmul ins(%dz, %w2t : tensor<16x64xf32>, tensor<64x64xf32>) outs(%zy : tensor<16x64xf32>) -> tensor<16x64xf32>
  %edh = tensor.empty() : tensor<16x64xf32>
  %dh = linalg.generic {indexing_maps = [#id2, #bcast, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%dy, %r : tensor<16x64xf32>, tensor<16x1xf32>) outs(%edh : tensor<16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.mulf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<16x64xf32>
  %xt = linalg.transpose ins(%x : tensor<16x64xf32>) outs(%t0 : tensor<64x16xf32>) permutation = [1, 0]
  %dw1 = linalg.matmul ins(%xt, %dh : tensor<64x16xf32>, tensor<16x64xf32>) outs(%zw : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %loss, %dw1, %dw2 : f32, tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// The same [16, 1] tensor read element by element (a column, not a row's
// statistic: no broadcast) is encoded like any other value.

#id2 = affine_map<(d0, d1) -> (d0, d1)>

// REPORT-LABEL: act memory report: @column_step
// REPORT: 0 linalg.matmul 16x1 f32 {{.*}} encodable
// CHECK-LABEL: func.func @column_step
// CHECK: = act.encode {{.*}} : tensor<16x1xf32> ->
func.func @column_step(%x: tensor<16x64xf32>, %w: tensor<64x1xf32>) -> (f32 {act.loss}, tensor<16x1xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x1xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x1xf32>) -> tensor<16x1xf32>
  %h = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x1xf32>) outs(%acc : tensor<16x1xf32>) -> tensor<16x1xf32>
  %sq = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<16x1xf32>) outs(%e : tensor<16x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<16x1xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%sq : tensor<16x1xf32>) outs(%s1 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %init: f32) {
      %t = arith.addf %in, %init : f32
      linalg.yield %t : f32
    }
  %loss = tensor.extract %s[] : tensor<f32>
  // d tanh(h) = 1 - tanh(h)^2 reads h element by element.
  %dh = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<16x1xf32>) outs(%e : tensor<16x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %t = math.tanh %a : f32
    %u = arith.mulf %t, %t : f32
    %v = arith.subf %one, %u : f32
    linalg.yield %v : f32
  } -> tensor<16x1xf32>
  return %loss, %dh : f32, tensor<16x1xf32>
}
