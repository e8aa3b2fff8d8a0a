// #act.sparse's density prints as a float literal that act-opt reads back
// (`0.0`, not the integer `0`), and -0.0 is the fraction 0; the values'
// format (Gist's precision reduction) is optional, in either order.
// RUN: act-opt %s | FileCheck %s
// RUN: act-opt %s | act-opt | FileCheck %s

// CHECK-LABEL: func.func private @densities
// CHECK-SAME: #act.sparse<density = 0.0>
// CHECK-SAME: #act.sparse<density = 0.0>
// CHECK-SAME: #act.sparse<density = 0.5>
// CHECK-SAME: #act.sparse<density = 1.0e-07>
// CHECK-SAME: #act.sparse>
// CHECK-SAME: #act.sparse<density = 0.25, format = fp10>
// CHECK-SAME: #act.sparse<format = bf16>
func.func private @densities(
  !act.encoded<tensor<4xf32>, #act.sparse<density = -0.0>>,
  !act.encoded<tensor<4xf32>, #act.sparse<density = 0.0>>,
  !act.encoded<tensor<4xf32>, #act.sparse<density = 0.5>>,
  !act.encoded<tensor<4xf32>, #act.sparse<density = 1.0e-7>>,
  !act.encoded<tensor<4xf32>, #act.sparse<density = 1.0>>,
  !act.encoded<tensor<4xf32>, #act.sparse<format = fp10, density = 0.25>>,
  !act.encoded<tensor<4xf32>, #act.sparse<format = bf16>>)
