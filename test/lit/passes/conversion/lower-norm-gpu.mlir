// kiln-convert-graph-to-linalg{gpu-norms=true}: graph.layer_norm and graph.rms_norm over the last
// axis of static length, in f32, become kiln_kernel.row_norm into an empty tensor of the input's
// shape (scale and bias of the row's elements, or of one element, viewed as rank 1). A norm over
// several axes, a dynamic row, f16, a scale of another shape or a used mean keep the generic
// lowering (its reductions). Without the option every norm is lowered generically.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg="gpu-norms=true" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s --check-prefix=CPU

// CHECK-LABEL: func @layer
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x64xf32>, %[[S:[a-z0-9]+]]: tensor<64xf32>, %[[B:[a-z0-9]+]]: tensor<64xf32>
// CHECK-DAG: %[[D0:.*]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[D1:.*]] = tensor.dim %[[X]], %c1
// CHECK: %[[E:.*]] = tensor.empty(%[[D0]], %[[D1]]) : tensor<?x?x64xf32>
// CHECK: %[[R:.*]] = kiln_kernel.row_norm %[[X]] scale %[[S]] : tensor<64xf32> bias %[[B]] : tensor<64xf32> into %[[E]] {epsilon = 9.99999974E-6 : f32, kind = "layer"}
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
// CPU-LABEL: func @layer
// CPU-NOT: kiln_kernel
// CPU: linalg.generic
func.func @layer(%x: tensor<?x?x64xf32>, %s: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %y, %m, %r = graph.layer_norm %x, %s, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>)
  return %y : tensor<?x?x64xf32>
}

// -----

// A one-element scale of rank 2 becomes a rank-1 view; RMSNormalization has no bias.
// CHECK-LABEL: func @rms_one
// CHECK: %[[V:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<1x1xf32> into tensor<1xf32>
// CHECK: kiln_kernel.row_norm %{{.*}} scale %[[V]] : tensor<1xf32> into %{{.*}} {epsilon = 9.99999997E-7 : f32, kind = "rms"} : tensor<3x300xf32>, tensor<3x300xf32>
func.func @rms_one(%x: tensor<3x300xf32>, %s: tensor<1x1xf32>) -> tensor<3x300xf32> {
  %y = graph.rms_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-06 : f32} : (tensor<3x300xf32>, tensor<1x1xf32>) -> tensor<3x300xf32>
  return %y : tensor<3x300xf32>
}

// -----

// CHECK-LABEL: func @two_axes
// CHECK-NOT: kiln_kernel
// CHECK: linalg.generic
func.func @two_axes(%x: tensor<2x3x300xf32>, %s: tensor<3x300xf32>) -> tensor<2x3x300xf32> {
  %y, %m, %r = graph.layer_norm %x, %s {axis = -2 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x3x300xf32>, tensor<3x300xf32>) -> (tensor<2x3x300xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  return %y : tensor<2x3x300xf32>
}

// -----

// CHECK-LABEL: func @dynamic_row
// CHECK-NOT: kiln_kernel
// CHECK: linalg.generic
func.func @dynamic_row(%x: tensor<4x?xf32>, %s: tensor<?xf32>) -> tensor<4x?xf32> {
  %y = graph.rms_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-06 : f32} : (tensor<4x?xf32>, tensor<?xf32>) -> tensor<4x?xf32>
  return %y : tensor<4x?xf32>
}

// -----

// CHECK-LABEL: func @half
// CHECK-NOT: kiln_kernel
// CHECK: linalg.generic
func.func @half(%x: tensor<4x64xf16>, %s: tensor<64xf16>) -> tensor<4x64xf16> {
  %y = graph.rms_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-06 : f32} : (tensor<4x64xf16>, tensor<64xf16>) -> tensor<4x64xf16>
  return %y : tensor<4x64xf16>
}

// -----

// A scale broadcast along the rows ([4, 1]) is not one scale per column.
// CHECK-LABEL: func @scale_per_row
// CHECK-NOT: kiln_kernel
// CHECK: linalg.generic
func.func @scale_per_row(%x: tensor<4x64xf32>, %s: tensor<4x1xf32>) -> tensor<4x64xf32> {
  %y = graph.rms_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-06 : f32} : (tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// The kernel keeps the mean in shared memory: a used mean keeps the reductions.
// CHECK-LABEL: func @mean_used
// CHECK-NOT: kiln_kernel
// CHECK: linalg.generic
func.func @mean_used(%x: tensor<4x64xf32>, %s: tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x1xf32>) {
  %y, %m, %r = graph.layer_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<4x64xf32>, tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %y, %m : tensor<4x64xf32>, tensor<4x1xf32>
}

// -----

// Softmax and LogSoftmax over the last axis; over another axis, the reductions.
// CHECK-LABEL: func @softmaxes
// CHECK: kiln_kernel.row_norm %{{.*}} into %{{.*}} {epsilon = 0.000000e+00 : f32, kind = "softmax"} : tensor<?x4x1000xf32>, tensor<?x4x1000xf32>
// CHECK: kiln_kernel.row_norm %{{.*}} into %{{.*}} {epsilon = 0.000000e+00 : f32, kind = "log_softmax"}
// CHECK-NOT: kiln_kernel
// CHECK: linalg.generic
func.func @softmaxes(%x: tensor<?x4x1000xf32>) -> (tensor<?x4x1000xf32>, tensor<?x4x1000xf32>, tensor<?x4x1000xf32>) {
  %a = graph.softmax %x {axis = -1 : i64} : (tensor<?x4x1000xf32>) -> tensor<?x4x1000xf32>
  %b = graph.log_softmax %x {axis = 2 : i64} : (tensor<?x4x1000xf32>) -> tensor<?x4x1000xf32>
  %c = graph.softmax %x {axis = 1 : i64} : (tensor<?x4x1000xf32>) -> tensor<?x4x1000xf32>
  return %a, %b, %c : tensor<?x4x1000xf32>, tensor<?x4x1000xf32>, tensor<?x4x1000xf32>
}
