// kiln-count-kernel-cost: each launch gets its FLOPs (work items x float ops per
// item, vector lanes and loop trips included) and compulsory bytes (each memref
// from outside the launch that it reads or writes, once), computed in @main.
// RUN: kiln-opt %s -split-input-file -kiln-add-runtime-context -kiln-form-cpu-launches -kiln-count-kernel-cost -canonicalize -cse | FileCheck %s

// Static elementwise y = x * w + x over 4x32x16: 2 flops per element, 2048
// elements -> 4096; bytes: x 8192 + w 64 + y 8192 = 16448.
// CHECK-LABEL: func @main
// CHECK-DAG: %[[F:[^ ]+]] = arith.constant 4096 : i64
// CHECK-DAG: %[[B:[^ ]+]] = arith.constant 16448 : i64
// CHECK: kiln_cpu.launch %{{[^ ]+}}, %{{[^ ]+}} flops(%[[F]]) bytes(%[[B]])
func.func @main(%x: memref<4x32x16xf32>, %w: memref<16xf32>, %out: memref<4x32x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c4, %c32, %c16) step (%c1, %c1, %c1) {
    %v = memref.load %x[%i, %j, %k] : memref<4x32x16xf32>
    %s = memref.load %w[%k] : memref<16xf32>
    %m = arith.mulf %v, %s : f32
    %r = arith.addf %m, %v : f32
    %idx = arith.addi %k, %c1 : index
    memref.store %r, %out[%i, %j, %k] : memref<4x32x16xf32>
    scf.reduce
  }
  return
}

// -----

// Dynamic rows: relu over n x 16 (one maximumf per element): flops = n * 16,
// bytes = x (n * 64) + out (n * 64), both from memref.dim of the input (cse
// merges the two products).
// CHECK-LABEL: func @main
// CHECK-SAME: %[[X:[^:]+]]: memref<?x16xf32>
// CHECK: %[[N:.+]] = memref.dim %[[X]], %c0
// CHECK: %[[ITEMS:.+]] = arith.maxsi %[[N]], %c0
// CHECK: %[[FLOPS:.+]] = arith.muli %[[ITEMS]], %c16
// CHECK: %[[F:.+]] = arith.index_cast %[[FLOPS]] : index to i64
// CHECK: %[[XB:.+]] = arith.muli %[[N]], %c64
// CHECK: %[[BYTES:.+]] = arith.addi %[[XB]], %[[XB]]
// CHECK: %[[B:.+]] = arith.index_cast %[[BYTES]] : index to i64
// CHECK: kiln_cpu.launch %{{[^ ]+}}, %{{[^ ]+}} flops(%[[F]]) bytes(%[[B]])
func.func @main(%x: memref<?x16xf32>) -> memref<?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x16xf32>
  %out = memref.alloc(%n) : memref<?x16xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c16) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x16xf32>
    %r = arith.maximumf %v, %zero : f32
    memref.store %r, %out[%i, %j] : memref<?x16xf32>
    scf.reduce
  } loc("relu")
  return %out : memref<?x16xf32>
}

// -----

