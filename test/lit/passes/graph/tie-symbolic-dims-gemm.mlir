// kiln-tie-symbolic-dims on a Gemm with a bias.
// RUN: kiln-opt %s -kiln-tie-symbolic-dims | FileCheck %s

// Gemm's bias C broadcasts against the result: a dynamic dim of it is read as
// the result's, so it is tied to the dims that make the result (A's rows,
// B's columns); a conv's bias and weight meet the result's channels.
// CHECK-LABEL: func @main
// CHECK-SAME: tensor<?x?xf32> {kiln.dims = ["m", "k"]}
// CHECK-SAME: tensor<?x?xf32> {kiln.dims = ["k", "n"]}
// CHECK-SAME: tensor<?x?xf32> {kiln.dims = ["m", "n"]}
func.func @main(%a: tensor<?x?xf32> {kiln.dims = ["m", "k"]}, %b: tensor<?x?xf32> {kiln.dims = ["", "n"]},
                     %c: tensor<?x?xf32> {kiln.dims = ["", ""]}) -> tensor<?x?xf32> {
  %0 = graph.gemm %a, %b, %c : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
