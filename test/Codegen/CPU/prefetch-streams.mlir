// RUN: act-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(act-prefetch-streams{min-ops-per-line=0}))' | FileCheck %s
// RUN: act-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(act-prefetch-streams{distance=8192 min-block-bytes=2048 min-ops-per-line=0}))' | FileCheck %s --check-prefix=OPTS
// RUN: act-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(act-prefetch-streams))' | FileCheck %s --check-prefix=DEFAULT
// RUN: not act-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(act-prefetch-streams{min-ops-per-line=-2}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: act-prefetch-streams option 'min-ops-per-line':0:0: error: act-prefetch-streams: min-ops-per-line must be 0 or positive, got -2

// An encode's chunk loop: iteration i reads elements [256 i, 256 i + 256)
// (1 KiB, 16 lines) and prefetches the 16 lines 4 KiB (1024 elements)
// ahead. The first line's index is clamped once, so that the last line's
// (15 lines, 240 elements on) is the buffer's last element at most.
// CHECK-LABEL: func.func @chunks
// CHECK: scf.for %[[I:.*]] =
// CHECK:   %[[O:.*]] = arith.muli %[[I]], %c256
// CHECK:   %[[P0:.*]] = arith.addi %[[O]], %c1024
// CHECK:   %[[N:.*]] = memref.dim %[[X:.*]], %c0
// CHECK:   %[[LIMIT:.*]] = arith.subi %[[N]], %c241
// CHECK:   %[[Q0:.*]] = arith.minsi %[[P0]], %[[LIMIT]]
// CHECK:   memref.prefetch %[[X]][%[[Q0]]], read, locality<3>, data : memref<65536xf32>
// CHECK:   %[[Q1:.*]] = arith.addi %[[Q0]], %c16
// CHECK:   memref.prefetch %[[X]][%[[Q1]]]
// CHECK-COUNT-14: memref.prefetch
// CHECK-NOT: memref.prefetch
// CHECK:   memref.subview %[[X]][%[[O]]] [256] [1]
// With blocks of at least 2 KiB only, this loop is left alone.
// OPTS-LABEL: func.func @chunks
// OPTS-NOT: memref.prefetch
func.func @chunks(%x: memref<65536xf32>, %out: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %cst = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c256 step %c1 {
    %o = arith.muli %i, %c256 : index
    %s = memref.subview %x[%o] [256] [1] : memref<65536xf32> to memref<256xf32, strided<[1], offset: ?>>
    %v = vector.transfer_read %s[%c0], %cst {in_bounds = [true]} : memref<256xf32, strided<[1], offset: ?>>, vector<256xf32>
    %r = vector.reduction <add>, %v : vector<256xf32> into f32
    memref.store %r, %out[%i] : memref<256xf32>
  }
  return
}

// -----

// The step is the block (offset = the induction variable), in an
// scf.forall, through a view of the block, and a second view at the same
// offset gets no second set of prefetches. The block's 32 lines are
// prefetched 16 in a row at most, the groups spread over the iteration
// (before the block's view, and halfway through the ops after it). The
// distance option: 8 KiB ahead is 2048 elements.
// CHECK-LABEL: func.func @forall
// CHECK: scf.forall (%[[I:.*]]) =
// CHECK:   arith.addi %[[I]], %c1024
// CHECK-COUNT-16: memref.prefetch
// CHECK-NOT: memref.prefetch
// CHECK:   memref.subview %{{.*}}[%[[I]]] [512] [1]
// CHECK:   vector.transfer_read
// CHECK-COUNT-16: memref.prefetch
// CHECK-NOT: memref.prefetch
// OPTS-LABEL: func.func @forall
// OPTS: arith.addi %{{.*}}, %c2048
// OPTS-COUNT-32: memref.prefetch
func.func @forall(%x: memref<65536xf32>, %out: memref<65536xf32>) {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.0 : f32
  scf.forall (%i) = (0) to (65536) step (512) {
    %s = memref.subview %x[%i] [512] [1] : memref<65536xf32> to memref<512xf32, strided<[1], offset: ?>>
    %e = memref.expand_shape %s [[0, 1]] output_shape [1, 512] : memref<512xf32, strided<[1], offset: ?>> into memref<1x512xf32, strided<[512, 1], offset: ?>>
    %v = vector.transfer_read %e[%c0, %c0], %cst {in_bounds = [true, true]} : memref<1x512xf32, strided<[512, 1], offset: ?>>, vector<1x512xf32>
    %again = memref.subview %x[%i] [512] [1] : memref<65536xf32> to memref<512xf32, strided<[1], offset: ?>>
    %w = vector.transfer_read %again[%c0], %cst {in_bounds = [true]} : memref<512xf32, strided<[1], offset: ?>>, vector<512xf32>
    %d = memref.subview %out[%i] [512] [1] : memref<65536xf32> to memref<512xf32, strided<[1], offset: ?>>
    vector.transfer_write %w, %d[%c0] {in_bounds = [true]} : vector<512xf32>, memref<512xf32, strided<[1], offset: ?>>
  }
  return
}