// A contraction C[64,16] += A[64,32] * B[32,16] tiled by 16 rows (4 tiles, the
// work items). In a tile, rows run in blocks of 4 (4 vector<16xf32> fma per
// reduction step) and a remainder loop of single rows starting where the
// blocks end; the tile's row count is affine.min(16, 64 - r0), bounded by the
// full tile. Per tile: 16 rows x 32 steps x 16 lanes x 2 = 16384, so flops =
// 4 x 16384 = 65536 = 2 * 64 * 16 * 32. Bytes: A 8192 + B 2048 + C 4096 = 14336
// (each once, though every tile reads all of B).
// CHECK-LABEL: func @main
// CHECK-DAG: %[[F:[^ ]+]] = arith.constant 65536 : i64
// CHECK-DAG: %[[B:[^ ]+]] = arith.constant 14336 : i64
// CHECK: kiln_cpu.launch %{{[^ ]+}}, %{{[^ ]+}} flops(%[[F]]) bytes(%[[B]])
#tile = affine_map<(d0) -> (-d0 + 64, 16)>
func.func @main(%a: memref<64x32xf32>, %b: memref<32x16xf32>, %c: memref<64x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %pad = arith.constant 0.0 : f32
  scf.parallel (%t) = (%c0) to (%c4) step (%c1) {
    %r0 = arith.muli %t, %c16 : index
    %rows = affine.min #tile(%r0)
    %at = memref.subview %a[%r0, 0] [%rows, 32] [1, 1] : memref<64x32xf32> to memref<?x32xf32, strided<[32, 1], offset: ?>>
    %ct = memref.subview %c[%r0, 0] [%rows, 16] [1, 1] : memref<64x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
    %rem = arith.remsi %rows, %c4 : index
    %blocked = arith.subi %rows, %rem : index
    scf.for %r = %c0 to %blocked step %c4 {
      %r1 = arith.addi %r, %c1 : index
      %r2 = arith.addi %r, %c2 : index
      %r3 = arith.addi %r, %c3 : index
      %i0 = vector.transfer_read %ct[%r, %c0], %pad {in_bounds = [true]} : memref<?x16xf32, strided<[16, 1], offset: ?>>, vector<16xf32>
      %i1 = vector.transfer_read %ct[%r1, %c0], %pad {in_bounds = [true]} : memref<?x16xf32, strided<[16, 1], offset: ?>>, vector<16xf32>
      %i2 = vector.transfer_read %ct[%r2, %c0], %pad {in_bounds = [true]} : memref<?x16xf32, strided<[16, 1], offset: ?>>, vector<16xf32>
      %i3 = vector.transfer_read %ct[%r3, %c0], %pad {in_bounds = [true]} : memref<?x16xf32, strided<[16, 1], offset: ?>>, vector<16xf32>
      %acc:4 = scf.for %k = %c0 to %c32 step %c1 iter_args(%x0 = %i0, %x1 = %i1, %x2 = %i2, %x3 = %i3) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
        %bv = vector.transfer_read %b[%k, %c0], %pad {in_bounds = [true]} : memref<32x16xf32>, vector<16xf32>
        %a0 = memref.load %at[%r, %k] : memref<?x32xf32, strided<[32, 1], offset: ?>>
        %a1 = memref.load %at[%r1, %k] : memref<?x32xf32, strided<[32, 1], offset: ?>>
        %a2 = memref.load %at[%r2, %k] : memref<?x32xf32, strided<[32, 1], offset: ?>>
        %a3 = memref.load %at[%r3, %k] : memref<?x32xf32, strided<[32, 1], offset: ?>>
        %s0 = vector.broadcast %a0 : f32 to vector<16xf32>
        %s1 = vector.broadcast %a1 : f32 to vector<16xf32>
        %s2 = vector.broadcast %a2 : f32 to vector<16xf32>
        %s3 = vector.broadcast %a3 : f32 to vector<16xf32>
        %y0 = vector.fma %s0, %bv, %x0 : vector<16xf32>
        %y1 = vector.fma %s1, %bv, %x1 : vector<16xf32>
        %y2 = vector.fma %s2, %bv, %x2 : vector<16xf32>
        %y3 = vector.fma %s3, %bv, %x3 : vector<16xf32>
        scf.yield %y0, %y1, %y2, %y3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
      }
      vector.transfer_write %acc#0, %ct[%r, %c0] {in_bounds = [true]} : vector<16xf32>, memref<?x16xf32, strided<[16, 1], offset: ?>>
      vector.transfer_write %acc#1, %ct[%r1, %c0] {in_bounds = [true]} : vector<16xf32>, memref<?x16xf32, strided<[16, 1], offset: ?>>
      vector.transfer_write %acc#2, %ct[%r2, %c0] {in_bounds = [true]} : vector<16xf32>, memref<?x16xf32, strided<[16, 1], offset: ?>>
      vector.transfer_write %acc#3, %ct[%r3, %c0] {in_bounds = [true]} : vector<16xf32>, memref<?x16xf32, strided<[16, 1], offset: ?>>
    }
    scf.for %r = %blocked to %rows step %c1 {
      %i0 = vector.transfer_read %ct[%r, %c0], %pad {in_bounds = [true]} : memref<?x16xf32, strided<[16, 1], offset: ?>>, vector<16xf32>
      %acc = scf.for %k = %c0 to %c32 step %c1 iter_args(%x0 = %i0) -> (vector<16xf32>) {
        %bv = vector.transfer_read %b[%k, %c0], %pad {in_bounds = [true]} : memref<32x16xf32>, vector<16xf32>
        %a0 = memref.load %at[%r, %k] : memref<?x32xf32, strided<[32, 1], offset: ?>>
        %s0 = vector.broadcast %a0 : f32 to vector<16xf32>
        %y0 = vector.fma %s0, %bv, %x0 : vector<16xf32>
        scf.yield %y0 : vector<16xf32>
      }
      vector.transfer_write %acc, %ct[%r, %c0] {in_bounds = [true]} : vector<16xf32>, memref<?x16xf32, strided<[16, 1], offset: ?>>
    }
    scf.reduce
  }
  return
}

