// Quantization groups that are not a multiple of 16 take the per-word path
// for the whole tensor; its group statistics are loops, not kernels marked
// for act-vectorize, whose whole-tensor vectors (vector<4099x2xf32>) were
// unrolled by vector-to-scf: 13 MB of IR for 4,099 elements at group 1,
// more than 20 s for examples/mlp.mlir. The lowered size must not grow with
// the element count (1000x the elements: the same kernels, plus a few
// constants and a differently shaped remainder, within 25%).
// RUN: act-opt %s -convert-act-to-linalg | FileCheck %s --implicit-check-not=act.vectorize
// CHECK-LABEL: func.func @codec
// Chunks of many groups are unrolled group by group: at 1 bit, group 48
// (chunks of lcm(48, 512) = 1536 elements, 32 groups) takes the per-word
// path too, as do groups of 16 (32 per chunk of 512).
// RUN: sed 's/group = 1>/group = 48>/; s/bits = 4/bits = 1/' %s | act-opt -convert-act-to-linalg | FileCheck %s --implicit-check-not=act.vectorize
// RUN: sed 's/group = 1>/group = 16>/; s/bits = 4/bits = 1/' %s | act-opt -convert-act-to-linalg | FileCheck %s --implicit-check-not=act.vectorize
// ... while 4-bit groups of 48 (8 per chunk of 384) stay chunked.
// RUN: sed 's/group = 1>/group = 48>/' %s | act-opt -convert-act-to-linalg | FileCheck %s --check-prefix=CHUNKED
// CHUNKED: act.vectorize
// RUN: act-opt %s -act-cpu-pipeline -o %t.small.mlir
// RUN: sed 's/4099/4099000/g' %s | act-opt -act-cpu-pipeline -o %t.large.mlir
// RUN: %python -c "import os, sys; a, b = (os.path.getsize(f) for f in sys.argv[1:]); print(a, b); assert a < 200000 and b < 1.25 * a, (a, b)" %t.small.mlir %t.large.mlir

func.func @codec(%x: tensor<4099xf32>, %s: i64) -> tensor<4099xf32> {
  %e = act.encode %x, id = 0, seed %s : tensor<4099xf32> -> !act.encoded<tensor<4099xf32>, #act.quant<bits = 4, group = 1>>
  %d = act.decode %e : !act.encoded<tensor<4099xf32>, #act.quant<bits = 4, group = 1>> -> tensor<4099xf32>
  return %d : tensor<4099xf32>
}
