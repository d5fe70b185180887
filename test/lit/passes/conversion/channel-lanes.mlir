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

// -----

// Over a 7x7 map (stride 1, channels a multiple of 64, at least 4 groups) the work items are
// 64-channel groups of one output row, groups outermost: two threads split the channels as they
// split the 64-column panels of the product before, instead of the 7 rows 4:3.
// W512-LABEL: func @depthwise_groups
// W512: scf.forall (%[[N:[^,]*]], %[[G:[^,]*]], %[[R:[^)]*]]) in (1, 4, 7)
// W512: %[[BASE:.*]] = arith.muli %[[G]], %c64
// W512: tensor.extract_slice %{{.*}}[%[[N]], %[[R]], 0, %[[BASE]]] [1, 1, 7, 64]
// W512: tensor.parallel_insert_slice %{{.*}}[%[[N]], %[[R]], 0, %[[BASE]]] [1, 1, 7, 64]
func.func @depthwise_groups(%x: tensor<1x7x7x256xf32>, %w: tensor<3x3x1x256xf32>, %b: tensor<256xf32>) -> tensor<1x7x7x256xf32> {
  %0 = graph.nhwc_conv %x, %w, %b {group = 256 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x7x7x256xf32>, tensor<3x3x1x256xf32>, tensor<256xf32>) -> tensor<1x7x7x256xf32>
  return %0 : tensor<1x7x7x256xf32>
}

// -----

// Whole rows still: an odd number of output rows from a stride of 2 (7), 192 channels on a
// 7x7 map (3 groups of 64), window rows that fit in L1 (8x8x32 above).
// W512-LABEL: func @depthwise_rows
// W512-COUNT-2: scf.forall (%{{[^,]*}}, %{{[^,)]*}}) in
// W512-NOT: scf.forall (
func.func @depthwise_rows(%s: tensor<1x14x14x256xf32>, %w: tensor<3x3x1x256xf32>, %b: tensor<256xf32>,
                          %x3: tensor<1x7x7x192xf32>, %w3: tensor<3x3x1x192xf32>, %b3: tensor<192xf32>)
    -> (tensor<1x7x7x256xf32>, tensor<1x7x7x192xf32>) {
  %1 = graph.nhwc_conv %s, %w, %b {group = 256 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<1x14x14x256xf32>, tensor<3x3x1x256xf32>, tensor<256xf32>) -> tensor<1x7x7x256xf32>
  %2 = graph.nhwc_conv %x3, %w3, %b3 {group = 192 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x7x7x192xf32>, tensor<3x3x1x192xf32>, tensor<192xf32>) -> tensor<1x7x7x192xf32>
  return %1, %2 : tensor<1x7x7x256xf32>, tensor<1x7x7x192xf32>
}

// -----

// A 14x14x256 map's 3 window rows are 42 KiB, more than fits in L1 beside the rest: groups of
// 128 channels (3 rows of them: 21 KiB), the items (n, half of the rows, group, row in the
// half), so a thread runs one group's 7 rows in a row and two threads split the rows in halves.
// W512-LABEL: func @depthwise_halves
// W512: scf.forall (%[[N:[^,]*]], %[[H:[^,]*]], %[[G:[^,]*]], %[[R:[^)]*]]) in (1, 2, 2, 7)
// W512: %[[H7:.*]] = arith.muli %[[H]], %c7
// W512: %[[ROW:.*]] = arith.addi %[[H7]], %[[R]]
// W512: %[[BASE:.*]] = arith.muli %[[G]], %c128
// W512: tensor.extract_slice %{{.*}}[%[[N]], %[[ROW]], 0, %[[BASE]]] [1, 1, 14, 128]
func.func @depthwise_halves(%x: tensor<1x14x14x256xf32>, %w: tensor<3x3x1x256xf32>, %b: tensor<256xf32>) -> tensor<1x14x14x256xf32> {
  %0 = graph.nhwc_conv %x, %w, %b {group = 256 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x14x14x256xf32>, tensor<3x3x1x256xf32>, tensor<256xf32>) -> tensor<1x14x14x256xf32>
  return %0 : tensor<1x14x14x256xf32>
}
