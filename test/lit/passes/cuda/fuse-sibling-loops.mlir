// kiln-fuse-sibling-loops: neighbouring independent parallel loops become one (one launch).
// RUN: kiln-opt %s -split-input-file -kiln-fuse-sibling-loops -canonicalize | FileCheck %s

// Keys and values appended to two caches: the same range, different buffers. One loop runs both
// copies, no guard.
// CHECK-LABEL: func @append_keys_values
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%c0, %c0) to (%[[N:.*]], %c16) step (%c1, %c1)
// CHECK-NEXT: %[[K:.*]] = memref.load %arg2[%[[I]], %[[J]]]
// CHECK-NEXT: memref.store %[[K]], %arg0[%[[I]], %[[J]]]
// CHECK-NEXT: %[[V:.*]] = memref.load %arg3[%[[I]], %[[J]]]
// CHECK-NEXT: memref.store %[[V]], %arg1[%[[I]], %[[J]]]
// CHECK-NEXT: scf.reduce
// CHECK-NOT: scf.parallel
func.func @append_keys_values(%kc: memref<?x16xf32>, %vc: memref<?x16xf32>, %k: memref<?x16xf32>, %v: memref<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %n = memref.dim %k, %c0 : memref<?x16xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c16) step (%c1, %c1) {
    %x = memref.load %k[%i, %j] : memref<?x16xf32>
    memref.store %x, %kc[%i, %j] : memref<?x16xf32>
    scf.reduce
  }
  %c16b = arith.constant 16 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c16b) step (%c1, %c1) {
    %x = memref.load %v[%i, %j] : memref<?x16xf32>
    memref.store %x, %vc[%i, %j] : memref<?x16xf32>
    scf.reduce
  }
  return
}

// -----

// Different spaces (another bound in one dim, another rank): one index over the first loop's
// iterations then the second's, each body delinearizing its own.
// CHECK-LABEL: func @different_spaces
// CHECK: %[[A8:.*]] = arith.muli %{{.*}}, %c8 : index
// CHECK: %[[TOTAL:.*]] = arith.addi %[[A8]], %{{.*}} : index
// CHECK: scf.parallel (%[[I:.*]]) = (%c0) to (%[[TOTAL]]) step (%c1)
// CHECK-NEXT: %[[INA:.*]] = arith.cmpi ult, %[[I]], %[[A8]] : index
// CHECK-NEXT: scf.if %[[INA]] {
// CHECK-DAG: %[[COL:.*]] = arith.remui %[[I]], %c8
// CHECK-DAG: %[[ROW:.*]] = arith.divui %[[I]], %c8
// CHECK: memref.load %arg2[%[[ROW]], %[[COL]]]
// CHECK: memref.store %{{.*}}, %arg0[%[[ROW]], %[[COL]]]
// CHECK: } else {
// CHECK-NEXT: %[[J:.*]] = arith.subi %[[I]], %[[A8]] : index
// CHECK: memref.load %arg3[%[[J]]]
// CHECK: memref.store %{{.*}}, %arg1[%[[J]]]
// CHECK-NOT: scf.parallel
func.func @different_spaces(%out0: memref<?x8xf32>, %out1: memref<?xf32>, %in0: memref<?x8xf32>, %in1: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %a = memref.dim %in0, %c0 : memref<?x8xf32>
  %b = memref.dim %in1, %c0 : memref<?xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%a, %c8) step (%c1, %c1) {
    %x = memref.load %in0[%i, %j] : memref<?x8xf32>
    memref.store %x, %out0[%i, %j] : memref<?x8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%b) step (%c1) {
    %x = memref.load %in1[%i] : memref<?xf32>
    memref.store %x, %out1[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// The second loop reads what the first writes (through a view): they stay apart.
// CHECK-LABEL: func @dependent
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @dependent(%tmp: memref<16xf32>, %out: memref<16xf32>, %in: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %in[%i] : memref<16xf32>
    memref.store %x, %tmp[%i] : memref<16xf32>
    scf.reduce
  }
  %view = memref.subview %tmp[0] [16] [1] : memref<16xf32> to memref<16xf32, strided<[1]>>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %view[%i] : memref<16xf32, strided<[1]>>
    memref.store %x, %out[%i] : memref<16xf32>
    scf.reduce
  }
  return
}

// -----

// A loop inside a body (a reduction, which kiln-form-block-reductions shapes) and a host store
// between two loops both keep the loops apart.
// CHECK-LABEL: func @nested_loop_and_store_between
// CHECK-COUNT-3: scf.parallel
func.func @nested_loop_and_store_between(%out0: memref<16xf32>, %out1: memref<16xf32>, %out2: memref<16xf32>, %in: memref<16x16xf32>, %flag: memref<i32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %z) -> f32 {
      %x = memref.load %in[%i, %k] : memref<16x16xf32>
      %y = arith.addf %acc, %x : f32
      scf.yield %y : f32
    }
    memref.store %s, %out0[%i] : memref<16xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %z, %out1[%i] : memref<16xf32>
    scf.reduce
  }
  %one = arith.constant 1 : i32
  memref.store %one, %flag[] : memref<i32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %z, %out2[%i] : memref<16xf32>
    scf.reduce
  }
  return
}

