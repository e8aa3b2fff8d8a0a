// RUN: act-opt %s -act-insert-encode-decode -verify-each -split-input-file | FileCheck %s
// RUN: act-opt %s -act-insert-encode-decode="min-bytes=0 encode-loss-head=1" -split-input-file | FileCheck %s --check-prefix=ALL
// RUN: act-opt %s -act-insert-encode-decode="encoding='#act.float<format = bf16>' exclude=1" -split-input-file | FileCheck %s --check-prefix=BF16
// RUN: act-opt %s -act-insert-encode-decode="include=1" -split-input-file | FileCheck %s --check-prefix=ONLY1

// policy=none leaves the IR unchanged.
// RUN: act-opt %s -split-input-file > %t.orig
// RUN: act-opt %s -split-input-file -act-insert-encode-decode=policy=none > %t.none
// RUN: diff %t.orig %t.none

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A linear layer, ReLU, and a sum as the loss. %h (the matmul) is read by the
// ReLU (forward) and by the ReLU's derivative (backward); %r is read by the
// loss (forward) and by nothing in the backward pass, so only %h is saved.
// The input %x is saved too, but function arguments are never encoded.
// CHECK-LABEL: func.func @joint
// CHECK-SAME: %[[X:[^:]*]]: tensor<16x64xf32>
// CHECK:      %[[H:.*]] = linalg.matmul ins(%[[X]]
// The ReLU is %h's last forward use: the encode follows it at once.
// CHECK:      %[[R:.*]] = linalg.generic
// CHECK:      } -> tensor<16x64xf32>
// CHECK-NEXT: %[[E:.*]] = act.encode %[[H]], id = 0, seed %{{[a-z0-9_]+}} : tensor<16x64xf32> -> !act.encoded<tensor<16x64xf32>, #act.quant<bits = 4>>
// No backward op reads %h itself.
// CHECK-NOT:  %[[H]]{{[ ,)]}}
// The decode comes right before the first backward use...
// CHECK:      %[[D:.*]] = act.decode %[[E]] : !act.encoded<tensor<16x64xf32>, #act.quant<bits = 4>> -> tensor<16x64xf32>
// CHECK-NEXT: %[[DH:.*]] = linalg.generic {{.*}} ins(%[[D]] : tensor<16x64xf32>)
// CHECK-NOT:  %[[H]]{{[ ,)]}}
// CHECK:      return
func.func @joint(%x: tensor<16x64xf32>, %w: tensor<64x64xf32>) -> (f32 {act.loss}, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %h = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<16x64xf32>) -> tensor<16x64xf32>
  %er = tensor.empty() : tensor<16x64xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<16x64xf32>) outs(%er : tensor<16x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<16x64xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%r : tensor<16x64xf32>) outs(%s1 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %init: f32) {
      %t = arith.addf %in, %init : f32
      linalg.yield %t : f32
    }
  %loss = tensor.extract %s[] : tensor<f32>
  // Backward: reads h's value (h > 0 ? h : 0; a value use, so h is
  // quantized; a backward that reads only the sign gets a mask, see
  // @relu_sign below).
  %edh = tensor.empty() : tensor<16x64xf32>
  %dh = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<16x64xf32>) outs(%edh : tensor<16x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.cmpf ogt, %a, %zero : f32
    %v = arith.select %p, %a, %zero : f32
    linalg.yield %v : f32
  } -> tensor<16x64xf32>
  %xt0 = tensor.empty() : tensor<64x16xf32>
  %xt = linalg.transpose ins(%x : tensor<16x64xf32>) outs(%xt0 : tensor<64x16xf32>) permutation = [1, 0]
  %gw0 = tensor.empty() : tensor<64x64xf32>
  %gw1 = linalg.fill ins(%zero : f32) outs(%gw0 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %gw = linalg.matmul ins(%xt, %dh : tensor<64x16xf32>, tensor<16x64xf32>) outs(%gw1 : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %loss, %gw : f32, tensor<64x64xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>

// Several saved values, each encoded right after its own last forward use;
// ids follow program order of their producers. A backward use inside a
// region (the loop) is served by a decode before the op that holds it.
// CHECK-LABEL: func.func @order
// CHECK:      %[[A:.*]] = math.exp %{{.*}} : tensor<32x32xf32>
// CHECK-NEXT: %[[B:.*]] = math.tanh %[[A]] : tensor<32x32xf32>
// CHECK-NEXT: %[[EA:.*]] = act.encode %[[A]], id = 0, seed %{{[a-z0-9_]+}}
// CHECK-NEXT: %[[C:.*]] = math.sin %[[B]] : tensor<32x32xf32>
// CHECK-NEXT: %[[EB:.*]] = act.encode %[[B]], id = 1, seed %{{[a-z0-9_]+}}
// CHECK-NEXT: tensor.extract %[[C]]
// CHECK-NEXT: %[[EC:.*]] = act.encode %[[C]], id = 2, seed %{{[a-z0-9_]+}}
// CHECK:      %[[DC:.*]] = act.decode %[[EC]]
// CHECK-NEXT: %[[G1:.*]] = math.cos %[[DC]]
// CHECK:      %[[DA:.*]] = act.decode %[[EA]]
// CHECK-NEXT: %[[DB:.*]] = act.decode %[[EB]]
// CHECK-NEXT: scf.for
// CHECK:        arith.addf %[[DA]], %[[DB]]
// ALL-LABEL: func.func @order
// ALL-COUNT-3: act.encode
// ONLY1-LABEL: func.func @order
// ONLY1-NOT: = act.encode {{.*}} id = 0, seed %{{[a-z0-9_]+}}
// ONLY1: act.encode %{{.*}}, id = 1, seed %{{[a-z0-9_]+}}
// ONLY1-NOT: = act.encode
// ONLY1: return
// BF16-LABEL: func.func @order
// BF16: act.encode %{{.*}}, id = 0 : tensor<32x32xf32> -> !act.encoded<tensor<32x32xf32>, #act.float<format = bf16>>
// BF16-NOT: id = 1
// BF16: act.encode %{{.*}}, id = 2 : tensor<32x32xf32> -> !act.encoded<tensor<32x32xf32>, #act.float<format = bf16>>
func.func @order(%x: tensor<32x32xf32>) -> (f32 {act.loss}, tensor<32x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = math.exp %x : tensor<32x32xf32>
  %b = math.tanh %a : tensor<32x32xf32>
  %c = math.sin %b : tensor<32x32xf32>
  %loss = tensor.extract %c[%c0, %c0] : tensor<32x32xf32>
  %g1 = math.cos %c : tensor<32x32xf32>
  %g = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %g1) -> tensor<32x32xf32> {
    %s = arith.addf %a, %b : tensor<32x32xf32>
    %t = arith.addf %acc, %s : tensor<32x32xf32>
    scf.yield %t : tensor<32x32xf32>
  }
  return %loss, %g : f32, tensor<32x32xf32>
}

// -----

// Values the graph decides to keep: a value also returned by the step stays
// live at full precision, and a value whose backward use comes before its
// last forward use gains nothing from an encoding.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: = act.encode
// CHECK: return
// ALL-LABEL: func.func @kept
// ALL-NOT: = act.encode
// ALL: return
func.func @kept(%x: tensor<32x32xf32>) -> (f32 {act.loss}, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) {
  %c0 = arith.constant 0 : index
  %a = math.exp %x : tensor<32x32xf32>
  %b = math.tanh %x : tensor<32x32xf32>
  // Backward use of %b before its last forward use.
  %gb = math.cos %b : tensor<32x32xf32>
  %ab = arith.addf %a, %b : tensor<32x32xf32>
  %loss = tensor.extract %ab[%c0, %c0] : tensor<32x32xf32>
  %ga = math.sin %a : tensor<32x32xf32>
  return %loss, %ga, %gb, %a : f32, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>
}

// -----

// Small tensors (below min-bytes, default 1024) and, by default, the loss
// head: everything computed after the last contraction (the logits' bias,
// softmax and loss computation), which GACT found the most sensitive. The
// contraction's own result is not in the head.
// CHECK-LABEL: func.func @small_and_head
// CHECK: %[[L:.*]] = linalg.matmul
// CHECK: act.encode %[[L]], id = 1, seed %{{[a-z0-9_]+}} : tensor<4x256xf32>
// CHECK-NOT: = act.encode
// CHECK: return
// ALL-LABEL: func.func @small_and_head
// ALL: %[[S:.*]] = math.exp %{{.*}} : tensor<4x4xf32>
// ALL: %[[L:.*]] = linalg.matmul ins(%[[S]]
// ALL-NEXT: act.encode %[[S]], id = 0, seed %{{[a-z0-9_]+}} : tensor<4x4xf32>
// ALL-NEXT: %[[T:.*]] = math.tanh %[[L]]
// ALL-NEXT: act.encode %[[L]], id = 1, seed %{{[a-z0-9_]+}}
// ALL-NEXT: tensor.extract %[[T]]
// ALL-NEXT: act.encode %[[T]], id = 2, seed %{{[a-z0-9_]+}}
func.func @small_and_head(%x: tensor<4x4xf32>, %w: tensor<4x256xf32>) -> (f32 {act.loss}, tensor<4x4xf32>, tensor<4x256xf32>, tensor<4x256xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %s = math.exp %x : tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x256xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x256xf32>) -> tensor<4x256xf32>
  %l = linalg.matmul ins(%s, %w : tensor<4x4xf32>, tensor<4x256xf32>) outs(%acc : tensor<4x256xf32>) -> tensor<4x256xf32>
  %t = math.tanh %l : tensor<4x256xf32>
  %loss = tensor.extract %t[%c0, %c0] : tensor<4x256xf32>
  %gs = math.cos %s : tensor<4x4xf32>
  %gl = math.cos %l : tensor<4x256xf32>
  %gt = math.cos %t : tensor<4x256xf32>
  return %loss, %gs, %gl, %gt : f32, tensor<4x4xf32>, tensor<4x256xf32>, tensor<4x256xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// ReLU's backward reads the saved %h only through `h > 0`. Under a lossy
// encoding that test would flip for small positive values that round to
// zero; the backward reads an exact 1-bit mask instead, and since nothing
// else in the backward reads %h, the mask is all that is stored. The matmul
// input %y (read by the weight gradient as a value) is quantized.
// CHECK-LABEL: func.func @relu_sign
// CHECK:      %[[H:.*]] = linalg.matmul
// CHECK:      %[[M:.*]] = act.encode %[[H]], id = 0 : tensor<8x256xf32> -> !act.encoded<tensor<8x256xf32>, #act.mask<predicate = positive>>
// CHECK-NOT:  act.encode %[[H]]
// CHECK:      %[[MD:.*]] = act.decode %[[M]] : !act.encoded<tensor<8x256xf32>, #act.mask<predicate = positive>> -> tensor<8x256xi1>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[MD]], %{{.*}} : tensor<8x256xi1>, tensor<8x256xf32>)
// CHECK-NEXT: ^bb0(%[[P:.*]]: i1, %[[G:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.select %[[P]], %[[G]], %{{.*}} : f32
// bf16 is lossy for f32 values too: the same mask.
// BF16-LABEL: func.func @relu_sign
// BF16:       act.encode %{{.*}}, id = 0 : tensor<8x256xf32> -> !act.encoded<tensor<8x256xf32>, #act.mask<predicate = positive>>
func.func @relu_sign(%x: tensor<8x64xf32>, %w: tensor<64x256xf32>, %g: tensor<8x256xf32>) -> (f32 {act.loss}, tensor<8x256xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x256xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x256xf32>) -> tensor<8x256xf32>
  %h = linalg.matmul ins(%x, %w : tensor<8x64xf32>, tensor<64x256xf32>) outs(%acc : tensor<8x256xf32>) -> tensor<8x256xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x256xf32>) outs(%e : tensor<8x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x256xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%r : tensor<8x256xf32>) outs(%s1 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %init: f32) {
      %t = arith.addf %in, %init : f32
      linalg.yield %t : f32
    }
  %loss = tensor.extract %s[] : tensor<f32>
  %dh = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %g : tensor<8x256xf32>, tensor<8x256xf32>) outs(%e : tensor<8x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.cmpf ogt, %a, %zero : f32
    %v = arith.select %p, %b, %zero : f32
    linalg.yield %v : f32
  } -> tensor<8x256xf32>
  return %loss, %dh : f32, tensor<8x256xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Split form: the backward reads the saved %h only through `h > 0`, so the
