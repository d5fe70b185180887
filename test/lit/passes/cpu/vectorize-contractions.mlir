// kiln-vectorize-contractions: a static cache tile of a matrix product becomes
// register blocks with loop-carried accumulator vectors.
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-vectorize-contractions))' | FileCheck %s

#lhs = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func @tile
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %c4
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %c16
// CHECK-COUNT-4: vector.transfer_read {{.*}} : tensor<16x64xf32>, vector<16xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<32x64xf32>, vector<16xf32>
// CHECK-COUNT-4: vector.fma
// CHECK-COUNT-4: vector.transfer_write
// CHECK-NOT: linalg.generic
func.func @tile(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<16x32xf32>, tensor<32x64xf32>) outs(%c : tensor<16x64xf32>) attrs = {kiln.tile_sizes = array<i64: 16, 0, 64>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// A tile with a dynamic row count (the edge of a dynamic batch or sequence):
// whole blocks of 4 rows (the default microkernel), then pairs, then a last single row.
// CHECK-LABEL: func @dynamic
// CHECK: %[[M:.*]] = tensor.dim %arg2, %c0
// CHECK: %[[REM:.*]] = arith.remsi %[[M]], %c4
// CHECK: %[[WHOLE:.*]] = arith.subi %[[M]], %[[REM]]
// CHECK: scf.for %{{.*}} = %c0 to %[[WHOLE]] step %c4
// CHECK-COUNT-4: vector.fma
// CHECK: %[[REM2:.*]] = arith.remsi %{{.*}}, %c2
// CHECK: %[[PAIRS:.*]] = arith.subi %[[M]], %[[REM2]]
// CHECK: scf.for %{{.*}} = %[[WHOLE]] to %[[PAIRS]] step %c2
// CHECK-COUNT-2: vector.fma
// CHECK: scf.for %{{.*}} = %[[PAIRS]] to %[[M]] step %c1
// CHECK: vector.fma
// CHECK-NOT: vector.fma
// CHECK-NOT: linalg.generic
func.func @dynamic(%a: tensor<?x32xf32>, %b: tensor<32x64xf32>, %c: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<?x32xf32>, tensor<32x64xf32>) outs(%c : tensor<?x64xf32>) attrs = {kiln.tile_sizes = array<i64: 16, 0, 64>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// With 512-bit vectors a whole 64-column weight panel is taken 6 rows at a
// time (6 x 4 = 24 accumulator registers), then the remaining rows one at a time.
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-vectorize-contractions{rows=8 columns=32}))' | FileCheck %s --check-prefix=WIDE
#pa = affine_map<(d0, d1, d2, d3) -> (d0, d2)>
#pw = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
#pc = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func @packed_panel
// WIDE-LABEL: func @packed_panel
// WIDE: scf.for %{{.*}} step %c6
// WIDE-COUNT-6: vector.fma {{.*}} : vector<64xf32>
// WIDE: scf.for %{{.*}} step %c1
// WIDE: vector.fma {{.*}} : vector<64xf32>
func.func @packed_panel(%a: tensor<?x32xf32>, %w: tensor<1x32x64xf32>, %c: tensor<?x1x64xf32>) -> tensor<?x1x64xf32> {
  %0 = linalg.generic {indexing_maps = [#pa, #pw, #pc], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%a, %w : tensor<?x32xf32>, tensor<1x32x64xf32>) outs(%c : tensor<?x1x64xf32>)
      attrs = {kiln.tile_sizes = array<i64: 64, 1, 0, 64>, kiln.packed_rhs} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x1x64xf32>
  return %0 : tensor<?x1x64xf32>
}

// A reduction longer than twice `reduction-chunk` runs in chunks, each over
// every row block of the tile, with the same per-output order of additions.
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-vectorize-contractions{rows=6 columns=16 reduction-chunk=128 conv-inner-chunk=64}))' | FileCheck %s --check-prefix=CHUNK
// CHUNK-LABEL: func @long_reduction
// CHUNK: scf.for %[[K:.*]] = %c0{{[_0-9]*}} to %c512{{[_0-9]*}} step %c128{{[_0-9]*}} iter_args
// CHUNK: %[[END:.*]] = arith.minsi
// CHUNK: scf.for {{.*}} step %c6{{[_0-9]*}}
// CHUNK: scf.for {{.*}} step %c16{{[_0-9]*}}
// CHUNK: scf.for %{{.*}} = %[[K]] to %[[END]] step %c1{{[_0-9]*}}
// CHUNK-COUNT-6: vector.fma {{.*}} : vector<16xf32>
func.func @long_reduction(%a: tensor<12x512xf32>, %b: tensor<512x64xf32>, %c: tensor<12x64xf32>) -> tensor<12x64xf32> {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<12x512xf32>, tensor<512x64xf32>) outs(%c : tensor<12x64xf32>) attrs = {kiln.tile_sizes = array<i64: 12, 0, 64>} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<12x64xf32>
  return %0 : tensor<12x64xf32>
}

