// RUN: act-opt %s -convert-act-to-linalg -split-input-file -verify-each | FileCheck %s

// 4-bit quantization of 1000 elements, group 256, tiles of 128 elements
// (16 words x 8 lanes; docs/Encodings.md "Packed layout"). The three whole
// groups are encoded by one scf.forall, each chunk reading its 256 elements
// once: a min/max reduction, the (min, scale) row written in place into the
// metadata, then one generic over 16 words for the chunk's two tiles (which
// share their Philox blocks at 4 bits), whose 16 inputs are the tiles'
// lanes (16 consecutive elements each) and whose two outputs are their
// words, all marked act.vectorize; that generic twice, under an scf.if on
// whether the chunk is plain (clamp-free codes) or not.
// The 232 elements left (a partial group, a narrower last tile) are padded
// for their statistics and packed word by word; both land in the storage of
// 125 words and 4 metadata rows.
// CHECK-LABEL: func.func @quant
// CHECK-SAME: (%[[X:.*]]: tensor<1000xf32>, %[[SEED:.*]]: i64) -> (tensor<125xi32>, tensor<4x2xf32>)
// CHECK:      %[[CHUNKS:.*]]:2 = scf.forall (%[[C:.*]]) in (3) shared_outs(%[[WOUT:.*]] = %{{.*}}, %[[MOUT:.*]] = %{{.*}}) -> (tensor<125xi32>, tensor<4x2xf32>)
// CHECK:        %[[CHUNK:.*]] = tensor.extract_slice %[[X]][%{{.*}}] [256] [1] : tensor<1000xf32> to tensor<256xf32>
// CHECK:        %[[ROW:.*]] = tensor.extract_slice %[[MOUT]][%[[C]], 0] [1, 2] [1, 1]
// The statistics' fast form: plain min, max and a sum (its probe)...
// CHECK:        %[[FAST:.*]]:3 = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[ROWS:.*]] : tensor<1x256xf32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) attrs = {act.vectorize}
// CHECK-NEXT:     ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:       arith.minnumf %{{.*}}, %[[IN]] fastmath<nnan>
// CHECK-NEXT:       arith.maxnumf %{{.*}}, %[[IN]] fastmath<nnan>
// CHECK-NEXT:       arith.addf %{{.*}}, %[[IN]] fastmath<reassoc>
// CHECK-NEXT:       linalg.yield
// ... and the finite form, over finite elements, only when the sum is not
// finite, into the fast form's results.
// CHECK:        %[[PROBE:.*]] = tensor.extract %[[FAST]]#2
// CHECK:        %[[ABS:.*]] = math.absf %[[PROBE]]
// CHECK:        %[[NONFINITE:.*]] = arith.cmpf uge, %[[ABS]]
// CHECK:        %[[STATS:.*]]:2 = scf.if %[[NONFINITE]] -> (tensor<1xf32>, tensor<1xf32>) {
// CHECK:          %[[LO:.*]] = linalg.fill {{.*}} outs(%[[FAST]]#0 : tensor<1xf32>)
// CHECK:          %[[HI:.*]] = linalg.fill {{.*}} outs(%[[FAST]]#1 : tensor<1xf32>)
// CHECK:          linalg.generic {{.*}} ins(%[[ROWS]] : tensor<1x256xf32>) outs(%[[LO]], %[[HI]] : tensor<1xf32>, tensor<1xf32>) attrs = {act.vectorize}
// CHECK:            math.absf
// CHECK:            arith.cmpf one
// CHECK:            arith.minnumf {{.*}} fastmath<nnan>
// CHECK:        } else {
// CHECK-NEXT:     scf.yield %[[FAST]]#0, %[[FAST]]#1
// Plain statistics: the probe, the group's range and its inverse step
// finite (then so is every code's v below).
// CHECK:        %[[PLAIN:.*]] = arith.cmpf olt
// CHECK:        %[[META:.*]] = linalg.generic {{.*}} ins(%[[STATS]]#0, %[[STATS]]#1 : tensor<1xf32>, tensor<1xf32>) outs(%[[ROW]] : tensor<1x2xf32>) attrs = {act.vectorize}
// CHECK:        %[[WORDS:.*]] = tensor.extract_slice %[[WOUT]][%{{.*}}] [32] [1] : tensor<125xi32> to tensor<32xi32>
// CHECK:        %[[CODES:.*]] = scf.if %[[PLAIN]] -> (tensor<32xi32>) {
// CHECK:          %[[LANE0:.*]] = tensor.extract_slice %[[CHUNK]][0] [16] [1]
// CHECK:          %[[LANE15:.*]] = tensor.extract_slice %[[CHUNK]][240] [16] [1]
// CHECK:          %[[TILES:.*]]:2 = linalg.generic {indexing_maps = [{{.*}}], iterator_types = ["parallel"]} ins(%[[LANE0]], {{.*}}, %[[LANE15]] : tensor<16xf32>, {{.*}}) outs(%{{.*}}, %{{.*}} : tensor<16xi32>, tensor<16xi32>) attrs = {act.vectorize}
// Stochastic rounding: Philox4x32-10, ten rounds of two 32x32->64 products,
// one block per sixteen lanes (8 random bits per element): one block per
// word serves both tiles' eight lanes.
// CHECK-COUNT-20:   arith.mului_extended
// CHECK-NOT:        arith.mului_extended
// Each code: v = fma(x - min, inverse step, 1 + u), 1 + u from the random
// byte's bits; no clamps in a plain chunk. The codes come plus one and are
// added into the word; the eight ones (0x11111111) go once per word.
// CHECK:            %[[ONEPLUSU:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT:       %[[DIFF:.*]] = arith.subf
// CHECK-NEXT:       %[[V:.*]] = math.fma %[[DIFF]], %{{.*}}, %[[ONEPLUSU]] : f32
// CHECK-NEXT:       arith.fptosi %[[V]] : f32 to i32
// CHECK-NOT:        arith.minnumf
// CHECK:            arith.addi
// CHECK-NOT:        arith.minnumf
// CHECK:            arith.subi %{{.*}}, %c286331153_i32
// CHECK:          %[[W0:.*]] = tensor.insert_slice %[[TILES]]#0 into %[[WORDS]][0] [16] [1]
// CHECK:          %[[W1:.*]] = tensor.insert_slice %[[TILES]]#1 into %[[W0]][16] [16] [1]
// CHECK-NEXT:     scf.yield %[[W1]]
// Otherwise the same words with v clamped to [1, 16] (a NaN to 1).
// CHECK-NEXT:   } else {
// CHECK:          linalg.generic
// CHECK-COUNT-20:   arith.mului_extended
// CHECK:            math.fma
// CHECK-NEXT:       arith.constant 1.000000e+00
// CHECK-NEXT:       %[[ABOVE:.*]] = arith.cmpf ogt
// CHECK-NEXT:       %[[LOWER:.*]] = arith.select %[[ABOVE]]
// CHECK-NEXT:       arith.constant 1.600000e+01
// CHECK-NEXT:       %[[UPPER:.*]] = arith.minnumf %[[LOWER]]
// CHECK-NEXT:       arith.fptosi %[[UPPER]]
// CHECK:          scf.yield
// CHECK-NEXT:   }
// CHECK-NOT:    linalg.generic
// CHECK:        scf.forall.in_parallel
// CHECK-NEXT:     tensor.parallel_insert_slice %[[CODES]] into %[[WOUT]][%{{.*}}] [32] [1] : tensor<32xi32> into tensor<125xi32>
// CHECK-NEXT:     tensor.parallel_insert_slice %[[META]] into %[[MOUT]][%[[C]], 0] [1, 2] [1, 1] : tensor<1x2xf32> into tensor<4x2xf32>
// CHECK:      %[[REST:.*]] = tensor.extract_slice %[[X]][768] [232] [1]
// CHECK:      tensor.pad %[[REST]] low[0] high[24]
// CHECK:      %[[RESTMETA:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2xf32>)
// CHECK:      %[[RESTWORDS:.*]] = linalg.generic {indexing_maps = [{{.*}}], iterator_types = ["parallel"]} outs(%{{.*}} : tensor<29xi32>)
// CHECK:      %[[PAYLOAD:.*]] = tensor.insert_slice %[[RESTWORDS]] into %[[CHUNKS]]#0[96] [29] [1] : tensor<29xi32> into tensor<125xi32>
// CHECK:      %[[ROWS:.*]] = tensor.insert_slice %[[RESTMETA]] into %[[CHUNKS]]#1[3, 0] [1, 2] [1, 1]
// CHECK:      return %[[PAYLOAD]], %[[ROWS]] : tensor<125xi32>, tensor<4x2xf32>
func.func @quant(%x: tensor<1000xf32>, %seed: i64) -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>> {
  %e = act.encode %x, id = 3, seed %seed : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>
  return %e : !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>
}

