// kiln-fuse-sibling-loops: neighbouring independent parallel loops become one (one launch).
// RUN: kiln-opt %s -split-input-file -kiln-fuse-sibling-loops | FileCheck %s

// Keys and values appended to two caches: the same range, different buffers. One loop runs both
// copies, no guard.
// CHECK-LABEL: func @append_keys_values
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%c0, %c0) to (%[[N:.*]], %c16) step (%c1, %c1)
// CHECK-NEXT: %[[K:.*]] = memref.load %arg2[%[[I]], %[[J]]]
// CHECK-NEXT: memref.store %[[K]], %arg0[%[[I]], %[[J]]]
// CHECK-NEXT: %[[V:.*]] = memref.load %arg3[%[[I]], %[[J]]]
// CHECK-NEXT: memref.store %[[V]], %arg1[%[[I]], %[[J]]]
// CHECK-NEXT: scf.reduce
// CHECK-NOT: scf.parallel
func.func @append_keys_values(%kc: memref<?x16xf32>, %vc: memref<?x16xf32>, %k: memref<?x16xf32>, %v: memref<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %n = memref.dim %k, %c0 : memref<?x16xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c16) step (%c1, %c1) {
    %x = memref.load %k[%i, %j] : memref<?x16xf32>
    memref.store %x, %kc[%i, %j] : memref<?x16xf32>
    scf.reduce
  }
  %c16b = arith.constant 16 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c16b) step (%c1, %c1) {
    %x = memref.load %v[%i, %j] : memref<?x16xf32>
    memref.store %x, %vc[%i, %j] : memref<?x16xf32>
    scf.reduce
  }
  return
}

// -----

// Bounds differing in one dim: the larger range, each body under its own bound.
// CHECK-LABEL: func @one_dim_differs
// CHECK: %[[M:.*]] = arith.maxsi %[[A:.*]], %[[B:.*]] : index
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%c0, %c0) to (%[[M]], %c8)
// CHECK: %[[INA:.*]] = arith.cmpi slt, %[[I]], %[[A]] : index
// CHECK-NEXT: scf.if %[[INA]] {
// CHECK: memref.store %{{.*}}, %arg0
// CHECK: %[[INB:.*]] = arith.cmpi slt, %[[I]], %[[B]] : index
// CHECK-NEXT: scf.if %[[INB]] {
// CHECK: memref.store %{{.*}}, %arg1
// CHECK-NOT: scf.parallel
func.func @one_dim_differs(%out0: memref<?x8xf32>, %out1: memref<?x8xf32>, %in0: memref<?x8xf32>, %in1: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %a = memref.dim %in0, %c0 : memref<?x8xf32>
  %b = memref.dim %in1, %c0 : memref<?x8xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%a, %c8) step (%c1, %c1) {
    %x = memref.load %in0[%i, %j] : memref<?x8xf32>
    memref.store %x, %out0[%i, %j] : memref<?x8xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%b, %c8) step (%c1, %c1) {
    %x = memref.load %in1[%i, %j] : memref<?x8xf32>
    memref.store %x, %out1[%i, %j] : memref<?x8xf32>
    scf.reduce
  }
  return
}

// -----

// The second loop reads what the first writes (through a view): they stay apart.
// CHECK-LABEL: func @dependent
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @dependent(%tmp: memref<16xf32>, %out: memref<16xf32>, %in: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %in[%i] : memref<16xf32>
    memref.store %x, %tmp[%i] : memref<16xf32>
    scf.reduce
  }
  %view = memref.subview %tmp[0] [16] [1] : memref<16xf32> to memref<16xf32, strided<[1]>>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %view[%i] : memref<16xf32, strided<[1]>>
    memref.store %x, %out[%i] : memref<16xf32>
    scf.reduce
  }
  return
}

// -----

// Bounds differing in two dims: the merged range could be far bigger than both; they stay apart.
// CHECK-LABEL: func @two_dims_differ
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @two_dims_differ(%out0: memref<?x?xf32>, %out1: memref<?x?xf32>, %a: index, %b: index, %c: index, %d: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%a, %b) step (%c1, %c1) {
    memref.store %f, %out0[%i, %j] : memref<?x?xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c, %d) step (%c1, %c1) {
    memref.store %f, %out1[%i, %j] : memref<?x?xf32>
    scf.reduce
  }
  return
}

// -----

// A loop inside a body (a reduction, which kiln-form-block-reductions shapes) and a host store
// between two loops both keep the loops apart.
// CHECK-LABEL: func @nested_loop_and_store_between
// CHECK-COUNT-3: scf.parallel
func.func @nested_loop_and_store_between(%out0: memref<16xf32>, %out1: memref<16xf32>, %out2: memref<16xf32>, %in: memref<16x16xf32>, %flag: memref<i32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %z) -> f32 {
      %x = memref.load %in[%i, %k] : memref<16x16xf32>
      %y = arith.addf %acc, %x : f32
      scf.yield %y : f32
    }
    memref.store %s, %out0[%i] : memref<16xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %z, %out1[%i] : memref<16xf32>
    scf.reduce
  }
  %one = arith.constant 1 : i32
  memref.store %one, %flag[] : memref<i32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %z, %out2[%i] : memref<16xf32>
    scf.reduce
  }
  return
}
