// kiln-winograd-convs: 3x3 stride-1 channels-last convolutions become the
// Winograd transforms around one product per tile element, the weights
// transformed at compile time; the others stay direct, with the reason printed.
// RUN: kiln-opt %s -split-input-file -kiln-winograd-convs=panel=16 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-winograd-convs | FileCheck %s --check-prefix=PANEL64
// RUN: kiln-opt %s -split-input-file -kiln-winograd-convs=tile=2 | FileCheck %s --check-prefix=TILE2
// RUN: kiln-opt %s -split-input-file -kiln-winograd-convs=print=true | FileCheck %s --check-prefix=PRINT

// A 14x14 map: 49 tiles of 2x2 (16 of 4x4, fewer than the 49 asked), so
// F(2x2, 3x3): one product of the 16 transformed inputs [16, N, 49, 32] by 16
// weights U = G g G^T, each [32, 48] in 3 panels of 16 columns. For g = 1
// everywhere, U[e1][e2] = r[e1] * r[e2] with r = G's row sums (1, 1.5, 0.5,
// 1): the constant holds 1536 times 1.0 (0x3F800000), then 1.5, 0.5, 1.0,
// 1.5, 2.25 (0x40100000), ... The direct weight is gone.
// CHECK-LABEL: func @fires_2x2
// CHECK-NOT: tensor<3x3x32x48xf32>
// CHECK: %[[U:.*]] = graph.constant {{.*}}dense<"0x{{(0000803F)+(0000C03F)+(0000003F)+(0000803F)+(0000C03F)+(00001040)+(0000403F)+}}{{.*}} : tensor<16x3x32x16xf32>
// CHECK: %[[V:.*]] = graph.winograd_input %arg0 {pads = array<i64: 1, 1, 1, 1>, tile = 2 : i64} : (tensor<?x14x14x32xf32>) -> tensor<16x?x49x32xf32>
// CHECK: %[[P:.*]] = graph.packed_matmul %[[V]], %[[U]] : (tensor<16x?x49x32xf32>, tensor<16x3x32x16xf32>) -> tensor<16x?x49x48xf32>
// CHECK: %[[Y:.*]] = graph.winograd_output %[[P]], %arg1 {height = 14 : i64, tile = 2 : i64, width = 14 : i64} : (tensor<16x?x49x48xf32>, tensor<48xf32>) -> tensor<?x14x14x48xf32>
// CHECK: graph.relu %[[Y]]
// PRINT: winograd convolutions:
// PRINT-NEXT: wino: F(2x2, 3x3)
func.func @fires_2x2(%x: tensor<?x14x14x32xf32>, %b: tensor<48xf32>) -> tensor<?x14x14x48xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<3x3x32x48xf32>} : () -> tensor<3x3x32x48xf32>
  %0 = graph.nhwc_conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<?x14x14x32xf32>, tensor<3x3x32x48xf32>, tensor<48xf32>) -> tensor<?x14x14x48xf32> loc("wino")
  %1 = graph.relu %0 : (tensor<?x14x14x48xf32>) -> tensor<?x14x14x48xf32>
  return %1 : tensor<?x14x14x48xf32>
}

// -----

// A 28x26 map without padding (26x24 outputs): 7 x 6 = 42 tiles of 4x4 are
// fewer than 49, 13 x 12 tiles of 2x2 are not. With pads: 49 of 4x4, 36
// products. Panels of 64 columns where they divide the outputs (PANEL64).
// CHECK-LABEL: func @tile_choice
// CHECK: graph.winograd_input %arg0 {pads = array<i64: 0, 0, 0, 0>, tile = 2 : i64} : (tensor<1x28x26x32xf32>) -> tensor<16x1x156x32xf32>
// CHECK: graph.packed_matmul {{.*}} : (tensor<16x1x156x32xf32>, tensor<16x4x32x16xf32>) -> tensor<16x1x156x64xf32>
// CHECK: graph.winograd_output {{.*}}height = 26 : i64, tile = 2 : i64, width = 24 : i64{{.*}} -> tensor<1x26x24x64xf32>
// CHECK: graph.winograd_input %arg1 {pads = array<i64: 1, 1, 1, 1>, tile = 4 : i64} : (tensor<1x28x28x32xf32>) -> tensor<36x1x49x32xf32>
// CHECK: graph.packed_matmul {{.*}} : (tensor<36x1x49x32xf32>, tensor<36x4x32x16xf32>) -> tensor<36x1x49x64xf32>
// CHECK: graph.winograd_output {{.*}}height = 28 : i64, tile = 4 : i64, width = 28 : i64{{.*}} -> tensor<1x28x28x64xf32>
// TILE2-LABEL: func @tile_choice
// TILE2: graph.winograd_input %arg1 {pads = array<i64: 1, 1, 1, 1>, tile = 2 : i64} : (tensor<1x28x28x32xf32>) -> tensor<16x1x196x32xf32>
// PANEL64: graph.packed_matmul {{.*}} : (tensor<16x1x156x32xf32>, tensor<16x1x32x64xf32>) -> tensor<16x1x156x64xf32>
// PRINT: unpadded: F(2x2, 3x3)
// PRINT-NEXT: padded: F(4x4, 3x3)
func.func @tile_choice(%x: tensor<1x28x26x32xf32>, %z: tensor<1x28x28x32xf32>) -> (tensor<1x26x24x64xf32>, tensor<1x28x28x64xf32>) {
  %w = graph.constant {value = dense<0.5> : tensor<3x3x32x64xf32>} : () -> tensor<3x3x32x64xf32>
  %0 = graph.nhwc_conv %x, %w {pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x28x26x32xf32>, tensor<3x3x32x64xf32>) -> tensor<1x26x24x64xf32> loc("unpadded")
  %1 = graph.nhwc_conv %z, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x28x28x32xf32>, tensor<3x3x32x64xf32>) -> tensor<1x28x28x64xf32> loc("padded")
  return %0, %1 : tensor<1x26x24x64xf32>, tensor<1x28x28x64xf32>
}

