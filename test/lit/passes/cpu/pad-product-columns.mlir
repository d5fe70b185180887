// kiln-pad-product-columns: a product's constant weight with N not a multiple of 16 gets zero columns to the next multiple, and the result is sliced back.
// RUN: kiln-opt %s -split-input-file -kiln-pad-product-columns | FileCheck %s

// N = 20 -> 32 (the constant's rows get 12 zeros each); the slice gives back
// the 20 columns the graph had.
// CHECK-LABEL: func @odd_columns
// CHECK: %[[W:.*]] = graph.constant {value = dense<{{\[}}[1.000000e+00, 1.000000e+00, {{.*}}, 0.000000e+00, 0.000000e+00]{{.*}}> : tensor<2x32xf32>}
// CHECK: %[[P:.*]] = graph.matmul %arg0, %[[W]] : (tensor<?x3x2xf32>, tensor<2x32xf32>) -> tensor<?x3x32xf32>
// CHECK: %[[S:.*]] = graph.slice %[[P]] {axes = array<i64: 2>, ends = array<i64: 20>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<?x3x32xf32>) -> tensor<?x3x20xf32>
// CHECK: return %[[S]]
func.func @odd_columns(%x: tensor<?x3x2xf32>) -> tensor<?x3x20xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<2x20xf32>} : () -> tensor<2x20xf32>
  %0 = graph.matmul %x, %w : (tensor<?x3x2xf32>, tensor<2x20xf32>) -> tensor<?x3x20xf32>
  return %0 : tensor<?x3x20xf32>
}

// -----

// From 512 columns on, an odd count of 16-column panels becomes 64-column panels instead (a
// one-vector register block reads a broadcast per multiply-add): 6625 CTC classes -> 6656, not
// 6640; 528 -> 576. An even count keeps 16-column rounding: 1000 + 8 would be 1008 = 63 x 16
// (odd: 1024), 1050 -> 1056 = 66 x 16.
// CHECK-LABEL: func @wide_panels
// CHECK: graph.matmul {{.*}} -> tensor<1x6656xf32>
// CHECK: graph.matmul {{.*}} -> tensor<1x576xf32>
// CHECK: graph.matmul {{.*}} -> tensor<1x1056xf32>
// CHECK: graph.matmul {{.*}} -> tensor<1x32xf32>
func.func @wide_panels(%x: tensor<1x2xf32>) -> (tensor<1x6625xf32>, tensor<1x528xf32>, tensor<1x1050xf32>, tensor<1x20xf32>) {
  %a = graph.constant {value = dense<1.0> : tensor<2x6625xf32>} : () -> tensor<2x6625xf32>
  %b = graph.constant {value = dense<1.0> : tensor<2x528xf32>} : () -> tensor<2x528xf32>
  %c = graph.constant {value = dense<1.0> : tensor<2x1050xf32>} : () -> tensor<2x1050xf32>
  %d = graph.constant {value = dense<1.0> : tensor<2x20xf32>} : () -> tensor<2x20xf32>
  %0 = graph.matmul %x, %a : (tensor<1x2xf32>, tensor<2x6625xf32>) -> tensor<1x6625xf32>
  %1 = graph.matmul %x, %b : (tensor<1x2xf32>, tensor<2x528xf32>) -> tensor<1x528xf32>
  %2 = graph.matmul %x, %c : (tensor<1x2xf32>, tensor<2x1050xf32>) -> tensor<1x1050xf32>
  %3 = graph.matmul %x, %d : (tensor<1x2xf32>, tensor<2x20xf32>) -> tensor<1x20xf32>
  return %0, %1, %2, %3 : tensor<1x6625xf32>, tensor<1x528xf32>, tensor<1x1050xf32>, tensor<1x20xf32>
}

// -----

