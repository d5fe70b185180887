// kiln-channels-last: 2-D convolutions run NHWC and the layout changes stay at the edges of conv segments.
// RUN: kiln-opt %s -split-input-file -kiln-channels-last | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-channels-last=print=true | FileCheck %s --check-prefix=PRINT

// A conv -> relu -> conv -> add(residual) -> max_pool chain: one transpose in,
// one out; the weights are permuted to [kh, kw, C, Cout] at compile time
// (1x1: the element order is the transpose of [Cout, C]).
// CHECK-LABEL: func @segment
// CHECK-DAG: %[[W1:.*]] = graph.constant {value = dense<{{.*}}> : tensor<1x1x2x16xf32>}
// CHECK: %[[IN:.*]] = graph.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x8x8xf32>) -> tensor<1x8x8x2xf32>
// CHECK: %[[C1:.*]] = graph.nhwc_conv %[[IN]], %[[W1]], %{{.*}} {{.*}} -> tensor<1x8x8x16xf32>
// CHECK: %[[R:.*]] = graph.relu %[[C1]] : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
// CHECK: %[[C2:.*]] = graph.nhwc_conv %[[R]], %{{.*}} {{.*}}pads = array<i64: 1, 1, 1, 1>{{.*}} -> tensor<1x8x8x16xf32>
// CHECK: %[[S:.*]] = graph.add %[[C2]], %[[R]] : (tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
// CHECK: %[[P:.*]] = graph.nhwc_pool %[[S]] {{{.*}}kind = "max"{{.*}}} : (tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32>
// CHECK: %[[OUT:.*]] = graph.transpose %[[P]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x16xf32>) -> tensor<1x16x4x4xf32>
// CHECK: return %[[OUT]]
// CHECK-NOT: graph.transpose
// PRINT: channels-last layouts:
// PRINT-NEXT: c1: NHWC (packed product)
// PRINT-NEXT: c2: NHWC (packed product)
// PRINT-NEXT: layout changes left (NCHW<->NHWC transposes): 2
func.func @segment(%x: tensor<1x2x8x8xf32>) -> tensor<1x16x4x4xf32> {
  %w1 = graph.constant {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]], [[[7.0]], [[8.0]]], [[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]], [[[7.0]], [[8.0]]], [[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]], [[[7.0]], [[8.0]]], [[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]], [[[7.0]], [[8.0]]]]> : tensor<16x2x1x1xf32>} : () -> tensor<16x2x1x1xf32>
  %b = graph.constant {value = dense<0.5> : tensor<16xf32>} : () -> tensor<16xf32>
  %w2 = graph.constant {value = dense<0.25> : tensor<16x16x3x3xf32>} : () -> tensor<16x16x3x3xf32>
  %0 = graph.conv %x, %w1, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x8x8xf32>, tensor<16x2x1x1xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32> loc("c1")
  %1 = graph.relu %0 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %2 = graph.conv %1, %w2 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32> loc("c2")
  %3 = graph.add %2, %1 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %4 = graph.max_pool %3 {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  return %4 : tensor<1x16x4x4xf32>
}

// -----

// Depthwise: the weight [C, 1, kh, kw] becomes [kh, kw, 1, C]; the
// per-channel scale [C, 1, 1] of an unfolded BatchNorm is permuted to
// [1, 1, 1, C]; global average pooling becomes a mean over H and W, and only
// its [N, 1, 1, C] result goes back to NCHW.
// CHECK-LABEL: func @depthwise
// CHECK-DAG: graph.constant {value = dense<{{.*}}> : tensor<3x3x1x8xf32>}
// CHECK-DAG: %[[SCALE:.*]] = graph.constant {value = dense<{{.*}}> : tensor<1x1x1x8xf32>}
// CHECK: %[[D:.*]] = graph.nhwc_conv %{{.*}} {{{.*}}group = 8 : i64{{.*}}} : (tensor<?x16x16x8xf32>, tensor<3x3x1x8xf32>) -> tensor<?x8x8x8xf32>
// CHECK: %[[M:.*]] = graph.mul %[[D]], %[[SCALE]] : (tensor<?x8x8x8xf32>, tensor<1x1x1x8xf32>) -> tensor<?x8x8x8xf32>
// CHECK: %[[H:.*]] = graph.hard_swish %[[M]]
// CHECK: %[[G:.*]] = graph.reduce_mean %[[H]] {axes = array<i64: 1, 2>} : (tensor<?x8x8x8xf32>) -> tensor<?x1x1x8xf32>
// CHECK: graph.transpose %[[G]] {perm = array<i64: 0, 3, 1, 2>}
// PRINT: dw: NHWC (depthwise)
// PRINT-NEXT: layout changes left (NCHW<->NHWC transposes): 2
func.func @depthwise(%x: tensor<?x8x16x16xf32>) -> tensor<?x8x1x1xf32> {
  %w = graph.constant {value = dense<0.125> : tensor<8x1x3x3xf32>} : () -> tensor<8x1x3x3xf32>
  %s = graph.constant {value = dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[7.0]], [[8.0]]]> : tensor<8x1x1xf32>} : () -> tensor<8x1x1xf32>
  %0 = graph.conv %x, %w {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x8x16x16xf32>, tensor<8x1x3x3xf32>) -> tensor<?x8x8x8xf32> loc("dw")
  %1 = graph.mul %0, %s : (tensor<?x8x8x8xf32>, tensor<8x1x1xf32>) -> tensor<?x8x8x8xf32>
  %2 = graph.hard_swish %1 : (tensor<?x8x8x8xf32>) -> tensor<?x8x8x8xf32>
  %3 = graph.global_average_pool %2 : (tensor<?x8x8x8xf32>) -> tensor<?x8x1x1xf32>
  return %3 : tensor<?x8x1x1xf32>
}

