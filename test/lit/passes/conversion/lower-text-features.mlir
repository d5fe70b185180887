// kiln-convert-graph-to-linalg for tfidf_vectorizer: the pool becomes constant tables; counts per pool n-gram and row, then per output column.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s

// Every column has one n-gram: the counts, computed over (row, n-gram, skip,
// start) with the last two reduced, are read directly. The skip loop is cut
// to C - 1 = 5 skips (a bigram with a larger skip does not fit in the row).
// The second token is read at a clamped position and compared with the table.
// CHECK-LABEL: func @tf_permutation
// CHECK: %[[SKIPS:.*]] = tensor.empty() : tensor<5xi64>
// CHECK-DAG: arith.constant dense<{{\[}}[4, 0], [4, 5], [5, 0]]> : tensor<3x2xi64>
// CHECK-DAG: arith.constant dense<[1, 2, 1]> : tensor<3xi64>
// CHECK: %[[COUNTS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]{{.*}} ins(%arg0, %{{.*}}, %{{.*}}, %[[SKIPS]] : tensor<2x6xi32>, tensor<3xi64>, tensor<3xi64>, tensor<5xi64>) outs(%{{.*}} : tensor<2x3xi64>)
// CHECK: arith.extsi
// CHECK: arith.minsi
// CHECK: tensor.extract %arg0
// CHECK: linalg.yield {{.*}} : i64
// CHECK: linalg.generic {{.*}}ins(%[[COUNTS]] : tensor<2x3xi64>)
// CHECK-NOT: scf.for
// CHECK: arith.sitofp
// CHECK-NOT: graph.
func.func @tf_permutation(%x: tensor<2x6xi32>) -> tensor<2x3xf32> {
  %0 = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 1 : i64, max_gram_length = 2 : i64,
      max_skip_count = 9 : i64, ngram_counts = array<i64: 0, 2>, ngram_indexes = array<i64: 0, 2, 1>,
      pool_int64s = array<i64: 4, 5, 4, 5>} : (tensor<2x6xi32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Columns 0 and 2 collect no n-gram, column 1 two: each column sums its
// range of the (column-ordered) table in an scf.for, and IDF turns a positive
// count into the column's weight. Unigrams are outside [2, 2] and dropped.
// The row length is dynamic, so is the skip count: max(1, min(4, C - 1)).
// CHECK-LABEL: func @idf_shared_column
// CHECK: %[[LEN:.*]] = tensor.dim %arg0
// CHECK: %[[M:.*]] = arith.subi %[[LEN]]
// CHECK: arith.minsi %{{.*}}, %[[M]] : index
// CHECK: arith.maxsi
// CHECK: arith.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi64>
// CHECK: %[[COUNTS:.*]] = linalg.generic {{.*}}outs(%{{.*}} : tensor<1x2xi64>)
// CHECK: arith.constant dense<[0, 0, 2]> : tensor<3xi64>
// CHECK: arith.constant dense<[0, 2, 2]> : tensor<3xi64>
// CHECK: arith.constant dense<[2.500000e-01, 5.000000e-01, 2.000000e+00]> : tensor<3xf32>
// CHECK: linalg.generic {{.*}}outs(%{{.*}} : tensor<3xf32>)
// CHECK: scf.for
// CHECK: tensor.extract %[[COUNTS]]
// CHECK: arith.cmpi sgt
// CHECK: arith.select
func.func @idf_shared_column(%x: tensor<?xi64>) -> tensor<3xf32> {
  %0 = graph.tfidf_vectorizer %x {mode = "IDF", min_gram_length = 2 : i64, max_gram_length = 2 : i64,
      max_skip_count = 3 : i64, ngram_counts = array<i64: 0, 1>, ngram_indexes = array<i64: 2, 1, 1>,
      pool_int64s = array<i64: 9, 1, 2, 3, 4>, weights = array<f32: 0.25, 0.5, 2.0>} : (tensor<?xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// No pool n-gram has a counted length: a zero fill, nothing counted.
// CHECK-LABEL: func @nothing_counted
// CHECK: linalg.fill {{.*}} -> tensor<?x2xf32>
// CHECK-NOT: linalg.generic
func.func @nothing_counted(%x: tensor<?x5xi64>) -> tensor<?x2xf32> {
  %0 = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 3 : i64, max_gram_length = 3 : i64,
      max_skip_count = 0 : i64, ngram_counts = array<i64: 0, 1>, ngram_indexes = array<i64: 0, 1>,
      pool_int64s = array<i64: 1, 2, 3>} : (tensor<?x5xi64>) -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}
