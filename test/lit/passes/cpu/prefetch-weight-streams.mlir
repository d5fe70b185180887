// kiln-prefetch-weight-streams: a vector read of an 8-bit weight panel gets a
// prefetch `distance` bytes (here 4096 / 64 = 64 rows) ahead in the same
// panel, clamped to its last row; reads of other buffers get none.
// RUN: kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-prefetch-weight-streams))' | FileCheck %s
// RUN: kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-prefetch-weight-streams,canonicalize))' | FileCheck %s --check-prefix=F32

// CHECK-LABEL: func @main
// CHECK: %[[AHEAD:.*]] = arith.addi %arg3, %c64 : index
// CHECK: %[[ROW:.*]] = arith.minsi %[[AHEAD]], %c99 : index
// CHECK: memref.prefetch %arg1[%arg2, %[[ROW]], %c0], read, locality<3>, data : memref<4x100x64xi8>
// CHECK: vector.transfer_read %arg1[%arg2, %arg3, %c0]
// CHECK-NOT: memref.prefetch
// CHECK: vector.transfer_read %arg0
func.func @main(%x: memref<4x100x64xi8>, %w: memref<4x100x64xi8> {kiln.weight = 0 : i64}, %p: index, %k: index) -> (vector<64xi8>, vector<64xi8>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0 : i8
  %a = vector.transfer_read %w[%p, %k, %c0], %pad {in_bounds = [true]} : memref<4x100x64xi8>, vector<64xi8>
  %b = vector.transfer_read %x[%p, %k, %c0], %pad {in_bounds = [true]} : memref<4x100x64xi8>, vector<64xi8>
  return %a, %b : vector<64xi8>, vector<64xi8>
}

