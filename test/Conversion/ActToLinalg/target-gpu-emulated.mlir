// target=gpu-emulated: each kernel's launch becomes loops over its blocks and
// threads in a private function of its own, called where the launch was (as
// the GPU launches an outlined kernel). Inlined into the step, the kernels'
// unrolled threads (thousands of ops each) made one-shot bufferization and
// empty-tensor elimination of the step grow with their square: twenty 1-bit
// encodes of 4,099 elements took 162 s to compile (now about 60 s, most of
// it canonicalizing and compiling the kernels themselves).
// RUN: act-opt %s -convert-act-to-linalg=target=gpu-emulated | FileCheck %s
// RUN: act-opt %s -act-cpu-pipeline=emulate-gpu-kernels=1 | FileCheck %s --check-prefix=LLVM

// CHECK-NOT:   gpu.launch
// CHECK:       func.func private @codec_emulated_kernel(%{{.*}}: memref<4099xf32, {{.*}}>, %{{.*}}: memref<129xi32>, %{{.*}}: memref<17x2xf32>, %{{.*}}: i64)
// CHECK:       scf.for
// CHECK:       func.func private @codec_emulated_kernel_0(
// CHECK-LABEL: func.func @codec(
// CHECK:       call @codec_emulated_kernel(
// CHECK:       call @codec_emulated_kernel_0(
// CHECK:       return
// LLVM-LABEL:  llvm.func @codec(
// LLVM:        llvm.call @codec_emulated_kernel
func.func @codec(%x: tensor<4099xf32>, %s: i64) -> tensor<4099xf32> {
  %e = act.encode %x, id = 0, seed %s : tensor<4099xf32> -> !act.encoded<tensor<4099xf32>, #act.quant<bits = 1>>
  %d = act.decode %e : !act.encoded<tensor<4099xf32>, #act.quant<bits = 1>> -> tensor<4099xf32>
  return %d : tensor<4099xf32>
}
