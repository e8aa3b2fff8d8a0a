// The shape of act's GPU kernels (convert-act-to-linalg{target=gpu} through
// act-gpu-pipeline to PTX): one launch per encode or decode of whole tiles,
// a thread per four payload words, 16-byte loads and stores, and each
// group's min/max combined across the group's threads by warp shuffles.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: act-opt %s -act-gpu-pipeline="chip=sm_90 features=+ptx80" -o %t/gpu.mlir
// RUN: %python %S/extract_ptx.py %t/gpu.mlir %t | FileCheck %s --check-prefix=COUNT
// RUN: FileCheck %s --check-prefix=HOST < %t/gpu.mlir
// RUN: %python %S/count_ptx.py %t/encode_kernel.ptx | FileCheck %s --check-prefix=ENC
// RUN: %python %S/count_ptx.py %t/decode_kernel.ptx | FileCheck %s --check-prefix=DEC
// RUN: %python %S/count_ptx.py %t/one_bit_kernel.ptx | FileCheck %s --check-prefix=ONE
// RUN: %python %S/count_ptx.py %t/half_kernel.ptx | FileCheck %s --check-prefix=HALF
// RUN: %python %S/count_ptx.py %t/wide_kernel.ptx | FileCheck %s --check-prefix=WIDE
// RUN: %python %S/count_ptx.py %t/mask_decode_kernel.ptx | FileCheck %s --check-prefix=MASK
// RUN: %python %S/count_ptx.py %t/fp8_decode_kernel.ptx | FileCheck %s --check-prefix=FP8
// RUN: for f in %t/*.ptx; do %ptxas -arch=sm_90 $f -o /dev/null || exit 1; done

// Seven functions, seven kernels: no tail (4096 elements are whole tiles
// and groups), nothing else launched.
// COUNT: 7 kernels

// 4096 elements at 4 bits: 32 tiles of 128, four threads each: 128 threads,
// one block of 256. Constants stay in the kernels (sunk before outlining):
// the encode kernel gets buffers, sizes and the seed (pointers and i64),
// not the Philox constants (i32).
// HOST-LABEL: llvm.func @encode
// HOST-DAG:   %[[UNIT:.*]] = llvm.mlir.constant(1 : index) : i64
// HOST-DAG:   %[[BLOCK:.*]] = llvm.mlir.constant(256 : index) : i64
// HOST:       gpu.launch_func {{.*}} @encode_kernel::@encode_kernel blocks in (%[[UNIT]], %[[UNIT]], %[[UNIT]]) threads in (%[[BLOCK]], %[[UNIT]], %[[UNIT]]) : i64 args({{(%[a-z0-9_]+ : (!llvm.ptr|i64), )*}}%arg5 : i64{{(, %[a-z0-9_]+ : (!llvm.ptr|i64))*}})
// HOST-NOT:   gpu.launch_func
// HOST-LABEL: llvm.func @decode

// Each kernel has two copies of its body: 16-byte accesses when its buffers
// are 16-byte aligned, element by element otherwise. count_ptx.py counts
// memory and shuffle instructions over both.

// Encode: a thread loads its eight lanes' four elements (one ld.v4 each),
// reduces min and max over its 32 elements, then across the eight threads
// of its group (two tiles): three butterfly shuffles each (offsets 1, 2,
// 4), and stores its four words with one st.v4.
// ENC: ld.global.v4.b32 8
// ENC: shfl.sync.bfly.b32 12 offsets 1 2 4
// ENC: st.global.v4.b32 1
// ENC: st.global.b32 8

// Decode: a thread loads its four words at once (ld.v4) and its group's
// (min, scale) once (two loads per body), and writes each of its eight
// lanes' four floats with one st.v4.
// DEC: ld.global.v4.b32 1
// DEC: ld.global.b32 8
// DEC: shfl.sync.bfly.b32 0
// DEC: st.global.v4.b32 8

// 1 bit: a tile (512 elements) holds two groups of 256, each spread over
// 16 lanes of the tile's four threads: 32 loads, two shuffles per min/max
// and group (offsets 1, 2).
// ONE: ld.global.v4.b32 32
// ONE: shfl.sync.bfly.b32 16 offsets 1 2
// ONE: st.global.v4.b32 1

