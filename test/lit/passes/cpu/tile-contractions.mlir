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
