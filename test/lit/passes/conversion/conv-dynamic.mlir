// kiln-convert-graph-to-linalg for convolutions and pooling whose sizes are known at run time only:
// conv/conv_transpose with a weight of dynamic shape, auto_pad SAME_* and output_shape kept for run time.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg -canonicalize -cse | FileCheck %s

// A weight of dynamic shape: one contraction over (n, g, f, oh, ow, c, kh, kw)
// reading the zero-padded input as [N, G, C/G, H, W] and the weight as
// [G, Cout/G, C/G, kh, kw]; the output sizes come from the weight's dims.
// CHECK-LABEL: func @conv_dynamic_weight
// CHECK: %[[P:.*]] = tensor.pad %arg0 low[0, 0, 1, 0] high[0, 0, 1, 0]
// CHECK: %[[K:.*]] = tensor.dim %arg1, %c2
// CHECK: %[[X:.*]] = tensor.reshape %[[P]]({{.*}}) : (tensor<?x?x?x?xf32>, tensor<5xi64>) -> tensor<?x2x?x?x?xf32>
// CHECK: %[[W:.*]] = tensor.reshape %arg1({{.*}}) : (tensor<?x?x?x?xf32>, tensor<5xi64>) -> tensor<2x?x?x?x?xf32>
// Both read only the channels they have in common (a bad request stays in bounds).
// CHECK: %[[C:.*]] = arith.minsi
// CHECK: %[[XC:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0, 0] [%{{.*}}, 2, %[[C]], %{{.*}}, %{{.*}}] [1, 1, 1, 1, 1]
// CHECK: %[[WC:.*]] = tensor.extract_slice %[[W]][0, 0, 0, 0, 0] [2, %{{.*}}, %[[C]], %{{.*}}, %{{.*}}] [1, 1, 1, 1, 1]
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<2x?xf32>)
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[XC]], %[[WC]] : {{.*}}) outs(%[[B]]
// CHECK: arith.mulf
// CHECK: tensor.reshape %[[Y]]({{.*}}) : (tensor<?x2x?x?x?xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
// CHECK-NOT: graph.
func.func @conv_dynamic_weight(%x: tensor<?x?x?x?xf32>, %w: tensor<?x?x?x?xf32>, %b: tensor<?xf32>) -> tensor<?x?x?x?xf32> {
  %0 = graph.conv %x, %w, %b {group = 2 : i64, pads = array<i64: 1, 0, 1, 0>, strides = array<i64: 2, 1>, dilations = array<i64: 1, 2>}
      : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<?xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// auto_pad SAME_LOWER on run-time sizes: total = max(0, (ceil(in/s) - 1) * s
// + k - in), the larger half at the beginning.
// CHECK-LABEL: func @conv_same_runtime
// CHECK: %[[K:.*]] = tensor.dim %arg1, %c2
// CHECK: %[[IN:.*]] = tensor.dim %arg0, %c2
// CHECK: %[[OUT:.*]] = arith.ceildivsi %[[IN]], %c2
// CHECK: %[[M1:.*]] = arith.subi %[[OUT]], %c1
// CHECK: %[[S:.*]] = arith.muli %[[M1]], %c2
// CHECK: %[[R:.*]] = arith.addi %[[S]], %[[K]]
// CHECK: %[[D:.*]] = arith.subi %[[R]], %[[IN]]
// CHECK: %[[T:.*]] = arith.maxsi %[[D]], %c0
// CHECK: %[[SMALL:.*]] = arith.divsi %[[T]], %c2
// CHECK: %[[LARGE:.*]] = arith.subi %[[T]], %[[SMALL]]
// CHECK: tensor.pad %arg0 low[0, 0, %[[LARGE]], %{{.*}}] high[0, 0, %[[SMALL]], %{{.*}}]
// CHECK: linalg.generic
// CHECK-NOT: graph.
func.func @conv_same_runtime(%x: tensor<?x?x?x?xf32>, %w: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
  %0 = graph.conv %x, %w {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, auto_pad = "SAME_LOWER"}
      : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// A static weight keeps the im2col path; only the pads are run-time values.
// CHECK-LABEL: func @conv_same_static_weight
// CHECK: arith.ceildivsi
// CHECK: tensor.pad %arg0 low[0, 0, %{{.*}}, %{{.*}}] high[0, 0, %{{.*}}, %{{.*}}]
// CHECK: tensor<?x1x3x3x3x?x?xf32>
// CHECK-NOT: graph.
func.func @conv_same_static_weight(%x: tensor<?x3x?x?xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<?x4x?x?xf32> {
  %0 = graph.conv %x, %w {group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, auto_pad = "SAME_UPPER"}
      : (tensor<?x3x?x?xf32>, tensor<4x3x3x3xf32>) -> tensor<?x4x?x?xf32>
  return %0 : tensor<?x4x?x?xf32>
}

// -----

// Pooling with auto_pad SAME_UPPER on a dynamic size: the padded copy's pads
// and the average's divisor use the run-time pads.
// CHECK-LABEL: func @average_pool_same_runtime
// CHECK: %[[IN:.*]] = tensor.dim %arg0, %c2
// CHECK: arith.ceildivsi %[[IN]], %c2
// CHECK: %[[T:.*]] = arith.maxsi
// CHECK: %[[SMALL:.*]] = arith.divsi %[[T]], %c2
// CHECK: %[[LARGE:.*]] = arith.subi %[[T]], %[[SMALL]]
// CHECK: tensor.pad %arg0 low[0, 0, %[[SMALL]], %{{.*}}] high[0, 0, %[[LARGE]], %{{.*}}]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.subi %{{.*}}, %[[SMALL]]
// CHECK: arith.divf
// CHECK-NOT: graph.
func.func @average_pool_same_runtime(%x: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
  %0 = graph.average_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, auto_pad = "SAME_UPPER"}
      : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// conv_transpose with a weight of dynamic shape and output_shape kept: the
// result has the requested size, the begin pad is a run-time value read by
// the gather, the channels per group come from the weight's dims.
// CHECK-LABEL: func @conv_transpose_dynamic_weight
// CHECK-DAG: %[[CIN:.*]] = tensor.dim %arg1, %c0
// CHECK-DAG: %[[COUT:.*]] = tensor.dim %arg1, %c1
// CHECK-DAG: %[[CH:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[T:.*]] = arith.maxsi
// CHECK: %[[PB:.*]] = arith.divsi %[[T]], %c2
// CHECK: tensor.empty({{.*}}) : tensor<?x?x9xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.divsi %{{.*}}, %[[COUT]]
// CHECK: %[[G:.*]] = arith.muli %{{.*}}, %[[CIN]]
// CHECK: %[[IC:.*]] = arith.addi %[[G]], %{{.*}} : index
// CHECK: arith.addi %{{.*}}, %[[PB]]
// A channel the input lacks reads nothing.
// CHECK: arith.cmpi slt, %[[IC]], %[[CH]] : index
// CHECK: %[[ICC:.*]] = arith.minsi %[[IC]],
// CHECK: tensor.extract %arg0[%{{.*}}, %[[ICC]], %{{.*}}]
// CHECK: arith.remsi %{{.*}}, %[[COUT]]
// CHECK: tensor.extract %arg1
// CHECK-NOT: graph.
func.func @conv_transpose_dynamic_weight(%x: tensor<?x?x?xf32>, %w: tensor<?x?x?xf32>) -> tensor<?x?x9xf32> {
  %0 = graph.conv_transpose %x, %w {group = 1 : i64, pads = array<i64: 0, 0>, strides = array<i64: 2>, dilations = array<i64: 1>, output_padding = array<i64: 0>, output_shape = array<i64: 9>}
      : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x9xf32>
  return %0 : tensor<?x?x9xf32>
}
