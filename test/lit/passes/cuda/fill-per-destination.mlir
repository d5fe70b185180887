// kiln-fill-per-destination: a linalg.fill of an empty tensor that is the destination of several
// ops (as CSE leaves the zero accumulator of a model's products) gets a fill of its own empty
// tensor for every destination but the first (every one, when the fill is also read), placed
// right before that user; reads of the fill keep the original. One-shot bufferization then writes each fill into its product's output
// instead of copying one filled buffer into each (the BUF prefix: no memref.copy).
// RUN: kiln-opt %s -split-input-file -kiln-fill-per-destination | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-fill-per-destination -one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF
// RUN: kiln-opt %s -split-input-file -one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=SHARED

#mapA = affine_map<(m, n, k) -> (m, k)>
#mapB = affine_map<(m, n, k) -> (k, n)>
#mapC = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func @two_products
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<?x8xf32>
// CHECK: %[[D:.*]] = tensor.dim %[[A]], %c0
// CHECK: %[[E1:.*]] = tensor.empty(%[[D]])
// CHECK: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<?x4xf32>)
// CHECK: %[[P1:.*]] = linalg.generic {{.*}} outs(%[[F1]] : tensor<?x4xf32>)
// CHECK: %[[E2:.*]] = tensor.empty(%[[D]])
// CHECK: %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<?x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[P1]], %{{.*}} : {{.*}}) outs(%[[F2]] : tensor<?x4xf32>)
// BUF-LABEL: func @two_products
// BUF-NOT: memref.copy
// BUF: return
// SHARED-LABEL: func @two_products
// SHARED: memref.copy
func.func @two_products(%a: tensor<?x8xf32>, %w: tensor<8x4xf32>, %v: tensor<4x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %d = tensor.dim %a, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%d) : tensor<?x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %p = linalg.generic {indexing_maps = [#mapA, #mapB, #mapC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : tensor<?x8xf32>, tensor<8x4xf32>) outs(%f : tensor<?x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  %q = linalg.generic {indexing_maps = [#mapA, #mapB, #mapC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<?x4xf32>, tensor<4x4xf32>) outs(%f : tensor<?x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %q : tensor<?x4xf32>
}

// -----

#mapA = affine_map<(m, n, k) -> (m, k)>
#mapB = affine_map<(m, n, k) -> (k, n)>
#mapC = affine_map<(m, n, k) -> (m, n)>

#id = affine_map<(i, j) -> (i, j)>

// A fill that is also read: every destination gets its own, the read keeps the original.
// CHECK-LABEL: func @read_too
// CHECK: %[[F0:.*]] = linalg.fill
// CHECK: %[[E1:.*]] = tensor.empty()
// CHECK: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<3x4xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}} outs(%[[F1]] : tensor<3x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[P]], %[[F0]] : tensor<3x4xf32>, tensor<3x4xf32>) outs(%{{.*}} : tensor<3x4xf32>)
// BUF-LABEL: func @read_too
// BUF-NOT: memref.copy
// BUF: return
func.func @read_too(%a: tensor<3x8xf32>, %w: tensor<8x4xf32>) -> tensor<3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %p = linalg.generic {indexing_maps = [#mapA, #mapB, #mapC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : tensor<3x8xf32>, tensor<8x4xf32>) outs(%f : tensor<3x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<3x4xf32>
  %e2 = tensor.empty() : tensor<3x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %f : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e2 : tensor<3x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

// -----

#mapA = affine_map<(m, n, k) -> (m, k)>
#mapB = affine_map<(m, n, k) -> (k, n)>
#mapC = affine_map<(m, n, k) -> (m, n)>

// One destination: nothing to do.
// CHECK-LABEL: func @one_product
// CHECK-COUNT-1: linalg.fill
// CHECK-NOT: linalg.fill
func.func @one_product(%a: tensor<3x8xf32>, %w: tensor<8x4xf32>) -> tensor<3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %p = linalg.generic {indexing_maps = [#mapA, #mapB, #mapC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : tensor<3x8xf32>, tensor<8x4xf32>) outs(%f : tensor<3x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<3x4xf32>
  return %p : tensor<3x4xf32>
}

// -----

#mapA = affine_map<(m, h, d, k) -> (m, k)>
#mapB = affine_map<(m, h, d, k) -> (h, d, k)>
#mapC = affine_map<(m, h, d, k) -> (m, h, d)>

// A fill on an expand_shape of the empty tensor (reshape propagation splits the heads of the K and
// V products' shared accumulator): each product gets the empty tensor, the reshape and the fill of
// its own, and the first one's fill moves right before it, past the op between (kiln-form-block-
// reductions takes in only a fill right before its reduction).
// CHECK-LABEL: func @reshaped_destination
// CHECK: %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x32xf32>
// CHECK: %[[X:.*]] = tensor.expand_shape %[[E]]
// CHECK: %[[N:.*]] = arith.negf
// CHECK-NEXT: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[X]] : tensor<?x2x16xf32>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[F1]] : tensor<?x2x16xf32>)
// CHECK: %[[E2:.*]] = tensor.empty(%{{.*}}) : tensor<?x32xf32>
// CHECK-NEXT: %[[X2:.*]] = tensor.expand_shape %[[E2]]
// CHECK-NEXT: %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[X2]] : tensor<?x2x16xf32>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[F2]] : tensor<?x2x16xf32>)
func.func @reshaped_destination(%a: tensor<?x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>)
    -> (tensor<?x2x16xf32>, tensor<?x2x16xf32>, f32) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %d = tensor.dim %a, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%d) : tensor<?x32xf32>
  %x = tensor.expand_shape %e [[0], [1, 2]] output_shape [%d, 2, 16] : tensor<?x32xf32> into tensor<?x2x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%x : tensor<?x2x16xf32>) -> tensor<?x2x16xf32>
  %n = arith.negf %zero : f32
  %pk = linalg.generic {indexing_maps = [#mapA, #mapB, #mapC], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %k : tensor<?x8xf32>, tensor<2x16x8xf32>) outs(%f : tensor<?x2x16xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x2x16xf32>
  %pv = linalg.generic {indexing_maps = [#mapA, #mapB, #mapC], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %v : tensor<?x8xf32>, tensor<2x16x8xf32>) outs(%f : tensor<?x2x16xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x2x16xf32>
  return %pk, %pv, %n : tensor<?x2x16xf32>, tensor<?x2x16xf32>, f32
}