// -----

// A triangular nest: the inner bound is the outer induction variable (not
// computable before the launch), so the inner loop takes its constant bound
// (8); an edge tile's min(8, n - item * 8) is taken at work item 0.
// CHECK-LABEL: func.func @main
// CHECK: kiln_cpu.launch
func.func @main(%a: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = memref.dim %a, %c0 : memref<?x8xf32>
  scf.parallel (%t) = (%c0) to (%n) step (%c8) {
    %rows = affine.min affine_map<(d0)[s0] -> (8, s0 - d0)>(%t)[%n]
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %i step %c1 {
        %r = arith.addi %t, %i : index
        %x = memref.load %a[%r, %j] : memref<?x8xf32>
        %y = arith.mulf %x, %x : f32
        memref.store %y, %a[%r, %j] : memref<?x8xf32>
      }
    }
    scf.reduce
  }
  return
}

// -----

// Key tiles of 64 with a tail written min(128 - k, 64) (the attention
// kernel's form): each tile counts 64 keys, 4 items x 2 tiles x 64 adds.
// CHECK-LABEL: func.func @main
// CHECK: kiln_cpu.launch %{{.*}}, %{{.*}} flops(%c512_i64)
func.func @main(%a: memref<4x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %k = %c0 to %c128 step %c64 {
      %rest = arith.subi %c128, %k : index
      %t = arith.minsi %rest, %c64 : index
      scf.for %j = %c0 to %t step %c1 {
        %col = arith.addi %k, %j : index
        %x = memref.load %a[%i, %col] : memref<4x128xf32>
        %y = arith.addf %x, %x : f32
        memref.store %y, %a[%i, %col] : memref<4x128xf32>
      }
    }
    scf.reduce
  }
  return
}

// -----

// A reduction in chunks (kiln-vectorize-contractions' cache blocking): the
// inner loop runs [k0, min(k0 + 96, 288)), bounded by the chunk's 96 steps;
// 3 chunks x 96 steps x one vector<16xf32> fma (32 flops) = 9216 = 2 * 288 * 16.
// Bytes: a 288*16*4 = 18432 + out 64 = 18496.
// CHECK-LABEL: func @main
// CHECK-DAG: %[[F:[^ ]+]] = arith.constant 9216 : i64
// CHECK-DAG: %[[B:[^ ]+]] = arith.constant 18496 : i64
// CHECK: kiln_cpu.launch %{{[^ ]+}}, %{{[^ ]+}} flops(%[[F]]) bytes(%[[B]])
func.func @main(%a: memref<288x16xf32>, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c96 = arith.constant 96 : index
  %c288 = arith.constant 288 : index
  %pad = arith.constant 0.0 : f32
  scf.parallel (%t) = (%c0) to (%c1) step (%c1) {
    %init = vector.transfer_read %out[%c0], %pad {in_bounds = [true]} : memref<16xf32>, vector<16xf32>
    %sum = scf.for %k0 = %c0 to %c288 step %c96 iter_args(%acc0 = %init) -> (vector<16xf32>) {
      %end = arith.addi %k0, %c96 : index
      %ub = arith.minsi %end, %c288 : index
      %part = scf.for %k = %k0 to %ub step %c1 iter_args(%acc = %acc0) -> (vector<16xf32>) {
        %v = vector.transfer_read %a[%k, %c0], %pad {in_bounds = [true]} : memref<288x16xf32>, vector<16xf32>
        %y = vector.fma %v, %v, %acc : vector<16xf32>
        scf.yield %y : vector<16xf32>
      }
      scf.yield %part : vector<16xf32>
    }
    vector.transfer_write %sum, %out[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
    scf.reduce
  }
  return
}
