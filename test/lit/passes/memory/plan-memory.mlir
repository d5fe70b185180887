// kiln-plan-memory: intermediates become views into one arena, placed by liveness.
// RUN: kiln-opt %s -split-input-file -kiln-plan-memory=mark-live-spans=true | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-plan-memory=print=true -o /dev/null | FileCheck %s --check-prefix=PLAN
// Without mark-live-spans (the CPU pipelines) the views carry nothing more.
// RUN: kiln-opt %s -split-input-file -kiln-plan-memory | FileCheck %s --check-prefix=PLAIN
// PLAIN-NOT: kiln.plan_live

// Static: %a (4096 B) dies before %c is allocated, so %c reuses offset 0;
// %b overlaps both and sits above them. The result stays on the heap.
// CHECK: module attributes {kiln.arena_bytes = 4160 : i64}
// CHECK-LABEL: func.func @main
// CHECK: %[[ARENA:.*]] = kiln_cpu.workspace %{{.*}} : memref<?xi8>
// Each view carries its buffer's live span (kiln-fuse-sibling-loops reads which may share bytes).
// CHECK: memref.view %[[ARENA]][%c0{{(_[0-9]+)?}}][] {kiln.plan_live = array<i64: 0, 2>} : memref<?xi8> to memref<1024xf32>
// CHECK: memref.view %[[ARENA]][%c4096{{(_[0-9]+)?}}][] {kiln.plan_live = array<i64: 1, 4>} : memref<?xi8> to memref<16xf32>
// CHECK: memref.view %[[ARENA]][%c0{{(_[0-9]+)?}}][] {kiln.plan_live = array<i64: 3, 5>} : memref<?xi8> to memref<1024xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1024xf32>
// CHECK: return %[[OUT]]
// PLAN: memory plan: 3 intermediates in one arena, 1 buffers on the heap
// PLAN: 0 4096 0 0-2 memref<1024xf32> a
// PLAN: 1 64 4096 1-4 memref<16xf32> b
// PLAN: 2 4096 0 3-5 memref<1024xf32> c
// PLAN: heap returned memref<1024xf32> out
// PLAN: arena peak: 4160 bytes; sum of intermediates without reuse: 8256 bytes (50.4%)
func.func @main(%x: memref<1024xf32>) -> memref<1024xf32> {
  %a = memref.alloc() {alignment = 64 : i64} : memref<1024xf32> loc("a")
  %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32> loc("b")
  memref.copy %x, %a : memref<1024xf32> to memref<1024xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<1024xf32> loc("c")
  memref.copy %b, %b : memref<16xf32> to memref<16xf32>
  memref.copy %c, %c : memref<1024xf32> to memref<1024xf32>
  %out = memref.alloc() {alignment = 64 : i64} : memref<1024xf32> loc("out")
  memref.copy %x, %out : memref<1024xf32> to memref<1024xf32>
  return %out : memref<1024xf32>
}

// -----

// Dynamic: sizes move to the start (from the argument's dims) and a buffer
// that overlaps another goes above it, at an offset computed at run time.
// A view of a returned buffer keeps it on the heap; a size read from tensor
// data cannot be known at the start, so that buffer stays on the heap too.
// PLAN: memory plan: 2 intermediates in one arena, 2 buffers on the heap
// PLAN: 0 arg0.dim0*4 above #1 2-8 memref<?xf32>
// PLAN: 1 arg0.dim0*8 above 3-9 memref<?x2xf32>
// PLAN: heap size depends on tensor data memref<?xi64>
// PLAN: heap returned memref<?xf32>
// PLAN: arena peak: depends on the input shapes
// CHECK-LABEL: func.func @main
// CHECK: %[[N:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?xf32>
// CHECK: %[[BYTES:.*]] = arith.muli
// CHECK: %[[ARENA:.*]] = kiln_cpu.workspace
// CHECK: memref.view %[[ARENA]][%{{.*}}][%[[N]]] {kiln.plan_live = {{.*}}} : memref<?xi8> to memref<?xf32>
// CHECK: memref.view %[[ARENA]][%[[ABOVE:.*]]][%[[N]]] {kiln.plan_live = {{.*}}} : memref<?xi8> to memref<?x2xf32>
// CHECK: memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?xi64>
// CHECK: memref.alloc(%[[N]]) {alignment = 64 : i64} : memref<?xf32>
// CHECK: memref.subview
// CHECK-NOT: kiln.arena_bytes
func.func @main(%x: memref<?xf32>, %idx: memref<i64>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf32>
  %b = memref.alloc(%n) {alignment = 64 : i64} : memref<?x2xf32>
  memref.copy %x, %a : memref<?xf32> to memref<?xf32>
  %k = memref.load %idx[] : memref<i64>
  %ki = arith.index_cast %k : i64 to index
  %data = memref.alloc(%ki) {alignment = 64 : i64} : memref<?xi64>
  memref.copy %a, %a : memref<?xf32> to memref<?xf32>
  memref.copy %b, %b : memref<?x2xf32> to memref<?x2xf32>
  memref.copy %data, %data : memref<?xi64> to memref<?xi64>
  %out = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf32>
  %view = memref.subview %out[0] [%n] [1] : memref<?xf32> to memref<?xf32, strided<[1]>>
  %cast = memref.cast %view : memref<?xf32, strided<[1]>> to memref<?xf32>
  return %cast : memref<?xf32>
}

// -----

