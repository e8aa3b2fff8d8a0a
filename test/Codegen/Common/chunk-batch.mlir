// act-chunk-batch: linalg ops that share dimension 0 as a parallel batch,
// connected by the values they pass, computed one chunk of the batch at a
// time; only the values read outside the region exist whole.
// RUN: act-opt %s -act-chunk-batch="chunk-bytes=4096" | FileCheck %s
// Every batch element is computed as before: the same bits (act-run's
// own pipeline leaves these small tensors whole).
// RUN: rm -rf %t && mkdir -p %t
// RUN: act-opt %s -act-chunk-batch="chunk-bytes=4096" -o %t/chunked.mlir
// RUN: for e in attention kept; do act-run %s --entry=$e --output-dir=%t/whole_$e > /dev/null && act-run %t/chunked.mlir --entry=$e --output-dir=%t/chunked_$e > /dev/null || exit 1; done
// RUN: %python -c "import sys, glob, numpy as np; d = sys.argv[1]; w = sorted(glob.glob(d + '/whole_*/*.npy')); assert len(w) == 4, w; assert all(np.load(f).tobytes() == np.load(f.replace('whole_', 'chunked_')).tobytes() for f in w); print('bitwise identical:', len(w))" %t | FileCheck %s --check-prefix=SAME
// SAME: bitwise identical: 4
// More chunks than max-unrolled: one loop over them, the same bits.
// RUN: act-opt %s -act-chunk-batch="chunk-bytes=4096 max-unrolled=1" | FileCheck %s --check-prefix=LOOP
// RUN: act-opt %s -act-chunk-batch="chunk-bytes=4096 max-unrolled=1" -o %t/looped.mlir
// RUN: for e in attention kept; do act-run %t/looped.mlir --entry=$e --output-dir=%t/looped_$e > /dev/null || exit 1; done
// RUN: %python -c "import sys, glob, numpy as np; d = sys.argv[1]; w = sorted(glob.glob(d + '/whole_*/*.npy')); assert len(w) == 4, w; assert all(np.load(f).tobytes() == np.load(f.replace('whole_', 'looped_')).tobytes() for f in w); print('bitwise identical:', len(w))" %t | FileCheck %s --check-prefix=SAME
// The same chunks of 4 as a loop of 2 iterations whose body slices at the
// induction variable, offsets the payload's index by it and inserts its
// part into the carried result.
// LOOP-LABEL: func.func @attention
// LOOP:       %[[OUT:.*]] = tensor.empty() : tensor<8x16x4xf32>
// LOOP:       %[[R:.*]] = scf.for %[[IV:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[OUT]]) -> (tensor<8x16x4xf32>)
// LOOP:         tensor.extract_slice %{{.*}}[%[[IV]], 0, 0] [4, 16, 4] [1, 1, 1]
// LOOP:         linalg.batch_matmul {{.*}} -> tensor<4x16x16xf32>
// LOOP:         %[[I:.*]] = linalg.index 0 : index
// LOOP:         affine.apply {{.*}}(%[[IV]])[%[[I]]]
// LOOP:         %[[A:.*]] = tensor.insert_slice %{{.*}} into %[[ACC]][%[[IV]], 0, 0] [4, 16, 4] [1, 1, 1]
// LOOP:         scf.yield %[[A]]
// LOOP:       return %[[R]]

