// RUN: act-opt %s -act-unit-stride-gathers -canonicalize -split-input-file | FileCheck %s
// A gather from a column of a row-major buffer (what bufferization makes of
// a vectorized tensor.extract along a diagonal) has no vector-to-llvm
// lowering: the CPU pipeline rewrites it as a gather from the storage.
// RUN: act-opt %s -act-cpu-pipeline -split-input-file | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @column
// CHECK-DAG: %[[EIGHT:.*]] = arith.constant dense<8> : vector<4xindex>
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %{{.*}} to offset: [9], sizes: [25], strides: [1]
// CHECK: %[[SCALED:.*]] = arith.muli %{{.*}}, %[[EIGHT]] : vector<4xindex>
// CHECK: vector.gather %{{.*}}[%{{.*}}] [%[[SCALED]]]
// CHECK-SAME: memref<?xf32, strided<[1], offset: ?>>
// LLVM-LABEL: llvm.func @column
// LLVM: llvm.intr.masked.gather
func.func @column(%m: memref<4x8xf32>, %idx: vector<4xindex>) -> vector<4xf32> {
  %c1 = arith.constant 1 : index
  %col = memref.subview %m[0, 1] [4, 1] [1, 1] : memref<4x8xf32> to memref<4xf32, strided<[8], offset: 1>>
  %mask = arith.constant dense<true> : vector<4xi1>
  %pass = arith.constant dense<0.0> : vector<4xf32>
  %g = vector.gather %col[%c1] [%idx], %mask, %pass : memref<4xf32, strided<[8], offset: 1>>, vector<4xindex>, vector<4xi1>, vector<4xf32> into vector<4xf32>
  return %g : vector<4xf32>
}

// -----

// A unit-stride gather is left as it is.
// CHECK-LABEL: func.func @contiguous
// CHECK-NOT: reinterpret_cast
// CHECK: vector.gather %arg0
func.func @contiguous(%m: memref<32xf32>, %idx: vector<4xi32>) -> vector<4xf32> {
  %c0 = arith.constant 0 : index
  %mask = arith.constant dense<true> : vector<4xi1>
  %pass = arith.constant dense<0.0> : vector<4xf32>
  %g = vector.gather %m[%c0] [%idx], %mask, %pass : memref<32xf32>, vector<4xi32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
  return %g : vector<4xf32>
}
