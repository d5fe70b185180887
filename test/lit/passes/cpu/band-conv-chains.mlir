// kiln-band-conv-chains: an expand -> depthwise -> project chain over a large map is computed
// in row bands (each band's rows of the input sliced, the depthwise window padded only at the
// map's edges) joined by one concat; chains without a depthwise convolution, over small maps
// or with a value read outside them stay whole.
// RUN: kiln-opt %s -split-input-file -kiln-band-conv-chains="min-map-bytes=20000 band-bytes=16384 sections=false" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-band-conv-chains | FileCheck %s --check-prefix=DEFAULT
// RUN: kiln-opt %s -split-input-file -kiln-band-conv-chains="min-map-bytes=20000 band-bytes=16384 print=true sections=false" | FileCheck %s --check-prefix=PRINT
// Sections (the default): the upper half of the bands is section 0, the lower half section 1
// (their ops' locations say so); an odd number of bands becomes the next even one, and bands of
// half the budget are taken where they compute under 4% more rows. sections=false tags nothing.
// RUN: kiln-opt %s -split-input-file -kiln-band-conv-chains="min-map-bytes=20000 band-bytes=24576" -mlir-print-debuginfo | FileCheck %s --check-prefix=TAGS
// RUN: kiln-opt %s -split-input-file -kiln-band-conv-chains="min-map-bytes=20000 band-bytes=16384 print=true" | FileCheck %s --check-prefix=EVEN
// RUN: kiln-opt %s -split-input-file -kiln-band-conv-chains="min-map-bytes=20000 band-bytes=65536 print=true" | FileCheck %s --check-prefix=HALF
// RUN: kiln-opt %s -split-input-file -kiln-band-conv-chains="min-map-bytes=20000 band-bytes=24576 sections=false" -mlir-print-debuginfo | FileCheck %s --check-prefix=UNTAGGED
// UNTAGGED-NOT: kiln.band_section

