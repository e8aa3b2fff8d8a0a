// #act.sparse's CPU compaction by the target's features: AVX-512's
// vcompressps/vexpandps (llvm.experimental.vector.compress, vector.expandload)
// when it has them, else AVX2's vpermps with a permutation table of 8 lanes
// by mask byte (LLVM expanded the compress lane by lane: 0.11 of memcpy).
// RUN: act-opt %s -convert-act-to-linalg="cpu-features=+avx512f" | FileCheck %s --check-prefix=AVX512
// RUN: act-opt %s -convert-act-to-linalg="cpu-features=-avx512f" | FileCheck %s --check-prefix=AVX2
// RUN: not act-opt %s -convert-act-to-linalg="cpu-features=-avx513f" 2>&1 | FileCheck %s --check-prefix=BAD
// The bits are the same either way, byte for byte (a ReLU-like input).
// RUN: rm -rf %t && mkdir -p %t
// RUN: act-run %s --entry=roundtrip --init=int --output-dir=%t/native > /dev/null
// RUN: act-run %s --entry=roundtrip --init=int --cpu-features=-avx512f --output-dir=%t/avx2 > /dev/null
// RUN: for i in 0 1 2; do cmp %t/native/result_$i.npy %t/avx2/result_$i.npy || exit 1; done
// RUN: %system_python -c "import numpy as n; x = n.load('%t/avx2/result_2.npy'); assert (x == 0).any() and (x != 0).any()"

// AVX512-LABEL: func.func @roundtrip
// AVX512: llvm.call @llvm.experimental.vector.compress.v16f32
// AVX512: vector.expandload
// AVX512-NOT: llvm.x86.avx2.permps
// AVX2-LABEL: func.func @roundtrip
// AVX2-NOT: vector.compress
// AVX2: arith.constant dense<{{.*}}> : tensor<256x8xi32>
// AVX2: llvm.call @llvm.x86.avx2.permps
// AVX2-NOT: vector.expandload
// AVX2: llvm.call @llvm.x86.avx2.permps
// BAD: convert-act-to-linalg: unknown CPU feature 'avx513f'
func.func @roundtrip(%x: tensor<5000xf32>) -> (!act.encoded<tensor<5000xf32>, #act.sparse<density = 0.5>>, tensor<5000xf32>) {
  %e = act.encode %x, id = 0 : tensor<5000xf32> -> !act.encoded<tensor<5000xf32>, #act.sparse<density = 0.5>>
  %d = act.decode %e : !act.encoded<tensor<5000xf32>, #act.sparse<density = 0.5>> -> tensor<5000xf32>
  return %e, %d : !act.encoded<tensor<5000xf32>, #act.sparse<density = 0.5>>, tensor<5000xf32>
}
