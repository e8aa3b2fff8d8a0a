// RUN: act-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(func.func(act-chunk-buffers-to-stack{max-bytes=1024}))' | FileCheck %s --check-prefix=STACK
// RUN: act-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(act-hoist-stack-buffers))' | FileCheck %s --check-prefix=HOIST

// act-chunk-buffers-to-stack: a parallel loop body's small temporaries go on
// the stack; buffers outside any parallel loop stay on the heap.
// STACK-LABEL: func.func @chunks
// STACK:         scf.forall
// STACK:           memref.alloca() {alignment = 64 : i64} : memref<16xf32>
// STACK:         scf.parallel
// STACK:           memref.alloca() : memref<4xi32>
// STACK:         memref.alloc() : memref<4xf32>
// STACK:         memref.alloc(%{{.*}}) : memref<?xf32>
func.func @chunks(%n: index, %out: memref<?xf32>, %idx: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.forall (%i) in (%n) {
    %t = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
    %v = memref.load %t[%c0] : memref<16xf32>
    memref.store %v, %out[%i] : memref<?xf32>
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %t = memref.alloc() : memref<4xi32>
    %v = memref.load %t[%c0] : memref<4xi32>
    memref.store %v, %idx[%i] : memref<?xi32>
  }
  %outside = memref.alloc() : memref<4xf32>
  %dyn = memref.alloc(%n) : memref<?xf32>
  %a = memref.load %outside[%c0] : memref<4xf32>
  memref.store %a, %dyn[%c0] : memref<?xf32>
  return
}

// -----

// A body's buffer too large for the stack would be leaked once per
// iteration (deallocation does not free it there): an error.
func.func @too_large(%n: index, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  scf.forall (%i) in (%n) {
    // expected-error @below {{act-chunk-buffers-to-stack: a parallel loop's body allocates 'memref<512xf32>' (more than max-bytes = 1024) on the heap; it would not be freed}}
    %big = memref.alloc() : memref<512xf32>
    %w = memref.load %big[%c0] : memref<512xf32>
    memref.store %w, %out[%i] : memref<?xf32>
  }
  return
}

// -----

// act-hoist-stack-buffers: a sequential loop's stack buffer moves to the
// function's entry (one for all iterations); one carried to the next
// iteration and one in a parallel loop stay.
// HOIST-LABEL: func.func @loops
// HOIST-NEXT:    memref.alloca() : memref<8xf32>
// HOIST:         scf.for
// HOIST-NOT:       memref.alloca() : memref<8xf32>
// HOIST:         scf.for {{.*}} iter_args
// HOIST:           memref.alloca() : memref<2xf32>
// HOIST:         scf.forall
// HOIST:           scf.for
// HOIST:             memref.alloca() : memref<3xf32>
func.func @loops(%n: index, %out: memref<?xf32>, %m: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %t = memref.alloca() : memref<8xf32>
    %v = memref.load %t[%c0] : memref<8xf32>
    memref.store %v, %out[%i] : memref<?xf32>
  }
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%prev = %m) -> (memref<2xf32>) {
    %t = memref.alloca() : memref<2xf32>
    %v = memref.load %prev[%c0] : memref<2xf32>
    memref.store %v, %t[%c0] : memref<2xf32>
    scf.yield %t : memref<2xf32>
  }
  scf.forall (%j) in (%n) {
    scf.for %i = %c0 to %n step %c1 {
      %t = memref.alloca() : memref<3xf32>
      %v = memref.load %t[%c0] : memref<3xf32>
      memref.store %v, %out[%i] : memref<?xf32>
    }
  }
  return
}
