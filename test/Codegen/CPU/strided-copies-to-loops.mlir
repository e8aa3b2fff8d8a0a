// RUN: act-opt %s -act-strided-copies-to-loops | FileCheck %s
// RUN: act-opt %s -act-cpu-pipeline | FileCheck %s --check-prefix=LLVM
// RUN: act-opt %s "-act-strided-copies-to-loops=all=true" | FileCheck %s --check-prefix=ALL

// A chunk copied into the interior of its zero-padded buffer (act-in-place's
// chunked convolutions, after bufferization): a linalg.copy, whose loops
// LLVM vectorizes, instead of a call of the runner utilities' memrefCopy.
// CHECK-LABEL: func.func @into_padded
// CHECK: linalg.copy ins(%{{.*}} : memref<2x4x8x8xf32>) outs(%{{.*}} : memref<2x4x8x8xf32, strided<[400, 100, 10, 1], offset: 11>>)
// CHECK-NOT: memref.copy
// LLVM-LABEL: llvm.func @into_padded
// LLVM-NOT: memrefCopy
func.func @into_padded(%chunk: memref<2x4x8x8xf32>, %padded: memref<2x4x10x10xf32>) {
  %interior = memref.subview %padded[0, 0, 1, 1] [2, 4, 8, 8] [1, 1, 1, 1] : memref<2x4x10x10xf32> to memref<2x4x8x8xf32, strided<[400, 100, 10, 1], offset: 11>>
  memref.copy %chunk, %interior : memref<2x4x8x8xf32> to memref<2x4x8x8xf32, strided<[400, 100, 10, 1], offset: 11>>
  return
}

// Contiguous copies stay memref.copy (one llvm.memcpy). With all=true
// (act-gpu-pipeline: every copy a kernel, none on the host) they become
// linalg.copy too.
// ALL-LABEL: func.func @into_padded
// ALL: linalg.copy
// ALL-LABEL: func.func @contiguous
// ALL: linalg.copy ins(%{{.*}} : memref<1x4x10x10xf32, strided<[400, 100, 10, 1], offset: 400>>) outs(%{{.*}} : memref<1x4x10x10xf32>)
// ALL-NOT: memref.copy
// CHECK-LABEL: func.func @contiguous
// CHECK: memref.copy
// CHECK-NOT: linalg.copy
// LLVM-LABEL: llvm.func @contiguous
// LLVM: "llvm.intr.memcpy"
func.func @contiguous(%whole: memref<1x4x10x10xf32>, %b: memref<2x4x10x10xf32>) {
  %rows = memref.subview %b[1, 0, 0, 0] [1, 4, 10, 10] [1, 1, 1, 1] : memref<2x4x10x10xf32> to memref<1x4x10x10xf32, strided<[400, 100, 10, 1], offset: 400>>
  memref.copy %rows, %whole : memref<1x4x10x10xf32, strided<[400, 100, 10, 1], offset: 400>> to memref<1x4x10x10xf32>
  return
}
