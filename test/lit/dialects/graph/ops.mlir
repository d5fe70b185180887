// Shape inference and round-tripping of graph ops.
// RUN: kiln-opt %s -split-input-file | FileCheck %s

// CHECK-LABEL: func @broadcast_add
func.func @broadcast_add(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  // CHECK: graph.add %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %0 = graph.add %a, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func @conv_groups
func.func @conv_groups(%x: tensor<?x4x9x9xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<?x6x5x5xf32> {
  // CHECK: graph.conv {{.*}} -> tensor<?x6x5x5xf32>
  %0 = graph.conv %x, %w {group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<?x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<?x6x5x5xf32>
  return %0 : tensor<?x6x5x5xf32>
}

// -----

// CHECK-LABEL: func @matmul_batch_broadcast
func.func @matmul_batch_broadcast(%a: tensor<2x?x8x16xf32>, %b: tensor<16x4xf32>) -> tensor<2x?x8x4xf32> {
  // CHECK: graph.matmul {{.*}} -> tensor<2x?x8x4xf32>
  %0 = graph.matmul %a, %b : (tensor<2x?x8x16xf32>, tensor<16x4xf32>) -> tensor<2x?x8x4xf32>
  return %0 : tensor<2x?x8x4xf32>
}

// -----

// CHECK-LABEL: func @reshape_infers_minus_one
func.func @reshape_infers_minus_one(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %s = graph.constant {value = dense<[-1, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
  // CHECK: graph.reshape {{.*}} -> tensor<6x4xf32>
  %0 = graph.reshape %x, %s : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// -----

// CHECK-LABEL: func @pool_ceil_mode
func.func @pool_ceil_mode(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32> {
  // CHECK: graph.max_pool {{.*}} -> tensor<1x1x3x3xf32>
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, ceil_mode = 1 : i64}
      : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

// CHECK-LABEL: func @slice_negative_step
func.func @slice_negative_step(%x: tensor<10xf32>) -> tensor<4xf32> {
  // CHECK: graph.slice {{.*}} -> tensor<4xf32>
  %0 = graph.slice %x {starts = array<i64: -1>, ends = array<i64: 2>, axes = array<i64: 0>, steps = array<i64: -2>} : (tensor<10xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func @shape_folds
func.func @shape_folds(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  // CHECK: graph.shape
  %0 = graph.shape %x : (tensor<2x3xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// CHECK-LABEL: func @compare_where_clip_expand
func.func @compare_where_clip_expand(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %lo: tensor<f32>, %hi: tensor<f32>) -> tensor<4x2x3xf32> {
  // CHECK: graph.less {{.*}} -> tensor<2x3xi1>
  %c = graph.less %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: graph.where {{.*}} -> tensor<2x3xf32>
  %w = graph.where %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: graph.clip
  %k = graph.clip %w, %lo, %hi : (tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK: graph.leaky_relu {{.*}}alpha = 1.000000e-01
  %l = graph.leaky_relu %k {alpha = 0.1 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: graph.expand {{.*}} -> tensor<4x2x3xf32>
  %e = graph.expand %l {shape = array<i64: 4, 1, 1>} : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  return %e : tensor<4x2x3xf32>
}

// -----

// A reshape built with a dynamic result stays valid once its shape operand
// folds to a constant (the inferred type is only more static).
// CHECK-LABEL: func @reshape_refinable
// CHECK: graph.reshape {{.*}} -> tensor<?x?xf32>
func.func @reshape_refinable(%x: tensor<2x6xf32>) -> tensor<?x?xf32> {
  %s = graph.constant {value = dense<[3, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = graph.reshape %x, %s : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// CHECK-LABEL: func @range
// CHECK: graph.range %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
func.func @range(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>) -> tensor<?xf32> {
  %0 = graph.range %a, %b, %c : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// CHECK-LABEL: func @kv_cache
// CHECK: graph.kv_cache_append
// CHECK: graph.kv_cache_prefix
func.func @kv_cache(%c: tensor<1x2x?x4xf32>, %n: tensor<1x2x1x4xf32>, %p: tensor<i64>) -> (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) {
  %0 = graph.kv_cache_append %c, %n, %p {axis = 2 : i64} : (tensor<1x2x?x4xf32>, tensor<1x2x1x4xf32>, tensor<i64>) -> tensor<1x2x?x4xf32>
  %1 = graph.kv_cache_prefix %c, %p {axis = 2 : i64} : (tensor<1x2x?x4xf32>, tensor<i64>) -> tensor<1x2x?x4xf32>
  return %0, %1 : tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>
}

// CHECK-LABEL: func @dynamic_expand
// CHECK: graph.dynamic_expand
func.func @dynamic_expand(%x: tensor<2x1xf32>, %s: tensor<3xi64>) -> tensor<?x2x?xf32> {
  %0 = graph.dynamic_expand %x, %s : (tensor<2x1xf32>, tensor<3xi64>) -> tensor<?x2x?xf32>
  return %0 : tensor<?x2x?xf32>
}

// -----

// CHECK-LABEL: func @gather_nd
// CHECK: graph.gather_nd {{.*}} -> tensor<?x2x2xf32>
// CHECK: graph.gather_nd {{.*}}batch_dims = 1 : i64{{.*}} -> tensor<2xi32>
func.func @gather_nd(%d: tensor<2x2x2xf32>, %i: tensor<?x1xi64>, %e: tensor<2x2xi32>, %j: tensor<2x1xi64>) -> (tensor<?x2x2xf32>, tensor<2xi32>) {
  %0 = graph.gather_nd %d, %i : (tensor<2x2x2xf32>, tensor<?x1xi64>) -> tensor<?x2x2xf32>
  %1 = graph.gather_nd %e, %j {batch_dims = 1 : i64} : (tensor<2x2xi32>, tensor<2x1xi64>) -> tensor<2xi32>
  return %0, %1 : tensor<?x2x2xf32>, tensor<2xi32>
}

// -----

// CHECK-LABEL: func @scatter
// CHECK: graph.scatter_elements {{.*}}reduction = "add"{{.*}} -> tensor<3x3xf32>
// CHECK: graph.scatter_nd {{.*}}reduction = "mul"{{.*}} -> tensor<4x4x4xf32>
func.func @scatter(%d: tensor<3x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>,
                   %e: tensor<4x4x4xf32>, %j: tensor<2x1xi64>, %v: tensor<2x4x4xf32>) -> (tensor<3x3xf32>, tensor<4x4x4xf32>) {
  %0 = graph.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = "add"} : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  %1 = graph.scatter_nd %e, %j, %v {reduction = "mul"} : (tensor<4x4x4xf32>, tensor<2x1xi64>, tensor<2x4x4xf32>) -> tensor<4x4x4xf32>
  return %0, %1 : tensor<3x3xf32>, tensor<4x4x4xf32>
}

// -----

// A constant k gives a static size along the axis, a run-time k a dynamic one.
// CHECK-LABEL: func @top_k
// CHECK: graph.top_k {{.*}} -> (tensor<3x2xf32>, tensor<3x2xi64>)
// CHECK: graph.top_k {{.*}} -> (tensor<?x4xf32>, tensor<?x4xi64>)
func.func @top_k(%x: tensor<3x4xf32>, %k: tensor<1xi64>) -> (tensor<3x2xf32>, tensor<3x2xi64>, tensor<?x4xf32>, tensor<?x4xi64>) {
  %c = graph.constant {value = dense<2> : tensor<1xi64>} : () -> tensor<1xi64>
  %v, %i = graph.top_k %x, %c {axis = -1 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %w, %j = graph.top_k %x, %k {axis = 0 : i64, largest = 0 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<?x4xf32>, tensor<?x4xi64>)
  return %v, %i, %w, %j : tensor<3x2xf32>, tensor<3x2xi64>, tensor<?x4xf32>, tensor<?x4xi64>
}

// -----

// Explicit and implicit (alphabetical, ellipsis first) results.
// CHECK-LABEL: func @einsum
// CHECK: graph.einsum {{.*}} -> tensor<2x3x5xf32>
// CHECK: graph.einsum {{.*}} -> tensor<f32>
// CHECK: graph.einsum {{.*}} -> tensor<3x2xf32>
// CHECK: graph.einsum {{.*}} -> tensor<7x4xf32>
func.func @einsum(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %v: tensor<5xf32>, %m: tensor<2x3xf32>, %d: tensor<7x4x4xf32>)
    -> (tensor<2x3x5xf32>, tensor<f32>, tensor<3x2xf32>, tensor<7x4xf32>) {
  %0 = graph.einsum %a, %b {equation = "bij, bjk -> bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %1 = graph.einsum %v, %v {equation = "i,i"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<f32>
  %2 = graph.einsum %m {equation = "ji"} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %3 = graph.einsum %d {equation = "...ii->...i"} : (tensor<7x4x4xf32>) -> tensor<7x4xf32>
  return %0, %1, %2, %3 : tensor<2x3x5xf32>, tensor<f32>, tensor<3x2xf32>, tensor<7x4xf32>
}

// -----

// Ellipsis dims broadcast numpy-style (1 against 3).
// CHECK-LABEL: func @einsum_broadcast
// CHECK: graph.einsum {{.*}} -> tensor<2x3x4x2xf32>
func.func @einsum_broadcast(%a: tensor<2x1x4x5xf32>, %b: tensor<3x5x2xf32>) -> tensor<2x3x4x2xf32> {
  %0 = graph.einsum %a, %b {equation = "...ij,...jk->...ik"} : (tensor<2x1x4x5xf32>, tensor<3x5x2xf32>) -> tensor<2x3x4x2xf32>
  return %0 : tensor<2x3x4x2xf32>
}

// -----

// Run-time shape operands (shapeinputs): the dims the values decide are dynamic.
// CHECK-LABEL: func @runtime_shape_operands
// CHECK: graph.dynamic_strided_slice {{.*}} -> tensor<?x?xf32>
// CHECK: graph.dynamic_squeeze {{.*}} -> tensor<?x?xf32>
// CHECK: graph.dynamic_unsqueeze {{.*}} -> tensor<?x?x?x?x?xf32>
// CHECK: graph.dynamic_tile {{.*}} -> tensor<?x?x?xf32>
// CHECK: graph.dynamic_pad {{.*}} {mode = "reflect"} {{.*}} -> tensor<?x?x?xf32>
// CHECK: graph.dynamic_reduce {{.*}} {keepdims = 0 : i64, kind = "sum"} {{.*}} -> tensor<?x?xf32>
// CHECK: graph.dynamic_reduce {{.*}} {kind = "max"} {{.*}} -> tensor<1x?x?xf32>
// CHECK: graph.one_hot {{.*}} -> tensor<1x?x3x4xf32>
// CHECK: graph.dropout {{.*}} -> (tensor<1x3x4xf32>, tensor<1x3x4xi1>)
func.func @runtime_shape_operands(%x: tensor<1x3x4xf32>, %m: tensor<20x10xf32>, %i2: tensor<2xi64>, %i3: tensor<3xi64>,
                                  %i6: tensor<6xi64>, %i1: tensor<1xi64>, %v: tensor<f32>, %t: tensor<i1>,
                                  %v2: tensor<2xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>,
        tensor<1x?x?xf32>, tensor<1x?x3x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xi1>) {
  %0 = graph.dynamic_strided_slice %m, %i2, %i2, %i2, %i2 : (tensor<20x10xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32>
  %1 = graph.dynamic_squeeze %x, %i1 : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  %2 = graph.dynamic_unsqueeze %x, %i2 : (tensor<1x3x4xf32>, tensor<2xi64>) -> tensor<?x?x?x?x?xf32>
  %3 = graph.dynamic_tile %x, %i3 : (tensor<1x3x4xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %4 = graph.dynamic_pad %x, %i6, %v {mode = "reflect"} : (tensor<1x3x4xf32>, tensor<6xi64>, tensor<f32>) -> tensor<?x?x?xf32>
  %5 = graph.dynamic_reduce %x, %i1 {kind = "sum", keepdims = 0 : i64} : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  %6 = graph.dynamic_reduce %x, %i2 {kind = "max"} : (tensor<1x3x4xf32>, tensor<2xi64>) -> tensor<1x?x?xf32>
  %7 = graph.one_hot %x, %v2, %v {axis = 1 : i64} : (tensor<1x3x4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<1x?x3x4xf32>
  %8, %9 = graph.dropout %x, %v, %t {seed = 3 : i64} : (tensor<1x3x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<1x3x4xf32>, tensor<1x3x4xi1>)
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>,
        tensor<1x?x?xf32>, tensor<1x?x3x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xi1>
}

// -----

// newops: pooling with indices, det.
// CHECK-LABEL: func @max_pool_with_indices
func.func @max_pool_with_indices(%x: tensor<1x2x5x5xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>) {
  // CHECK: graph.max_pool_with_indices {{.*}} -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>)
  %v, %i = graph.max_pool_with_indices %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, storage_order = 1 : i64}
      : (tensor<1x2x5x5xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>)
  return %v, %i : tensor<1x2x2x2xf32>, tensor<1x2x2x2xi64>
}

// -----

// --- Resize family ---
// Constant scales and sizes give static dims (floor(input * scale), or the size);
// run-time ones give dynamic dims; the optional operands round-trip by keyword.
// CHECK-LABEL: func @resize
// CHECK: graph.resize %arg0 scales %{{.*}} {{.*}} -> tensor<1x3x5x2xf32>
// CHECK: graph.resize %arg0 sizes %arg1 {{.*}}mode = "cubic"{{.*}} -> tensor<?x?x?x?xf32>
// CHECK: graph.resize %arg0 roi %arg2 sizes %{{.*}} {{.*}}extrapolation_value = 1.000000e+01 : f32{{.*}} -> tensor<1x3x2x2xf32>
func.func @resize(%x: tensor<1x3x4x4xf32>, %n: tensor<4xi64>, %roi: tensor<8xf32>)
    -> (tensor<1x3x5x2xf32>, tensor<?x?x?x?xf32>, tensor<1x3x2x2xf32>) {
  %s = graph.constant {value = dense<[1.0, 1.0, 1.3, 0.6]> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = graph.resize %x scales %s {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"}
      : (tensor<1x3x4x4xf32>, tensor<4xf32>) -> tensor<1x3x5x2xf32>
  %1 = graph.resize %x sizes %n {mode = "cubic", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor",
                                 cubic_coeff_a = -5.0e-01 : f32, exclude_outside = 1 : i64}
      : (tensor<1x3x4x4xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %c = graph.constant {value = dense<[1, 3, 2, 2]> : tensor<4xi64>} : () -> tensor<4xi64>
  %2 = graph.resize %x roi %roi sizes %c {mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize",
                                          nearest_mode = "round_prefer_floor", extrapolation_value = 1.0e+01 : f32}
      : (tensor<1x3x4x4xf32>, tensor<8xf32>, tensor<4xi64>) -> tensor<1x3x2x2xf32>
  return %0, %1, %2 : tensor<1x3x5x2xf32>, tensor<?x?x?x?xf32>, tensor<1x3x2x2xf32>
}
// --- end Resize family ---

// -----

// CHECK-LABEL: func @det_batched
func.func @det_batched(%x: tensor<?x3x3xf32>) -> tensor<?xf32> {
  // CHECK: graph.det %{{.*}} : (tensor<?x3x3xf32>) -> tensor<?xf32>
  %0 = graph.det %x : (tensor<?x3x3xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func @grid_sample
func.func @grid_sample(%x: tensor<?x3x8x8xf32>, %g: tensor<2x5x7x2xf32>) -> tensor<2x3x5x7xf32> {
  // CHECK: graph.grid_sample {{.*}} -> tensor<2x3x5x7xf32>
  %0 = graph.grid_sample %x, %g {mode = "nearest", padding_mode = "border", align_corners = 1 : i64}
      : (tensor<?x3x8x8xf32>, tensor<2x5x7x2xf32>) -> tensor<2x3x5x7xf32>
  return %0 : tensor<2x3x5x7xf32>
}

// -----

// CHECK-LABEL: func @roi_align
func.func @roi_align(%x: tensor<1x4x10x10xf32>, %r: tensor<?x4xf32>, %b: tensor<?xi64>) -> tensor<?x4x2x3xf32> {
  // CHECK: graph.roi_align {{.*}} -> tensor<?x4x2x3xf32>
  %0 = graph.roi_align %x, %r, %b {mode = "max", output_height = 2 : i64, output_width = 3 : i64, sampling_ratio = 1 : i64, spatial_scale = 0.5 : f32, coordinate_transformation_mode = "output_half_pixel"}
      : (tensor<1x4x10x10xf32>, tensor<?x4xf32>, tensor<?xi64>) -> tensor<?x4x2x3xf32>
  return %0 : tensor<?x4x2x3xf32>
}

// -----

// CHECK-LABEL: func @max_unpool_constant_shape
func.func @max_unpool_constant_shape(%x: tensor<4xf32>, %i: tensor<4xi64>) -> tensor<1x1x4x4xf32> {
  %s = graph.constant {value = dense<[1, 1, 4, 4]> : tensor<4xi64>} : () -> tensor<4xi64>
  // CHECK: graph.max_unpool {{.*}} -> tensor<1x1x4x4xf32>
  %0 = graph.max_unpool %x, %i, %s : (tensor<4xf32>, tensor<4xi64>, tensor<4xi64>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// Data-dependent results (datadep family): the counted dims are `?` even for
// static operands; Unique's inverse indices keep the input's length.
// CHECK-LABEL: func @data_dependent
// CHECK: graph.non_zero {{.*}} -> tensor<2x?xi64>
// CHECK: graph.compress {{.*}} {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2xi1>) -> tensor<2x?xf32>
// CHECK: graph.compress {{.*}} : (tensor<2x3xf32>, tensor<5xi1>) -> tensor<?xf32>
// CHECK: graph.unique {{.*}} -> (tensor<2x?xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
// CHECK: graph.unique {{.*}} -> (tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>)
// CHECK: graph.non_max_suppression {{.*}} -> tensor<?x3xi64>
func.func @data_dependent(%x: tensor<2x3xf32>, %c: tensor<2xi1>, %d: tensor<5xi1>, %b: tensor<?x6x4xf32>,
                          %s: tensor<?x2x6xf32>, %m: tensor<1xi64>, %t: tensor<f32>) -> tensor<?x3xi64> {
  %0 = graph.non_zero %x : (tensor<2x3xf32>) -> tensor<2x?xi64>
  %1 = graph.compress %x, %c {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2xi1>) -> tensor<2x?xf32>
  %2 = graph.compress %x, %d : (tensor<2x3xf32>, tensor<5xi1>) -> tensor<?xf32>
  %3:4 = graph.unique %x {axis = -1 : i64, sorted = 0 : i64} : (tensor<2x3xf32>) -> (tensor<2x?xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
  %4:4 = graph.unique %x : (tensor<2x3xf32>) -> (tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>)
  %5 = graph.non_max_suppression %b, %s, %m, %t, %t {center_point_box = 1 : i64}
      : (tensor<?x6x4xf32>, tensor<?x2x6xf32>, tensor<1xi64>, tensor<f32>, tensor<f32>) -> tensor<?x3xi64>
  return %5 : tensor<?x3xi64>
}

// -----

// dynconv: a weight of dynamic shape, and auto_pad / output_shape kept for run time.
// CHECK-LABEL: func @conv_dynamic_weight
func.func @conv_dynamic_weight(%x: tensor<1x4x?x9xf32>, %w: tensor<?x?x?x?xf32>) -> (tensor<1x?x?x?xf32>, tensor<1x?x?x5xf32>) {
  // CHECK: graph.conv {{.*}} -> tensor<1x?x?x?xf32>
  %0 = graph.conv %x, %w {group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<1x4x?x9xf32>, tensor<?x?x?x?xf32>) -> tensor<1x?x?x?xf32>
  // SAME: ceil(9 / 2) = 5, whatever the kernel.
  // CHECK: graph.conv {{.*}}auto_pad = "SAME_UPPER"{{.*}} -> tensor<1x?x?x5xf32>
  %1 = graph.conv %x, %w {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, auto_pad = "SAME_UPPER"}
      : (tensor<1x4x?x9xf32>, tensor<?x?x?x?xf32>) -> tensor<1x?x?x5xf32>
  return %0, %1 : tensor<1x?x?x?xf32>, tensor<1x?x?x5xf32>
}

// CHECK-LABEL: func @pool_same_runtime
func.func @pool_same_runtime(%x: tensor<1x3x?x7xf32>) -> (tensor<1x3x?x4xf32>, tensor<1x3x?x4xf32>) {
  // CHECK: graph.max_pool {{.*}} -> tensor<1x3x?x4xf32>
  %0 = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, auto_pad = "SAME_LOWER"}
      : (tensor<1x3x?x7xf32>) -> tensor<1x3x?x4xf32>
  // CHECK: graph.average_pool {{.*}} -> tensor<1x3x?x4xf32>
  %1 = graph.average_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, auto_pad = "SAME_UPPER"}
      : (tensor<1x3x?x7xf32>) -> tensor<1x3x?x4xf32>
  return %0, %1 : tensor<1x3x?x4xf32>, tensor<1x3x?x4xf32>
}

// CHECK-LABEL: func @conv_transpose_runtime_pads
func.func @conv_transpose_runtime_pads(%x: tensor<1x?x?x3xf32>, %w: tensor<?x?x?x?xf32>) -> (tensor<1x?x10x8xf32>, tensor<1x?x?x6xf32>) {
  // CHECK: graph.conv_transpose {{.*}}output_shape = array<i64: 10, 8>{{.*}} -> tensor<1x?x10x8xf32>
  %0 = graph.conv_transpose %x, %w {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 2>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, output_shape = array<i64: 10, 8>}
      : (tensor<1x?x?x3xf32>, tensor<?x?x?x?xf32>) -> tensor<1x?x10x8xf32>
  // SAME: input * stride.
  // CHECK: graph.conv_transpose {{.*}}auto_pad = "SAME_LOWER"{{.*}} -> tensor<1x?x?x6xf32>
  %1 = graph.conv_transpose %x, %w {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 2>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, auto_pad = "SAME_LOWER"}
      : (tensor<1x?x?x3xf32>, tensor<?x?x?x?xf32>) -> tensor<1x?x?x6xf32>
  return %0, %1 : tensor<1x?x10x8xf32>, tensor<1x?x?x6xf32>
}
// end dynconv

// -----

// The output width is max(ngram_indexes) + 1 whatever the row length.
// CHECK-LABEL: func @tfidf_vectorizer
func.func @tfidf_vectorizer(%x: tensor<?x?xi32>, %y: tensor<12xi64>) -> (tensor<?x5xf32>, tensor<3xf32>) {
  // CHECK: graph.tfidf_vectorizer {{.*}} -> tensor<?x5xf32>
  %0 = graph.tfidf_vectorizer %x {mode = "TF", min_gram_length = 1 : i64, max_gram_length = 2 : i64,
      max_skip_count = 0 : i64, ngram_counts = array<i64: 0, 2>, ngram_indexes = array<i64: 4, 0, 2>,
      pool_int64s = array<i64: 4, 5, 4, 5>} : (tensor<?x?xi32>) -> tensor<?x5xf32>
  // CHECK: graph.tfidf_vectorizer {{.*}}weights = array<f32: 2.000000e+00, 1.000000e+00, 5.000000e-01>{{.*}} -> tensor<3xf32>
  %1 = graph.tfidf_vectorizer %y {mode = "TFIDF", min_gram_length = 2 : i64, max_gram_length = 2 : i64,
      max_skip_count = 3 : i64, ngram_counts = array<i64: 0, 0>, ngram_indexes = array<i64: 0, 1, 2>,
      pool_int64s = array<i64: 1, 2, 3, 4, 5, 6>, weights = array<f32: 2.0, 1.0, 0.5>} : (tensor<12xi64>) -> tensor<3xf32>
  return %0, %1 : tensor<?x5xf32>, tensor<3xf32>
}

// -----

// Strings family: i128 elements; a cast keeps the shape, the normalizer's
// length depends on the data ([1, ?] for a [1, C] input, even a dynamic one).
// CHECK-LABEL: func @strings
func.func @strings(%x: tensor<3x4xf32>, %s: tensor<?x6xi128>, %t: tensor<4xi128>)
    -> (tensor<3x4xi128>, tensor<4xf64>, tensor<1x?xi128>, tensor<?xi128>) {
  // CHECK: graph.string_cast {{.*}} -> tensor<3x4xi128>
  %0 = graph.string_cast %x {to = i128} : (tensor<3x4xf32>) -> tensor<3x4xi128>
  // CHECK: graph.string_cast {{.*}} -> tensor<4xf64>
  %1 = graph.string_cast %t {to = f64} : (tensor<4xi128>) -> tensor<4xf64>
  // CHECK: graph.string_normalizer {{.*}}stopwords = ["monday"]{{.*}} -> tensor<1x?xi128>
  %2 = graph.string_normalizer %s {case_change_action = "UPPER", is_case_sensitive = false,
      stopwords = ["monday"], locale = "en_US"} : (tensor<?x6xi128>) -> tensor<1x?xi128>
  // CHECK: graph.string_normalizer {{.*}} -> tensor<?xi128>
  %3 = graph.string_normalizer %t : (tensor<4xi128>) -> tensor<?xi128>
  return %0, %1, %2, %3 : tensor<3x4xi128>, tensor<4xf64>, tensor<1x?xi128>, tensor<?xi128>
}

// -----

// Channels-last forms (x86): nhwc_conv with an HWIO weight, nhwc_pool,
// packed_conv with channels_last; sizes inferred in NHWC order.
// CHECK-LABEL: func @channels_last_ops
// CHECK: graph.nhwc_conv {{.*}} -> tensor<?x4x4x32xf32>
// CHECK: graph.nhwc_pool {{.*}} -> tensor<?x2x2x32xf32>
// CHECK: graph.packed_conv {{.*}}channels_last{{.*}} -> tensor<?x4x4x64xf32>
func.func @channels_last_ops(%x: tensor<?x8x8x16xf32>, %w: tensor<3x3x16x32xf32>, %p: tensor<1x144x64xf32>)
    -> (tensor<?x2x2x32xf32>, tensor<?x4x4x64xf32>) {
  %0 = graph.nhwc_conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<?x8x8x16xf32>, tensor<3x3x16x32xf32>) -> tensor<?x4x4x32xf32>
  %1 = graph.nhwc_pool %0 {kind = "max", kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<?x4x4x32xf32>) -> tensor<?x2x2x32xf32>
  %2 = graph.packed_conv %x, %p {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, channels_last}
      : (tensor<?x8x8x16xf32>, tensor<1x144x64xf32>) -> tensor<?x4x4x64xf32>
  return %1, %2 : tensor<?x2x2x32xf32>, tensor<?x4x4x64xf32>
}

// -----

// Winograd F(2x2, 3x3) transforms (kiln-winograd-convs): [16, N, tiles, C]
// (a 7x5 output in 2x2 tiles: 4 x 3 = 12 tiles), the 16 products in one
// packed_matmul with a weight per leading index, and back to
// [N, height, width, K].
// CHECK-LABEL: func @winograd
// CHECK: %[[V:.*]] = graph.winograd_input %arg0 {pads = array<i64: 1, 1, 1, 1>, tile = 2 : i64} : (tensor<?x7x5x32xf32>) -> tensor<16x?x12x32xf32>
// CHECK: %[[P:.*]] = graph.packed_matmul %[[V]], %arg2 : (tensor<16x?x12x32xf32>, tensor<16x3x32x16xf32>) -> tensor<16x?x12x48xf32>
// CHECK: graph.winograd_output %[[P]], %arg1 {height = 7 : i64, tile = 2 : i64, width = 5 : i64} : (tensor<16x?x12x48xf32>, tensor<48xf32>) -> tensor<?x7x5x48xf32>
func.func @winograd(%x: tensor<?x7x5x32xf32>, %b: tensor<48xf32>, %u: tensor<16x3x32x16xf32>) -> tensor<?x7x5x48xf32> {
  %v = graph.winograd_input %x {tile = 2 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<?x7x5x32xf32>) -> tensor<16x?x12x32xf32>
  %p = graph.packed_matmul %v, %u : (tensor<16x?x12x32xf32>, tensor<16x3x32x16xf32>) -> tensor<16x?x12x48xf32>
  %y = graph.winograd_output %p, %b {tile = 2 : i64, height = 7 : i64, width = 5 : i64} : (tensor<16x?x12x48xf32>, tensor<48xf32>) -> tensor<?x7x5x48xf32>
  return %y : tensor<?x7x5x48xf32>
}

// -----

// Rotary embedding: cos and sin broadcast to x (heads of 1, a static position count where x's is
// dynamic).
// CHECK-LABEL: func @rotary
// CHECK: graph.rotary %arg0, %arg1, %arg2 : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<1x1x8x16xf32>) -> tensor<?x4x?x16xf32>
func.func @rotary(%x: tensor<?x4x?x16xf32>, %c: tensor<?x1x?x16xf32>, %s: tensor<1x1x8x16xf32>) -> tensor<?x4x?x16xf32> {
  %0 = graph.rotary %x, %c, %s : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<1x1x8x16xf32>) -> tensor<?x4x?x16xf32>
  return %0 : tensor<?x4x?x16xf32>
}