// 16x16 maps: the 32-channel expansion and depthwise maps hold 32 KB (large), the projection
// 16 KB (small: the chain ends there, with the residual add). Bands of at most 16 KB per map:
// a band of r output rows reads r + 2 expanded rows, so r = 6: bands [0, 6), [6, 12),
// [12, 16), reading rows [0, 7), [5, 13), [11, 16) of x; the residual add reads x's own rows.
// CHECK-LABEL: func @inverted_residual
// CHECK-DAG: %[[X0:.*]] = graph.slice %arg0 {axes = array<i64: 1>, ends = array<i64: 7>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x16x16x8xf32>) -> tensor<1x7x16x8xf32>
// CHECK: %[[E0:.*]] = graph.packed_conv %[[X0]], %arg1, %arg2 {{.*}} -> tensor<1x7x16x32xf32>
// CHECK: %[[A0:.*]] = graph.clip %[[E0]]
// CHECK: %[[D0:.*]] = graph.nhwc_conv %[[A0]], %arg3, %arg4 {dilations = array<i64: 1, 1>, group = 32 : i64, pads = array<i64: 1, 1, 0, 1>, strides = array<i64: 1, 1>} : (tensor<1x7x16x32xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<1x6x16x32xf32>
// CHECK: %[[P0:.*]] = graph.packed_conv {{.*}} -> tensor<1x6x16x8xf32>
// CHECK: %[[R0:.*]] = graph.slice %arg0 {axes = array<i64: 1>, ends = array<i64: 6>, starts = array<i64: 0>, steps = array<i64: 1>}
// CHECK: %[[Y0:.*]] = graph.add %[[R0]], %[[P0]] : (tensor<1x6x16x8xf32>, tensor<1x6x16x8xf32>) -> tensor<1x6x16x8xf32>
// CHECK: graph.slice %arg0 {axes = array<i64: 1>, ends = array<i64: 13>, starts = array<i64: 5>, steps = array<i64: 1>} : (tensor<1x16x16x8xf32>) -> tensor<1x8x16x8xf32>
// CHECK: graph.nhwc_conv {{.*}}pads = array<i64: 0, 1, 0, 1>{{.*}} : (tensor<1x8x16x32xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<1x6x16x32xf32>
// CHECK: %[[Y1:.*]] = graph.add
// CHECK: graph.slice %arg0 {axes = array<i64: 1>, ends = array<i64: 16>, starts = array<i64: 11>, steps = array<i64: 1>} : (tensor<1x16x16x8xf32>) -> tensor<1x5x16x8xf32>
// CHECK: graph.nhwc_conv {{.*}}pads = array<i64: 0, 1, 1, 1>{{.*}} : (tensor<1x5x16x32xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<1x4x16x32xf32>
// CHECK: %[[Y2:.*]] = graph.add
// CHECK: %[[Y:.*]] = graph.concat %[[Y0]], %[[Y1]], %[[Y2]] {axis = 1 : i64} : (tensor<1x6x16x8xf32>, tensor<1x6x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x16x16x8xf32>
// CHECK: return %[[Y]]
// Below 1 MB nothing is banded.
// DEFAULT-LABEL: func @inverted_residual
// DEFAULT-NOT: graph.concat
// PRINT: convolution chains in row bands:
// PRINT-NEXT: expand -> residual: 3 bands of 6 rows, 6 ops, 104 rows computed for 96
// Three bands of 6 rows at 16 KB become four of 4 rows; at 24 KB, two bands of 8 rows stay two
// (four would compute 108 rows, 8% more).
// EVEN: expand -> residual: 4 bands of 4 rows, 6 ops, 108 rows computed for 96, two sections
// TAGS-LABEL: func @inverted_residual
// TAGS: graph.packed_conv {{.*}} -> tensor<1x9x16x32xf32> loc(#[[E0:loc[0-9]+]])
// TAGS: graph.packed_conv {{.*}} -> tensor<1x9x16x32xf32> loc(#[[E1:loc[0-9]+]])
// TAGS: graph.concat {{.*}} : (tensor<1x8x16x8xf32>, tensor<1x8x16x8xf32>) -> tensor<1x16x16x8xf32>
// TAGS-DAG: #[[E0]] = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 0 : i64}>
// TAGS-DAG: #[[E1]] = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 1 : i64}>
func.func @inverted_residual(%x: tensor<1x16x16x8xf32>, %we: tensor<2x8x16xf32>, %be: tensor<32xf32>,
                             %wd: tensor<3x3x1x32xf32>, %bd: tensor<32xf32>, %wp: tensor<1x32x8xf32>,
                             %bp: tensor<8xf32>) -> tensor<1x16x16x8xf32> {
  %lo = graph.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %hi = graph.constant {value = dense<6.0> : tensor<f32>} : () -> tensor<f32>
  %e = graph.packed_conv %x, %we, %be {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x16x8xf32>, tensor<2x8x16xf32>, tensor<32xf32>) -> tensor<1x16x16x32xf32> loc("expand")
  %a = graph.clip %e, %lo, %hi : (tensor<1x16x16x32xf32>, tensor<f32>, tensor<f32>) -> tensor<1x16x16x32xf32>
  %d = graph.nhwc_conv %a, %wd, %bd {dilations = array<i64: 1, 1>, group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x16x32xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<1x16x16x32xf32>
  %b = graph.clip %d, %lo, %hi : (tensor<1x16x16x32xf32>, tensor<f32>, tensor<f32>) -> tensor<1x16x16x32xf32>
  %p = graph.packed_conv %b, %wp, %bp {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x16x32xf32>, tensor<1x32x8xf32>, tensor<8xf32>) -> tensor<1x16x16x8xf32>
  %y = graph.add %x, %p : (tensor<1x16x16x8xf32>, tensor<1x16x16x8xf32>) -> tensor<1x16x16x8xf32> loc("residual")
  return %y : tensor<1x16x16x8xf32>
}

// -----

// A 3x3 stride-2 stem (its own window, padded 1 at the top) heads the chain; the depthwise
// convolution keeps stride 2. Last value: the depthwise output's activation, 8x8x32 (8 KB, its
// reader a return). Stem maps of 16 KB at most: 7 stem rows, so bands of 3 output rows,
// [0, 3), [3, 6), [6, 8). Band [0, 3) reads stem rows [0, 6) (the window's rows -1..5, the
// first one padding), which read input rows [0, 12) (rows -1..11, padded at the top); band
// [3, 6) reads stem rows [5, 12) and input rows [9, 24), no padding.
// CHECK-LABEL: func @strided_stem
// CHECK: graph.slice %arg0 {axes = array<i64: 1>, ends = array<i64: 12>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x32x32x3xf32>) -> tensor<1x12x32x3xf32>
// CHECK: graph.packed_conv {{.*}}kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 0, 1>, strides = array<i64: 2, 2>{{.*}} -> tensor<1x6x16x32xf32>
// CHECK: graph.nhwc_conv {{.*}}pads = array<i64: 1, 1, 0, 1>, strides = array<i64: 2, 2>{{.*}} -> tensor<1x3x8x32xf32>
// CHECK: graph.slice %arg0 {axes = array<i64: 1>, ends = array<i64: 24>, starts = array<i64: 9>, steps = array<i64: 1>} : (tensor<1x32x32x3xf32>) -> tensor<1x15x32x3xf32>
// CHECK: graph.packed_conv {{.*}}pads = array<i64: 0, 1, 0, 1>{{.*}} -> tensor<1x7x16x32xf32>
// CHECK: graph.nhwc_conv {{.*}}pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 2, 2>{{.*}} -> tensor<1x3x8x32xf32>
// CHECK: graph.concat {{.*}} {axis = 1 : i64} : (tensor<1x3x8x32xf32>, tensor<1x3x8x32xf32>, tensor<1x2x8x32xf32>) -> tensor<1x8x8x32xf32>
// PRINT: stem -> (unnamed): 3 bands of 3 rows, 4 ops, 52 rows computed for 48
func.func @strided_stem(%x: tensor<1x32x32x3xf32>, %w: tensor<1x27x32xf32>, %b: tensor<32xf32>,
                        %wd: tensor<3x3x1x32xf32>, %bd: tensor<32xf32>) -> tensor<1x8x8x32xf32> {
  %s = graph.packed_conv %x, %w, %b {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x32x32x3xf32>, tensor<1x27x32xf32>, tensor<32xf32>) -> tensor<1x16x16x32xf32> loc("stem")
  %a = graph.relu %s : (tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  %d = graph.nhwc_conv %a, %wd, %bd {dilations = array<i64: 1, 1>, group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x16x16x32xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<1x8x8x32xf32>
  %r = graph.relu %d : (tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  return %r : tensor<1x8x8x32xf32>
}

// -----

// Refused: two 1x1 convolutions and no depthwise one (nothing narrow to gain by).
// CHECK-LABEL: func @no_depthwise
// CHECK-NOT: graph.slice
// CHECK-NOT: graph.concat
func.func @no_depthwise(%x: tensor<1x16x16x8xf32>, %we: tensor<2x8x16xf32>, %be: tensor<32xf32>,
                        %wp: tensor<1x32x8xf32>, %bp: tensor<8xf32>) -> tensor<1x16x16x8xf32> {
  %e = graph.packed_conv %x, %we, %be {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x16x8xf32>, tensor<2x8x16xf32>, tensor<32xf32>) -> tensor<1x16x16x32xf32>
  %a = graph.relu %e : (tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  %p = graph.packed_conv %a, %wp, %bp {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x16x32xf32>, tensor<1x32x8xf32>, tensor<8xf32>) -> tensor<1x16x16x8xf32>
  return %p : tensor<1x16x16x8xf32>
}

// -----

// Refused: the expanded map is also returned (read outside the chain), so the chain would be
// the expansion alone, without its depthwise convolution.
// CHECK-LABEL: func @escaping_expansion
// CHECK-NOT: graph.concat
func.func @escaping_expansion(%x: tensor<1x16x16x8xf32>, %we: tensor<2x8x16xf32>, %be: tensor<32xf32>,
                              %wd: tensor<3x3x1x32xf32>, %bd: tensor<32xf32>)
    -> (tensor<1x16x16x32xf32>, tensor<1x16x16x32xf32>) {
  %e = graph.packed_conv %x, %we, %be {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x16x8xf32>, tensor<2x8x16xf32>, tensor<32xf32>) -> tensor<1x16x16x32xf32>
  %a = graph.relu %e : (tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  %d = graph.nhwc_conv %a, %wd, %bd {dilations = array<i64: 1, 1>, group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x16x32xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<1x16x16x32xf32>
  return %a, %d : tensor<1x16x16x32xf32>, tensor<1x16x16x32xf32>
}

// -----

// A tall map (256 rows of 4 x 32 channels, 512 bytes a row): bands of 64 KB would be 3 (126
// rows), rounded up to an even 4 for two sections; half the budget, 32 KB, gives 6 bands of 43
// rows, which compute under 4% more rows (the halo of 2 more band edges), so one thread can
// hold both sections' bands in L2: those are taken.
// CHECK-LABEL: func @tall_map
// HALF: tall_expand -> tall_residual: 6 bands of 43 rows, 6 ops, 1556 rows computed for 1536, two sections
func.func @tall_map(%x: tensor<1x256x4x8xf32>, %we: tensor<2x8x16xf32>, %be: tensor<32xf32>,
                    %wd: tensor<3x3x1x32xf32>, %bd: tensor<32xf32>, %wp: tensor<1x32x8xf32>,
                    %bp: tensor<8xf32>) -> tensor<1x256x4x8xf32> {
  %lo = graph.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %hi = graph.constant {value = dense<6.0> : tensor<f32>} : () -> tensor<f32>
  %e = graph.packed_conv %x, %we, %be {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x256x4x8xf32>, tensor<2x8x16xf32>, tensor<32xf32>) -> tensor<1x256x4x32xf32> loc("tall_expand")
  %a = graph.clip %e, %lo, %hi : (tensor<1x256x4x32xf32>, tensor<f32>, tensor<f32>) -> tensor<1x256x4x32xf32>
  %d = graph.nhwc_conv %a, %wd, %bd {dilations = array<i64: 1, 1>, group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x256x4x32xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<1x256x4x32xf32>
  %b = graph.clip %d, %lo, %hi : (tensor<1x256x4x32xf32>, tensor<f32>, tensor<f32>) -> tensor<1x256x4x32xf32>
  %p = graph.packed_conv %b, %wp, %bp {channels_last, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x256x4x32xf32>, tensor<1x32x8xf32>, tensor<8xf32>) -> tensor<1x256x4x8xf32>
  %y = graph.add %x, %p : (tensor<1x256x4x8xf32>, tensor<1x256x4x8xf32>) -> tensor<1x256x4x8xf32> loc("tall_residual")
  return %y : tensor<1x256x4x8xf32>
}