// f16 codes: a thread per eight elements, two 16-byte loads, one 16-byte
// store of eight codes.
// HALF: ld.global.v4.b32 2
// HALF: shfl.sync.bfly.b32 0
// HALF: st.global.v4.b32 1

// Groups of 2048 at 4 bits span 16 tiles, 64 quarter tiles: a warp per
// group, each thread owning two quarters (16 loads, two 16-byte stores) and
// five shuffles per statistic (offsets 1 to 16, the whole warp).
// WIDE: ld.global.v4.b32 16
// WIDE: shfl.sync.bfly.b32 20 offsets 1 2 4 8 16
// WIDE: st.global.v4.b32 2
// A mask's decode (one byte per element): a thread per tile and lane reads
// the tile's 16 words (four ld.v4) and stores its lane's 16 bytes with one
// st.v4, so a warp's store is 512 contiguous bytes (a byte store per
// element measured 0.08 of a device copy on an H100, this 0.82).
// MASK: ld.global.v4.b32 4{{$}}
// MASK: st.global.v4.b32 1{{$}}
// MASK: st.global.b32 0{{$}}
// MASK: st.global.b8 16{{$}}
// An fp8 decode: a thread per 16 output bytes (four codes: one 4-byte
// load, one st.v4; 16 codes per thread measured 0.54 of a copy, this 0.95).
// FP8: ld.global.b32 1{{$}}
// FP8: st.global.v4.b32 1{{$}}
// FP8: st.global.b32 4{{$}}

func.func @encode(%x: tensor<4096xf32>, %s: i64) -> !act.encoded<tensor<4096xf32>, #act.quant<bits = 4>> {
  %e = act.encode %x, id = 0, seed %s : tensor<4096xf32> -> !act.encoded<tensor<4096xf32>, #act.quant<bits = 4>>
  return %e : !act.encoded<tensor<4096xf32>, #act.quant<bits = 4>>
}
func.func @decode(%e: !act.encoded<tensor<4096xf32>, #act.quant<bits = 4>>) -> tensor<4096xf32> {
  %d = act.decode %e : !act.encoded<tensor<4096xf32>, #act.quant<bits = 4>> -> tensor<4096xf32>
  return %d : tensor<4096xf32>
}
func.func @half(%x: tensor<4096xf32>) -> !act.encoded<tensor<4096xf32>, #act.float<format = f16>> {
  %e = act.encode %x, id = 1 : tensor<4096xf32> -> !act.encoded<tensor<4096xf32>, #act.float<format = f16>>
  return %e : !act.encoded<tensor<4096xf32>, #act.float<format = f16>>
}
func.func @one_bit(%x: tensor<4096xf32>, %s: i64) -> !act.encoded<tensor<4096xf32>, #act.quant<bits = 1>> {
  %e = act.encode %x, id = 2, seed %s : tensor<4096xf32> -> !act.encoded<tensor<4096xf32>, #act.quant<bits = 1>>
  return %e : !act.encoded<tensor<4096xf32>, #act.quant<bits = 1>>
}
func.func @wide(%x: tensor<4096xf32>, %s: i64) -> !act.encoded<tensor<4096xf32>, #act.quant<bits = 4, group = 2048>> {
  %e = act.encode %x, id = 3, seed %s : tensor<4096xf32> -> !act.encoded<tensor<4096xf32>, #act.quant<bits = 4, group = 2048>>
  return %e : !act.encoded<tensor<4096xf32>, #act.quant<bits = 4, group = 2048>>
}
func.func @mask_decode(%e: !act.encoded<tensor<4096xf32>, #act.mask<predicate = positive>>) -> tensor<4096xi1> {
  %d = act.decode %e : !act.encoded<tensor<4096xf32>, #act.mask<predicate = positive>> -> tensor<4096xi1>
  return %d : tensor<4096xi1>
}
func.func @fp8_decode(%e: !act.encoded<tensor<4096xf32>, #act.float<format = e4m3>>) -> tensor<4096xf32> {
  %d = act.decode %e : !act.encoded<tensor<4096xf32>, #act.float<format = e4m3>> -> tensor<4096xf32>
  return %d : tensor<4096xf32>
}
