// RUN: act-opt %s -act-seeds-in-kernels | FileCheck %s

// The seeds' loads move into the launches that use them (each its own
// load, its constant index cloned in): the host code reads no seed, and a
// CUDA graph's replay reads the next call's seeds from device memory.
// CHECK-LABEL: func.func @seeds
// CHECK-NOT: memref.load
// CHECK: gpu.launch
// CHECK-NEXT: %[[I:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[S:.*]] = memref.load %arg0[%[[I]]] : memref<3xi64>
// CHECK: arith.addi %[[S]], %[[S]]
// CHECK: gpu.launch
// CHECK-NEXT: %[[J:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[T:.*]] = memref.load %arg0[%[[J]]] : memref<3xi64>
// CHECK: memref.store %[[T]]
func.func @seeds(%seeds: memref<3xi64> {act.seeds}, %out: memref<4xi64>) {
  %c1 = arith.constant 1 : index
  %seed = memref.load %seeds[%c1] : memref<3xi64>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %twice = arith.addi %seed, %seed : i64
    memref.store %twice, %out[%tx] : memref<4xi64>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %seed, %out[%tx] : memref<4xi64>
    gpu.terminator
  }
  return
}

// A load the host code uses itself stays (the seed is then host-read), as
// does one from an argument that is not act.seeds.
// CHECK-LABEL: func.func @host_use
// CHECK: %[[S:.*]] = memref.load %arg0
// CHECK: memref.store %[[S]], %arg1
// CHECK: %[[D:.*]] = memref.load %arg2
// CHECK: gpu.launch
// CHECK: memref.store %[[D]]
func.func @host_use(%seeds: memref<3xi64> {act.seeds}, %out: memref<4xi64>,
                    %other: memref<1xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %seed = memref.load %seeds[%c0] : memref<3xi64>
  memref.store %seed, %out[%c0] : memref<4xi64>
  %dropout = memref.load %other[%c0] : memref<1xi64>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %seed, %out[%tx] : memref<4xi64>
    memref.store %dropout, %out[%tx] : memref<4xi64>
    gpu.terminator
  }
  return
}
