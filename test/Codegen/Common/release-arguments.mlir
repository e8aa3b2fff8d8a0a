// RUN: act-opt %s -split-input-file -act-release-arguments | FileCheck %s

// A backward marked act.release_arguments: each memref argument is
// released after the last op of the entry block that uses it or a view of
// it (an argument used inside a loop: after the loop); one never used at
// the start; a scalar and one a result aliases are left alone. The
// attribute is consumed; the runtime function is declared once. (The pass
// runs before the async conversion, so no async.execute exists yet; one
// there would be left alone too.)
// CHECK:      func.func private @act_release_argument(i64)
// CHECK-LABEL: func.func @bwd(
// CHECK-NOT:  act.release_arguments
// CHECK:      %[[C3:.*]] = arith.constant 3 : i64
// CHECK-NEXT: call @act_release_argument(%[[C3]])
// CHECK:      memref.load %arg0
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @act_release_argument(%[[C0]])
// CHECK:      %[[V:.*]] = memref.expand_shape %arg1
// CHECK:      scf.for
// CHECK:        memref.load %[[V]]
// CHECK:      }
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @act_release_argument(%[[C1]])
// CHECK-NOT:  call @act_release_argument
// CHECK:      return
func.func @bwd(%a: memref<64xf32>, %b: memref<64xf32>, %r: memref<8xf32>,
               %unused: memref<4xf32>, %s: f32,
               %i: index) -> (f32, memref<8xf32>) attributes {act.release_arguments} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %x = memref.load %a[%i] : memref<64xf32>
  %v = memref.expand_shape %b [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
  %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %x) -> f32 {
    %y = memref.load %v[%k, %c0] : memref<8x8xf32>
    %n = arith.addf %acc, %y : f32
    scf.yield %n : f32
  }
  %out = arith.addf %sum, %s : f32
  return %out, %r : f32, memref<8xf32>
}

// -----

// Without the attribute nothing changes.
// CHECK-LABEL: func.func @plain(
// CHECK-NOT:   act_release_argument
func.func @plain(%a: memref<64xf32>, %i: index) -> f32 {
  %x = memref.load %a[%i] : memref<64xf32>
  return %x : f32
}
