// graph.winograd_input / graph.winograd_output -> vector code over channels:
// a forall over (n, row of tiles); per tile and vector of channels, the tile's
// 16 input vectors (or 16 products) combined in registers. The products
// between them are one packed product with a weight per tile element.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg=vector-bits=512 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s --check-prefix=W256

// Input: padded so that every 4x4 window is inside (7x6 outputs in 4 x 3
// tiles of 2x2 read rows 0..9 and columns 0..7); B^T d B is additions and
// subtractions only; one vector written into each of the 16 leading slices
// of the work item's [16, 1, 3, 32] block.
// CHECK-LABEL: func @input
// CHECK: tensor.pad %arg0 low[0, 1, 1, 0] high[0, 2, 1, 0]
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (1, 4) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<16x1x12x32xf32>)
// CHECK: tensor.extract_slice {{.*}} : tensor<16x1x12x32xf32> to tensor<16x1x3x32xf32>
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c3
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c16
// CHECK-COUNT-16: vector.transfer_read %padded{{.*}} : tensor<1x10x8x32xf32>, vector<16xf32>
// CHECK-NOT: arith.mulf
// CHECK-NOT: arith.negf
// CHECK-COUNT-16: vector.transfer_write {{.*}} : vector<16xf32>, tensor<16x1x3x32xf32>
// CHECK: tensor.parallel_insert_slice {{.*}} : tensor<16x1x3x32xf32> into tensor<16x1x12x32xf32>
// W256-LABEL: func @input
// W256: step %c8
// W256-COUNT-16: vector.transfer_read %padded{{.*}} : tensor<1x10x8x32xf32>, vector<8xf32>
func.func @input(%x: tensor<1x7x6x32xf32>) -> tensor<16x1x12x32xf32> {
  %v = graph.winograd_input %x {tile = 2 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x7x6x32xf32>) -> tensor<16x1x12x32xf32>
  return %v : tensor<16x1x12x32xf32>
}

// -----

// The products: the packed product's generic, its weight read at the tile
// element d0 (kiln-tile-contractions gives it one element per tile).
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d4, d5)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
// CHECK-LABEL: func @products
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%arg0, %arg1 : tensor<16x?x49x32xf32>, tensor<16x3x32x16xf32>) outs(%{{.*}} : tensor<16x?x49x3x16xf32>) attrs = {kiln.packed_rhs}
// CHECK: tensor.collapse_shape {{.*}} : tensor<16x?x49x3x16xf32> into tensor<16x?x49x48xf32>
func.func @products(%v: tensor<16x?x49x32xf32>, %u: tensor<16x3x32x16xf32>) -> tensor<16x?x49x48xf32> {
  %p = graph.packed_matmul %v, %u : (tensor<16x?x49x32xf32>, tensor<16x3x32x16xf32>) -> tensor<16x?x49x48xf32>
  return %p : tensor<16x?x49x48xf32>
}

// -----

// Output, 8x5 positions: rows of 2x2 tiles are [1, 2, 5, 48] blocks of the
// result, which an elementwise consumer can be fused into (kiln.epilogue_tiles);
// two whole tiles write 4 vectors each, the last one (column 4) 2; the bias
// is added to each.
// CHECK-LABEL: func @output_even
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (%{{.*}}, 4) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?x8x5x48xf32>)
// CHECK: tensor.extract_slice {{.*}} to tensor<1x2x5x48xf32>
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c2
// CHECK-COUNT-16: vector.transfer_read %arg0{{.*}} : tensor<16x?x12x48xf32>, vector<16xf32>
// CHECK: vector.transfer_read %arg1
// CHECK-COUNT-4: vector.transfer_write
// CHECK: scf.for %{{.*}} = %c2{{.*}} to %c3
// CHECK-COUNT-16: vector.transfer_read %arg0
// CHECK: vector.transfer_read %arg1
// CHECK-COUNT-2: vector.transfer_write
// CHECK-NOT: vector.transfer_write
// CHECK: tensor.parallel_insert_slice {{.*}} : tensor<1x2x5x48xf32> into tensor<?x8x5x48xf32>
// CHECK: } {kiln.epilogue_tiles}
// CHECK-NOT: tensor.extract_slice
func.func @output_even(%p: tensor<16x?x12x48xf32>, %b: tensor<48xf32>) -> tensor<?x8x5x48xf32> {
  %y = graph.winograd_output %p, %b {tile = 2 : i64, height = 8 : i64, width = 5 : i64} : (tensor<16x?x12x48xf32>, tensor<48xf32>) -> tensor<?x8x5x48xf32>
  return %y : tensor<?x8x5x48xf32>
}

// -----

// 7 rows: the last row of tiles reaches a row past the output. Its block has
// min(2, 7 - 2 ty) rows: the first row of each tile is written, the second
// only inside the block; the output is exactly 7 rows (no slice after), so the
// loop stays an epilogue's tile loop.
// CHECK-LABEL: func @output_odd
// CHECK: scf.forall (%{{.*}}, %[[TY:.*]]) in (1, 4) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x7x4x48xf32>)
// CHECK: %[[TOP:.*]] = arith.muli %[[TY]], %c2
// CHECK: %[[LEFT:.*]] = arith.subi %c7{{.*}}, %[[TOP]]
// CHECK: %[[ROWS:.*]] = arith.minsi %c2{{.*}}, %[[LEFT]]
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, %[[TOP]], 0, 0] [1, %[[ROWS]], 4, 48] [1, 1, 1, 1] : tensor<1x7x4x48xf32> to tensor<1x?x4x48xf32>
// CHECK-COUNT-2: vector.transfer_write {{.*}}[%c0{{.*}}, %c0{{.*}}, %{{.*}}, %{{.*}}] {{.*}} : vector<16xf32>, tensor<1x?x4x48xf32>
// CHECK: %[[IN:.*]] = arith.cmpi slt, %c1{{.*}}, %[[ROWS]]
// CHECK: scf.if %[[IN]] -> (tensor<1x?x4x48xf32>)
// CHECK: vector.transfer_write {{.*}}[%c0{{.*}}, %c1{{.*}}, %{{.*}}, %{{.*}}] {{.*}} : vector<16xf32>, tensor<1x?x4x48xf32>
// CHECK: %[[IN2:.*]] = arith.cmpi slt, %c1{{.*}}, %[[ROWS]]
// CHECK: scf.if %[[IN2]]
// CHECK: tensor.parallel_insert_slice {{.*}} : tensor<1x?x4x48xf32> into tensor<1x7x4x48xf32>
// CHECK: } {kiln.epilogue_tiles}
// CHECK-NOT: tensor.extract_slice
func.func @output_odd(%p: tensor<16x1x8x48xf32>) -> tensor<1x7x4x48xf32> {
  %y = graph.winograd_output %p {tile = 2 : i64, height = 7 : i64, width = 4 : i64} : (tensor<16x1x8x48xf32>) -> tensor<1x7x4x48xf32>
  return %y : tensor<1x7x4x48xf32>
}
