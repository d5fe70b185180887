// kiln-vectorize-contractions: a tile whose output is a slice of its forall's
// shared output, filled with a constant that nothing else reads, starts its
// accumulator registers from the constant; the forall takes the fill's empty
// tensor (no kernel writes zeros over the whole output first).
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-vectorize-contractions),canonicalize)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-vectorize-contractions{reduction-chunk=64}),canonicalize)' | FileCheck %s --check-prefix=CHUNK

#lhs = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func @filled
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK-NOT: linalg.fill
// CHECK: %[[E:.*]] = tensor.empty() : tensor<32x64xf32>
// CHECK: scf.forall {{.*}} shared_outs(%{{.*}} = %[[E]])
// CHECK-NOT: vector.transfer_read {{.*}} : tensor<16x64xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[Z]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]]) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-4: vector.fma
// CHECK-COUNT-4: vector.transfer_write
// The chunked reduction starts from the constant in its first chunk only.
// CHUNK-LABEL: func @filled
// CHUNK-NOT: linalg.fill
// CHUNK: scf.forall
// CHUNK: scf.for %[[K:.*]] = %c0 to %c256 step %c64
// CHUNK: %[[FIRST:.*]] = arith.cmpi eq, %[[K]], %c0
// CHUNK: scf.if %[[FIRST]]
// CHUNK: scf.yield
// CHUNK: } else {
// CHUNK-COUNT-4: vector.transfer_read {{.*}} : tensor<16x64xf32>, vector<16xf32>
func.func @filled(%a: tensor<32x256xf32>, %b: tensor<256x64xf32>) -> tensor<32x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %r = scf.forall (%i) = (0) to (32) step (16) shared_outs(%o = %f) -> (tensor<32x64xf32>) {
    %as = tensor.extract_slice %a[%i, 0] [16, 256] [1, 1] : tensor<32x256xf32> to tensor<16x256xf32>
    %os = tensor.extract_slice %o[%i, 0] [16, 64] [1, 1] : tensor<32x64xf32> to tensor<16x64xf32>
    %t = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%as, %b : tensor<16x256xf32>, tensor<256x64xf32>) outs(%os : tensor<16x64xf32>) attrs = {kiln.tile_sizes = array<i64: 16, 0, 64>} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<16x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[%i, 0] [16, 64] [1, 1] : tensor<16x64xf32> into tensor<32x64xf32>
    }
  }
  return %r : tensor<32x64xf32>
}

// -----

// The forall's output is also read by another op in the tile (a copy of
// its filled values): the forall keeps the fill and the registers start from
// the output.
// CHECK-LABEL: func @output_read_elsewhere
// CHECK: %[[F:.*]] = linalg.fill
// CHECK: scf.forall {{.*}} shared_outs(%{{.*}} = %[[F]], 
// CHECK-COUNT-4: vector.transfer_read {{.*}} : tensor<16x64xf32>, vector<16xf32>
#lhs2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs2 = affine_map<(d0, d1, d2) -> (d1, d2)>
#out2 = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @output_read_elsewhere(%a: tensor<32x256xf32>, %b: tensor<256x64xf32>, %d: tensor<32x64xf32>) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %r:2 = scf.forall (%i) = (0) to (32) step (16) shared_outs(%o = %f, %p = %d) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
    %as = tensor.extract_slice %a[%i, 0] [16, 256] [1, 1] : tensor<32x256xf32> to tensor<16x256xf32>
    %os = tensor.extract_slice %o[%i, 0] [16, 64] [1, 1] : tensor<32x64xf32> to tensor<16x64xf32>
    %copy = tensor.extract_slice %o[%i, 0] [16, 64] [1, 1] : tensor<32x64xf32> to tensor<16x64xf32>
    %t = linalg.generic {indexing_maps = [#lhs2, #rhs2, #out2], iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%as, %b : tensor<16x256xf32>, tensor<256x64xf32>) outs(%os : tensor<16x64xf32>) attrs = {kiln.tile_sizes = array<i64: 16, 0, 64>} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<16x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[%i, 0] [16, 64] [1, 1] : tensor<16x64xf32> into tensor<32x64xf32>
      tensor.parallel_insert_slice %copy into %p[%i, 0] [16, 64] [1, 1] : tensor<16x64xf32> into tensor<32x64xf32>
    }
  }
  return %r#0, %r#1 : tensor<32x64xf32>, tensor<32x64xf32>
}
