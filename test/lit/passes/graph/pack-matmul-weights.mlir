// kiln-pack-matmul-weights: a weight used only as a matmul's rhs becomes column panels.
// RUN: kiln-opt %s -split-input-file -kiln-pack-matmul-weights | FileCheck %s

// CHECK: kiln.weight_layouts = [array<i64: 8, 128, 64>, array<i64>, array<i64: 4, 48, 16>]
// CHECK-LABEL: func @main
// CHECK-SAME: %[[W0:[a-z0-9]+]]: tensor<2x8x64xf32> {kiln.weight = 0 : i64}
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<8x128xf32> {kiln.weight = 1 : i64}
// CHECK-SAME: %[[W2:[a-z0-9]+]]: tensor<3x4x16xf32> {kiln.weight = 2 : i64}
// CHECK: graph.packed_matmul %{{.*}}, %[[W0]] : (tensor<?x?x8xf32>, tensor<2x8x64xf32>) -> tensor<?x?x128xf32>
// CHECK: graph.add %{{.*}}, %[[W1]]
// CHECK: graph.packed_matmul %{{.*}}, %[[W2]]
module attributes {kiln.weights = [dense<1.0> : tensor<8x128xf32>, dense<2.0> : tensor<8x128xf32>, dense<3.0> : tensor<4x48xf32>]} {
  func.func @main(%x: tensor<?x?x8xf32>, %w0: tensor<8x128xf32> {kiln.weight = 0 : i64},
                  %w1: tensor<8x128xf32> {kiln.weight = 1 : i64}, %w2: tensor<4x48xf32> {kiln.weight = 2 : i64},
                  %y: tensor<?x4xf32>) -> (tensor<?x8x128xf32>, tensor<?x48xf32>) {
    %0 = graph.matmul %x, %w0 : (tensor<?x?x8xf32>, tensor<8x128xf32>) -> tensor<?x?x128xf32>
    // w1 is also read elementwise: it stays as imported.
    %1 = graph.add %0, %w1 : (tensor<?x?x128xf32>, tensor<8x128xf32>) -> tensor<?x8x128xf32>
    %2 = graph.matmul %x, %w1 : (tensor<?x?x8xf32>, tensor<8x128xf32>) -> tensor<?x?x128xf32>
    %3 = graph.matmul %y, %w2 : (tensor<?x4xf32>, tensor<4x48xf32>) -> tensor<?x48xf32>
    return %1, %3 : tensor<?x8x128xf32>, tensor<?x48xf32>
  }
}
