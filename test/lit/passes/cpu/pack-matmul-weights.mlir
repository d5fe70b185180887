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

// -----

// A group-1 2-D convolution's constant weight [Cout, C, kh, kw] is stored as
// panels of its transpose [C*kh*kw, Cout] (layout [K, N, B, 1]); a grouped
// convolution's weight and a weight that is no constant stay as they are.
// CHECK: kiln.weight_layouts = [array<i64: 72, 96, 32, 1>, array<i64>]
// CHECK-LABEL: func @main
// CHECK-SAME: %[[W0:[a-z0-9]+]]: tensor<3x72x32xf32> {kiln.weight = 0 : i64}
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<32x4x3x3xf32> {kiln.weight = 1 : i64}
// CHECK: graph.packed_conv %{{.*}}, %[[W0]], %{{.*}} {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x8x16x16xf32>, tensor<3x72x32xf32>, tensor<96xf32>) -> tensor<?x96x8x8xf32>
// CHECK: graph.conv %{{.*}}, %[[W1]] {dilations = array<i64: 1, 1>, group = 2 : i64
// CHECK: graph.conv %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, pads
module attributes {kiln.weights = [dense<1.0> : tensor<96x8x3x3xf32>, dense<2.0> : tensor<32x4x3x3xf32>]} {
  func.func @main(%x: tensor<?x8x16x16xf32>, %w0: tensor<96x8x3x3xf32> {kiln.weight = 0 : i64},
                  %w1: tensor<32x4x3x3xf32> {kiln.weight = 1 : i64}, %b: tensor<96xf32>,
                  %w2: tensor<16x8x1x1xf32>) -> (tensor<?x96x8x8xf32>, tensor<?x32x16x16xf32>, tensor<?x16x16x16xf32>) {
    %0 = graph.conv %x, %w0, %b {group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
        : (tensor<?x8x16x16xf32>, tensor<96x8x3x3xf32>, tensor<96xf32>) -> tensor<?x96x8x8xf32>
    %1 = graph.conv %x, %w1 {group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
        : (tensor<?x8x16x16xf32>, tensor<32x4x3x3xf32>) -> tensor<?x32x16x16xf32>
    %2 = graph.conv %x, %w2 {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
        : (tensor<?x8x16x16xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x16x16xf32>
    return %0, %1, %2 : tensor<?x96x8x8xf32>, tensor<?x32x16x16xf32>, tensor<?x16x16x16xf32>
  }
}

// -----

// A group-1 channels-last conv's HWIO weight [kh, kw, C, Cout] is [K, Cout]
// row-major already: stored as its panels (layout [K, Cout, B]; 24 output
// channels take 8-column panels) and the conv becomes a channels-last
// graph.packed_conv; a depthwise nhwc_conv's weight stays as it is.
// CHECK: kiln.weight_layouts = [array<i64: 36, 24, 8>, array<i64: 18, 64, 64>, array<i64>]
// CHECK-LABEL: func @main
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<3x36x8xf32> {kiln.weight = 0 : i64}
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<1x18x64xf32> {kiln.weight = 1 : i64}
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<3x3x1x64xf32> {kiln.weight = 2 : i64}
// CHECK: graph.packed_conv {{.*}}channels_last{{.*}} : (tensor<1x8x8x4xf32>, tensor<3x36x8xf32>) -> tensor<1x8x8x24xf32>
// CHECK: graph.packed_conv {{.*}}channels_last{{.*}} : (tensor<1x8x8x2xf32>, tensor<1x18x64xf32>) -> tensor<1x8x8x64xf32>
// CHECK: graph.nhwc_conv
module attributes {kiln.weights = [dense<1.0> : tensor<3x3x4x24xf32>, dense<2.0> : tensor<3x3x2x64xf32>, dense<3.0> : tensor<3x3x1x64xf32>]} {
  func.func @main(%x: tensor<1x8x8x4xf32>, %z: tensor<1x8x8x2xf32>, %w0: tensor<3x3x4x24xf32> {kiln.weight = 0 : i64},
                  %w1: tensor<3x3x2x64xf32> {kiln.weight = 1 : i64}, %w2: tensor<3x3x1x64xf32> {kiln.weight = 2 : i64})
      -> (tensor<1x8x8x24xf32>, tensor<1x8x8x64xf32>) {
    %0 = graph.nhwc_conv %x, %w0 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x8x4xf32>, tensor<3x3x4x24xf32>) -> tensor<1x8x8x24xf32>
    %1 = graph.nhwc_conv %z, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x8x2xf32>, tensor<3x3x2x64xf32>) -> tensor<1x8x8x64xf32>
    %2 = graph.nhwc_conv %1, %w2 {dilations = array<i64: 1, 1>, group = 64 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x8x64xf32>, tensor<3x3x1x64xf32>) -> tensor<1x8x8x64xf32>
    return %0, %2 : tensor<1x8x8x24xf32>, tensor<1x8x8x64xf32>
  }
}
