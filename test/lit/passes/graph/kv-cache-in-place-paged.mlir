// kiln-kv-cache-in-place with block-size: each cache becomes a pool of blocks, written and read
// through the kiln.block_table input.
// RUN: kiln-opt %s -split-input-file -kiln-kv-cache-in-place="block-size=16" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-kv-cache-in-place="block-size=0" | FileCheck %s --check-prefix=ROW

// CHECK-LABEL: module attributes {kiln.kv_block_size = 16 : i64}
// CHECK: func @main
// CHECK-SAME: %[[POOL:[a-z0-9]+]]: tensor<?x2x16x4xf32> {bufferization.writable = true, kiln.dims = ["kv_blocks", "", "", ""], kiln.kv_cache = 2 : i64, kiln.name = "past_key_values.0.key"}
// CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<i64> {{{.*}}kiln.name = "kiln.past_length"}
// CHECK-SAME: %[[ROWS:[a-z0-9]+]]: tensor<?xi64> {{{.*}}kiln.name = "kiln.row_positions"}
// CHECK-SAME: %[[TABLE:[a-z0-9]+]]: tensor<?x?xi64> {kiln.dims = ["batch", "kv_blocks_per_sequence"], kiln.dtype = 7 : i64, kiln.kv_block_table, kiln.name = "kiln.block_table"}
// CHECK-SAME: -> (tensor<?x2x?x?xf32> {kiln.name = "scores"}, tensor<4xi64> {kiln.name = "past_shape"})
// CHECK: %[[PAST:.*]] = graph.kv_cache_paged_view %[[POOL]], %[[TABLE]], %[[POS]] {axis = 2 : i64}
// CHECK: graph.shape %[[PAST]]
// CHECK: %[[W:.*]] = graph.kv_cache_paged_write %[[POOL]], %[[NEW:[a-z0-9]+]], %[[POS]], %[[ROWS]], %[[TABLE]] {axis = 2 : i64}
// CHECK: %[[KV:.*]] = graph.kv_cache_paged_view %[[W]], %[[TABLE]], %[[POS]], %[[NEW]] {axis = 2 : i64}
// CHECK-NOT: graph.concat
// CHECK: graph.transpose %[[KV]]
// ROW-NOT: kiln.kv_block_size
// ROW-NOT: kiln.block_table
// ROW: graph.kv_cache_append
func.func @main(%past: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key", kiln.dims = ["batch", "", "past", ""]},
                %new: tensor<?x2x?x4xf32> {kiln.name = "new"})
    -> (tensor<?x2x?x?xf32> {kiln.name = "scores"}, tensor<?x2x?x4xf32> {kiln.name = "present.0.key"}, tensor<4xi64> {kiln.name = "past_shape"}) {
  %s = graph.shape %past : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %kv = graph.concat %past, %new {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %t = graph.transpose %kv {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %scores = graph.matmul %new, %t : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  return %scores, %kv, %s : tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>, tensor<4xi64>
}

// -----

// A cache appended along dim 0 has no per-sequence rows to page: it stays one buffer, with no
// table and no block size.
// CHECK-LABEL: module {
// CHECK-NOT: kiln.block_table
// CHECK: graph.kv_cache_append %{{.*}}, %{{.*}}, %{{[a-z0-9]+}} {axis = 0 : i64}
func.func @main(%past: tensor<?x4xf32> {kiln.name = "past_key_values.0.key", kiln.dims = ["past", ""]},
                %new: tensor<?x4xf32> {kiln.name = "new"})
    -> (tensor<?x?xf32> {kiln.name = "scores"}, tensor<?x4xf32> {kiln.name = "present.0.key"}) {
  %kv = graph.concat %past, %new {axis = 0 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %t = graph.transpose %kv {perm = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %scores = graph.matmul %new, %t : (tensor<?x4xf32>, tensor<4x?xf32>) -> tensor<?x?xf32>
  return %scores, %kv : tensor<?x?xf32>, tensor<?x4xf32>
}
