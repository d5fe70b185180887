// kiln-convert-graph-to-linalg: each graph op family becomes linalg/tensor ops.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s

// CHECK-LABEL: func @add_broadcast
// CHECK: tensor.dim
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.addf
// CHECK-NOT: graph.
func.func @add_broadcast(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %0 = graph.add %a, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func @matmul
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul(%a: tensor<?x8xf32>, %b: tensor<8x4xf32>) -> tensor<?x4xf32> {
  %0 = graph.matmul %a, %b : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func @conv_padded
// CHECK: tensor.pad
// im2col as whole-row vector copies (unit stride along W), then the product
// with the output positions innermost.
// CHECK: scf.forall
// CHECK: vector.transfer_read {{.*}} : tensor<1x3x10x10xf32>, vector<8xf32>
// CHECK: vector.transfer_write {{.*}} : vector<8xf32>, tensor<3x3x8x8xf32>
// CHECK: tensor.parallel_insert_slice
// CHECK: tensor.reshape {{.*}} -> tensor<1x1x27x64xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]
// CHECK: arith.mulf {{.*}} fastmath<reassoc,contract>
// CHECK: tensor.reshape {{.*}} -> tensor<1x4x8x8xf32>
func.func @conv_padded(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %0 = graph.conv %x, %w, %b {group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

// A packed convolution: patch rows col[n, oh, ow, c, kh, kw] viewed as
// [N, OH*OW, K], the packed product with the transposed weight's panels,
// then NCHW (the product read through div/mod, no reshape) with the bias.
// CHECK-DAG: #[[NCHW:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2 * 8 + d3, d1 floordiv 32, d1 mod 32)>
// CHECK-LABEL: func @packed_conv
// CHECK: tensor.pad
// CHECK: linalg.generic {{.*}}ins(%{{.*}} : tensor<?x8x18x18xf32>) outs(%{{.*}} : tensor<?x8x8x8x3x3xf32>)
// CHECK: tensor.collapse_shape {{.*}} {{\[}}[0], [1, 2], [3, 4, 5]] : tensor<?x8x8x8x3x3xf32> into tensor<?x64x72xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]{{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x64x72xf32>, tensor<3x72x32xf32>) outs(%{{.*}} : tensor<?x64x3x32xf32>) attrs = {kiln.packed_rhs}
// CHECK: linalg.generic {indexing_maps = [#[[NCHW]], {{.*}}ins(%{{.*}}, %{{.*}} : tensor<?x64x3x32xf32>, tensor<96xf32>) outs(%{{.*}} : tensor<?x96x8x8xf32>)
// CHECK: arith.addf
func.func @packed_conv(%x: tensor<?x8x16x16xf32>, %w: tensor<3x72x32xf32>, %b: tensor<96xf32>) -> tensor<?x96x8x8xf32> {
  %0 = graph.packed_conv %x, %w, %b {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<?x8x16x16xf32>, tensor<3x72x32xf32>, tensor<96xf32>) -> tensor<?x96x8x8xf32>
  return %0 : tensor<?x96x8x8xf32>
}

// -----

// A channels-last packed convolution: an implicit product that reads the
// zero-padded input in place, viewed as [N, Hp, Wp*C] so that a window row's
// 3 taps x 8 channels are one run of 24 floats (at ow*2*8 for stride 2), times
// the weight's panels viewed [Cout/B, kh, kw*C, B]; its result is already NHWC
// in channel blocks [N, OH, OW, Cout/B, B], so the bias reads it element for
// element (an epilogue the tiles take in), viewed as [N, OH, OW, Cout].
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 * 2 + d4, d2 * 16 + d5)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d3, d4, d5, d6)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d6)>
// CHECK-DAG: #[[ID5:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func @packed_conv_channels_last
// CHECK: tensor.pad
// CHECK: } : tensor<?x16x16x8xf32> to tensor<?x18x18x8xf32>
// CHECK: tensor.collapse_shape {{.*}} {{\[}}[0], [1], [2, 3]] : tensor<?x18x18x8xf32> into tensor<?x18x144xf32>
// CHECK: tensor.expand_shape {{.*}} : tensor<3x72x32xf32> into tensor<3x3x24x32xf32>
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<?x18x144xf32>, tensor<3x3x24x32xf32>) outs(%{{.*}} : tensor<?x8x8x3x32xf32>) attrs = {kiln.implicit_conv, kiln.packed_rhs}
// CHECK: linalg.generic {indexing_maps = [#[[ID5]], {{.*}}outs(%{{.*}} : tensor<?x8x8x3x32xf32>)
// CHECK: arith.addf
// CHECK: tensor.collapse_shape {{.*}} {{\[}}[0], [1], [2], [3, 4]] : tensor<?x8x8x3x32xf32> into tensor<?x8x8x96xf32>
func.func @packed_conv_channels_last(%x: tensor<?x16x16x8xf32>, %w: tensor<3x72x32xf32>, %b: tensor<96xf32>) -> tensor<?x8x8x96xf32> {
  %0 = graph.packed_conv %x, %w, %b {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, channels_last}
      : (tensor<?x16x16x8xf32>, tensor<3x72x32xf32>, tensor<96xf32>) -> tensor<?x8x8x96xf32>
  return %0 : tensor<?x8x8x96xf32>
}

// -----