// mask crosses in its place (same position, act.num_saved unchanged).
// CHECK-LABEL: func.func @relu_fwd
// CHECK:      %[[M:.*]] = act.encode %{{.*}}, id = 0 : tensor<8x256xf32> -> !act.encoded<tensor<8x256xf32>, #act.mask<predicate = positive>>
// CHECK-NOT:  act.encode
// CHECK:      return %{{.*}}, %[[M]] : tensor<8x256xf32>, !act.encoded<tensor<8x256xf32>, #act.mask<predicate = positive>>
// CHECK-LABEL: func.func @relu_bwd
// CHECK-SAME: (%[[S:.*]]: !act.encoded<tensor<8x256xf32>, #act.mask<predicate = positive>>, %[[G:.*]]: tensor<8x256xf32>)
// CHECK:      %[[MD:.*]] = act.decode %[[S]] {{.*}} -> tensor<8x256xi1>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[MD]], %[[G]] : tensor<8x256xi1>, tensor<8x256xf32>)
func.func @relu_fwd(%x: tensor<8x64xf32>, %w: tensor<64x256xf32>) -> (tensor<8x256xf32>, tensor<8x256xf32>)
    attributes {act.backward = @relu_bwd, act.num_saved = 1 : i64} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x256xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x256xf32>) -> tensor<8x256xf32>
  %h = linalg.matmul ins(%x, %w : tensor<8x64xf32>, tensor<64x256xf32>) outs(%acc : tensor<8x256xf32>) -> tensor<8x256xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x256xf32>) outs(%e : tensor<8x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x256xf32>
  return %r, %h : tensor<8x256xf32>, tensor<8x256xf32>
}
func.func @relu_bwd(%h: tensor<8x256xf32>, %g: tensor<8x256xf32>) -> tensor<8x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x256xf32>
  %dh = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %g : tensor<8x256xf32>, tensor<8x256xf32>) outs(%e : tensor<8x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.cmpf ogt, %a, %zero : f32
    %v = arith.select %p, %b, %zero : f32
    linalg.yield %v : f32
  } -> tensor<8x256xf32>
  return %dh : tensor<8x256xf32>
}
