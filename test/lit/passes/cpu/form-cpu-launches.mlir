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
