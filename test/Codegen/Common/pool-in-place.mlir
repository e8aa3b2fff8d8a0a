// act-pool-in-place: a 2x2 max pool whose input buffer dies there writes
// its output into that buffer, which memref.realloc shrinks; the reduction
// runs in registers from the fills' values. act-shrink-reallocs: the
// realloc as a call of the runtime on the same buffer.
// RUN: act-opt %s -split-input-file -act-pool-in-place | FileCheck %s
// RUN: act-opt %s -split-input-file -act-pool-in-place -act-shrink-reallocs | FileCheck %s --check-prefix=SHRINK
// The static peak: the pool's 96-byte output no longer beside its input.
// RUN: act-opt %s -split-input-file -act-buffer-peak=report=- -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE
// RUN: act-opt %s -split-input-file -act-pool-in-place -act-buffer-peak=report=- -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER

#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @pool
// CHECK-SAME:    (%[[ARG:.*]]: memref<2x3x4x4xf32>, %[[RES:.*]]: memref<2x3x2x2xf32>, %[[RESI:.*]]: memref<2x3x2x2xi8>)
// CHECK:         %[[X:.*]] = memref.alloc() : memref<2x3x4x4xf32>
// CHECK-NOT:     memref.alloc() : memref<2x3x2x2xf32>
// CHECK-NOT:     linalg.fill
// CHECK:         %[[I:.*]] = memref.alloc() : memref<2x3x2x2xi8>
// CHECK-NOT:     linalg.fill
// CHECK:         %[[VIEW:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [2, 3, 2, 2], strides: [12, 4, 2, 1]
// CHECK:         scf.for %[[N:[^ ]+]] =
// CHECK:           scf.for %[[C:[^ ]+]] =
// CHECK:             scf.for %[[OH:[^ ]+]] =
// CHECK:               scf.for %[[OW:[^ ]+]] =
// CHECK:                 %[[H:.*]] = arith.muli %[[OH]], %c2
// CHECK:                 %[[W:.*]] = arith.muli %[[OW]], %c2
// CHECK:                 %[[R:.*]]:2 = scf.for %[[KI:[^ ]+]] = {{.*}} iter_args(%{{.*}} = %[[NINF:.*]], %{{.*}} = %[[ZERO:.*]]) -> (f32, i8)
// CHECK:                   scf.for %[[KJ:[^ ]+]] = {{.*}} -> (f32, i8)
// CHECK:                     %[[Y:.*]] = arith.addi %[[H]], %[[KI]]
// CHECK:                     %[[XX:.*]] = arith.addi %[[W]], %[[KJ]]
// CHECK:                     memref.load %[[X]][%[[N]], %[[C]], %[[Y]], %[[XX]]]
// CHECK:                     arith.muli %[[KI]], %c2
// CHECK:                     arith.cmpf ogt
// CHECK:                 memref.store %[[R]]#0, %[[VIEW]][%[[N]], %[[C]], %[[OH]], %[[OW]]]
// CHECK:                 memref.store %[[R]]#1, %[[I]][%[[N]], %[[C]], %[[OH]], %[[OW]]]
// CHECK-NOT:     memref.dealloc %[[X]] :
// CHECK:         %[[FLAT:.*]] = memref.collapse_shape %[[X]] {{\[\[}}0, 1, 2, 3]] : memref<2x3x4x4xf32> into memref<96xf32>
// CHECK:         %[[SMALL:.*]] = memref.realloc %[[FLAT]] : memref<96xf32> to memref<24xf32>
// CHECK:         %[[OUT:.*]] = memref.expand_shape %[[SMALL]] {{\[\[}}0, 1, 2, 3]] output_shape [2, 3, 2, 2] : memref<24xf32> into memref<2x3x2x2xf32>
// CHECK:         memref.copy %[[OUT]], %[[RES]]
// CHECK:         memref.dealloc %[[SMALL]] : memref<24xf32>
// CHECK-NOT:     memref.dealloc %[[X]] :

// SHRINK:      func.func private @act_shrink_buffer(i64, i64)
// SHRINK-LABEL: func.func @pool
// SHRINK:        %[[FLAT:.*]] = memref.collapse_shape {{.*}} into memref<96xf32>
// SHRINK:        %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[FLAT]]
// SHRINK:        %[[P64:.*]] = arith.index_cast %[[P]] : index to i64
// SHRINK:        %[[BYTES:.*]] = arith.constant 96 : i64
// SHRINK:        call @act_shrink_buffer(%[[P64]], %[[BYTES]])
// SHRINK:        %[[SMALL:.*]] = memref.reinterpret_cast %[[FLAT]] to offset: [0], sizes: [24], strides: [1] : memref<96xf32> to memref<24xf32>
// SHRINK-NOT:    memref.realloc
// SHRINK:        memref.dealloc %[[SMALL]]

