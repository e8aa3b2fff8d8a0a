// RUN: act-opt %s -act-byte-i1-vectors -split-input-file -verify-diagnostics | FileCheck %s

// Vectors of i1 in memory are one byte per element, like the memref's
// scalar i1 loads and stores: a store widens to bytes, a load narrows.
// CHECK-LABEL: llvm.func @store_and_load
// CHECK-SAME:    (%[[P:.*]]: !llvm.ptr, %[[M:.*]]: vector<16xi1>)
// CHECK:         %[[WIDE:.*]] = llvm.zext %[[M]] : vector<16xi1> to vector<16xi8>
// CHECK:         llvm.store %[[WIDE]], %[[P]] {alignment = 1 : i64} : vector<16xi8>, !llvm.ptr
// CHECK:         %[[BYTES:.*]] = llvm.load %[[P]] {alignment = 1 : i64} : !llvm.ptr -> vector<16xi8>
// CHECK:         %[[BITS:.*]] = llvm.trunc %[[BYTES]] : vector<16xi8> to vector<16xi1>
// CHECK:         llvm.return %[[BITS]] : vector<16xi1>
// Scalars and other element types are left alone.
// CHECK-LABEL: llvm.func @others
// CHECK:         llvm.store %{{.*}} : i1, !llvm.ptr
// CHECK:         llvm.load %{{.*}} : !llvm.ptr -> vector<16xf32>
// CHECK-NOT:     llvm.zext
// CHECK-NOT:     llvm.trunc
llvm.func @store_and_load(%p: !llvm.ptr, %m: vector<16xi1>) -> vector<16xi1> {
  llvm.store %m, %p {alignment = 1 : i64} : vector<16xi1>, !llvm.ptr
  %l = llvm.load %p {alignment = 1 : i64} : !llvm.ptr -> vector<16xi1>
  llvm.return %l : vector<16xi1>
}
llvm.func @others(%p: !llvm.ptr, %b: i1) -> vector<16xf32> {
  llvm.store %b, %p : i1, !llvm.ptr
  %l = llvm.load %p : !llvm.ptr -> vector<16xf32>
  llvm.return %l : vector<16xf32>
}

// -----

// A masked store of i1 data would write packed bits: an error, not wrong
// bytes. (Masked stores of other data are fine: the mask is always i1.)
llvm.func @masked_i1(%p: !llvm.ptr, %m: vector<16xi1>, %k: vector<16xi1>) {
  // expected-error @below {{act-byte-i1-vectors: a masked load or store of i1 elements would read or write packed bits of a byte-per-element buffer}}
  llvm.intr.masked.store %m, %p, %k {alignment = 1 : i32} : vector<16xi1>, vector<16xi1> into !llvm.ptr
  llvm.return
}

// -----

// CHECK-LABEL: llvm.func @masked_f32
// CHECK:         llvm.intr.masked.store
llvm.func @masked_f32(%p: !llvm.ptr, %v: vector<16xf32>, %k: vector<16xi1>) {
  llvm.intr.masked.store %v, %p, %k {alignment = 4 : i32} : vector<16xf32>, vector<16xi1> into !llvm.ptr
  llvm.return
}
