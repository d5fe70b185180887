// kiln-constant-gemm-to-matmul: a Gemm with a constant B becomes a product with a [K, N] constant (transposed at
// compile time for transB) plus its bias, which the packed-panel passes then take.
// RUN: kiln-opt %s -split-input-file -kiln-constant-gemm-to-matmul | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-constant-gemm-to-matmul -kiln-pad-product-columns | FileCheck %s --check-prefix=PADDED

// transB: the [N, K] = [16, 2] weight (row n is [2n, 2n + 1]) is stored as
// its transpose [[0, 2, 4, ..], [1, 3, 5, ..]].
// CHECK-LABEL: func @linear
// CHECK: %[[W:.*]] = graph.constant {value = dense<{{\[}}[0.000000e+00, 2.000000e+00, 4.000000e+00, {{.*}}], [1.000000e+00, 3.000000e+00, 5.000000e+00, {{.*}}]]> : tensor<2x16xf32>}
// CHECK: %[[P:.*]] = graph.matmul %arg0, %[[W]] : (tensor<?x2xf32>, tensor<2x16xf32>) -> tensor<?x16xf32>
// CHECK: %[[Y:.*]] = graph.add %[[P]], %arg1 : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
// CHECK-NOT: graph.gemm
// CHECK: return %[[Y]]
func.func @linear(%x: tensor<?x2xf32>, %bias: tensor<16xf32>) -> tensor<?x16xf32> {
  %w = graph.constant {value = dense<[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0], [8.0, 9.0], [10.0, 11.0], [12.0, 13.0], [14.0, 15.0], [16.0, 17.0], [18.0, 19.0], [20.0, 21.0], [22.0, 23.0], [24.0, 25.0], [26.0, 27.0], [28.0, 29.0], [30.0, 31.0]]> : tensor<16x2xf32>} : () -> tensor<16x2xf32>
  %0 = graph.gemm %x, %w, %bias {transB = 1 : i64} : (tensor<?x2xf32>, tensor<16x2xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// A classifier's 1000 columns: after kiln-pad-product-columns, 1024 columns (1008 would be an
// odd count of 16-column panels: 64-column ones instead) sliced back to 1000, so the weight packs.
// PADDED-LABEL: func @classifier
// PADDED: graph.matmul {{.*}} -> tensor<1x1024xf32>
// PADDED: graph.slice {{.*}} -> tensor<1x1000xf32>
// PADDED: graph.add
func.func @classifier(%x: tensor<1x32xf32>, %bias: tensor<1000xf32>) -> tensor<1x1000xf32> {
  %w = graph.constant {value = dense<0.5> : tensor<1000x32xf32>} : () -> tensor<1000x32xf32>
  %0 = graph.gemm %x, %w, %bias {transB = 1 : i64} : (tensor<1x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>) -> tensor<1x1000xf32>
  return %0 : tensor<1x1000xf32>
}

// -----

// Without transB or C: the weight as it is, no add.
// CHECK-LABEL: func @plain
// CHECK: %[[P:.*]] = graph.matmul %arg0, %{{.*}} : (tensor<4x2xf32>, tensor<2x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: return %[[P]]
func.func @plain(%x: tensor<4x2xf32>) -> tensor<4x16xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<2x16xf32>} : () -> tensor<2x16xf32>
  %0 = graph.gemm %x, %w : (tensor<4x2xf32>, tensor<2x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Left alone: alpha, beta, transA, a weight read twice, a weight that is not
// a constant, and one of fewer than 16 columns.
// CHECK-LABEL: func @left_alone
// CHECK-COUNT-7: graph.gemm
// CHECK-NOT: graph.matmul
func.func @left_alone(%x: tensor<4x2xf32>, %v: tensor<16x2xf32>, %c: tensor<16xf32>, %c3: tensor<3xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x3xf32>) {
  %w = graph.constant {value = dense<1.0> : tensor<16x2xf32>} : () -> tensor<16x2xf32>
  %w2 = graph.constant {value = dense<1.0> : tensor<16x2xf32>} : () -> tensor<16x2xf32>
  %w3 = graph.constant {value = dense<1.0> : tensor<16x2xf32>} : () -> tensor<16x2xf32>
  %w5 = graph.constant {value = dense<1.0> : tensor<16x2xf32>} : () -> tensor<16x2xf32>
  %w6 = graph.constant {value = dense<1.0> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %xt = graph.constant {value = dense<1.0> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
  %0 = graph.gemm %x, %w, %c {transB = 1 : i64, alpha = 2.0 : f32} : (tensor<4x2xf32>, tensor<16x2xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = graph.gemm %x, %w2, %c {transB = 1 : i64, beta = 0.5 : f32} : (tensor<4x2xf32>, tensor<16x2xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = graph.gemm %x, %w3, %c {transB = 1 : i64} : (tensor<4x2xf32>, tensor<16x2xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %3 = graph.gemm %x, %w3, %c {transB = 1 : i64} : (tensor<4x2xf32>, tensor<16x2xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %4 = graph.gemm %x, %v, %c {transB = 1 : i64} : (tensor<4x2xf32>, tensor<16x2xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %5 = graph.gemm %xt, %w5, %c {transA = 1 : i64, transB = 1 : i64} : (tensor<2x4xf32>, tensor<16x2xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %6 = graph.gemm %x, %w6, %c3 {transB = 1 : i64} : (tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x3xf32>
}
