// kiln-convert-graph-to-linalg: a product over a single term and a concatenation of one tensor
// with itself become elementwise ops (they fuse with their producers and readers), not a
// reduction with its zero fill, nor copies.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s

// The rotary angles: positions [b, s, 1] times inverse frequencies [1, 8].
// CHECK-LABEL: func @outer_product
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[POS:.*]], #[[FREQ:.*]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-NEXT: ^bb0(%[[P:.*]]: f32, %[[F:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[P]], %[[F]]
// CHECK-NEXT: linalg.yield %[[M]]
// CHECK-NOT: reduction
func.func @outer_product(%pos: tensor<?x?x1xf32>, %inv: tensor<1x8xf32>) -> tensor<?x?x8xf32> {
  %0 = graph.matmul %pos, %inv : (tensor<?x?x1xf32>, tensor<1x8xf32>) -> tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

// -----

// A vector operand keeps the product (MatMul's 1-D promotion gives another shape than broadcasting).
// CHECK-LABEL: func @vector_times_row
// CHECK: linalg.fill
// CHECK: iterator_types = ["reduction", "parallel"]
func.func @vector_times_row(%v: tensor<1xf32>, %w: tensor<1x8xf32>) -> tensor<8xf32> {
  %0 = graph.matmul %v, %w : (tensor<1xf32>, tensor<1x8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// [freqs, freqs]: one input read with its last index modulo 8.
// CHECK-DAG: #[[MOD:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2 mod 8)>
// CHECK-LABEL: func @repeated_concat
// CHECK-NOT: tensor.concat
// CHECK: linalg.generic {indexing_maps = [#[[MOD]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0 : tensor<?x?x8xf32>) outs(%{{.*}} : tensor<?x?x16xf32>)
func.func @repeated_concat(%f: tensor<?x?x8xf32>) -> tensor<?x?x16xf32> {
  %0 = graph.concat %f, %f {axis = -1 : i64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

// Different inputs stay a concatenation.
// CHECK-LABEL: func @two_inputs
// CHECK: tensor.concat dim(1)
func.func @two_inputs(%a: tensor<2x8xf32>, %b: tensor<2x8xf32>) -> tensor<2x16xf32> {
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}
