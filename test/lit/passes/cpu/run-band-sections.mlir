// kiln-run-band-sections: the launches of a banded chain's two sections become one launch of
// two work items, item 0 running section 0's launches in order (nested in it, each still a
// launch over its items), item 1 section 1's; flops and bytes add up, source nodes join, and
// kernel ids are renumbered in program order, a merged launch before those nested in it. A
// chain with one section only, or with an op touching memory between its launches, stays as
// it was.
// RUN: kiln-opt %s -split-input-file -kiln-run-band-sections | FileCheck %s

// CHECK-LABEL: func @two_sections
// CHECK: kiln_cpu.launch %arg0, %c8_i64 {{.*}}kernel_id = 0 : i32, kiln.source_nodes = ["before"]
// CHECK: %[[F1:.*]] = arith.addi %c10_i64, %c20_i64
// CHECK: %[[F2:.*]] = arith.addi %[[F1]], %c30_i64
// CHECK: %[[F3:.*]] = arith.addi %[[F2]], %c40_i64
// CHECK: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK: kiln_cpu.launch %arg0, %[[TWO]] flops(%[[F3]]) bytes(%{{.*}}) attributes {kernel_id = 1 : i32, kiln.source_nodes = ["expand", "project"]}
// CHECK: ^bb0(%[[ITEM:.*]]: i64):
// CHECK: %[[LOWER:.*]] = arith.cmpi ne, %[[ITEM]], %c0_i64
// CHECK: scf.if %[[LOWER]] {
// CHECK:   kiln_cpu.launch %arg0, %c4_i64 flops(%c30_i64) bytes(%c30_i64) attributes {kernel_id = 2 : i32
// CHECK:     memref.store %{{.*}}, %arg1[%c2]
// CHECK:   kiln_cpu.launch %arg0, %c2_i64 flops(%c40_i64) bytes(%c40_i64) attributes {kernel_id = 3 : i32
// CHECK:     memref.store %{{.*}}, %arg1[%c3]
// CHECK: } else {
// CHECK:   kiln_cpu.launch %arg0, %c4_i64 flops(%c10_i64) bytes(%c10_i64) attributes {kernel_id = 4 : i32
// CHECK:     memref.store %{{.*}}, %arg1[%c0]
// CHECK:   kiln_cpu.launch %arg0, %c2_i64 flops(%c20_i64) bytes(%c20_i64) attributes {kernel_id = 5 : i32
// CHECK:     memref.store %{{.*}}, %arg1[%c1]
// CHECK: kiln_cpu.yield
// CHECK: kiln_cpu.launch %arg0, %c8_i64 {{.*}}kernel_id = 6 : i32, kiln.source_nodes = ["after"]
// CHECK-NOT: kiln_cpu.launch
#u0 = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 0 : i64}>["expand"])
#u1 = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 0 : i64}>["project"])
#l0 = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 1 : i64}>["expand"])
#l1 = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 1 : i64}>["project"])
func.func @two_sections(%ctx: !llvm.ptr, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %n8 = arith.constant 8 : i64
  %n4 = arith.constant 4 : i64
  %n2 = arith.constant 2 : i64
  %f10 = arith.constant 10 : i64
  %f20 = arith.constant 20 : i64
  %f30 = arith.constant 30 : i64
  %f40 = arith.constant 40 : i64
  %v = arith.constant 1.0 : f32
  kiln_cpu.launch %ctx, %n8 flops(%f10) bytes(%f10) attributes {kernel_id = 0 : i32, kiln.source_nodes = ["before"]} : !llvm.ptr {
  ^bb0(%i: i64):
    memref.store %v, %out[%c0] : memref<8xf32>
    kiln_cpu.yield
  }
  kiln_cpu.launch %ctx, %n4 flops(%f10) bytes(%f10) attributes {kernel_id = 1 : i32, kiln.source_nodes = ["expand"]} : !llvm.ptr {
  ^bb0(%i: i64):
    memref.store %v, %out[%c0] : memref<8xf32>
    kiln_cpu.yield
  } loc(#u0)
  kiln_cpu.launch %ctx, %n2 flops(%f20) bytes(%f20) attributes {kernel_id = 2 : i32, kiln.source_nodes = ["project"]} : !llvm.ptr {
  ^bb0(%i: i64):
    memref.store %v, %out[%c1] : memref<8xf32>
    kiln_cpu.yield
  } loc(#u1)
  %view = memref.subview %out[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  kiln_cpu.launch %ctx, %n4 flops(%f30) bytes(%f30) attributes {kernel_id = 3 : i32, kiln.source_nodes = ["expand"]} : !llvm.ptr {
  ^bb0(%i: i64):
    memref.store %v, %out[%c2] : memref<8xf32>
    kiln_cpu.yield
  } loc(#l0)
  kiln_cpu.launch %ctx, %n2 flops(%f40) bytes(%f40) attributes {kernel_id = 4 : i32, kiln.source_nodes = ["project"]} : !llvm.ptr {
  ^bb0(%i: i64):
    memref.store %v, %out[%c3] : memref<8xf32>
    kiln_cpu.yield
  } loc(#l1)
  kiln_cpu.launch %ctx, %n8 flops(%f10) bytes(%f10) attributes {kernel_id = 5 : i32, kiln.source_nodes = ["after"]} : !llvm.ptr {
  ^bb0(%i: i64):
    memref.store %v, %out[%c0] : memref<8xf32>
    kiln_cpu.yield
  }
  return
}

// -----

// A copy between the sections' launches (it touches memory): nothing is merged.
// CHECK-LABEL: func @blocked
// CHECK-COUNT-2: kiln_cpu.launch %arg0, %c4_i64
#u = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 0 : i64}>["upper"])
#l = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 1 : i64}>["lower"])
func.func @blocked(%ctx: !llvm.ptr, %out: memref<8xf32>, %other: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %n4 = arith.constant 4 : i64
  %v = arith.constant 1.0 : f32
  kiln_cpu.launch %ctx, %n4 flops(%n4) bytes(%n4) attributes {kernel_id = 0 : i32} : !llvm.ptr {
  ^bb0(%i: i64):
    memref.store %v, %out[%c0] : memref<8xf32>
    kiln_cpu.yield
  } loc(#u)
  memref.copy %out, %other : memref<8xf32> to memref<8xf32>
  kiln_cpu.launch %ctx, %n4 flops(%n4) bytes(%n4) attributes {kernel_id = 1 : i32} : !llvm.ptr {
  ^bb0(%i: i64):
    memref.store %v, %out[%c0] : memref<8xf32>
    kiln_cpu.yield
  } loc(#l)
  return
}

// -----

// One section only (an odd chain would not be tagged; this checks the guard): unchanged.
// CHECK-LABEL: func @one_section
// CHECK-COUNT-2: kiln_cpu.launch %arg0, %c4_i64
#u = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 0 : i64}>["upper"])
func.func @one_section(%ctx: !llvm.ptr, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %n4 = arith.constant 4 : i64
  %v = arith.constant 1.0 : f32
  kiln_cpu.launch %ctx, %n4 flops(%n4) bytes(%n4) attributes {kernel_id = 0 : i32} : !llvm.ptr {
  ^bb0(%i: i64):
    memref.store %v, %out[%c0] : memref<8xf32>
    kiln_cpu.yield
  } loc(#u)
  kiln_cpu.launch %ctx, %n4 flops(%n4) bytes(%n4) attributes {kernel_id = 1 : i32} : !llvm.ptr {
  ^bb0(%i: i64):
    memref.store %v, %out[%c0] : memref<8xf32>
    kiln_cpu.yield
  } loc(#u)
  return
}
