// RUN: act-opt %s -act-fuse-elementwise | FileCheck %s
// RUN: act-opt %s -act-fuse-elementwise=max-operands=5 | FileCheck %s --check-prefix=LIMIT
// RUN: act-opt %s -act-fuse-elementwise=max-operands=0 | FileCheck %s --check-prefix=NOLIMIT

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>

// Softmax's backward: sum(dP * P) reads dP and P in the reduction; the
// product is never a tensor. A producer with a second use stays.
// CHECK-LABEL: func.func @softmax_backward
// CHECK-NOT:   linalg.generic
// CHECK:       linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg0, %arg1 : tensor<64x64xf32>, tensor<64x64xf32>) outs(%{{.*}} : tensor<64xf32>)
// CHECK:         arith.mulf
// CHECK:         arith.addf
// CHECK:       %[[K:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<64x64xf32>)
// CHECK:       linalg.generic {{.*}} ins(%[[K]] :
// CHECK:       return
func.func @softmax_backward(%dp: tensor<64x64xf32>, %p: tensor<64x64xf32>) -> (tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %t = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dp, %p : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<64x64xf32>
  %r0 = tensor.empty() : tensor<64xf32>
  %r = linalg.fill ins(%zero : f32) outs(%r0 : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%t : tensor<64x64xf32>) outs(%r : tensor<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %a = arith.addf %x, %acc : f32
    linalg.yield %a : f32
  } -> tensor<64xf32>
  %k = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dp : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<64x64xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%k : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<64x64xf32>
  return %s, %k, %u : tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}

// BatchNorm's backward: the normalized input (x - mean) * invstd is read
// by the sum of dY * x^ and by the input gradient. Both can fuse it, and
// what it reads lives no longer (the caller's tensors): each reader
// recomputes it, x^ is never a tensor.
// CHECK-LABEL: func.func @normalized_twice
// CHECK:       linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg0, %arg1, %arg2, %arg3 :
// CHECK:         arith.subf
// CHECK:         arith.mulf
// CHECK:       linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%arg0, %arg1, %arg2, %arg3 :
// CHECK:         arith.subf
// CHECK:         arith.mulf
// CHECK-NOT:   linalg.generic
// CHECK:       return
func.func @normalized_twice(%x: tensor<64x64xf32>, %mean: tensor<64xf32>, %invstd: tensor<64xf32>, %dy: tensor<64x64xf32>) -> (tensor<64xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %xh = linalg.generic {indexing_maps = [#id, #rows, #rows, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean, %invstd : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32, %o: f32):
    %c = arith.subf %a, %m : f32
    %n = arith.mulf %c, %s : f32
    linalg.yield %n : f32
  } -> tensor<64x64xf32>
  %r0 = tensor.empty() : tensor<64xf32>
  %r = linalg.fill ins(%zero : f32) outs(%r0 : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%xh, %dy : tensor<64x64xf32>, tensor<64x64xf32>) outs(%r : tensor<64xf32>) {
  ^bb0(%a: f32, %g: f32, %acc: f32):
    %p = arith.mulf %a, %g : f32
    %t = arith.addf %p, %acc : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64x64xf32>
  %dx = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%xh, %dy : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e2 : tensor<64x64xf32>) {
  ^bb0(%a: f32, %g: f32, %o: f32):
    %p = arith.subf %g, %a : f32
    linalg.yield %p : f32
  } -> tensor<64x64xf32>
  return %sum, %dx : tensor<64xf32>, tensor<64x64xf32>
}

// A producer reading two computed tensors as large as its result, read
// twice: fused, both would live until its last reader instead of its one
// result; it stays (%a and %b come from a matmul each, which fusion leaves).
// CHECK-LABEL: func.func @two_inputs_stay
// CHECK:       %[[P:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK:       linalg.generic {{.*}} ins(%[[P]] :
// CHECK:       linalg.generic {{.*}} ins(%[[P]] :
func.func @two_inputs_stay(%a0: tensor<64x64xf32>, %b0: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %z = tensor.empty() : tensor<64x64xf32>
  %zf = linalg.fill ins(%zero : f32) outs(%z : tensor<64x64xf32>) -> tensor<64x64xf32>
  %a = linalg.matmul ins(%a0, %b0 : tensor<64x64xf32>, tensor<64x64xf32>) outs(%zf : tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = linalg.matmul ins(%b0, %a0 : tensor<64x64xf32>, tensor<64x64xf32>) outs(%zf : tensor<64x64xf32>) -> tensor<64x64xf32>
  %e = tensor.empty() : tensor<64x64xf32>
  %p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %e1 = tensor.empty() : tensor<64x64xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<64x64xf32>) outs(%e1 : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<64x64xf32>
  %e2 = tensor.empty() : tensor<64x64xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<64x64xf32>) outs(%e2 : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = math.exp %x : f32
    linalg.yield %n : f32
  } -> tensor<64x64xf32>
  return %u, %v : tensor<64x64xf32>, tensor<64x64xf32>
}


// A chain of sums over fresh inputs (an unrolled recurrence's backward has
// such chains across its timesteps, hundreds long) fuses while the fused
// generic reads at most max-operands tensors (inputs and output): with 5,
// two generics of three inputs and an output each, which together would
// be six. Without a limit (0), one generic of five inputs.
// LIMIT-LABEL: func.func @chain
// LIMIT:       %[[A:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1, %arg2 : {{.*}}) outs(
// LIMIT:       linalg.generic {{.*}} ins(%[[A]], %arg3, %arg4 : {{.*}}) outs(
// LIMIT-NOT:   linalg.generic
// NOLIMIT-LABEL: func.func @chain
// NOLIMIT:       linalg.generic {{.*}} ins(%arg0, %arg1, %arg2, %arg3, %arg4 : {{.*}}) outs(
// NOLIMIT-NOT:   linalg.generic
func.func @chain(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<8xf32>, %d: tensor<8xf32>, %e: tensor<8xf32>) -> tensor<8xf32> {
  %x = tensor.empty() : tensor<8xf32>
  %s1 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%x : tensor<8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %s2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%s1, %c : tensor<8xf32>, tensor<8xf32>) outs(%x : tensor<8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %s3 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%s2, %d : tensor<8xf32>, tensor<8xf32>) outs(%x : tensor<8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %s4 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%s3, %e : tensor<8xf32>, tensor<8xf32>) outs(%x : tensor<8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %s4 : tensor<8xf32>
}
