// RUN: act-opt %s -split-input-file -act-collapse-parallel-loops | FileCheck %s
// RUN: act-opt %s -split-input-file -act-gpu-pipeline | FileCheck %s --check-prefix=LAUNCH

// A 4-D loop nest becomes one loop over all 16 * 32 * 32 * 32 iterations,
// whose indices come back by division and remainder; the reduction loop
// inside a parallel loop stays as it is.
// CHECK-LABEL: func.func @relu
// CHECK:      scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%[[N:.*]]) step (%{{.*}})
// CHECK:        arith.remsi %[[I]]
// CHECK:        arith.divsi %[[I]]
// CHECK-NOT:  scf.parallel
// CHECK:      return
// With act-gpu-pipeline: 524288 iterations in blocks of 256 are a grid of
// 2048 x 1 x 1 full blocks (each dimension its own grid dimension left
// 224 of a block's 256 threads idle on the last dimension's 32).
// LAUNCH-LABEL: llvm.func @relu
// LAUNCH-DAG:   %[[BLOCKS:.*]] = llvm.mlir.constant(2048 : index) : i64
// LAUNCH-DAG:   %[[ONE:.*]] = llvm.mlir.constant(1 : index) : i64
// LAUNCH-DAG:   %[[THREADS:.*]] = llvm.mlir.constant(256 : index) : i64
// LAUNCH:       gpu.launch_func {{.*}} blocks in (%[[BLOCKS]], %[[ONE]], %[[ONE]]) threads in (%[[THREADS]], %[[ONE]], %[[ONE]])
func.func @relu(%x: memref<16x32x32x32xf32>, %y: memref<16x32x32x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%n, %c, %h, %w) = (%c0, %c0, %c0, %c0) to (%c16, %c32, %c32, %c32) step (%c1, %c1, %c1, %c1) {
    %v = memref.load %x[%n, %c, %h, %w] : memref<16x32x32x32xf32>
    %r = arith.maximumf %v, %zero : f32
    memref.store %r, %y[%n, %c, %h, %w] : memref<16x32x32x32xf32>
    scf.reduce
  }
  return
}

// -----

// One dimension already: unchanged.
// CHECK-LABEL: func.func @flat
// CHECK:      scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%{{.*}})
// CHECK-NOT:  arith.divsi
func.func @flat(%x: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %one, %x[%i] : memref<64xf32>
    scf.reduce
  }
  return
}
