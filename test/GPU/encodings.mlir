// Every encoding's encode and decode kernels compile to PTX through
// act-gpu-pipeline, and ptxas accepts them for Ampere and Hopper.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: act-opt %s -act-gpu-pipeline="chip=sm_90 features=+ptx80" -o %t/sm90.mlir
// RUN: act-opt %s -act-gpu-pipeline="chip=sm_80 features=+ptx80" -o %t/sm80.mlir
// RUN: %python %S/extract_ptx.py %t/sm90.mlir %t/sm90 | FileCheck %s
// RUN: %python %S/extract_ptx.py %t/sm80.mlir %t/sm80 | FileCheck %s
// RUN: for f in %t/sm90/*.ptx; do %ptxas -arch=sm_90 $f -o /dev/null || exit 1; done
// RUN: for f in %t/sm80/*.ptx; do %ptxas -arch=sm_80 $f -o /dev/null || exit 1; done
// RUN: ls %t/sm90 | FileCheck %s --check-prefix=DIV
// RUN: FileCheck %s --check-prefix=HOST < %t/sm90.mlir
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t/sm90/quant_kernel.ptx

// CHECK: {{[0-9]+}} kernels

// The host code launches the kernels through the runtime's mgpu* entry
// points, 256 threads per block (block-size). @quant's first kernel encodes
// the 768 elements of whole groups (6 tiles, 24 threads: one block); the
// 232 left are encoded by the flat kernels that follow (test/GPU/kernels.mlir
// pins the whole-tile kernels' loads, shuffles and stores).
// HOST-DAG: %[[THREADS:.*]] = llvm.mlir.constant(256 : index) : i64
// HOST-DAG: %[[BLOCKS:.*]] = llvm.mlir.constant(1 : index) : i64
// HOST: llvm.call @mgpuStreamCreate
// HOST: gpu.launch_func {{.*}}@quant_kernel::@quant_kernel blocks in (%[[BLOCKS]], %[[BLOCKS]], %[[BLOCKS]]) threads in (%[[THREADS]], %[[BLOCKS]], %[[BLOCKS]])
// HOST: gpu.binary @quant_kernel
// PTX: .target sm_90
// PTX: .visible .entry quant_kernel
// PTX: %tid.x
// PTX: shfl.sync.bfly.b32

