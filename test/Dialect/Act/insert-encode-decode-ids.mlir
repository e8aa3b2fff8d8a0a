// include/exclude ids that name no saved value are said, not ignored
// silently; negative ids are refused before any IR is read.
// RUN: act-opt %s -act-insert-encode-decode="include=999" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: warning: act-insert-encode-decode: no saved value has id 999 (the module's training graphs save 2 values, ids 0..1)
// RUN: not act-opt %s -act-insert-encode-decode="include=-1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: act-insert-encode-decode option 'include':0:0: error: act-insert-encode-decode: saved-value ids are not negative, got -1
// RUN: not act-opt %s -act-insert-encode-decode="exclude=-2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXCLUDE
// EXCLUDE: act-insert-encode-decode option 'exclude':0:0: error: act-insert-encode-decode: saved-value ids are not negative, got -2
// RUN: not act-opt %s -act-insert-encode-decode="min-bytes=-4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MINBYTES
// MINBYTES: act-insert-encode-decode option 'min-bytes':0:0: error: act-insert-encode-decode: min-bytes must not be negative, got -4
// RUN: act-opt %s -act-insert-encode-decode="include=0 min-bytes=0" 2>&1 | FileCheck %s --check-prefix=OK --implicit-check-not=warning
// OK: act.encode

func.func @step(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> (tensor<f32> {act.loss}, tensor<64x64xf32>) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %h = linalg.matmul ins(%x, %w : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) -> tensor<64x64xf32>
  %t = math.tanh %h : tensor<64x64xf32>
  %se = tensor.empty() : tensor<f32>
  %s0 = linalg.fill ins(%c0 : f32) outs(%se : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%t : tensor<64x64xf32>) outs(%s0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %init: f32) {
      %a = arith.addf %in, %init : f32
      linalg.yield %a : f32
    }
  %one = arith.constant 1.0 : f32
  %o = linalg.fill ins(%one : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %t2 = arith.mulf %t, %t : tensor<64x64xf32>
  %d = arith.subf %o, %t2 : tensor<64x64xf32>
  %xt = linalg.transpose ins(%x : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) permutation = [1, 0]
  %gw = linalg.matmul ins(%xt, %d : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %s, %gw : tensor<f32>, tensor<64x64xf32>
}
