// RUN: act-opt %s -pass-pipeline='builtin.module(func.func(act-vectorize{width=16}))' | FileCheck %s
// RUN: act-opt %s -pass-pipeline='builtin.module(func.func(act-vectorize))' | FileCheck %s --check-prefix=OFF

// act-vectorize{width=16}: static generics become loops over 1 x ... x 16
// tiles of vector code along their innermost loop.

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
#perchan = affine_map<(d0, d1, d2, d3) -> (d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// Elementwise with a per-channel broadcast (batch norm's normalization).
// CHECK-LABEL: func.func @normalize
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for {{.*}} step %c16
// CHECK: vector.transfer_read {{.*}} vector<1x1x1x16xf32>
// CHECK: arith.subf {{.*}} vector<1x1x1x16xf32>
// CHECK: vector.transfer_write
// CHECK-NOT: linalg.generic
// OFF-LABEL: func.func @normalize
// OFF: linalg.generic
func.func @normalize(%x: tensor<4x8x6x32xf32>, %m: tensor<8x1x1xf32>) -> tensor<4x8x6x32xf32> {
  %e = tensor.empty() : tensor<4x8x6x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #chan, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %m : tensor<4x8x6x32xf32>, tensor<8x1x1xf32>) outs(%e : tensor<4x8x6x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x8x6x32xf32>
  return %r : tensor<4x8x6x32xf32>
}

