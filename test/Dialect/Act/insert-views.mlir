// A saved value that is only a reshape of another saved value (the
// exporter saves softmax's output and the batch-matmul operand it is
// reshaped into: one buffer) is re-derived from it in the backward, never
// stored, or encoded, a second time: #act.recompute even without a
// recompute-cost budget.
// RUN: act-opt %s -act-insert-encode-decode="encoding='#act.quant<bits = 4>'" | FileCheck %s
// RUN: act-opt %s -act-insert-encode-decode="encoding='#act.quant<bits = 4>'" -act-memory-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: act-opt %s -act-insert-encode-decode="encoding='#act.quant<bits = 4>'" | act-run - | FileCheck %s --check-prefix=STEP
// Under the lossless policy %t stays as it is (no lossless encoding holds
// its floats); the view is still re-derived from it, not kept beside it.
// RUN: act-opt %s -act-insert-encode-decode=policy=lossless | FileCheck %s --check-prefix=LOSSLESS
// The bit allocator leaves the view out of its budget (it stores nothing,
// whatever its bits): average 4 bits of %t's 1024 elements, no warning that
// the view was not measured (act-run measures only what is stored).
// RUN: rm -rf %t.d && mkdir -p %t.d
// RUN: act-opt %s -act-insert-encode-decode="encoding='#act.quant<bits = 4>'" -o %t.d/q.mlir
// RUN: act-run %t.d/q.mlir --sensitivity=%t.d/p.json
// RUN: act-opt %s -act-allocate-bits="profile=%t.d/p.json average-bits=4 report=%t.d/r.json" 2>&1 >/dev/null | FileCheck %s --check-prefix=ALLOC --implicit-check-not=warning
// RUN: %system_python -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['budget_bits'] == 4096, r['budget_bits']; assert [t['id'] for t in r['tensors']] == [0], r['tensors']" %t.d/r.json
// ALLOC: act bit allocation
//
// CHECK-LABEL: func.func @views
// CHECK:      %[[T:.*]] = linalg.generic
// CHECK:      %[[V:.*]] = tensor.collapse_shape %[[T]] {{\[\[}}0, 1], [2]]
// CHECK:      %[[E:.*]] = act.encode %[[T]], id = 0, seed {{.*}} -> !act.encoded<tensor<2x8x64xf32>, #act.quant<bits = 4>>
// CHECK:      %[[R:.*]] = act.encode %[[V]], id = 1 : tensor<16x64xf32> -> !act.encoded<tensor<16x64xf32>, #act.recompute>
// Only %t is decoded; the view is its decoded value's reshape.
// CHECK:      %[[D:.*]] = act.decode %[[E]]
// CHECK-NEXT: %[[C:.*]] = tensor.collapse_shape %[[D]] {{\[\[}}0, 1], [2]]
// CHECK-NEXT: %[[RV:.*]] = act.recomputed %[[R]], %[[C]]
// CHECK-NEXT: linalg.matmul {{.*}} ins(%[[RV]], %{{.*}} : tensor<16x64xf32>, tensor<16x64xf32>)
// CHECK-NOT:  act.decode %[[R]]
//
// REPORT: 0  linalg.generic {{.*}} 4096 544 encoded #act.quant<bits = 4>
// REPORT: 1  tensor.collapse_shape {{.*}} 4096 0 encoded #act.recompute {{.*}} (recomputed in the backward)
// REPORT: saved activations: 2 values, 8192 -> 544 bytes
// STEP: loss:
// LOSSLESS-NOT: act.encode %{{.*}}, id = 0
// LOSSLESS:     act.encode %collapsed, id = 1 : tensor<16x64xf32> -> !act.encoded<tensor<16x64xf32>, #act.recompute>
// LOSSLESS-NOT: act.encode %
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @views(%x: tensor<2x8x64xf32>, %w: tensor<64x64xf32>) -> (f32 {act.loss}, tensor<64x64xf32>, tensor<2x8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e3 = tensor.empty() : tensor<2x8x64xf32>
  %t = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x8x64xf32>) outs(%e3 : tensor<2x8x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.tanh %a : f32
    linalg.yield %m : f32
  } -> tensor<2x8x64xf32>
  %v = tensor.collapse_shape %t [[0, 1], [2]] : tensor<2x8x64xf32> into tensor<16x64xf32>
  %e = tensor.empty() : tensor<16x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %h = linalg.matmul ins(%v, %w : tensor<16x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<16x64xf32>) -> tensor<16x64xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%h : tensor<16x64xf32>) outs(%s1 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %init: f32) {
      %r = arith.addf %in, %init : f32
      linalg.yield %r : f32
    }
  %loss = tensor.extract %s[] : tensor<f32>
  // Backward: dh = 1; dw = v^T dh reads the view %v; dx = (dh w^T) (1 - t^2)
  // reads %t itself.
  %dh = linalg.fill ins(%one : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %ew = tensor.empty() : tensor<64x64xf32>
  %accw = linalg.fill ins(%zero : f32) outs(%ew : tensor<64x64xf32>) -> tensor<64x64xf32>
  %dw = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%v, %dh : tensor<16x64xf32>, tensor<16x64xf32>) outs(%accw : tensor<64x64xf32>) -> tensor<64x64xf32>
  %accd = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %dv = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%dh, %w : tensor<16x64xf32>, tensor<64x64xf32>) outs(%accd : tensor<16x64xf32>) -> tensor<16x64xf32>
  %dt = tensor.expand_shape %dv [[0, 1], [2]] output_shape [2, 8, 64] : tensor<16x64xf32> into tensor<2x8x64xf32>
  %dx = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dt, %t : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%e3 : tensor<2x8x64xf32>) {
  ^bb0(%g: f32, %a: f32, %o: f32):
    %a2 = arith.mulf %a, %a : f32
    %d = arith.subf %one, %a2 : f32
    %m = arith.mulf %g, %d : f32
    linalg.yield %m : f32
  } -> tensor<2x8x64xf32>
  return %loss, %dw, %dx : f32, tensor<64x64xf32>, tensor<2x8x64xf32>
}