// A 1x1 stride-1 channels-last convolution reads the input itself as the
// rows of a plain packed product (faster than the implicit form's tiles of
// whole output rows).
// CHECK-LABEL: func @pointwise_channels_last
// CHECK-NOT: tensor.pad
// CHECK: tensor.collapse_shape %arg0 {{\[}}[0], [1, 2], [3]] : tensor<1x4x4x8xf32> into tensor<1x16x8xf32>
// CHECK: attrs = {kiln.packed_rhs}
func.func @pointwise_channels_last(%x: tensor<1x4x4x8xf32>, %w: tensor<1x8x16xf32>) -> tensor<1x4x4x16xf32> {
  %0 = graph.packed_conv %x, %w {kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, channels_last}
      : (tensor<1x4x4x8xf32>, tensor<1x8x16xf32>) -> tensor<1x4x4x16xf32>
  return %0 : tensor<1x4x4x16xf32>
}

// -----

// A depthwise nhwc_conv: work items (n, oh), each row channel block by
// channel block (vectors of 8; 12 channels: a masked last vector), reading
// the unpadded input: taps past the map's edges take the pad value (0) where
// a padded copy had its border, so there is no tensor.pad (no copy, no
// border fills). With dilation 2 and pads 2 on an 8-wide map, positions
// [2, 6) read every tap inside the map: one block of 4 positions with
// independent accumulators starting from the bias, no column checks; the 2
// positions at each edge run one at a time, each tap's column checked (a
// clamped read and a select of the pad value). Tap rows 0 and 2 can leave
// the map: one branch per output row each, whose other side steps the pad
// value through the taps. A row is written into the result's own
// [1, 1, OW, C] slice (bufferized in place). The loop is marked for
// kiln-fuse-epilogues.
// CHECK-LABEL: func @depthwise_channels_last
// CHECK-NOT: tensor.pad
// CHECK: tensor.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]] : tensor<3x3x1x12xf32> into tensor<3x3x12xf32>
// CHECK: scf.forall (%[[N:.*]], %[[OH:.*]]) in {{.*}} shared_outs(%[[OUT:.*]] =
// CHECK-NOT: tensor.empty
// CHECK: tensor.extract_slice %[[OUT]][%[[N]], %[[OH]], 0, 0] [1, 1, 8, 12] [1, 1, 1, 1] : tensor<1x8x8x12xf32> to tensor<1x1x8x12xf32>
// CHECK: scf.for {{.*}} step %c8
// CHECK: scf.for {{.*}} to %c2{{(_[0-9]+)?}} step %c1
// CHECK: scf.if {{.*}} -> (vector<8xf32>)
// CHECK: arith.select {{.*}} : vector<8xf32>
// CHECK: scf.for {{.*}} = %c2{{(_[0-9]+)?}} to %c6{{(_[0-9]+)?}} step %c4
// CHECK-COUNT-4: vector.transfer_read %arg2{{.*}} : tensor<12xf32>, vector<8xf32>
// CHECK: scf.if {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NOT: arith.select {{.*}} : vector<8xf32>
// CHECK: scf.for {{.*}} = %c6{{(_[0-9]+)?}} to %c8{{(_[0-9]+)?}} step %c1
// CHECK: arith.select {{.*}} : vector<8xf32>
// CHECK: tensor.parallel_insert_slice {{.*}} into %[[OUT]][%[[N]], %[[OH]], 0, 0] [1, 1, 8, 12]
// CHECK: } {kiln.epilogue_tiles}
func.func @depthwise_channels_last(%x: tensor<1x8x8x12xf32>, %w: tensor<3x3x1x12xf32>, %b: tensor<12xf32>) -> tensor<1x8x8x12xf32> {
  %0 = graph.nhwc_conv %x, %w, %b {group = 12 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 2, 2>}
      : (tensor<1x8x8x12xf32>, tensor<3x3x1x12xf32>, tensor<12xf32>) -> tensor<1x8x8x12xf32>
  return %0 : tensor<1x8x8x12xf32>
}

// -----

// 6 output positions per row, pads 1: the first and the last reach past the
// map (one at a time, checked); the 4 between are one block of 4 (36 FMAs
// for the 3x3 window, those of tap rows 0 and 2 in their row branches).
// CHECK-LABEL: func @depthwise_position_remainder
// CHECK: scf.for {{.*}} step %c8
// CHECK: scf.for {{.*}} to %c1{{(_[0-9]+)?}} step %c1
// CHECK: scf.for {{.*}} = %c1{{(_[0-9]+)?}} to %c5{{(_[0-9]+)?}} step %c4
// CHECK-COUNT-36: vector.fma
// CHECK: scf.for {{.*}} = %c5{{(_[0-9]+)?}} to %c6{{(_[0-9]+)?}} step %c1
// CHECK: } {kiln.epilogue_tiles}
func.func @depthwise_position_remainder(%x: tensor<1x6x6x16xf32>, %w: tensor<3x3x1x16xf32>, %b: tensor<16xf32>) -> tensor<1x6x6x16xf32> {
  %0 = graph.nhwc_conv %x, %w, %b {group = 16 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x6x6x16xf32>, tensor<3x3x1x16xf32>, tensor<16xf32>) -> tensor<1x6x6x16xf32>
  return %0 : tensor<1x6x6x16xf32>
}

// -----

