// RUN: act-opt %s | FileCheck %s
// Round trip: printing then parsing again gives the same IR.
// RUN: act-opt %s | act-opt | FileCheck %s
// RUN: act-opt %s --mlir-print-op-generic | act-opt | FileCheck %s

// CHECK-LABEL: func.func @encodings
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>
func.func @encodings(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xf32>) {
  // Defaults are elided: group 256, stochastic rounding.
  // CHECK: %[[Q:.*]] = act.encode %[[X]], id = 0 : tensor<4x8xf32> -> !act.encoded<tensor<4x8xf32>, #act.quant<bits = 4>>
  %q = act.encode %x, id = 0 : tensor<4x8xf32> -> !act.encoded<tensor<4x8xf32>, #act.quant<bits = 4, group = 256, rounding = stochastic>>
  // CHECK: act.decode %[[Q]] : !act.encoded<tensor<4x8xf32>, #act.quant<bits = 4>> -> tensor<4x8xf32>
  %qd = act.decode %q : !act.encoded<tensor<4x8xf32>, #act.quant<bits = 4>> -> tensor<4x8xf32>
  // CHECK: %[[M:.*]] = act.encode %[[X]], id = 1 : tensor<4x8xf32> -> !act.encoded<tensor<4x8xf32>, #act.mask<predicate = positive>>
  %m = act.encode %x, id = 1 : tensor<4x8xf32> -> !act.encoded<tensor<4x8xf32>, #act.mask<predicate = positive>>
  // Masks decode to a predicate.
  // CHECK: act.decode %[[M]] : {{.*}} -> tensor<4x8xi1>
  %md = act.decode %m : !act.encoded<tensor<4x8xf32>, #act.mask<predicate = positive>> -> tensor<4x8xi1>
  // CHECK: act.encode %[[X]], id = 2 : tensor<4x8xf32> -> !act.encoded<tensor<4x8xf32>, #act.float<format = fp10>>
  %f = act.encode %x, id = 2 : tensor<4x8xf32> -> !act.encoded<tensor<4x8xf32>, #act.float<format = fp10>>
  %fd = act.decode %f : !act.encoded<tensor<4x8xf32>, #act.float<format = fp10>> -> tensor<4x8xf32>
  // CHECK: return
  return %qd, %md, %fd : tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xf32>
}

// Every parameter value of every encoding.
// CHECK-LABEL: func.func @parameters
func.func @parameters(
  // CHECK-SAME: #act.quant<bits = 1, group = 1>
  %a: !act.encoded<tensor<3xf32>, #act.quant<bits = 1, group = 1>>,
  // CHECK-SAME: #act.quant<bits = 2, group = 128, rounding = nearest>
  %b: !act.encoded<tensor<3xf16>, #act.quant<bits = 2, group = 128, rounding = nearest>>,
  // CHECK-SAME: #act.quant<bits = 8, group = 7>
  %c: !act.encoded<tensor<3xbf16>, #act.quant<bits = 8, group = 7>>,
  // CHECK-SAME: #act.float<format = f16>
  %d: !act.encoded<tensor<3xf32>, #act.float<format = f16>>,
  // CHECK-SAME: #act.float<format = bf16>
  %e: !act.encoded<tensor<3xf32>, #act.float<format = bf16>>,
  // CHECK-SAME: #act.float<format = e4m3>
  %f: !act.encoded<tensor<3xf32>, #act.float<format = e4m3>>,
  // CHECK-SAME: #act.float<format = e5m2>
  %g: !act.encoded<tensor<3xf32>, #act.float<format = e5m2>>,
  // CHECK-SAME: #act.mask<predicate = nonnegative>
  %h: !act.encoded<tensor<3xf32>, #act.mask<predicate = nonnegative>>,
  // CHECK-SAME: #act.mask<predicate = nonzero>
  %i: !act.encoded<tensor<3xi32>, #act.mask<predicate = nonzero>>,
  // CHECK-SAME: #act.fewbit<bits = 2, boundaries = [-1.000000e+00, 0.000000e+00, 1.500000e+00], values = [0.000000e+00, 2.500000e-01, 7.500000e-01, 1.000000e+00]>
  %k: !act.encoded<tensor<3xbf16>, #act.fewbit<bits = 2, boundaries = [-1.0, 0.0, 1.5], values = [0.0, 0.25, 0.75, 1.0]>>,
  // CHECK-SAME: #act.index<bits = 4>
  %l: !act.encoded<tensor<2x9xi64>, #act.index<bits = 4>>,
  // CHECK-SAME: #act.sparse<density = 0.25>
  %m: !act.encoded<tensor<2x9xf32>, #act.sparse<density = 0.25>>,
  // The default density is 1 (printed without the parameter).
  // CHECK-SAME: !act.encoded<tensor<4xi64>, #act.sparse>
  %n: !act.encoded<tensor<4xi64>, #act.sparse<density = 1.0>>,
  // Defaults (block 8, 2 bits, group 256, stochastic, NCHW) are not printed.
  // CHECK-SAME: !act.encoded<tensor<2x3x16x16xf32>, #act.division<>>
  %p: !act.encoded<tensor<2x3x16x16xf32>, #act.division<block = 8, bits = 2, group = 256>>,
  // CHECK-SAME: !act.encoded<tensor<?x7x5x3xbf16>, #act.division<block = 4, bits = 4, group = 64, rounding = nearest, layout = nhwc>>
  %q: !act.encoded<tensor<?x7x5x3xbf16>, #act.division<block = 4, bits = 4, group = 64, rounding = nearest, layout = nhwc>>,
  // CHECK-SAME: !act.encoded<tensor<4x4xf32>, #act.recompute>
  %o: !act.encoded<tensor<4x4xf32>, #act.recompute>,
  // Dynamic dimensions are allowed.
  // CHECK-SAME: !act.encoded<tensor<?x8xf32>, #act.quant<bits = 2>>
  %j: !act.encoded<tensor<?x8xf32>, #act.quant<bits = 2>>) {
  return
}

// Encoded values cross function boundaries (split forward/backward form).
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> !act.encoded<tensor<16xf32>, #act.float<format = bf16>>
func.func @forward(%x: tensor<16xf32>) -> !act.encoded<tensor<16xf32>, #act.float<format = bf16>> {
  %e = act.encode %x, id = 7 : tensor<16xf32> -> !act.encoded<tensor<16xf32>, #act.float<format = bf16>>
  return %e : !act.encoded<tensor<16xf32>, #act.float<format = bf16>>
}

// A recomputed value: the token and the backward's copy.
// CHECK-LABEL: func.func @recomputed
// CHECK: act.encode %{{.*}}, id = 2 : tensor<4xf32> -> !act.encoded<tensor<4xf32>, #act.recompute>
// CHECK: act.recomputed %{{.*}}, %{{.*}} : !act.encoded<tensor<4xf32>, #act.recompute>, tensor<4xf32>
func.func @recomputed(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %e = act.encode %x, id = 2 : tensor<4xf32> -> !act.encoded<tensor<4xf32>, #act.recompute>
  %r = act.recomputed %e, %y : !act.encoded<tensor<4xf32>, #act.recompute>, tensor<4xf32>
  return %r : tensor<4xf32>
}