// Left alone: N a multiple of 16, N below 16, a weight read elsewhere too
// (it would be stored twice), a weight that is not a constant.
// CHECK-LABEL: func @left_alone
// CHECK-NOT: graph.slice
func.func @left_alone(%x: tensor<4x2xf32>, %v: tensor<2x20xf32>) -> (tensor<4x32xf32>, tensor<4x10xf32>, tensor<4x20xf32>, tensor<2x20xf32>, tensor<4x20xf32>) {
  %a = graph.constant {value = dense<1.0> : tensor<2x32xf32>} : () -> tensor<2x32xf32>
  %b = graph.constant {value = dense<1.0> : tensor<2x10xf32>} : () -> tensor<2x10xf32>
  %c = graph.constant {value = dense<1.0> : tensor<2x20xf32>} : () -> tensor<2x20xf32>
  %0 = graph.matmul %x, %a : (tensor<4x2xf32>, tensor<2x32xf32>) -> tensor<4x32xf32>
  %1 = graph.matmul %x, %b : (tensor<4x2xf32>, tensor<2x10xf32>) -> tensor<4x10xf32>
  %2 = graph.matmul %x, %c : (tensor<4x2xf32>, tensor<2x20xf32>) -> tensor<4x20xf32>
  %3 = graph.add %c, %c : (tensor<2x20xf32>, tensor<2x20xf32>) -> tensor<2x20xf32>
  %4 = graph.matmul %x, %v : (tensor<4x2xf32>, tensor<2x20xf32>) -> tensor<4x20xf32>
  return %0, %1, %2, %3, %4 : tensor<4x32xf32>, tensor<4x10xf32>, tensor<4x20xf32>, tensor<2x20xf32>, tensor<4x20xf32>
}

// -----

// A constant bias added to the product is padded too and added before the
// slice, so that the add can fuse into the product's tiles; the slice then
// gives back the 20 columns of the sum.
// CHECK-LABEL: func @bias_before_slice
// CHECK-DAG: %[[W:.*]] = graph.constant {{.*}} : () -> tensor<2x32xf32>
// CHECK-DAG: %[[B:.*]] = graph.constant {value = dense<{{\[}}2.000000e+00, {{.*}}, 2.000000e+00, 0.000000e+00, {{.*}}, 0.000000e+00]> : tensor<32xf32>}
// CHECK: %[[P:.*]] = graph.matmul %arg0, %[[W]] : (tensor<?x3x2xf32>, tensor<2x32xf32>) -> tensor<?x3x32xf32>
// CHECK: %[[A:.*]] = graph.add %[[P]], %[[B]] : (tensor<?x3x32xf32>, tensor<32xf32>) -> tensor<?x3x32xf32>
// CHECK: %[[S:.*]] = graph.slice %[[A]] {{.*}} -> tensor<?x3x20xf32>
// CHECK: return %[[S]]
// A bias that is not constant stays after the slice.
// CHECK-LABEL: func @bias_not_constant
// CHECK: graph.slice
// CHECK: graph.add
func.func @bias_before_slice(%x: tensor<?x3x2xf32>) -> tensor<?x3x20xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<2x20xf32>} : () -> tensor<2x20xf32>
  %b = graph.constant {value = dense<2.0> : tensor<20xf32>} : () -> tensor<20xf32>
  %0 = graph.matmul %x, %w : (tensor<?x3x2xf32>, tensor<2x20xf32>) -> tensor<?x3x20xf32>
  %1 = graph.add %0, %b : (tensor<?x3x20xf32>, tensor<20xf32>) -> tensor<?x3x20xf32>
  return %1 : tensor<?x3x20xf32>
}
func.func @bias_not_constant(%x: tensor<?x3x2xf32>, %b: tensor<20xf32>) -> tensor<?x3x20xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<2x20xf32>} : () -> tensor<2x20xf32>
  %0 = graph.matmul %x, %w : (tensor<?x3x2xf32>, tensor<2x20xf32>) -> tensor<?x3x20xf32>
  %1 = graph.add %0, %b : (tensor<?x3x20xf32>, tensor<20xf32>) -> tensor<?x3x20xf32>
  return %1 : tensor<?x3x20xf32>
}