// -----

// Refused, and said why: a grouped (not depthwise) conv, Cout not a multiple
// of 16, dynamic spatial sizes, a weight that is a graph input. Nothing moves.
// CHECK-LABEL: func @refused
// CHECK-NOT: graph.transpose
// CHECK-NOT: graph.nhwc_conv
// PRINT: grouped: NCHW (grouped (not depthwise))
// PRINT-NEXT: odd: NCHW (fewer than 8 output channels)
// PRINT-NEXT: dynamic: NCHW (channels or spatial sizes known at run time only)
// PRINT-NEXT: input_weight: NCHW (pads or weight known at run time only)
// PRINT-NEXT: layout changes left (NCHW<->NHWC transposes): 0
func.func @refused(%x: tensor<1x8x8x8xf32>, %y: tensor<1x8x?x?xf32>, %v: tensor<16x8x3x3xf32>)
    -> (tensor<1x16x8x8xf32>, tensor<1x6x8x8xf32>, tensor<1x16x?x?xf32>, tensor<1x16x6x6xf32>) {
  %wg = graph.constant {value = dense<1.0> : tensor<16x4x3x3xf32>} : () -> tensor<16x4x3x3xf32>
  %wo = graph.constant {value = dense<1.0> : tensor<6x8x1x1xf32>} : () -> tensor<6x8x1x1xf32>
  %wd = graph.constant {value = dense<1.0> : tensor<16x8x1x1xf32>} : () -> tensor<16x8x1x1xf32>
  %0 = graph.conv %x, %wg {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x8x8xf32> loc("grouped")
  %1 = graph.conv %x, %wo {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<6x8x1x1xf32>) -> tensor<1x6x8x8xf32> loc("odd")
  %2 = graph.conv %y, %wd {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x?x?xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x?x?xf32> loc("dynamic")
  %3 = graph.conv %x, %v {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x6x6xf32> loc("input_weight")
  return %0, %1, %2, %3 : tensor<1x16x8x8xf32>, tensor<1x6x8x8xf32>, tensor<1x16x?x?xf32>, tensor<1x16x6x6xf32>
}

// -----

// A transposed conv whose windows do not overlap (kernel = stride 2, no pads)
// becomes a product over [N, H, W, Ci] x [Ci, kh*kw*Co] and a pixel shuffle
// (reshape, transpose, reshape), plus the bias; one with overlapping windows
// stays as it is.
// CHECK-LABEL: func @conv_transpose
// CHECK: %[[IN:.*]] = graph.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : (tensor<?x4x6x6xf32>) -> tensor<?x6x6x4xf32>
// CHECK: %[[P:.*]] = graph.matmul %[[IN]], %{{.*}} : (tensor<?x6x6x4xf32>, tensor<4x32xf32>) -> tensor<?x6x6x32xf32>
// CHECK: %[[T:.*]] = graph.reshape %[[P]], %{{.*}} : (tensor<?x6x6x32xf32>, tensor<6xi64>) -> tensor<?x6x6x2x2x8xf32>
// CHECK: %[[S:.*]] = graph.transpose %[[T]] {perm = array<i64: 0, 1, 3, 2, 4, 5>} : (tensor<?x6x6x2x2x8xf32>) -> tensor<?x6x2x6x2x8xf32>
// CHECK: %[[R:.*]] = graph.reshape %[[S]], %{{.*}} : (tensor<?x6x2x6x2x8xf32>, tensor<4xi64>) -> tensor<?x12x12x8xf32>
// CHECK: graph.add %[[R]], %{{.*}} : (tensor<?x12x12x8xf32>, tensor<8xf32>) -> tensor<?x12x12x8xf32>
// CHECK: graph.conv_transpose
// PRINT: up: NHWC transposed conv (product + pixel shuffle)
// PRINT-NEXT: overlap: NCHW transposed conv (windows overlap or are padded (kernel != stride, pads, dilation, groups))
func.func @conv_transpose(%x: tensor<?x4x6x6xf32>) -> (tensor<?x8x12x12xf32>, tensor<?x8x13x13xf32>) {
  %w = graph.constant {value = dense<0.5> : tensor<4x8x2x2xf32>} : () -> tensor<4x8x2x2xf32>
  %b = graph.constant {value = dense<0.25> : tensor<8xf32>} : () -> tensor<8xf32>
  %v = graph.constant {value = dense<0.5> : tensor<4x8x3x3xf32>} : () -> tensor<4x8x3x3xf32>
  %0 = graph.conv_transpose %x, %w, %b {dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<?x4x6x6xf32>, tensor<4x8x2x2xf32>, tensor<8xf32>) -> tensor<?x8x12x12xf32> loc("up")
  %1 = graph.conv_transpose %x, %v {dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<?x4x6x6xf32>, tensor<4x8x3x3xf32>) -> tensor<?x8x13x13xf32> loc("overlap")
  return %0, %1 : tensor<?x8x12x12xf32>, tensor<?x8x13x13xf32>
}

// -----

// Cout 24 is padded to 32 with zero filters and biases; the padding is
// sliced off the NHWC result. The relu and the clip (scalar bounds) move
// above the slice, onto the padded product (its epilogue); the add, whose
// other operand has only the 24 channels, stays below it.
// CHECK-LABEL: func @padded
// CHECK-DAG: graph.constant {value = dense<{{.*}}> : tensor<1x1x8x32xf32>}
// CHECK-DAG: graph.constant {value = dense<{{.*}}> : tensor<32xf32>}
// CHECK: %[[C:.*]] = graph.nhwc_conv {{.*}} -> tensor<1x4x4x32xf32>
// CHECK: %[[R:.*]] = graph.relu %[[C]] : (tensor<1x4x4x32xf32>) -> tensor<1x4x4x32xf32>
// CHECK: %[[K:.*]] = graph.clip %[[R]], %{{.*}}, %{{.*}} : (tensor<1x4x4x32xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x4x32xf32>
// CHECK: %[[S:.*]] = graph.slice %[[K]] {axes = array<i64: 3>, ends = array<i64: 24>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x4x4x32xf32>) -> tensor<1x4x4x24xf32>
// CHECK: %[[T:.*]] = graph.transpose %[[S]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK: graph.add %[[T]], %arg1 : (tensor<1x24x4x4xf32>, tensor<1x24x4x4xf32>) -> tensor<1x24x4x4xf32>
// PRINT: pad24: NHWC (packed product, Cout 24 padded to 32)
func.func @padded(%x: tensor<1x8x4x4xf32>, %r: tensor<1x24x4x4xf32>) -> tensor<1x24x4x4xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<24x8x1x1xf32>} : () -> tensor<24x8x1x1xf32>
  %b = graph.constant {value = dense<0.5> : tensor<24xf32>} : () -> tensor<24xf32>
  %lo = graph.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %hi = graph.constant {value = dense<6.0> : tensor<f32>} : () -> tensor<f32>
  %0 = graph.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x4x4xf32>, tensor<24x8x1x1xf32>, tensor<24xf32>) -> tensor<1x24x4x4xf32> loc("pad24")
  %1 = graph.relu %0 : (tensor<1x24x4x4xf32>) -> tensor<1x24x4x4xf32>
  %2 = graph.clip %1, %lo, %hi : (tensor<1x24x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x24x4x4xf32>
  %4 = graph.add %2, %r : (tensor<1x24x4x4xf32>, tensor<1x24x4x4xf32>) -> tensor<1x24x4x4xf32>
  return %4 : tensor<1x24x4x4xf32>
}

// -----

// A classifier's 1000 output channels: 1008 would be an odd count of 16-column panels, so Cout is
// padded to 1024 (64-column panels, whose register blocks are four vectors wide). The relu and
// the global average pooling (a mean over rows and columns) run on all 1024 channels; only
// their 1000 are sliced off.
// CHECK-LABEL: func @padded_wide
// CHECK: %[[C:.*]] = graph.nhwc_conv {{.*}} -> tensor<1x2x2x1024xf32>
// CHECK: %[[R:.*]] = graph.relu %[[C]] : (tensor<1x2x2x1024xf32>) -> tensor<1x2x2x1024xf32>
// CHECK: %[[M:.*]] = graph.reduce_mean %[[R]] {axes = array<i64: 1, 2>{{.*}}} : (tensor<1x2x2x1024xf32>) -> tensor<1x1x1x1024xf32>
// CHECK: graph.slice %[[M]] {axes = array<i64: 3>, ends = array<i64: 1000>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x1x1x1024xf32>) -> tensor<1x1x1x1000xf32>
// PRINT: classes: NHWC (packed product, Cout 1000 padded to 1024)
func.func @padded_wide(%x: tensor<1x16x2x2xf32>) -> tensor<1x1000x1x1xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<1000x16x1x1xf32>} : () -> tensor<1000x16x1x1xf32>
  %0 = graph.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x2x2xf32>, tensor<1000x16x1x1xf32>) -> tensor<1x1000x2x2xf32> loc("classes")
  %1 = graph.relu %0 : (tensor<1x1000x2x2xf32>) -> tensor<1x1000x2x2xf32>
  %2 = graph.global_average_pool %1 : (tensor<1x1000x2x2xf32>) -> tensor<1x1000x1x1xf32>
  return %2 : tensor<1x1000x1x1xf32>
}

