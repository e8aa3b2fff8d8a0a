// The stock mlir-opt of the LLVM install loads act as a dialect plugin and
// round-trips act IR.
// The ASan build's plugin needs the sanitizer runtime the stock tool lacks.
// UNSUPPORTED: asan
// RUN: %mlir_opt --load-dialect-plugin=%act_libs/ActPlugin%shlibext %s | FileCheck %s
// RUN: %mlir_opt --load-dialect-plugin=%act_libs/ActPlugin%shlibext %s \
// RUN:   | %mlir_opt --load-dialect-plugin=%act_libs/ActPlugin%shlibext | FileCheck %s
// Without the plugin the stock tool cannot parse act IR.
// RUN: not %mlir_opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// The plugin shares the host's libMLIR.so instead of carrying its own MLIR.
// RUN: llvm-readelf --needed-libs %act_libs/ActPlugin%shlibext | FileCheck %s --check-prefix=NEEDED

// NOPLUGIN: error: Dialect `act' not found

// NEEDED: libMLIR.so

// CHECK-LABEL: func.func @roundtrip
// CHECK: act.encode %{{.*}}, id = 5 : tensor<2x300xf32> -> !act.encoded<tensor<2x300xf32>, #act.quant<bits = 2, group = 128, rounding = nearest>>
// CHECK: act.decode %{{.*}} : !act.encoded<tensor<2x300xf32>, #act.quant<bits = 2, group = 128, rounding = nearest>> -> tensor<2x300xf32>
// CHECK: act.encode %{{.*}}, id = 6 : tensor<2x300xf32> -> !act.encoded<tensor<2x300xf32>, #act.mask<predicate = positive>>
// CHECK: act.decode %{{.*}} -> tensor<2x300xi1>
func.func @roundtrip(%x: tensor<2x300xf32>) -> (tensor<2x300xf32>, tensor<2x300xi1>) {
  %e = act.encode %x, id = 5 : tensor<2x300xf32> -> !act.encoded<tensor<2x300xf32>, #act.quant<bits = 2, group = 128, rounding = nearest>>
  %d = act.decode %e : !act.encoded<tensor<2x300xf32>, #act.quant<bits = 2, group = 128, rounding = nearest>> -> tensor<2x300xf32>
  %m = act.encode %x, id = 6 : tensor<2x300xf32> -> !act.encoded<tensor<2x300xf32>, #act.mask<predicate = positive>>
  %p = act.decode %m : !act.encoded<tensor<2x300xf32>, #act.mask<predicate = positive>> -> tensor<2x300xi1>
  return %d, %p : tensor<2x300xf32>, tensor<2x300xi1>
}
