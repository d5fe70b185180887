// kiln-mark-gemm-epilogues: an elementwise op gets kiln.gemm_epilogue = the index of its input
// that is a matrix product's result used by nothing else.
// RUN: kiln-opt %s -split-input-file -kiln-mark-gemm-epilogues | FileCheck %s

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (n)>
// The bias add after a product: its input 1 is the product. The second product is also returned
// (two uses), so the op that adds it to the first product's sum is marked for neither; the
// reduction over the third product (a row sum) is no elementwise op.
// CHECK-LABEL: func @main
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK: linalg.generic {{.*}}attrs = {kiln.gemm_epilogue = 1 : i64}
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK: linalg.generic
// CHECK-NOT: kiln.gemm_epilogue
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<4x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK: linalg.generic
// CHECK-NOT: kiln.gemm_epilogue
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %bias: tensor<16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %q = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %p : tensor<16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%bv: f32, %pv: f32, %o: f32):
    %s = arith.addf %bv, %pv : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %p2 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q, %p2 : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %p3 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, affine_map<(m, n) -> (m)>], iterator_types = ["parallel", "reduction"]}
      ins(%p3 : tensor<4x16xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.addf %v, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r, %p2, %sum : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>
}
