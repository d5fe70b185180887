// kiln-separate-band-buffers: a tensor.empty shared by ops of band sections (CSE merged the
// bands' same-shaped destinations) becomes one empty per such op, right before it and with its
// location (so bufferization gives each its own buffer, tagged for kiln-plan-memory); uses by
// untagged ops keep the original empty.
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-separate-band-buffers))' -mlir-print-debuginfo | FileCheck %s

// CHECK-LABEL: func @shared_destination
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4x16xf32> loc(#[[S0:loc[0-9]+]])
// CHECK: linalg.copy ins(%arg0 : tensor<4x16xf32>) outs(%[[E0]] : tensor<4x16xf32>) -> tensor<4x16xf32> loc(#[[S0]])
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4x16xf32> loc(#[[S1:loc[0-9]+]])
// CHECK: linalg.copy ins(%arg1 : tensor<4x16xf32>) outs(%[[E1]] : tensor<4x16xf32>) -> tensor<4x16xf32> loc(#[[S1]])
// CHECK: linalg.copy ins(%arg1 : tensor<4x16xf32>) outs(%[[E]] : tensor<4x16xf32>)
// CHECK-DAG: #[[S0]] = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 0 : i64}>
// CHECK-DAG: #[[S1]] = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 1 : i64}>
#s0 = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 0 : i64}>["upper"])
#s1 = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 1 : i64}>["lower"])
func.func @shared_destination(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %e = tensor.empty() : tensor<4x16xf32>
  %a = linalg.copy ins(%x : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32> loc(#s0)
  %b = linalg.copy ins(%y : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32> loc(#s1)
  %c = linalg.copy ins(%y : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %a, %b, %c : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Only untagged users: nothing changes.
// CHECK-LABEL: func @untagged
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT: tensor.empty
func.func @untagged(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %e = tensor.empty() : tensor<4x16xf32>
  %a = linalg.copy ins(%x : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %b = linalg.copy ins(%y : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %a, %b : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Dynamic sizes: each new empty takes the same size values, right before its user.
// CHECK-LABEL: func @dynamic_rows
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[E0:.*]] = tensor.empty(%[[N]]) : tensor<?x16xf32>
// CHECK-NEXT: linalg.copy ins(%arg0 : tensor<?x16xf32>) outs(%[[E0]] : tensor<?x16xf32>)
// CHECK: %[[E1:.*]] = tensor.empty(%[[N]]) : tensor<?x16xf32>
// CHECK-NEXT: linalg.copy ins(%arg1 : tensor<?x16xf32>) outs(%[[E1]] : tensor<?x16xf32>)
// CHECK-NOT: tensor.empty
#u = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 0 : i64}>["upper"])
#l = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 1 : i64}>["lower"])
func.func @dynamic_rows(%x: tensor<?x16xf32>, %y: tensor<?x16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<?x16xf32>
  %a = linalg.copy ins(%x : tensor<?x16xf32>) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32> loc(#u)
  %b = linalg.copy ins(%y : tensor<?x16xf32>) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32> loc(#l)
  return %a, %b : tensor<?x16xf32>, tensor<?x16xf32>
}