// x (384 B) + window (16) + output (96) + indices (24) while the pool runs;
// after: x + window + indices, then the 96-byte output alone.
// BEFORE: buffer peak of @pool: 520 bytes
// AFTER:  buffer peak of @pool: 424 bytes
func.func @pool(%arg: memref<2x3x4x4xf32>, %res: memref<2x3x2x2xf32>, %resi: memref<2x3x2x2xi8>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0 : i8
  %c2 = arith.constant 2 : index
  %x = memref.alloc() : memref<2x3x4x4xf32>
  memref.copy %arg, %x : memref<2x3x4x4xf32> to memref<2x3x4x4xf32>
  %w = memref.alloc() : memref<2x2xf32>
  %o = memref.alloc() : memref<2x3x2x2xf32>
  linalg.fill ins(%ninf : f32) outs(%o : memref<2x3x2x2xf32>)
  %i = memref.alloc() : memref<2x3x2x2xi8>
  linalg.fill ins(%zero : i8) outs(%i : memref<2x3x2x2xi8>)
  linalg.generic {indexing_maps = [#in, #win, #out, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : memref<2x3x4x4xf32>, memref<2x2xf32>) outs(%o, %i : memref<2x3x2x2xf32>, memref<2x3x2x2xi8>) {
  ^bb0(%in: f32, %unused: f32, %acc: f32, %arg_acc: i8):
    %k0 = linalg.index 4 : index
    %k1 = linalg.index 5 : index
    %k = arith.muli %k0, %c2 : index
    %l = arith.addi %k, %k1 : index
    %gt = arith.cmpf ogt, %in, %acc : f32
    %v = arith.select %gt, %in, %acc : f32
    %li = arith.index_cast %l : index to i8
    %a = arith.select %gt, %li, %arg_acc : i8
    linalg.yield %v, %a : f32, i8
  }
  memref.dealloc %w : memref<2x2xf32>
  memref.dealloc %x : memref<2x3x4x4xf32>
  memref.copy %o, %res : memref<2x3x2x2xf32> to memref<2x3x2x2xf32>
  memref.copy %i, %resi : memref<2x3x2x2xi8> to memref<2x3x2x2xi8>
  memref.dealloc %o : memref<2x3x2x2xf32>
  memref.dealloc %i : memref<2x3x2x2xi8>
  return
}

// -----

// Kept: the input is read after the pool; the windows overlap (stride 1);
// the input is the caller's buffer.
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#in1 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @kept
// CHECK-NOT:   memref.realloc
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT:   memref.realloc
func.func @kept(%arg: memref<1x1x4x4xf32>, %res: memref<1x1x2x2xf32>, %res1: memref<1x1x3x3xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %x = memref.alloc() : memref<1x1x4x4xf32>
  memref.copy %arg, %x : memref<1x1x4x4xf32> to memref<1x1x4x4xf32>
  %w = memref.alloc() : memref<2x2xf32>
  %o = memref.alloc() : memref<1x1x2x2xf32>
  linalg.fill ins(%ninf : f32) outs(%o : memref<1x1x2x2xf32>)
  linalg.generic {indexing_maps = [#in, #win, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : memref<1x1x4x4xf32>, memref<2x2xf32>) outs(%o : memref<1x1x2x2xf32>) {
  ^bb0(%in: f32, %unused: f32, %acc: f32):
    %v = arith.maximumf %in, %acc : f32
    linalg.yield %v : f32
  }
  memref.copy %x, %arg : memref<1x1x4x4xf32> to memref<1x1x4x4xf32>
  memref.dealloc %x : memref<1x1x4x4xf32>
  memref.copy %o, %res : memref<1x1x2x2xf32> to memref<1x1x2x2xf32>
  memref.dealloc %o : memref<1x1x2x2xf32>
  %y = memref.alloc() : memref<1x1x4x4xf32>
  memref.copy %arg, %y : memref<1x1x4x4xf32> to memref<1x1x4x4xf32>
  %o1 = memref.alloc() : memref<1x1x3x3xf32>
  linalg.fill ins(%ninf : f32) outs(%o1 : memref<1x1x3x3xf32>)
  linalg.generic {indexing_maps = [#in1, #win, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%y, %w : memref<1x1x4x4xf32>, memref<2x2xf32>) outs(%o1 : memref<1x1x3x3xf32>) {
  ^bb0(%in: f32, %unused: f32, %acc: f32):
    %v = arith.maximumf %in, %acc : f32
    linalg.yield %v : f32
  }
  memref.dealloc %y : memref<1x1x4x4xf32>
  memref.copy %o1, %res1 : memref<1x1x3x3xf32> to memref<1x1x3x3xf32>
  memref.dealloc %o1 : memref<1x1x3x3xf32>
  %o2 = memref.alloc() : memref<1x1x2x2xf32>
  linalg.fill ins(%ninf : f32) outs(%o2 : memref<1x1x2x2xf32>)
  linalg.generic {indexing_maps = [#in, #win, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%arg, %w : memref<1x1x4x4xf32>, memref<2x2xf32>) outs(%o2 : memref<1x1x2x2xf32>) {
  ^bb0(%in: f32, %unused: f32, %acc: f32):
    %v = arith.maximumf %in, %acc : f32
    linalg.yield %v : f32
  }
  memref.copy %o2, %res : memref<1x1x2x2xf32> to memref<1x1x2x2xf32>
  memref.dealloc %o2 : memref<1x1x2x2xf32>
  memref.dealloc %w : memref<2x2xf32>
  return
}

// -----

// act-shrink-reallocs leaves a realloc of the caller's buffer (not a block
// of act's allocation hooks) and a growing one to expand-realloc.
// CHECK-LABEL: func.func @foreign
// SHRINK-LABEL: func.func @foreign
// SHRINK-NOT:   call @act_shrink_buffer
// SHRINK:       memref.realloc %{{.*}} : memref<96xf32> to memref<24xf32>
// SHRINK:       memref.realloc %{{.*}} : memref<24xf32> to memref<48xf32>
// SHRINK-NOT:   call @act_shrink_buffer
func.func @foreign(%arg: memref<96xf32>) -> (memref<24xf32>, memref<48xf32>) {
  %small = memref.realloc %arg : memref<96xf32> to memref<24xf32>
  %a = memref.alloc() : memref<24xf32>
  %big = memref.realloc %a : memref<24xf32> to memref<48xf32>
  return %small, %big : memref<24xf32>, memref<48xf32>
}

// -----

// The output filled again after the pool (a later reuse of its buffer):
// that fill writes the shrunk buffer, as every later use does.
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @refilled
// SHRINK-LABEL: func.func @refilled
// CHECK:       %[[SMALL:.*]] = memref.realloc
// CHECK:       %[[OUT:.*]] = memref.expand_shape %[[SMALL]]
// CHECK:       memref.copy %[[OUT]], %{{.*}}
// CHECK:       linalg.fill ins(%{{.*}} : f32) outs(%[[OUT]] : memref<1x1x2x2xf32>)
// CHECK:       memref.copy %[[OUT]], %{{.*}}
// CHECK:       memref.dealloc %[[SMALL]]
func.func @refilled(%arg: memref<1x1x4x4xf32>, %res: memref<1x1x2x2xf32>, %res2: memref<1x1x2x2xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %x = memref.alloc() : memref<1x1x4x4xf32>
  memref.copy %arg, %x : memref<1x1x4x4xf32> to memref<1x1x4x4xf32>
  %w = memref.alloc() : memref<2x2xf32>
  %o = memref.alloc() : memref<1x1x2x2xf32>
  linalg.fill ins(%ninf : f32) outs(%o : memref<1x1x2x2xf32>)
  linalg.generic {indexing_maps = [#in, #win, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : memref<1x1x4x4xf32>, memref<2x2xf32>) outs(%o : memref<1x1x2x2xf32>) {
  ^bb0(%in: f32, %unused: f32, %acc: f32):
    %v = arith.maximumf %in, %acc : f32
    linalg.yield %v : f32
  }
  memref.dealloc %x : memref<1x1x4x4xf32>
  memref.dealloc %w : memref<2x2xf32>
  memref.copy %o, %res : memref<1x1x2x2xf32> to memref<1x1x2x2xf32>
  linalg.fill ins(%ninf : f32) outs(%o : memref<1x1x2x2xf32>)
  memref.copy %o, %res2 : memref<1x1x2x2xf32> to memref<1x1x2x2xf32>
  memref.dealloc %o : memref<1x1x2x2xf32>
  return
}
