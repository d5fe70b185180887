// kiln-fold-integer-matmul: an i32 product of 8-bit-derived activations and a
// constant int8 weight becomes graph.integer_matmul over the weight in k pairs.
// RUN: kiln-opt %s -split-input-file -kiln-fold-integer-matmul -verify-diagnostics | FileCheck %s

// The lhs is a uint8 read as i32 minus its zero point (|x| <= 128 + 256 + 131 < 2^15);
// the weight minus its per-tensor zero point (q - 1 = [1, -3]) stays int8.
// Pairs: byte (p, j, 2b + e) holds k = 2j + e of column b: 01 FD repeated.
// CHECK-LABEL: func @matmulinteger
// CHECK-NOT: graph.matmul
// CHECK: %[[W:.*]] = graph.constant {value = dense_resource<integer_weight.q8> : tensor<1x1x32xi8>}
// CHECK: graph.integer_matmul %{{.*}}, %[[W]] : (tensor<?x2xi32>, tensor<1x1x32xi8>) -> tensor<?x16xi32>
// CHECK: integer_weight.q8: "0x4000000001FD01FD01FD01FD01FD01FD01FD01FD01FD01FD01FD01FD01FD01FD01FD01FD"
func.func @matmulinteger(%a: tensor<?x2xi8>) -> tensor<?x16xi32> {
  %c0 = graph.constant {value = dense<0> : tensor<i32>} : () -> tensor<i32>
  %c256 = graph.constant {value = dense<256> : tensor<i32>} : () -> tensor<i32>
  %azp = graph.constant {value = dense<131> : tensor<i32>} : () -> tensor<i32>
  %q = graph.constant {value = dense<[[2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2],
                                      [-2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2]]> : tensor<2x16xi8>} : () -> tensor<2x16xi8>
  %bzp = graph.constant {value = dense<1> : tensor<i8>} : () -> tensor<i8>
  %x = graph.cast %a {to = i32} : (tensor<?x2xi8>) -> tensor<?x2xi32>
  %neg = graph.less %x, %c0 : (tensor<?x2xi32>, tensor<i32>) -> tensor<?x2xi1>
  %up = graph.add %x, %c256 : (tensor<?x2xi32>, tensor<i32>) -> tensor<?x2xi32>
  %u = graph.where %neg, %up, %x : (tensor<?x2xi1>, tensor<?x2xi32>, tensor<?x2xi32>) -> tensor<?x2xi32>
  %ac = graph.sub %u, %azp : (tensor<?x2xi32>, tensor<i32>) -> tensor<?x2xi32>
  %qi = graph.cast %q {to = i32} : (tensor<2x16xi8>) -> tensor<2x16xi32>
  %zi = graph.cast %bzp {to = i32} : (tensor<i8>) -> tensor<i32>
  %w = graph.sub %qi, %zi : (tensor<2x16xi32>, tensor<i32>) -> tensor<2x16xi32>
  %y = graph.matmul %ac, %w : (tensor<?x2xi32>, tensor<2x16xi32>) -> tensor<?x16xi32>
  return %y : tensor<?x16xi32>
}

// -----

// An i32 input is not provably within 16 bits: the 32-bit loop stays.
// CHECK-LABEL: func @wide_lhs
// CHECK: graph.matmul
func.func @wide_lhs(%a: tensor<?x2xi32>) -> tensor<?x16xi32> {
  %q = graph.constant {value = dense<3> : tensor<2x16xi8>} : () -> tensor<2x16xi8>
  %qi = graph.cast %q {to = i32} : (tensor<2x16xi8>) -> tensor<2x16xi32>
  // expected-remark@+1 {{integer product kept as a 32-bit loop: the left operand is not provably within 16 bits}}
  %y = graph.matmul %a, %qi : (tensor<?x2xi32>, tensor<2x16xi32>) -> tensor<?x16xi32>
  return %y : tensor<?x16xi32>
}