// nhwc_pool: max (compare and select) over the window in vectors of 8
// channels; an average adds and divides by the window size.
// CHECK-LABEL: func @nhwc_pools
// CHECK: scf.forall
// CHECK-COUNT-9: arith.cmpf ogt, {{.*}} : vector<8xf32>
// CHECK: scf.forall
// CHECK-COUNT-4: arith.addf {{.*}} : vector<8xf32>
// CHECK: arith.divf {{.*}} : vector<8xf32>
func.func @nhwc_pools(%x: tensor<1x8x8x16xf32>) -> (tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>) {
  %0 = graph.nhwc_pool %x {kind = "max", kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32>
  %1 = graph.nhwc_pool %x {kind = "average", kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32>
  return %0, %1 : tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>
}

// -----

// CHECK-LABEL: func @softmax_last_axis
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.divf
func.func @softmax_last_axis(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %0 = graph.softmax %x {axis = -1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}

// -----

// CHECK-LABEL: func @flatten_dynamic
// CHECK: tensor.reshape
func.func @flatten_dynamic(%x: tensor<?x8x1x1xf32>) -> tensor<?x8xf32> {
  %0 = graph.flatten %x {axis = 1 : i64} : (tensor<?x8x1x1xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func @gather_clamps
// CHECK: linalg.generic
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract
func.func @gather_clamps(%d: tensor<5x3xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  %0 = graph.gather %d, %i {axis = 0 : i64} : (tensor<5x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @leaky_relu
// CHECK: linalg.generic
// CHECK: arith.cmpf olt
// CHECK: arith.mulf
// CHECK: arith.select
func.func @leaky_relu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.leaky_relu %x {alpha = 0.1 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func @log_softmax
// CHECK: math.exp
// CHECK: math.log
// CHECK: arith.subf
func.func @log_softmax(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %0 = graph.log_softmax %x {axis = -1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}

// -----

// CHECK-LABEL: func @greater_where
// CHECK: arith.cmpf ogt
// CHECK: arith.select
func.func @greater_where(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.greater %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %0 = graph.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func @reduce_l2_keepdims
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: math.sqrt
// CHECK: tensor.reshape {{.*}} -> tensor<3x1xf32>
func.func @reduce_l2_keepdims(%x: tensor<3x5xf32>) -> tensor<3x1xf32> {
  %0 = graph.reduce_l2 %x {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}

// -----

// CHECK-LABEL: func @argmax_keepdims
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: linalg.index 1
// CHECK: arith.cmpf ogt
// CHECK: linalg.yield {{.*}}, {{.*}} : f32, i64
// CHECK: tensor.reshape {{.*}} -> tensor<3x1xi64>
func.func @argmax_keepdims(%x: tensor<3x4xf32>) -> tensor<3x1xi64> {
  %0 = graph.arg_max %x {axis = 1 : i64, keepdims = 1 : i64} : (tensor<3x4xf32>) -> tensor<3x1xi64>
  return %0 : tensor<3x1xi64>
}

// -----

// CHECK-LABEL: func @pad_reflect
// CHECK: linalg.generic
// CHECK: arith.minsi
// CHECK: tensor.extract
func.func @pad_reflect(%x: tensor<2x3xf32>, %v: tensor<f32>) -> tensor<2x5xf32> {
  %0 = graph.pad %x, %v {mode = "reflect", pads = array<i64: 0, 1, 0, 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// CHECK-LABEL: func @pad_constant
// CHECK: tensor.extract
// CHECK: tensor.pad
func.func @pad_constant(%x: tensor<2x3xf32>, %v: tensor<f32>) -> tensor<4x3xf32> {
  %0 = graph.pad %x, %v {mode = "constant", pads = array<i64: 1, 0, 1, 0>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func @mod_python
// CHECK: arith.remsi
// CHECK: arith.xori
// CHECK: arith.select
func.func @mod_python(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = graph.mod %a, %b {fmod = 0 : i64} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func @constant_of_shape_runtime
// CHECK: tensor.extract
// CHECK: arith.maxsi
// CHECK: tensor.empty
// CHECK: linalg.fill
func.func @constant_of_shape_runtime(%s: tensor<2xi64>) -> tensor<?x?xf32> {
  %0 = graph.constant_of_shape %s {value = dense<1.0> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func @range_runtime
// CHECK: arith.ceildivsi
// CHECK: arith.maxsi
// CHECK: tensor.empty(%{{.*}}) : tensor<?xi64>
// CHECK: linalg.index 0
func.func @range_runtime(%start: tensor<i64>, %limit: tensor<i64>, %delta: tensor<i64>) -> tensor<?xi64> {
  %0 = graph.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

// The write goes into the cache (in place after bufferization) only when it fits.
// CHECK-LABEL: func @kv_cache_append
// CHECK: %[[POS:.*]] = arith.index_cast
// CHECK: arith.cmpi sle
// CHECK: scf.if
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, %[[POS]], 0]
// CHECK: tensor.extract_slice
func.func @kv_cache_append(%cache: tensor<1x2x?x4xf32>, %new: tensor<1x2x?x4xf32>, %pos: tensor<i64>) -> tensor<1x2x?x4xf32> {
  %0 = graph.kv_cache_append %cache, %new, %pos {axis = 2 : i64} : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<i64>) -> tensor<1x2x?x4xf32>
  return %0 : tensor<1x2x?x4xf32>
}

// -----

// With row positions each batch row is written at its own position, one row slice at a time,
// and only where the row's [p, p + n) lies in the view [0, position + n).
// CHECK-LABEL: func @kv_cache_append_rows
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %arg0)
// CHECK: %[[P:.*]] = tensor.extract %arg3[%[[R]]]
// CHECK: %[[PI:.*]] = arith.index_cast %[[P]]
// CHECK: %[[END:.*]] = arith.addi %[[PI]]
// CHECK: arith.cmpi sle, %[[END]]
// CHECK: arith.cmpi sge, %[[PI]]
// CHECK: scf.if
// CHECK: %[[ROW:.*]] = tensor.extract_slice %arg1[%[[R]], 0, 0, 0] [1, 2, %{{.*}}, 4]
// CHECK: tensor.insert_slice %[[ROW]] into %[[ACC]][%[[R]], 0, %[[PI]], 0] [1, 2, %{{.*}}, 4]
// CHECK: } else {
// CHECK: scf.yield %[[ACC]]
// CHECK: tensor.extract_slice
func.func @kv_cache_append_rows(%cache: tensor<?x2x?x4xf32>, %new: tensor<?x2x?x4xf32>, %pos: tensor<i64>, %rows: tensor<?xi64>) -> tensor<?x2x?x4xf32> {
  %0 = graph.kv_cache_append %cache, %new, %pos, %rows {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<i64>, tensor<?xi64>) -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

// -----

// CHECK-LABEL: func @kv_cache_prefix
// CHECK: %[[POS:.*]] = arith.index_cast
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [1, 2, %[[POS]], 4] [1, 1, 1, 1]
func.func @kv_cache_prefix(%cache: tensor<1x2x?x4xf32>, %pos: tensor<i64>) -> tensor<1x2x?x4xf32> {
  %0 = graph.kv_cache_prefix %cache, %pos {axis = 2 : i64} : (tensor<1x2x?x4xf32>, tensor<i64>) -> tensor<1x2x?x4xf32>
  return %0 : tensor<1x2x?x4xf32>
}

// -----

// A dynamic input dim may be 1 at run time: the result dim is the shape's
// where it is 1, else its own, and it is read at min(i, d - 1) (0 when it
// broadcasts) instead of through an indexing map.
// CHECK-LABEL: func @dynamic_expand
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[S0:.*]] = tensor.extract %arg1[%[[C0]]]
// CHECK: %[[S0I:.*]] = arith.index_cast %[[S0]]
// CHECK: %[[D0:.*]] = tensor.dim %arg0, %[[C0]]
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %[[D0]], %[[C1]]
// CHECK: arith.select %[[ONE]], %[[S0I]], %[[D0]]
// CHECK: %[[LAST0:.*]] = arith.subi %{{.*}}, %[[C1]]
// CHECK: linalg.generic {{.*}} outs(
// CHECK: %[[I0:.*]] = linalg.index 0
// CHECK: %[[J0:.*]] = arith.minsi %[[I0]], %[[LAST0]]
// CHECK: tensor.extract %arg0[%[[J0]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]
func.func @dynamic_expand(%x: tensor<?x2x1x?x4xf32>, %s: tensor<5xi64>) -> tensor<?x2x?x?x4xf32> {
  %0 = graph.dynamic_expand %x, %s : (tensor<?x2x1x?x4xf32>, tensor<5xi64>) -> tensor<?x2x?x?x4xf32>
  return %0 : tensor<?x2x?x?x4xf32>
}

// -----

// An input dim that is dynamic where the result's is a static 4 may be 1 at
// run time: that input is read at min(i, d - 1) in the body; the static one
// stays an operand.
// CHECK-LABEL: func @add_runtime_broadcast
// CHECK: %[[D:.*]] = tensor.dim %arg0, %{{.*}} : tensor<?xf32>
// CHECK: %[[LAST:.*]] = arith.subi %[[D]], %{{.*}} : index
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<4xf32>)
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: %[[J:.*]] = arith.minsi %[[I]], %[[LAST]]
// CHECK: tensor.extract %arg0[%[[J]]]
func.func @add_runtime_broadcast(%x: tensor<?xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.add %x, %y : (tensor<?xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A panel-packed weight: C viewed as [M, N/B, B], iteration (m, panel, k, column), then collapsed.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func @packed_matmul
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[W]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: kiln.packed_rhs
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : tensor<?x3x16xf32> into tensor<?x48xf32>
func.func @packed_matmul(%a: tensor<?x8xf32>, %w: tensor<3x8x16xf32>) -> tensor<?x48xf32> {
  %0 = graph.packed_matmul %a, %w : (tensor<?x8xf32>, tensor<3x8x16xf32>) -> tensor<?x48xf32>
  return %0 : tensor<?x48xf32>
}

// -----

// Batch dims fold into the rows: one [batch*seq, K] product reads each weight
// panel once for the whole batch (a decode step of 8 sequences is [8, 1, K]),
// then the product is reshaped back to [batch, seq, N/B, B].
// CHECK-LABEL: func @packed_matmul_batched
// CHECK: %[[B:.*]] = tensor.dim %{{.*}}, %c0
// CHECK: %[[S:.*]] = tensor.dim %{{.*}}, %c1
// CHECK: %[[ROWS:.*]] = arith.muli %[[B]], %[[S]]
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
// CHECK: tensor.empty(%[[ROWS]]) : tensor<?x3x16xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "parallel"]{{.*}}ins(%{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<3x8x16xf32>)
// CHECK-SAME: kiln.packed_rhs
// CHECK: tensor.reshape %{{.*}}(%{{.*}}) : (tensor<?x3x16xf32>, tensor<4xi64>) -> tensor<?x?x3x16xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<?x?x3x16xf32> into tensor<?x?x48xf32>
func.func @packed_matmul_batched(%a: tensor<?x?x8xf32>, %w: tensor<3x8x16xf32>) -> tensor<?x?x48xf32> {
  %0 = graph.packed_matmul %a, %w : (tensor<?x?x8xf32>, tensor<3x8x16xf32>) -> tensor<?x?x48xf32>
  return %0 : tensor<?x?x48xf32>
}

// -----

// A static batch of one keeps its dims (nothing to share).
// CHECK-LABEL: func @packed_matmul_one_batch
// CHECK-NOT: tensor.reshape
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]{{.*}}ins(%{{.*}}, %{{.*}} : tensor<1x?x8xf32>, tensor<3x8x16xf32>)
// CHECK-NOT: tensor.reshape
func.func @packed_matmul_one_batch(%a: tensor<1x?x8xf32>, %w: tensor<3x8x16xf32>) -> tensor<1x?x48xf32> {
  %0 = graph.packed_matmul %a, %w : (tensor<1x?x8xf32>, tensor<3x8x16xf32>) -> tensor<1x?x48xf32>
  return %0 : tensor<1x?x48xf32>
}

// -----

// CHECK-LABEL: func @layer_norm_stats
// CHECK: math.rsqrt
// CHECK: tensor.reshape {{.*}} -> tensor<4x1xf32>
// CHECK: tensor.reshape {{.*}} -> tensor<4x1xf32>
func.func @layer_norm_stats(%x: tensor<4x8xf32>, %s: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %y, %m, %r = graph.layer_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %y, %m, %r : tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// A strided convolution keeps the general im2col gather.
// CHECK-LABEL: func @conv_strided
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]
// CHECK-NOT: vector.transfer_read
func.func @conv_strided(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %0 = graph.conv %x, %w {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

// Transposed convolution as a gather: window extents come from a shape-only
// operand, input and weight are read in the body with a validity mask.
// CHECK-LABEL: func @conv_transpose
// CHECK: tensor.empty() : tensor<1x3x3xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK: arith.divsi
// CHECK: tensor.extract
// CHECK: arith.select
// CHECK: arith.remsi
// CHECK: tensor.extract
func.func @conv_transpose(%x: tensor<1x1x3x3xf32>, %w: tensor<1x2x3x3xf32>) -> tensor<1x2x7x7xf32> {
  %0 = graph.conv_transpose %x, %w {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>}
      : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x7x7xf32>
  return %0 : tensor<1x2x7x7xf32>
}

// -----

// CHECK-LABEL: func @instance_norm
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: math.rsqrt
func.func @instance_norm(%x: tensor<2x3x4x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3x4x4xf32> {
  %0 = graph.instance_norm %x, %s, %b {epsilon = 1.0e-05 : f32} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  return %0 : tensor<2x3x4x4xf32>
}

// -----

// CHECK-LABEL: func @trilu_runtime_k
// CHECK: %[[K:.*]] = tensor.extract %arg1[%{{.*}}] : tensor<1xi64>
// CHECK: %[[KI:.*]] = arith.index_cast %[[K]] : i64 to index
// CHECK: linalg.generic
// CHECK: arith.cmpi sge, %{{.*}}, %[[KI]] : index
func.func @trilu_runtime_k(%x: tensor<3x4xf32>, %k: tensor<1xi64>) -> tensor<3x4xf32> {
  %0 = graph.trilu %x, %k {upper = 1 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func @cum_sum_exclusive
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.cmpi slt
// CHECK: arith.select
func.func @cum_sum_exclusive(%x: tensor<5xf32>) -> tensor<5xf32> {
  %0 = graph.cum_sum %x {axis = 0 : i64, exclusive = 1 : i64, reverse = 0 : i64} : (tensor<5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// CHECK-LABEL: func @hardmax
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.cmpi eq
func.func @hardmax(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = graph.hardmax %x {axis = -1 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func @one_hot_and_is_nan
// CHECK: tensor.extract
// CHECK: arith.cmpi eq
// CHECK: arith.cmpf uno
func.func @one_hot_and_is_nan(%i: tensor<3xi64>, %v: tensor<2xf32>, %x: tensor<4xf32>) -> (tensor<3x10xf32>, tensor<4xi1>) {
  %0 = graph.one_hot %i, %v {depth = 10 : i64, axis = -1 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x10xf32>
  %1 = graph.is_nan %x : (tensor<4xf32>) -> tensor<4xi1>
  return %0, %1 : tensor<3x10xf32>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func @nll_loss_mean
// CHECK: linalg.generic
// CHECK: arith.cmpi ne
// CHECK: tensor.extract
// CHECK: arith.negf
// CHECK: linalg.yield {{.*}}, {{.*}} : f32, f32
// CHECK: arith.divf
func.func @nll_loss_mean(%x: tensor<3x5xf32>, %t: tensor<3xi64>) -> tensor<f32> {
  %0 = graph.nll_loss %x, %t {reduction = "mean", ignore_index = 1 : i64} : (tensor<3x5xf32>, tensor<3xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func @bit_shift_right_and_atan
// CHECK: arith.cmpi uge
// CHECK: arith.shrui
// CHECK: math.atan
func.func @bit_shift_right_and_atan(%x: tensor<3xi8>, %y: tensor<3xi8>, %f: tensor<3xf32>) -> (tensor<3xi8>, tensor<3xf32>) {
  %0 = graph.bit_shift %x, %y {direction = "RIGHT"} : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi8>
  %1 = graph.atan %f : (tensor<3xf32>) -> tensor<3xf32>
  return %0, %1 : tensor<3xi8>, tensor<3xf32>
}

// -----

// Run-time starts and ends with steps of 1 (a decoder's last positions for its output head): a
// view at the clamped start; another step reads element by element.
// CHECK-LABEL: func @dynamic_slice
// CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<1xi64>
// CHECK: arith.select
// CHECK: arith.ceildivsi
// CHECK: %[[VIEW:.*]] = tensor.extract_slice %arg0[%{{.*}}, %[[START:.*]]] [4, %{{.*}}] [1, 1] : tensor<4x8xf32> to tensor<4x?xf32>
// CHECK: arith.ceildivsi
// CHECK: %[[EVERY2:.*]] = linalg.generic
// CHECK: linalg.index
// CHECK: tensor.extract %arg0
// CHECK: return %[[VIEW]], %[[EVERY2]]
func.func @dynamic_slice(%x: tensor<4x8xf32>, %s: tensor<1xi64>, %e: tensor<1xi64>) -> (tensor<4x?xf32>, tensor<4x?xf32>) {
  %0 = graph.dynamic_slice %x, %s, %e {axes = array<i64: 1>, steps = array<i64: 1>}
      : (tensor<4x8xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x?xf32>
  %1 = graph.dynamic_slice %x, %s, %e {axes = array<i64: 1>, steps = array<i64: 2>}
      : (tensor<4x8xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x?xf32>
  return %0, %1 : tensor<4x?xf32>, tensor<4x?xf32>
}

// -----

// Unit-stride 2-D max pooling combines whole input rows in vector registers.
// CHECK-LABEL: func @max_pool_rows
// CHECK: tensor.pad
// CHECK: scf.forall
// CHECK-COUNT-9: vector.transfer_read
// CHECK: vector.transfer_write
// CHECK: tensor.parallel_insert_slice
func.func @max_pool_rows(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %0 = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}

// -----

// BatchNorm with run-time parameters: the per-channel scale and shift are
// computed once over C, then one multiply-add per element.
// CHECK-LABEL: func @batch_norm_runtime
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-NOT: math.rsqrt
func.func @batch_norm_runtime(%x: tensor<1x2x3xf32>, %s: tensor<2xf32>, %b: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>) -> tensor<1x2x3xf32> {
  %0 = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32}
      : (tensor<1x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3xf32>
  return %0 : tensor<1x2x3xf32>
}

// -----

// GatherND reads data at clamped coordinates taken from the index tuples.
// CHECK-LABEL: func @gather_nd
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: tensor.extract
// CHECK: arith.minsi
// CHECK: tensor.extract
// CHECK-NOT: graph.
func.func @gather_nd(%d: tensor<3x4xf32>, %i: tensor<?x1xi64>) -> tensor<?x4xf32> {
  %0 = graph.gather_nd %d, %i : (tensor<3x4xf32>, tensor<?x1xi64>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// ScatterElements as a gather over the updates along the axis, on the slice
// of data they reach; unmatched (also out-of-range) indices change nothing.
// CHECK-LABEL: func @scatter_elements
// CHECK: tensor.extract_slice
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.cmpi eq
// CHECK: arith.addf
// CHECK: arith.select
// CHECK: tensor.insert_slice
// CHECK-NOT: graph.
func.func @scatter_elements(%d: tensor<3x5xf32>, %i: tensor<2x2xi64>, %u: tensor<2x2xf32>) -> tensor<3x5xf32> {
  %0 = graph.scatter_elements %d, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<3x5xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// ScatterND: each output element reduces over the index tuples.
// CHECK-LABEL: func @scatter_nd
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: tensor.extract
// CHECK: arith.cmpi eq
// CHECK: arith.mulf
// CHECK: arith.select
// CHECK-NOT: graph.
func.func @scatter_nd(%d: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = graph.scatter_nd %d, %i, %u {reduction = "mul"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// TopK: ranks along the axis (ties to the lower index), then slot r takes rank r.
// CHECK-LABEL: func @top_k
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf oeq
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT: graph.
func.func @top_k(%x: tensor<3x4xf32>, %k: tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>) {
  %v, %i = graph.top_k %x, %k {axis = 1 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  return %v, %i : tensor<3x?xf32>, tensor<3x?xi64>
}

// -----

// Einsum: result labels parallel, the others reductions, one generic.
// CHECK-LABEL: func @einsum
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: graph.
func.func @einsum(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = graph.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// A broadcast ellipsis dim (size 1) is read at index 0.
// CHECK-DAG: #[[BCAST:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>
// CHECK-LABEL: func @einsum_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[BCAST]],
func.func @einsum_broadcast(%a: tensor<2x1x4x5xf32>, %b: tensor<3x5x2xf32>) -> tensor<2x3x4x2xf32> {
  %0 = graph.einsum %a, %b {equation = "...ij,...jk->...ik"} : (tensor<2x1x4x5xf32>, tensor<3x5x2xf32>) -> tensor<2x3x4x2xf32>
  return %0 : tensor<2x3x4x2xf32>
}

// -----

// Dilated along W, a window row's taps are not one run: the implicit product
// keeps kh, kw and c apart (8 dims), the input read at (oh + 2*kh, ow + 2*kw).
// CHECK-DAG: #[[XD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d4 * 2, d2 + d5 * 2, d6)>
// CHECK-LABEL: func @dilated_channels_last
// CHECK: tensor.expand_shape {{.*}} : tensor<1x72x16xf32> into tensor<1x3x3x8x16xf32>
// CHECK: linalg.generic {indexing_maps = [#[[XD]], {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<1x8x8x8xf32>, tensor<1x3x3x8x16xf32>) outs(%{{.*}} : tensor<1x4x4x1x16xf32>) attrs = {kiln.implicit_conv, kiln.packed_rhs}
func.func @dilated_channels_last(%x: tensor<1x8x8x8xf32>, %w: tensor<1x72x16xf32>) -> tensor<1x4x4x16xf32> {
  %0 = graph.packed_conv %x, %w {kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 2, 2>, channels_last}
      : (tensor<1x8x8x8xf32>, tensor<1x72x16xf32>) -> tensor<1x4x4x16xf32>
  return %0 : tensor<1x4x4x16xf32>
}

// -----

// Dilated with fewer than 8 channels: patch rows col[n, oh, ow, kh, kw, c]
// (a copy of the window) times the panels, the packed product's tiling.
// CHECK-LABEL: func @dilated_few_channels
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x4x4x3x3x4xf32>)
// CHECK: tensor.collapse_shape {{.*}} : tensor<1x4x4x3x3x4xf32> into tensor<1x16x36xf32>
// CHECK: ins(%{{.*}}, %{{.*}} : tensor<1x16x36xf32>, tensor<1x36x16xf32>) outs(%{{.*}} : tensor<1x16x1x16xf32>) attrs = {kiln.packed_rhs}
func.func @dilated_few_channels(%x: tensor<1x8x8x4xf32>, %w: tensor<1x36x16xf32>) -> tensor<1x4x4x16xf32> {
  %0 = graph.packed_conv %x, %w {kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, dilations = array<i64: 2, 2>, channels_last}
      : (tensor<1x8x8x4xf32>, tensor<1x36x16xf32>) -> tensor<1x4x4x16xf32>
  return %0 : tensor<1x4x4x16xf32>
}

// -----

// A Slice with steps of 1 over static dims is a view of its input (ONNX's clamping done at
// compile time: end 100 on a dim of 32 is 32, start -8 is 24); over a dynamic dim it is a view
// with the clamps computed at run time; one with a step of 2 or with an empty result (start 40
// clamped to 32: an extract_slice at offset 32 of a dim of 32 does not verify) stays a gather by
// index.
// CHECK-LABEL: func @slice_views
// CHECK: tensor.extract_slice %arg0[0, 0, 0, 0] [1, 5, 5, 24] [1, 1, 1, 1] : tensor<1x5x5x32xf32> to tensor<1x5x5x24xf32>
// CHECK: tensor.extract_slice %arg0[0, 1, 0, 24] [1, 4, 5, 8] [1, 1, 1, 1] : tensor<1x5x5x32xf32> to tensor<1x4x5x8xf32>
// CHECK: linalg.generic
// CHECK: linalg.index
// CHECK: tensor.extract %arg0
// CHECK: tensor.extract_slice %arg1[%{{.*}}, %{{.*}}] [%{{.*}}, 8] [1, 1] : tensor<?x32xf32> to tensor<?x8xf32>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x5x5x0xf32>)
// CHECK-NOT: tensor.extract_slice
func.func @slice_views(%x: tensor<1x5x5x32xf32>, %d: tensor<?x32xf32>) -> (tensor<1x5x5x24xf32>, tensor<1x4x5x8xf32>, tensor<1x5x5x16xf32>, tensor<?x8xf32>, tensor<1x5x5x0xf32>) {
  %a = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 24>, axes = array<i64: 3>, steps = array<i64: 1>} : (tensor<1x5x5x32xf32>) -> tensor<1x5x5x24xf32>
  %b = graph.slice %x {starts = array<i64: 1, -8>, ends = array<i64: 5, 100>, axes = array<i64: 1, -1>, steps = array<i64: 1, 1>} : (tensor<1x5x5x32xf32>) -> tensor<1x4x5x8xf32>
  %c = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 32>, axes = array<i64: 3>, steps = array<i64: 2>} : (tensor<1x5x5x32xf32>) -> tensor<1x5x5x16xf32>
  %e = graph.slice %d {starts = array<i64: 0, 8>, ends = array<i64: 100, 16>, axes = array<i64: 0, 1>, steps = array<i64: 1, 1>} : (tensor<?x32xf32>) -> tensor<?x8xf32>
  %f = graph.slice %x {starts = array<i64: 40>, ends = array<i64: 50>, axes = array<i64: 3>, steps = array<i64: 1>} : (tensor<1x5x5x32xf32>) -> tensor<1x5x5x0xf32>
  return %a, %b, %c, %e, %f : tensor<1x5x5x24xf32>, tensor<1x4x5x8xf32>, tensor<1x5x5x16xf32>, tensor<?x8xf32>, tensor<1x5x5x0xf32>
}

// -----

// A Reshape by a constant shape that splits a dim (ONNX's 0 copying the dynamic dims): a view
// of the input, its dynamic dims the input's own (the decoders' head split).
// CHECK-LABEL: func @reshape_split_heads
// CHECK-NOT: tensor.reshape
// CHECK: %[[D0:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[D1:.*]] = tensor.dim %arg0, %c1
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0], [1], [2, 3]] output_shape [%[[D0]], %[[D1]], 4, 16] : tensor<?x?x64xf32> into tensor<?x?x4x16xf32>
func.func @reshape_split_heads(%x: tensor<?x?x64xf32>) -> tensor<?x?x4x16xf32> {
  %s = graph.constant {value = dense<[0, 0, 4, 16]> : tensor<4xi64>} : () -> tensor<4xi64>
  %0 = graph.reshape %x, %s : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  return %0 : tensor<?x?x4x16xf32>
}

// -----

// CHECK-LABEL: func @reshape_merge_heads
// CHECK-NOT: tensor.reshape
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0], [1], [2, 3]] : tensor<?x?x4x16xf32> into tensor<?x?x64xf32>
func.func @reshape_merge_heads(%x: tensor<?x?x4x16xf32>) -> tensor<?x?x64xf32> {
  %s = graph.constant {value = dense<[0, 0, 64]> : tensor<3xi64>} : () -> tensor<3xi64>
  %0 = graph.reshape %x, %s : (tensor<?x?x4x16xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

// A dynamic dim no output dim copies is fixed by the element count (4 x ? = 64: 16), then the
// dims merge as above (a grouped-query attention's output whose head size the graph left open).
// CHECK-LABEL: func @reshape_merge_open_head
// CHECK-NOT: tensor.reshape
// CHECK: %[[X:.*]] = tensor.cast %arg0 : tensor<?x?x4x?xf32> to tensor<?x?x4x16xf32>
// CHECK: tensor.collapse_shape %[[X]] {{\[\[}}0], [1], [2, 3]] : tensor<?x?x4x16xf32> into tensor<?x?x64xf32>
func.func @reshape_merge_open_head(%x: tensor<?x?x4x?xf32>) -> tensor<?x?x64xf32> {
  %s = graph.constant {value = dense<[0, 0, 64]> : tensor<3xi64>} : () -> tensor<3xi64>
  %0 = graph.reshape %x, %s : (tensor<?x?x4x?xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

// Static sizes that regroup across dims: collapsed to their product, then expanded.
// CHECK-LABEL: func @reshape_static_regroup
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<6x4xf32> into tensor<24xf32>
// CHECK: tensor.expand_shape {{.*}} {{\[\[}}0, 1]] output_shape [4, 6] : tensor<24xf32> into tensor<4x6xf32>
func.func @reshape_static_regroup(%x: tensor<6x4xf32>) -> tensor<4x6xf32> {
  %s = graph.constant {value = dense<[4, 6]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = graph.reshape %x, %s : (tensor<6x4xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// An inferred (-1) size, two dynamic dims no output dim copies, a shape known at run time only:
// the general reshape.
// CHECK-LABEL: func @reshape_general
// CHECK: tensor.reshape
// CHECK: tensor.reshape
// CHECK: tensor.reshape
func.func @reshape_general(%x: tensor<?x64xf32>, %y: tensor<?x?xf32>, %z: tensor<?x4xf32>, %s: tensor<2xi64>)
    -> (tensor<?x16xf32>, tensor<4x4xf32>, tensor<?x?xf32>) {
  %a = graph.constant {value = dense<[-1, 16]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = graph.reshape %x, %a : (tensor<?x64xf32>, tensor<2xi64>) -> tensor<?x16xf32>
  %b = graph.constant {value = dense<[4, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
  %1 = graph.reshape %y, %b : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<4x4xf32>
  %2 = graph.reshape %z, %s : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0, %1, %2 : tensor<?x16xf32>, tensor<4x4xf32>, tensor<?x?xf32>
}

// -----

// graph.rotary: one elementwise loop; the partner element along the last axis read with
// tensor.extract at i + 8 (negated) or i - 8.
// CHECK-LABEL: func @rotary
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: %[[FIRST:.*]] = arith.cmpi ult, %[[I]], %c8
// CHECK: %[[UP:.*]] = arith.addi %[[I]], %c8
// CHECK: %[[DOWN:.*]] = arith.subi %[[I]], %c8
// CHECK: %[[J:.*]] = arith.select %[[FIRST]], %[[UP]], %[[DOWN]]
// CHECK: %[[P:.*]] = tensor.extract %arg0[{{.*}}, %[[J]]]
// CHECK: %[[NEG:.*]] = arith.negf %[[P]]
// CHECK: arith.select %[[FIRST]], %[[NEG]], %[[P]]
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @rotary(%x: tensor<3x16xf32>, %c: tensor<16xf32>, %s: tensor<3x16xf32>) -> tensor<3x16xf32> {
  %0 = graph.rotary %x, %c, %s : (tensor<3x16xf32>, tensor<16xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
  return %0 : tensor<3x16xf32>
}

// -----

// Unsqueeze and Squeeze regroup dims: an expand_shape / collapse_shape (a view whose dims are the
// input's own), each kept dim grouped with the unit dims next to it.
// CHECK-LABEL: func @unsqueeze_squeeze_views
// CHECK: tensor.expand_shape %arg0 {{\[}}[0], [1, 2], [3]] output_shape [%{{.*}}, 1, %{{.*}}, 16] : tensor<?x?x16xf32> into tensor<?x1x?x16xf32>
// CHECK: tensor.collapse_shape %arg1 {{\[}}[0, 1], [2, 3]] : tensor<1x?x?x1xf32> into tensor<?x?xf32>
// CHECK-NOT: tensor.reshape
func.func @unsqueeze_squeeze_views(%x: tensor<?x?x16xf32>, %y: tensor<1x?x?x1xf32>) -> (tensor<?x1x?x16xf32>, tensor<?x?xf32>) {
  %u = graph.unsqueeze %x {axes = array<i64: 1>} : (tensor<?x?x16xf32>) -> tensor<?x1x?x16xf32>
  %s = graph.squeeze %y {axes = array<i64: 0, 3>} : (tensor<1x?x?x1xf32>) -> tensor<?x?xf32>
  return %u, %s : tensor<?x1x?x16xf32>, tensor<?x?xf32>
}

// -----

// A squeezed dim that is dynamic in the type (1 at run time) next to another dynamic dim cannot
// share a view's group: a reshape, as before.
// CHECK-LABEL: func @squeeze_dynamic_unit
// CHECK: tensor.reshape
func.func @squeeze_dynamic_unit(%y: tensor<?x?xf32>) -> tensor<?xf32> {
  %s = graph.squeeze %y {axes = array<i64: 0>} : (tensor<?x?xf32>) -> tensor<?xf32>
  return %s : tensor<?xf32>
}
