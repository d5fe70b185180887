// kiln_kernel.attention round-trips on tensors (returning the written init) and on buffers (no
// result), with and without a mask; one-shot bufferization turns the first into the second,
// writing into a fresh buffer without copying or reading the empty init.
// RUN: kiln-opt %s -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file -one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// CHECK-LABEL: func @on_tensors
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<1x4x?x16xf32>, %[[K:[a-z0-9]+]]: tensor<1x2x?x16xf32>, %[[V:[a-z0-9]+]]: tensor<1x2x?x8xf32>, %[[M:[a-z0-9]+]]: tensor<1x1x?x?xf32>
// CHECK: %[[E:.*]] = tensor.empty
// CHECK: %[[R:.*]] = kiln_kernel.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] : tensor<1x1x?x?xf32> into %[[E]] {scale = 2.500000e-01 : f32} : tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32> -> tensor<1x4x?x8xf32>
// CHECK: return %[[R]]
// BUF-LABEL: func @on_tensors
// BUF-SAME: %[[Q:[a-z0-9]+]]: memref<1x4x?x16xf32{{.*}}>, %[[K:[a-z0-9]+]]: memref<1x2x?x16xf32{{.*}}>, %[[V:[a-z0-9]+]]: memref<1x2x?x8xf32{{.*}}>, %[[M:[a-z0-9]+]]: memref<1x1x?x?xf32{{.*}}>
// BUF: %[[OUT:.*]] = memref.alloc(%{{.*}}) {{.*}}: memref<1x4x?x8xf32>
// BUF-NOT: memref.copy
// BUF: kiln_kernel.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] : memref<1x1x?x?xf32{{.*}}> into %[[OUT]] {scale = 2.500000e-01 : f32} : memref<1x4x?x16xf32{{.*}}>, memref<1x2x?x16xf32{{.*}}>, memref<1x2x?x8xf32{{.*}}>, memref<1x4x?x8xf32>
// BUF-NOT: memref.copy
// BUF: return %[[OUT]]
func.func @on_tensors(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x8xf32>,
                      %m: tensor<1x1x?x?xf32>) -> tensor<1x4x?x8xf32> {
  %c2 = arith.constant 2 : index
  %sq = tensor.dim %q, %c2 : tensor<1x4x?x16xf32>
  %e = tensor.empty(%sq) : tensor<1x4x?x8xf32>
  %r = kiln_kernel.attention %q, %k, %v mask %m : tensor<1x1x?x?xf32> into %e {scale = 0.25 : f32}
      : tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x8xf32> -> tensor<1x4x?x8xf32>
  return %r : tensor<1x4x?x8xf32>
}

// -----

// CHECK-LABEL: func @on_buffers
// CHECK: kiln_kernel.attention %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}} : memref<4x16xf16>, memref<9x16xf16>, memref<9x8xf16>, memref<4x8xf16>
// CHECK-NOT: ->
func.func @on_buffers(%q: memref<4x16xf16>, %k: memref<9x16xf16>, %v: memref<9x8xf16>, %o: memref<4x8xf16>) {
  kiln_kernel.attention %q, %k, %v into %o : memref<4x16xf16>, memref<9x16xf16>, memref<9x8xf16>, memref<4x8xf16>
  return
}

// -----

// Paged: key and value are pools of blocks read through a block table for a key count; the table
// is bufferized as a read operand, the count passes through.
// CHECK-LABEL: func @paged
// CHECK: kiln_kernel.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} : tensor<?x1x1x?xf32> paged %{{.*}} : tensor<?x?xi64> keys %{{.*}} into %{{.*}} {scale = 2.500000e-01 : f32} : tensor<?x4x1x16xf32>, tensor<?x2x16x16xf32>, tensor<?x2x16x8xf32>, tensor<?x4x1x8xf32> -> tensor<?x4x1x8xf32>
// BUF-LABEL: func @paged
// BUF-SAME: %[[T:[a-z0-9]+]]: memref<?x?xi64{{.*}}>, %[[N:[a-z0-9]+]]: index
// BUF-NOT: memref.copy
// BUF: kiln_kernel.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} : memref<?x1x1x?xf32{{.*}}> paged %[[T]] : memref<?x?xi64{{.*}}> keys %[[N]] into
func.func @paged(%q: tensor<?x4x1x16xf32>, %kp: tensor<?x2x16x16xf32>, %vp: tensor<?x2x16x8xf32>, %m: tensor<?x1x1x?xf32>,
                 %table: tensor<?x?xi64>, %n: index) -> tensor<?x4x1x8xf32> {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x4x1x16xf32>
  %e = tensor.empty(%b) : tensor<?x4x1x8xf32>
  %r = kiln_kernel.attention %q, %kp, %vp mask %m : tensor<?x1x1x?xf32> paged %table : tensor<?x?xi64> keys %n into %e {scale = 0.25 : f32}
      : tensor<?x4x1x16xf32>, tensor<?x2x16x16xf32>, tensor<?x2x16x8xf32>, tensor<?x4x1x8xf32> -> tensor<?x4x1x8xf32>
  return %r : tensor<?x4x1x8xf32>
}
