// RUN: act-opt %s -act-cpu-pipeline | FileCheck %s
// RUN: act-opt %s -act-cpu-pipeline=count-allocations=0 | FileCheck %s --check-prefix=MALLOC

// Everything ends in the LLVM dialect; allocations go through the generic
// functions the runtime counts, and are freed after their last use. They
// are aligned allocations (no pointer arithmetic that would hide from LLVM's
// alias analysis which buffer a pointer belongs to).
// CHECK-NOT: act.
// CHECK-NOT: linalg.
// CHECK-LABEL: llvm.func @step
// CHECK: llvm.call @_mlir_memref_to_llvm_aligned_alloc
// CHECK: llvm.call @_mlir_memref_to_llvm_free
// MALLOC-LABEL: llvm.func @step
// MALLOC: llvm.call @aligned_alloc
// MALLOC-NOT: _mlir_memref_to_llvm_alloc
func.func @step(%x: tensor<1024xf32>, %s: i64) -> tensor<1024xf32> {
  %e = act.encode %x, id = 0, seed %s : tensor<1024xf32> -> !act.encoded<tensor<1024xf32>, #act.quant<bits = 2>>
  %d = act.decode %e : !act.encoded<tensor<1024xf32>, #act.quant<bits = 2>> -> tensor<1024xf32>
  %y = math.erf %d : tensor<1024xf32>
  return %y : tensor<1024xf32>
}
