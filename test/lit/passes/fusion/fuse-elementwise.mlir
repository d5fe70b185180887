// kiln-fuse-elementwise: elementwise chains fuse; a producer never fuses into a matrix product.
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-fuse-elementwise))' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func @scale_then_matmul
// The scale stays its own loop nest ...
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.mulf
// ... and the product keeps a plain multiply-add body.
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
func.func @scale_then_matmul(%x: tensor<4x8xf32>, %s: tensor<4x8xf32>, %w: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%0, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s2 = arith.addf %acc, %m : f32
    linalg.yield %s2 : f32
  } -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// CHECK-LABEL: func @elementwise_chain
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
func.func @elementwise_chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.addf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