// -----

// A nearest resize between convolutions runs channels-last: its scales are
// permuted ([1, 1, 2, 2] -> [1, 2, 2, 1]); a linear one keeps the layout
// change in front of it.
// CHECK-LABEL: func @resize
// CHECK-DAG: %[[S:.*]] = graph.constant {value = dense<[1.000000e+00, 2.000000e+00, 2.000000e+00, 1.000000e+00]> : tensor<4xf32>}
// CHECK: %[[C:.*]] = graph.nhwc_conv
// CHECK: %[[R:.*]] = graph.resize %[[C]] scales %[[S]] {{.*}}mode = "nearest"{{.*}} : (tensor<1x4x4x16xf32>, tensor<4xf32>) -> tensor<1x8x8x16xf32>
// CHECK: graph.nhwc_conv %[[R]]
// CHECK: graph.transpose
// CHECK: graph.resize {{.*}}mode = "linear"{{.*}} : (tensor<1x16x4x4xf32>, tensor<4xf32>) -> tensor<1x16x8x8xf32>
func.func @resize(%x: tensor<1x16x4x4xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) {
  %w = graph.constant {value = dense<0.5> : tensor<16x16x1x1xf32>} : () -> tensor<16x16x1x1xf32>
  %s = graph.constant {value = dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = graph.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %1 = graph.resize %0 scales %s {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x16x4x4xf32>, tensor<4xf32>) -> tensor<1x16x8x8xf32>
  %2 = graph.conv %1, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %3 = graph.resize %0 scales %s {mode = "linear", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x16x4x4xf32>, tensor<4xf32>) -> tensor<1x16x8x8xf32>
  return %2, %3 : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>
}

// -----

// A ShuffleNet unit stays channels-last: the concat of two conv branches, the channel
// shuffle (reshape to [N, 2, C/2, H, W], swap, reshape back) as the same shuffle of the NHWC
// channels, the split as slices of the last axis (axis -3 too), and a reduce_mean over H and
// W without keepdims reading the NHWC map. Transposes left: the input's (twice, until CSE)
// and the returned conv's.
// CHECK-LABEL: func @shuffle_unit
// CHECK: %[[CAT:.*]] = graph.concat %{{.*}}, %{{.*}} {axis = 3 : i64} : {{.*}} -> tensor<1x8x8x32xf32>
// CHECK: %[[SPLIT:.*]] = graph.reshape %[[CAT]], %{{.*}} : (tensor<1x8x8x32xf32>, tensor<5xi64>) -> tensor<1x8x8x2x16xf32>
// CHECK: %[[SWAP:.*]] = graph.transpose %[[SPLIT]] {perm = array<i64: 0, 1, 2, 4, 3>} : (tensor<1x8x8x2x16xf32>) -> tensor<1x8x8x16x2xf32>
// CHECK: %[[SH:.*]] = graph.reshape %[[SWAP]], %{{.*}} : (tensor<1x8x8x16x2xf32>, tensor<4xi64>) -> tensor<1x8x8x32xf32>
// CHECK: %[[LO:.*]] = graph.slice %[[SH]] {axes = array<i64: 3>, ends = array<i64: 16>, starts = array<i64: 0>, steps = array<i64: 1>}
// CHECK: %[[HI:.*]] = graph.slice %[[SH]] {axes = array<i64: 3>, ends = array<i64: 32>, starts = array<i64: 16>, steps = array<i64: 1>}
// CHECK: %[[C:.*]] = graph.nhwc_conv %[[HI]]
// CHECK: %[[OUT:.*]] = graph.transpose %[[C]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK: %[[M:.*]] = graph.reduce_mean %[[LO]] {axes = array<i64: 1, 2>, keepdims = 0 : i64} : (tensor<1x8x8x16xf32>) -> tensor<1x16xf32>
// CHECK: return %[[OUT]], %[[M]]
// PRINT-LABEL: c: NHWC (packed product)
// PRINT-NEXT: layout changes left (NCHW<->NHWC transposes): 3
func.func @shuffle_unit(%x: tensor<1x16x8x8xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x16xf32>) {
  %w = graph.constant {value = dense<0.5> : tensor<16x16x1x1xf32>} : () -> tensor<16x16x1x1xf32>
  %split = graph.constant {value = dense<[1, 2, 16, 8, 8]> : tensor<5xi64>} : () -> tensor<5xi64>
  %merge = graph.constant {value = dense<[1, 32, 8, 8]> : tensor<4xi64>} : () -> tensor<4xi64>
  %a = graph.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32> loc("a")
  %b = graph.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32> loc("b")
  %cat = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x32x8x8xf32>
  %0 = graph.reshape %cat, %split : (tensor<1x32x8x8xf32>, tensor<5xi64>) -> tensor<1x2x16x8x8xf32>
  %1 = graph.transpose %0 {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x16x8x8xf32>) -> tensor<1x16x2x8x8xf32>
  %2 = graph.reshape %1, %merge : (tensor<1x16x2x8x8xf32>, tensor<4xi64>) -> tensor<1x32x8x8xf32>
  %lo = graph.slice %2 {axes = array<i64: 1>, ends = array<i64: 16>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x32x8x8xf32>) -> tensor<1x16x8x8xf32>
  %hi = graph.slice %2 {axes = array<i64: -3>, ends = array<i64: 32>, starts = array<i64: 16>, steps = array<i64: 1>} : (tensor<1x32x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c = graph.conv %hi, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32> loc("c")
  %m = graph.reduce_mean %lo {axes = array<i64: 2, 3>, keepdims = 0 : i64} : (tensor<1x16x8x8xf32>) -> tensor<1x16xf32>
  return %c, %m : tensor<1x16x8x8xf32>, tensor<1x16xf32>
}

// -----

// Reductions: without keepdims, one over H alone would leave NHWC's (N, W, C) where NCHW
// leaves (N, C, W): it reads the NCHW map. With keepdims, one over C is the same reduction of
// the NHWC map, transposed back.
// CHECK-LABEL: func @reduce_refused
// CHECK: %[[C:.*]] = graph.nhwc_conv
// CHECK: %[[NCHW:.*]] = graph.transpose %[[C]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK: graph.reduce_max %[[NCHW]] {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8xf32>
// CHECK: %[[S:.*]] = graph.reduce_sum %[[C]] {axes = array<i64: 3>} : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x1xf32>
// CHECK: graph.transpose %[[S]] {perm = array<i64: 0, 3, 1, 2>}
func.func @reduce_refused(%x: tensor<1x16x8x8xf32>) -> (tensor<1x16x8xf32>, tensor<1x1x8x8xf32>) {
  %w = graph.constant {value = dense<0.5> : tensor<16x16x1x1xf32>} : () -> tensor<16x16x1x1xf32>
  %a = graph.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32> loc("a")
  %h = graph.reduce_max %a {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8xf32>
  %c = graph.reduce_sum %a {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<1x16x8x8xf32>) -> tensor<1x1x8x8xf32>
  return %h, %c : tensor<1x16x8xf32>, tensor<1x1x8x8xf32>
}
