// RUN: act-opt %s -act-scalar-ops-to-kernels -split-input-file | FileCheck %s --check-prefix=SCALAR
// RUN: act-opt %s -act-mark-stream-ordered -split-input-file | FileCheck %s --check-prefix=MARK

// A 0-d fill and a sum to a scalar get an outer parallel loop of one
// iteration over 1-element views of their outputs (one-thread kernels in
// act-gpu-pipeline, instead of host code touching device buffers); the
// body's loop indices move one dim out.
// SCALAR-LABEL: func.func @scalars
// SCALAR: %[[F:.*]] = memref.expand_shape %arg1 [] output_shape [1] : memref<f32> into memref<1xf32>
// SCALAR: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel"]} ins(%{{.*}} : f32) outs(%[[F]] : memref<1xf32>)
// SCALAR: %[[S:.*]] = memref.expand_shape %arg1 [] output_shape [1] : memref<f32> into memref<1xf32>
// SCALAR: linalg.generic {indexing_maps = [#[[IN:.*]], #[[OUT:.*]]], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<64xf32>) outs(%[[S]] : memref<1xf32>)
// SCALAR: linalg.index 1
// A parallel op is left alone.
// SCALAR: linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%arg0 : memref<64xf32>) outs(%arg2 : memref<64xf32>)
#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @scalars(%x: memref<64xf32>, %sum: memref<f32>, %y: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%sum : memref<f32>)
  linalg.generic {indexing_maps = [#id, #scalar], iterator_types = ["reduction"]}
      ins(%x : memref<64xf32>) outs(%sum : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %p = arith.mulf %a, %fi : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

// Host code that only allocates, frees, reads its integer arguments (the
// seeds) and calls act's GPU library kernels runs stream-ordered; the
// arguments it reads are listed (a runtime on device tensors fills them on
// the host); without such a read there is no list.
// MARK-LABEL: func.func @ordered
// MARK-SAME: attributes {act.host_read_arguments = array<i64: 1>, act.stream_ordered}
func.func private @act_gpu_kernel_matmul_f32(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) attributes {llvm.emit_c_interface}
func.func @ordered(%a: memref<4x4xf32>, %seeds: memref<2xi64>) -> i64 {
  %c0 = arith.constant 0 : index
  %s = memref.load %seeds[%c0] : memref<2xi64>
  %b = memref.alloc() : memref<4x4xf32>
  %0 = memref.cast %a : memref<4x4xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %1 = memref.cast %b : memref<4x4xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  call @act_gpu_kernel_matmul_f32(%0, %0, %1) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  memref.dealloc %b : memref<4x4xf32>
  return %s : i64
}

// MARK-LABEL: func.func @reads_nothing
// MARK-SAME: attributes {act.stream_ordered}
func.func @reads_nothing(%a: memref<4x4xf32>, %labels: memref<4xi64>) {
  %b = memref.alloc() : memref<4x4xf32>
  memref.dealloc %b : memref<4x4xf32>
  return
}

// -----

// A host load of a float buffer (which kernels may write), a host store, or
// a call of anything else: the host must wait for the GPU, no mark.
// MARK-LABEL: func.func @loads
// MARK-NOT: act.stream_ordered
// MARK-LABEL: func.func @stores
// MARK-NOT: act.stream_ordered
// MARK-LABEL: func.func @calls
// MARK-NOT: act.stream_ordered
func.func @loads(%a: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<4xf32>
  return %v : f32
}
func.func @stores(%seeds: memref<2xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : i64
  memref.store %c1, %seeds[%c0] : memref<2xi64>
  return
}
func.func private @other(memref<4xf32>)
func.func @calls(%a: memref<4xf32>) {
  call @other(%a) : (memref<4xf32>) -> ()
  return
}

// -----

// An integer argument read by the host code and by a kernel (here through
// a view and a cast): listed apart (a step on device tensors, which
// returns without waiting, refuses it).
// MARK-LABEL: func.func @both
// MARK-SAME: attributes {act.host_read_arguments = array<i64: 0>, act.kernel_read_host_arguments = array<i64: 0>, act.stream_ordered}
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%s: memref<?xi64, strided<[1], offset: ?>>) kernel {
      gpu.return
    }
  }
  func.func @both(%seeds: memref<2xi64>) -> i64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %v = memref.load %seeds[%c0] : memref<2xi64>
    %view = memref.subview %seeds[1] [1] [1] : memref<2xi64> to memref<1xi64, strided<[1], offset: 1>>
    %cast = memref.cast %view : memref<1xi64, strided<[1], offset: 1>> to memref<?xi64, strided<[1], offset: ?>>
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%cast : memref<?xi64, strided<[1], offset: ?>>)
    return %v : i64
  }
}
