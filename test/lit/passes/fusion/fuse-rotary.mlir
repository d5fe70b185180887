// kiln-fuse-rotary: x * cos + Concat(Neg(x[H/2:]), x[:H/2]) * sin becomes graph.rotary.
// RUN: kiln-opt %s -split-input-file -kiln-fuse-rotary | FileCheck %s

// The Llama export (test/models/gen_lm.py): the second slice ends at INT64_MAX.
// CHECK-LABEL: func @llama_rope
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x?x16xf32>, %[[C:.*]]: tensor<?x1x?x16xf32>, %[[S:.*]]: tensor<?x1x?x16xf32>)
// CHECK-NEXT: %[[R:.*]] = graph.rotary %[[X]], %[[C]], %[[S]]
// CHECK-NEXT: return %[[R]]
func.func @llama_rope(%x: tensor<?x4x?x16xf32>, %cos: tensor<?x1x?x16xf32>, %sin: tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %a = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x?x8xf32>
  %b = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x?x8xf32>
  %n = graph.neg %b : (tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %r = graph.concat %n, %a {axis = -1 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x16xf32>
  %m1 = graph.mul %x, %cos : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %m2 = graph.mul %r, %sin : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %y = graph.add %m1, %m2 : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// Operands the other way round, negative slice bounds, the axis as rank - 1.
// CHECK-LABEL: func @swapped
// CHECK-NEXT: %[[R:.*]] = graph.rotary %arg0, %arg1, %arg2 : (tensor<3x8xf16>, tensor<8xf16>, tensor<3x8xf16>) -> tensor<3x8xf16>
// CHECK-NEXT: return %[[R]]
func.func @swapped(%x: tensor<3x8xf16>, %cos: tensor<8xf16>, %sin: tensor<3x8xf16>) -> tensor<3x8xf16> {
  %b = graph.slice %x {axes = array<i64: -1>, ends = array<i64: 8>, starts = array<i64: -4>, steps = array<i64: 1>} : (tensor<3x8xf16>) -> tensor<3x4xf16>
  %a = graph.slice %x {axes = array<i64: 1>, ends = array<i64: -4>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<3x8xf16>) -> tensor<3x4xf16>
  %n = graph.neg %b : (tensor<3x4xf16>) -> tensor<3x4xf16>
  %r = graph.concat %n, %a {axis = 1 : i64} : (tensor<3x4xf16>, tensor<3x4xf16>) -> tensor<3x8xf16>
  %m2 = graph.mul %sin, %r : (tensor<3x8xf16>, tensor<3x8xf16>) -> tensor<3x8xf16>
  %m1 = graph.mul %cos, %x : (tensor<8xf16>, tensor<3x8xf16>) -> tensor<3x8xf16>
  %y = graph.add %m2, %m1 : (tensor<3x8xf16>, tensor<3x8xf16>) -> tensor<3x8xf16>
  return %y : tensor<3x8xf16>
}

// -----

// Not the rotation: the halves the wrong way round (x[:H/2] negated), a slice read elsewhere,
// halves of different sizes, a cos that widens x (the Mul does not keep x's type).
// CHECK-LABEL: func @not_rotary
// CHECK-NOT: graph.rotary
func.func @not_rotary(%x: tensor<3x8xf32>, %cos: tensor<3x8xf32>, %sin: tensor<3x8xf32>, %wide: tensor<2x3x8xf32>)
    -> (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x4xf32>, tensor<3x8xf32>, tensor<2x3x8xf32>) {
  %a = graph.slice %x {axes = array<i64: 1>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %b = graph.slice %x {axes = array<i64: 1>, ends = array<i64: 8>, starts = array<i64: 4>, steps = array<i64: 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %n = graph.neg %a : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %r = graph.concat %n, %b {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x8xf32>
  %m1 = graph.mul %x, %cos : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %m2 = graph.mul %r, %sin : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %y = graph.add %m1, %m2 : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>

  %a2 = graph.slice %x {axes = array<i64: 1>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %b2 = graph.slice %x {axes = array<i64: 1>, ends = array<i64: 8>, starts = array<i64: 4>, steps = array<i64: 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %n2 = graph.neg %b2 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %r2 = graph.concat %n2, %a2 {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x8xf32>
  %m3 = graph.mul %x, %cos : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %m4 = graph.mul %r2, %sin : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %y2 = graph.add %m3, %m4 : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>

  %a3 = graph.slice %x {axes = array<i64: 1>, ends = array<i64: 3>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<3x8xf32>) -> tensor<3x3xf32>
  %b3 = graph.slice %x {axes = array<i64: 1>, ends = array<i64: 8>, starts = array<i64: 3>, steps = array<i64: 1>} : (tensor<3x8xf32>) -> tensor<3x5xf32>
  %n3 = graph.neg %b3 : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %r3 = graph.concat %n3, %a3 {axis = 1 : i64} : (tensor<3x5xf32>, tensor<3x3xf32>) -> tensor<3x8xf32>
  %m5 = graph.mul %x, %cos : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %m6 = graph.mul %r3, %sin : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %y3 = graph.add %m5, %m6 : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>

  %a4 = graph.slice %x {axes = array<i64: 1>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %b4 = graph.slice %x {axes = array<i64: 1>, ends = array<i64: 8>, starts = array<i64: 4>, steps = array<i64: 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %n4 = graph.neg %b4 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %r4 = graph.concat %n4, %a4 {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x8xf32>
  %m7 = graph.mul %x, %wide : (tensor<3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %m8 = graph.mul %r4, %sin : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %y4 = graph.add %m7, %m8 : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
  return %y, %y2, %a2, %y3, %y4 : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x4xf32>, tensor<3x8xf32>, tensor<2x3x8xf32>
}
