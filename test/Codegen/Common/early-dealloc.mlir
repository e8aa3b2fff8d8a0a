// RUN: act-opt %s -act-early-dealloc | FileCheck %s

// The ownership-based deallocation pipeline frees at the end of the block;
// the pass moves each dealloc right after the last use of the buffer or of
// any view of it.
// CHECK-LABEL: func.func @step
// CHECK:      %[[A:.*]] = memref.alloc() : memref<64xf32>
// CHECK:      %[[B:.*]] = memref.alloc() : memref<64xf32>
// CHECK:      linalg.copy ins(%[[A]] : memref<64xf32>) outs(%[[B]] : memref<64xf32>)
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK:      %[[V:.*]] = memref.expand_shape %[[B]]
// CHECK:      memref.load %[[V]]
// CHECK-NEXT: memref.dealloc %[[B]]
// A buffer read in a nested region is freed after the op holding it.
// CHECK:      scf.for
// CHECK:        memref.load %[[C:.*]][
// CHECK:      }
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK:      return
func.func @step(%i: index, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<64xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<64xf32>)
  %b = memref.alloc() : memref<64xf32>
  linalg.copy ins(%a : memref<64xf32>) outs(%b : memref<64xf32>)
  %v = memref.expand_shape %b [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
  %r = memref.load %v[%c0, %i] : memref<8x8xf32>
  %c = memref.alloc() : memref<64xf32>
  linalg.fill ins(%r : f32) outs(%c : memref<64xf32>)
  %s = scf.for %j = %c0 to %i step %c1 iter_args(%acc = %r) -> f32 {
    %l = memref.load %c[%j] : memref<64xf32>
    %n = arith.addf %acc, %l : f32
    scf.yield %n : f32
  }
  %t = arith.mulf %s, %s : f32
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %b : memref<64xf32>
  memref.dealloc %c : memref<64xf32>
  return %t : f32
}

// A buffer selected with another (arith.select of memrefs, as a
// canonicalized scf.if yields them) is freed after the select's last use:
// the select is an alias of both (arith's BufferViewFlowOpInterface model).
// CHECK-LABEL: func.func @select
// CHECK:      %[[A:.*]] = memref.alloc() : memref<64xf32>
// CHECK:      %[[S:.*]] = arith.select %{{.*}}, %[[A]], %{{.*}} : memref<64xf32>
// CHECK-NOT:  memref.dealloc %[[A]]
// CHECK:      memref.load %[[S]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK:      return
func.func @select(%c: i1, %g: memref<64xf32>, %i: index, %x: f32) -> f32 {
  %a = memref.alloc() : memref<64xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<64xf32>)
  %s = arith.select %c, %a, %g : memref<64xf32>
  %y = arith.mulf %x, %x : f32
  %r = memref.load %s[%i] : memref<64xf32>
  %t = arith.addf %r, %y : f32
  memref.dealloc %a : memref<64xf32>
  return %t : f32
}
