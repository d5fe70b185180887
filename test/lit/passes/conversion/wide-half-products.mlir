// kiln-convert-graph-to-linalg{wide-half-products}: MatMul and Gemm of half floats accumulate in f32
// (the CUDA target's products) and round once at the end; without it they add in their own type.
// RUN: kiln-opt %s -kiln-convert-graph-to-linalg=wide-half-products=true | FileCheck %s
// RUN: kiln-opt %s -kiln-convert-graph-to-linalg | FileCheck %s --check-prefix=NARROW

// CHECK-LABEL: func @matmul
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<?x8xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<?x4xf16>, tensor<4x8xf16>) outs(%[[ACC]] : tensor<?x8xf32>)
// CHECK: ^bb0(%[[X:.*]]: f16, %[[Y:.*]]: f16, %[[S:.*]]: f32):
// CHECK: %[[XF:.*]] = arith.extf %[[X]] : f16 to f32
// CHECK: %[[YF:.*]] = arith.extf %[[Y]] : f16 to f32
// CHECK: arith.mulf %[[XF]], %[[YF]]
// CHECK: linalg.generic {{.*}} ins(%[[P]] : tensor<?x8xf32>) outs(%{{.*}} : tensor<?x8xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
// NARROW-LABEL: func @matmul
// NARROW-NOT: arith.extf
// NARROW: arith.mulf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f16
// NARROW-NOT: arith.truncf
func.func @matmul(%x: tensor<?x4xf16>, %w: tensor<4x8xf16>) -> tensor<?x8xf16> {
  %y = graph.matmul %x, %w : (tensor<?x4xf16>, tensor<4x8xf16>) -> tensor<?x8xf16>
  return %y : tensor<?x8xf16>
}

// Gemm: beta * C widened into the accumulator, alpha applied in f32.
// CHECK-LABEL: func @gemm
// CHECK: arith.constant 2.000000e+00 : f32
// CHECK: linalg.generic {{.*}} ins(%arg2 : tensor<3xbf16>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.mulf {{.*}} : f32
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<2x4xbf16>, tensor<3x4xbf16>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: %[[PROD:.*]] = arith.mulf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK: arith.mulf %[[PROD]], %{{.*}} fastmath<reassoc,contract> : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @gemm(%a: tensor<2x4xbf16>, %b: tensor<3x4xbf16>, %c: tensor<3xbf16>) -> tensor<2x3xbf16> {
  %y = graph.gemm %a, %b, %c {alpha = 0.25 : f32, beta = 2.0 : f32, transB = 1 : i64} : (tensor<2x4xbf16>, tensor<3x4xbf16>, tensor<3xbf16>) -> tensor<2x3xbf16>
  return %y : tensor<2x3xbf16>
}