// -----

// An affine offset, a buffer of dynamic size: prefetched.
// CHECK-LABEL: func.func @affine
// CHECK: affine.apply
// CHECK: memref.prefetch %{{.*}} : memref<?xi32>
func.func @affine(%x: memref<?xi32>, %n: index, %out: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i32
  scf.for %i = %c0 to %n step %c1 {
    %o = affine.apply affine_map<(d0) -> (d0 * 512)>(%i)
    %s = memref.subview %x[%o] [512] [1] : memref<?xi32> to memref<512xi32, strided<[1], offset: ?>>
    %v = vector.transfer_read %s[%c0], %z {in_bounds = [true]} : memref<512xi32, strided<[1], offset: ?>>, vector<512xi32>
    %r = vector.reduction <xor>, %v : vector<512xi32> into i32
    memref.store %r, %out[%i] : memref<?xi32>
  }
  return
}

// -----

// Left alone: a block written through (the output), blocks of one line
// (the core overlaps such iterations by itself), a small buffer, blocks
// with gaps between them, a source defined in the loop.
// CHECK-LABEL: func.func @not_streams
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @not_streams(%x: memref<65536xf32>, %small: memref<4096xf32>, %out: memref<65536xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %cst = arith.constant 0.0 : f32
  %v = arith.constant dense<1.0> : vector<256xf32>
  scf.for %i = %c0 to %c256 step %c1 {
    %o = arith.muli %i, %c256 : index
    %w = memref.subview %out[%o] [256] [1] : memref<65536xf32> to memref<256xf32, strided<[1], offset: ?>>
    vector.transfer_write %v, %w[%c0] {in_bounds = [true]} : vector<256xf32>, memref<256xf32, strided<[1], offset: ?>>
  }
  scf.for %i = %c0 to %c256 step %c16 {
    %s = memref.subview %x[%i] [16] [1] : memref<65536xf32> to memref<16xf32, strided<[1], offset: ?>>
    %r = vector.transfer_read %s[%c0], %cst {in_bounds = [true]} : memref<16xf32, strided<[1], offset: ?>>, vector<16xf32>
    vector.transfer_write %r, %out[%i] {in_bounds = [true]} : vector<16xf32>, memref<65536xf32>
  }
  scf.for %i = %c0 to %c16 step %c1 {
    %o = arith.muli %i, %c256 : index
    %s = memref.subview %small[%o] [256] [1] : memref<4096xf32> to memref<256xf32, strided<[1], offset: ?>>
    %r = vector.transfer_read %s[%c0], %cst {in_bounds = [true]} : memref<256xf32, strided<[1], offset: ?>>, vector<256xf32>
    vector.transfer_write %r, %out[%o] {in_bounds = [true]} : vector<256xf32>, memref<65536xf32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    %o = arith.muli %i, %c512 : index
    %s = memref.subview %x[%o] [256] [1] : memref<65536xf32> to memref<256xf32, strided<[1], offset: ?>>
    %r = vector.transfer_read %s[%c0], %cst {in_bounds = [true]} : memref<256xf32, strided<[1], offset: ?>>, vector<256xf32>
    vector.transfer_write %r, %out[%o] {in_bounds = [true]} : vector<256xf32>, memref<65536xf32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    %inner = memref.alloc() : memref<65536xf32>
    %o = arith.muli %i, %c256 : index
    %s = memref.subview %inner[%o] [256] [1] : memref<65536xf32> to memref<256xf32, strided<[1], offset: ?>>
    %r = vector.transfer_read %s[%c0], %cst {in_bounds = [true]} : memref<256xf32, strided<[1], offset: ?>>, vector<256xf32>
    vector.transfer_write %r, %out[%o] {in_bounds = [true]} : vector<256xf32>, memref<65536xf32>
    memref.dealloc %inner : memref<65536xf32>
  }
  return
}

