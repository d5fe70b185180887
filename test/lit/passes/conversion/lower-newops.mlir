// kiln-convert-graph-to-linalg for max_pool_with_indices, max_unpool, det, grid_sample and roi_align.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s

// One reduction over the windows with two results; positions in the padding
// are masked, the input is read at clamped coordinates (no padded copy).
// CHECK-LABEL: func @max_pool_indices
// CHECK-NOT: tensor.pad
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK: tensor.extract
// CHECK: arith.cmpf ogt
// CHECK: linalg.yield {{.*}} : f32, i64
// CHECK-NOT: graph.
func.func @max_pool_indices(%x: tensor<1x1x5x5xf32>) -> (tensor<1x1x5x5xf32>, tensor<1x1x5x5xi64>) {
  %v, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 5, 5>, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x1x5x5xf32>) -> (tensor<1x1x5x5xf32>, tensor<1x1x5x5xi64>)
  return %v, %i : tensor<1x1x5x5xf32>, tensor<1x1x5x5xi64>
}

// -----

// A work item per matrix; pivot search, row swap and elimination loops.
// CHECK-LABEL: func @det
// CHECK: scf.forall
// CHECK: tensor.extract_slice
// CHECK: scf.for
// CHECK: math.absf
// CHECK: arith.cmpf ogt
// CHECK: tensor.insert
// CHECK: arith.divf
// CHECK-NOT: graph.
func.func @det(%x: tensor<?x3x3xf32>) -> tensor<?xf32> {
  %0 = graph.det %x : (tensor<?x3x3xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// The grid's x and y components are read through the indexing maps.
// CHECK-DAG: #[[GX:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, 0)>
// CHECK-DAG: #[[GY:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, 1)>
// CHECK-LABEL: func @grid_sample_bilinear
// CHECK: linalg.generic {indexing_maps = [#[[GX]], #[[GY]], {{.*}}]
// CHECK: math.floor
// CHECK-COUNT-4: tensor.extract
// CHECK-NOT: graph.
func.func @grid_sample_bilinear(%x: tensor<1x1x4x4xf32>, %g: tensor<1x6x6x2xf32>) -> tensor<1x1x6x6xf32> {
  %0 = graph.grid_sample %x, %g {mode = "bilinear", padding_mode = "reflection", align_corners = 0 : i64}
      : (tensor<1x1x4x4xf32>, tensor<1x6x6x2xf32>) -> tensor<1x1x6x6xf32>
  return %0 : tensor<1x1x6x6xf32>
}

// -----

// Bicubic reads 16 taps.
// CHECK-LABEL: func @grid_sample_bicubic
// CHECK-COUNT-16: tensor.extract
func.func @grid_sample_bicubic(%x: tensor<1x1x4x4xf32>, %g: tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %0 = graph.grid_sample %x, %g {mode = "bicubic", padding_mode = "zeros", align_corners = 1 : i64}
      : (tensor<1x1x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// sampling_ratio 2: 4 samples of 4 corners each per bin.
// CHECK-LABEL: func @roi_align
// CHECK: linalg.generic
// CHECK-COUNT-16: tensor.extract
// CHECK-NOT: tensor.extract
// CHECK: linalg.yield
func.func @roi_align(%x: tensor<1x1x10x10xf32>, %r: tensor<3x4xf32>, %b: tensor<3xi64>) -> tensor<3x1x5x5xf32> {
  %0 = graph.roi_align %x, %r, %b {mode = "avg", output_height = 5 : i64, output_width = 5 : i64, sampling_ratio = 2 : i64, spatial_scale = 1.0 : f32, coordinate_transformation_mode = "half_pixel"}
      : (tensor<1x1x10x10xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x1x5x5xf32>
  return %0 : tensor<3x1x5x5xf32>
}

// -----

// Unpooling: zeros, then one loop over the inputs with a guarded insert at
// each index (run-time output sizes read from the shape operand).
// CHECK-LABEL: func @max_unpool
// CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<4xi64>
// CHECK: linalg.fill
// CHECK: scf.for
// CHECK: arith.cmpi slt
// CHECK: scf.if
// CHECK: tensor.insert
// CHECK: tensor.reshape
func.func @max_unpool(%x: tensor<4xf32>, %i: tensor<4xi64>, %s: tensor<4xi64>) -> tensor<?x?x?x?xf32> {
  %0 = graph.max_unpool %x, %i, %s : (tensor<4xf32>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// sampling_ratio 0: per-region sample counts ceil(size / bins), run-time loops
// in the body, the average divided by their product.
// CHECK-LABEL: func @roi_align_adaptive
// CHECK: linalg.generic
// CHECK: math.ceil
// CHECK: scf.for
// CHECK: scf.for
// CHECK-COUNT-4: tensor.extract
// CHECK: arith.maximumf
// CHECK: arith.divf
// CHECK: linalg.yield
func.func @roi_align_adaptive(%x: tensor<1x1x10x10xf32>, %r: tensor<?x4xf32>, %b: tensor<?xi64>) -> tensor<?x1x2x2xf32> {
  %0 = graph.roi_align %x, %r, %b {output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = 0 : i64}
      : (tensor<1x1x10x10xf32>, tensor<?x4xf32>, tensor<?xi64>) -> tensor<?x1x2x2xf32>
  return %0 : tensor<?x1x2x2xf32>
}
