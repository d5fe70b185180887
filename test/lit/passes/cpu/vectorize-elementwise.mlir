// kiln-vectorize-elementwise: an all-parallel generic with a static innermost dim (a multiple of
// `lanes`) becomes an scf.forall over the dims before the last two, loops over those two (the
// innermost in vector steps) and vector code.
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-vectorize-elementwise{lanes=16}),canonicalize)' | FileCheck %s

// A 1x1 convolution's bias + ReLU6, reading the product [N, H*W, P, B] as [N, H, W, P, B]:
// one vector read of the product per 16 channels (its index h * 4 + w), the bias as a vector,
// the clamp on vectors, one vector write; the forall keeps it a parallel kernel.
#prod = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 * 4 + d2, d3, d4)>
#bias = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4)>
#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func @bias_relu6
// CHECK: scf.forall (%[[H:.*]], %[[W:.*]]) in (4, 4)
// CHECK: tensor.extract_slice {{.*}} to tensor<2x16xf32>
// CHECK: scf.for %[[P:.*]] = %c0 to %c2
// CHECK: %[[HW:.*]] = arith.muli %[[H]], %c4
// CHECK: %[[ROW:.*]] = arith.addi %[[HW]], %[[W]]
// CHECK: vector.transfer_read %arg0[%c0, %[[ROW]], %[[P]], %c0]{{.*}} : tensor<1x16x2x16xf32>, vector<16xf32>
// CHECK: vector.transfer_read %arg1[%[[P]], %c0]{{.*}} : tensor<2x16xf32>, vector<16xf32>
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK: arith.maximumf {{.*}} : vector<16xf32>
// CHECK: arith.minimumf {{.*}} : vector<16xf32>
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%[[P]], %c0] {{.*}} : vector<16xf32>, tensor<2x16xf32>
// CHECK: tensor.parallel_insert_slice
// CHECK-NOT: linalg.generic
func.func @bias_relu6(%p: tensor<1x16x2x16xf32>, %b: tensor<2x16xf32>) -> tensor<1x4x4x2x16xf32> {
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  %e = tensor.empty() : tensor<1x4x4x2x16xf32>
  %r = linalg.generic {indexing_maps = [#prod, #bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%p, %b : tensor<1x16x2x16xf32>, tensor<2x16xf32>) outs(%e : tensor<1x4x4x2x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %lo = arith.maximumf %s, %zero : f32
    %hi = arith.minimumf %lo, %six : f32
    linalg.yield %hi : f32
  } -> tensor<1x4x4x2x16xf32>
  return %r : tensor<1x4x4x2x16xf32>
}

// -----

// An innermost extent that 16 does not divide, a reduction, and a body with linalg.index are
// left to the loops LLVM vectorizes.
#m2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @left_alone
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: scf.forall
func.func @left_alone(%x: tensor<4x20xf32>, %y: tensor<4x32xf32>) -> (tensor<4x20xf32>, tensor<4x32xi64>) {
  %e = tensor.empty() : tensor<4x20xf32>
  %r = linalg.generic {indexing_maps = [#m2, #m2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x20xf32>) outs(%e : tensor<4x20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4x20xf32>
  %ei = tensor.empty() : tensor<4x32xi64>
  %i = linalg.generic {indexing_maps = [#m2, #m2], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<4x32xf32>) outs(%ei : tensor<4x32xi64>) {
  ^bb0(%a: f32, %o: i64):
    %j = linalg.index 1 : index
    %k = arith.index_cast %j : index to i64
    linalg.yield %k : i64
  } -> tensor<4x32xi64>
  return %r, %i : tensor<4x20xf32>, tensor<4x32xi64>
}

// -----

// Tensors of i1 hold a byte per element; a vector<16xi1> would be read as packed bits, so an op
// reading or writing them is left alone (a bool mask's Where, And, Not).
#m3 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @bools
// CHECK: linalg.generic
// CHECK-NOT: vector.transfer_read
func.func @bools(%c: tensor<4x32xi1>, %x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32xf32>
  %r = linalg.generic {indexing_maps = [#m3, #m3, #m3], iterator_types = ["parallel", "parallel"]}
      ins(%c, %x : tensor<4x32xi1>, tensor<4x32xf32>) outs(%e : tensor<4x32xf32>) {
  ^bb0(%b: i1, %a: f32, %o: f32):
    %s = arith.select %b, %a, %zero : f32
    linalg.yield %s : f32
  } -> tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}