// An implicit convolution's tile (2 output rows x 7 positions, 3x3 taps, 256
// channels, one 16-column panel): its 14 positions are one run of rows (2
// blocks of 6, then a pair), each row's (oh, ow) decoded once per block; the
// channels run in chunks of 64 over every tap, the input read in place at
// (oh + kh, ow + kw).
#xa = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d4, d2 + d5, d6)>
#xw = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d5, d6, d7)>
#xc = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d7)>
// CHUNK-LABEL: func @implicit_conv
// CHUNK: scf.for %[[C0:.*]] = %c0{{[_0-9]*}} to %c256{{[_0-9]*}} step %c64{{[_0-9]*}} iter_args
// CHUNK: scf.for %[[I:.*]] = %c0{{[_0-9]*}} to %{{.*}} step %c6{{[_0-9]*}}
// CHUNK: arith.remui %{{.*}}, %c7{{[_0-9]*}}
// CHUNK: arith.divui %{{.*}}, %c7{{[_0-9]*}}
// CHUNK: scf.for {{.*}} step %c16{{[_0-9]*}}
// CHUNK: scf.for %[[KH:.*]] = %c0{{[_0-9]*}} to %c3{{[_0-9]*}} step %c1{{[_0-9]*}}
// CHUNK: scf.for %[[KW:.*]] = %c0{{[_0-9]*}} to %c3{{[_0-9]*}} step %c1{{[_0-9]*}}
// CHUNK: scf.for %[[C:.*]] = %[[C0]] to %{{.*}} step %c1{{[_0-9]*}}
// CHUNK: vector.transfer_read %arg1[%c0{{[_0-9]*}}, %[[KH]], %[[KW]], %[[C]], %{{.*}}]
// CHUNK: arith.addi %{{.*}}, %[[KH]]
// CHUNK: arith.addi %{{.*}}, %[[KW]]
// CHUNK: tensor.extract %arg0[%c0{{[_0-9]*}}, %{{.*}}, %{{.*}}, %[[C]]]
// CHUNK-COUNT-6: vector.fma {{.*}} : vector<16xf32>
// CHUNK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c2{{[_0-9]*}}
// CHUNK-COUNT-2: vector.fma {{.*}} : vector<16xf32>
// CHUNK-NOT: linalg.generic
func.func @implicit_conv(%x: tensor<1x4x9x256xf32>, %w: tensor<1x3x3x256x16xf32>, %c: tensor<1x2x7x1x16xf32>) -> tensor<1x2x7x1x16xf32> {
  %0 = linalg.generic {indexing_maps = [#xa, #xw, #xc],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "parallel"]}
      ins(%x, %w : tensor<1x4x9x256xf32>, tensor<1x3x3x256x16xf32>) outs(%c : tensor<1x2x7x1x16xf32>)
      attrs = {kiln.tile_sizes = array<i64: 1, 2, 7, 1, 0, 0, 0, 16>, kiln.packed_rhs, kiln.implicit_conv} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x2x7x1x16xf32>
  return %0 : tensor<1x2x7x1x16xf32>
}
