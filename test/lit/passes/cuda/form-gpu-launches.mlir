// kiln-form-gpu-launches: parallel loops become grid launches, other buffer accesses one-thread
// launches, host control flow around parallel loops stays on the host, and host reads of tensor
// data are refused.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics -kiln-add-runtime-context -kiln-form-gpu-launches | FileCheck %s

// A dynamic 2-D loop: one thread per element, 256 per block, innermost dim fastest, guarded.
// CHECK-LABEL: func @main
// CHECK: %[[TOTAL:.*]] = arith.muli
// CHECK: %[[BLOCKS:.*]] = arith.maxsi
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%[[BS:.*]] = %c256
// CHECK: %[[ID:.*]] = arith.addi %{{.*}}, %[[TX]]
// CHECK: arith.cmpi ult, %[[ID]], %[[TOTAL]]
// CHECK: scf.if
// CHECK: arith.remui %[[ID]], %c16
// CHECK: memref.load
// CHECK: arith.maximumf
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: scf.parallel
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

// A static space smaller than a block gets a block of its size; a scalar store and the sequential
// loop that reads it run in one one-thread launch; a constant global is read inside the kernel.
// CHECK-LABEL: func @main
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c12
// CHECK-NEXT: memref.get_global @table
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1
// CHECK-NEXT: memref.store
// CHECK: scf.for
// CHECK: gpu.terminator
memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
func.func @main(%x: memref<12xf32>, %acc: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %t = memref.get_global @table : memref<2xf32>
  scf.parallel (%i) = (%c0) to (%c12) step (%c1) {
    %v = memref.load %t[%c1] : memref<2xf32>
    memref.store %v, %x[%i] : memref<12xf32>
    scf.reduce
  }
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %acc[] : memref<f32>
  scf.for %i = %c0 to %c12 step %c1 {
    %v = memref.load %x[%i] : memref<12xf32>
    %a = memref.load %acc[] : memref<f32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %acc[] : memref<f32>
  }
  return
}

// -----

// A host loop around a parallel loop stays on the host and launches it each iteration.
// CHECK-LABEL: func @main
// CHECK: scf.for
// CHECK: gpu.launch
func.func @main(%x: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.for %k = %c0 to %c4 step %c1 {
    scf.parallel (%j) = (%c0) to (%c8) step (%c1) {
      %v = memref.load %x[%k, %j] : memref<4x8xf32>
      %r = arith.addf %v, %one : f32
      memref.store %r, %x[%k, %j] : memref<4x8xf32>
      scf.reduce
    }
  }
  return
}

// -----

// A size read from tensor data (a data-dependent shape) cannot be computed on the host.
func.func @main(%n: memref<i64>) -> memref<?xf32> {
  %v = memref.load %n[] : memref<i64>
  %s = arith.index_cast %v : i64 to index
  // expected-error @+1 {{a value computed from tensor data is needed by the host program}}
  %out = memref.alloc(%s) : memref<?xf32>
  return %out : memref<?xf32>
}
