// kiln-quantize-weights with its default min-elements.

// Weights under min-elements (default 1024) stay in f32: exact for free.
// RUN: kiln-opt %s -kiln-quantize-weights=bits=8 -verify-diagnostics | FileCheck %s --check-prefix=SMALL
// SMALL-LABEL: func @small
// SMALL: graph.matmul
func.func @small(%x: tensor<?x4xf32>) -> tensor<?x16xf32> {
  %w = graph.constant {value = dense<0.5> : tensor<4x16xf32>} : () -> tensor<4x16xf32> loc("tiny")
  // expected-remark@+1 {{kept in f32: weight 'tiny' [K=4, N=16]: too small to gain (64 weights)}}
  %y = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
