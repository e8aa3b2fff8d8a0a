// RUN: act-opt %s -convert-act-to-linalg -split-input-file -verify-each | FileCheck %s

// 4-bit quantization of 1000 elements, group 256: padded to 1024 (a multiple
// of the group and of the 8 codes per word), per-group min/max in one
// reduction, (min, scale) rows, then one parallel generic over (group, word
// in group) reading each group's row once and packing the word's 8 codes in
// registers (the lanes unrolled); the storage is 125 words and 4 metadata
// rows.
// CHECK-LABEL: func.func @quant
// CHECK-SAME: (%[[X:.*]]: tensor<1000xf32>, %[[SEED:.*]]: i64) -> (tensor<125xi32>, tensor<4x2xf32>)
// CHECK:      %[[PAD:.*]] = tensor.pad %[[X]] low[0] high[24]
// CHECK:      %[[GROUPS:.*]] = tensor.expand_shape %[[PAD]] {{\[\[}}0, 1]] output_shape [4, 256] : tensor<1024xf32> into tensor<4x256xf32>
// CHECK:      %[[STATS:.*]]:2 = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[GROUPS]] : tensor<4x256xf32>) outs(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>)
// CHECK:        arith.minnumf
// CHECK:        arith.maxnumf
// CHECK:      %[[META:.*]] = linalg.generic {{.*}} ins(%[[STATS]]#0, %[[STATS]]#1 : tensor<4xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<4x2xf32>)
// CHECK:      %[[LANES:.*]] = tensor.expand_shape %[[PAD]] {{\[\[}}0, 1, 2]] output_shape [4, 32, 8] : tensor<1024xf32> into tensor<4x32x8xf32>
// CHECK:      %[[WORDS3:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel"]} ins(%[[META]], %[[META]] : tensor<4x2xf32>, tensor<4x2xf32>) outs(%{{.*}} : tensor<4x32xi32>)
// Stochastic rounding: Philox4x32-10, ten rounds of two 32x32->64 products,
// one block per four lanes (eight lanes: two blocks per word).
// CHECK:        tensor.extract %[[LANES]]
// CHECK-COUNT-20: arith.mului_extended
// CHECK-NOT:    arith.mului_extended
// CHECK-COUNT-4: tensor.extract %[[LANES]]
// CHECK-COUNT-20: arith.mului_extended
// CHECK-NOT:    arith.mului_extended
// CHECK-COUNT-3: tensor.extract %[[LANES]]
// CHECK:        math.floor
// CHECK:        arith.shli
// CHECK:        arith.ori
// CHECK:      %[[WORDS:.*]] = tensor.collapse_shape %[[WORDS3]] {{\[\[}}0, 1]] : tensor<4x32xi32> into tensor<128xi32>
// CHECK:      %[[PAYLOAD:.*]] = tensor.extract_slice %[[WORDS]][0] [125] [1] : tensor<128xi32> to tensor<125xi32>
// CHECK:      return %[[PAYLOAD]], %[[META]] : tensor<125xi32>, tensor<4x2xf32>
func.func @quant(%x: tensor<1000xf32>, %seed: i64) -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>> {
  %e = act.encode %x, id = 3, seed %seed : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>
  return %e : !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>
}

// -----

// Decoding a static shape: one parallel generic over the tensor's own
// dimensions reads word i / 8 and group i / 256 of flat index i and writes
// the result directly: no padding, no reshapes.
// CHECK-LABEL: func.func @quant_decode
// CHECK-SAME: (%[[P:.*]]: tensor<125xi32>, %[[M:.*]]: tensor<4x2xf32>) -> tensor<10x100xf32>
// CHECK-NOT:  tensor.pad
// CHECK:      %[[OUT:.*]] = linalg.generic {indexing_maps = [{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[P]], %[[M]], %[[M]] : tensor<125xi32>, tensor<4x2xf32>, tensor<4x2xf32>) outs(%{{.*}} : tensor<10x100xf32>)
// CHECK:        arith.remui
// CHECK:        arith.shrui
// CHECK:        arith.andi
// CHECK:        arith.sitofp
// CHECK-NOT:  tensor.collapse_shape
// CHECK:      return %[[OUT]]
func.func @quant_decode(%e: !act.encoded<tensor<10x100xf32>, #act.quant<bits = 4>>) -> tensor<10x100xf32> {
  %d = act.decode %e : !act.encoded<tensor<10x100xf32>, #act.quant<bits = 4>> -> tensor<10x100xf32>
  return %d : tensor<10x100xf32>
}

// -----

// Round to nearest draws no random numbers; whole groups need no padding.
// CHECK-LABEL: func.func @nearest
// CHECK-NOT: tensor.pad
// CHECK-NOT: arith.mului_extended
// CHECK: return {{.*}} : tensor<128xi32>, tensor<2x2xf32>
func.func @nearest(%x: tensor<2x256xf32>) -> !act.encoded<tensor<2x256xf32>, #act.quant<bits = 8, rounding = nearest>> {
  %e = act.encode %x, id = 0 : tensor<2x256xf32> -> !act.encoded<tensor<2x256xf32>, #act.quant<bits = 8, rounding = nearest>>
  return %e : !act.encoded<tensor<2x256xf32>, #act.quant<bits = 8, rounding = nearest>>
}

