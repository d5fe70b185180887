// kiln-quantize-weights: constant f32 weights of matmul/gemm become int8 or
// int4 column panels with their scales, read by graph.quantized_matmul.
// RUN: kiln-opt %s -split-input-file -kiln-quantize-weights="bits=8 min-elements=0" | FileCheck %s --check-prefix=Q8
// RUN: kiln-opt %s -split-input-file -kiln-quantize-weights="bits=4 group-size=2 min-elements=0" | FileCheck %s --check-prefix=Q4
// RUN: kiln-opt %s -split-input-file -kiln-quantize-weights="bits=4 group-size=2 f16-scales=true min-elements=0" | FileCheck %s --check-prefix=F16
// RUN: kiln-opt %s -split-input-file -kiln-quantize-weights="bits=8 keep=head min-elements=0" -verify-diagnostics | FileCheck %s --check-prefix=KEEP

// int8, per column: column c is [0.7, -0.35, 0.1, 0.2], scale 0.7/127;
// q = [127, -63.5 -> -64 (ties to even), 18.14 -> 18, 36.29 -> 36].
// Q8-LABEL: func @matmul
// Q8: %[[W:.*]] = graph.constant {value = dense_resource<w.q8> : tensor<1x4x16xi8>}
// Q8: %[[S:.*]] = graph.constant {value = dense_resource<w.scales> : tensor<1x1x16xf32>}
// Q8: graph.quantized_matmul %arg0, %[[W]], %[[S]] {bits = 8 : i64, group_size = 4 : i64} : (tensor<?x?x4xf32>, tensor<1x4x16xi8>, tensor<1x1x16xf32>) -> tensor<?x?x16xf32>
// Q8-NOT: graph.matmul
// int4, groups of 2: [0.7, -0.35] -> scale 0.1, q [7, -3.5 -> -4];
// [0.1, 0.2] -> scale 0.2/7, q [3.5 -> 4, 7]. Bytes hold k = 2j low, 2j+1 high:
// 0xC7 (7, -4) in row 0, 0x74 (4, 7) in row 1.
// Q4-LABEL: func @matmul
// Q4: graph.quantized_matmul %arg0, %{{.*}}, %{{.*}} {bits = 4 : i64, group_size = 2 : i64} : (tensor<?x?x4xf32>, tensor<1x2x16xi8>, tensor<1x2x16xf32>) -> tensor<?x?x16xf32>
// F16-LABEL: func @matmul
// F16: graph.quantized_matmul {{.*}} : (tensor<?x?x4xf32>, tensor<1x2x16xi8>, tensor<1x2x16xf16>) -> tensor<?x?x16xf32>
// Q8: w.q8: "0x40000000
// Q8-SAME: 7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7FC0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C012121212121212121212121212121212
// Q4: w.q4: "0x40000000
// Q4-SAME: C7C7C7C7C7C7C7C7C7C7C7C7C7C7C7C774747474747474747474747474747474"
func.func @matmul(%x: tensor<?x?x4xf32>) -> tensor<?x?x16xf32> {
  %w = graph.constant {value = dense<[[0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7],
                                      [-0.35, -0.35, -0.35, -0.35, -0.35, -0.35, -0.35, -0.35, -0.35, -0.35, -0.35, -0.35, -0.35, -0.35, -0.35, -0.35],
                                      [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1],
                                      [0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]]> : tensor<4x16xf32>} : () -> tensor<4x16xf32> loc("w")
  %y = graph.matmul %x, %w : (tensor<?x?x4xf32>, tensor<4x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// Gemm (transB: the weight is stored [N, K]) keeps alpha, beta and C as ops
// after the product. N = 20 has no panel width: a last 16-column panel padded
// with zeros, the result's 20 columns recorded. N below one panel (8) and a
// weight named in `keep` stay in f32 with a remark.
// Q8-LABEL: func @gemm
// Q8: %[[Q:.*]] = graph.quantized_matmul %arg0, {{.*}} : (tensor<?x2xf32>, tensor<1x2x16xi8>, tensor<1x1x16xf32>) -> tensor<?x16xf32>
// Q8: %[[A:.*]] = graph.mul %[[Q]], %{{.*}} : (tensor<?x16xf32>, tensor<f32>) -> tensor<?x16xf32>
// Q8: %[[C:.*]] = graph.mul %arg1, %{{.*}} : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
// Q8: graph.add %[[A]], %[[C]]
// Q8: graph.quantized_matmul %arg0, {{.*}} {bits = 8 : i64, columns = 20 : i64, group_size = 2 : i64} : (tensor<?x2xf32>, tensor<2x2x16xi8>, tensor<2x1x16xf32>) -> tensor<?x20xf32>
// Q8: graph.gemm
// KEEP-LABEL: func @gemm
// KEEP: graph.quantized_matmul
// KEEP: graph.quantized_matmul
// KEEP: graph.gemm
// KEEP: graph.matmul
func.func @gemm(%x: tensor<?x2xf32>, %c: tensor<16xf32>) -> (tensor<?x16xf32>, tensor<?x20xf32>, tensor<?x8xf32>, tensor<?x16xf32>) {
  %w = graph.constant {value = dense<0.5> : tensor<16x2xf32>} : () -> tensor<16x2xf32> loc("fc.weight")
  %y = graph.gemm %x, %w, %c {transB = 1 : i64, alpha = 0.5 : f32, beta = 2.0 : f32} : (tensor<?x2xf32>, tensor<16x2xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %w2 = graph.constant {value = dense<0.25> : tensor<20x2xf32>} : () -> tensor<20x2xf32> loc("padded.weight")
  %z = graph.gemm %x, %w2 {transB = 1 : i64} : (tensor<?x2xf32>, tensor<20x2xf32>) -> tensor<?x20xf32>
  %w4 = graph.constant {value = dense<0.25> : tensor<8x2xf32>} : () -> tensor<8x2xf32> loc("narrow.weight")
  // expected-remark@+1 {{kept in f32: weight 'narrow.weight' [K=2, N=8]: N = 8 is below one 16-column panel}}
  %n = graph.gemm %x, %w4 {transB = 1 : i64} : (tensor<?x2xf32>, tensor<8x2xf32>) -> tensor<?x8xf32>
  %w3 = graph.constant {value = dense<0.125> : tensor<2x16xf32>} : () -> tensor<2x16xf32> loc("head.weight")
  // expected-remark@+1 {{kept in f32 (--quantize-keep): weight 'head.weight'}}
  %h = graph.matmul %x, %w3 : (tensor<?x2xf32>, tensor<2x16xf32>) -> tensor<?x16xf32>
  return %y, %z, %n, %h : tensor<?x16xf32>, tensor<?x20xf32>, tensor<?x8xf32>, tensor<?x16xf32>
}

