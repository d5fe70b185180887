// kiln-last-position-logits: a decoder with a KV cache computes its output head on the
// last position only; a plain forward pass keeps every position.
// RUN: kiln-opt %s -split-input-file -kiln-last-position-logits | FileCheck %s

// CHECK-LABEL: func @main
// CHECK-SAME: -> (tensor<?x?x50xf32> {kiln.dims = ["batch", "", ""], kiln.name = "logits"})
// CHECK: %[[LAST:.*]] = graph.slice %{{.*}} {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: -1>, steps = array<i64: 1>}
// CHECK: graph.matmul %[[LAST]], %{{.*}} : (tensor<?x?x8xf32>, tensor<8x50xf32>) -> tensor<?x?x50xf32>
func.func @main(%h: tensor<?x?x8xf32>, %cache: tensor<?x2x?x4xf32> {kiln.kv_cache = 2 : i64}, %w: tensor<8x50xf32>)
    -> (tensor<?x?x50xf32> {kiln.name = "logits", kiln.dims = ["batch", "sequence_length", ""]}) {
  %0 = graph.matmul %h, %w : (tensor<?x?x8xf32>, tensor<8x50xf32>) -> tensor<?x?x50xf32>
  return %0 : tensor<?x?x50xf32>
}

// -----

// No KV cache (a forward pass, e.g. GPT scoring a whole sequence): every position stays.
// CHECK-LABEL: func @main
// CHECK-NOT: graph.slice
// CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<?x?x8xf32>, tensor<8x50xf32>) -> tensor<?x?x50xf32>
func.func @main(%h: tensor<?x?x8xf32>, %w: tensor<8x50xf32>)
    -> (tensor<?x?x50xf32> {kiln.name = "logits", kiln.dims = ["batch", "sequence_length", ""]}) {
  %0 = graph.matmul %h, %w : (tensor<?x?x8xf32>, tensor<8x50xf32>) -> tensor<?x?x50xf32>
  return %0 : tensor<?x?x50xf32>
}

// -----

// Logits that the graph also reads elsewhere keep every position.
// CHECK-LABEL: func @main
// CHECK-NOT: graph.slice
func.func @main(%h: tensor<?x?x8xf32>, %cache: tensor<?x2x?x4xf32> {kiln.kv_cache = 2 : i64}, %w: tensor<8x50xf32>)
    -> (tensor<?x?x50xf32> {kiln.name = "logits"}, tensor<?x?x50xf32> {kiln.name = "scaled"}) {
  %0 = graph.matmul %h, %w : (tensor<?x?x8xf32>, tensor<8x50xf32>) -> tensor<?x?x50xf32>
  %1 = graph.add %0, %0 : (tensor<?x?x50xf32>, tensor<?x?x50xf32>) -> tensor<?x?x50xf32>
  return %0, %1 : tensor<?x?x50xf32>, tensor<?x?x50xf32>
}
