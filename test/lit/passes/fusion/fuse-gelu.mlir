// kiln-fuse-gelu: GELU exported in its erf and tanh forms becomes graph.gelu; wrong
// constants, another input, or intermediates with other readers do not fuse.
// RUN: kiln-opt %s -split-input-file -kiln-fuse-gelu | FileCheck %s

// The form kiln's GPT-2 test decoder (test/models/gen_lm.py) exports:
// Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5).
// CHECK-LABEL: func @erf_gpt2
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x32xf32>)
// CHECK-NEXT: %[[Y:.*]] = graph.gelu %[[X]] : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @erf_gpt2(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %sqrt2 = graph.constant {value = dense<1.41421354> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<?x?x32xf32>, tensor<f32>) -> tensor<?x?x32xf32>
  %e = graph.erf %d : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %a = graph.add %e, %one : (tensor<?x?x32xf32>, tensor<f32>) -> tensor<?x?x32xf32>
  %m = graph.mul %x, %a : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %y = graph.mul %m, %half : (tensor<?x?x32xf32>, tensor<f32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// PyTorch's x * 0.5 * (1 + erf(x * 0.7071)): the half first, constants on the left, 1/sqrt 2 rounded.
// CHECK-LABEL: func @erf_torch
// CHECK-NEXT: %[[Y:.*]] = graph.gelu %{{.*}} : (tensor<4x32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @erf_torch(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %inv = graph.constant {value = dense<0.7071> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<1xf32>} : () -> tensor<1xf32>
  %h = graph.mul %x, %half : (tensor<4x32xf32>, tensor<1xf32>) -> tensor<4x32xf32>
  %d = graph.mul %inv, %x : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %e = graph.erf %d : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = graph.add %one, %e : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %h, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// x * (1 + erf(x / sqrt 2)) / 2.
// CHECK-LABEL: func @erf_div_two
// CHECK-NEXT: %[[Y:.*]] = graph.gelu %{{.*}} : (tensor<4x32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @erf_div_two(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %sqrt2 = graph.constant {value = dense<1.4142> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = graph.erf %d : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = graph.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = graph.mul %a, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.div %m, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// The tanh form (GPT-2's "gelu_new"): 0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * Pow(x, 3)))).
// CHECK-LABEL: func @tanh_pow
// CHECK-NEXT: %[[Y:.*]] = graph.gelu %{{.*}} {approximate = "tanh"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @tanh_pow(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %three = graph.constant {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %c = graph.constant {value = dense<0.044715> : tensor<f32>} : () -> tensor<f32>
  %k = graph.constant {value = dense<0.797884583> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %h = graph.mul %half, %x : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %p = graph.pow %x, %three : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %cp = graph.mul %c, %p : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %in = graph.add %x, %cp : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %s = graph.mul %k, %in : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %t = graph.tanh %s : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = graph.add %one, %t : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %h, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// The tanh form with x^3 as x * x * x and the products the other way round.
// CHECK-LABEL: func @tanh_products
// CHECK-NEXT: %[[Y:.*]] = graph.gelu %{{.*}} {approximate = "tanh"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @tanh_products(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %c = graph.constant {value = dense<0.044715> : tensor<f32>} : () -> tensor<f32>
  %k = graph.constant {value = dense<0.7978846> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %xx = graph.mul %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %p = graph.mul %xx, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %cp = graph.mul %p, %c : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %in = graph.add %cp, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %s = graph.mul %in, %k : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %t = graph.tanh %s : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = graph.add %t, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = graph.mul %x, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %half, %m : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// 0.4 instead of 0.5: not GELU.
// CHECK-LABEL: func @wrong_half
// CHECK-NOT: graph.gelu
func.func @wrong_half(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %sqrt2 = graph.constant {value = dense<1.41421354> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = graph.constant {value = dense<0.4> : tensor<f32>} : () -> tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = graph.erf %d : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = graph.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = graph.mul %x, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %m, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// The erf scale is 1.5, not sqrt 2.
// CHECK-LABEL: func @wrong_erf_scale
// CHECK-NOT: graph.gelu
func.func @wrong_erf_scale(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %sqrt2 = graph.constant {value = dense<1.5> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = graph.erf %d : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = graph.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = graph.mul %x, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %m, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// 0.04 instead of 0.044715 in the tanh form.
// CHECK-LABEL: func @wrong_cubic_coefficient
// CHECK-NOT: graph.gelu
func.func @wrong_cubic_coefficient(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %three = graph.constant {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %c = graph.constant {value = dense<0.04> : tensor<f32>} : () -> tensor<f32>
  %k = graph.constant {value = dense<0.797884583> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %h = graph.mul %half, %x : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %p = graph.pow %x, %three : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %cp = graph.mul %c, %p : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %in = graph.add %x, %cp : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %s = graph.mul %k, %in : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %t = graph.tanh %s : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = graph.add %one, %t : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %h, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Erf of one value times another: x * 0.5 * (1 + erf(z / sqrt 2)) is not gelu(x).
// CHECK-LABEL: func @other_input
// CHECK-NOT: graph.gelu
func.func @other_input(%x: tensor<4x32xf32>, %z: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %sqrt2 = graph.constant {value = dense<1.41421354> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %d = graph.div %z, %sqrt2 : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = graph.erf %d : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = graph.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = graph.mul %x, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %m, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// The erf term is also returned: fusing would compute it twice, so nothing fuses.
// CHECK-LABEL: func @erf_also_read
// CHECK-NOT: graph.gelu
func.func @erf_also_read(%x: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %sqrt2 = graph.constant {value = dense<1.41421354> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = graph.erf %d : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = graph.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = graph.mul %x, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %m, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  return %y, %e : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// A half that broadcasts x to a larger shape ([2, 4, 32]) would change the result's shape.
// CHECK-LABEL: func @broadcasting_half
// CHECK-NOT: graph.gelu
func.func @broadcasting_half(%x: tensor<4x32xf32>) -> tensor<2x4x32xf32> {
  %sqrt2 = graph.constant {value = dense<1.41421354> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %d = graph.div %x, %sqrt2 : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = graph.erf %d : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = graph.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = graph.mul %x, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %m, %half : (tensor<4x32xf32>, tensor<2x1x1xf32>) -> tensor<2x4x32xf32>
  return %y : tensor<2x4x32xf32>
}

// -----

// f16: sqrt 2 is stored as 1.4140625 (one f16 ulp off), still GELU.
// CHECK-LABEL: func @erf_f16
// CHECK-NEXT: %[[Y:.*]] = graph.gelu %{{.*}} : (tensor<8xf16>) -> tensor<8xf16>
// CHECK-NEXT: return %[[Y]]
func.func @erf_f16(%x: tensor<8xf16>) -> tensor<8xf16> {
  %sqrt2 = graph.constant {value = dense<1.4140625> : tensor<f16>} : () -> tensor<f16>
  %one = graph.constant {value = dense<1.0> : tensor<f16>} : () -> tensor<f16>
  %half = graph.constant {value = dense<0.5> : tensor<f16>} : () -> tensor<f16>
  %d = graph.div %x, %sqrt2 : (tensor<8xf16>, tensor<f16>) -> tensor<8xf16>
  %e = graph.erf %d : (tensor<8xf16>) -> tensor<8xf16>
  %a = graph.add %e, %one : (tensor<8xf16>, tensor<f16>) -> tensor<8xf16>
  %m = graph.mul %x, %a : (tensor<8xf16>, tensor<8xf16>) -> tensor<8xf16>
  %y = graph.mul %m, %half : (tensor<8xf16>, tensor<f16>) -> tensor<8xf16>
  return %y : tensor<8xf16>
}

// -----

// f32 with sqrt 2 written as 1.414 (error 1.5e-4 relative): too far, not fused.
// CHECK-LABEL: func @erf_sqrt2_too_rounded
// CHECK-NOT: graph.gelu
func.func @erf_sqrt2_too_rounded(%x: tensor<8xf32>) -> tensor<8xf32> {
  %sqrt2 = graph.constant {value = dense<1.414> : tensor<f32>} : () -> tensor<f32>
  %one = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = graph.erf %d : (tensor<8xf32>) -> tensor<8xf32>
  %a = graph.add %e, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %m = graph.mul %x, %a : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = graph.mul %m, %half : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
