// kiln-resolve-reshape-shapes: reshapes whose sizes the host knows become reinterpret_casts.
// RUN: kiln-opt %s -split-input-file -kiln-resolve-reshape-shapes | FileCheck %s

// A constant shape global: static row-major strides.
// CHECK-LABEL: func @constant_shape
// CHECK-NOT: memref.reshape
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [2, 12], strides: [12, 1]
memref.global "private" constant @shape : memref<2xi64> = dense<[2, 12]>
func.func @constant_shape(%x: memref<2x3x4xf32>) -> memref<2x12xf32> {
  %s = memref.get_global @shape : memref<2xi64>
  %r = memref.reshape %x(%s) : (memref<2x3x4xf32>, memref<2xi64>) -> memref<2x12xf32>
  return %r : memref<2x12xf32>
}

// -----

// A dynamic size stored into the shape buffer in the same block.
// CHECK-LABEL: func @stored_shape
// CHECK-NOT: memref.reshape
// CHECK: %[[N:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%[[N]], 4], strides: [4, 1]
func.func @stored_shape(%x: memref<?xf32>, %n: i64) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : i64
  %s = memref.alloc() : memref<2xi64>
  memref.store %n, %s[%c0] : memref<2xi64>
  memref.store %c4, %s[%c1] : memref<2xi64>
  %r = memref.reshape %x(%s) : (memref<?xf32>, memref<2xi64>) -> memref<?x4xf32>
  return %r : memref<?x4xf32>
}

// -----

// Sizes the host cannot know (a shape that is a graph input) stay a reshape.
// CHECK-LABEL: func @unknown_shape
// CHECK: memref.reshape
func.func @unknown_shape(%x: memref<?xf32>, %s: memref<2xi64>) -> memref<?x?xf32> {
  %r = memref.reshape %x(%s) : (memref<?xf32>, memref<2xi64>) -> memref<?x?xf32>
  return %r : memref<?x?xf32>
}

// -----

// Loads of the stored sizes between the stores and the reshape (a loop's bounds, as the decoders'
// head splits have) only read the buffer: still resolved. (They were taken for writes, and every
// decode step read the shape back from the GPU: a synchronization per layer.) Once resolved, the
// loads become the stored values, so nothing reads the buffer any more (canonicalization then
// erases it and its stores: on the GPU a one-thread launch per head split).
// CHECK-LABEL: func @read_between
// CHECK-SAME: %[[N:[a-z0-9]+]]: i64, %[[OUT:[a-z0-9]+]]: memref<?xi64>
// CHECK-NOT: memref.load
// CHECK: memref.store %[[N]], %[[OUT]]
// CHECK-NOT: memref.reshape
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%{{.*}}, 4], strides: [4, 1]
func.func @read_between(%x: memref<?xf32>, %n: i64, %out: memref<?xi64>) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : i64
  %s = memref.alloc() : memref<2xi64>
  memref.store %n, %s[%c0] : memref<2xi64>
  memref.store %c4, %s[%c1] : memref<2xi64>
  %v = memref.load %s[%c0] : memref<2xi64>
  memref.store %v, %out[%c0] : memref<?xi64>
  %r = memref.reshape %x(%s) : (memref<?xf32>, memref<2xi64>) -> memref<?x4xf32>
  return %r : memref<?x4xf32>
}

// -----

// A write nested in a loop between the stores and the reshape (invisible among the loop's own
// operands) makes the stored sizes unreliable: the reshape stays.
// CHECK-LABEL: func @written_in_a_loop
// CHECK: memref.reshape
func.func @written_in_a_loop(%x: memref<?xf32>, %n: i64) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : i64
  %s = memref.alloc() : memref<2xi64>
  memref.store %n, %s[%c0] : memref<2xi64>
  memref.store %c4, %s[%c1] : memref<2xi64>
  scf.for %i = %c0 to %c1 step %c1 {
    memref.store %c4, %s[%c0] : memref<2xi64>
  }
  %r = memref.reshape %x(%s) : (memref<?xf32>, memref<2xi64>) -> memref<?x4xf32>
  return %r : memref<?x4xf32>
}