// An f32 panel read in the microkernel's loops (chunks of 128 steps, 8 row
// blocks of 6, steps): row blocks 1 to 7 share the next chunk's 128 rows of
// 64 floats evenly, in address order, through a view with rows and columns as
// one dim: block b's step k prefetches float 64 * (chunk + 128) + (b - 1) *
// 128 * 10 + (k - chunk) * 10 (10 = ceil(64 / 7) floats per step, under a
// line, so every line is touched), clamped to the panel's last float.
// F32-LABEL: func @chunked
// F32: %[[FLAT:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] {{.*}} into memref<1x131072xf32
// F32: scf.for %[[CHUNK:.*]] = %c0 to %c2048 step %c128
// F32: scf.for %[[ROW:.*]] = %c0 to %c48 step %c6
// F32: %[[B:.*]] = arith.divsi %[[ROW]], %c6 : index
// F32: %[[IN:.*]] = arith.cmpi sge, %[[B]], %c1 : index
// F32: %[[B1:.*]] = arith.subi %[[B]], %c1 : index
// F32: %[[BASE:.*]] = arith.muli %[[B1]], %c1280 : index
// F32: scf.for %[[K:.*]] = %[[CHUNK]] to
// F32: %[[R:.*]] = arith.subi %[[K]], %[[CHUNK]] : index
// F32: %[[CHUNKF:.*]] = arith.muli %[[CHUNK]], %c64 : index
// F32: %[[RS:.*]] = arith.muli %[[R]], %c10 : index
// F32: %[[IN_CHUNK:.*]] = arith.addi %[[BASE]], %[[RS]] : index
// F32: %[[NEXT:.*]] = arith.addi %[[IN_CHUNK]], %c8192 : index
// F32: %[[F:.*]] = arith.addi %[[CHUNKF]], %[[NEXT]] : index
// F32: scf.if %[[IN]] {
// F32: %[[FC:.*]] = arith.minsi %[[F]], %c131071 : index
// F32: memref.prefetch %[[FLAT]][%c0, %[[FC]]], read, locality<2>, data
// F32: }
// F32: vector.transfer_read
// With fewer row blocks after the first than lines per read (4 blocks, 4
// lines), blocks 1 to 3 each prefetch one line of the next chunk's row, block
// b line b - 1 (columns 16 * (b - 1)), the row clamped to the panel's last.
// F32-LABEL: func @few_blocks
// F32: scf.for %[[CHUNK:.*]] = %c0 to %c2048 step %c128
// F32: scf.for %[[ROW:.*]] = %c0 to %c24 step %c6
// F32: %[[B:.*]] = arith.divsi %[[ROW]], %c6 : index
// F32: %[[LINE:.*]] = arith.subi %[[B]], %c1 : index
// F32: %[[FROM:.*]] = arith.cmpi sge, %[[LINE]], %c0 : index
// F32: %[[TO:.*]] = arith.cmpi slt, %[[LINE]], %c4 : index
// F32: %[[IN:.*]] = arith.andi %[[FROM]], %[[TO]] : i1
// F32: %[[COL:.*]] = arith.muli %[[LINE]], %c16 : index
// F32: scf.for %[[K:.*]] = %[[CHUNK]] to
// F32: scf.if %[[IN]] {
// F32: %[[NEXT:.*]] = arith.addi %[[K]], %c128 : index
// F32: %[[R:.*]] = arith.minsi %[[NEXT]], %c2047 : index
// F32: memref.prefetch %{{.*}}[%c0, %[[R]], %[[COL]]], read, locality<2>, data
// F32: }
// F32: vector.transfer_read
// A reduction run whole (no chunk loop) over a panel of a weight of 1 MiB
// or more: row blocks 1 to 7 prefetch the next panel (one panel = 256 rows of
// 64 floats on), 10 floats per step in address order, through a flat view of
// the whole weight, clamped to its last float.
// F32-LABEL: func @unchunked
// F32: %[[FLAT:.*]] = memref.collapse_shape %arg0 {{\[\[}}0, 1, 2]] : memref<16x256x64xf32> into memref<262144xf32>
// F32: scf.for %[[ROW:.*]] = %c0 to %c48 step %c6
// F32: %[[B:.*]] = arith.divsi %[[ROW]], %c6 : index
// F32: %[[IN:.*]] = arith.cmpi sge, %[[B]], %c1 : index
// F32: %[[B1:.*]] = arith.subi %[[B]], %c1 : index
// F32: %[[BASE:.*]] = arith.muli %[[B1]], %c2560 : index
// F32: scf.for %[[K:.*]] = %c0 to %c256
// F32: %[[P:.*]] = arith.muli %arg1, %c16384 : index
// F32: %[[NEXT:.*]] = arith.addi %[[P]], %c16384 : index
// F32: %[[KS:.*]] = arith.muli %[[K]], %c10 : index
// F32: %[[IN_PANEL:.*]] = arith.addi %[[BASE]], %[[KS]] : index
// F32: %[[AT:.*]] = arith.addi %[[NEXT]], %[[IN_PANEL]] : index
// F32: scf.if %[[IN]] {
// F32: %[[C:.*]] = arith.minsi %[[AT]], %c262143 : index
// F32: memref.prefetch %[[FLAT]][%[[C]]], read, locality<2>, data : memref<262144xf32>
// F32: }
// F32: vector.transfer_read %arg0[%arg1, %[[K]], %c0]
// The same over a weight of 256 KiB, which stays in L2: none.
// F32-LABEL: func @unchunked_small
// F32-NOT: memref.prefetch
func.func @chunked(%w: memref<8x2048x64xf32> {kiln.weight = 0 : i64}, %p: index, %acc: vector<64xf32>) -> vector<64xf32> {
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %c48 = arith.constant 48 : index
  %c128 = arith.constant 128 : index
  %c2048 = arith.constant 2048 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f32
  %panel = memref.subview %w[%p, 0, 0] [1, 2048, 64] [1, 1, 1] : memref<8x2048x64xf32> to memref<1x2048x64xf32, strided<[131072, 64, 1], offset: ?>>
  %r = scf.for %c = %c0 to %c2048 step %c128 iter_args(%a0 = %acc) -> (vector<64xf32>) {
    %hi = arith.addi %c, %c128 : index
    %r1 = scf.for %i = %c0 to %c48 step %c6 iter_args(%a1 = %a0) -> (vector<64xf32>) {
      %r2 = scf.for %k = %c to %hi step %c1 iter_args(%a2 = %a1) -> (vector<64xf32>) {
        %v = vector.transfer_read %panel[%c0, %k, %c0], %pad {in_bounds = [true]} : memref<1x2048x64xf32, strided<[131072, 64, 1], offset: ?>>, vector<64xf32>
        %s = arith.addf %a2, %v : vector<64xf32>
        scf.yield %s : vector<64xf32>
      }
      scf.yield %r2 : vector<64xf32>
    }
    scf.yield %r1 : vector<64xf32>
  }
  return %r : vector<64xf32>
}
func.func @few_blocks(%w: memref<8x2048x64xf32> {kiln.weight = 0 : i64}, %p: index, %acc: vector<64xf32>) -> vector<64xf32> {
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %c24 = arith.constant 24 : index
  %c128 = arith.constant 128 : index
  %c2048 = arith.constant 2048 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f32
  %panel = memref.subview %w[%p, 0, 0] [1, 2048, 64] [1, 1, 1] : memref<8x2048x64xf32> to memref<1x2048x64xf32, strided<[131072, 64, 1], offset: ?>>
  %r = scf.for %c = %c0 to %c2048 step %c128 iter_args(%a0 = %acc) -> (vector<64xf32>) {
    %hi = arith.addi %c, %c128 : index
    %r1 = scf.for %i = %c0 to %c24 step %c6 iter_args(%a1 = %a0) -> (vector<64xf32>) {
      %r2 = scf.for %k = %c to %hi step %c1 iter_args(%a2 = %a1) -> (vector<64xf32>) {
        %v = vector.transfer_read %panel[%c0, %k, %c0], %pad {in_bounds = [true]} : memref<1x2048x64xf32, strided<[131072, 64, 1], offset: ?>>, vector<64xf32>
        %s = arith.addf %a2, %v : vector<64xf32>
        scf.yield %s : vector<64xf32>
      }
      scf.yield %r2 : vector<64xf32>
    }
    scf.yield %r1 : vector<64xf32>
  }
  return %r : vector<64xf32>
}
func.func @unchunked(%w: memref<16x256x64xf32> {kiln.weight = 0 : i64}, %p: index, %acc: vector<64xf32>) -> vector<64xf32> {
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %c48 = arith.constant 48 : index
  %c256 = arith.constant 256 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f32
  %r1 = scf.for %i = %c0 to %c48 step %c6 iter_args(%a1 = %acc) -> (vector<64xf32>) {
    %r2 = scf.for %k = %c0 to %c256 step %c1 iter_args(%a2 = %a1) -> (vector<64xf32>) {
      %v = vector.transfer_read %w[%p, %k, %c0], %pad {in_bounds = [true]} : memref<16x256x64xf32>, vector<64xf32>
      %s = arith.addf %a2, %v : vector<64xf32>
      scf.yield %s : vector<64xf32>
    }
    scf.yield %r2 : vector<64xf32>
  }
  return %r1 : vector<64xf32>
}
func.func @unchunked_small(%w: memref<4x256x64xf32> {kiln.weight = 0 : i64}, %p: index, %acc: vector<64xf32>) -> vector<64xf32> {
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %c48 = arith.constant 48 : index
  %c256 = arith.constant 256 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f32
  %r1 = scf.for %i = %c0 to %c48 step %c6 iter_args(%a1 = %acc) -> (vector<64xf32>) {
    %r2 = scf.for %k = %c0 to %c256 step %c1 iter_args(%a2 = %a1) -> (vector<64xf32>) {
      %v = vector.transfer_read %w[%p, %k, %c0], %pad {in_bounds = [true]} : memref<4x256x64xf32>, vector<64xf32>
      %s = arith.addf %a2, %v : vector<64xf32>
      scf.yield %s : vector<64xf32>
    }
    scf.yield %r2 : vector<64xf32>
  }
  return %r1 : vector<64xf32>
}

