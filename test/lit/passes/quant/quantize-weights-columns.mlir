// kiln-quantize-weights with panel=1 (the CUDA target's layout): one output column per panel, so
// the weight is [N, K, 1] (int4: [N, K/2, 1]) with each column's bytes contiguous along k, and
// any N is quantized (no 16-column minimum).
// RUN: kiln-opt %s -kiln-quantize-weights="bits=8 panel=1 min-elements=0" | FileCheck %s --check-prefix=Q8
// RUN: kiln-opt %s -kiln-quantize-weights="bits=4 group-size=2 panel=1 min-elements=0" | FileCheck %s --check-prefix=Q4

// Column 0 is [0.7, -0.35, 0.1, 0.2]: int8 [127, -64 (-63.5, ties to even), 18, 36], int4 in
// groups of 2 [7, -4] [4, 7] (bytes 0xC7, 0x74: k = 2j in the low nibble). Column 1 is 0.7
// everywhere: 127 (int8), 7 (int4, 0x77).
// Q8-LABEL: func @matmul
// Q8: graph.quantized_matmul %arg0, %{{.*}}, %{{.*}} {bits = 8 : i64, group_size = 4 : i64} : (tensor<?x?x4xf32>, tensor<2x4x1xi8>, tensor<2x1x1xf32>) -> tensor<?x?x2xf32>
// Q4-LABEL: func @matmul
// Q4: graph.quantized_matmul %arg0, %{{.*}}, %{{.*}} {bits = 4 : i64, group_size = 2 : i64} : (tensor<?x?x4xf32>, tensor<2x2x1xi8>, tensor<2x2x1xf32>) -> tensor<?x?x2xf32>
// Q8: w.q8: "0x400000007FC012247F7F7F7F"
// Q4: w.q4: "0x40000000C7747777"
func.func @matmul(%x: tensor<?x?x4xf32>) -> tensor<?x?x2xf32> {
  %w = graph.constant {value = dense<[[0.7, 0.7], [-0.35, 0.7], [0.1, 0.7], [0.2, 0.7]]> : tensor<4x2xf32>} : () -> tensor<4x2xf32> loc("w")
  %y = graph.matmul %x, %w : (tensor<?x?x4xf32>, tensor<4x2xf32>) -> tensor<?x?x2xf32>
  return %y : tensor<?x?x2xf32>
}
