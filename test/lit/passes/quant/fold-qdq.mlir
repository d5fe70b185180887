// kiln-fold-qdq: a MatMul weight dequantized in the graph from int8 constants
// (the importer's form of DequantizeLinear) becomes a quantized product over
// the model's own values; any other dequantized constant becomes an f32
// constant computed once; the dequantizing chains disappear.
// RUN: kiln-opt %s -split-input-file -kiln-fold-qdq -verify-diagnostics | FileCheck %s

// Per column, with a zero point: q - zp = [3, -2] for every column, exactly.
// CHECK-LABEL: func @per_column
// CHECK-NOT: graph.cast
// CHECK-NOT: graph.sub
// CHECK: %[[W:.*]] = graph.constant {value = dense_resource<wq.q8> : tensor<1x2x16xi8>}
// CHECK: %[[S:.*]] = graph.constant {value = dense_resource<wq.scales> : tensor<1x1x16xf32>}
// CHECK: graph.quantized_matmul %arg0, %[[W]], %[[S]] {bits = 8 : i64, group_size = 2 : i64}
// CHECK-NOT: graph.mul
// CHECK: wq.q8: "0x40000000
// CHECK-SAME: 03030303030303030303030303030303FEFEFEFEFEFEFEFEFEFEFEFEFEFEFEFE"
func.func @per_column(%x: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %q = graph.constant {value = dense<[[4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4],
                                      [-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1]]> : tensor<2x16xi8>} : () -> tensor<2x16xi8> loc("wq")
  %zp = graph.constant {value = dense<1> : tensor<16xi8>} : () -> tensor<16xi8>
  %shape = graph.constant {value = dense<[1, 16]> : tensor<2xi64>} : () -> tensor<2xi64>
  %s = graph.constant {value = dense<0.5> : tensor<1x16xf32>} : () -> tensor<1x16xf32>
  %qf = graph.cast %q {to = f32} : (tensor<2x16xi8>) -> tensor<2x16xf32>
  %zf = graph.cast %zp {to = f32} : (tensor<16xi8>) -> tensor<16xf32>
  %zr = graph.reshape %zf, %shape : (tensor<16xf32>, tensor<2xi64>) -> tensor<1x16xf32>
  %c = graph.sub %qf, %zr : (tensor<2x16xf32>, tensor<1x16xf32>) -> tensor<2x16xf32>
  %w = graph.mul %c, %s : (tensor<2x16xf32>, tensor<1x16xf32>) -> tensor<2x16xf32>
  %y = graph.matmul %x, %w : (tensor<?x2xf32>, tensor<2x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// A shifted value outside int8 (-128 - 1) cannot be a quantized product (remark); the weight is
// dequantized once, here, into an f32 constant: (-128 - 1) * 0.5 = -64.5 (0xC2810000).
// CHECK-LABEL: func @out_of_range
// CHECK-NOT: graph.sub
// CHECK: %[[W:.*]] = graph.constant {value = dense_resource<qdq.dequantized> : tensor<1x16xf32>}
// CHECK: graph.matmul %arg0, %[[W]]
// CHECK: qdq.dequantized: "0x40000000000081C2
func.func @out_of_range(%x: tensor<?x1xf32>) -> tensor<?x16xf32> {
  %q = graph.constant {value = dense<-128> : tensor<1x16xi8>} : () -> tensor<1x16xi8>
  %zp = graph.constant {value = dense<1> : tensor<i8>} : () -> tensor<i8>
  %s = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %qf = graph.cast %q {to = f32} : (tensor<1x16xi8>) -> tensor<1x16xf32>
  %zf = graph.cast %zp {to = f32} : (tensor<i8>) -> tensor<f32>
  %c = graph.sub %qf, %zf : (tensor<1x16xf32>, tensor<f32>) -> tensor<1x16xf32>
  %w = graph.mul %c, %s : (tensor<1x16xf32>, tensor<f32>) -> tensor<1x16xf32>
  // expected-remark@+1 {{QDQ weight kept dequantized: q - zero_point leaves int8}}
  %y = graph.matmul %x, %w : (tensor<?x1xf32>, tensor<1x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// uint8 (the importer's fix-up: where(x < 0, x + 256, x)) with zero point 128:
// 200 - 128 = 72 (0x48) and 100 - 128 = -28 (0xE4), folded.
// CHECK-LABEL: func @uint8
// CHECK-NOT: graph.where
// CHECK: graph.quantized_matmul
// CHECK: u8.q8: "0x40000000
// CHECK-SAME: 48484848484848484848484848484848E4E4E4E4E4E4E4E4E4E4E4E4E4E4E4E4"
func.func @uint8(%x: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %q = graph.constant {value = dense<[[-56, -56, -56, -56, -56, -56, -56, -56, -56, -56, -56, -56, -56, -56, -56, -56],
                                      [100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100]]> : tensor<2x16xi8>} : () -> tensor<2x16xi8> loc("u8")
  %zp = graph.constant {value = dense<-128> : tensor<i8>} : () -> tensor<i8>
  %zero = graph.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %wrap = graph.constant {value = dense<256.0> : tensor<f32>} : () -> tensor<f32>
  %s = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %qf = graph.cast %q {to = f32} : (tensor<2x16xi8>) -> tensor<2x16xf32>
  %qneg = graph.less %qf, %zero : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xi1>
  %qup = graph.add %qf, %wrap : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %qu = graph.where %qneg, %qup, %qf : (tensor<2x16xi1>, tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %zf = graph.cast %zp {to = f32} : (tensor<i8>) -> tensor<f32>
  %zneg = graph.less %zf, %zero : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %zup = graph.add %zf, %wrap : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %zu = graph.where %zneg, %zup, %zf : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
  %c = graph.sub %qu, %zu : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %w = graph.mul %c, %s : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %y = graph.matmul %x, %w : (tensor<?x2xf32>, tensor<2x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// A convolution's weight, per output channel (axis 0: scale and zero point
// reshaped to [2, 1, 1, 1]): dequantized once into an f32 constant with the
// graph's own f32 operations, (q - zp) * s: channel 0 (3 - 1) * 0.25 = 0.5
// (0x3F000000), channel 1 (3 - 0) * 2 = 6 (0x40C00000).
// CHECK-LABEL: func @conv
// CHECK-NOT: graph.cast
// CHECK: %[[W:.*]] = graph.constant {value = dense_resource<cw.dequantized> : tensor<2x1x1x1xf32>}
// CHECK: graph.conv %arg0, %[[W]]
// CHECK: cw.dequantized: "0x400000000000003F0000C040"
func.func @conv(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %q = graph.constant {value = dense<3> : tensor<2x1x1x1xi8>} : () -> tensor<2x1x1x1xi8> loc("cw")
  %zp = graph.constant {value = dense<[1, 0]> : tensor<2xi8>} : () -> tensor<2xi8>
  %s = graph.constant {value = dense<[0.25, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %shape = graph.constant {value = dense<[2, 1, 1, 1]> : tensor<4xi64>} : () -> tensor<4xi64>
  %qf = graph.cast %q {to = f32} : (tensor<2x1x1x1xi8>) -> tensor<2x1x1x1xf32>
  %zf = graph.cast %zp {to = f32} : (tensor<2xi8>) -> tensor<2xf32>
  %zr = graph.reshape %zf, %shape : (tensor<2xf32>, tensor<4xi64>) -> tensor<2x1x1x1xf32>
  %sr = graph.reshape %s, %shape : (tensor<2xf32>, tensor<4xi64>) -> tensor<2x1x1x1xf32>
  %c = graph.sub %qf, %zr : (tensor<2x1x1x1xf32>, tensor<2x1x1x1xf32>) -> tensor<2x1x1x1xf32>
  %w = graph.mul %c, %sr : (tensor<2x1x1x1xf32>, tensor<2x1x1x1xf32>) -> tensor<2x1x1x1xf32>
  %y = graph.conv %x, %w {pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}
