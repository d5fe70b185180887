// kiln-convert-graph-to-linalg for the strings family: sequential host loops (scf.for over tensors) calling the kiln_cpu string kernels.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s

// Each element converted in a row-major loop nest; no linalg.generic (its
// body would become a launched kernel, where the context is not at hand).
// CHECK-LABEL: func @cast_to_string
// CHECK-NOT: linalg.generic
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tensor.extract %arg0
// CHECK: kiln_cpu.string_from_float %{{.*}} : f32 -> i128
// CHECK: tensor.insert
func.func @cast_to_string(%x: tensor<3x4xf32>) -> tensor<3x4xi128> {
  %0 = graph.string_cast %x {to = i128} : (tensor<3x4xf32>) -> tensor<3x4xi128>
  return %0 : tensor<3x4xi128>
}

// -----

// CHECK-LABEL: func @cast_from_string
// CHECK: scf.for
// CHECK: kiln_cpu.string_to_float %{{.*}} : i128 -> f32
func.func @cast_from_string(%x: tensor<?xi128>) -> tensor<?xf32> {
  %0 = graph.string_cast %x {to = f32} : (tensor<?xi128>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// Count the non-stopwords (case-insensitive here), allocate max(count, 1)
// with "" (i128 0) first, then write the kept ones upper-cased.
// CHECK-LABEL: func @normalize
// CHECK: %[[W:.*]] = kiln_cpu.string_literal "monday" : i128
// CHECK: %[[COUNT:.*]] = scf.for
// CHECK: kiln_cpu.string_equal %{{.*}}, %[[W]] {ignore_case = true} : i128
// CHECK: %[[LEN:.*]] = arith.maxui %[[COUNT]], %{{.*}} : index
// CHECK: %[[OUT:.*]] = tensor.empty(%[[LEN]]) : tensor<1x?xi128>
// CHECK: %[[EMPTY:.*]] = arith.constant 0 : i128
// CHECK: tensor.insert %[[EMPTY]]
// CHECK: scf.for
// CHECK: kiln_cpu.string_equal
// CHECK: scf.if
// CHECK: kiln_cpu.string_change_case %{{.*}} {upper = true} : i128
func.func @normalize(%x: tensor<1x6xi128>) -> tensor<1x?xi128> {
  %0 = graph.string_normalizer %x {case_change_action = "UPPER", is_case_sensitive = false,
      stopwords = ["monday"]} : (tensor<1x6xi128>) -> tensor<1x?xi128>
  return %0 : tensor<1x?xi128>
}

// -----

// NONE keeps the elements as they are: no case kernel.
// CHECK-LABEL: func @keep_case
// CHECK-NOT: kiln_cpu.string_change_case
// CHECK: return
func.func @keep_case(%x: tensor<4xi128>) -> tensor<?xi128> {
  %0 = graph.string_normalizer %x {is_case_sensitive = true, stopwords = ["a", "b"]} : (tensor<4xi128>) -> tensor<?xi128>
  return %0 : tensor<?xi128>
}