// -----

// The default min-ops-per-line (16): the loops above run a handful of ops
// per line and are left alone. A loop that reads 8 lines per iteration
// and runs 64 x 3 ops in a nested loop of static trip count (work 196 >=
// 16 x 8) is prefetched; the same with 8 x 3 (work 28) is not.
// DEFAULT-LABEL: func.func @chunks
// DEFAULT-NOT: memref.prefetch
// DEFAULT-LABEL: func.func @heavy
// DEFAULT-COUNT-8: memref.prefetch
// DEFAULT-NOT: memref.prefetch
// DEFAULT: return
// DEFAULT-LABEL: func.func @light
// DEFAULT-NOT: memref.prefetch
// DEFAULT: return
func.func @heavy(%x: memref<65536xf32>, %out: memref<65536xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %cst = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    %o = arith.muli %i, %c128 : index
    %s = memref.subview %x[%o] [128] [1] : memref<65536xf32> to memref<128xf32, strided<[1], offset: ?>>
    %v = vector.transfer_read %s[%c0], %cst {in_bounds = [true]} : memref<128xf32, strided<[1], offset: ?>>, vector<128xf32>
    %r = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %v) -> (vector<128xf32>) {
      %m = arith.mulf %acc, %acc : vector<128xf32>
      %a = arith.addf %m, %v : vector<128xf32>
      scf.yield %a : vector<128xf32>
    }
    vector.transfer_write %r, %out[%o] {in_bounds = [true]} : vector<128xf32>, memref<65536xf32>
  }
  return
}
func.func @light(%x: memref<65536xf32>, %out: memref<65536xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %cst = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    %o = arith.muli %i, %c128 : index
    %s = memref.subview %x[%o] [128] [1] : memref<65536xf32> to memref<128xf32, strided<[1], offset: ?>>
    %v = vector.transfer_read %s[%c0], %cst {in_bounds = [true]} : memref<128xf32, strided<[1], offset: ?>>, vector<128xf32>
    %r = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %v) -> (vector<128xf32>) {
      %m = arith.mulf %acc, %acc : vector<128xf32>
      %a = arith.addf %m, %v : vector<128xf32>
      scf.yield %a : vector<128xf32>
    }
    vector.transfer_write %r, %out[%o] {in_bounds = [true]} : vector<128xf32>, memref<65536xf32>
  }
  return
}

// -----

// A buffer of index elements (no byte width) is left alone.
// CHECK-LABEL: func.func @index_elements
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @index_elements(%x: memref<65536xindex>, %out: memref<256xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c1 {
    %o = arith.muli %i, %c256 : index
    %s = memref.subview %x[%o] [256] [1] : memref<65536xindex> to memref<256xindex, strided<[1], offset: ?>>
    %v = memref.load %s[%c0] : memref<256xindex, strided<[1], offset: ?>>
    memref.store %v, %out[%i] : memref<256xindex>
  }
  return
}
