// kiln-attention-operand-views: the heads' transposes around kiln_kernel.attention become its
// permutations (the op reads the transposes' inputs and writes the merge transpose's destination),
// and a reshape by a constant shape that splits the last dim of a slice becomes an expand_shape;
// bufferization then passes memref.transpose views and no copy is left (BUF).
// RUN: kiln-opt %s -split-input-file -kiln-attention-operand-views -cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-attention-operand-views -cse -canonicalize -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -canonicalize | FileCheck %s --check-prefix=BUF

// CHECK-LABEL: func @gpt_heads
// CHECK-SAME: %[[QKV:[a-z0-9]+]]: tensor<1x128x768xf32>
// CHECK-DAG: %[[QS:.*]] = tensor.extract_slice %[[QKV]][0, 0, 0] [1, 128, 256]
// CHECK-DAG: %[[KS:.*]] = tensor.extract_slice %[[QKV]][0, 0, 256] [1, 128, 256]
// CHECK-DAG: %[[Q:.*]] = tensor.expand_shape %[[QS]] {{\[\[}}0], [1], [2, 3]] output_shape [1, 128, 4, 64]
// CHECK-DAG: %[[K:.*]] = tensor.expand_shape %[[KS]] {{\[\[}}0], [1], [2, 3]] output_shape [1, 128, 4, 64]
// CHECK-NOT: linalg.transpose
// CHECK: %[[O:.*]] = kiln_kernel.attention %[[Q]], %[[K]], %[[K]] into %{{.*}} {init_perm = array<i64: 0, 2, 1, 3>, key_perm = array<i64: 0, 2, 1, 3>, query_perm = array<i64: 0, 2, 1, 3>, scale = 1.250000e-01 : f32, value_perm = array<i64: 0, 2, 1, 3>} : tensor<1x128x4x64xf32>, tensor<1x128x4x64xf32>, tensor<1x128x4x64xf32>, tensor<1x128x4x64xf32> -> tensor<1x128x4x64xf32>
// CHECK-NOT: linalg.transpose
// CHECK: return %[[O]]
// BUF-LABEL: func @gpt_heads
// BUF-SAME: %[[QKV:[a-z0-9]+]]: memref<1x128x768xf32
// BUF-NOT: memref.copy
// BUF-NOT: linalg.transpose
// BUF: %[[OUT:.*]] = memref.alloc() {{.*}} : memref<1x128x4x64xf32>
// BUF: %[[QT:.*]] = memref.transpose %{{.*}} (d0, d1, d2, d3) -> (d0, d2, d1, d3) : memref<1x128x4x64xf32, strided<[98304, 768, 64, 1]>> to memref<1x4x128x64xf32, strided<[98304, 64, 768, 1]>>
// BUF: memref.transpose {{.*}} to memref<1x4x128x64xf32, strided<[98304, 64, 768, 1], offset: 256>>
// BUF: %[[OT:.*]] = memref.transpose %[[OUT]] (d0, d1, d2, d3) -> (d0, d2, d1, d3) : memref<1x128x4x64xf32> to memref<1x4x128x64xf32, strided<[32768, 64, 256, 1]>>
// BUF: kiln_kernel.attention %[[QT]], %{{.*}}, %{{.*}} into %[[OT]] {scale = 1.250000e-01 : f32}
// BUF-NOT: memref.copy
// BUF: return %[[OUT]]
func.func @gpt_heads(%qkv: tensor<1x128x768xf32>) -> tensor<1x128x4x64xf32> {
  %shape = arith.constant dense<[1, 128, 4, 64]> : tensor<4xi64>
  %qs = tensor.extract_slice %qkv[0, 0, 0] [1, 128, 256] [1, 1, 1] : tensor<1x128x768xf32> to tensor<1x128x256xf32>
  %ks = tensor.extract_slice %qkv[0, 0, 256] [1, 128, 256] [1, 1, 1] : tensor<1x128x768xf32> to tensor<1x128x256xf32>
  %q4 = tensor.reshape %qs(%shape) : (tensor<1x128x256xf32>, tensor<4xi64>) -> tensor<1x128x4x64xf32>
  %k4 = tensor.reshape %ks(%shape) : (tensor<1x128x256xf32>, tensor<4xi64>) -> tensor<1x128x4x64xf32>
  %e = tensor.empty() : tensor<1x4x128x64xf32>
  %q = linalg.transpose ins(%q4 : tensor<1x128x4x64xf32>) outs(%e : tensor<1x4x128x64xf32>) permutation = [0, 2, 1, 3]
  %k = linalg.transpose ins(%k4 : tensor<1x128x4x64xf32>) outs(%e : tensor<1x4x128x64xf32>) permutation = [0, 2, 1, 3]
  %o = kiln_kernel.attention %q, %k, %k into %e {scale = 0.125 : f32}
      : tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32> -> tensor<1x4x128x64xf32>
  %e2 = tensor.empty() : tensor<1x128x4x64xf32>
  %m = linalg.transpose ins(%o : tensor<1x4x128x64xf32>) outs(%e2 : tensor<1x128x4x64xf32>) permutation = [0, 2, 1, 3]
  return %m : tensor<1x128x4x64xf32>
}

// -----

// A reshape whose shape is not a constant stays (a decode step's dynamic rows), but its
// transpose still folds; an output read by something else than one transpose is written as is.
// CHECK-LABEL: func @dynamic
// CHECK: %[[R:.*]] = tensor.reshape
// CHECK-NOT: linalg.transpose
// CHECK: %[[O:.*]] = kiln_kernel.attention %[[R]], %{{.*}}, %{{.*}} into %{{.*}} {query_perm = array<i64: 0, 2, 1, 3>}
// CHECK: linalg.transpose ins(%[[O]]
// CHECK: return
func.func @dynamic(%x: tensor<?x?x64xf32>, %shape: tensor<4xi64>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>,
                   %e: tensor<?x4x?x16xf32>, %e2: tensor<?x?x4x16xf32>) -> (tensor<?x4x?x16xf32>, tensor<?x?x4x16xf32>) {
  %r = tensor.reshape %x(%shape) : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %q = linalg.transpose ins(%r : tensor<?x?x4x16xf32>) outs(%e : tensor<?x4x?x16xf32>) permutation = [0, 2, 1, 3]
  %o = kiln_kernel.attention %q, %k, %v into %e
      : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  %m = linalg.transpose ins(%o : tensor<?x4x?x16xf32>) outs(%e2 : tensor<?x?x4x16xf32>) permutation = [0, 2, 1, 3]
  return %o, %m : tensor<?x4x?x16xf32>, tensor<?x?x4x16xf32>
}

// -----

// A transpose that moves the last dim is left alone.
// CHECK-LABEL: func @last_dim_moves
// CHECK: linalg.transpose
// CHECK: kiln_kernel.attention %{{.*}} into %{{.*}} :
func.func @last_dim_moves(%x: tensor<2x16x8xf32>, %k: tensor<2x8x16xf32>, %e: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %q = linalg.transpose ins(%x : tensor<2x16x8xf32>) outs(%e : tensor<2x8x16xf32>) permutation = [0, 2, 1]
  %o = kiln_kernel.attention %q, %k, %k into %e : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}
