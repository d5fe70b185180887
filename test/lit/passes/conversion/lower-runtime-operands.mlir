// Ops whose shape-like operands are run-time values: the values are read in
// the host code and size dynamic results; bad values stay inside buffers.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s

// Axes and steps read at run time; both step directions' clamping computed, the sign selects.
// CHECK-LABEL: func @strided_slice
// CHECK-SAME: %[[X:.*]]: tensor<20x10xf32>, %[[S:.*]]: tensor<2xi64>, %[[E:.*]]: tensor<2xi64>, %[[A:.*]]: tensor<2xi64>, %[[ST:.*]]: tensor<2xi64>
// CHECK-DAG: tensor.extract %[[A]]
// CHECK-DAG: tensor.extract %[[ST]]
// CHECK: arith.ceildivsi
// CHECK: arith.ceildivsi
// CHECK: %[[INIT:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?xf32>
// CHECK: linalg.generic {{.*}} outs(%[[INIT]]
// CHECK: tensor.extract %[[X]]
// CHECK-NOT: graph.
func.func @strided_slice(%x: tensor<20x10xf32>, %s: tensor<2xi64>, %e: tensor<2xi64>, %a: tensor<2xi64>, %st: tensor<2xi64>) -> tensor<?x?xf32> {
  %0 = graph.dynamic_strided_slice %x, %s, %e, %a, %st : (tensor<20x10xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Squeeze and unsqueeze: the target shape computed from the axes, then a reshape (no copy);
// a squeeze whose axes do not fit falls back to [total, 1] (the same elements).
// CHECK-LABEL: func @squeeze_unsqueeze
// CHECK: tensor.extract %arg1
// CHECK: %[[FITS:.*]] = arith.andi
// CHECK: arith.select %[[FITS]]
// CHECK: tensor.reshape %arg0
// CHECK-SAME: -> tensor<?x?xf32>
// CHECK: tensor.extract %arg2
// CHECK: tensor.reshape %arg0
// CHECK-SAME: -> tensor<?x?x?x?xf32>
// CHECK-NOT: graph.
func.func @squeeze_unsqueeze(%x: tensor<1x3x4xf32>, %a: tensor<1xi64>, %b: tensor<1xi64>) -> (tensor<?x?xf32>, tensor<?x?x?x?xf32>) {
  %0 = graph.dynamic_squeeze %x, %a : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  %1 = graph.dynamic_unsqueeze %x, %b : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<?x?x?x?xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<?x?x?x?xf32>
}

// -----

// Squeezing every axis of a dynamic input reads its one element only if it has one.
// CHECK-LABEL: func @squeeze_all_dynamic
// CHECK: scf.if
// CHECK: tensor.extract %arg0
// CHECK: tensor.from_elements
func.func @squeeze_all_dynamic(%x: tensor<?xf32>, %a: tensor<1xi64>) -> tensor<f32> {
  %0 = graph.dynamic_squeeze %x, %a : (tensor<?xf32>, tensor<1xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tile: a negative repeat counts as 0; each output element reads input[o mod dim].
// CHECK-LABEL: func @tile
// CHECK: tensor.extract %arg1
// CHECK: arith.maxsi
// CHECK: linalg.generic
// CHECK: arith.remsi
// CHECK: tensor.extract %arg0
func.func @tile(%x: tensor<2x3xf32>, %r: tensor<2xi64>) -> tensor<?x?xf32> {
  %0 = graph.dynamic_tile %x, %r : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Constant pad reads the input only inside it (an scf.if per element), the value elsewhere.
// CHECK-LABEL: func @pad_constant
// CHECK: %[[V:.*]] = tensor.extract %arg2[]
// CHECK: linalg.generic
// CHECK: scf.if
// CHECK: tensor.extract %arg0
// CHECK: } else {
// CHECK: scf.yield %[[V]]
func.func @pad_constant(%x: tensor<2x3xf32>, %p: tensor<4xi64>, %v: tensor<f32>) -> tensor<?x?xf32> {
  %0 = graph.dynamic_pad %x, %p, %v {mode = "constant"} : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Reflect folds back with period 2 * (dim - 1), then clamps.
// CHECK-LABEL: func @pad_reflect
// CHECK: linalg.generic
// CHECK: arith.remsi
// CHECK: arith.minsi
// CHECK-NOT: scf.if
func.func @pad_reflect(%x: tensor<2x3xf32>, %p: tensor<4xi64>, %v: tensor<f32>) -> tensor<?x?xf32> {
  %0 = graph.dynamic_pad %x, %p, %v {mode = "reflect"} : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Reduce over run-time axes: each keepdims-shaped element loops over the reduced
// elements; without keepdims the kept dims are regrouped.
// CHECK-LABEL: func @reduce_sum
// CHECK: tensor.extract %arg1
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: scf.for
// CHECK: tensor.extract %arg0
// CHECK: arith.addf
// CHECK: tensor.reshape
// CHECK-SAME: -> tensor<?x?xf32>
func.func @reduce_sum(%x: tensor<3x2x2xf32>, %a: tensor<1xi64>) -> tensor<?x?xf32> {
  %0 = graph.dynamic_reduce %x, %a {kind = "sum", keepdims = 0 : i64} : (tensor<3x2x2xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// log_sum_exp: a max loop, then a shifted sum of exponentials.
// CHECK-LABEL: func @reduce_log_sum_exp
// CHECK: linalg.generic
// CHECK: scf.for
// CHECK: arith.cmpf ogt
// CHECK: scf.for
// CHECK: math.exp
// CHECK: math.log
// CHECK-NOT: tensor.reshape
func.func @reduce_log_sum_exp(%x: tensor<3x2x2xf32>, %a: tensor<2xi64>) -> tensor<?x?x?xf32> {
  %0 = graph.dynamic_reduce %x, %a {kind = "log_sum_exp"} : (tensor<3x2x2xf32>, tensor<2xi64>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// A run-time depth (float here) is truncated, at least 0, and sizes the depth axis.
// CHECK-LABEL: func @one_hot_depth
// CHECK: %[[D:.*]] = tensor.extract %arg2[]
// CHECK: arith.maxnumf %[[D]]
// CHECK: arith.fptosi
// CHECK: tensor.empty(%{{.*}}) : tensor<2x?xf32>
func.func @one_hot_depth(%i: tensor<2xi64>, %v: tensor<2xf32>, %d: tensor<f32>) -> tensor<2x?xf32> {
  %0 = graph.one_hot %i, %v, %d {axis = -1 : i64} : (tensor<2xi64>, tensor<2xf32>, tensor<f32>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

// Dropout: one generic writes output and mask; a hashed counter per element is
// compared with the ratio, and outside training everything is kept.
// CHECK-LABEL: func @dropout
// CHECK: %[[T:.*]] = tensor.extract %arg2[]
// CHECK: linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<3x4xf32>, tensor<3x4xi1>)
// CHECK: arith.shrui
// CHECK: arith.cmpf oge
// CHECK: arith.xori %[[T]]
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, i1
func.func @dropout(%x: tensor<3x4xf32>, %r: tensor<f32>, %t: tensor<i1>) -> (tensor<3x4xf32>, tensor<3x4xi1>) {
  %0, %1 = graph.dropout %x, %r, %t {seed = 1 : i64} : (tensor<3x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<3x4xf32>, tensor<3x4xi1>)
  return %0, %1 : tensor<3x4xf32>, tensor<3x4xi1>
}
