// Data-dependent results lower to host loops: a counting scf.for, a tensor.empty sized by the count, then an
// scf.for that fills it in order (tensor.insert under scf.if); order-free copies are one linalg.generic.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg -canonicalize -cse | FileCheck %s

func.func @non_zero(%x: tensor<2x3xf32>) -> tensor<2x?xi64> {
  %0 = graph.non_zero %x : (tensor<2x3xf32>) -> tensor<2x?xi64>
  return %0 : tensor<2x?xi64>
}

// -----

func.func @compress(%x: tensor<?x3xf32>, %c: tensor<?xi1>) -> tensor<?x3xf32> {
  %0 = graph.compress %x, %c {axis = 0 : i64} : (tensor<?x3xf32>, tensor<?xi1>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

func.func @unique(%x: tensor<4x3xi64>) -> (tensor<?x3xi64>, tensor<?xi64>, tensor<4xi64>, tensor<?xi64>) {
  %0:4 = graph.unique %x {axis = 0 : i64} : (tensor<4x3xi64>) -> (tensor<?x3xi64>, tensor<?xi64>, tensor<4xi64>, tensor<?xi64>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<?x3xi64>, tensor<?xi64>, tensor<4xi64>, tensor<?xi64>
}

// -----

func.func @nms(%b: tensor<1x6x4xf32>, %s: tensor<1x2x6xf32>, %m: tensor<1xi64>, %t: tensor<1xf32>) -> tensor<?x3xi64> {
  %0 = graph.non_max_suppression %b, %s, %m, %t, %t : (tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x3xi64>
  return %0 : tensor<?x3xi64>
}
