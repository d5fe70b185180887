// kiln-pad-in-place: a padded copy is made just before its source's buffer,
// only its border filled, and the source inserted into its interior; after
// empty-tensor elimination and bufferization the producer writes the
// interior directly and nothing copies it.
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-pad-in-place))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-pad-in-place),eliminate-empty-tensors,empty-tensor-to-alloc-tensor,one-shot-bufferize{bufferize-function-boundaries},canonicalize,cse,canonicalize)' | FileCheck %s --check-prefix=BUF

// CHECK-LABEL: func @producer_into_interior
// The padded tensor and its four border slabs come before the producer's empty.
// CHECK: %[[P:.*]] = tensor.empty() : tensor<1x10x10x16xf32>
// CHECK: linalg.fill {{.*}} -> tensor<1x1x10x16xf32>
// CHECK: tensor.insert_slice {{.*}}[0, 0, 0, 0] [1, 1, 10, 16]
// CHECK: linalg.fill {{.*}} -> tensor<1x1x10x16xf32>
// CHECK: tensor.insert_slice {{.*}}[0, 9, 0, 0] [1, 1, 10, 16]
// CHECK: linalg.fill {{.*}} -> tensor<1x8x1x16xf32>
// CHECK: tensor.insert_slice {{.*}}[0, 1, 0, 0] [1, 8, 1, 16]
// CHECK: linalg.fill {{.*}} -> tensor<1x8x1x16xf32>
// CHECK: %[[B:.*]] = tensor.insert_slice {{.*}}[0, 1, 9, 0] [1, 8, 1, 16]
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x8x8x16xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} outs(%[[E]] : tensor<1x8x8x16xf32>)
// CHECK: tensor.insert_slice %[[R]] into %[[B]][0, 1, 1, 0] [1, 8, 8, 16] [1, 1, 1, 1]
// CHECK-NOT: tensor.pad
// No copy of the interior and no fill of it: the ReLU writes a subview of the
// padded buffer, the fills write only the border's subviews.
// BUF-LABEL: func @producer_into_interior
// BUF: %[[A:.*]] = memref.alloc() {{.*}} : memref<1x10x10x16xf32>
// BUF-COUNT-4: linalg.fill {{.*}} outs(%{{.*}} : memref<1x{{1x10|8x1}}x16xf32, strided
// BUF: %[[IN:.*]] = memref.subview %[[A]][0, 1, 1, 0] [1, 8, 8, 16]
// BUF: linalg.generic {{.*}} outs(%[[IN]] :
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @producer_into_interior(%x: tensor<1x8x8x16xf32>) -> tensor<1x10x10x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x8x8x16xf32>) outs(%e : tensor<1x8x8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x16xf32>
  %p = tensor.pad %r low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x16xf32> to tensor<1x10x10x16xf32>
  return %p : tensor<1x10x10x16xf32>
}

// -----

// The source is read by another op too: it keeps its own buffer, the padded
// tensor is made at the pad (border filled, interior copied in).
// CHECK-LABEL: func @source_read_twice
// CHECK: %[[R:.*]] = linalg.generic
// CHECK: tensor.empty() : tensor<1x10x10x16xf32>
// CHECK-COUNT-4: linalg.fill
// CHECK: tensor.insert_slice %[[R]] into {{.*}}[0, 1, 1, 0] [1, 8, 8, 16]
#id2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @source_read_twice(%x: tensor<1x8x8x16xf32>) -> (tensor<1x10x10x16xf32>, tensor<1x8x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x16xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x8x8x16xf32>) outs(%e : tensor<1x8x8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x16xf32>
  %p = tensor.pad %r low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x16xf32> to tensor<1x10x10x16xf32>
  return %p, %r : tensor<1x10x10x16xf32>, tensor<1x8x8x16xf32>
}

// -----

// A dynamic shape is left to bufferization.
// CHECK-LABEL: func @dynamic
// CHECK: tensor.pad
func.func @dynamic(%x: tensor<1x?x8x16xf32>) -> tensor<1x?x10x16xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x?x8x16xf32> to tensor<1x?x10x16xf32>
  return %p : tensor<1x?x10x16xf32>
}
