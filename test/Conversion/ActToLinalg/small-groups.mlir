// Quantization groups that are not a multiple of 16 take the per-word path
// for the whole tensor; its group statistics are loops, not kernels marked
// for act-vectorize, whose whole-tensor vectors (vector<4099x2xf32>) were
// unrolled by vector-to-scf: 13 MB of IR for 4,099 elements at group 1,
// more than 20 s for examples/mlp.mlir. The lowered size must not grow with
// the element count.
// RUN: act-opt %s -convert-act-to-linalg | FileCheck %s --implicit-check-not=act.vectorize
// CHECK-LABEL: func.func @codec
// RUN: act-opt %s -act-cpu-pipeline -o %t.small.mlir
// RUN: sed 's/4099/4099000/g' %s | act-opt -act-cpu-pipeline -o %t.large.mlir
// RUN: %python -c "import os, sys; a, b = (os.path.getsize(f) for f in sys.argv[1:]); print(a, b); assert a < 200000 and b < 1.1 * a, (a, b)" %t.small.mlir %t.large.mlir

func.func @codec(%x: tensor<4099xf32>, %s: i64) -> tensor<4099xf32> {
  %e = act.encode %x, id = 0, seed %s : tensor<4099xf32> -> !act.encoded<tensor<4099xf32>, #act.quant<bits = 4, group = 1>>
  %d = act.decode %e : !act.encoded<tensor<4099xf32>, #act.quant<bits = 4, group = 1>> -> tensor<4099xf32>
  return %d : tensor<4099xf32>
}
