// Data-dependent results lower to host loops: a counting scf.for, a tensor.empty sized by the count, then an
// scf.for that fills it in order (tensor.insert under scf.if); order-free copies are one linalg.generic.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg -canonicalize -cse | FileCheck %s

// NonZero: the count pass reads every element (flat index delinearized), the fill pass writes one column of
// coordinates per non-zero element at the running position.
// CHECK-LABEL: func @non_zero
// CHECK: %[[N:[a-z0-9_]+]] = scf.for %{{.*}} = %c0 to %c6 step %c1 iter_args(%[[ACC:[a-z0-9_]+]] = %c0) -> (index)
// CHECK: arith.cmpf une
// CHECK: %[[E:[a-z0-9_]+]] = tensor.empty(%[[N]]) : tensor<2x?xi64>
// CHECK: %[[R:[a-z0-9_]+]]:2 = scf.for %{{.*}} = %c0 to %c6 step %c1 iter_args(%[[T:[a-z0-9_]+]] = %[[E]], %[[POS:[a-z0-9_]+]] = %c0) -> (tensor<2x?xi64>, index)
// CHECK: scf.if %{{.*}} -> (tensor<2x?xi64>, index)
// CHECK: %[[I0:[a-z0-9_]+]] = tensor.insert %{{.*}} into %[[T]][%c0, %[[POS]]]
// CHECK: tensor.insert %{{.*}} into %[[I0]][%c1, %[[POS]]]
// CHECK: arith.addi %[[POS]], %c1
// CHECK: return %[[R]]#0
func.func @non_zero(%x: tensor<2x3xf32>) -> tensor<2x?xi64> {
  %0 = graph.non_zero %x : (tensor<2x3xf32>) -> tensor<2x?xi64>
  return %0 : tensor<2x?xi64>
}

// -----

// Compress: only min(axis, condition length) conditions are read; the positions of the true ones are counted,
// allocated and filled, then one parallel generic gathers the selected rows.
// CHECK-LABEL: func @compress
// CHECK: %[[LEN:[a-z0-9_]+]] = arith.minsi
// CHECK: %[[N:[a-z0-9_]+]] = scf.for %{{.*}} = %c0 to %[[LEN]]
// CHECK: %[[E:[a-z0-9_]+]] = tensor.empty(%[[N]]) : tensor<?xi64>
// CHECK: %[[P:[a-z0-9_]+]]:2 = scf.for %{{.*}} = %c0 to %[[LEN]] step %c1 iter_args(%{{.*}} = %[[E]], %{{.*}} = %c0)
// CHECK: %[[COUNT:[a-z0-9_]+]] = tensor.dim %[[P]]#0, %c0
// CHECK: %[[OUT:[a-z0-9_]+]] = tensor.empty(%[[COUNT]]) : tensor<?x3xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} outs(%[[OUT]] : tensor<?x3xf32>)
// CHECK: %[[ROW:[a-z0-9_]+]] = linalg.index 0
// CHECK: %[[SRC:[a-z0-9_]+]] = tensor.extract %[[P]]#0[%[[ROW]]]
// CHECK: %[[SRCI:[a-z0-9_]+]] = arith.index_cast %[[SRC]]
// CHECK: tensor.extract %arg0[%[[SRCI]], %{{.*}}]
func.func @compress(%x: tensor<?x3xf32>, %c: tensor<?xi1>) -> tensor<?x3xf32> {
  %0 = graph.compress %x, %c {axis = 0 : i64} : (tensor<?x3xf32>, tensor<?xi1>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// Unique: first occurrences (pairwise row comparisons), ranks of the distinct rows (the count), then indices,
// counts (zero-filled) and inverse indices in one pass, then the gather of the distinct rows.
// CHECK-LABEL: func @unique
// CHECK: %[[FIRST:[a-z0-9_]+]] = scf.for
// CHECK: %[[RANKS:[0-9]+]]:2 = scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %c0) -> (tensor<4xi64>, index)
// CHECK: %[[IDX0:[a-z0-9_]+]] = tensor.empty(%[[RANKS]]#1) : tensor<?xi64>
// CHECK: %[[CNT0:[a-z0-9_]+]] = linalg.fill ins(%c0_i64 : i64) outs(%[[IDX0]] : tensor<?xi64>)
// CHECK: %[[OUTS:[a-z0-9_]+]]:3 = scf.for {{.*}} iter_args(%{{.*}} = %[[IDX0]], %{{.*}} = %[[CNT0]], %{{.*}}) -> (tensor<?xi64>, tensor<?xi64>, tensor<4xi64>)
// CHECK: %[[Y0:[a-z0-9_]+]] = tensor.empty(%[[RANKS]]#1) : tensor<?x3xi64>
// CHECK: %[[Y:[a-z0-9_]+]] = linalg.generic {{.*}} outs(%[[Y0]] : tensor<?x3xi64>)
// CHECK: return %[[Y]], %[[OUTS]]#0, %[[OUTS]]#2, %[[OUTS]]#1
func.func @unique(%x: tensor<4x3xi64>) -> (tensor<?x3xi64>, tensor<?xi64>, tensor<4xi64>, tensor<?xi64>) {
  %0:4 = graph.unique %x {axis = 0 : i64} : (tensor<4x3xi64>) -> (tensor<?x3xi64>, tensor<?xi64>, tensor<4xi64>, tensor<?xi64>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<?x3xi64>, tensor<?xi64>, tensor<4xi64>, tensor<?xi64>
}

// -----

// NonMaxSuppression: the box limit is clamped to [0, boxes]; the first pass (greedy selection per class into
// the static order tensor) sums the selected counts, which size the result that the second pass fills.
// CHECK-LABEL: func @nms
// CHECK: %[[LIM0:[a-z0-9_]+]] = arith.maxsi %{{.*}}, %c0
// CHECK: %[[LIM:[a-z0-9_]+]] = arith.minsi %[[LIM0]], %c6
// CHECK: %[[ORDER0:[a-z0-9_]+]] = tensor.empty() : tensor<1x2x6xi64>
// CHECK: %[[P1:[a-z0-9_]+]]:2 = scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args(%{{.*}} = %[[ORDER0]], %{{.*}} = %c0)
// CHECK: scf.for %{{.*}} = %c0 to %[[LIM]] step %c1
// CHECK: %[[OUT:[a-z0-9_]+]] = tensor.empty(%[[P1]]#1) : tensor<?x3xi64>
// CHECK: %[[P2:[a-z0-9_]+]]:2 = scf.for {{.*}} iter_args(%{{.*}} = %[[OUT]], %{{.*}} = %c0)
// CHECK: tensor.extract %[[P1]]#0
// CHECK: return %[[P2]]#0
func.func @nms(%b: tensor<1x6x4xf32>, %s: tensor<1x2x6xf32>, %m: tensor<1xi64>, %t: tensor<1xf32>) -> tensor<?x3xi64> {
  %0 = graph.non_max_suppression %b, %s, %m, %t, %t : (tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x3xi64>
  return %0 : tensor<?x3xi64>
}
