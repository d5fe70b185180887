// graph.attention: shape inference, refinement of the result type, verifier errors.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func @mha
// CHECK: graph.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f32} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x8xf32>
func.func @mha(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x8xf32>, %m: tensor<?x1x?x?xf32>) -> tensor<?x4x?x8xf32> {
  %0 = graph.attention %q, %k, %v, %m {scale = 0.25 : f32} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// Grouped-query attention (2 key/value heads for 4 query heads), no mask, and a
// result type less static than the inferred one (the fused product's).
// CHECK-LABEL: func @gqa
// CHECK: graph.attention %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x4x3x16xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x4x3x?xf32>
func.func @gqa(%q: tensor<1x4x3x16xf32>, %k: tensor<1x2x7x16xf32>, %v: tensor<1x2x7x16xf32>) -> tensor<1x4x3x?xf32> {
  %0 = graph.attention %q, %k, %v : (tensor<1x4x3x16xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x4x3x?xf32>
  return %0 : tensor<1x4x3x?xf32>
}

// -----

func.func @heads_do_not_divide(%q: tensor<1x4x3x16xf32>, %k: tensor<1x3x7x16xf32>, %v: tensor<1x3x7x16xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @+2 {{attention key/value batch dim 1 (3) does not divide the query's (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.attention %q, %k, %v : (tensor<1x4x3x16xf32>, tensor<1x3x7x16xf32>, tensor<1x3x7x16xf32>) -> tensor<1x4x3x16xf32>
  return %0 : tensor<1x4x3x16xf32>
}

// -----

func.func @head_sizes_differ(%q: tensor<2x3x16xf32>, %k: tensor<2x7x8xf32>, %v: tensor<2x7x8xf32>) -> tensor<2x3x8xf32> {
  // expected-error @+2 {{attention query and key head sizes differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.attention %q, %k, %v : (tensor<2x3x16xf32>, tensor<2x7x8xf32>, tensor<2x7x8xf32>) -> tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

func.func @lengths_differ(%q: tensor<2x3x16xf32>, %k: tensor<2x7x16xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x3x8xf32> {
  // expected-error @+2 {{attention key and value lengths differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.attention %q, %k, %v : (tensor<2x3x16xf32>, tensor<2x7x16xf32>, tensor<2x6x8xf32>) -> tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

// A mask that would broadcast the scores [2, 3, 7] to [4, 3, 7].
func.func @mask_too_large(%q: tensor<2x3x16xf32>, %k: tensor<2x7x16xf32>, %v: tensor<2x7x8xf32>, %m: tensor<4x1x3x7xf32>) -> tensor<2x3x8xf32> {
  // expected-error @+2 {{attention mask does not broadcast to the scores [..., Sq, Sk]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.attention %q, %k, %v, %m : (tensor<2x3x16xf32>, tensor<2x7x16xf32>, tensor<2x7x8xf32>, tensor<4x1x3x7xf32>) -> tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

func.func @ranks_differ(%q: tensor<2x3x16xf32>, %k: tensor<7x16xf32>, %v: tensor<7x8xf32>) -> tensor<2x3x8xf32> {
  // expected-error @+2 {{attention needs query, key and value of one rank >= 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.attention %q, %k, %v : (tensor<2x3x16xf32>, tensor<7x16xf32>, tensor<7x8xf32>) -> tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}
