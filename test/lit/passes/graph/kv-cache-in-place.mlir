// kiln-kv-cache-in-place: concat(past, new) returned as present becomes an in-place cache write.
// RUN: kiln-opt %s -split-input-file -kiln-kv-cache-in-place | FileCheck %s

// CHECK-LABEL: func @main
// CHECK-SAME: %[[CACHE:[a-z0-9]+]]: tensor<?x2x?x4xf32> {bufferization.writable = true, kiln.dims = ["batch", "", "kv_capacity", ""], kiln.kv_cache = 2 : i64, kiln.name = "past_key_values.0.key"}
// CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<i64> {kiln.dims = [], kiln.dtype = 7 : i64, kiln.kv_position, kiln.name = "kiln.past_length"}
// CHECK-SAME: %[[ROWS:[a-z0-9]+]]: tensor<?xi64> {kiln.dims = ["batch"], kiln.dtype = 7 : i64, kiln.kv_row_positions, kiln.name = "kiln.row_positions"}
// CHECK-SAME: -> (tensor<?x2x?x?xf32> {kiln.name = "scores"}, tensor<4xi64> {kiln.name = "past_shape"})
// CHECK: %[[PAST:.*]] = graph.kv_cache_prefix %[[CACHE]], %[[POS]] {axis = 2 : i64}
// CHECK: graph.shape %[[PAST]]
// CHECK: %[[KV:.*]] = graph.kv_cache_append %[[CACHE]], %{{.*}}, %[[POS]], %[[ROWS]] {axis = 2 : i64}
// CHECK-NOT: graph.concat
// CHECK: graph.transpose %[[KV]]
// CHECK: return %{{.*}}, %{{.*}} : tensor<?x2x?x?xf32>, tensor<4xi64>
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

// A concat that is only returned (nothing in the graph reads the cache) is left alone.
// CHECK-LABEL: func @main
// CHECK-NOT: kiln.kv_cache
// CHECK: graph.concat
func.func @main(%past: tensor<1x2x?x4xf32>, %new: tensor<1x2x1x4xf32>) -> tensor<1x2x?x4xf32> {
  %kv = graph.concat %past, %new {axis = 2 : i64} : (tensor<1x2x?x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x?x4xf32>
  return %kv : tensor<1x2x?x4xf32>
}

// -----

// A cache appended along dim 0 has no batch to index by row: no kiln.row_positions, and every
// row appends at kiln.past_length.
// CHECK-LABEL: func @main
// CHECK-SAME: kiln.name = "kiln.past_length"}
// CHECK-NOT: kiln.row_positions
// CHECK: graph.kv_cache_append %{{.*}}, %{{.*}}, %{{[a-z0-9]+}} {axis = 0 : i64}
func.func @main(%past: tensor<?x4xf32> {kiln.name = "past_key_values.0.key", kiln.dims = ["past", ""]},
                %new: tensor<?x4xf32> {kiln.name = "new"})
    -> (tensor<?x?xf32> {kiln.name = "scores"}, tensor<?x4xf32> {kiln.name = "present.0.key"}) {
  %kv = graph.concat %past, %new {axis = 0 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %t = graph.transpose %kv {perm = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %scores = graph.matmul %new, %t : (tensor<?x4xf32>, tensor<4x?xf32>) -> tensor<?x?xf32>
  return %scores, %kv : tensor<?x?xf32>, tensor<?x4xf32>
}
