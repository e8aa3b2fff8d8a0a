// The stock mlir-opt runs act's passes from the plugin (reached through
// --pass-pipeline / -p, not as --act-* flags).
// The ASan build's plugin needs the sanitizer runtime the stock tool lacks.
// UNSUPPORTED: asan
// RUN: %mlir_opt --load-dialect-plugin=%act_libs/ActPlugin%shlibext \
// RUN:   --load-pass-plugin=%act_libs/ActPlugin%shlibext \
// RUN:   -p 'builtin.module(act-insert-encode-decode{encoding=#act.float<format=bf16>})' %s | FileCheck %s
// RUN: %mlir_opt --load-dialect-plugin=%act_libs/ActPlugin%shlibext \
// RUN:   --load-pass-plugin=%act_libs/ActPlugin%shlibext \
// RUN:   -p 'builtin.module(act-memory-report{table=-})' %s -o /dev/null | FileCheck %s --check-prefix=REPORT

// CHECK-LABEL: func.func @step
// CHECK: %[[A:.*]] = math.exp
// CHECK-NEXT: math.tanh %[[A]]
// CHECK-NEXT: %[[E:.*]] = act.encode %[[A]], id = 0 : tensor<32x32xf32> -> !act.encoded<tensor<32x32xf32>, #act.float<format = bf16>>
// CHECK: %[[D:.*]] = act.decode %[[E]]
// CHECK-NEXT: math.cos %[[D]]

// REPORT: act memory report: @step (joint form)
// REPORT: 0  math.exp                 32x32            f32           4096         4096  encodable    none

func.func @step(%x: tensor<32x32xf32>) -> (f32 {act.loss}, tensor<32x32xf32>) {
  %c0 = arith.constant 0 : index
  %a = math.exp %x : tensor<32x32xf32>
  %b = math.tanh %a : tensor<32x32xf32>
  %l = tensor.extract %b[%c0, %c0] : tensor<32x32xf32>
  %g = math.cos %a : tensor<32x32xf32>
  return %l, %g : f32, tensor<32x32xf32>
}
