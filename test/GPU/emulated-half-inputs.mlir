// Encodings of f16 and bf16 tensors through the GPU kernels (8-byte vector
// loads of four halves) give the CPU lowering's bits: act-run on the host
// with --device=gpu-emulated against --device=cpu. The PTX of the same
// module assembles.
// RUN: rm -rf %t && mkdir -p %t
// RUN: act-run %s --entry=codec --output-dir=%t/cpu
// RUN: act-run %s --entry=codec --device=gpu-emulated --output-dir=%t/emu
// RUN: cmp %t/cpu/result_0.npy %t/emu/result_0.npy
// RUN: cmp %t/cpu/result_1.npy %t/emu/result_1.npy
// RUN: %if ptxas %{ act-opt %s -act-gpu-pipeline -o %t/gpu.mlir %}
// RUN: %if ptxas %{ %python %S/extract_ptx.py %t/gpu.mlir %t/ptx %}
// RUN: %if ptxas %{ for f in %t/ptx/*.ptx; do %ptxas -arch=sm_90 $f -o /dev/null || exit 1; done %}
func.func @codec(%x32: tensor<4000xf32>, %s: i64) -> (tensor<4000xf32>, tensor<4000xf32>) {
  %x = arith.truncf %x32 : tensor<4000xf32> to tensor<4000xf16>
  %e = act.encode %x, id = 1, seed %s : tensor<4000xf16> -> !act.encoded<tensor<4000xf16>, #act.quant<bits = 4>>
  %d = act.decode %e : !act.encoded<tensor<4000xf16>, #act.quant<bits = 4>> -> tensor<4000xf16>
  %z = arith.truncf %x32 : tensor<4000xf32> to tensor<4000xbf16>
  %f = act.encode %z, id = 2 : tensor<4000xbf16> -> !act.encoded<tensor<4000xbf16>, #act.float<format = e4m3>>
  %g = act.decode %f : !act.encoded<tensor<4000xbf16>, #act.float<format = e4m3>> -> tensor<4000xbf16>
  %d32 = arith.extf %d : tensor<4000xf16> to tensor<4000xf32>
  %g32 = arith.extf %g : tensor<4000xbf16> to tensor<4000xf32>
  return %d32, %g32 : tensor<4000xf32>, tensor<4000xf32>
}
