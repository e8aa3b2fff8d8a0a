// RUN: act-opt %s -act-cpu-pipeline=threads=2 | FileCheck %s
// RUN: act-opt %s -act-cpu-pipeline | FileCheck %s --check-prefix=ONE

// act-cpu-pipeline{threads}: an encode's and a decode's chunks (scf.forall)
// become tasks of MLIR's async runtime (async-parallel-for): the chunk
// body is outlined, blocks of chunks are dispatched and awaited, each
// task's per-chunk temporaries live on its stack (allocated once, before
// its loop over chunks). threads=1 (the default) keeps one loop on the
// calling thread.
// CHECK-LABEL: llvm.func @step
// CHECK:         llvm.call @mlirAsyncRuntimeCreateGroup
// CHECK:         llvm.call @mlirAsyncRuntimeAwaitAllInGroup
// CHECK-LABEL: llvm.func @parallel_compute_fn
// CHECK:         llvm.alloca
// CHECK:         llvm.br
// CHECK-NOT:     llvm.call @_mlir_memref_to_llvm_aligned_alloc
// CHECK:         llvm.return
// ONE-NOT: mlirAsyncRuntime
// ONE-NOT: parallel_compute_fn
func.func @step(%x: tensor<65536xf32>, %s: i64) -> tensor<65536xf32> {
  %e = act.encode %x, id = 0, seed %s : tensor<65536xf32> -> !act.encoded<tensor<65536xf32>, #act.quant<bits = 4>>
  %d = act.decode %e : !act.encoded<tensor<65536xf32>, #act.quant<bits = 4>> -> tensor<65536xf32>
  return %d : tensor<65536xf32>
}
