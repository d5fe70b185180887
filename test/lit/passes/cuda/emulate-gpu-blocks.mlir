// kiln-emulate-gpu-blocks: what a launch becomes. A launch in a host loop gets its workgroup
// buffer at the function's entry (one for all iterations, not a stack array per iteration), a
// thread's own stack array lives in an alloca_scope of its turn, and the code between two barriers
// is one loop over the threads.
// RUN: kiln-opt %s -split-input-file -kiln-emulate-gpu-blocks -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @in_host_loop
// CHECK-NEXT: memref.alloca() : memref<64xf32>
// CHECK: scf.for %[[I:.*]] =
// CHECK: scf.for %[[BLOCK:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %c64 step
// CHECK: memref.alloca_scope
// CHECK: memref.alloca() : memref<4xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64 step
// CHECK-NOT: gpu.
func.func @in_host_loop(%out: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %n step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
               workgroup(%shared : memref<64xf32, #gpu.address_space<workgroup>>) {
      %private = memref.alloca() : memref<4xf32>
      %v = arith.index_cast %tx : index to i32
      %f = arith.sitofp %v : i32 to f32
      memref.store %f, %private[%c0] : memref<4xf32>
      %g = memref.load %private[%c0] : memref<4xf32>
      memref.store %g, %shared[%tx] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %h = memref.load %shared[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %h, %out[%bx] : memref<?xf32>
      gpu.terminator
    }
  }
  return
}

// -----

// A loop of the whole block with barriers inside (kiln-form-attention-blocks' key tiles): the same
// loop around the steps of its body, each a loop over the threads; the tile's start (the loop's
// induction variable) and what is computed from it are recomputed in every step.
// CHECK-LABEL: func.func @tile_loop
// CHECK: scf.for %[[BLOCK:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[K0:.*]] = %c0 to %{{.*}} step %c64 {
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %c64 step
// CHECK: arith.addi %[[K0]], %[[T]]
// CHECK: scf.for %[[T2:.*]] = %{{.*}} to %c64 step
// CHECK: arith.addi %[[K0]], %[[T2]]
// CHECK-NOT: gpu.
func.func @tile_loop(%out: memref<?xf32>, %n: index, %keys: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
             workgroup(%shared : memref<64xf32, #gpu.address_space<workgroup>>) {
    scf.for %k0 = %c0 to %keys step %c64 {
      %key = arith.addi %k0, %tx : index
      %i = arith.index_cast %key : index to i32
      %f = arith.sitofp %i : i32 to f32
      memref.store %f, %shared[%tx] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %h = memref.load %shared[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %h, %out[%key] : memref<?xf32>
      gpu.barrier
    }
    gpu.terminator
  }
  return
}

// -----

// A loop whose bounds depend on the thread cannot hold a barrier: its threads would not all reach it.
func.func @thread_bounds(%n: index) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  // expected-error @+1 {{a value crosses a barrier and is not recomputable}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    scf.for %i = %tx to %c64 step %c64 {
      gpu.barrier
    }
    gpu.terminator
  }
  return
}
