// kiln-memref-copy-to-linalg: strided copies become linalg.copy (then loops), not runtime calls.
// RUN: kiln-opt %s -kiln-memref-copy-to-linalg | FileCheck %s

// CHECK-LABEL: func @copy
// CHECK: linalg.copy ins(%{{.*}} : memref<4x4xf32>) outs(%{{.*}} : memref<4x4xf32, strided<[6, 1], offset: 7>>)
// CHECK-NOT: memref.copy
func.func @copy(%src: memref<4x4xf32>, %dst: memref<4x4xf32, strided<[6, 1], offset: 7>>) {
  memref.copy %src, %dst : memref<4x4xf32> to memref<4x4xf32, strided<[6, 1], offset: 7>>
  return
}
