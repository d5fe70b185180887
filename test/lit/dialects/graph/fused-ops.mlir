// Round-tripping and shape inference of the ops that graph fusions form: rms_norm, gelu, silu.
// RUN: kiln-opt %s -split-input-file | FileCheck %s

// CHECK-LABEL: func @rms_norm
// CHECK: graph.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK: graph.rms_norm %{{.*}} {axis = 1 : i64} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
func.func @rms_norm(%x: tensor<?x?x64xf32>, %s: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %0 = graph.rms_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-06 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %1 = graph.rms_norm %x {axis = 1 : i64} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %0, %1 : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// CHECK-LABEL: func @gelu
// CHECK: graph.gelu %{{.*}} : (tensor<?x64xf32>) -> tensor<?x64xf32>
// CHECK: graph.gelu %{{.*}} {approximate = "tanh"} : (tensor<?x64xf32>) -> tensor<?x64xf32>
func.func @gelu(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %0 = graph.gelu %x {approximate = "none"} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %1 = graph.gelu %x {approximate = "tanh"} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  return %0, %1 : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func @silu
// CHECK: graph.silu %{{.*}} : (tensor<2x?xf16>) -> tensor<2x?xf16>
func.func @silu(%x: tensor<2x?xf16>) -> tensor<2x?xf16> {
  %0 = graph.silu %x : (tensor<2x?xf16>) -> tensor<2x?xf16>
  return %0 : tensor<2x?xf16>
}
