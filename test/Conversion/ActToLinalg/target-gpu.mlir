// RUN: act-opt %s -convert-act-to-linalg=target=gpu -split-input-file -verify-each | FileCheck %s
// RUN: not act-opt %s -convert-act-to-linalg="target=gpu gpu-block-size=100" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADBLOCK
// RUN: act-opt %s -convert-act-to-linalg=target=gpu -split-input-file | awk '/func.func @quant\(/,/func.func @quant_decode/' | grep -c arith.mului_extended | FileCheck %s --check-prefix=PHILOX

// target=gpu: 4-bit quantization of 1000 elements in groups of 256. The
// three whole groups (6 tiles) are one gpu.launch over buffers of the
// tensors: the input read in place (to_buffer read_only), payload and
// metadata in new buffers that become the results' tensors (to_tensor
// restrict writable). 24 threads (four per tile) in one block of 256. A
// thread loads its eight lanes' elements as 16-byte vectors (when the
// buffers are aligned), combines min and max over the group's eight threads
// with butterfly shuffles (offsets 1, 2, 4), lets the group's first thread
// store the (min, scale) row, and stores its four words as one vector. The
// 232 elements left go through the generic lowering into the same tensors.
// CHECK-LABEL: func.func @quant
// CHECK-SAME: (%[[X:.*]]: tensor<1000xf32>, %[[SEED:.*]]: i64) -> (tensor<125xi32>, tensor<4x2xf32>)
// CHECK:      %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<1000xf32> to memref<1000xf32, strided<[1], offset: ?>>
// CHECK:      %[[WORDS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<125xi32>
// CHECK:      %[[META:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x2xf32>
// CHECK:      gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE:.*]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[BLOCK:.*]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]])
// CHECK:        memref.extract_aligned_pointer_as_index %[[IN]]
// CHECK:        memref.extract_aligned_pointer_as_index %[[WORDS]]
// CHECK:        scf.if
// CHECK-COUNT-8:  vector.load %[[IN]][%{{.*}}] {alignment = 16 : i64} : memref<1000xf32, strided<[1], offset: ?>>, vector<4xf32>
// CHECK:          arith.minnumf
// CHECK:          arith.maxnumf
// CHECK:          gpu.shuffle xor %{{.*}}, %[[S1:.*]], %[[W:.*]] : f32
// CHECK:          gpu.shuffle xor %{{.*}}, %[[S2:.*]], %[[W]] : f32
// CHECK:          gpu.shuffle xor %{{.*}}, %[[S4:.*]], %[[W]] : f32
// CHECK:          gpu.shuffle xor %{{.*}}, %[[S1]], %[[W]] : f32
// CHECK:          gpu.shuffle xor %{{.*}}, %[[S2]], %[[W]] : f32
// CHECK:          gpu.shuffle xor %{{.*}}, %[[S4]], %[[W]] : f32
// CHECK:          scf.if
// CHECK-NEXT:       memref.store %{{.*}}, %[[META]]
// CHECK-NEXT:       memref.store %{{.*}}, %[[META]]
// CHECK:          arith.mului_extended
// CHECK:          arith.fptosi
// CHECK:          scf.if
// CHECK:            vector.store %{{.*}}, %[[WORDS]][%{{.*}}] {alignment = 16 : i64} : memref<125xi32>, vector<4xi32>
// CHECK:        } else {
// CHECK-NOT:      vector.load
// CHECK:          memref.load %[[IN]]
// CHECK:        gpu.terminator
// CHECK:      %[[PAYLOAD:.*]] = bufferization.to_tensor %[[WORDS]] restrict writable : memref<125xi32> to tensor<125xi32>
// CHECK:      %[[ROWS:.*]] = bufferization.to_tensor %[[META]] restrict writable : memref<4x2xf32> to tensor<4x2xf32>
// CHECK:      tensor.extract_slice %[[X]][768] [232] [1]
// CHECK:      %[[RESTWORDS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<29xi32>)
// CHECK:      %[[P:.*]] = tensor.insert_slice %[[RESTWORDS]] into %[[PAYLOAD]][96] [29] [1]
// CHECK:      %[[M:.*]] = tensor.insert_slice %{{.*}} into %[[ROWS]][3, 0] [1, 2] [1, 1]
// CHECK:      return %[[P]], %[[M]]
// Philox's multiply-highs in @quant (the low halves are plain 32-bit
// multiplies): 8 random bits per element, one block per 16 lanes; at 4
// bits two consecutive tiles share a word's block (bytes 0-7 and 8-15),
// each thread computing its tile's and selecting its half at run time: 19
// per block after folding (ten rounds of two, less the first round's on
// the constant id word), one block per word, four words per thread, in
// both bodies of the kernel (aligned and not: 152), plus one block per
// word of the generic remainder. (Before the tiles shared blocks: 17, the
// unused bytes 8-15 folded away; the CPU computes each shared block once.)
// PHILOX: {{^}}171{{$}}
// BADBLOCK: convert-act-to-linalg option 'gpu-block-size':0:0: error: convert-act-to-linalg: gpu-block-size must be a positive multiple of 32, got 100
func.func @quant(%x: tensor<1000xf32>, %seed: i64) -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>> {
  %e = act.encode %x, id = 3, seed %seed : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>
  return %e : !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>
}

