// kiln-vectorize-copies: a copy between buffers becomes a parallel loop over the dims before the
// run of elements contiguous in both, and vector reads and writes over that run (its tail masked).
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-vectorize-copies{vector-bits=512}),canonicalize)' | FileCheck %s

// 24 of 32 channels into a concatenation's slice (stride 96): the run is the 24 channels, one
// whole vector of 16 and a masked one of the last 8.
// CHECK-LABEL: func @channel_slice
// CHECK: scf.parallel (%[[H:.*]], %[[W:.*]]) = (%c0, %c0) to (%c4, %c5) step (%c1, %c1)
// CHECK: %[[V:.*]] = vector.transfer_read %{{.*}}[%[[H]], %[[W]], %c0], %{{.*}} {in_bounds = [true]} : memref<4x5x24xf32, strided<[160, 32, 1]>>, vector<16xf32>
// CHECK: vector.transfer_write %[[V]], %{{.*}}[%[[H]], %[[W]], %c0] {in_bounds = [true]} : vector<16xf32>, memref<4x5x24xf32, strided<[480, 96, 1], offset: 8>>
// CHECK: %[[T:.*]] = vector.transfer_read %{{.*}}[%[[H]], %[[W]], %c16], %{{.*}} : memref<4x5x24xf32, strided<[160, 32, 1]>>, vector<16xf32>
// CHECK: vector.transfer_write %[[T]], %{{.*}}[%[[H]], %[[W]], %c16] : vector<16xf32>, memref<4x5x24xf32, strided<[480, 96, 1], offset: 8>>
// CHECK-NOT: linalg.copy
func.func @channel_slice(%src: memref<4x5x24xf32, strided<[160, 32, 1]>>, %dst: memref<4x5x24xf32, strided<[480, 96, 1], offset: 8>>) {
  linalg.copy ins(%src : memref<4x5x24xf32, strided<[160, 32, 1]>>) outs(%dst : memref<4x5x24xf32, strided<[480, 96, 1], offset: 8>>)
  return
}

// -----

// A padded buffer's interior out to a plain one: rows of 56 x 64 contiguous elements in both are
// one run per row (the collapsed [N, H, W*C] views), whole vectors only; the unit batch dim's loop folds away.
// CHECK-LABEL: func @padded_interior
// CHECK: %[[FROM:.*]] = memref.collapse_shape %arg0 {{\[\[}}0], [1], [2, 3]] : memref<1x56x56x64xf32, strided<[215296, 3712, 64, 1], offset: 3776>> into memref<1x56x3584xf32, strided<[215296, 3712, 1], offset: 3776>>
// CHECK: %[[TO:.*]] = memref.collapse_shape %arg1 {{\[\[}}0], [1], [2, 3]]
// CHECK: scf.parallel (%[[H:.*]]) = (%c0) to (%c56) step (%c1)
// CHECK: scf.for %[[J:.*]] = %c0 to %c3584 step %c16
// CHECK: vector.transfer_read %[[FROM]][%c0, %[[H]], %[[J]]]
// CHECK: vector.transfer_write {{.*}}, %[[TO]][%c0, %[[H]], %[[J]]]
// CHECK-NOT: vector.transfer_read
// CHECK-NOT: linalg.copy
func.func @padded_interior(%src: memref<1x56x56x64xf32, strided<[215296, 3712, 64, 1], offset: 3776>>, %dst: memref<1x56x56x64xf32>) {
  linalg.copy ins(%src : memref<1x56x56x64xf32, strided<[215296, 3712, 64, 1], offset: 3776>>) outs(%dst : memref<1x56x56x64xf32>)
  return
}

// -----

// Copies that stay: three channels of an image (a run shorter than half a vector), a transposed
// copy (no contiguous run in the source), booleans (a vector of i1 is packed bits) and a rank-1 copy.
// CHECK-LABEL: func @stays
// CHECK-COUNT-4: linalg.copy
// CHECK-NOT: vector.transfer_read
func.func @stays(%a: memref<8x8x3xf32>, %b: memref<8x8x3xf32, strided<[48, 6, 1]>>,
                 %c: memref<16x16xf32, strided<[1, 16]>>, %d: memref<16x16xf32>,
                 %e: memref<4x64xi1>, %f: memref<4x64xi1>, %g: memref<64xf32>, %h: memref<64xf32>) {
  linalg.copy ins(%a : memref<8x8x3xf32>) outs(%b : memref<8x8x3xf32, strided<[48, 6, 1]>>)
  linalg.copy ins(%c : memref<16x16xf32, strided<[1, 16]>>) outs(%d : memref<16x16xf32>)
  linalg.copy ins(%e : memref<4x64xi1>) outs(%f : memref<4x64xi1>)
  linalg.copy ins(%g : memref<64xf32>) outs(%h : memref<64xf32>)
  return
}

// -----

// Bytes: 64 lanes of i8 on 512-bit vectors; a run of 100 is one whole vector and a masked tail.
// CHECK-LABEL: func @bytes
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c2) step (%c1)
// CHECK: vector.transfer_read %{{.*}}[%{{.*}}, %c0], {{.*}} {in_bounds = [true]} : memref<2x100xi8>, vector<64xi8>
// CHECK: vector.transfer_read %{{.*}}[%{{.*}}, %c64], %{{.*}} : memref<2x100xi8>, vector<64xi8>
func.func @bytes(%a: memref<2x100xi8>, %b: memref<2x100xi8, strided<[128, 1]>>) {
  linalg.copy ins(%a : memref<2x100xi8>) outs(%b : memref<2x100xi8, strided<[128, 1]>>)
  return
}

// -----

// A whole contiguous [1, C, H, W] map is one run, but the parallel loop keeps the channels
// outside it (at least 8 iterations where the shape has them), so that the copy is still split
// over threads: runs of H * W = 3136 elements.
// CHECK-LABEL: func @whole_map
// CHECK: memref.collapse_shape %arg0 {{\[\[}}0], [1], [2, 3]] : memref<1x256x56x56xf32> into memref<1x256x3136xf32>
// CHECK: scf.parallel (%[[C:.*]]) = (%c0) to (%c256) step (%c1)
// CHECK: scf.for %{{.*}} = %c0 to %c3136 step %c16
func.func @whole_map(%a: memref<1x256x56x56xf32>, %b: memref<1x256x56x56xf32>) {
  linalg.copy ins(%a : memref<1x256x56x56xf32>) outs(%b : memref<1x256x56x56xf32>)
  return
}
