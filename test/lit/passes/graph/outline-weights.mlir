// kiln-outline-weights: large constants become @main arguments listed in kiln.weights.
// RUN: kiln-opt %s -kiln-outline-weights=min-elements=2 | FileCheck %s

// CHECK: module attributes {{{.*}}kiln.weights = [dense<{{.*}}> : tensor<4xf32>]
// CHECK-LABEL: func @main
// CHECK-SAME: %[[X:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4xf32> {kiln.weight = 0 : i64}
// CHECK: graph.constant {{.*}}tensor<2xf32>
// CHECK: graph.add %[[X]], %[[W]]
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2xf32>) {
  %w = graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %small = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = graph.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %small : tensor<4xf32>, tensor<2xf32>
}
