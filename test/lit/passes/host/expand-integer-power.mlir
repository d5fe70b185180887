// kiln-expand-integer-power: scalar integer powers become a square-and-multiply loop with the
// negative powers defined (no division); vectors are left to convert-math-to-funcs. The pass runs
// in any op, here a gpu.module's kernel as in the CUDA pipeline.
// RUN: kiln-opt %s -split-input-file -kiln-expand-integer-power | FileCheck %s

// CHECK-LABEL: func @scalar
// CHECK-SAME: (%[[B:.*]]: i32, %[[P:.*]]: i32)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[P]], %[[ZERO]]
// CHECK: %[[P0:.*]] = arith.select %[[NEG]], %[[ZERO]], %[[P]]
// CHECK: %[[LOOP:.*]]:3 = scf.while ({{.*}} = %[[ONE]], {{.*}} = %[[B]], {{.*}} = %[[P0]])
// CHECK: arith.cmpi ne
// CHECK: scf.condition
// CHECK: arith.trunci {{.*}} : i32 to i1
// CHECK: arith.muli
// CHECK: arith.select
// CHECK: arith.muli
// CHECK: arith.shrui
// CHECK: scf.yield
// CHECK: %[[R:.*]] = arith.select %[[NEG]], %{{.*}}, %[[LOOP]]#0
// CHECK-NOT: math.ipowi
// CHECK-NOT: arith.divsi
// CHECK: return %[[R]]
func.func @scalar(%b: i32, %p: i32) -> i32 {
  %r = math.ipowi %b, %p : i32
  return %r : i32
}

// -----

// CHECK-LABEL: func @vector
// CHECK: math.ipowi
func.func @vector(%b: vector<4xi64>, %p: vector<4xi64>) -> vector<4xi64> {
  %r = math.ipowi %b, %p : vector<4xi64>
  return %r : vector<4xi64>
}

// -----

// CHECK-LABEL: gpu.module @kernels
// CHECK: scf.while
// CHECK-NOT: math.ipowi
gpu.module @kernels {
  gpu.func @pow(%b: i64, %p: i64, %out: memref<i64>) kernel {
    %r = math.ipowi %b, %p : i64
    memref.store %r, %out[] : memref<i64>
    gpu.return
  }
}
