// kiln-concat-in-place: a concatenated operand's producer writes its slice of
// the concatenation; after empty-tensor elimination and bufferization nothing
// copies it. Operands without a buffer of their own to give up are copied in.
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-concat-in-place))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-concat-in-place),eliminate-empty-tensors,empty-tensor-to-alloc-tensor,one-shot-bufferize{bufferize-function-boundaries},canonicalize,cse,canonicalize)' | FileCheck %s --check-prefix=BUF

// Two producers, the second through a reshape (a channel block [.., 1, 8]
// seen as [.., 8]): each producer gets a slice of the chain so far, each
// insert follows its producer.
// CHECK-LABEL: func @producers_into_slices
// CHECK: %[[W:.*]] = tensor.empty() : tensor<1x4x4x24xf32>
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[W]][0, 0, 0, 0] [1, 4, 4, 16]
// CHECK: %[[R0:.*]] = linalg.generic {{.*}} outs(%[[S0]] : tensor<1x4x4x16xf32>)
// CHECK: %[[W1:.*]] = tensor.insert_slice %[[R0]] into %[[W]][0, 0, 0, 0] [1, 4, 4, 16]
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[W1]][0, 0, 0, 16] [1, 4, 4, 8]
// CHECK: %[[E1:.*]] = tensor.expand_shape %[[S1]] {{\[}}[0], [1], [2], [3, 4]]
// CHECK: %[[R1:.*]] = linalg.generic {{.*}} outs(%[[E1]] : tensor<1x4x4x1x8xf32>)
// CHECK: %[[C1:.*]] = tensor.collapse_shape %[[R1]]
// CHECK: %[[W2:.*]] = tensor.insert_slice %[[C1]] into %[[W1]][0, 0, 0, 16] [1, 4, 4, 8]
// CHECK-NOT: tensor.concat
// CHECK: return %[[W2]]
// BUF-LABEL: func @producers_into_slices
// BUF: %[[A:.*]] = memref.alloc() {{.*}} : memref<1x4x4x24xf32>
// BUF: %[[V0:.*]] = memref.subview %[[A]][0, 0, 0, 0] [1, 4, 4, 16]
// BUF: linalg.generic {{.*}} outs(%[[V0]] :
// BUF: %[[V1:.*]] = memref.subview %[[A]][0, 0, 0, 16] [1, 4, 4, 8]
// BUF: %[[X1:.*]] = memref.expand_shape %[[V1]]
// BUF: linalg.generic {{.*}} outs(%[[X1]] :
// BUF-NOT: memref.copy
// BUF: return %[[A]]
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @producers_into_slices(%x: tensor<1x4x4x16xf32>, %y: tensor<1x4x4x1x8xf32>) -> tensor<1x4x4x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x4x4x16xf32>) outs(%e : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x16xf32>
  %e2 = tensor.empty() : tensor<1x4x4x1x8xf32>
  %s = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%y : tensor<1x4x4x1x8xf32>) outs(%e2 : tensor<1x4x4x1x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.minimumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x1x8xf32>
  %c = tensor.collapse_shape %s [[0], [1], [2], [3, 4]] : tensor<1x4x4x1x8xf32> into tensor<1x4x4x8xf32>
  %cat = tensor.concat dim(3) %r, %c : (tensor<1x4x4x16xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x24xf32>
  return %cat : tensor<1x4x4x24xf32>
}

// -----

// A function argument has no producer in the function, and a value read
// twice shares its buffer: both are copied in at the concat; the producer of
// the last operand still writes its slice.
// CHECK-LABEL: func @copied_operands
// CHECK: %[[R:.*]] = linalg.generic
// CHECK: %[[W:.*]] = tensor.empty() : tensor<1x4x4x48xf32>
// CHECK: %[[S:.*]] = tensor.extract_slice %[[W]][0, 0, 0, 32] [1, 4, 4, 16]
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} outs(%[[S]] :
// CHECK: %[[W1:.*]] = tensor.insert_slice %[[Q]] into %[[W]][0, 0, 0, 32]
// CHECK: %[[W2:.*]] = tensor.insert_slice %{{.*}} into %[[W1]][0, 0, 0, 0] [1, 4, 4, 16]
// CHECK: %[[W3:.*]] = tensor.insert_slice %[[R]] into %[[W2]][0, 0, 0, 16] [1, 4, 4, 16]
// CHECK: return %[[W3]], %[[R]]
// BUF-LABEL: func @copied_operands
// BUF-COUNT-2: memref.copy
// BUF-NOT: memref.copy
// BUF: return
#id2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @copied_operands(%x: tensor<1x4x4x16xf32>) -> (tensor<1x4x4x48xf32>, tensor<1x4x4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x16xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x4x4x16xf32>) outs(%e : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x16xf32>
  %e2 = tensor.empty() : tensor<1x4x4x16xf32>
  %q = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%r : tensor<1x4x4x16xf32>) outs(%e2 : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.negf %a : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x16xf32>
  %cat = tensor.concat dim(3) %x, %r, %q : (tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>) -> tensor<1x4x4x48xf32>
  return %cat, %r : tensor<1x4x4x48xf32>, tensor<1x4x4x16xf32>
}

