// kiln-add-runtime-context + kiln-form-cpu-launches: outer parallel loops become launches.
// RUN: kiln-opt %s -kiln-add-runtime-context -kiln-form-cpu-launches | FileCheck %s

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
