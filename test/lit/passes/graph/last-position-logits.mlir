// kiln-last-position-logits: a decoder with a KV cache computes its output head on the last
// kiln.logit_rows positions only (a new scalar input: 1 to decode, K + 1 to verify K speculated
// tokens); a plain forward pass keeps every position.
// RUN: kiln-opt %s -split-input-file -kiln-last-position-logits | FileCheck %s

// CHECK-LABEL: func @main
// CHECK-SAME: %[[ROWS:[a-z0-9]+]]: tensor<i64> {kiln.dims = [], kiln.dtype = 7 : i64, kiln.logit_rows, kiln.name = "kiln.logit_rows"}
// CHECK-SAME: -> (tensor<?x?x50xf32> {kiln.dims = ["batch", "", ""], kiln.name = "logits"})
// CHECK: %[[N:.*]] = graph.unsqueeze %[[ROWS]] {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
// CHECK: %[[START:.*]] = graph.neg %[[N]]
// CHECK: %[[END:.*]] = graph.constant {value = dense<9223372036854775807> : tensor<1xi64>}
// CHECK: %[[LAST:.*]] = graph.dynamic_slice %{{.*}}, %[[START]], %[[END]] {axes = array<i64: 1>, steps = array<i64: 1>}
// CHECK: graph.matmul %[[LAST]], %{{.*}} : (tensor<?x?x8xf32>, tensor<8x50xf32>) -> tensor<?x?x50xf32>
func.func @main(%h: tensor<?x?x8xf32>, %cache: tensor<?x2x?x4xf32> {kiln.kv_cache = 2 : i64}, %w: tensor<8x50xf32>)
    -> (tensor<?x?x50xf32> {kiln.name = "logits", kiln.dims = ["batch", "sequence_length", ""]}) {
  %0 = graph.matmul %h, %w : (tensor<?x?x8xf32>, tensor<8x50xf32>) -> tensor<?x?x50xf32>
  return %0 : tensor<?x?x50xf32>
}

// -----

// No KV cache (a forward pass, e.g. GPT scoring a whole sequence): every position stays, and no
// input is added.
// CHECK-LABEL: func @main
// CHECK-NOT: kiln.logit_rows
// CHECK-NOT: graph.dynamic_slice
// CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<?x?x8xf32>, tensor<8x50xf32>) -> tensor<?x?x50xf32>
func.func @main(%h: tensor<?x?x8xf32>, %w: tensor<8x50xf32>)
    -> (tensor<?x?x50xf32> {kiln.name = "logits", kiln.dims = ["batch", "sequence_length", ""]}) {
  %0 = graph.matmul %h, %w : (tensor<?x?x8xf32>, tensor<8x50xf32>) -> tensor<?x?x50xf32>
  return %0 : tensor<?x?x50xf32>
}

// -----

// Logits that the graph also reads elsewhere keep every position.
// CHECK-LABEL: func @main
// CHECK-NOT: graph.dynamic_slice
func.func @main(%h: tensor<?x?x8xf32>, %cache: tensor<?x2x?x4xf32> {kiln.kv_cache = 2 : i64}, %w: tensor<8x50xf32>)
    -> (tensor<?x?x50xf32> {kiln.name = "logits"}, tensor<?x?x50xf32> {kiln.name = "scaled"}) {
  %0 = graph.matmul %h, %w : (tensor<?x?x8xf32>, tensor<8x50xf32>) -> tensor<?x?x50xf32>
  %1 = graph.add %0, %0 : (tensor<?x?x50xf32>, tensor<?x?x50xf32>) -> tensor<?x?x50xf32>
  return %0, %1 : tensor<?x?x50xf32>, tensor<?x?x50xf32>
}
