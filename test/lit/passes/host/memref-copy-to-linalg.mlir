// kiln-memref-copy-to-linalg: strided copies become linalg.copy (then loops), not runtime calls.
// RUN: kiln-opt %s -kiln-memref-copy-to-linalg | FileCheck %s

// CHECK-LABEL: func @copy
// CHECK: linalg.copy ins(%{{.*}} : memref<4x4xf32>) outs(%{{.*}} : memref<4x4xf32, strided<[6, 1], offset: 7>>)
// CHECK-NOT: memref.copy
func.func @copy(%src: memref<4x4xf32>, %dst: memref<4x4xf32, strided<[6, 1], offset: 7>>) {
  memref.copy %src, %dst : memref<4x4xf32> to memref<4x4xf32, strided<[6, 1], offset: 7>>
  return
}

// A copy of a buffer onto itself (an insert_slice of a slab filled in place)
// is dropped, not turned into a kernel that reads and writes every element.
// CHECK-LABEL: func @self_copy
// CHECK-NOT: linalg.copy
// CHECK-NOT: memref.copy
// CHECK: return
func.func @self_copy(%buf: memref<4x4xf32, strided<[6, 1], offset: 7>>) {
  memref.copy %buf, %buf : memref<4x4xf32, strided<[6, 1], offset: 7>> to memref<4x4xf32, strided<[6, 1], offset: 7>>
  return
}