// -----

// Decoding: whole chunks in an scf.forall, one generic per tile over
// (group, lane in group, word) reading the tile's 16 words and its group's
// (min, scale) columns, writing the tile in place; the rest element by
// element.
// CHECK-LABEL: func.func @quant_decode
// CHECK-SAME: (%[[P:.*]]: tensor<125xi32>, %[[M:.*]]: tensor<4x2xf32>) -> tensor<10x100xf32>
// CHECK:      %[[CHUNKS:.*]] = scf.forall (%[[C:.*]]) in (3) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1000xf32>)
// CHECK:        %[[ROW:.*]] = tensor.extract_slice %[[M]][%[[C]], 0] [1, 2] [1, 1]
// CHECK:        %[[MIN:.*]] = tensor.extract_slice %[[ROW]][0, 0] [1, 1] [1, 1] : tensor<1x2xf32> to tensor<1xf32>
// CHECK:        %[[SCALE:.*]] = tensor.extract_slice %[[ROW]][0, 1] [1, 1] [1, 1] : tensor<1x2xf32> to tensor<1xf32>
// CHECK:        linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.*}}, %[[MIN]], %[[SCALE]] : tensor<16xi32>, tensor<1xf32>, tensor<1xf32>) outs(%{{.*}} : tensor<1x8x16xf32>) attrs = {act.vectorize}
// CHECK:          arith.shrui
// CHECK:          arith.andi
// CHECK:          arith.sitofp
// CHECK:      %[[REST:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<232xf32>)
// CHECK:      %[[ALL:.*]] = tensor.insert_slice %[[REST]] into %[[CHUNKS]][768] [232] [1]
// CHECK:      %[[OUT:.*]] = tensor.expand_shape %[[ALL]] {{\[\[}}0, 1]] output_shape [10, 100]
// CHECK:      return %[[OUT]]
func.func @quant_decode(%e: !act.encoded<tensor<10x100xf32>, #act.quant<bits = 4>>) -> tensor<10x100xf32> {
  %d = act.decode %e : !act.encoded<tensor<10x100xf32>, #act.quant<bits = 4>> -> tensor<10x100xf32>
  return %d : tensor<10x100xf32>
}