// An attention backward over batch x heads = 8: dP = dO V^T (16 x 16 per
// element, 8 KB in all) and dS = P * (dP - rowsum(dP * P)) never exist
// whole (chunks of 4: 4 KB); dQ = dS K is assembled from its chunks. The
// index in the generic's payload is offset by the chunk's start.
// CHECK-LABEL: func.func @attention
// CHECK-NOT:   -> tensor<8x16x16xf32>
// CHECK:       %[[OUT:.*]] = tensor.empty() : tensor<8x16x4xf32>
// CHECK:       tensor.extract_slice %{{.*}}[0, 0, 0] [4, 16, 4] [1, 1, 1]
// CHECK:       linalg.batch_matmul {{.*}} -> tensor<4x16x16xf32>
// CHECK:       linalg.generic {{.*}} outs(%{{.*}} : tensor<4x16xf32>)
// CHECK:       linalg.index 0
// CHECK:       linalg.batch_matmul {{.*}} -> tensor<4x16x4xf32>
// CHECK:       %[[A1:.*]] = tensor.insert_slice %{{.*}} into %[[OUT]][0, 0, 0] [4, 16, 4] [1, 1, 1]
// CHECK:       tensor.extract_slice %{{.*}}[4, 0, 0] [4, 16, 4] [1, 1, 1]
// CHECK:       %[[I:.*]] = linalg.index 0 : index
// CHECK:       affine.apply {{.*}}()[%[[I]]]
// CHECK:       %[[A2:.*]] = tensor.insert_slice %{{.*}} into %[[A1]][4, 0, 0] [4, 16, 4] [1, 1, 1]
// CHECK:       return %[[A2]]
#b3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @attention(%do: tensor<8x16x4xf32>, %vt: tensor<8x4x16xf32>, %p: tensor<8x16x16xf32>, %k: tensor<8x16x4xf32>) -> tensor<8x16x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c2 = arith.constant 2 : index
  %e0 = tensor.empty() : tensor<8x16x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %dp = linalg.batch_matmul ins(%do, %vt : tensor<8x16x4xf32>, tensor<8x4x16xf32>) outs(%f0 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e1 = tensor.empty() : tensor<8x16xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %sum = linalg.generic {indexing_maps = [#b3, #b3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dp, %p : tensor<8x16x16xf32>, tensor<8x16x16xf32>) outs(%f1 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %o : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<8x16x16xf32>
  // The batch index itself: an odd element's gradient is scaled by 2.
  %ds = linalg.generic {indexing_maps = [#b3, #b3, #row, #b3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dp, %p, %sum : tensor<8x16x16xf32>, tensor<8x16x16xf32>, tensor<8x16xf32>) outs(%e2 : tensor<8x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32, %o: f32):
    %i = linalg.index 0 : index
    %odd = arith.remui %i, %c2 : index
    %c1i = arith.index_cast %odd : index to i32
    %scale = arith.sitofp %c1i : i32 to f32
    %one = arith.constant 1.0 : f32
    %w = arith.addf %scale, %one : f32
    %d = arith.subf %a, %s : f32
    %g = arith.mulf %b, %d : f32
    %r = arith.mulf %g, %w : f32
    linalg.yield %r : f32
  } -> tensor<8x16x16xf32>
  %e3 = tensor.empty() : tensor<8x16x4xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16x4xf32>) -> tensor<8x16x4xf32>
  %dq = linalg.batch_matmul ins(%ds, %k : tensor<8x16x16xf32>, tensor<8x16x4xf32>) outs(%f3 : tensor<8x16x4xf32>) -> tensor<8x16x4xf32>
  return %dq : tensor<8x16x4xf32>
}

// Kept: a region whose value is read outside it before its last op keeps
// that op in place (here the product, read by the reduction over the
// batch, which no region holds); small regions and rank-1 tensors stay.
// CHECK-LABEL: func.func @kept
// CHECK:       %[[P:.*]] = linalg.batch_matmul {{.*}} -> tensor<8x16x16xf32>
// CHECK:       linalg.generic {{.*}} ins(%[[P]] : tensor<8x16x16xf32>) outs(%{{.*}} : tensor<16x16xf32>)
// CHECK:       linalg.generic {{.*}} outs(%{{.*}} : tensor<4x16x16xf32>)
// CHECK:       linalg.generic {{.*}} outs(%{{.*}} : tensor<4x16x16xf32>)
// CHECK-NOT:   tensor.extract_slice {{.*}} tensor<2048xf32>
func.func @kept(%a: tensor<8x16x4xf32>, %b: tensor<8x4x16xf32>, %v: tensor<2048xf32>) -> (tensor<16x16xf32>, tensor<8x16x16xf32>, tensor<2048xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x16x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %prod = linalg.batch_matmul ins(%a, %b : tensor<8x16x4xf32>, tensor<8x4x16xf32>) outs(%f0 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e1 = tensor.empty() : tensor<16x16xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %over = linalg.generic {indexing_maps = [#b3, affine_map<(d0, d1, d2) -> (d1, d2)>], iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%prod : tensor<8x16x16xf32>) outs(%f1 : tensor<16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  %e2 = tensor.empty() : tensor<8x16x16xf32>
  %sq = linalg.generic {indexing_maps = [#b3, #b3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%prod : tensor<8x16x16xf32>) outs(%e2 : tensor<8x16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %x : f32
    linalg.yield %m : f32
  } -> tensor<8x16x16xf32>
  %e3 = tensor.empty() : tensor<8x16x16xf32>
  %neg = linalg.generic {indexing_maps = [#b3, #b3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sq : tensor<8x16x16xf32>) outs(%e3 : tensor<8x16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.negf %x : f32
    linalg.yield %m : f32
  } -> tensor<8x16x16xf32>
  %e4 = tensor.empty() : tensor<2048xf32>
  %v1 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%v : tensor<2048xf32>) outs(%e4 : tensor<2048xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.negf %x : f32
    linalg.yield %m : f32
  } -> tensor<2048xf32>
  %e5 = tensor.empty() : tensor<2048xf32>
  %v2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%v1 : tensor<2048xf32>) outs(%e5 : tensor<2048xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %x : f32
    linalg.yield %m : f32
  } -> tensor<2048xf32>
  return %over, %neg, %v2 : tensor<16x16xf32>, tensor<8x16x16xf32>, tensor<2048xf32>
}
