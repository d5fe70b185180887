// kiln-split-spatial-means: a channels-last map's mean over H and W becomes row sums over W,
// their mean over H, and one multiply by 1/W.
// RUN: kiln-opt %s -split-input-file -kiln-split-spatial-means | FileCheck %s

// Squeeze-and-excitation's pool over a 56x56x96 map (1.2 MB).
// CHECK-LABEL: func @split
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x56x56x96xf32>
// CHECK: %[[ROWS:.*]] = graph.reduce_sum %[[X]] {axes = array<i64: 2>} : (tensor<1x56x56x96xf32>) -> tensor<1x56x1x96xf32>
// CHECK: %[[MEAN:.*]] = graph.reduce_mean %[[ROWS]] {axes = array<i64: 1, 2>} : (tensor<1x56x1x96xf32>) -> tensor<1x1x1x96xf32>
// CHECK: %[[W:.*]] = graph.constant {{ *}}{value = dense<0.0178571437> : tensor<1xf32>}
// CHECK: %[[R:.*]] = graph.mul %[[MEAN]], %[[W]] : (tensor<1x1x1x96xf32>, tensor<1xf32>) -> tensor<1x1x1x96xf32>
// CHECK: return %[[R]]
func.func @split(%x: tensor<1x56x56x96xf32>) -> tensor<1x1x1x96xf32> {
  %0 = graph.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<1x56x56x96xf32>) -> tensor<1x1x1x96xf32>
  return %0 : tensor<1x1x1x96xf32>
}

// -----

// Without keepdims (shufflenet's ReduceMean after its last convolution): [N, C] out.
// CHECK-LABEL: func @no_keepdims
// CHECK: graph.reduce_sum %{{.*}} {axes = array<i64: 2>} : (tensor<1x7x7x1024xf32>) -> tensor<1x7x1x1024xf32>
// CHECK: graph.reduce_mean %{{.*}} {axes = array<i64: 1, 2>, keepdims = 0 : i64} : (tensor<1x7x1x1024xf32>) -> tensor<1x1024xf32>
// CHECK: graph.mul %{{.*}}, %{{.*}} : (tensor<1x1024xf32>, tensor<1xf32>) -> tensor<1x1024xf32>
func.func @no_keepdims(%x: tensor<1x7x7x1024xf32>) -> tensor<1x1024xf32> {
  %0 = graph.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = 0 : i64} : (tensor<1x7x7x1024xf32>) -> tensor<1x1024xf32>
  return %0 : tensor<1x1024xf32>
}

// -----

// Left alone: a map under 64 KiB (8x8x64: 16 KiB), a mean over other axes, a dynamic map,
// a map of one row, f16.
// CHECK-LABEL: func @refused
// CHECK-NOT: graph.reduce_sum
// CHECK-NOT: graph.mul
func.func @refused(%small: tensor<1x8x8x64xf32>, %x: tensor<1x56x56x96xf32>, %dyn: tensor<1x?x56x96xf32>,
                   %row: tensor<1x1x4096x96xf32>, %half: tensor<1x56x56x96xf16>)
    -> (tensor<1x1x1x64xf32>, tensor<1x56x56x1xf32>, tensor<1x1x1x96xf32>, tensor<1x1x1x96xf32>, tensor<1x1x1x96xf16>) {
  %0 = graph.reduce_mean %small {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<1x8x8x64xf32>) -> tensor<1x1x1x64xf32>
  %1 = graph.reduce_mean %x {axes = array<i64: 3>, keepdims = 1 : i64} : (tensor<1x56x56x96xf32>) -> tensor<1x56x56x1xf32>
  %2 = graph.reduce_mean %dyn {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<1x?x56x96xf32>) -> tensor<1x1x1x96xf32>
  %3 = graph.reduce_mean %row {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<1x1x4096x96xf32>) -> tensor<1x1x1x96xf32>
  %4 = graph.reduce_mean %half {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<1x56x56x96xf16>) -> tensor<1x1x1x96xf16>
  return %0, %1, %2, %3, %4 : tensor<1x1x1x64xf32>, tensor<1x56x56x1xf32>, tensor<1x1x1x96xf32>, tensor<1x1x1x96xf32>, tensor<1x1x1x96xf16>
}
