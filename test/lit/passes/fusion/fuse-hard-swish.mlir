// kiln-fuse-hard-swish: x * HardSigmoid(x; alpha 1/6, beta 0.5), PyTorch's
// export of nn.Hardswish below opset 14, becomes graph.hard_swish.
// RUN: kiln-opt %s -split-input-file -kiln-fuse-hard-swish | FileCheck %s

// A convolution's activation (PP-LCNet): one op reading x.
// CHECK-LABEL: func @hard_swish
// CHECK-NEXT: %[[H:.*]] = graph.hard_swish %arg0 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT: return %[[H]]
func.func @hard_swish(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %h = graph.hard_sigmoid %x {alpha = 0.166666672 : f32, beta = 5.000000e-01 : f32} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %y = graph.mul %x, %h : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %y : tensor<1x8x4x4xf32>
}

// -----

// The hard sigmoid on the left.
// CHECK-LABEL: func @gate_first
// CHECK-NEXT: %[[H:.*]] = graph.hard_swish %arg0
// CHECK-NEXT: return %[[H]]
func.func @gate_first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = graph.hard_sigmoid %x {alpha = 0.166666672 : f32, beta = 5.000000e-01 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %y = graph.mul %h, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// ONNX's default HardSigmoid (alpha 0.2) is not HardSwish's; a gate of
// another value is not x's; a gate read elsewhere too would run twice.
// CHECK-LABEL: func @not_hard_swish
// CHECK-NOT: graph.hard_swish
func.func @not_hard_swish(%x: tensor<4xf32>, %z: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = graph.hard_sigmoid %x {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %y1 = graph.mul %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = graph.hard_sigmoid %z {alpha = 0.166666672 : f32, beta = 5.000000e-01 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %y2 = graph.mul %x, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = graph.hard_sigmoid %x {alpha = 0.166666672 : f32, beta = 5.000000e-01 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %y3 = graph.mul %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y1, %y2, %y3, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