// -----

// Refused: strided, dilated, grouped, a small map (16 tiles), few channels,
// a non-constant weight, a window other than 3x3 (not even listed).
// CHECK-LABEL: func @refused
// CHECK-NOT: graph.winograd_input
// CHECK-COUNT-7: graph.nhwc_conv
// CHECK-NOT: graph.winograd_input
// PRINT: winograd convolutions:
// PRINT-NEXT: strided: direct (strided)
// PRINT-NEXT: dilated: direct (dilated)
// PRINT-NEXT: grouped: direct (grouped)
// PRINT-NEXT: small: direct (16 tiles, fewer than 49)
// PRINT-NEXT: narrow: direct (fewer than 16 channels)
// PRINT-NEXT: argument: direct (weight not a constant)
// PRINT-NOT: five
func.func @refused(%x: tensor<1x14x14x32xf32>, %s: tensor<1x7x7x32xf32>, %n: tensor<1x14x14x8xf32>, %wa: tensor<3x3x32x32xf32>)
    -> (tensor<1x7x7x32xf32>, tensor<1x12x12x32xf32>, tensor<1x14x14x32xf32>, tensor<1x7x7x32xf32>, tensor<1x14x14x8xf32>, tensor<1x14x14x32xf32>, tensor<1x14x14x32xf32>) {
  %w = graph.constant {value = dense<0.5> : tensor<3x3x32x32xf32>} : () -> tensor<3x3x32x32xf32>
  %wg = graph.constant {value = dense<0.5> : tensor<3x3x16x32xf32>} : () -> tensor<3x3x16x32xf32>
  %wn = graph.constant {value = dense<0.5> : tensor<3x3x8x8xf32>} : () -> tensor<3x3x8x8xf32>
  %w5 = graph.constant {value = dense<0.5> : tensor<5x5x32x32xf32>} : () -> tensor<5x5x32x32xf32>
  %0 = graph.nhwc_conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : (tensor<1x14x14x32xf32>, tensor<3x3x32x32xf32>) -> tensor<1x7x7x32xf32> loc("strided")
  %1 = graph.nhwc_conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 2, 2>} : (tensor<1x14x14x32xf32>, tensor<3x3x32x32xf32>) -> tensor<1x12x12x32xf32> loc("dilated")
  %2 = graph.nhwc_conv %x, %wg {group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x14x14x32xf32>, tensor<3x3x16x32xf32>) -> tensor<1x14x14x32xf32> loc("grouped")
  %3 = graph.nhwc_conv %s, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x7x7x32xf32>, tensor<3x3x32x32xf32>) -> tensor<1x7x7x32xf32> loc("small")
  %4 = graph.nhwc_conv %n, %wn {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x14x14x8xf32>, tensor<3x3x8x8xf32>) -> tensor<1x14x14x8xf32> loc("narrow")
  %5 = graph.nhwc_conv %x, %wa {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x14x14x32xf32>, tensor<3x3x32x32xf32>) -> tensor<1x14x14x32xf32> loc("argument")
  %6 = graph.nhwc_conv %x, %w5 {pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x14x14x32xf32>, tensor<5x5x32x32xf32>) -> tensor<1x14x14x32xf32> loc("five")
  return %0, %1, %2, %3, %4, %5, %6 : tensor<1x7x7x32xf32>, tensor<1x12x12x32xf32>, tensor<1x14x14x32xf32>, tensor<1x7x7x32xf32>, tensor<1x14x14x8xf32>, tensor<1x14x14x32xf32>, tensor<1x14x14x32xf32>
}
