// RUN: act-opt %s -act-outline-loops="min-loops=2" -split-input-file | FileCheck %s
// The step's loop nests, each in a function of its own, compute the same
// bits (the CNN example through act-run with every function outlined and
// with none).
// RUN: rm -rf %t && mkdir -p %t
// RUN: act-opt %S/../../../examples/cnn.mlir -act-insert-encode-decode="encoding=#act.quant<bits=4>" -o %t/cnn.mlir
// RUN: act-run %t/cnn.mlir --outline-min-loops=1 --output-dir=%t/outlined > /dev/null
// RUN: act-run %t/cnn.mlir --outline-min-loops=0 --output-dir=%t/inline > /dev/null
// RUN: for f in %t/inline/*.npy; do cmp $f %t/outlined/$(basename $f) || exit 1; done
// The CPU pipeline outlines a large function's nests (16 or more by default).
// RUN: act-opt %t/cnn.mlir -act-cpu-pipeline | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: llvm.func internal @cnn_step_loop0(
// PIPELINE-SAME: passthrough = ["noinline"]
// PIPELINE: llvm.call @cnn_step_loop0({{.*}}) {no_inline}

// CHECK-LABEL: func.func private @two_loops_loop0(
// CHECK-SAME: %[[A:.*]]: memref<8xf32>, %[[B:.*]]: memref<8xf32>)
// CHECK-SAME: attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: scf.for %{{.*}} = %[[C0]] to %[[C8]]
// CHECK: memref.load %[[A]]
// CHECK: memref.store %{{.*}}, %[[B]]
// CHECK: return
// CHECK-LABEL: func.func private @two_loops_loop1(
// CHECK-SAME: %{{.*}}: f32, %{{.*}}: memref<8xf32>) -> f32
// CHECK: %[[SUM:.*]] = scf.for
// CHECK: return %[[SUM]] : f32
// CHECK-LABEL: func.func @two_loops
// CHECK-NOT: scf.for
// CHECK: call @two_loops_loop0(%arg0, %arg1) {no_inline}
// CHECK: %[[R:.*]] = call @two_loops_loop1(%arg2, %arg1) {no_inline}
// CHECK: return %[[R]]
func.func @two_loops(%a: memref<8xf32>, %b: memref<8xf32>, %init: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %b[%i] : memref<8xf32>
  }
  %sum = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %init) -> f32 {
    %x = memref.load %b[%i] : memref<8xf32>
    %s = arith.addf %acc, %x : f32
    scf.yield %s : f32
  }
  return %sum : f32
}

// -----

// Fewer nests than min-loops: the function is left as it is.
// CHECK-LABEL: func.func @one_loop
// CHECK: scf.for
// CHECK-NOT: call
func.func @one_loop(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %zero, %a[%i] : memref<8xf32>
  }
  return
}

// -----

// Loop nests that are the same code on other buffers (a recurrent
// network's timesteps, a transformer's layers) share one function; a nest
// that differs in a constant has its own.
// CHECK-LABEL: func.func private @repeated_loop0(
// CHECK-SAME: %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>)
// CHECK: arith.constant 2.000000e+00 : f32
// CHECK-NOT: func.func private @repeated_loop1(
// CHECK-LABEL: func.func private @repeated_loop2(
// CHECK: arith.constant 3.000000e+00 : f32
// CHECK-LABEL: func.func @repeated
// CHECK: call @repeated_loop0(%arg0, %arg1) {no_inline}
// CHECK: call @repeated_loop0(%arg1, %arg2) {no_inline}
// CHECK: call @repeated_loop2(%arg2, %arg0) {no_inline}
func.func @repeated(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %b[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %b[%i] : memref<8xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %c[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %c[%i] : memref<8xf32>
    %y = arith.mulf %x, %three : f32
    memref.store %y, %a[%i] : memref<8xf32>
  }
  return
}