// -----

// Floats: f16 is an array of 16-bit codes, one element-wise generic
// (arith.truncf after clamping); fp10 one packing generic through the
// integer rounding of ActLowering (three per word).
// CHECK-LABEL: func.func @floats
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel"]} ins(%{{.*}} : tensor<100xf32>) outs(%{{.*}} : tensor<100xi16>)
// CHECK:   arith.cmpf ogt
// CHECK:   arith.truncf %{{.*}} : f32 to f16
// CHECK:   arith.trunci %{{.*}} : i32 to i16
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<34xi32>)
// CHECK:   math.roundeven
// CHECK: return {{.*}} : tensor<100xi16>, tensor<34xi32>
func.func @floats(%x: tensor<100xf32>) -> (!act.encoded<tensor<100xf32>, #act.float<format = f16>>, !act.encoded<tensor<100xf32>, #act.float<format = fp10>>) {
  %h = act.encode %x, id = 0 : tensor<100xf32> -> !act.encoded<tensor<100xf32>, #act.float<format = f16>>
  %t = act.encode %x, id = 1 : tensor<100xf32> -> !act.encoded<tensor<100xf32>, #act.float<format = fp10>>
  return %h, %t : !act.encoded<tensor<100xf32>, #act.float<format = f16>>, !act.encoded<tensor<100xf32>, #act.float<format = fp10>>
}

// -----

// A mask decodes to i1.
// CHECK-LABEL: func.func @mask
// CHECK: arith.cmpf ogt
// CHECK: arith.extui %{{.*}} : i1 to i32
// CHECK: arith.trunci %{{.*}} : i32 to i1
// CHECK: return %{{.*}} : tensor<64xi1>
func.func @mask(%x: tensor<64xf32>) -> tensor<64xi1> {
  %e = act.encode %x, id = 0 : tensor<64xf32> -> !act.encoded<tensor<64xf32>, #act.mask<predicate = positive>>
  %d = act.decode %e : !act.encoded<tensor<64xf32>, #act.mask<predicate = positive>> -> tensor<64xi1>
  return %d : tensor<64xi1>
}

// -----

// Dynamic dimensions travel with the storage as a tensor<Dxindex>.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: -> (tensor<?xi32>, tensor<?x2xf32>, tensor<1xindex>)
// CHECK: %[[D:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x16xf32>
// CHECK: tensor.from_elements %[[D]] : tensor<1xindex>
func.func @dynamic(%x: tensor<?x16xf32>) -> !act.encoded<tensor<?x16xf32>, #act.quant<bits = 2>> {
  %e = act.encode %x, id = 0 : tensor<?x16xf32> -> !act.encoded<tensor<?x16xf32>, #act.quant<bits = 2>>
  return %e : !act.encoded<tensor<?x16xf32>, #act.quant<bits = 2>>
}

// CHECK-LABEL: func.func @dynamic_decode
// CHECK-SAME: (%{{.*}}: tensor<?xi32>, %{{.*}}: tensor<?x2xf32>, %[[DIMS:.*]]: tensor<1xindex>) -> tensor<?x16xf32>
// CHECK: tensor.extract %[[DIMS]]
func.func @dynamic_decode(%e: !act.encoded<tensor<?x16xf32>, #act.quant<bits = 2>>) -> tensor<?x16xf32> {
  %d = act.decode %e : !act.encoded<tensor<?x16xf32>, #act.quant<bits = 2>> -> tensor<?x16xf32>
  return %d : tensor<?x16xf32>
}

// -----

// Calls carrying encoded values are converted too.
// CHECK-LABEL: func.func @caller
// CHECK: %[[R:.*]]:2 = call @callee(%{{.*}}, %{{.*}}) : (tensor<8xi32>, tensor<1x2xf32>) -> (tensor<8xi32>, tensor<1x2xf32>)
func.func private @callee(%e: !act.encoded<tensor<64xf32>, #act.quant<bits = 4>>) -> !act.encoded<tensor<64xf32>, #act.quant<bits = 4>>
func.func @caller(%x: tensor<64xf32>) -> tensor<64xf32> {
  %e = act.encode %x, id = 0 : tensor<64xf32> -> !act.encoded<tensor<64xf32>, #act.quant<bits = 4>>
  %f = call @callee(%e) : (!act.encoded<tensor<64xf32>, #act.quant<bits = 4>>) -> !act.encoded<tensor<64xf32>, #act.quant<bits = 4>>
  %d = act.decode %f : !act.encoded<tensor<64xf32>, #act.quant<bits = 4>> -> tensor<64xf32>
  return %d : tensor<64xf32>
}
