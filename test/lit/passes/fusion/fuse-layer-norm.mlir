// kiln-fuse-layer-norm: LayerNormalization exported as small ops becomes graph.layer_norm,
// and near misses (other axis, epsilon outside the root, other readers) stay as they are.
// RUN: kiln-opt %s -split-input-file -kiln-fuse-layer-norm | FileCheck %s

// The pre-opset-17 export: Sub, Pow 2, Add eps, Sqrt, Div, Mul gamma, Add beta.
// CHECK-LABEL: func @exported
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}} = graph.layer_norm %[[X]], %[[G]], %[[B]] :
// CHECK-NEXT: return %[[Y]]
func.func @exported(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<?x?x8xf32>) -> tensor<?x?x1xf32>
  %d = graph.sub %x, %m : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32>
  %sq = graph.pow %d, %two : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<?x?x8xf32>) -> tensor<?x?x1xf32>
  %ve = graph.add %v, %eps : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
  %s = graph.sqrt %ve : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %n = graph.div %d, %s : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32>
  %ng = graph.mul %n, %g : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %y = graph.add %ng, %b : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Mul d*d, the axis as rank-1, Reciprocal + Mul, operands swapped, gain only:
// the bias is absent and the scale is gamma.
// CHECK-LABEL: func @reciprocal_form
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32>, %[[G:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}} = graph.layer_norm %[[X]], %[[G]] {epsilon = 9.99999996E-13 : f32}
// CHECK-NEXT: return %[[Y]]
func.func @reciprocal_form(%x: tensor<2x16xf32>, %g: tensor<16xf32>) -> tensor<2x16xf32> {
  %eps = graph.constant {value = dense<1.0e-12> : tensor<1xf32>} : () -> tensor<1xf32>
  %m = graph.reduce_mean %x {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x16xf32>) -> tensor<2x1xf32>
  %d = graph.sub %x, %m : (tensor<2x16xf32>, tensor<2x1xf32>) -> tensor<2x16xf32>
  %sq = graph.mul %d, %d : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x16xf32>) -> tensor<2x1xf32>
  %ve = graph.add %eps, %v : (tensor<1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %s = graph.sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %r = graph.reciprocal %s : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = graph.mul %r, %d : (tensor<2x1xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %y = graph.mul %g, %n : (tensor<16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// No affine part: the scale is a materialized 1.
// CHECK-LABEL: func @no_affine
// CHECK: %[[ONE:.*]] = graph.constant {value = dense<1.000000e+00> : tensor<1xf32>}
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = graph.layer_norm %{{.*}}, %[[ONE]] :
// CHECK-NEXT: return %[[Y]]
func.func @no_affine(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = graph.pow %d, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// The mean is also an output: it comes from the fused op's mean result.
// CHECK-LABEL: func @mean_also_read
// CHECK: %[[Y:.*]], %[[M:.*]], %{{.*}} = graph.layer_norm
// CHECK-NEXT: return %[[Y]], %[[M]]
func.func @mean_also_read(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = graph.pow %d, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = graph.mul %n, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y, %m : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// The normalized value before the gain has another reader: fuse up to it, keep the Mul.
// CHECK-LABEL: func @normalized_also_read
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = graph.layer_norm
// CHECK-NEXT: %[[G:.*]] = graph.mul %[[Y]], %{{.*}}
// CHECK-NEXT: return %[[G]], %[[Y]]
func.func @normalized_also_read(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = graph.pow %d, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = graph.mul %n, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y, %n : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Reductions over a non-last axis are not LayerNormalization over the last axis.
// CHECK-LABEL: func @middle_axis
// CHECK-NOT: graph.layer_norm
func.func @middle_axis(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  %d = graph.sub %x, %m : (tensor<2x4x8xf32>, tensor<2x1x8xf32>) -> tensor<2x4x8xf32>
  %sq = graph.pow %d, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  %ve = graph.add %v, %eps : (tensor<2x1x8xf32>, tensor<f32>) -> tensor<2x1x8xf32>
  %s = graph.sqrt %ve : (tensor<2x1x8xf32>) -> tensor<2x1x8xf32>
  %n = graph.div %d, %s : (tensor<2x4x8xf32>, tensor<2x1x8xf32>) -> tensor<2x4x8xf32>
  return %n : tensor<2x4x8xf32>
}

// -----

// The variance's mean over a different axis than the centering mean.
// CHECK-LABEL: func @variance_other_axis
// CHECK-NOT: graph.layer_norm
func.func @variance_other_axis(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<8x8xf32>) -> tensor<8x1xf32>
  %d = graph.sub %x, %m : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x8xf32>
  %sq = graph.pow %d, %two : (tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: 0>, keepdims = 1 : i64} : (tensor<8x8xf32>) -> tensor<1x8xf32>
  %ve = graph.add %v, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %s = graph.sqrt %ve : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %n = graph.div %d, %s : (tensor<8x8xf32>, tensor<1x8xf32>) -> tensor<8x8xf32>
  return %n : tensor<8x8xf32>
}

// -----

// Epsilon added after the square root: (x - m) / (sqrt(var) + eps) is another function.
// CHECK-LABEL: func @eps_outside_sqrt
// CHECK-NOT: graph.layer_norm
func.func @eps_outside_sqrt(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = graph.pow %d, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %s = graph.sqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %se = graph.add %s, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %n = graph.div %d, %se : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// Pow 3 is not a variance; the squared value is not the centered one (x^2, not d^2).
// CHECK-LABEL: func @not_a_variance
// CHECK-NOT: graph.layer_norm
func.func @not_a_variance(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %three = graph.constant {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = graph.pow %d, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %d2 = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq2 = graph.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v2 = graph.reduce_mean %sq2 {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve2 = graph.add %v2, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s2 = graph.sqrt %ve2 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n2 = graph.div %d2, %s2 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n, %n2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The centered value d is also returned: the fused op would have to keep it
// alongside, so nothing is fused.
// CHECK-LABEL: func @centered_also_read
// CHECK-NOT: graph.layer_norm
func.func @centered_also_read(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = graph.pow %d, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n, %d : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A gain that varies along another axis ([4, 1]) is not LayerNormalization's scale:
// the normalization fuses, the Mul stays.
// CHECK-LABEL: func @gain_on_rows
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = graph.layer_norm
// CHECK-NEXT: graph.mul %[[Y]], %{{.*}} : (tensor<4x8xf32>, tensor<4x1xf32>)
func.func @gain_on_rows(%x: tensor<4x8xf32>, %g: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = graph.pow %d, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = graph.mul %n, %g : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// ONNX's own expansion of LayerNormalization (the *_expanded node tests):
// var = mean(x * x) - m * m, Mean and 1 / StdDev also returned. They become
// the fused op's Mean and InvStdDev results.
// CHECK-LABEL: func @onnx_expanded
// CHECK-SAME: (%[[X:.*]]: tensor<24x5xf32>, %[[W:.*]]: tensor<1x5xf32>, %[[B:.*]]: tensor<1x5xf32>)
// CHECK-NEXT: %[[Y:.*]], %[[M:.*]], %[[R:.*]] = graph.layer_norm %[[X]], %[[W]], %[[B]] :
// CHECK-NEXT: return %[[Y]], %[[M]], %[[R]]
func.func @onnx_expanded(%x: tensor<24x5xf32>, %w: tensor<1x5xf32>, %b: tensor<1x5xf32>)
    -> (tensor<24x5xf32>, tensor<24x1xf32>, tensor<24x1xf32>) {
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: 1>} : (tensor<24x5xf32>) -> tensor<24x1xf32>
  %xx = graph.mul %x, %x : (tensor<24x5xf32>, tensor<24x5xf32>) -> tensor<24x5xf32>
  %mxx = graph.reduce_mean %xx {axes = array<i64: 1>} : (tensor<24x5xf32>) -> tensor<24x1xf32>
  %mm = graph.mul %m, %m : (tensor<24x1xf32>, tensor<24x1xf32>) -> tensor<24x1xf32>
  %var = graph.sub %mxx, %mm : (tensor<24x1xf32>, tensor<24x1xf32>) -> tensor<24x1xf32>
  %ve = graph.add %var, %eps : (tensor<24x1xf32>, tensor<f32>) -> tensor<24x1xf32>
  %s = graph.sqrt %ve : (tensor<24x1xf32>) -> tensor<24x1xf32>
  %d = graph.sub %x, %m : (tensor<24x5xf32>, tensor<24x1xf32>) -> tensor<24x5xf32>
  %n = graph.div %d, %s : (tensor<24x5xf32>, tensor<24x1xf32>) -> tensor<24x5xf32>
  %nw = graph.mul %n, %w : (tensor<24x5xf32>, tensor<1x5xf32>) -> tensor<24x5xf32>
  %y = graph.add %nw, %b : (tensor<24x5xf32>, tensor<1x5xf32>) -> tensor<24x5xf32>
  %r = graph.reciprocal %s : (tensor<24x1xf32>) -> tensor<24x1xf32>
  return %y, %m, %r : tensor<24x5xf32>, tensor<24x1xf32>, tensor<24x1xf32>
}

// -----

// mean(x * x) - m2 * m2 with m2 another tensor's mean is not the variance of x.
// CHECK-LABEL: func @expanded_other_mean
// CHECK-NOT: graph.layer_norm
func.func @expanded_other_mean(%x: tensor<24x5xf32>, %z: tensor<24x5xf32>) -> tensor<24x5xf32> {
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: 1>} : (tensor<24x5xf32>) -> tensor<24x1xf32>
  %m2 = graph.reduce_mean %z {axes = array<i64: 1>} : (tensor<24x5xf32>) -> tensor<24x1xf32>
  %xx = graph.mul %x, %x : (tensor<24x5xf32>, tensor<24x5xf32>) -> tensor<24x5xf32>
  %mxx = graph.reduce_mean %xx {axes = array<i64: 1>} : (tensor<24x5xf32>) -> tensor<24x1xf32>
  %mm = graph.mul %m2, %m2 : (tensor<24x1xf32>, tensor<24x1xf32>) -> tensor<24x1xf32>
  %var = graph.sub %mxx, %mm : (tensor<24x1xf32>, tensor<24x1xf32>) -> tensor<24x1xf32>
  %ve = graph.add %var, %eps : (tensor<24x1xf32>, tensor<f32>) -> tensor<24x1xf32>
  %s = graph.sqrt %ve : (tensor<24x1xf32>) -> tensor<24x1xf32>
  %d = graph.sub %x, %m : (tensor<24x5xf32>, tensor<24x1xf32>) -> tensor<24x5xf32>
  %n = graph.div %d, %s : (tensor<24x5xf32>, tensor<24x1xf32>) -> tensor<24x5xf32>
  return %n : tensor<24x5xf32>
}

// -----

// The standard deviation itself (not its reciprocal) is also returned: the fused
// op has no such output, so nothing fuses.
// CHECK-LABEL: func @stddev_also_read
// CHECK-NOT: graph.layer_norm
func.func @stddev_also_read(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = graph.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = graph.pow %d, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n, %s : tensor<4x8xf32>, tensor<4x1xf32>
}
