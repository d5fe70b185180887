// kiln-add-runtime-context + kiln-form-cpu-launches: outer parallel loops become launches.
// RUN: kiln-opt %s -split-input-file -kiln-add-runtime-context -kiln-form-cpu-launches | FileCheck %s

// CHECK-LABEL: func @main
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr {kiln.context}
// CHECK-SAME: kiln.abi_arg_ranks = array<i64: 2>
// CHECK: kiln_cpu.launch %[[CTX]], %{{.*}} attributes {kernel_id = 0 : i32, kiln.source_nodes = ["relu"]}
// CHECK: ^bb0(%[[ITEM:.*]]: i64):
// CHECK: scf.for
// CHECK: kiln_cpu.yield
func.func @main(%x: memref<?x16xf32>) -> memref<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x16xf32>
  %out = memref.alloc(%n) : memref<?x16xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c16) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x16xf32>
    %r = arith.maximumf %v, %zero : f32
    memref.store %r, %out[%i, %j] : memref<?x16xf32>
    scf.reduce
  } loc("relu")
  return %out : memref<?x16xf32>
}

// -----

// Static trip counts: work items take outer dims until there are at least 64
// (4 x 32 = 128 here); the innermost dim stays a loop in each item.
// CHECK-LABEL: func @main
// CHECK: kiln_cpu.launch
// CHECK: arith.remsi
// CHECK: arith.divsi
// CHECK: scf.for %{{.*}} = %{{.*}} to %c16
// CHECK-NOT: scf.for
// CHECK: kiln_cpu.yield
func.func @main(%x: memref<4x32x16xf32>, %out: memref<4x32x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c4, %c32, %c16) step (%c1, %c1, %c1) {
    %v = memref.load %x[%i, %j, %k] : memref<4x32x16xf32>
    memref.store %v, %out[%i, %j, %k] : memref<4x32x16xf32>
    scf.reduce
  }
  return
}

// -----

// 49 items (7 x 7) are short of 64, but one more dim would leave each item 2 iterations
// (shufflenet's channel shuffle): the items stop at 49, each looping over 232 x 2.
// CHECK-LABEL: func @main
// CHECK: kiln_cpu.launch
// CHECK: arith.remsi
// CHECK-NEXT: arith.divsi
// CHECK-NOT: arith.remsi
// CHECK: scf.for %{{.*}} = %{{.*}} to %c232
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2
// CHECK: kiln_cpu.yield
func.func @main(%x: memref<7x7x2x232xf32>, %out: memref<7x7x232x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %c232 = arith.constant 232 : index
  scf.parallel (%h, %w, %i, %g) = (%c0, %c0, %c0, %c0) to (%c7, %c7, %c232, %c2) step (%c1, %c1, %c1, %c1) {
    %v = memref.load %x[%h, %w, %g, %i] : memref<7x7x2x232xf32>
    memref.store %v, %out[%h, %w, %i, %g] : memref<7x7x232x2xf32>
    scf.reduce
  }
  return
}

// -----

// Fewer than 16 items (4 x 3): a quarter of 64 is the least that stops short, so the third
// dim is taken (60 items) though it leaves 2 iterations per item.
// CHECK-LABEL: func @main
// CHECK: kiln_cpu.launch
// CHECK: arith.remsi
// CHECK-NEXT: arith.divsi
// CHECK: arith.remsi
// CHECK-NEXT: arith.divsi
// CHECK-NOT: arith.remsi
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2
// CHECK-NOT: scf.for
// CHECK: kiln_cpu.yield
func.func @main(%x: memref<4x3x5x2xf32>, %out: memref<4x3x5x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  scf.parallel (%i, %j, %k, %l) = (%c0, %c0, %c0, %c0) to (%c4, %c3, %c5, %c2) step (%c1, %c1, %c1, %c1) {
    %v = memref.load %x[%i, %j, %k, %l] : memref<4x3x5x2xf32>
    memref.store %v, %out[%i, %j, %k, %l] : memref<4x3x5x2xf32>
    scf.reduce
  }
  return
}
