// kiln-tie-symbolic-dims through graph.attention: the query and key head sizes, the key and value
// lengths, the mask's key axis and the key length, the mask's query axis and the query length meet.
// RUN: kiln-opt %s -kiln-tie-symbolic-dims | FileCheck %s

// CHECK-LABEL: func @main
// CHECK-SAME: {kiln.dims = ["batch", "", "seq", "d"]}
// CHECK-SAME: {kiln.dims = ["batch", "", "total", "d"]}
// CHECK-SAME: {kiln.dims = ["batch", "", "total", "dv"]}
// CHECK-SAME: {kiln.dims = ["batch", "", "seq", "total"]}
func.func @main(%q: tensor<?x4x?x?xf32> {kiln.dims = ["batch", "", "seq", "d"]},
                %k: tensor<?x2x?x?xf32> {kiln.dims = ["b2", "", "total", "dk"]},
                %v: tensor<?x2x?x?xf32> {kiln.dims = ["b3", "", "vlen", "dv"]},
                %m: tensor<?x1x?x?xf32> {kiln.dims = ["b4", "", "mq", "mk"]}) -> tensor<?x4x?x?xf32> {
  %0 = graph.attention %q, %k, %v, %m {scale = 0.25 : f32} : (tensor<?x4x?x?xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x?xf32>
  return %0 : tensor<?x4x?x?xf32>
}