// -----

// Without chunks (the GPU pipeline's lowering) everything goes through the
// per-word and per-element generics.
// RUN: act-opt %s -convert-act-to-linalg=target=generic -split-input-file | FileCheck %s --check-prefix=FLAT
// FLAT-LABEL: func.func @quant
// FLAT-NOT:   scf.forall
// FLAT:       linalg.generic {{.*}} outs(%{{.*}} : tensor<125xi32>)
// FLAT-LABEL: func.func @quant_decode
// FLAT-NOT:   scf.forall
// FLAT:       linalg.generic {{.*}} outs(%{{.*}} : tensor<1000xf32>)

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
// (arith.truncf after clamping); fp10 packs three per word, 100 elements
// being two whole tiles of 48 and 4 more (two words).
// CHECK-LABEL: func.func @floats
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel"]} ins(%{{.*}} : tensor<100xf32>) outs(%{{.*}} : tensor<100xi16>)
// CHECK:   arith.cmpf ogt
// CHECK:   arith.truncf %{{.*}} : f32 to f16
// CHECK:   arith.trunci %{{.*}} : i32 to i16
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<16xi32>) attrs = {act.vectorize}
// CHECK:     math.roundeven
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2xi32>)
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

// -----

// #act.division on the CPU, a span of 1,024 elements (four block rows of
// one map) at a time: the column sums of a block row are one parallel
// generic over its 8 rows (32 lanes), added in order from 0; each block's
// sum of its 8 column sums a reduction loop outside the blocks of the row
// (in order, not vectorized); then the averages, the residual and its
// codes. The reference sums a block the same way (docs/Encodings.md).
// CHECK-LABEL: func.func @division
// CHECK:      scf.forall (%{{.*}}) in (8) shared_outs
// CHECK:        %[[SPAN:.*]] = tensor.extract_slice %{{.*}}[%{{.*}}] [1024] [1] : tensor<8192xf32> to tensor<1024xf32>
// CHECK:        %[[ROWS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3], [4]] output_shape [1, 4, 1, 8, 32]
// CHECK-COUNT-8: tensor.extract_slice %[[ROWS]][0, 0, 0, {{[0-7]}}, 0] [1, 4, 1, 1, 32]
// CHECK:        %[[COLUMNS:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-NEXT:   ^bb0(%[[R0:.*]]: f32, %[[R1:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %[[S0:.*]] = arith.addf %[[ZERO]], %[[R0]] : f32
// CHECK-NEXT:     arith.addf %[[S0]], %[[R1]] : f32
// CHECK:        %[[BLOCKS:.*]] = tensor.expand_shape %[[COLUMNS]] {{\[}}[0], [1], [2], [3, 4]] output_shape [1, 4, 1, 4, 8]
// CHECK:        linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[BLOCKS]] : tensor<1x4x1x4x8xf32>)
// CHECK:        arith.divf %{{.*}}, %{{.*}} : f32
// CHECK:        arith.subf
func.func @division(%x: tensor<2x4x32x32xf32>, %seed: i64) -> !act.encoded<tensor<2x4x32x32xf32>, #act.division<block = 8, bits = 2>> {
  %e = act.encode %x, id = 3, seed %seed : tensor<2x4x32x32xf32> -> !act.encoded<tensor<2x4x32x32xf32>, #act.division<block = 8, bits = 2>>
  return %e : !act.encoded<tensor<2x4x32x32xf32>, #act.division<block = 8, bits = 2>>
}
