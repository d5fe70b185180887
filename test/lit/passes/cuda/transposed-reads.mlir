// kiln-transposed-reads: generics and extracts read a transpose's input in transposed order.
// RUN: kiln-opt %s -split-input-file -kiln-transposed-reads | FileCheck %s

// A rotary-style generic: reads the heads as an input and its rotated half by tensor.extract,
// through a slice to the common shape. No transpose is left; the input map and the extract's
// indices are permuted (dims 1 and 2 swapped), the slice taken of the input.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[SWAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
// CHECK-LABEL: func @rotary_heads
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x4x16xf32>, %[[N:.*]]: index)
// CHECK-NOT: linalg.transpose
// CHECK: %[[PART:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [%{{.*}}, %[[N]], 4, 16] [1, 1, 1, 1] : tensor<?x?x4x16xf32> to tensor<?x?x4x16xf32>
// CHECK: linalg.generic {indexing_maps = [#[[SWAP]], #[[ID]]]
// CHECK-SAME: ins(%[[PART]] : tensor<?x?x4x16xf32>)
// CHECK: %[[I0:.*]] = linalg.index 0
// CHECK: %[[I1:.*]] = linalg.index 1
// CHECK: %[[I2:.*]] = linalg.index 2
// CHECK: %[[I3:.*]] = linalg.index 3
// CHECK: tensor.extract %[[PART]][%[[I0]], %[[I2]], %[[I1]], %[[I3]]] : tensor<?x?x4x16xf32>
// CHECK-NOT: linalg.transpose
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @rotary_heads(%x: tensor<?x?x4x16xf32>, %n: index) -> tensor<?x4x?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x4x16xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x4x16xf32>
  %e = tensor.empty(%b, %s) : tensor<?x4x?x16xf32>
  %t = linalg.transpose ins(%x : tensor<?x?x4x16xf32>) outs(%e : tensor<?x4x?x16xf32>) permutation = [0, 2, 1, 3]
  %part = tensor.extract_slice %t[0, 0, 0, 0] [%b, 4, %n, 16] [1, 1, 1, 1] : tensor<?x4x?x16xf32> to tensor<?x4x?x16xf32>
  %o = tensor.empty(%b, %n) : tensor<?x4x?x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%part : tensor<?x4x?x16xf32>) outs(%o : tensor<?x4x?x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %other = tensor.extract %part[%i0, %i1, %i2, %i3] : tensor<?x4x?x16xf32>
    %sum = arith.addf %in, %other : f32
    linalg.yield %sum : f32
  } -> tensor<?x4x?x16xf32>
  return %r : tensor<?x4x?x16xf32>
}

// -----

// The result is returned (a use that needs the transposed copy): the transpose stays.
// CHECK-LABEL: func @escapes
// CHECK: linalg.transpose
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @escapes(%x: tensor<2x3x4xf32>) -> (tensor<3x2x4xf32>, tensor<3x2x4xf32>) {
  %e = tensor.empty() : tensor<3x2x4xf32>
  %t = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%e : tensor<3x2x4xf32>) permutation = [1, 0, 2]
  %o = tensor.empty() : tensor<3x2x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%t : tensor<3x2x4xf32>) outs(%o : tensor<3x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.mulf %in, %in : f32
    linalg.yield %d : f32
  } -> tensor<3x2x4xf32>
  return %t, %r : tensor<3x2x4xf32>, tensor<3x2x4xf32>
}

// -----

// A permutation that moves the last dim: reading through it would make the innermost reads
// strided, so the copy stays.
// CHECK-LABEL: func @moves_last_dim
// CHECK: linalg.transpose
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @moves_last_dim(%x: tensor<8x16xf32>) -> tensor<16x8xf32> {
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<16x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<16x8xf32>) outs(%o : tensor<16x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.negf %in : f32
    linalg.yield %d : f32
  } -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

// The transpose's result is a generic's init (written, not read): it stays.
// CHECK-LABEL: func @as_init
// CHECK: linalg.transpose
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @as_init(%x: tensor<2x3x4xf32>, %y: tensor<3x2x4xf32>) -> tensor<3x2x4xf32> {
  %e = tensor.empty() : tensor<3x2x4xf32>
  %t = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%e : tensor<3x2x4xf32>) permutation = [1, 0, 2]
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y : tensor<3x2x4xf32>) outs(%t : tensor<3x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.addf %in, %out : f32
    linalg.yield %d : f32
  } -> tensor<3x2x4xf32>
  return %r : tensor<3x2x4xf32>
}

// -----

// A KV append's row: a slice of the transposed heads inserted into the cache. The transpose moves
// onto the slice (bufferization then writes it into the cache's rows directly); the whole
// transposed copy is gone.
// CHECK-LABEL: func @inserted_row
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x4x16xf32>, %[[CACHE:.*]]: tensor<?x4x?x16xf32>, %[[R:.*]]: index, %[[P:.*]]: index)
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[X]][%[[R]], 0, 0, 0] [1, %{{.*}}, 4, 16] [1, 1, 1, 1] : tensor<?x?x4x16xf32> to tensor<1x?x4x16xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[ROW]] : tensor<1x?x4x16xf32>) outs(%{{.*}} : tensor<1x4x?x16xf32>) permutation = [0, 2, 1, 3]
// CHECK: tensor.insert_slice %[[T]] into %[[CACHE]][%[[R]], 0, %[[P]], 0]
// CHECK-NOT: linalg.transpose
func.func @inserted_row(%x: tensor<?x?x4x16xf32>, %cache: tensor<?x4x?x16xf32>, %r: index, %p: index) -> tensor<?x4x?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x4x16xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x4x16xf32>
  %e = tensor.empty(%b, %s) : tensor<?x4x?x16xf32>
  %t = linalg.transpose ins(%x : tensor<?x?x4x16xf32>) outs(%e : tensor<?x4x?x16xf32>) permutation = [0, 2, 1, 3]
  %row = tensor.extract_slice %t[%r, 0, 0, 0] [1, 4, %s, 16] [1, 1, 1, 1] : tensor<?x4x?x16xf32> to tensor<1x4x?x16xf32>
  %w = tensor.insert_slice %row into %cache[%r, 0, %p, 0] [1, 4, %s, 16] [1, 1, 1, 1] : tensor<1x4x?x16xf32> into tensor<?x4x?x16xf32>
  return %w : tensor<?x4x?x16xf32>
}
