// kiln-convert-graph-to-linalg{row-vector-reductions=true} (x86): reductions over the last axis as vector row kernels.
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg=row-vector-reductions=true | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s --check-prefix=GENERIC
// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg="row-vector-reductions=true vector-bits=512" | FileCheck %s --check-prefix=WIDE

// A softmax over 40 elements per row: one work item per row (the row stays in cache), three
// passes in vectors of 8 then the last elements one by one: the max (in four chains of registers
// over blocks of four vectors, then one for the vectors left, then across the lanes), the exponentials of x - max (kiln's own f32 exp: a round to an
// integer power of two and a polynomial, 0 below -87.3) written to the output row as they are
// summed, then the row scaled by 1 / sum. A log-softmax writes x - max - log(sum) in its third
// pass. Without the option (the GPU targets) both are linalg reductions.
// CHECK-LABEL: func @softmax_long_rows
// CHECK: scf.forall
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c32{{.*}} step %c32{{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-4: arith.cmpf ogt, {{.*}} : vector<8xf32>
// CHECK: scf.for {{.*}} = %c32{{.*}} to %c40{{.*}} step %c8{{.*}} iter_args({{.*}}) -> (vector<8xf32>)
// CHECK: arith.cmpf ogt, {{.*}} : vector<8xf32>
// CHECK-NOT: scf.forall
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c40{{.*}} step %c8{{.*}} iter_args({{.*}}) -> (vector<8xf32>, tensor<40xf32>)
// CHECK: math.roundeven {{.*}} : vector<8xf32>
// CHECK: arith.cmpf olt, {{.*}} : vector<8xf32>
// CHECK: vector.transfer_write
// CHECK: %[[INV:.*]] = arith.divf %cst{{.*}}, %{{.*}} : f32
// CHECK: %[[INVV:.*]] = vector.broadcast %[[INV]]
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c40{{.*}} step %c8{{.*}} iter_args({{.*}}) -> (tensor<40xf32>)
// CHECK: arith.mulf %{{.*}}, %[[INVV]] : vector<8xf32>
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func @log_softmax_odd_rows
// CHECK: scf.forall
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c16{{.*}} step %c8
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c16{{.*}} step %c8
// CHECK: math.log
// CHECK: scf.for {{.*}} = %c0{{.*}} to %c16{{.*}} step %c8
// CHECK-COUNT-3: arith.subf
// CHECK: tensor.insert
// With 512-bit vectors (and rows of 32 or more) the row kernels take 16 lanes.
// WIDE-LABEL: func @softmax_long_rows
// WIDE: scf.for {{.*}} -> (vector<16xf32>)
// WIDE: math.roundeven {{.*}} : vector<16xf32>
// GENERIC-LABEL: func @softmax_long_rows
// GENERIC-NOT: scf.forall
// GENERIC: iterator_types = ["parallel", "reduction"]
func.func @softmax_long_rows(%x: tensor<?x40xf32>) -> tensor<?x40xf32> {
  %0 = graph.softmax %x {axis = -1 : i64} : (tensor<?x40xf32>) -> tensor<?x40xf32>
  return %0 : tensor<?x40xf32>
}
func.func @log_softmax_odd_rows(%x: tensor<2x3x17xf32>) -> tensor<2x3x17xf32> {
  %0 = graph.log_softmax %x {axis = 2 : i64} : (tensor<2x3x17xf32>) -> tensor<2x3x17xf32>
  return %0 : tensor<2x3x17xf32>
}

// -----

// A 21-element sum: two vectors of 8, then the last 5 elements one by one.
// Rows of fewer than 16 elements and reductions over other axes stay linalg.
// CHECK-LABEL: func @sums
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c8
// CHECK-COUNT-5: tensor.extract %arg0
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: iterator_types = ["parallel", "reduction"]
func.func @sums(%x: tensor<3x21xf32>, %y: tensor<3x8xf32>) -> (tensor<3x1xf32>, tensor<3x1xf32>, tensor<1x21xf32>) {
  %0 = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<3x21xf32>) -> tensor<3x1xf32>
  %1 = graph.reduce_sum %y {axes = array<i64: 1>} : (tensor<3x8xf32>) -> tensor<3x1xf32>
  %2 = graph.reduce_sum %x {axes = array<i64: 0>} : (tensor<3x21xf32>) -> tensor<1x21xf32>
  return %0, %1, %2 : tensor<3x1xf32>, tensor<3x1xf32>, tensor<1x21xf32>
}

// -----

// A channels-last global pool's mean over H and W keeps the innermost
// (channel) dim: work items (n, channel block of 16), each walks the 8x8
// positions with its vector accumulator in registers, then the mean divides.
// The linalg reduction made the channel the parallel dim and read each
// position one float at a time (efficientnet_b0's squeeze-and-excitation
// pools: 311 -> 31 us). 40 channels (8 divides, 16 does not) take vectors of 8.
// WIDE-LABEL: func @channel_mean
// WIDE: %[[N:.*]] = tensor.dim %arg0, %c0
// WIDE: scf.forall (%[[I:.*]], %[[CB:.*]]) in (%[[N]], %c3)
// WIDE: %[[C:.*]] = arith.muli %[[CB]], %c16
// WIDE: scf.for %[[H:.*]] = {{.*}} to %c8{{.*}} -> (vector<16xf32>)
// WIDE: scf.for %[[W:.*]] = {{.*}} to %c8{{.*}} -> (vector<16xf32>)
// WIDE: vector.transfer_read %arg0[%[[I]], %[[H]], %[[W]], %[[C]]]{{.*}} : tensor<?x8x8x48xf32>, vector<16xf32>
// WIDE: arith.addf {{.*}} : vector<16xf32>
// WIDE: tensor.parallel_insert_slice
// WIDE: tensor.collapse_shape {{.*}} into tensor<?x48xf32>
// WIDE: arith.divf
// WIDE-LABEL: func @channel_mean_8
// WIDE: scf.forall ({{.*}}) in ({{.*}}, %c5)
// WIDE: vector.transfer_read {{.*}} : tensor<?x4x4x40xf32>, vector<8xf32>
// GENERIC-LABEL: func @channel_mean
// GENERIC-NOT: scf.forall
// GENERIC: iterator_types = ["parallel", "parallel", "reduction", "reduction"]
func.func @channel_mean(%x: tensor<?x8x8x48xf32>) -> tensor<?x1x1x48xf32> {
  %0 = graph.reduce_mean %x {axes = array<i64: 1, 2>} : (tensor<?x8x8x48xf32>) -> tensor<?x1x1x48xf32>
  return %0 : tensor<?x1x1x48xf32>
}
func.func @channel_mean_8(%x: tensor<?x4x4x40xf32>) -> tensor<?x1x1x40xf32> {
  %0 = graph.reduce_mean %x {axes = array<i64: 1, 2>} : (tensor<?x4x4x40xf32>) -> tensor<?x1x1x40xf32>
  return %0 : tensor<?x1x1x40xf32>
}
