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

// An innermost extent that 8 does not divide, a reduction, and a body with linalg.index are
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

// -----

// An epilogue fused into a window kernel's work item (a depthwise convolution's ReLU6 on its
// [1, 1, OW, C] row, updating the row in place): loops, not a nested forall, over the row's
// positions and its 24 channels in vectors of 8 (16 does not divide them), reading the carried
// block it writes so the row stays in place. Before, it stayed a scalar loop that LLVM
// vectorized over the positions with gathers and one store per element.
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func @epilogue_in_work_item
// CHECK: scf.forall
// CHECK-NOT: scf.forall
// CHECK: %[[ROW:.*]] = tensor.extract_slice {{.*}} to tensor<1x1x6x24xf32>
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %[[ROW]][0, 0, 0, 0] [1, 1, 6, 24] [1, 1, 1, 1] : tensor<1x1x6x24xf32> to tensor<6x24xf32>
// CHECK: scf.for %[[P:.*]] = %c0 to %c6 step %c1 iter_args(%[[B1:.*]] = %[[BLOCK]])
// CHECK: scf.for %[[C:.*]] = %c0 to %c24 step %c8 iter_args(%[[B2:.*]] = %[[B1]])
// CHECK: vector.transfer_read %[[B2]][%[[P]], %[[C]]]{{.*}} : tensor<6x24xf32>, vector<8xf32>
// CHECK: arith.maximumf {{.*}} : vector<8xf32>
// CHECK: arith.minimumf {{.*}} : vector<8xf32>
// CHECK: vector.transfer_write {{.*}}, %[[B2]][%[[P]], %[[C]]]
// CHECK: tensor.insert_slice {{.*}} into %[[ROW]]
// CHECK-NOT: linalg.generic
// CHECK: tensor.parallel_insert_slice
func.func @epilogue_in_work_item(%x: tensor<1x4x6x24xf32>) -> tensor<1x4x6x24xf32> {
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  %e = tensor.empty() : tensor<1x4x6x24xf32>
  %r = scf.forall (%h) in (4) shared_outs(%o = %e) -> (tensor<1x4x6x24xf32>) {
    %row = tensor.extract_slice %x[0, %h, 0, 0] [1, 1, 6, 24] [1, 1, 1, 1] : tensor<1x4x6x24xf32> to tensor<1x1x6x24xf32>
    %t = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%row : tensor<1x1x6x24xf32>) outs(%row : tensor<1x1x6x24xf32>) {
    ^bb0(%a: f32, %b: f32):
      %lo = arith.maximumf %a, %zero : f32
      %hi = arith.minimumf %lo, %six : f32
      linalg.yield %hi : f32
    } -> tensor<1x1x6x24xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[0, %h, 0, 0] [1, 1, 6, 24] [1, 1, 1, 1] : tensor<1x1x6x24xf32> into tensor<1x4x6x24xf32>
    }
  }
  return %r : tensor<1x4x6x24xf32>
}

// -----

// An epilogue fused into a product's last row tile, whose row count is dynamic (196 rows in
// tiles of 64): the row loop runs to the tile's own extent (tensor.dim of its output, which
// canonicalization folds to the tile size), the columns in whole vectors. Before, a dynamic dim left it a scalar loop.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#tile = affine_map<(d0) -> (-d0 + 196, 64)>
// CHECK-LABEL: func @epilogue_in_dynamic_tile
// CHECK: scf.forall
// CHECK: %[[ROWS:.*]] = affine.min
// CHECK: scf.for %{{.*}} = %c0 to %[[ROWS]] step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK-NOT: linalg.generic
// CHECK: tensor.parallel_insert_slice
func.func @epilogue_in_dynamic_tile(%p: tensor<196x32xf32>, %bias: tensor<32xf32>) -> tensor<196x32xf32> {
  %e = tensor.empty() : tensor<196x32xf32>
  %r = scf.forall (%i) = (0) to (196) step (64) shared_outs(%o = %e) -> (tensor<196x32xf32>) {
    %n = affine.min #tile(%i)
    %in = tensor.extract_slice %p[%i, 0] [%n, 32] [1, 1] : tensor<196x32xf32> to tensor<?x32xf32>
    %t = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%in, %bias : tensor<?x32xf32>, tensor<32xf32>) outs(%in : tensor<?x32xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<?x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[%i, 0] [%n, 32] [1, 1] : tensor<?x32xf32> into tensor<196x32xf32>
    }
  }
  return %r : tensor<196x32xf32>
}
