// kiln-convert-graph-to-linalg on graph.resize: one gather-style linalg.generic whose body maps each
// output coordinate back to the input (coordinates in f64) and blends the taps.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s

// Constant scales: a static result; the unit-scale axes read their own coordinate,
// the two resized axes blend 2 x 2 neighbours.
// CHECK-LABEL: func @resize_linear
// CHECK: tensor.empty() : tensor<1x1x8x8xf32>
// CHECK: linalg.generic
// CHECK: math.floor {{.*}} : f64
// CHECK-COUNT-4: tensor.extract %arg0
// CHECK-NOT: tensor.extract %arg0
// CHECK: linalg.yield
func.func @resize_linear(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x8x8xf32> {
  %s = graph.constant {value = dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = graph.resize %x scales %s {mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor"}
      : (tensor<1x1x4x4xf32>, tensor<4xf32>) -> tensor<1x1x8x8xf32>
  return %0 : tensor<1x1x8x8xf32>
}

// -----

// Run-time scales: each output dim is floor(scale * input) computed before the kernel
// (NaN and negative lengths as 0), and the kernel divides by the same run-time scale.
// CHECK-LABEL: func @resize_runtime_scales
// CHECK: %[[S3:.*]] = tensor.extract %arg1[%c3] : tensor<4xf32>
// CHECK: %[[S3D:.*]] = arith.extf %[[S3]] : f32 to f64
// CHECK: %[[LEN:.*]] = arith.mulf %[[S3D]], %{{.*}} : f64
// CHECK: %[[OK:.*]] = arith.cmpf oge, %[[LEN]], %{{.*}} : f64
// CHECK: %[[CLAMPED:.*]] = arith.select %[[OK]], %{{.*}}, %{{.*}} : f64
// CHECK: math.floor %[[CLAMPED]] : f64
// CHECK: %[[D3:.*]] = arith.select
// CHECK: tensor.empty(%{{.*}}, %{{.*}}, %{{.*}}, %[[D3]]) : tensor<?x?x?x?xf32>
// CHECK: linalg.generic
// CHECK: arith.divf %{{.*}}, %[[S3D]] : f64
// CHECK: tensor.extract %arg0
// CHECK-NOT: tensor.extract %arg0
func.func @resize_runtime_scales(%x: tensor<1x1x2x2xf32>, %s: tensor<4xf32>) -> tensor<?x?x?x?xf32> {
  %0 = graph.resize %x scales %s {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"}
      : (tensor<1x1x2x2xf32>, tensor<4xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// Run-time sizes: the scale of an axis is size / input.
// CHECK-LABEL: func @resize_runtime_sizes
// CHECK: %[[N:.*]] = tensor.extract %arg1[%{{.*}}] : tensor<2xi64>
// CHECK: %[[NI:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK: %[[NF:.*]] = arith.sitofp %{{.*}} : i64 to f64
// CHECK: arith.divf %[[NF]], %{{.*}} : f64
// CHECK: linalg.generic
func.func @resize_runtime_sizes(%x: tensor<3x4xf32>, %n: tensor<2xi64>) -> tensor<?x?xf32> {
  %0 = graph.resize %x sizes %n {mode = "nearest", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_ceil"}
      : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Cubic: 4 taps per resized axis (16 reads for two axes) with Keys' coefficients for
// cubic_coeff_a = -0.5; exclude_outside zeroes the taps outside the input and divides
// by the sum of the others.
// CHECK-LABEL: func @resize_cubic
// CHECK: linalg.generic
// CHECK-DAG: arith.constant -5.000000e-01 : f32
// CHECK-DAG: arith.constant 1.500000e+00 : f32
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-16: tensor.extract %arg0
// CHECK-NOT: tensor.extract %arg0
// CHECK: linalg.yield
func.func @resize_cubic(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x8x8xf32> {
  %s = graph.constant {value = dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = graph.resize %x scales %s {mode = "cubic", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor",
                                  cubic_coeff_a = -5.0e-01 : f32, exclude_outside = 1 : i64}
      : (tensor<1x1x4x4xf32>, tensor<4xf32>) -> tensor<1x1x8x8xf32>
  return %0 : tensor<1x1x8x8xf32>
}

// -----

// tf_crop_and_resize: coordinates from the roi (start of axis i at i, end at rank + i);
// a point outside the input is extrapolation_value.
// CHECK-LABEL: func @resize_crop
// CHECK: tensor.extract %arg1[%{{.*}}] : tensor<4xf32>
// CHECK: tensor.extract %arg1[%{{.*}}] : tensor<4xf32>
// CHECK: linalg.generic
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf ogt
// CHECK-COUNT-4: tensor.extract %arg0
// CHECK: %[[FILL:.*]] = arith.constant 1.000000e+01 : f32
// CHECK: arith.select %{{.*}}, %[[FILL]], %{{.*}} : f32
func.func @resize_crop(%x: tensor<4x6xf32>, %roi: tensor<4xf32>) -> tensor<4x3xf32> {
  %n = graph.constant {value = dense<[4, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = graph.resize %x roi %roi sizes %n {mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize",
                                          nearest_mode = "round_prefer_floor", extrapolation_value = 1.0e+01 : f32}
      : (tensor<4x6xf32>, tensor<4xf32>, tensor<2xi64>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
