// act-run with and without act-pool-in-place: a max pool reading a
// reduction's fresh 32 KiB result (its input dies there) writes its 8 KiB
// output into that buffer, which gives back its tail: the results are the
// same bits, and the measured peak (act's allocation hooks) drops by the
// output's 8 KiB. The static estimate (peak-report) agrees.
// RUN: rm -rf %t && mkdir -p %t
// RUN: act-run %s --entry=pool --output-dir=%t/in_place | FileCheck %s --check-prefix=IN-PLACE
// RUN: act-run %s --entry=pool --pool-in-place=false --output-dir=%t/apart | FileCheck %s --check-prefix=APART
// RUN: for i in 0 1 2; do cmp %t/in_place/result_$i.npy %t/apart/result_$i.npy || exit 1; done
// RUN: act-opt %s "-act-cpu-pipeline=peak-report=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATIC
// RUN: act-opt %s "-act-cpu-pipeline=pool-in-place=false peak-report=-" -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATIC-APART
// Apart: the 32 KiB sums, the 8 KiB maxima, the 2 KiB indices (and the
// 32-byte channel sums) at once; in place, the maxima are the sums' buffer.
// IN-PLACE: memory: peak 34944 bytes
// APART:    memory: peak 43136 bytes
// STATIC:       buffer peak of @pool: 34864 bytes
// STATIC-APART: buffer peak of @pool: 43056 bytes
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @pool(%xin: tensor<4x8x16x16x2xf32>) -> (tensor<4x8x8x8xf32>, tensor<4x8x8x8xi8>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ce = tensor.empty() : tensor<4x8x16x16xf32>
  %cz = linalg.fill ins(%zero : f32) outs(%ce : tensor<4x8x16x16xf32>) -> tensor<4x8x16x16xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%xin : tensor<4x8x16x16x2xf32>) outs(%cz : tensor<4x8x16x16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %t = arith.addf %in, %acc : f32
    linalg.yield %t : f32
  } -> tensor<4x8x16x16xf32>
  %e = tensor.empty() : tensor<4x8x16x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<4x8x16x16xf32>) outs(%e : tensor<4x8x16x16xf32>) {
  ^bb0(%in: f32, %unused: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8x16x16xf32>
  %se = tensor.empty() : tensor<8xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1, d2, d3) -> (d1)>], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%r : tensor<4x8x16x16xf32>) outs(%sz : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %t = arith.addf %in, %acc : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %w = tensor.empty() : tensor<2x2xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %o0 = tensor.empty() : tensor<4x8x8x8xf32>
  %o = linalg.fill ins(%ninf : f32) outs(%o0 : tensor<4x8x8x8xf32>) -> tensor<4x8x8x8xf32>
  %c0 = arith.constant 0 : i8
  %i0 = tensor.empty() : tensor<4x8x8x8xi8>
  %i = linalg.fill ins(%c0 : i8) outs(%i0 : tensor<4x8x8x8xi8>) -> tensor<4x8x8x8xi8>
  %p:2 = linalg.generic {indexing_maps = [#in, #win, #out, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%r, %w : tensor<4x8x16x16xf32>, tensor<2x2xf32>) outs(%o, %i : tensor<4x8x8x8xf32>, tensor<4x8x8x8xi8>) {
  ^bb0(%in: f32, %win: f32, %acc: f32, %arg: i8):
    %k0 = linalg.index 4 : index
    %k1 = linalg.index 5 : index
    %c2 = arith.constant 2 : index
    %k = arith.muli %k0, %c2 : index
    %l = arith.addi %k, %k1 : index
    %gt = arith.cmpf ogt, %in, %acc : f32
    %v = arith.select %gt, %in, %acc : f32
    %li = arith.index_cast %l : index to i8
    %a = arith.select %gt, %li, %arg : i8
    linalg.yield %v, %a : f32, i8
  } -> (tensor<4x8x8x8xf32>, tensor<4x8x8x8xi8>)
  %e2 = tensor.empty() : tensor<4x8x8x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p#0 : tensor<4x8x8x8xf32>) outs(%e2 : tensor<4x8x8x8xf32>) {
  ^bb0(%in: f32, %unused: f32):
    %d = arith.addf %in, %in : f32
    linalg.yield %d : f32
  } -> tensor<4x8x8x8xf32>
  return %s, %p#1, %sum : tensor<4x8x8x8xf32>, tensor<4x8x8x8xi8>, tensor<8xf32>
}
