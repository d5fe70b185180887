// graph.quantized_matmul / graph.integer_matmul whose panels are one column wide (the CUDA
// target's layout): one linalg reduction per output element over views of the lhs and the
// weight bytes, converting each byte (or nibble) and scaling it in the body; no dequantized
// weight and no panel loop nest. The dynamic form quantizes each lhs row by its max first and
// scales the exact integer sums after, in the CPU kernel's order.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg -canonicalize -cse | FileCheck %s

// int8, one scale per column: k as (group, r) = (1, 4), the batch dims kept.
// CHECK-DAG: #[[A8:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
// CHECK-DAG: #[[W8:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>
// CHECK-DAG: #[[S8:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3)>
// CHECK-DAG: #[[O8:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
// CHECK-LABEL: func @int8
// CHECK-NOT: scf.forall
// CHECK: %[[A:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1], [2, 3]] {{.*}} into tensor<?x?x1x4xf32>
// CHECK: %[[W2:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2]] : tensor<3x4x1xi8> into tensor<3x4xi8>
// CHECK: %[[W:.*]] = tensor.expand_shape %[[W2]] {{.*}} into tensor<3x1x4xi8>
// CHECK: %[[S:.*]] = tensor.collapse_shape %arg2 {{.*}} into tensor<3x1xf32>
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<?x?x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[A8]], #[[W8]], #[[S8]], #[[O8]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[A]], %[[W]], %[[S]] : {{.*}}) outs(%[[Z]] : tensor<?x?x3xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Q:.*]]: i8, %[[SC:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[QF:.*]] = arith.sitofp %[[Q]] : i8 to f32
// CHECK-NEXT: %[[WV:.*]] = arith.mulf %[[QF]], %[[SC]]
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[X]], %[[WV]]
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[ACC]], %[[P]]
// CHECK-NEXT: linalg.yield %[[SUM]]
func.func @int8(%a: tensor<?x?x4xf32>, %w: tensor<3x4x1xi8>, %s: tensor<3x1x1xf32>) -> tensor<?x?x3xf32> {
  %y = graph.quantized_matmul %a, %w, %s {bits = 8 : i64, group_size = 4 : i64} : (tensor<?x?x4xf32>, tensor<3x4x1xi8>, tensor<3x1x1xf32>) -> tensor<?x?x3xf32>
  return %y : tensor<?x?x3xf32>
}

// -----