// -----

// Decoding needs no statistics: all 7 whole tiles (896 elements) in one
// launch, a thread reading its four words as one vector and its group's
// row, writing each lane's four floats as one vector; the last 104 elements
// by the generic lowering.
// CHECK-LABEL: func.func @quant_decode
// CHECK:      %[[W:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<125xi32> to memref<125xi32, strided<[1], offset: ?>>
// CHECK:      %[[M:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<4x2xf32> to memref<4x2xf32, strided<[?, 1], offset: ?>>
// CHECK:      %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1000xf32>
// CHECK:      gpu.launch
// CHECK:          vector.load %[[W]][%{{.*}}] {alignment = 16 : i64} : memref<125xi32, strided<[1], offset: ?>>, vector<4xi32>
// CHECK:          memref.load %[[M]]
// CHECK:          memref.load %[[M]]
// CHECK-COUNT-8:    vector.store %{{.*}}, %[[OUT]][%{{.*}}] {alignment = 16 : i64} : memref<1000xf32>, vector<4xf32>
// CHECK:      bufferization.to_tensor %[[OUT]] restrict writable
// CHECK:      linalg.generic {{.*}} outs(%{{.*}} : tensor<104xf32>)
func.func @quant_decode(%e: !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>>) -> tensor<1000xf32> {
  %d = act.decode %e : !act.encoded<tensor<1000xf32>, #act.quant<bits = 4>> -> tensor<1000xf32>
  return %d : tensor<1000xf32>
}

// -----

// bf16 codes: 1000 elements, a thread per 8 (16 bytes of codes): 125
// threads, no rest. Groups of 48 elements for 2-bit codes do not fit the
// whole-tile kernel: the generic lowering only.
// CHECK-LABEL: func.func @bytes
// CHECK:      gpu.launch
// CHECK:        vector.load {{.*}} : memref<1000xf32, strided<[1], offset: ?>>, vector<8xf32>
// CHECK:        vector.store {{.*}} : memref<1000xi16>, vector<8xi16>
// CHECK:      %[[CODES:.*]] = bufferization.to_tensor
// CHECK-NOT:  gpu.launch
// CHECK:      return %[[CODES]]
func.func @bytes(%x: tensor<1000xf32>, %seed: i64) -> (!act.encoded<tensor<1000xf32>, #act.float<format = bf16>>, !act.encoded<tensor<1000xf32>, #act.quant<bits = 2, group = 48>>) {
  %e = act.encode %x, id = 4 : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.float<format = bf16>>
  %q = act.encode %x, id = 5, seed %seed : tensor<1000xf32> -> !act.encoded<tensor<1000xf32>, #act.quant<bits = 2, group = 48>>
  return %e, %q : !act.encoded<tensor<1000xf32>, #act.float<format = bf16>>, !act.encoded<tensor<1000xf32>, #act.quant<bits = 2, group = 48>>
}

// -----

// Groups of 8192 elements (64 tiles at 4 bits) are more than a warp's
// threads hold: the generic lowering, with each group's min/max in 1024
// slices of 8 (one parallel iteration per group and part, consecutive parts
// consecutive elements), then over the 8 parts per group, then finished.
// CHECK-LABEL: func.func @large_groups
// CHECK-NOT:  gpu.launch
// CHECK:      tensor.expand_shape {{.*}} : tensor<2x8192xf32> into tensor<2x1024x8xf32>
// CHECK:      %[[PARTS:.*]]:2 = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}} : tensor<2x1024x8xf32>) outs(%{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<2x8xf32>)
// CHECK:        arith.minnumf
// CHECK:        arith.maxnumf
// CHECK:      %[[TOTAL:.*]]:2 = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[PARTS]]#0, %[[PARTS]]#1 : tensor<2x8xf32>, tensor<2x8xf32>) outs(%{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xf32>)
// CHECK:      linalg.generic {{.*}} ins(%[[TOTAL]]#0, %[[TOTAL]]#1 : tensor<2xf32>, tensor<2xf32>) outs({{.*}} : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
func.func @large_groups(%x: tensor<16384xf32>, %seed: i64) -> !act.encoded<tensor<16384xf32>, #act.quant<bits = 4, group = 8192>> {
  %e = act.encode %x, id = 6, seed %seed : tensor<16384xf32> -> !act.encoded<tensor<16384xf32>, #act.quant<bits = 4, group = 8192>>
  return %e : !act.encoded<tensor<16384xf32>, #act.quant<bits = 4, group = 8192>>
}