// -----

// Buffers of the memory plan: the rotary cos and sin tables, both live when the loops run
// (spans 2-9 and 3-9 overlap), never share bytes: one loop.
// CHECK-LABEL: func @plan_buffers_live_together
// CHECK: scf.parallel
// CHECK: math.cos
// CHECK: math.sin
// CHECK-NOT: scf.parallel
func.func @plan_buffers_live_together(%angles: memref<16xf32>, %size: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %arena = memref.alloc(%size) : memref<?xi8>
  %cos = memref.view %arena[%c0][] {kiln.plan_live = array<i64: 2, 9>} : memref<?xi8> to memref<16xf32>
  %sin = memref.view %arena[%c64][] {kiln.plan_live = array<i64: 3, 9>} : memref<?xi8> to memref<16xf32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %angles[%i] : memref<16xf32>
    %y = math.cos %x : f32
    memref.store %y, %cos[%i] : memref<16xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %angles[%i] : memref<16xf32>
    %y = math.sin %x : f32
    memref.store %y, %sin[%i] : memref<16xf32>
    scf.reduce
  }
  return
}

// -----

// The first loop's input dies at it (span 1-4) and the second loop's output is born after (5-9):
// the planner may have put one on the other's bytes, so the loops stay apart; so do a plan buffer
// and a plain view of its arena.
// CHECK-LABEL: func @plan_buffers_reusing_bytes
// CHECK-COUNT-2: scf.parallel
// CHECK-LABEL: func @plan_buffer_and_arena
// CHECK-COUNT-2: scf.parallel
func.func @plan_buffers_reusing_bytes(%out: memref<16xf32>, %size: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %arena = memref.alloc(%size) : memref<?xi8>
  %q = memref.view %arena[%c0][] {kiln.plan_live = array<i64: 1, 4>} : memref<?xi8> to memref<16xf32>
  %k = memref.view %arena[%c0][] {kiln.plan_live = array<i64: 5, 9>} : memref<?xi8> to memref<16xf32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %q[%i] : memref<16xf32>
    memref.store %x, %out[%i] : memref<16xf32>
    scf.reduce
  }
  %cst = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %cst, %k[%i] : memref<16xf32>
    scf.reduce
  }
  return
}
func.func @plan_buffer_and_arena(%out: memref<16xf32>, %size: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %arena = memref.alloc(%size) : memref<?xi8>
  %q = memref.view %arena[%c0][] {kiln.plan_live = array<i64: 1, 4>} : memref<?xi8> to memref<16xf32>
  %other = memref.view %arena[%c0][] : memref<?xi8> to memref<16xf32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %q[%i] : memref<16xf32>
    memref.store %x, %out[%i] : memref<16xf32>
    scf.reduce
  }
  %cst = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %cst, %other[%i] : memref<16xf32>
    scf.reduce
  }
  return
}

// -----

// A host load between the loops (a decode step's past length) of a buffer the first loop does not
// write: one loop, after the load; a load of what the first loop writes keeps them apart.
// CHECK-LABEL: func @host_load_between
// CHECK: memref.load %arg2[]
// CHECK: scf.parallel
// CHECK-NOT: scf.parallel
// CHECK-LABEL: func @load_of_written_between
// CHECK: scf.parallel
// CHECK: memref.load %arg0[%c0]
// CHECK: scf.parallel
func.func @host_load_between(%q: memref<16xf32>, %k: memref<16xf32>, %past: memref<i64>, %cache: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %q[%i] : memref<16xf32>
    %y = arith.mulf %x, %x : f32
    memref.store %y, %q[%i] : memref<16xf32>
    scf.reduce
  }
  %p = memref.load %past[] : memref<i64>
  %at = arith.index_cast %p : i64 to index
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %k[%i] : memref<16xf32>
    %j = arith.addi %i, %at : index
    memref.store %x, %cache[%j] : memref<64xf32>
    scf.reduce
  }
  return
}
func.func @load_of_written_between(%q: memref<16xf32>, %k: memref<16xf32>, %cache: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %k[%i] : memref<16xf32>
    memref.store %x, %q[%i] : memref<16xf32>
    scf.reduce
  }
  %v = memref.load %q[%c0] : memref<16xf32>
  %n = arith.fptosi %v : f32 to i64
  %at = arith.index_cast %n : i64 to index
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %x = memref.load %k[%i] : memref<16xf32>
    %j = arith.addi %i, %at : index
    memref.store %x, %cache[%j] : memref<64xf32>
    scf.reduce
  }
  return
}