// int4, groups of 4 k (2 bytes), f16 scales: k as (group, byte, nibble); the nibble index picks
// the low (k = 2j) or high half, both sign-extended.
// CHECK-DAG: #[[A4:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>
// CHECK-DAG: #[[W4:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3)>
// CHECK-DAG: #[[S4:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2)>
// CHECK-DAG: #[[O4:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1)>
// CHECK-LABEL: func @int4
// CHECK: %[[A:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2, 3]] {{.*}} into tensor<?x2x2x2xf32>
// CHECK: %[[W:.*]] = tensor.expand_shape {{.*}} into tensor<3x2x2xi8>
// CHECK: %[[S:.*]] = tensor.collapse_shape %arg2 {{.*}} into tensor<3x2xf16>
// CHECK: linalg.generic {indexing_maps = [#[[A4]], #[[W4]], #[[S4]], #[[O4]]], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[A]], %[[W]], %[[S]] :
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Q:.*]]: i8, %[[SC:.*]]: f16, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[UP:.*]] = arith.shli %[[Q]], %c4_i8 : i8
// CHECK-NEXT: %[[LO:.*]] = arith.shrsi %[[UP]], %c4_i8 : i8
// CHECK-NEXT: %[[HI:.*]] = arith.shrsi %[[Q]], %c4_i8 : i8
// CHECK-NEXT: %[[E:.*]] = linalg.index 4 : index
// CHECK-NEXT: %[[LOW:.*]] = arith.cmpi eq, %[[E]], %c0 : index
// CHECK-NEXT: %[[NIB:.*]] = arith.select %[[LOW]], %[[LO]], %[[HI]] : i8
// CHECK-NEXT: %[[SF:.*]] = arith.extf %[[SC]] : f16 to f32
// CHECK-NEXT: %[[QF:.*]] = arith.sitofp %[[NIB]] : i8 to f32
// CHECK-NEXT: %[[WV:.*]] = arith.mulf %[[QF]], %[[SF]]
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[X]], %[[WV]]
// CHECK-NEXT: arith.addf %[[ACC]], %[[P]]
func.func @int4(%a: tensor<?x8xf32>, %w: tensor<3x4x1xi8>, %s: tensor<3x2x1xf16>) -> tensor<?x3xf32> {
  %y = graph.quantized_matmul %a, %w, %s {bits = 4 : i64, group_size = 4 : i64} : (tensor<?x8xf32>, tensor<3x4x1xi8>, tensor<3x2x1xf16>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// Dynamic: max |row| (a reduction), the row quantized (elementwise), the exact i32 sums over the
// k-pair weight read as [N, K], then sum * (scale[n] * (amax * (1/127))).
// CHECK-LABEL: func @dynamic
// CHECK: %[[AMAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x4xf32>)
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%arg0, %[[AMAX]] : tensor<?x4xf32>, tensor<?xf32>) outs(%{{.*}} : tensor<?x4xi32>)
// CHECK: math.roundeven
// CHECK: arith.fptosi
// CHECK: %[[W:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2]] : tensor<3x2x2xi8> into tensor<3x4xi8>
// CHECK: %[[SUMS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[Q]], %[[W]] : tensor<?x4xi32>, tensor<3x4xi8>) outs(%{{.*}} : tensor<?x3xi32>)
// CHECK: arith.extsi
// CHECK: arith.muli
// CHECK: arith.addi
// CHECK: %[[S:.*]] = tensor.collapse_shape %arg2 {{\[}}[0, 1, 2]] : tensor<3x1x1xf32> into tensor<3xf32>
// CHECK: linalg.generic {{.*}} ins(%[[SUMS]], %[[AMAX]], %[[S]] : tensor<?x3xi32>, tensor<?xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<?x3xf32>)
// CHECK-NEXT: ^bb0(%[[SUM:.*]]: i32, %[[M:.*]]: f32, %[[SC:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[ROW:.*]] = arith.mulf %[[M]], %cst
// CHECK-NEXT: %[[BOTH:.*]] = arith.mulf %[[SC]], %[[ROW]]
// CHECK-NEXT: %[[SF:.*]] = arith.sitofp %[[SUM]] : i32 to f32
// CHECK-NEXT: arith.mulf %[[SF]], %[[BOTH]]
func.func @dynamic(%a: tensor<?x4xf32>, %w: tensor<3x2x2xi8>, %s: tensor<3x1x1xf32>) -> tensor<?x3xf32> {
  %y = graph.quantized_matmul %a, %w, %s {bits = 8 : i64, group_size = 4 : i64, dynamic} : (tensor<?x4xf32>, tensor<3x2x2xi8>, tensor<3x1x1xf32>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// graph.integer_matmul: the exact i32 sums alone.
// CHECK-LABEL: func @integer
// CHECK: %[[W:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2]] : tensor<3x2x2xi8> into tensor<3x4xi8>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %[[W]] : tensor<?x4xi32>, tensor<3x4xi8>) outs(%{{.*}} : tensor<?x3xi32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: i32, %[[Q:.*]]: i8, %[[ACC:.*]]: i32):
// CHECK-NEXT: %[[QI:.*]] = arith.extsi %[[Q]] : i8 to i32
// CHECK-NEXT: %[[P:.*]] = arith.muli %[[X]], %[[QI]]
// CHECK-NEXT: arith.addi %[[ACC]], %[[P]]
// CHECK-NOT: scf.forall
func.func @integer(%a: tensor<?x4xi32>, %w: tensor<3x2x2xi8>) -> tensor<?x3xi32> {
  %y = graph.integer_matmul %a, %w : (tensor<?x4xi32>, tensor<3x2x2xi8>) -> tensor<?x3xi32>
  return %y : tensor<?x3xi32>
}
