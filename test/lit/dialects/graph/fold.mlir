// Folding of shape arithmetic: with static shapes, Shape -> Slice/Gather ->
// arithmetic -> Concat -> ConstantOfShape chains become constants.
// RUN: kiln-opt %s -canonicalize | FileCheck %s

// CHECK-LABEL: func @shape_chain
// CHECK-DAG: %[[S:.*]] = graph.constant {value = dense<[2, 12]> : tensor<2xi64>}
// CHECK: %[[R:.*]] = graph.reshape %{{.*}}, %[[S]] : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
// CHECK: return %[[R]]
func.func @shape_chain(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %s = graph.shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %b = graph.slice %s {starts = array<i64: 0>, ends = array<i64: 1>, axes = array<i64: 0>, steps = array<i64: 1>} : (tensor<3xi64>) -> tensor<1xi64>
  %i = graph.constant {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %hw = graph.gather %s, %i {axis = 0 : i64} : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
  %p = graph.reduce_prod %hw {axes = array<i64: 0>, keepdims = 1 : i64} : (tensor<2xi64>) -> tensor<1xi64>
  %c = graph.concat %b, %p {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = graph.reshape %x, %c : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  return %r : tensor<2x12xf32>
}

// CHECK-LABEL: func @int_arith
// CHECK: graph.constant {value = dense<[5, 1]> : tensor<2xi64>}
// CHECK-NOT: graph.sub
func.func @int_arith() -> tensor<2xi64> {
  %a = graph.constant {value = dense<[7, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %b = graph.constant {value = dense<2> : tensor<1xi64>} : () -> tensor<1xi64>
  %0 = graph.sub %a, %b : (tensor<2xi64>, tensor<1xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// Constant BatchNorm parameters fold into one scale and shift per channel:
// a single multiply-add per element, no square root at run time.
// RUN: kiln-opt %s -canonicalize -kiln-convert-graph-to-linalg | FileCheck %s --check-prefix=BN
// BN-LABEL: func @batch_norm_folded
// BN-DAG: arith.constant dense<{{\[\[}}2.000000e+00], [5.000000e-01]]> : tensor<2x1xf32>
// BN-DAG: arith.constant dense<{{\[\[}}-2.000000e+00], [1.000000e+00]]> : tensor<2x1xf32>
// BN-NOT: math.rsqrt
// BN: arith.mulf
// BN: arith.addf
func.func @batch_norm_folded(%x: tensor<1x2x3xf32>) -> tensor<1x2x3xf32> {
  %s = graph.constant {value = dense<[2.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %b = graph.constant {value = dense<[0.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %m = graph.constant {value = dense<[1.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %v = graph.constant {value = dense<[1.0, 4.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 0.0 : f32}
      : (tensor<1x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3xf32>
  return %0 : tensor<1x2x3xf32>
}

// Neg of an int constant folds (an axis count turned into a shape length);
// a float Neg stays.
// CHECK-LABEL: func @neg_fold
// CHECK-DAG: graph.constant {value = dense<[1, -3]> : tensor<2xi64>}
// CHECK-DAG: graph.neg %arg0 : (tensor<2xf32>) -> tensor<2xf32>
// CHECK-NOT: graph.neg
func.func @neg_fold(%x: tensor<2xf32>) -> (tensor<2xi64>, tensor<2xf32>) {
  %c = graph.constant {value = dense<[-1, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %n = graph.neg %c : (tensor<2xi64>) -> tensor<2xi64>
  %f = graph.neg %x : (tensor<2xf32>) -> tensor<2xf32>
  return %n, %f : tensor<2xi64>, tensor<2xf32>
}

// A pad of zero on every side is its input, in any mode; a real pad stays.
// CHECK-LABEL: func @zero_pad
// CHECK: %[[P:.*]] = graph.pad %arg0, %{{.*}} {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 1, 0>}
// CHECK-NOT: graph.pad
// CHECK: return %arg0, %arg0, %[[P]]
func.func @zero_pad(%x: tensor<1x4x2x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x3x8xf32>) {
  %v = graph.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %a = graph.pad %x, %v {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x4x2x8xf32>, tensor<f32>) -> tensor<1x4x2x8xf32>
  %b = graph.pad %x, %v {mode = "reflect", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x4x2x8xf32>, tensor<f32>) -> tensor<1x4x2x8xf32>
  %c = graph.pad %x, %v {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 1, 0>} : (tensor<1x4x2x8xf32>, tensor<f32>) -> tensor<1x4x3x8xf32>
  return %a, %b, %c : tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x3x8xf32>
}
