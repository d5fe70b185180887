// kiln-tie-symbolic-dims: input dims that meet in elementwise ops or a
// contraction get one symbol; unrelated dims keep theirs.
// RUN: kiln-opt %s -kiln-tie-symbolic-dims | FileCheck %s

// CHECK-LABEL: func @main
// CHECK-SAME: %{{.*}}: tensor<?x?xf32> {kiln.dims = ["batch", "k"]}
// CHECK-SAME: %{{.*}}: tensor<?x8xf32> {kiln.dims = ["k", ""]}
// CHECK-SAME: %{{.*}}: tensor<?x8xf32> {kiln.dims = ["batch", ""]}
// CHECK-SAME: %{{.*}}: tensor<?xf32> {kiln.dims = ["other"]}
func.func @main(%a: tensor<?x?xf32> {kiln.dims = ["batch", "k"]}, %w: tensor<?x8xf32> {kiln.dims = ["rows", ""]},
                %b: tensor<?x8xf32> {kiln.dims = ["", ""]}, %c: tensor<?xf32> {kiln.dims = ["other"]})
    -> (tensor<?x8xf32>, tensor<?xf32>) {
  %0 = graph.matmul %a, %w : (tensor<?x?xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %1 = graph.add %0, %b : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %2 = graph.relu %c : (tensor<?xf32>) -> tensor<?xf32>
  return %1, %2 : tensor<?x8xf32>, tensor<?xf32>
}

