// The paged KV cache ops (kiln-kv-cache-in-place with block-size) lowered: the write scatters each
// row's new entries into its blocks in place, the view gathers through the table, and the fused
// attention reads its key tiles from the pool through the table (the gather left dead).
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg -canonicalize -cse | FileCheck %s

// CHECK-LABEL: func @kv_cache_paged_write
// CHECK-SAME: %[[POOL:[a-z0-9]+]]: tensor<?x2x16x4xf32>, %[[NEW:[a-z0-9]+]]: tensor<?x2x?x4xf32>, %{{.*}}: tensor<i64>, %[[ROWS:[a-z0-9]+]]: tensor<?xi64>, %[[TABLE:[a-z0-9]+]]: tensor<?x?xi64>
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[BLOCKS:.*]] = tensor.dim %[[POOL]], %c0
// CHECK: %[[R:.*]] = scf.for %[[ROW:.*]] = %c0 to %{{.*}} step %c1 iter_args(%[[ACC:.*]] = %[[POOL]])
// CHECK: tensor.extract %[[ROWS]][%[[ROW]]]
// CHECK: scf.if
// CHECK: scf.for %[[T:.*]] = %c0 to
// CHECK: %[[COL:.*]] = arith.divui %{{.*}}, %[[C16]]
// CHECK: %[[OFF:.*]] = arith.remui %{{.*}}, %[[C16]]
// CHECK: %[[ID:.*]] = tensor.extract %[[TABLE]][%[[ROW]], %[[COL]]]
// CHECK: %[[BLK:.*]] = arith.index_cast %[[ID]]
// CHECK: arith.cmpi sge, %[[BLK]], %c0
// CHECK: arith.cmpi slt, %[[BLK]], %[[BLOCKS]]
// CHECK: %[[E:.*]] = tensor.extract_slice %[[NEW]][%[[ROW]], 0, %[[T]], 0] [1, 2, 1, 4]
// CHECK: tensor.insert_slice %[[E]] into %{{.*}}[%[[BLK]], 0, %[[OFF]], 0] [1, 2, 1, 4]
// The token and row loops say their iterations write distinct slots (kiln-parallelize-row-loops).
// CHECK: } {kiln.disjoint_iterations}
// CHECK: } {kiln.disjoint_iterations}
// CHECK: return %[[R]]
func.func @kv_cache_paged_write(%pool: tensor<?x2x16x4xf32>, %new: tensor<?x2x?x4xf32>, %pos: tensor<i64>, %rows: tensor<?xi64>, %table: tensor<?x?xi64>) -> tensor<?x2x16x4xf32> {
  %0 = graph.kv_cache_paged_write %pool, %new, %pos, %rows, %table {axis = 2 : i64} : (tensor<?x2x16x4xf32>, tensor<?x2x?x4xf32>, tensor<i64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<?x2x16x4xf32>
  return %0 : tensor<?x2x16x4xf32>
}

// -----

// The view's length is the position, capped by the table's blocks x 16 (and 0 for an empty pool).
// CHECK-LABEL: func @kv_cache_paged_view
// CHECK-SAME: %[[POOL:[a-z0-9]+]]: tensor<?x2x16x4xf32>, %[[TABLE:[a-z0-9]+]]: tensor<?x?xi64>
// CHECK: %[[W:.*]] = tensor.dim %[[TABLE]], %c1
// CHECK: %[[CAP:.*]] = arith.muli %[[W]], %c16
// CHECK: arith.minsi %{{.*}}, %[[CAP]]
// CHECK: %[[B:.*]] = tensor.dim %[[TABLE]], %c0
// CHECK: %[[INIT:.*]] = tensor.empty(%[[B]], %{{.*}}) : tensor<?x2x?x4xf32>
// CHECK: linalg.generic {{.*}} outs(%[[INIT]]
// CHECK: %[[J:.*]] = linalg.index 2
// CHECK: %[[COL:.*]] = arith.divui %[[J]], %c16
// CHECK: tensor.extract %[[TABLE]][%{{.*}}, %[[COL]]]
// CHECK: arith.remui %[[J]], %c16
// CHECK: tensor.extract %[[POOL]]
func.func @kv_cache_paged_view(%pool: tensor<?x2x16x4xf32>, %table: tensor<?x?xi64>, %pos: tensor<i64>) -> tensor<?x2x?x4xf32> {
  %0 = graph.kv_cache_paged_view %pool, %table, %pos {axis = 2 : i64} : (tensor<?x2x16x4xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

// -----

// Attention over paged keys and values in blocks of 16: key tiles of 64, as for a contiguous cache
// (so the reduction order is the same), each gathered from its 4 blocks (named by the sequence's
// table row) into one loop-carried scratch, keys in rows [0, 64), values in [64, 128); no gather
// of the whole view remains.
// CHECK-LABEL: func @paged_attention_small_blocks
// CHECK-SAME: %{{.*}}: tensor<?x2x?x4xf32>, %[[KP:[a-z0-9]+]]: tensor<?x2x16x4xf32>, %[[VP:[a-z0-9]+]]: tensor<?x2x16x4xf32>, %[[TABLE:[a-z0-9]+]]: tensor<?x?xi64>
// CHECK-NOT: linalg.index
// CHECK: scf.forall (%{{[a-z0-9]+}}, %[[H:[a-z0-9]+]], %{{.*}}) in
// CHECK: %[[S0:.*]] = tensor.empty() : tensor<128x4xf32>
// CHECK: scf.for %[[K0:.*]] = %{{.*}} to %{{.*}} step %c64 iter_args({{.*}}%[[S:.*]] = %[[S0]])
// CHECK: %[[N:.*]] = arith.ceildivui %{{.*}}, %c16
// CHECK: %[[KS:.*]] = scf.for %{{.*}} = %c0 to %[[N]] step %c1 iter_args(%[[A:.*]] = %[[S]])
// CHECK: tensor.extract %[[TABLE]]
// CHECK: %[[KB:.*]] = tensor.extract_slice %[[KP]][%{{.*}}, %[[H]], %{{.*}}, 0] [1, 1, %{{.*}}, 4]
// CHECK: tensor.insert_slice %[[KB]] into %[[A]]
// CHECK: %[[VS:.*]] = scf.for %{{.*}} = %c0 to %[[N]] step %c1 iter_args(%[[B:.*]] = %[[KS]])
// CHECK: %[[VB:.*]] = tensor.extract_slice %[[VP]][%{{.*}}, %[[H]], %{{.*}}, 0] [1, 1, %{{.*}}, 4]
// CHECK: tensor.insert_slice %[[VB]] into %[[B]]
// CHECK: tensor.extract_slice %[[VS]][0, 0] [%{{.*}}, 4]
// CHECK: tensor.extract_slice %[[VS]][64, 0] [%{{.*}}, 4]
// CHECK-NOT: tensor.extract %[[KP]]
func.func @paged_attention_small_blocks(%q: tensor<?x2x?x4xf32>, %kpool: tensor<?x2x16x4xf32>, %vpool: tensor<?x2x16x4xf32>, %table: tensor<?x?xi64>, %pos: tensor<i64>, %mask: tensor<?x1x?x?xf32>) -> tensor<?x2x?x4xf32> {
  %k = graph.kv_cache_paged_view %kpool, %table, %pos {axis = 2 : i64} : (tensor<?x2x16x4xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x?x4xf32>
  %v = graph.kv_cache_paged_view %vpool, %table, %pos {axis = 2 : i64} : (tensor<?x2x16x4xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x?x4xf32>
  %0 = graph.attention %q, %k, %v, %mask {scale = 5.000000e-01 : f32} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

// -----

// Blocks of 128: a key tile of 64 is a slice of one block, at offset k0 % 128; nothing is copied.
// CHECK-LABEL: func @paged_attention_large_blocks
// CHECK-SAME: %{{.*}}: tensor<?x2x?x4xf32>, %[[KP:[a-z0-9]+]]: tensor<?x2x128x4xf32>, %[[VP:[a-z0-9]+]]: tensor<?x2x128x4xf32>, %[[TABLE:[a-z0-9]+]]: tensor<?x?xi64>
// CHECK-NOT: tensor<128x4xf32>
// CHECK: scf.for %[[K0:.*]] = %{{.*}} to %{{.*}} step %c64
// CHECK: %[[COL:.*]] = arith.divui %[[K0]], %c128
// CHECK: %[[OFF:.*]] = arith.remui %[[K0]], %c128
// CHECK: tensor.extract %[[TABLE]][%{{.*}}, %[[COL]]]
// CHECK: tensor.extract_slice %[[KP]][%{{.*}}, %{{.*}}, %[[OFF]], 0] [1, 1, %{{.*}}, 4]
// CHECK: tensor.extract_slice %[[VP]][%{{.*}}, %{{.*}}, %[[OFF]], 0] [1, 1, %{{.*}}, 4]
func.func @paged_attention_large_blocks(%q: tensor<?x2x?x4xf32>, %kpool: tensor<?x2x128x4xf32>, %vpool: tensor<?x2x128x4xf32>, %table: tensor<?x?xi64>, %pos: tensor<i64>, %mask: tensor<?x1x?x?xf32>) -> tensor<?x2x?x4xf32> {
  %k = graph.kv_cache_paged_view %kpool, %table, %pos {axis = 2 : i64} : (tensor<?x2x128x4xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x?x4xf32>
  %v = graph.kv_cache_paged_view %vpool, %table, %pos {axis = 2 : i64} : (tensor<?x2x128x4xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x?x4xf32>
  %0 = graph.attention %q, %k, %v, %mask {scale = 5.000000e-01 : f32} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

// -----

// Blocks of 48 neither divide 64 nor are divided by it: a key tile is one block.
// CHECK-LABEL: func @paged_attention_other_blocks
// CHECK-SAME: %{{.*}}: tensor<?x2x?x4xf32>, %[[KP:[a-z0-9]+]]: tensor<?x2x48x4xf32>
// CHECK: tensor.empty() : tensor<16x48xf32>
// CHECK: scf.for %[[K0:.*]] = %{{.*}} to %{{.*}} step %c48
// CHECK: tensor.extract_slice %[[KP]][%{{.*}}, %{{.*}}, %{{.*}}, 0] [1, 1, %{{.*}}, 4]
func.func @paged_attention_other_blocks(%q: tensor<?x2x?x4xf32>, %kpool: tensor<?x2x48x4xf32>, %vpool: tensor<?x2x48x4xf32>, %table: tensor<?x?xi64>, %pos: tensor<i64>, %mask: tensor<?x1x?x?xf32>) -> tensor<?x2x?x4xf32> {
  %k = graph.kv_cache_paged_view %kpool, %table, %pos {axis = 2 : i64} : (tensor<?x2x48x4xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x?x4xf32>
  %v = graph.kv_cache_paged_view %vpool, %table, %pos {axis = 2 : i64} : (tensor<?x2x48x4xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x?x4xf32>
  %0 = graph.attention %q, %k, %v, %mask {scale = 5.000000e-01 : f32} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
