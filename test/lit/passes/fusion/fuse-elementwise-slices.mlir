// kiln-fuse-elementwise: a slice of an elementwise result moves above the op that makes it (which
// then computes only the slice, its indices offset) so that the op fuses with the slice's reader;
// a tensor.dim of a result does not count as a reader.
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-fuse-elementwise))' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#mod = affine_map<(d0, d1) -> (d0, d1 mod 4)>

// A causal mask's shape: the comparison's width (a range's length) and the attention mask's
// width agree only at run time, so the lowering cut the comparison to the smaller one.
// CHECK-LABEL: func @mask_through_slice
// CHECK-SAME: (%[[KEEP:.*]]: tensor<?x?xi1>, %[[N:.*]]: index, %[[M:.*]]: index)
// CHECK: %[[CUT:.*]] = tensor.extract_slice %[[KEEP]]
// CHECK: linalg.generic {{.*}} ins(%[[CUT]] : tensor<?x?xi1>)
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: arith.cmpi sle
// CHECK: arith.andi
// CHECK: arith.select
// CHECK-NOT: linalg.generic
func.func @mask_through_slice(%keep: tensor<?x?xi1>, %n: index, %m: index) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %neg = arith.constant -1.0e9 : f32
  %e = tensor.empty(%n, %m) : tensor<?x?xi1>
  %causal = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xi1>) {
  ^bb0(%o: i1):
    %q = linalg.index 0 : index
    %k = linalg.index 1 : index
    %le = arith.cmpi sle, %k, %q : index
    linalg.yield %le : i1
  } -> tensor<?x?xi1>
  %w = tensor.dim %keep, %c1 : tensor<?x?xi1>
  %cols = arith.minsi %m, %w : index
  %a = tensor.extract_slice %causal[0, 0] [%n, %cols] [1, 1] : tensor<?x?xi1> to tensor<?x?xi1>
  %b = tensor.extract_slice %keep[0, 0] [%n, %cols] [1, 1] : tensor<?x?xi1> to tensor<?x?xi1>
  %f = tensor.empty(%n, %cols) : tensor<?x?xf32>
  %bias = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<?x?xi1>, tensor<?x?xi1>) outs(%f : tensor<?x?xf32>) {
  ^bb0(%x: i1, %y: i1, %o: f32):
    %both = arith.andi %x, %y : i1
    %v = arith.select %both, %zero, %neg : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %bias : tensor<?x?xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A slice from an offset: the op computes rows [r, r + 2) and its linalg.index counts from r.
// CHECK-LABEL: func @offset_slice
// CHECK-SAME: %[[R:[a-z0-9]+]]: index
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x8xi64>)
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: %[[ROW:.*]] = affine.apply #{{.*}}()[%[[I]], %[[R]]]
// CHECK: arith.index_cast %[[ROW]]
func.func @offset_slice(%r: index) -> tensor<2x8xi64> {
  %e = tensor.empty() : tensor<16x8xi64>
  %rows = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<16x8xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  } -> tensor<16x8xi64>
  %s = tensor.extract_slice %rows[%r, 0] [2, 8] [1, 1] : tensor<16x8xi64> to tensor<2x8xi64>
  return %s : tensor<2x8xi64>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#mod = affine_map<(d0, d1) -> (d0, d1 mod 4)>

// An input read with its index modulo a size: its slice is not the map applied to the slice's
// offsets and sizes, so the slice stays below.
// CHECK-LABEL: func @modulo_read_keeps_slice
// CHECK: %[[REP:.*]] = linalg.generic
// CHECK: tensor.extract_slice %[[REP]][0, 2] [2, 4]
func.func @modulo_read_keeps_slice(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %e = tensor.empty() : tensor<2x8xf32>
  %rep = linalg.generic {indexing_maps = [#mod, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x4xf32>) outs(%e : tensor<2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x8xf32>
  %s = tensor.extract_slice %rep[0, 2] [2, 4] [1, 1] : tensor<2x8xf32> to tensor<2x4xf32>
  return %s : tensor<2x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// A product's bias add stays on the whole product (its epilogue); the slice stays below it.
// CHECK-LABEL: func @epilogue_keeps_slice
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: %[[BIASED:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: tensor.extract_slice %[[BIASED]][0, 0] [%{{.*}}, 16]
func.func @epilogue_keeps_slice(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>, %bias: tensor<?x16xf32>, %n: index) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %rows = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%rows) : tensor<?x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %p = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x8xf32>, tensor<8x16xf32>) outs(%z : tensor<?x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x16xf32>
  %biased = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %bias : tensor<?x16xf32>, tensor<?x16xf32>) outs(%e : tensor<?x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x16xf32>
  %cut = tensor.extract_slice %biased[0, 0] [%n, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
  return %cut : tensor<?x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The consumer's sizes read from the producer's result: still one fused op.
// CHECK-LABEL: func @dim_of_result
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
func.func @dim_of_result(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<?x8xf32>
  %rows = tensor.dim %sq, %c0 : tensor<?x8xf32>
  %f = tensor.empty(%rows) : tensor<?x8xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sq : tensor<?x8xf32>) outs(%f : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %twice : tensor<?x8xf32>
}
