// Element types the GPU lowering cannot handle are an error at the op that
// uses them (f8 inputs failed deep in the LLVM IR translation, located at
// <unknown>:0); the CPU pipeline handles them.
// RUN: not act-opt %s -act-gpu-pipeline -o /dev/null 2>&1 | FileCheck %s
// CHECK: act-gpu-pipeline-elements.mlir:9:{{[0-9]+}}: error: act-gpu-pipeline: 'tensor<64xf8E4M3FN>' is not supported on the GPU target (elements: f16, bf16, f32, f64, integers)
// RUN: act-opt %s -act-cpu-pipeline -o /dev/null

func.func @f8(%x: tensor<64xf8E4M3FN>) -> tensor<64xf8E4M3FN> {
  %e = act.encode %x, id = 0 : tensor<64xf8E4M3FN> -> !act.encoded<tensor<64xf8E4M3FN>, #act.float<format = bf16>>
  %d = act.decode %e : !act.encoded<tensor<64xf8E4M3FN>, #act.float<format = bf16>> -> tensor<64xf8E4M3FN>
  return %d : tensor<64xf8E4M3FN>
}