// A size with a division by a value (a reshape's inferred -1 dim: n * 8 / max(n, 1)) is
// computed from the argument's dims and has no memory effects, so it moves to the start and the
// buffer is placed, although arith.divsi by a non-constant is not speculatable (it ran
// unconditionally where it was).
// PLAN: memory plan: 1 intermediates in one arena, 1 buffers on the heap
// PLAN: 0 (arg0.dim0*8/max(arg0.dim0,1))*4 above 8-9 memref<?xf32> half
// CHECK-LABEL: func.func @main
// CHECK: arith.divsi
// CHECK: kiln_cpu.workspace
// CHECK: memref.view
func.func @main(%x: memref<?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %m = arith.muli %n, %c8 : index
  %c1 = arith.constant 1 : index
  %d = arith.maxsi %n, %c1 : index
  %half = arith.divsi %m, %d : index
  %a = memref.alloc(%half) {alignment = 64 : i64} : memref<?xf32> loc("half")
  memref.copy %a, %a : memref<?xf32> to memref<?xf32>
  %out = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf32>
  memref.copy %x, %out : memref<?xf32> to memref<?xf32>
  return %out : memref<?xf32>
}

// -----

// Band sections (kiln-band-conv-chains' tags): %a and %b of section 0 follow each other and
// share bytes, as do %c and %d of section 1; the two sections never share (they may run side
// by side). %x is written before the chain and last read inside it, by section 1's first op:
// section 0's buffers come later in program order but may run first, so none takes its bytes.
// Section 0 is placed first, below section 1 (thread 0 writes it, and the lower halves of the
// maps placed over it later). %after, allocated once the chain is over, reuses everything.
// PLAN: memory plan: 6 intermediates in one arena, 0 buffers on the heap
// PLAN: 0 4096 0 0-3 memref<1024xf32> x
// PLAN: 1 4096 8192 2-4 memref<1024xf32> lower (band chain 0, section 1)
// PLAN: 2 4096 4096 5-7 memref<1024xf32> upper (band chain 0, section 0)
// PLAN: 3 4096 4096 8-10 memref<1024xf32> upper (band chain 0, section 0)
// PLAN: 4 4096 8192 11-13 memref<1024xf32> lower (band chain 0, section 1)
// PLAN: 5 4096 0 14-16 memref<1024xf32> after
// PLAN: arena peak: 12288 bytes
#s0 = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 0 : i64}>["upper"])
#s1 = loc(fused<{kiln.band_chain = 0 : i64, kiln.band_section = 1 : i64}>["lower"])
func.func @main(%in: memref<1024xf32>, %out: memref<1024xf32>) {
  %x = memref.alloc() {alignment = 64 : i64} : memref<1024xf32> loc("x")
  memref.copy %in, %x : memref<1024xf32> to memref<1024xf32> loc("x")
  %c = memref.alloc() {alignment = 64 : i64} : memref<1024xf32> loc(#s1)
  memref.copy %x, %c : memref<1024xf32> to memref<1024xf32> loc(#s1)
  memref.copy %c, %out : memref<1024xf32> to memref<1024xf32> loc(#s1)
  %a = memref.alloc() {alignment = 64 : i64} : memref<1024xf32> loc(#s0)
  memref.copy %in, %a : memref<1024xf32> to memref<1024xf32> loc(#s0)
  memref.copy %a, %out : memref<1024xf32> to memref<1024xf32> loc(#s0)
  %b = memref.alloc() {alignment = 64 : i64} : memref<1024xf32> loc(#s0)
  memref.copy %in, %b : memref<1024xf32> to memref<1024xf32> loc(#s0)
  memref.copy %b, %out : memref<1024xf32> to memref<1024xf32> loc(#s0)
  %d = memref.alloc() {alignment = 64 : i64} : memref<1024xf32> loc(#s1)
  memref.copy %in, %d : memref<1024xf32> to memref<1024xf32> loc(#s1)
  memref.copy %d, %out : memref<1024xf32> to memref<1024xf32> loc(#s1)
  %after = memref.alloc() {alignment = 64 : i64} : memref<1024xf32> loc("after")
  memref.copy %in, %after : memref<1024xf32> to memref<1024xf32> loc("after")
  memref.copy %after, %out : memref<1024xf32> to memref<1024xf32> loc("after")
  return
}

// -----

// A product whose only reader is a marked epilogue op (kiln.gemm_epilogue, input 1: the product)
// counts as running at that op, since --target=cuda makes the two one library call that reads
// the product's operands while it writes the op's output. %a, the product's input, dies at the
// product; without the rule %q (allocated after it) would take %a's bytes at offset 0. With it,
// %a lives to the epilogue (position 6) and %q goes above the others.
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (n)>
// PLAN: memory plan: 3 intermediates in one arena, 1 buffers on the heap
// PLAN: 0 1024 0 1-6 memref<16x16xf32> a
// PLAN: 1 1024 1024 3-6 memref<16x16xf32> p
// PLAN: 2 1024 2048 5-8 memref<16x16xf32> q
func.func @main(%x: memref<16x16xf32>, %w: memref<16x16xf32>, %bias: memref<16xf32>) -> memref<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32> loc("a")
  memref.copy %x, %a : memref<16x16xf32> to memref<16x16xf32>
  %p = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32> loc("p")
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : memref<16x16xf32>, memref<16x16xf32>) outs(%p : memref<16x16xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %m = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  %q = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32> loc("q")
  linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %p : memref<16xf32>, memref<16x16xf32>) outs(%q : memref<16x16xf32>)
      attrs = {kiln.gemm_epilogue = 1 : i64} {
  ^bb0(%bv: f32, %pv: f32, %o: f32):
    %s = arith.addf %bv, %pv : f32
    linalg.yield %s : f32
  }
  %out = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32> loc("out")
  memref.copy %q, %out : memref<16x16xf32> to memref<16x16xf32>
  return %out : memref<16x16xf32>
}
