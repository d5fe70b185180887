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
