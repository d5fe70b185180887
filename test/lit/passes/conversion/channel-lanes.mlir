// Channels-last depthwise convolutions and pooling take whole registers of
// channels: with vector-bits=512, 16 floats where 16 divide the channels,
// else 8 (24 channels); with the default 256, always 8.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg=vector-bits=512 | FileCheck %s --check-prefix=W512
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s --check-prefix=W256

// W512-LABEL: func @depthwise_32
// W512: scf.for {{.*}} step %c16
// W512: scf.for {{.*}} to %c5{{(_[0-9]+)?}} step %c4
// W512-COUNT-4: vector.fma {{.*}} : vector<16xf32>
// W256-LABEL: func @depthwise_32
// W256: scf.for {{.*}} step %c8
// W256-NOT: vector<16xf32>
// W256-COUNT-4: vector.fma {{.*}} : vector<8xf32>
func.func @depthwise_32(%x: tensor<1x8x8x32xf32>, %w: tensor<3x3x1x32xf32>, %b: tensor<32xf32>) -> tensor<1x8x8x32xf32> {
  %0 = graph.nhwc_conv %x, %w, %b {group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x8x8x32xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<1x8x8x32xf32>
  return %0 : tensor<1x8x8x32xf32>
}

// -----

// W512-LABEL: func @depthwise_24
// W512: scf.for {{.*}} step %c8
// W512-NOT: vector<16xf32>
// W512: vector.fma {{.*}} : vector<8xf32>
func.func @depthwise_24(%x: tensor<1x8x8x24xf32>, %w: tensor<3x3x1x24xf32>, %b: tensor<24xf32>) -> tensor<1x8x8x24xf32> {
  %0 = graph.nhwc_conv %x, %w, %b {group = 24 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x8x8x24xf32>, tensor<3x3x1x24xf32>, tensor<24xf32>) -> tensor<1x8x8x24xf32>
  return %0 : tensor<1x8x8x24xf32>
}

// -----

// W512-LABEL: func @max_pool_32
// W512-COUNT-9: arith.cmpf ogt, {{.*}} : vector<16xf32>
func.func @max_pool_32(%x: tensor<1x8x8x32xf32>) -> tensor<1x4x4x32xf32> {
  %0 = graph.nhwc_pool %x {kind = "max", kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<1x8x8x32xf32>) -> tensor<1x4x4x32xf32>
  return %0 : tensor<1x4x4x32xf32>
}

// -----

// An input larger than L2 (112x112x96: 5 MB) is read in address order: the
// positions' loop outside the channel blocks (for the depthwise convolution,
// which reads its input unpadded, the blocks of positions [1, 53) that need
// no column checks). The 8x8 maps above
// keep the channel blocks outside (their taps stay in registers).
// W512-LABEL: func @depthwise_streamed
// W512: scf.for {{.*}} to %c53{{(_[0-9]+)?}} step %c4
// W512: scf.for {{.*}} to %c96{{(_[0-9]+)?}} step %c16
// W512-COUNT-36: vector.fma {{.*}} : vector<16xf32>
// W512-LABEL: func @max_pool_streamed
// W512: scf.for {{.*}} to %c56{{(_[0-9]+)?}} step %c4
// W512: scf.for {{.*}} to %c64{{(_[0-9]+)?}} step %c16
func.func @depthwise_streamed(%x: tensor<1x112x112x96xf32>, %w: tensor<3x3x1x96xf32>, %b: tensor<96xf32>) -> tensor<1x56x56x96xf32> {
  %0 = graph.nhwc_conv %x, %w, %b {group = 96 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<1x112x112x96xf32>, tensor<3x3x1x96xf32>, tensor<96xf32>) -> tensor<1x56x56x96xf32>
  return %0 : tensor<1x56x56x96xf32>
}
func.func @max_pool_streamed(%x: tensor<1x112x112x64xf32>) -> tensor<1x56x56x64xf32> {
  %0 = graph.nhwc_pool %x {kind = "max", kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<1x112x112x64xf32>) -> tensor<1x56x56x64xf32>
  return %0 : tensor<1x56x56x64xf32>
}
