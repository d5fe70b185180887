// kiln-fold-qdq and kiln-fold-integer-matmul with panel=1 (the CUDA target): the model's int8
// weights are stored one output column per panel, each column's k contiguous ([N, K, 1]; k pairs
// [N, K/2, 2], which are the same bytes).
// RUN: kiln-opt %s -split-input-file -kiln-fold-qdq=panel=1 | FileCheck %s --check-prefix=QDQ
// RUN: kiln-opt %s -split-input-file -kiln-fold-integer-matmul=panel=1 | FileCheck %s --check-prefix=INT

// q - zp = [3, -2] in every column: column by column, 03 FE sixteen times.
// QDQ-LABEL: func @qdq
// QDQ: graph.quantized_matmul %arg0, %{{.*}}, %{{.*}} {bits = 8 : i64, group_size = 2 : i64} : (tensor<?x2xf32>, tensor<16x2x1xi8>, tensor<16x1x1xf32>) -> tensor<?x16xf32>
// QDQ: wq.q8: "0x4000000003FE03FE03FE03FE03FE03FE03FE03FE03FE03FE03FE03FE03FE03FE03FE03FE"
func.func @qdq(%x: tensor<?x2xf32>) -> tensor<?x16xf32> {
  %q = graph.constant {value = dense<[[4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4],
                                      [-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1]]> : tensor<2x16xi8>} : () -> tensor<2x16xi8> loc("wq")
  %zp = graph.constant {value = dense<1> : tensor<16xi8>} : () -> tensor<16xi8>
  %s = graph.constant {value = dense<0.5> : tensor<16xf32>} : () -> tensor<16xf32>
  %qf = graph.cast %q {to = f32} : (tensor<2x16xi8>) -> tensor<2x16xf32>
  %zf = graph.cast %zp {to = f32} : (tensor<16xi8>) -> tensor<16xf32>
  %c = graph.sub %qf, %zf : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %w = graph.mul %c, %s : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %y = graph.matmul %x, %w : (tensor<?x2xf32>, tensor<2x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// The weight's k = [1, -3, 2, 5] in each of 3 columns (N below 16 is fine one column per panel):
// 01 FD 02 05 per column.
// INT-LABEL: func @integer
// INT: graph.integer_matmul %{{.*}}, %{{.*}} : (tensor<?x4xi32>, tensor<3x2x2xi8>) -> tensor<?x3xi32>
// INT: integer_weight.q8: "0x4000000001FD020501FD020501FD0205"
func.func @integer(%a: tensor<?x4xi8>) -> tensor<?x3xi32> {
  %q = graph.constant {value = dense<[[1, 1, 1], [-3, -3, -3], [2, 2, 2], [5, 5, 5]]> : tensor<4x3xi8>} : () -> tensor<4x3xi8>
  %x = graph.cast %a {to = i32} : (tensor<?x4xi8>) -> tensor<?x4xi32>
  %w = graph.cast %q {to = i32} : (tensor<4x3xi8>) -> tensor<4x3xi32>
  %y = graph.matmul %x, %w : (tensor<?x4xi32>, tensor<4x3xi32>) -> tensor<?x3xi32>
  return %y : tensor<?x3xi32>
}
