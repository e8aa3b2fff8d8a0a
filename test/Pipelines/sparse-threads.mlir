// RUN: act-opt %s -act-cpu-pipeline=threads=2 | FileCheck %s
// RUN: act-opt %s -act-cpu-pipeline | FileCheck %s --check-prefix=ONE

// #act.sparse on the CPU with threads: the encode's two passes (each
// block's bitmap words and count of set bits; each block's values, from
// where the blocks before it end) and the decode's two (each block's
// count; each block's elements) are each split into tasks of MLIR's async
// runtime, with an exclusive scan of the blocks' counts in between, on the
// calling thread. One thread: no tasks.
// CHECK-LABEL: llvm.func @step
// CHECK-COUNT-4: llvm.call @mlirAsyncRuntimeAwaitAllInGroup
// CHECK-NOT:     llvm.call @mlirAsyncRuntimeAwaitAllInGroup
// CHECK:         llvm.return
// CHECK-COUNT-4: llvm.func @parallel_compute_fn
// ONE-NOT: mlirAsyncRuntime
// ONE-NOT: parallel_compute_fn
func.func @step(%x: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %e = act.encode %x, id = 0 : tensor<1048576xf32> -> !act.encoded<tensor<1048576xf32>, #act.sparse<density = 0.5>>
  %d = act.decode %e : !act.encoded<tensor<1048576xf32>, #act.sparse<density = 0.5>> -> tensor<1048576xf32>
  return %d : tensor<1048576xf32>
}
