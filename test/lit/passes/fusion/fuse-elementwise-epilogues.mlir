// kiln-fuse-elementwise{keep-product-epilogues}: a reshape into heads is not propagated through a
// product's bias add (the add stays on the product's shape, its cuBLASLt epilogue); without the
// option (the CPU pipelines) the add is expanded to the heads' view.
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-fuse-elementwise{keep-product-epilogues=true}))' | FileCheck %s --check-prefix=KEEP
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-fuse-elementwise))' | FileCheck %s --check-prefix=EXPAND

#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// KEEP-LABEL: func @query_heads
// KEEP: %[[P:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// KEEP: %[[B:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}}ins(%[[P]], %{{.*}} : tensor<128x256xf32>, tensor<256xf32>)
// KEEP: tensor.expand_shape %[[B]] {{\[\[}}0], [1, 2]] output_shape [128, 4, 64]
// EXPAND-LABEL: func @query_heads
// EXPAND: %[[P:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// EXPAND: %[[V:.*]] = tensor.expand_shape %[[P]] {{\[\[}}0], [1, 2]] output_shape [128, 4, 64]
// EXPAND: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]{{.*}}ins(%[[V]]
func.func @query_heads(%x: tensor<128x256xf32>, %w: tensor<256x256xf32>, %bias: tensor<256xf32>) -> tensor<128x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x256xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<128x256xf32>) -> tensor<128x256xf32>
  %p = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<128x256xf32>, tensor<256x256xf32>) outs(%z : tensor<128x256xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<128x256xf32>
  %e2 = tensor.empty() : tensor<128x256xf32>
  %q = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %bias : tensor<128x256xf32>, tensor<256xf32>) outs(%e2 : tensor<128x256xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<128x256xf32>
  %heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [128, 4, 64] : tensor<128x256xf32> into tensor<128x4x64xf32>
  return %heads : tensor<128x4x64xf32>
}
