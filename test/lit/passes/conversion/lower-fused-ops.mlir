// kiln-convert-graph-to-linalg for the ops graph fusions form: rms_norm is one reduction
// and one elementwise pass; gelu and silu are single elementwise bodies.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s

// CHECK-LABEL: func @rms_norm
// The sum of squares per row (the only reduction):
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
// 1 / sqrt(sum / n + eps) per row:
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.divf
// CHECK: math.rsqrt
// x * rstd * scale:
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @rms_norm(%x: tensor<?x?x64xf32>, %s: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %0 = graph.rms_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-06 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

// CHECK-LABEL: func @gelu_erf
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: math.erf
// CHECK: arith.addf
// CHECK-NOT: math.tanh
// CHECK: return
func.func @gelu_erf(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %0 = graph.gelu %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

// CHECK-LABEL: func @gelu_tanh
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-NOT: math.erf
// CHECK: return
func.func @gelu_tanh(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %0 = graph.gelu %x {approximate = "tanh"} : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

// x / (1 + exp(-x)), exp(-x) in f32 for x clamped to [-87.3, 87.3]: m = round(x log2(e)),
// s = x - m ln2 (two FMAs), 2^-m in the exponent bits times a degree-5 polynomial in s.
// No math.exp.
// CHECK-LABEL: func @silu
// CHECK: linalg.generic
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[LO:.*]] = arith.maximumf %[[X]], %{{.*}} : f32
// CHECK: %[[XC:.*]] = arith.minimumf %[[LO]], %{{.*}} : f32
// CHECK: %[[XL:.*]] = arith.mulf %[[XC]], %{{.*}} : f32
// CHECK: %[[M:.*]] = math.roundeven %[[XL]]
// CHECK: %[[S0:.*]] = math.fma %[[M]], %{{.*}}, %[[XC]]
// CHECK: %[[S:.*]] = math.fma %[[M]], %{{.*}}, %[[S0]]
// CHECK-COUNT-5: math.fma {{.*}}, %[[S]],
// CHECK: %[[I:.*]] = arith.fptosi %[[M]] : f32 to i32
// CHECK: %[[B:.*]] = arith.subi %c127_i32, %[[I]]
// CHECK: %[[E:.*]] = arith.shli %[[B]], %c23_i32
// CHECK: %[[SCALE:.*]] = arith.bitcast %[[E]] : i32 to f32
// CHECK: %[[EXP:.*]] = arith.mulf %{{.*}}, %[[SCALE]]
// CHECK: %[[DEN:.*]] = arith.addf %{{.*}}, %[[EXP]]
// CHECK: arith.divf %[[X]], %[[DEN]]
// CHECK-NOT: math.exp
// CHECK: return
func.func @silu(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %0 = graph.silu %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

// Half floats keep math.exp.
// CHECK-LABEL: func @silu_f16
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: arith.divf
// CHECK-NOT: math.roundeven
// CHECK: return
func.func @silu_f16(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %0 = graph.silu %x : (tensor<4x64xf16>) -> tensor<4x64xf16>
  return %0 : tensor<4x64xf16>
}

// -----

// 1 / (1 + exp(-x)) with the same exp(-x).
// CHECK-LABEL: func @sigmoid
// CHECK: math.roundeven
// CHECK: arith.bitcast
// CHECK: %[[DEN:.*]] = arith.addf %cst{{.*}}, %{{.*}} : f32
// CHECK: arith.divf %cst{{.*}}, %[[DEN]]
// CHECK-NOT: math.exp
// CHECK: return
func.func @sigmoid(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %0 = graph.sigmoid %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}