// A sum over N, H, W per channel: each tile reduces in any order
// (reassoc), which LLVM turns into a shuffle tree.
// CHECK-LABEL: func.func @channel_sum
// CHECK: scf.for {{.*}} step %c8
// CHECK: vector.reduction <add>, {{.*}} fastmath<reassoc> : vector<8xf32> into f32
func.func @channel_sum(%x: tensor<4x8x6x24xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [#id, #perchan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : tensor<4x8x6x24xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// Not contiguous along the innermost loop (a transposed read), or no tile
// of at least 4 dividing it: left for the loops.
// CHECK-LABEL: func.func @left_alone
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: vector.
func.func @left_alone(%x: tensor<32x32xf32>, %y: tensor<6x7xf32>) -> (tensor<32x32xf32>, tensor<6x7xf32>) {
  %e = tensor.empty() : tensor<32x32xf32>
  %r = linalg.generic {indexing_maps = [#t, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<32x32xf32>
  %e2 = tensor.empty() : tensor<6x7xf32>
  %s = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<6x7xf32>) outs(%e2 : tensor<6x7xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<6x7xf32>
  return %r, %s : tensor<32x32xf32>, tensor<6x7xf32>
}

// A generic reading an i1 tensor (ReLU's backward on a decoded mask) is
// vectorized too: act-byte-i1-vectors later loads the vector of i1 as bytes.
// CHECK-LABEL: func.func @select_on_mask
// CHECK: scf.for {{.*}} step %c16
// CHECK: vector.transfer_read {{.*}} : tensor<1x16xi1>, vector<1x16xi1>
// CHECK: arith.select {{.*}} : vector<1x16xi1>, vector<1x16xf32>
// CHECK-NOT: linalg.generic
#sel = affine_map<(d0, d1) -> (d0, d1)>
func.func @select_on_mask(%m: tensor<8x64xi1>, %g: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %e = tensor.empty() : tensor<8x64xf32>
  %r = linalg.generic {indexing_maps = [#sel, #sel, #sel], iterator_types = ["parallel", "parallel"]}
      ins(%m, %g : tensor<8x64xi1>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: i1, %b: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %s = arith.select %a, %b, %z : f32
    linalg.yield %s : f32
  } -> tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// An extended multiply lowers to LLVM on 1-D vectors only: a generic of
// more than one loop using one (the exporter's dropout Philox) stays
// scalar rather than leave an n-D mului_extended that would not convert.
// CHECK-LABEL: func.func @extended_multiply_2d
// CHECK: linalg.generic
// CHECK: arith.mului_extended {{.*}} : i32
#em = affine_map<(d0, d1) -> (d0, d1)>
func.func @extended_multiply_2d(%x: tensor<4x32xi32>) -> tensor<4x32xi32> {
  %e = tensor.empty() : tensor<4x32xi32>
  %r = linalg.generic {indexing_maps = [#em, #em], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x32xi32>) outs(%e : tensor<4x32xi32>) {
  ^bb0(%a: i32, %o: i32):
    %c = arith.constant 12345 : i32
    %lo, %hi = arith.mului_extended %a, %c : i32
    linalg.yield %hi : i32
  } -> tensor<4x32xi32>
  return %r : tensor<4x32xi32>
}

// Kernels marked act.vectorize (an encode's group statistics): min/max
// reductions lose their NaN semantics (nnan); a sum is reassociated (a tree
// of vector adds) only when every float addition of the kernel allows it,
// else it keeps its order (LLVM reduces strictly, element by element).
// CHECK-LABEL: func.func @kernel_sums
// CHECK: vector.reduction <minnumf>, {{.*}} fastmath<nnan> : vector<256xf32> into f32
// CHECK: vector.reduction <add>, {{.*}} fastmath<reassoc> : vector<256xf32> into f32
// CHECK: vector.reduction <add>, %{{[^ ]*}}, %{{[^ ]*}} : vector<256xf32> into f32
// OFF-LABEL: func.func @kernel_sums
// OFF: vector.reduction <add>, {{.*}} fastmath<reassoc>
// OFF: vector.reduction <add>, %{{[^ ]*}}, %{{[^ ]*}} : vector<256xf32> into f32
#row = affine_map<(d0, d1) -> (d0)>
func.func @kernel_sums(%x: tensor<1x256xf32>, %a: tensor<1xf32>, %b: tensor<1xf32>, %c: tensor<1xf32>) -> (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) {
  %r:2 = linalg.generic {indexing_maps = [#id2, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<1x256xf32>) outs(%a, %b : tensor<1xf32>, tensor<1xf32>) attrs = {act.vectorize} {
  ^bb0(%in: f32, %mn: f32, %s: f32):
    %m = arith.minnumf %mn, %in fastmath<nnan> : f32
    %t = arith.addf %s, %in fastmath<reassoc> : f32
    linalg.yield %m, %t : f32, f32
  } -> (tensor<1xf32>, tensor<1xf32>)
  %o = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<1x256xf32>) outs(%c : tensor<1xf32>) attrs = {act.vectorize} {
  ^bb0(%in: f32, %s: f32):
    %t = arith.addf %s, %in : f32
    linalg.yield %t : f32
  } -> tensor<1xf32>
  return %r#0, %r#1, %o : tensor<1xf32>, tensor<1xf32>, tensor<1xf32>
}

// Reads at computed positions (a per-element decode's payload word
// (i / 128) * 16 + i % 16 and group row i / 16 of flat element i) are
// affine in the lane within a tile of 16: a contiguous read and a
// broadcast element, not gathers. The tile's offset along the row is a
// loop counter stepping by 16 (so i is a multiple of 16 in lane 0).
// CHECK-LABEL: func.func @lane_affine_reads
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %c16
// CHECK-NOT: vector.gather
// CHECK: vector.transfer_read %{{.*}} {in_bounds = [true]} : tensor<64xi32>, vector<16xi32>
// CHECK-NOT: vector.gather
// CHECK: %[[ROW:.*]] = tensor.extract %{{.*}} : tensor<4xf32>
// CHECK: vector.broadcast %[[ROW]]
// CHECK-NOT: vector.gather
// CHECK: return
// A position not affine in the lane (i * i) stays a gather.
// CHECK-LABEL: func.func @lane_quadratic_reads
// CHECK: vector.gather
func.func @lane_affine_reads(%w: tensor<64xi32>, %m: tensor<4xf32>) -> tensor<2x32xf32> {
  %e = tensor.empty() : tensor<2x32xf32>
  %r = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<2x32xf32>) {
  ^bb0(%o: f32):
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %row = arith.muli %i0, %c32 : index
    %i = arith.addi %row, %i1 : index
    %t = arith.divui %i, %c128 : index
    %t16 = arith.muli %t, %c16 : index
    %l = arith.remui %i, %c16 : index
    %wi = arith.addi %t16, %l : index
    %word = tensor.extract %w[%wi] : tensor<64xi32>
    %g = arith.divui %i, %c16 : index
    %mv = tensor.extract %m[%g] : tensor<4xf32>
    %wf = arith.sitofp %word : i32 to f32
    %v = arith.addf %wf, %mv : f32
    linalg.yield %v : f32
  } -> tensor<2x32xf32>
  return %r : tensor<2x32xf32>
}
func.func @lane_quadratic_reads(%m: tensor<4096xf32>) -> tensor<2x32xf32> {
  %e = tensor.empty() : tensor<2x32xf32>
  %r = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<2x32xf32>) {
  ^bb0(%o: f32):
    %i1 = linalg.index 1 : index
    %sq = arith.muli %i1, %i1 : index
    %v = tensor.extract %m[%sq] : tensor<4096xf32>
    linalg.yield %v : f32
  } -> tensor<2x32xf32>
  return %r : tensor<2x32xf32>
}

// A step for every batch size: the batch loop is dynamic, the innermost
// static. Tiled 1 x 16 (the dynamic loop by 1 up to its tensor.dim), each
// tile vectorized: a bias add, and a bias gradient (a sum over the batch,
// whose 1 x 16 tiles add to the accumulator lane by lane, not as 16
// one-element reductions).
// CHECK-LABEL: func.func @dynamic_batch
// CHECK: scf.for {{.*}} to %dim{{.*}} step %c1
// CHECK: scf.for {{.*}} to %c32 step %c16
// CHECK: arith.addf {{.*}} : vector<1x16xf32>
// CHECK: scf.for {{.*}} to %dim{{.*}} step %c1
// CHECK: scf.for {{.*}} step %c16
// CHECK: vector.shape_cast {{.*}} : vector<1x16xf32> to vector<16xf32>
// CHECK-NEXT: arith.addf {{.*}} : vector<16xf32>
// CHECK-NOT: vector.reduction
// CHECK-NOT: linalg.generic
// CHECK: return
// OFF-LABEL: func.func @dynamic_batch
// OFF: linalg.generic
func.func @dynamic_batch(%x: tensor<?x32xf32>, %b: tensor<32xf32>, %init: tensor<32xf32>) -> (tensor<?x32xf32>, tensor<32xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x32xf32>
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %r = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d1)>, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<?x32xf32>, tensor<32xf32>) outs(%e : tensor<?x32xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  %g = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%r : tensor<?x32xf32>) outs(%init : tensor<32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  return %r, %g : tensor<?x32xf32>, tensor<32xf32>
}
