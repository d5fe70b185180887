// kiln-convert-graph-to-linalg for the ops graph fusions form: rms_norm is one reduction
// and one elementwise pass; gelu and silu are single elementwise bodies.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s

// CHECK-LABEL: func @rms_norm
// The sum of squares per row (the only reduction):
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
// 1 / sqrt(sum / n + eps) per row:
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.divf
// CHECK: math.rsqrt
// x * rstd * scale:
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @rms_norm(%x: tensor<?x?x64xf32>, %s: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %0 = graph.rms_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-06 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

// CHECK-LABEL: func @gelu_erf
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: math.erf
// CHECK: arith.addf
// CHECK-NOT: math.tanh
// CHECK: return
func.func @gelu_erf(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %0 = graph.gelu %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

// CHECK-LABEL: func @gelu_tanh
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-NOT: math.erf
// CHECK: return
func.func @gelu_tanh(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %0 = graph.gelu %x {approximate = "tanh"} : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

// x / (1 + exp(-x)).
// CHECK-LABEL: func @silu
// CHECK: linalg.generic
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: arith.divf
// CHECK: return
func.func @silu(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %0 = graph.silu %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}
