// The paged KV cache ops (kiln-kv-cache-in-place with block-size) lowered: the write scatters each
// row's new entries into its blocks in place, the view gathers through the table, and the fused
// attention reads key tiles of one block straight from the pool (the gather left dead).
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

// Attention over paged keys and values: key tiles of 16 (the block), each sliced from the block
// the sequence's table row names; no gather remains.
// CHECK-LABEL: func @paged_attention
// CHECK-SAME: %{{.*}}: tensor<?x2x?x4xf32>, %[[KP:[a-z0-9]+]]: tensor<?x2x16x4xf32>, %[[VP:[a-z0-9]+]]: tensor<?x2x16x4xf32>, %[[TABLE:[a-z0-9]+]]: tensor<?x?xi64>
// CHECK-NOT: linalg.index
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]], %{{.*}}) in
// CHECK: tensor.empty() : tensor<16x16xf32>
// CHECK: scf.for %[[K0:.*]] = %c0 to %{{.*}} step %c16
// CHECK: %[[COL:.*]] = arith.divui %[[K0]], %c16
// CHECK: tensor.extract %[[TABLE]][%{{.*}}, %[[COL]]]
// CHECK: tensor.extract_slice %[[KP]][%{{.*}}, %[[H]], 0, 0] [1, 1, %{{.*}}, 4]
// CHECK: tensor.extract_slice %[[VP]][%{{.*}}, %[[H]], 0, 0] [1, 1, %{{.*}}, 4]
// CHECK-NOT: tensor.extract %[[KP]]
func.func @paged_attention(%q: tensor<?x2x?x4xf32>, %kpool: tensor<?x2x16x4xf32>, %vpool: tensor<?x2x16x4xf32>, %table: tensor<?x?xi64>, %pos: tensor<i64>, %mask: tensor<?x1x?x?xf32>) -> tensor<?x2x?x4xf32> {
  %k = graph.kv_cache_paged_view %kpool, %table, %pos {axis = 2 : i64} : (tensor<?x2x16x4xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x?x4xf32>
  %v = graph.kv_cache_paged_view %vpool, %table, %pos {axis = 2 : i64} : (tensor<?x2x16x4xf32>, tensor<?x?xi64>, tensor<i64>) -> tensor<?x2x?x4xf32>
  %0 = graph.attention %q, %k, %v, %mask {scale = 5.000000e-01 : f32} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
