// kiln-fuse-silu: x * Sigmoid(x) becomes graph.silu. SwiGLU (silu(gate) * up) stays a
// Mul of the silu: after lowering, elementwise fusion makes it one loop.
// RUN: kiln-opt %s -split-input-file -kiln-fuse-silu | FileCheck %s

// The Llama MLP export (test/models/gen_lm.py): Mul(gate, Sigmoid(gate)) * up.
// CHECK-LABEL: func @swiglu
// CHECK-SAME: (%[[G:.*]]: tensor<?x?x32xf32>, %[[U:.*]]: tensor<?x?x32xf32>)
// CHECK-NEXT: %[[S:.*]] = graph.silu %[[G]] : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[M:.*]] = graph.mul %[[S]], %[[U]]
// CHECK-NEXT: return %[[M]]
func.func @swiglu(%gate: tensor<?x?x32xf32>, %up: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %s = graph.sigmoid %gate : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %silu = graph.mul %gate, %s : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %y = graph.mul %silu, %up : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// Sigmoid on the left.
// CHECK-LABEL: func @sigmoid_first
// CHECK-NEXT: %[[S:.*]] = graph.silu %{{.*}} : (tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT: return %[[S]]
func.func @sigmoid_first(%x: tensor<4xf16>) -> tensor<4xf16> {
  %s = graph.sigmoid %x : (tensor<4xf16>) -> tensor<4xf16>
  %y = graph.mul %s, %x : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

// The sigmoid of another value (a gate): x * sigmoid(z) is not silu(x).
// CHECK-LABEL: func @other_input
// CHECK-NOT: graph.silu
func.func @other_input(%x: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %s = graph.sigmoid %z : (tensor<4xf32>) -> tensor<4xf32>
  %y = graph.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The sigmoid is also returned: it would be computed twice, so nothing fuses.
// CHECK-LABEL: func @sigmoid_also_read
// CHECK-NOT: graph.silu
func.func @sigmoid_also_read(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = graph.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %y = graph.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y, %s : tensor<4xf32>, tensor<4xf32>
}

// -----

// x * sigmoid(1.702 x) (the "quick GELU") is not silu(x).
// CHECK-LABEL: func @sigmoid_scaled
// CHECK-NOT: graph.silu
func.func @sigmoid_scaled(%x: tensor<4xf32>) -> tensor<4xf32> {
  %k = graph.constant {value = dense<1.702> : tensor<f32>} : () -> tensor<f32>
  %kx = graph.mul %x, %k : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %s = graph.sigmoid %kx : (tensor<4xf32>) -> tensor<4xf32>
  %y = graph.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
