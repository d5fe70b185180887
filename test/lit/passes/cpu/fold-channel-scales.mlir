// kiln-fold-channel-scales: x * s (one scale per channel, batch 1) into a 1x1 convolution
// becomes the convolution of x by its weight rows times s, where the weight is the smaller.
// RUN: kiln-opt %s -split-input-file -kiln-fold-channel-scales | FileCheck %s

// Squeeze-and-excitation into the projection: a 16x16x32 map (8192 elements) against a
// [1, 32, 16] weight (512): the weight is scaled, the map read as it is.
// CHECK-LABEL: func @fold
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x16x16x32xf32>, %[[S:[^:]*]]: tensor<1x1x1x32xf32>, %[[W:[^:]*]]: tensor<1x32x16xf32>
// CHECK: %[[SHAPE:.*]] = graph.constant {value = dense<[1, 32, 1]> : tensor<3xi64>}
// CHECK: %[[ROWS:.*]] = graph.reshape %[[S]], %[[SHAPE]] : (tensor<1x1x1x32xf32>, tensor<3xi64>) -> tensor<1x32x1xf32>
// CHECK: %[[SCALED:.*]] = graph.mul %[[W]], %[[ROWS]] : (tensor<1x32x16xf32>, tensor<1x32x1xf32>) -> tensor<1x32x16xf32>
// CHECK: graph.packed_conv %[[X]], %[[SCALED]], %{{.*}} {channels_last
// CHECK-NOT: graph.mul
func.func @fold(%x: tensor<1x16x16x32xf32>, %s: tensor<1x1x1x32xf32>, %w: tensor<1x32x16xf32>, %b: tensor<16xf32>) -> tensor<1x16x16x16xf32> {
  %0 = graph.mul %s, %x : (tensor<1x1x1x32xf32>, tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  %1 = graph.packed_conv %0, %w, %b {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x16x32xf32>, tensor<1x32x16xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32>
  return %1 : tensor<1x16x16x16xf32>
}

// -----

// Left alone: a 2x2 map (128 elements) against a [2, 32, 64] weight (4096); a batch of 2
// (a scale per sample); a product read twice; a 3x3 convolution.
// CHECK-LABEL: func @refused
// CHECK-COUNT-4: graph.mul
// CHECK-NOT: graph.reshape
func.func @refused(%x: tensor<1x2x2x32xf32>, %s: tensor<1x1x1x32xf32>, %w: tensor<2x32x64xf32>,
                   %xb: tensor<2x16x16x32xf32>, %sb: tensor<2x1x1x32xf32>, %w16: tensor<1x32x16xf32>,
                   %x2: tensor<1x16x16x32xf32>, %w3: tensor<1x288x16xf32>)
    -> (tensor<1x2x2x128xf32>, tensor<2x16x16x16xf32>, tensor<1x16x16x16xf32>, tensor<1x16x16x32xf32>, tensor<1x16x16x16xf32>) {
  %0 = graph.mul %x, %s : (tensor<1x2x2x32xf32>, tensor<1x1x1x32xf32>) -> tensor<1x2x2x32xf32>
  %1 = graph.packed_conv %0, %w {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x2x32xf32>, tensor<2x32x64xf32>) -> tensor<1x2x2x128xf32>
  %2 = graph.mul %xb, %sb : (tensor<2x16x16x32xf32>, tensor<2x1x1x32xf32>) -> tensor<2x16x16x32xf32>
  %3 = graph.packed_conv %2, %w16 {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x16x16x32xf32>, tensor<1x32x16xf32>) -> tensor<2x16x16x16xf32>
  %4 = graph.mul %x2, %s : (tensor<1x16x16x32xf32>, tensor<1x1x1x32xf32>) -> tensor<1x16x16x32xf32>
  %5 = graph.packed_conv %4, %w16 {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x16x32xf32>, tensor<1x32x16xf32>) -> tensor<1x16x16x16xf32>
  %6 = graph.mul %x2, %s : (tensor<1x16x16x32xf32>, tensor<1x1x1x32xf32>) -> tensor<1x16x16x32xf32>
  %7 = graph.packed_conv %6, %w3 {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x16x32xf32>, tensor<1x288x16xf32>) -> tensor<1x16x16x16xf32>
  return %1, %3, %5, %4, %7 : tensor<1x2x2x128xf32>, tensor<2x16x16x16xf32>, tensor<1x16x16x16xf32>, tensor<1x16x16x32xf32>, tensor<1x16x16x16xf32>
}
