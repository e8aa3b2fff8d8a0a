// RUN: act-opt %s -split-input-file -act-sink-to-users | FileCheck %s
// RUN: act-opt %s -split-input-file -act-hoist-encodes | FileCheck %s --check-prefix=HOIST

#id = affine_map<(d0, d1) -> (d0, d1)>

// A linear layer's backward as exported: the input gradient dX = dY W
// (64 KB), then the weight gradient dW = dY^T H reading the decoded
// activation H (64 KB), then the activation's backward reading dX. dX moves
// down to its reader (with its fill and empty), so it is no longer live
// beside H: dY and W are read later anyway, nothing lives longer.
// CHECK-LABEL: func.func @input_gradient_waits
// CHECK:       %[[H:.*]] = act.decode
// CHECK:       %[[DW:.*]] = linalg.matmul ins(%{{.*}}, %[[H]] :
// CHECK:       %[[DX:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<128x64xf32>, tensor<64x128xf32>)
// CHECK-NEXT:  linalg.generic {{.*}} ins(%[[DX]], %{{.*}} :
// CHECK:       return %[[DW]]
// HOIST-LABEL: func.func @input_gradient_waits
// HOIST:       act.decode
// HOIST-NEXT:  tensor.empty() : tensor<64x128xf32>
func.func @input_gradient_waits(%dy: tensor<128x64xf32>, %dyt: tensor<64x128xf32>, %w: tensor<64x128xf32>, %h: !act.encoded<tensor<128x128xf32>, #act.quant<bits = 4>>, %m: tensor<128x128xf32>) -> (tensor<64x128xf32>, tensor<128x128xf32>) {
  %z = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<128x128xf32>
  %f0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %dx = linalg.matmul ins(%dy, %w : tensor<128x64xf32>, tensor<64x128xf32>) outs(%f0 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %hd = act.decode %h : !act.encoded<tensor<128x128xf32>, #act.quant<bits = 4>> -> tensor<128x128xf32>
  %e1 = tensor.empty() : tensor<64x128xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %dw = linalg.matmul ins(%dyt, %hd : tensor<64x128xf32>, tensor<128x128xf32>) outs(%f1 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %e2 = tensor.empty() : tensor<128x128xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%dx, %m : tensor<128x128xf32>, tensor<128x128xf32>) outs(%e2 : tensor<128x128xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<128x128xf32>
  return %dw, %g : tensor<64x128xf32>, tensor<128x128xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// The same with a gradient dY (128 KB) computed here and read last by the
// bias gradient after dW: moving dX (64 KB) down extends dY only across a
// view (the reshape of dX), where nothing is allocated, so dX still moves.
// CHECK-LABEL: func.func @extends_across_views
// CHECK:       act.decode
// CHECK:       linalg.matmul {{.*}} -> tensor<64x128xf32>
// CHECK:       linalg.generic {{.*}} outs(%{{.*}} : tensor<256xf32>)
// CHECK:       %[[DX:.*]] = linalg.matmul {{.*}} -> tensor<128x128xf32>
// CHECK-NEXT:  tensor.expand_shape %[[DX]]
func.func @extends_across_views(%a: tensor<128x256xf32>, %dyt: tensor<64x128xf32>, %w: tensor<256x128xf32>, %h: !act.encoded<tensor<128x128xf32>, #act.quant<bits = 4>>, %m: tensor<2x64x128xf32>) -> (tensor<64x128xf32>, tensor<256xf32>, tensor<2x64x128xf32>) {
  %z = arith.constant 0.0 : f32
  %ey = tensor.empty() : tensor<128x256xf32>
  %dy = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<128x256xf32>) outs(%ey : tensor<128x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<128x256xf32>
  %e0 = tensor.empty() : tensor<128x128xf32>
  %f0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %dx = linalg.matmul ins(%dy, %w : tensor<128x256xf32>, tensor<256x128xf32>) outs(%f0 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %hd = act.decode %h : !act.encoded<tensor<128x128xf32>, #act.quant<bits = 4>> -> tensor<128x128xf32>
  %e1 = tensor.empty() : tensor<64x128xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %dw = linalg.matmul ins(%dyt, %hd : tensor<64x128xf32>, tensor<128x128xf32>) outs(%f1 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %e3 = tensor.empty() : tensor<256xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<256xf32>) -> tensor<256xf32>
  %db = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%dy : tensor<128x256xf32>) outs(%f3 : tensor<256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  %v = tensor.expand_shape %dx [[0, 1], [2]] output_shape [2, 64, 128] : tensor<128x128xf32> into tensor<2x64x128xf32>
  %e2 = tensor.empty() : tensor<2x64x128xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%v, %m : tensor<2x64x128xf32>, tensor<2x64x128xf32>) outs(%e2 : tensor<2x64x128xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<2x64x128xf32>
  return %dw, %db, %g : tensor<64x128xf32>, tensor<256xf32>, tensor<2x64x128xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>

// A reduction of a computed tensor %t (its last reader, 16 KB freed there)
// produces 512 bytes: moved down, %t would live longer, so it stays. The
// sum reading %t inside its region (tensor.extract) counts the same.
// CHECK-LABEL: func.func @would_extend
// CHECK:       %[[T:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<128x32xf32>) outs
// CHECK:       %[[S:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<128x32xf32>)
// CHECK:       %[[R:.*]] = linalg.generic
// CHECK:         tensor.extract %[[T]]
// CHECK:       linalg.matmul
// CHECK:       linalg.generic {{.*}} ins(%{{.*}}, %[[S]], %[[R]] :
func.func @would_extend(%a: tensor<128x32xf32>, %b: tensor<128x32xf32>, %w: tensor<32x32xf32>) -> (tensor<128xf32>, tensor<128xf32>, tensor<128x32xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x32xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<128x32xf32>) outs(%e : tensor<128x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<128x32xf32>
  %e1 = tensor.empty() : tensor<128xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%t : tensor<128x32xf32>) outs(%f1 : tensor<128xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %o : f32
    linalg.yield %y : f32
  } -> tensor<128xf32>
  %e2 = tensor.empty() : tensor<128xf32>
  %r = linalg.generic {indexing_maps = [#vec], iterator_types = ["parallel"]} outs(%e2 : tensor<128xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %c0 = arith.constant 0 : index
    %v = tensor.extract %t[%i, %c0] : tensor<128x32xf32>
    %y = arith.addf %v, %o : f32
    linalg.yield %y : f32
  } -> tensor<128xf32>
  %e3 = tensor.empty() : tensor<128x32xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<128x32xf32>) -> tensor<128x32xf32>
  %c = linalg.matmul ins(%b, %w : tensor<128x32xf32>, tensor<32x32xf32>) outs(%f3 : tensor<128x32xf32>) -> tensor<128x32xf32>
  %e4 = tensor.empty() : tensor<128xf32>
  %f4 = linalg.fill ins(%z : f32) outs(%e4 : tensor<128xf32>) -> tensor<128xf32>
  %u = linalg.generic {indexing_maps = [#id, #row, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%c, %s, %r : tensor<128x32xf32>, tensor<128xf32>, tensor<128xf32>) outs(%f4 : tensor<128xf32>) {
  ^bb0(%x: f32, %p: f32, %q: f32, %o: f32):
    %y = arith.addf %x, %p : f32
    %y2 = arith.addf %y, %q : f32
    %y3 = arith.addf %y2, %o : f32
    linalg.yield %y3 : f32
  } -> tensor<128xf32>
  return %s, %u, %c : tensor<128xf32>, tensor<128xf32>, tensor<128x32xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The insertion pass encodes a saved value after its last forward use (the
// GELU-like op); hoisted, the encode follows the value's producer, the two
// encodes of it keep their order, and the op is then the value's last
// reader (act-in-place may write into it).
// HOIST-LABEL: func.func @encode_early
// HOIST:       %[[X:.*]] = linalg.matmul
// HOIST-NEXT:  act.encode %[[X]], id = 0
// HOIST-NEXT:  act.encode %[[X]], id = 1
// HOIST-NEXT:  tensor.empty
// HOIST-NEXT:  linalg.generic {{.*}} ins(%[[X]] :
func.func @encode_early(%a: tensor<64x32xf32>, %w: tensor<32x64xf32>, %s: tensor<2xi64> {act.seeds}) -> (tensor<64x64xf32>, !act.encoded<tensor<64x64xf32>, #act.quant<bits = 4>>, !act.encoded<tensor<64x64xf32>, #act.float<format = bf16>>) {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %seed = tensor.extract %s[%c0] : tensor<2xi64>
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %x = linalg.matmul ins(%a, %w : tensor<64x32xf32>, tensor<32x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  %e1 = tensor.empty() : tensor<64x64xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x64xf32>) outs(%e1 : tensor<64x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %t = math.tanh %v : f32
    linalg.yield %t : f32
  } -> tensor<64x64xf32>
  %q = act.encode %x, id = 0, seed %seed : tensor<64x64xf32> -> !act.encoded<tensor<64x64xf32>, #act.quant<bits = 4>>
  %h = act.encode %x, id = 1 : tensor<64x64xf32> -> !act.encoded<tensor<64x64xf32>, #act.float<format = bf16>>
  return %g, %q, %h : tensor<64x64xf32>, !act.encoded<tensor<64x64xf32>, #act.quant<bits = 4>>, !act.encoded<tensor<64x64xf32>, #act.float<format = bf16>>
}

// -----

// A zero padding (51 KB) read by a convolution whose output (32 KB) is
// filled just before it: moved below the fill, the pad would run beside
// the filled output and its own input (x dies at the pad): it stays.
// CHECK-LABEL: func.func @pad_stays
// CHECK:       tensor.pad
// CHECK:       linalg.fill
// CHECK:       linalg.conv_2d_nchw_fchw
func.func @pad_stays(%a: tensor<16x8x8x8xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<16x8x8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x8x8x8xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : tensor<16x8x8x8xf32>) outs(%e0 : tensor<16x8x8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %t = math.tanh %v : f32
    linalg.yield %t : f32
  } -> tensor<16x8x8x8xf32>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %z : f32
  } : tensor<16x8x8x8xf32> to tensor<16x8x10x10xf32>
  %e = tensor.empty() : tensor<16x8x8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x8x8x8xf32>) -> tensor<16x8x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<16x8x10x10xf32>, tensor<8x8x3x3xf32>) outs(%f : tensor<16x8x8x8xf32>) -> tensor<16x8x8x8xf32>
  return %c : tensor<16x8x8x8xf32>
}