func.func @quant(%x: tensor<1000xf32>, %s: i64) -> tensor<1000xf32> {
  %e = act.encode %x, id = 0, seed %s : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>
  %d = act.decode %e : !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>> -> tensor<1000xf32>
  return %d : tensor<1000xf32>
}
// bf16 statistics: each group's leader stores two 16-bit values, and the
// decode widens them (ptxas checks both kernels above).
// RUN: FileCheck %s --check-prefix=BF16 --input-file=%t/sm90/quant_bf16_kernel.ptx
// BF16: .visible .entry quant_bf16_kernel
// BF16: st.global.{{[bu]}}16
func.func @quant_bf16(%x: tensor<1000xf32>, %s: i64) -> tensor<1000xf32> {
  %e = act.encode %x, id = 0, seed %s : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 2, stats = bf16>>
  %d = act.decode %e : !act.encoded<tensor<1000xf32>, #act.quant<bits = 2, stats = bf16>> -> tensor<1000xf32>
  return %d : tensor<1000xf32>
}
func.func @nearest(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %e = act.encode %x, id = 1 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 2, rounding = nearest>>
  %d = act.decode %e : !act.encoded<tensor<1000xf32>, #act.quant<bits = 2, rounding = nearest>> -> tensor<1000xf32>
  return %d : tensor<1000xf32>
}
func.func @floats(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>) {
  %a = act.encode %x, id = 2 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.float<format = f16>>
  %b = act.encode %x, id = 3 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.float<format = bf16>>
  %c = act.encode %x, id = 4 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.float<format = fp10>>
  %d = act.encode %x, id = 5 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.float<format = e4m3>>
  %e = act.encode %x, id = 6 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.float<format = e5m2>>
  %ad = act.decode %a : !act.encoded<tensor<1000xf32>, #act.float<format = f16>> -> tensor<1000xf32>
  %bd = act.decode %b : !act.encoded<tensor<1000xf32>, #act.float<format = bf16>> -> tensor<1000xf32>
  %cd = act.decode %c : !act.encoded<tensor<1000xf32>, #act.float<format = fp10>> -> tensor<1000xf32>
  %dd = act.decode %d : !act.encoded<tensor<1000xf32>, #act.float<format = e4m3>> -> tensor<1000xf32>
  %ed = act.decode %e : !act.encoded<tensor<1000xf32>, #act.float<format = e5m2>> -> tensor<1000xf32>
  return %ad, %bd, %cd, %dd, %ed : tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>
}
func.func @mask(%x: tensor<1000xf32>) -> tensor<1000xi1> {
  %e = act.encode %x, id = 7 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.mask<predicate = positive>>
  %d = act.decode %e : !act.encoded<tensor<1000xf32>, #act.mask<predicate = positive>> -> tensor<1000xi1>
  return %d : tensor<1000xi1>
}
// Few-bit codes: 3 bits (ten to a word) and 1 bit; the decode's select
// tree and the encode's compares are plain element-wise code in the kernels.
func.func @fewbit(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>) {
  %a = act.encode %x, id = 13 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.fewbit<bits = 3, boundaries = [-2.39, -0.71, -0.32, 0.0, 0.32, 0.71, 2.39], values = [-0.003, -0.089, 0.126, 0.374, 0.626, 0.874, 1.089, 1.003]>>
  %b = act.encode %x, id = 14 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.fewbit<bits = 1, boundaries = [0.0], values = [0.0, 1.0]>>
  %ad = act.decode %a : !act.encoded<tensor<1000xf32>, #act.fewbit<bits = 3, boundaries = [-2.39, -0.71, -0.32, 0.0, 0.32, 0.71, 2.39], values = [-0.003, -0.089, 0.126, 0.374, 0.626, 0.874, 1.089, 1.003]>> -> tensor<1000xf32>
  %bd = act.decode %b : !act.encoded<tensor<1000xf32>, #act.fewbit<bits = 1, boundaries = [0.0], values = [0.0, 1.0]>> -> tensor<1000xf32>
  return %ad, %bd : tensor<1000xf32>, tensor<1000xf32>
}
// Sparse storage: the bitmap, the count and the decode's gather are
// kernels; the compaction and the decode's scan of word offsets are
// sequential loops on the host (over managed memory).
func.func @sparse(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %e = act.encode %x, id = 15 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.sparse<density = 0.5>>
  %d = act.decode %e : !act.encoded<tensor<1000xf32>, #act.sparse<density = 0.5>> -> tensor<1000xf32>
  return %d : tensor<1000xf32>
}
// With Gist's precision reduction over it: the compacted values packed as
// fp10 codes (three to a word) by #act.float's kernels, and back.
func.func @sparse_fp10(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %e = act.encode %x, id = 40 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.sparse<density = 0.5, format = fp10>>
  %d = act.decode %e : !act.encoded<tensor<1000xf32>, #act.sparse<density = 0.5, format = fp10>> -> tensor<1000xf32>
  return %d : tensor<1000xf32>
}
// Group sizes on the GPU: 8 bits in groups of 256 (four tiles, 16 threads
// per group), 4 bits in groups of 64 (two per tile), 2 bits in groups of 48
// (no whole-tile kernel: flat kernels only), 4 bits in groups of 2048 (16
// tiles: a warp per group, two quarter tiles per thread), and 8 bits in
// groups of 4096 (64 tiles, more than a warp holds: flat kernels only).
func.func @groups(%x: tensor<8192xf32>, %s: i64) -> (tensor<8192xf32>, tensor<8192xf32>, tensor<8192xf32>, tensor<8192xf32>, tensor<8192xf32>) {
  %a = act.encode %x, id = 8, seed %s : tensor<8192xf32> -> !act.encoded<tensor<8192xf32>, #act.quant<bits = 8>>
  %b = act.encode %x, id = 9, seed %s : tensor<8192xf32> -> !act.encoded<tensor<8192xf32>, #act.quant<bits = 4, group = 64>>
  %c = act.encode %x, id = 10, seed %s : tensor<8192xf32> -> !act.encoded<tensor<8192xf32>, #act.quant<bits = 2, group = 48>>
  %d = act.encode %x, id = 11, seed %s : tensor<8192xf32> -> !act.encoded<tensor<8192xf32>, #act.quant<bits = 8, group = 4096>>
  %e = act.encode %x, id = 12, seed %s : tensor<8192xf32> -> !act.encoded<tensor<8192xf32>, #act.quant<bits = 4, group = 2048>>
  %ad = act.decode %a : !act.encoded<tensor<8192xf32>, #act.quant<bits = 8>> -> tensor<8192xf32>
  %bd = act.decode %b : !act.encoded<tensor<8192xf32>, #act.quant<bits = 4, group = 64>> -> tensor<8192xf32>
  %cd = act.decode %c : !act.encoded<tensor<8192xf32>, #act.quant<bits = 2, group = 48>> -> tensor<8192xf32>
  %dd = act.decode %d : !act.encoded<tensor<8192xf32>, #act.quant<bits = 8, group = 4096>> -> tensor<8192xf32>
  %ed = act.decode %e : !act.encoded<tensor<8192xf32>, #act.quant<bits = 4, group = 2048>> -> tensor<8192xf32>
  return %ad, %bd, %cd, %dd, %ed : tensor<8192xf32>, tensor<8192xf32>, tensor<8192xf32>, tensor<8192xf32>, tensor<8192xf32>
}
// DIVISION: the block averages (a thread per average, its block summed in
// a loop), the residual and the decode's sum are kernels; the residual's
// quantization is the quant kernels above (five kernels in all).
// DIV-COUNT-5: division_kernel{{.*}}.ptx
// DIV-NOT: division_kernel
func.func @division(%x: tensor<2x16x20x20xf32>, %s: i64) -> tensor<2x16x20x20xf32> {
  %e = act.encode %x, id = 16, seed %s : tensor<2x16x20x20xf32> -> !act.encoded<tensor<2x16x20x20xf32>, #act.division<>>
  %d = act.decode %e : !act.encoded<tensor<2x16x20x20xf32>, #act.division<>> -> tensor<2x16x20x20xf32>
  return %d : tensor<2x16x20x20xf32>
}
