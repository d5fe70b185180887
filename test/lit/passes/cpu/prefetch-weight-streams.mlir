// kiln-prefetch-weight-streams: a vector read of an 8-bit weight panel gets a
// prefetch `distance` bytes (here 4096 / 64 = 64 rows) ahead in the same
// panel, clamped to its last row; reads of other buffers get none.
// RUN: kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-prefetch-weight-streams))' | FileCheck %s

// CHECK-LABEL: func @main
// CHECK: %[[AHEAD:.*]] = arith.addi %arg3, %c64 : index
// CHECK: %[[ROW:.*]] = arith.minsi %[[AHEAD]], %c99 : index
// CHECK: memref.prefetch %arg1[%arg2, %[[ROW]], %c0], read, locality<3>, data : memref<4x100x64xi8>
// CHECK: vector.transfer_read %arg1[%arg2, %arg3, %c0]
// CHECK-NOT: memref.prefetch
// CHECK: vector.transfer_read %arg0
func.func @main(%x: memref<4x100x64xi8>, %w: memref<4x100x64xi8> {kiln.weight = 0 : i64}, %p: index, %k: index) -> (vector<64xi8>, vector<64xi8>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0 : i8
  %a = vector.transfer_read %w[%p, %k, %c0], %pad {in_bounds = [true]} : memref<4x100x64xi8>, vector<64xi8>
  %b = vector.transfer_read %x[%p, %k, %c0], %pad {in_bounds = [true]} : memref<4x100x64xi8>, vector<64xi8>
  return %a, %b : vector<64xi8>, vector<64xi8>
}
