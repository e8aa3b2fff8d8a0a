// act-prefetch-streams in act-cpu-pipeline: a stochastic 2-bit encode's
// chunk loop (1 KiB of input per chunk) prefetches 16 lines 4 KiB ahead
// per chunk, and nothing else in the function does (the decode reads one
// 64-byte line of codes per chunk). Prefetching changes no bits: act-run
// with and without it returns the same decoded tensor.
// RUN: rm -rf %t && mkdir -p %t
// RUN: act-opt %s -act-cpu-pipeline | FileCheck %s
// RUN: act-opt %s "-act-cpu-pipeline=prefetch-distance=0" | FileCheck %s --check-prefix=OFF
// RUN: act-run %s --entry=roundtrip --output-dir=%t/on | FileCheck %s --check-prefix=EXEC
// RUN: act-run %s --entry=roundtrip --prefetch-ahead=0 --output-dir=%t/off
// RUN: cmp %t/on/result_0.npy %t/off/result_0.npy
// Negative distances are errors, not silently off.
// RUN: not act-run %s --entry=roundtrip --prefetch-ahead=-1 2>&1 | FileCheck %s --check-prefix=NEGEXEC
// RUN: not act-opt %s "-act-cpu-pipeline=prefetch-distance=-3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADPIPE
// NEGEXEC: act-run: error: --prefetch-ahead must be 0 (no prefetch) or positive, not -1
// BADPIPE: act-prefetch-streams option 'distance':0:0: error: act-prefetch-streams: distance must be 0 or positive, got -3
// CHECK-LABEL: llvm.func @roundtrip
// CHECK-COUNT-16: "llvm.intr.prefetch"
// CHECK-NOT: "llvm.intr.prefetch"
// OFF-LABEL: llvm.func @roundtrip
// OFF-NOT: "llvm.intr.prefetch"
// EXEC: act-run: @roundtrip (joint form)
// EXEC: results: 1 written
func.func @roundtrip(%x: tensor<65536xf32>) -> tensor<65536xf32> {
  %seed = arith.constant 7 : i64
  %e = act.encode %x, id = 3, seed %seed : tensor<65536xf32> -> !act.encoded<tensor<65536xf32>, #act.quant<bits = 2>>
  %d = act.decode %e : !act.encoded<tensor<65536xf32>, #act.quant<bits = 2>> -> tensor<65536xf32>
  return %d : tensor<65536xf32>
}