// The same with the tile's rows known at run time (%n rows in blocks of 6):
// each block computes s = ceil(64 / max(B - 1, 1)) floats per step from B =
// %n / 6, and block b starts at (b - 1) * 256 * s.
// F32-LABEL: func @unchunked_dynamic_rows
// F32: scf.for %[[ROW:.*]] = %c0 to %arg3 step %c6
// F32: %[[B:.*]] = arith.divsi %[[ROW]], %c6 : index
// F32: %[[IN:.*]] = arith.cmpi sge, %[[B]], %c1 : index
// F32: %[[N:.*]] = arith.divsi %arg3, %c6 : index
// F32: %[[N1:.*]] = arith.subi %[[N]], %c1 : index
// F32: %[[OTHERS:.*]] = arith.maxsi %[[N1]], %c1 : index
// F32: %[[S:.*]] = arith.ceildivsi %c64, %[[OTHERS]] : index
// F32: scf.for %[[K:.*]] = %c0 to %c256
// F32: arith.muli %[[K]], %[[S]] : index
// F32: scf.if %[[IN]] {
// F32: memref.prefetch
func.func @unchunked_dynamic_rows(%w: memref<16x256x64xf32> {kiln.weight = 0 : i64}, %p: index, %acc: vector<64xf32>, %n: index) -> vector<64xf32> {
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %c256 = arith.constant 256 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f32
  %r1 = scf.for %i = %c0 to %n step %c6 iter_args(%a1 = %acc) -> (vector<64xf32>) {
    %r2 = scf.for %k = %c0 to %c256 step %c1 iter_args(%a2 = %a1) -> (vector<64xf32>) {
      %v = vector.transfer_read %w[%p, %k, %c0], %pad {in_bounds = [true]} : memref<16x256x64xf32>, vector<64xf32>
      %s = arith.addf %a2, %v : vector<64xf32>
      scf.yield %s : vector<64xf32>
    }
    scf.yield %r2 : vector<64xf32>
  }
  return %r1 : vector<64xf32>
}
