// kiln-tile-contractions: contractions become scf.forall over parallel tiles, reductions stay whole.
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-tile-contractions))' | FileCheck %s

#lhs = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func @matmul
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (%{{.*}}, 256) step (16, 64)
// CHECK: linalg.generic
// CHECK-SAME: kiln.tile_sizes = array<i64: 16, 0, 64>
// CHECK: scf.forall.in_parallel
func.func @matmul(%a: tensor<?x128xf32>, %b: tensor<128x256xf32>, %c: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<?x128xf32>, tensor<128x256xf32>) outs(%c : tensor<?x256xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x256xf32>
  return %0 : tensor<?x256xf32>
}

// -----

#map = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
// A reduction with one input (a sum) is not a contraction: left alone.
// CHECK-LABEL: func @row_sum
// CHECK-NOT: scf.forall
func.func @row_sum(%a: tensor<8x128xf32>, %c: tensor<8xf32>) -> tensor<8xf32> {
  %0 = linalg.generic {indexing_maps = [#map, #red], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<8x128xf32>) outs(%c : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// An implicit convolution (dims n, oh, ow, panel, kh, kw, c, column) over a
// 28x28 map: tiles of whole output rows, 7 of them (196 positions: 32 blocks
// of 6 rows and a pair, as few lost to partial blocks as 4 rows, and an even
// number of tiles, 4, where 4 rows make 7: two threads each get half the
// map's rows), one panel each; the input slice is the 9 rows those outputs read.
#xa = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d4, d2 + d5, d6)>
#xw = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d5, d6, d7)>
#xc = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d7)>
// CHECK-LABEL: func @implicit_conv
// CHECK: scf.forall
// CHECK: tensor.extract_slice %arg0[%{{.*}}, %{{.*}}, %{{.*}}, 0] [1, 9, 30, 32]
// CHECK: linalg.generic
// CHECK-SAME: kiln.tile_sizes = array<i64: 1, 7, 28, 1, 0, 0, 0, 16>
func.func @implicit_conv(%x: tensor<1x30x30x32xf32>, %w: tensor<2x3x3x32x16xf32>, %c: tensor<1x28x28x2x16xf32>) -> tensor<1x28x28x2x16xf32> {
  %0 = linalg.generic {indexing_maps = [#xa, #xw, #xc],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "parallel"]}
      ins(%x, %w : tensor<1x30x30x32xf32>, tensor<2x3x3x32x16xf32>) outs(%c : tensor<1x28x28x2x16xf32>)
      attrs = {kiln.packed_rhs, kiln.implicit_conv} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x28x28x2x16xf32>
  return %0 : tensor<1x28x28x2x16xf32>
}

// -----

// A 14x14 map: one tile of all 14 rows (196 positions) would be one item per panel, the
// channels split between two threads; two tiles of 7 rows (98 positions) score the same
// once one tile counts as an odd number, and split the rows.
#va = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d4, d2 + d5, d6)>
#vw = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d5, d6, d7)>
#vc = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d7)>
// CHECK-LABEL: func @implicit_conv_even_tiles
// CHECK: linalg.generic
// CHECK-SAME: kiln.tile_sizes = array<i64: 1, 7, 14, 1, 0, 0, 0, 64>
func.func @implicit_conv_even_tiles(%x: tensor<1x14x14x64xf32>, %w: tensor<6x1x1x64x64xf32>, %c: tensor<1x14x14x6x64xf32>) -> tensor<1x14x14x6x64xf32> {
  %0 = linalg.generic {indexing_maps = [#va, #vw, #vc],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "parallel"]}
      ins(%x, %w : tensor<1x14x14x64xf32>, tensor<6x1x1x64x64xf32>) outs(%c : tensor<1x14x14x6x64xf32>)
      attrs = {kiln.packed_rhs, kiln.implicit_conv} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x14x14x6x64xf32>
  return %0 : tensor<1x14x14x6x64xf32>
}

// -----

// A 4x6 map whose weights (2 panels of 3x3x512x64 floats: 2.4 MB) do not
// stay in L2: every tile streams its whole panel, so a tile takes all 4 rows
// (24 positions) rather than one 6-position row (which would read each panel
// from L3 four times; resnet's 7x7 maps, tiled a row at a time, ran at half
// speed). Blocks of 6 fill either way.
#ya = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d4, d2 + d5, d6)>
#yw = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d5, d6, d7)>
#yc = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d7)>
// CHECK-LABEL: func @implicit_conv_large_weights
// CHECK: linalg.generic
// CHECK-SAME: kiln.tile_sizes = array<i64: 1, 4, 6, 1, 0, 0, 0, 64>
func.func @implicit_conv_large_weights(%x: tensor<1x6x8x512xf32>, %w: tensor<2x3x3x512x64xf32>, %c: tensor<1x4x6x2x64xf32>) -> tensor<1x4x6x2x64xf32> {
  %0 = linalg.generic {indexing_maps = [#ya, #yw, #yc],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "parallel"]}
      ins(%x, %w : tensor<1x6x8x512xf32>, tensor<2x3x3x512x64xf32>) outs(%c : tensor<1x4x6x2x64xf32>)
      attrs = {kiln.packed_rhs, kiln.implicit_conv} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x6x2x64xf32>
  return %0 : tensor<1x4x6x2x64xf32>
}

// -----

// The same map with small weights (2 panels of 3x3x32x64: 147 KB, in L2):
// re-reading a panel per tile is cheap, so the smallest whole tile, one row.
#za = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d4, d2 + d5, d6)>
#zw = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d5, d6, d7)>
#zc = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d7)>
// CHECK-LABEL: func @implicit_conv_small_weights
// CHECK: linalg.generic
// CHECK-SAME: kiln.tile_sizes = array<i64: 1, 1, 6, 1, 0, 0, 0, 64>
func.func @implicit_conv_small_weights(%x: tensor<1x6x8x32xf32>, %w: tensor<2x3x3x32x64xf32>, %c: tensor<1x4x6x2x64xf32>) -> tensor<1x4x6x2x64xf32> {
  %0 = linalg.generic {indexing_maps = [#za, #zw, #zc],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "parallel"]}
      ins(%x, %w : tensor<1x6x8x32xf32>, tensor<2x3x3x32x64xf32>) outs(%c : tensor<1x4x6x2x64xf32>)
      attrs = {kiln.packed_rhs, kiln.implicit_conv} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x6x2x64xf32>
  return %0 : tensor<1x4x6x2x64xf32>
}

// -----

// A packed product of 49 rows and 5 panels (a 7x7 map's 1x1 convolution into
// 320 channels) would be 5 work items, which 2 threads share 3:2; its rows
// are split until there are at least 8 items: in whole row blocks (6) that
// would be 30 and 19 rows, one thread's 5 items 5 blocks each, the other's 4,
// so 25 and 24 (a one-row block each).
// With 8 panels there are enough items: one tile of the default 66 rows.
#pl = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>
#pr = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>
#po = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-LABEL: func @few_panels
// CHECK: scf.forall ({{.*}}) = (0, 0, 0, 0) to (1, 49, 5, 64) step (1, 25, 1, 64)
// CHECK: linalg.generic
// CHECK-SAME: kiln.tile_sizes = array<i64: 1, 25, 1, 0, 64>
func.func @few_panels(%a: tensor<1x49x32xf32>, %b: tensor<5x32x64xf32>, %c: tensor<1x49x5x64xf32>) -> tensor<1x49x5x64xf32> {
  %0 = linalg.generic {indexing_maps = [#pl, #pr, #po], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<1x49x32xf32>, tensor<5x32x64xf32>) outs(%c : tensor<1x49x5x64xf32>) attrs = {kiln.packed_rhs} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x49x5x64xf32>
  return %0 : tensor<1x49x5x64xf32>
}
// CHECK-LABEL: func @enough_panels
// CHECK: step (1, 66, 1, 64)
// CHECK: linalg.generic
// CHECK-SAME: kiln.tile_sizes = array<i64: 1, 66, 1, 0, 64>
func.func @enough_panels(%a: tensor<1x49x32xf32>, %b: tensor<8x32x64xf32>, %c: tensor<1x49x8x64xf32>) -> tensor<1x49x8x64xf32> {
  %0 = linalg.generic {indexing_maps = [#pl, #pr, #po], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<1x49x32xf32>, tensor<8x32x64xf32>) outs(%c : tensor<1x49x8x64xf32>) attrs = {kiln.packed_rhs} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x49x8x64xf32>
  return %0 : tensor<1x49x8x64xf32>
}

// -----

// A packed product over a 14x14 map (196 rows, more than one tile of 66) is
// split in two halves of 98 rows, so that each of two threads gets whole rows
// (all channels) as it does in the row-partitioned ops around it; 1024 rows
// (a 32x32 map) still halve, 1025 keep tiles of 66.
#pl = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>
#pr = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>
#po = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-LABEL: func @map_halves
// CHECK: scf.forall ({{.*}}) = (0, 0, 0, 0) to (1, 196, 6, 64) step (1, 98, 1, 64)
// CHECK-LABEL: func @map_halves_1024
// CHECK: step (1, 512, 1, 64)
// CHECK-LABEL: func @large_map
// CHECK: step (1, 66, 1, 64)
func.func @map_halves(%a: tensor<1x196x32xf32>, %b: tensor<6x32x64xf32>, %c: tensor<1x196x6x64xf32>) -> tensor<1x196x6x64xf32> {
  %0 = linalg.generic {indexing_maps = [#pl, #pr, #po], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<1x196x32xf32>, tensor<6x32x64xf32>) outs(%c : tensor<1x196x6x64xf32>) attrs = {kiln.packed_rhs} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x196x6x64xf32>
  return %0 : tensor<1x196x6x64xf32>
}
func.func @map_halves_1024(%a: tensor<1x1024x32xf32>, %b: tensor<6x32x64xf32>, %c: tensor<1x1024x6x64xf32>) -> tensor<1x1024x6x64xf32> {
  %0 = linalg.generic {indexing_maps = [#pl, #pr, #po], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<1x1024x32xf32>, tensor<6x32x64xf32>) outs(%c : tensor<1x1024x6x64xf32>) attrs = {kiln.packed_rhs} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1024x6x64xf32>
  return %0 : tensor<1x1024x6x64xf32>
}
func.func @large_map(%a: tensor<1x1025x32xf32>, %b: tensor<6x32x64xf32>, %c: tensor<1x1025x6x64xf32>) -> tensor<1x1025x6x64xf32> {
  %0 = linalg.generic {indexing_maps = [#pl, #pr, #po], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<1x1025x32xf32>, tensor<6x32x64xf32>) outs(%c : tensor<1x1025x6x64xf32>) attrs = {kiln.packed_rhs} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1025x6x64xf32>
  return %0 : tensor<1x1025x6x64xf32>
}
