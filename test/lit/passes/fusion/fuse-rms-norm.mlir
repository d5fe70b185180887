// kiln-fuse-rms-norm: RMSNormalization exported as small ops becomes graph.rms_norm,
// and near misses (other axis, epsilon outside the root, other readers) stay as they are.
// RUN: kiln-opt %s -split-input-file -kiln-fuse-rms-norm | FileCheck %s

// The form kiln's Llama test decoder (test/models/gen_lm.py) exports:
// x / Sqrt(ReduceMean(Pow(x, 2)) + eps) * w.
// CHECK-LABEL: func @llama
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>, %[[W:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[Y:.*]] = graph.rms_norm %[[X]], %[[W]] {epsilon = 9.99999997E-7 : f32}
// CHECK-NEXT: return %[[Y]]
func.func @llama(%x: tensor<?x?x8xf32>, %w: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-6> : tensor<f32>} : () -> tensor<f32>
  %sq = graph.pow %x, %two : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<?x?x8xf32>) -> tensor<?x?x1xf32>
  %ve = graph.add %v, %eps : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
  %s = graph.sqrt %ve : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %n = graph.div %x, %s : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32>
  %y = graph.mul %n, %w : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// The Hugging Face export: x * Reciprocal(Sqrt(mean(x * x) + eps)), weight on the left.
// x's other reader (the residual) does not matter.
// CHECK-LABEL: func @hf_reciprocal
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32>, %[[W:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[Y:.*]] = graph.rms_norm %[[X]], %[[W]] :
// CHECK-NEXT: %[[R:.*]] = graph.add %[[Y]], %[[X]]
// CHECK-NEXT: return %[[R]]
func.func @hf_reciprocal(%x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  %eps = graph.constant {value = dense<1.0e-5> : tensor<1xf32>} : () -> tensor<1xf32>
  %sq = graph.mul %x, %x : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x16xf32>) -> tensor<2x1xf32>
  %ve = graph.add %eps, %v : (tensor<1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %s = graph.sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %r = graph.reciprocal %s : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = graph.mul %x, %r : (tensor<2x16xf32>, tensor<2x1xf32>) -> tensor<2x16xf32>
  %y = graph.mul %w, %n : (tensor<16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %z = graph.add %y, %x : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %z : tensor<2x16xf32>
}

// -----

// 1 / sqrt written as Div(1, .), no weight: rms_norm without a scale.
// CHECK-LABEL: func @no_weight
// CHECK-NEXT: %[[Y:.*]] = graph.rms_norm %{{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @no_weight(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-6> : tensor<f32>} : () -> tensor<f32>
  %sq = graph.pow %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %r = graph.div %one, %s : (tensor<f32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.mul %r, %x : (tensor<4x1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// Mean over a non-last axis: not RMSNorm over the hidden size.
// CHECK-LABEL: func @middle_axis
// CHECK-NOT: graph.rms_norm
func.func @middle_axis(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-6> : tensor<f32>} : () -> tensor<f32>
  %sq = graph.pow %x, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  %ve = graph.add %v, %eps : (tensor<2x1x8xf32>, tensor<f32>) -> tensor<2x1x8xf32>
  %s = graph.sqrt %ve : (tensor<2x1x8xf32>) -> tensor<2x1x8xf32>
  %n = graph.div %x, %s : (tensor<2x4x8xf32>, tensor<2x1x8xf32>) -> tensor<2x4x8xf32>
  return %n : tensor<2x4x8xf32>
}

// -----

// Mean over the last two axes (a 2-D RMS): refused, only the last axis is recognized.
// CHECK-LABEL: func @two_axes
// CHECK-NOT: graph.rms_norm
func.func @two_axes(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-6> : tensor<f32>} : () -> tensor<f32>
  %sq = graph.pow %x, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x1x1xf32>
  %ve = graph.add %v, %eps : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
  %s = graph.sqrt %ve : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %n = graph.div %x, %s : (tensor<2x4x8xf32>, tensor<2x1x1xf32>) -> tensor<2x4x8xf32>
  return %n : tensor<2x4x8xf32>
}

// -----

// Epsilon added outside the root: x / (sqrt(ms) + eps) is another function.
// CHECK-LABEL: func @eps_outside_sqrt
// CHECK-NOT: graph.rms_norm
func.func @eps_outside_sqrt(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-6> : tensor<f32>} : () -> tensor<f32>
  %sq = graph.pow %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %s = graph.sqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %se = graph.add %s, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %n = graph.div %x, %se : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// The mean square is also returned: fusing would have to recompute it, so nothing fuses.
// CHECK-LABEL: func @mean_square_also_read
// CHECK-NOT: graph.rms_norm
func.func @mean_square_also_read(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-6> : tensor<f32>} : () -> tensor<f32>
  %sq = graph.pow %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div %x, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n, %v : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// The square of another value (y^2, dividing x), and an exponent of 3: not an RMS of x.
// CHECK-LABEL: func @not_rms_of_x
// CHECK-NOT: graph.rms_norm
func.func @not_rms_of_x(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %three = graph.constant {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-6> : tensor<f32>} : () -> tensor<f32>
  %sq = graph.pow %y, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div %x, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %cu = graph.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v2 = graph.reduce_mean %cu {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve2 = graph.add %v2, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s2 = graph.sqrt %ve2 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n2 = graph.div %x, %s2 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n, %n2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The normalized value is also read before the weight: fuse the norm, keep the Mul.
// CHECK-LABEL: func @normalized_also_read
// CHECK: %[[Y:.*]] = graph.rms_norm %{{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[G:.*]] = graph.mul %[[Y]], %{{.*}}
// CHECK-NEXT: return %[[G]], %[[Y]]
func.func @normalized_also_read(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-6> : tensor<f32>} : () -> tensor<f32>
  %sq = graph.pow %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div %x, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = graph.mul %n, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y, %n : tensor<4x8xf32>, tensor<4x8xf32>
}