// -----

// Dynamic shapes are left to the default lowering.
// CHECK-LABEL: func @dynamic
// CHECK: tensor.concat
func.func @dynamic(%x: tensor<?x16xf32>, %y: tensor<?x16xf32>) -> tensor<?x32xf32> {
  %cat = tensor.concat dim(1) %x, %y : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x32xf32>
  return %cat : tensor<?x32xf32>
}

// -----

// Two producers share one empty (CSE merges equal empties): each of its uses
// becomes its own slice.
// CHECK-LABEL: func @shared_empty
// CHECK: %[[W:.*]] = tensor.empty() : tensor<8x32xf32>
// CHECK: tensor.extract_slice %[[W]][0, 0] [8, 16]
// CHECK: %[[W1:.*]] = tensor.insert_slice
// CHECK: tensor.extract_slice %[[W1]][0, 16] [8, 16]
// CHECK-NOT: tensor.empty() : tensor<8x16xf32>
// BUF-LABEL: func @shared_empty
// BUF-NOT: memref.copy
// BUF: return
#id3 = affine_map<(d0, d1) -> (d0, d1)>
func.func @shared_empty(%x: tensor<8x16xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %q = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.minimumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %cat = tensor.concat dim(1) %r, %q : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x32xf32>
  return %cat : tensor<8x32xf32>
}

// -----

// A pad is the concatenation's only reader (a convolution's padded input):
// the padded tensor, its border filled, is made before the first producer and
// the concatenation is its interior, so nothing is copied into it either.
// CHECK-LABEL: func @padded_concat
// CHECK: %[[P:.*]] = tensor.empty() : tensor<10x34xf32>
// CHECK-COUNT-4: linalg.fill
// CHECK: %[[B:.*]] = tensor.insert_slice {{.*}}[1, 33] [8, 1]
// CHECK: %[[W:.*]] = tensor.extract_slice %[[B]][1, 1] [8, 32]
// CHECK: tensor.extract_slice %[[W]][0, 0] [8, 16]
// CHECK: linalg.generic
// CHECK: %[[W2:.*]] = tensor.insert_slice {{.*}}[0, 16] [8, 16]
// CHECK: %[[R:.*]] = tensor.insert_slice %[[W2]] into %[[B]][1, 1] [8, 32]
// CHECK-NOT: tensor.pad
// CHECK: return %[[R]]
// BUF-LABEL: func @padded_concat
// BUF: memref.alloc() {{.*}} : memref<10x34xf32>
// BUF-NOT: memref.copy
// BUF: return
#id4 = affine_map<(d0, d1) -> (d0, d1)>
func.func @padded_concat(%x: tensor<8x16xf32>) -> tensor<10x34xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %q = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.minimumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %cat = tensor.concat dim(1) %r, %q : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x32xf32>
  %p = tensor.pad %cat low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x32xf32> to tensor<10x34xf32>
  return %p : tensor<10x34xf32>
}
