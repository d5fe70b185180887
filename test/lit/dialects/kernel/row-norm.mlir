// kiln_kernel.row_norm round-trips on tensors (returning the written init) and on buffers (no
// result), with a scale and bias, with a one-element scale, and without either; one-shot
// bufferization turns the tensor form into the buffer form, writing a fresh buffer without
// copying or reading the empty init.
// RUN: kiln-opt %s -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file -one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// CHECK-LABEL: func @layer
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x64xf32>, %[[S:[a-z0-9]+]]: tensor<64xf32>, %[[B:[a-z0-9]+]]: tensor<64xf32>
// CHECK: %[[E:.*]] = tensor.empty
// CHECK: %[[R:.*]] = kiln_kernel.row_norm %[[X]] scale %[[S]] : tensor<64xf32> bias %[[B]] : tensor<64xf32> into %[[E]] {epsilon = 9.99999974E-6 : f32, kind = "layer"} : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
// CHECK: return %[[R]]
// BUF-LABEL: func @layer
// BUF-SAME: %[[X:[a-z0-9]+]]: memref<?x?x64xf32{{.*}}>, %[[S:[a-z0-9]+]]: memref<64xf32{{.*}}>, %[[B:[a-z0-9]+]]: memref<64xf32{{.*}}>
// BUF: %[[OUT:.*]] = memref.alloc(%{{.*}}, %{{.*}}) {{.*}}: memref<?x?x64xf32>
// BUF-NOT: memref.copy
// BUF: kiln_kernel.row_norm %[[X]] scale %[[S]] : memref<64xf32{{.*}}> bias %[[B]] : memref<64xf32{{.*}}> into %[[OUT]] {epsilon = 9.99999974E-6 : f32, kind = "layer"} : memref<?x?x64xf32{{.*}}>, memref<?x?x64xf32>
// BUF-NOT: memref.copy
// BUF: return %[[OUT]]
func.func @layer(%x: tensor<?x?x64xf32>, %s: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x?x64xf32>
  %d1 = tensor.dim %x, %c1 : tensor<?x?x64xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?x64xf32>
  %r = kiln_kernel.row_norm %x scale %s : tensor<64xf32> bias %b : tensor<64xf32> into %e {kind = "layer", epsilon = 1.0e-05 : f32}
      : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %r : tensor<?x?x64xf32>
}

// -----

// CHECK-LABEL: func @rms_buffers
// CHECK: kiln_kernel.row_norm %{{.*}} scale %{{.*}} : memref<1xf32> into %{{.*}} {epsilon = 9.99999997E-7 : f32, kind = "rms"} : memref<3x300xf32>, memref<3x300xf32>
// CHECK: kiln_kernel.row_norm %{{.*}} into %{{.*}} {epsilon = 9.99999997E-7 : f32, kind = "rms"} : memref<300xf32>, memref<300xf32>
func.func @rms_buffers(%x: memref<3x300xf32>, %s: memref<1xf32>, %o: memref<3x300xf32>, %v: memref<300xf32>, %w: memref<300xf32>) {
  kiln_kernel.row_norm %x scale %s : memref<1xf32> into %o {kind = "rms", epsilon = 1.0e-06 : f32} : memref<3x300xf32>, memref<3x300xf32>
  kiln_kernel.row_norm %v into %w {kind = "rms", epsilon = 1.0e-06 : f32} : memref<300xf32>, memref<300xf32>
  return
}
